// HIP device code with the kinds of symbol an archive symbol table sees, compiled without
// the HIP headers (-nogpuinc -nogpulib).
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __constant__ __attribute__((constant))
#define __shared__ __attribute__((shared))
#define __managed__ __attribute__((managed))

typedef __SIZE_TYPE__ size_t;
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t shmem,
                               hipStream_t stream);
extern "C" int __hipPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem,
                                         hipStream_t *stream);
extern "C" int __hipRegisterManagedVar(void *, void **, void *, const char *, size_t, unsigned);

__device__ int dev_var = 1;
__constant__ float const_table[4] = {1, 2, 3, 4};
__device__ __attribute__((visibility("hidden"))) int hidden_var = 2;
__device__ __attribute__((weak)) int weak_var = 3;
__managed__ int managed_var = 4;
static __device__ int static_var = 5;
extern __device__ int extern_var;
extern __device__ int extern_fn(int);

static __device__ int static_helper(int x) { return x + static_var; }
__device__ int device_fn(int x) { return static_helper(x) * 2; }
__device__ __attribute__((weak)) int weak_fn(int x) { return x; }
__device__ __attribute__((noinline)) inline int inline_fn(int x) { return x - 1; }

template <typename T> __global__ void tkernel(T *out) {
  __shared__ T tile[64];
  unsigned i = __builtin_amdgcn_workitem_id_x();
  tile[i] = out[i];
  out[i] = tile[63 - i] + (T)inline_fn(dev_var);
}
template __global__ void tkernel<float>(float *);
template __global__ void tkernel<int>(int *);

extern "C" __global__ void ckernel(int *out) {
  unsigned i = __builtin_amdgcn_workitem_id_x();
  out[i] = device_fn(i) + weak_fn(hidden_var) + weak_var + managed_var + extern_var +
           extern_fn(i) + (int)const_table[i & 3];
}
