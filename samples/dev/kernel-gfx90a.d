kernel-gfx90a.o: src/kernel.hip
