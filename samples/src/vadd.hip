// Vector addition and scaling kernels, compiled without the HIP headers (-nogpuinc -nogpulib).
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))

typedef __SIZE_TYPE__ size_t;
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 grid, dim3 block,
                               void **args, size_t shmem, hipStream_t stream);
extern "C" int __hipPopCallConfiguration(dim3 *grid, dim3 *block,
                                         size_t *shmem, hipStream_t *stream);

static __device__ unsigned global_id() {
  return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
         __builtin_amdgcn_workitem_id_x();
}

__global__ void vadd(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = global_id();
  if (i < n)
    c[i] = a[i] + b[i];
}

__global__ void vscale(float *a, float s, unsigned n) {
  unsigned i = global_id();
  if (i < n)
    a[i] *= s;
}
