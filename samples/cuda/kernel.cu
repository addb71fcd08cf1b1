__global__ void k(int *o, int n) { int i = threadIdx.x; if (i < n) o[i] = i * 3; }
