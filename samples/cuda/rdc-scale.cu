// Relocatable device code: calls a device function defined in rdc-twice.cu.
extern __device__ float twice(float x);
__global__ void scale(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = twice(p[i]);
}
void launch_scale(float *p, int n) { scale<<<(n + 255) / 256, 256>>>(p, n); }
