/* A stand-in for the HIP runtime: just the functions clang's HIP host code calls, so the
 * samples link without ROCm. Every function does nothing and returns 0 or NULL. */
#include <stddef.h>

struct dim3 { unsigned x, y, z; };

void **__hipRegisterFatBinary(const void *wrapper) { (void)wrapper; return NULL; }
void __hipUnregisterFatBinary(void **handle) { (void)handle; }
void __hipRegisterFunction(void **handle, const void *host_fun, char *device_fun,
                           const char *name, int thread_limit, void *tid, void *bid,
                           void *block_dim, void *grid_dim, int *warp_size) {
  (void)handle; (void)host_fun; (void)device_fun; (void)name; (void)thread_limit;
  (void)tid; (void)bid; (void)block_dim; (void)grid_dim; (void)warp_size;
}
void __hipRegisterVar(void **handle, char *host_var, char *device_var, const char *name,
                      int ext, size_t size, int constant, int global) {
  (void)handle; (void)host_var; (void)device_var; (void)name; (void)ext; (void)size;
  (void)constant; (void)global;
}
unsigned __hipPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shmem,
                                    void *stream) {
  (void)grid; (void)block; (void)shmem; (void)stream;
  return 0;
}
int __hipPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shmem,
                              void **stream) {
  (void)grid; (void)block; (void)shmem; (void)stream;
  return 0;
}
int hipLaunchKernel(const void *fun, struct dim3 grid, struct dim3 block, void **args,
                    size_t shmem, void *stream) {
  (void)fun; (void)grid; (void)block; (void)args; (void)shmem; (void)stream;
  return 0;
}
