"""The tree of 50,000 small files the speed and memory tables time: copies of a committed sample
bundle (12 KB), 50 folders of 10 folders of 100.

    python3 benches/small_tree.py SAMPLE ROOT
"""
import os
import sys

sample, root = open(sys.argv[1], "rb").read(), sys.argv[2]
for a in range(50):
    for b in range(10):
        folder = os.path.join(root, f"d{a:02d}", f"e{b}")
        os.makedirs(folder)
        for c in range(100):
            with open(os.path.join(folder, f"k{c:03d}.o"), "wb") as f:
                f.write(sample)
