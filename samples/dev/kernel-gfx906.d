kernel-gfx906.o: src/kernel.hip
