// The tiny kernel with a large device array beside it, its bytes read from `filler.bin`
// (found through --embed-dir): code objects of many MiB, built without the HIP headers.
#include "kernel.hip"

__device__ unsigned char filler[] = {
#embed "filler.bin"
};
