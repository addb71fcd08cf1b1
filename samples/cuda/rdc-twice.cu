// Relocatable device code: defines the device function rdc-scale.cu calls.
__device__ float twice(float x) { return 2.0f * x; }
__global__ void add(float *p, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = twice(p[i]) + v;
}
void launch_add(float *p, float v, int n) { add<<<(n + 255) / 256, 256>>>(p, v, n); }
