kernel.o: src/kernel.hip
