#!/usr/bin/env bash
# Makes small ELF relocatable objects of several classes, byte orders and machines with
# Debian's clang-19, to check that sections are added and removed as llvm-objcopy-19 does:
# C with debug info, C++ with COMDAT groups, and the -fgpu-rdc HIP objects of ../archive/
# cover the rest. Run from anywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CLANG=${CLANG:-clang-19}
rm -f ./*.o
cat > /tmp/offload-elf-sample.c <<'SRC'
static int counter;
int table[16] = {1, 2, 3};
const char *greeting = "hello from a host object";
int bump(int by) { counter += by; return counter + table[by & 15]; }
int main(void) { return bump(2) > 3; }
SRC
cat > /tmp/offload-elf-sample.cpp <<'SRC'
template <typename T> struct Box { T v; T get() const { return v; } };
inline int twice(int x) { return 2 * x; }
int use(int x) { Box<int> b{x}; Box<long> c{x}; return twice(b.get()) + int(c.get()); }
SRC
for target in x86_64-linux-gnu aarch64-linux-gnu i386-linux-gnu powerpc64-linux-gnu; do
  "$CLANG" --target=$target -O1 -g -c /tmp/offload-elf-sample.c -o "c-$target.o"
  "$CLANG" --target=$target -O0 -ffunction-sections -c /tmp/offload-elf-sample.cpp -o "cxx-$target.o"
done
rm -f /tmp/offload-elf-sample.c /tmp/offload-elf-sample.cpp
echo "elf: $(du -ch ./*.o | tail -1 | cut -f1)"
