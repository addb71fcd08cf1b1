// A tiny HIP kernel, compiled without the HIP headers (-nogpuinc -nogpulib).
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))

typedef __SIZE_TYPE__ size_t;
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 grid, dim3 block,
                               void **args, size_t shmem, hipStream_t stream);
extern "C" int __hipPopCallConfiguration(dim3 *grid, dim3 *block,
                                         size_t *shmem, hipStream_t *stream);

__device__ int scale = 3;

__global__ void kfun(int *out, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n)
    out[i] = i * scale;
}
