/* The stand-in HIP runtime of samples/linked, with what clang-linker-wrapper-23's registration
 * code of a device link calls beside it. */
#include "../linked/hip-stub.c"

void __hipRegisterManagedVar(void *handle, void **host_ptr, void *init, const char *name,
                             size_t size, unsigned align) {
  (void)handle; (void)host_ptr; (void)init; (void)name; (void)size; (void)align;
}
void __hipRegisterSurface(void **handle, void *var, char *device_var, const char *name, int type,
                          int ext) {
  (void)handle; (void)var; (void)device_var; (void)name; (void)type; (void)ext;
}
void __hipRegisterTexture(void **handle, void *var, char *device_var, const char *name, int type,
                          int norm, int ext) {
  (void)handle; (void)var; (void)device_var; (void)name; (void)type; (void)norm; (void)ext;
}
