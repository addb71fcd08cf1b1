/* A stand-in HIP, CUDA and OpenMP runtime for linking wrapper objects into a Windows DLL
 * (x86_64-pc-windows-msvc) without a C library, for tests that read the DLL back: every
 * function the wrappers call, doing nothing, and `atexit`. It also defines one entry of each
 * runtime's kind in llvm_offload_entries$OE (LLVM 22's layout), which the linker sorts between
 * the wrapper's $OA and $OZ bounds, and the bounds of clang-offload-wrapper's
 * omp_offloading_entries, which the COFF linker does not define. */
typedef unsigned long long u64;

struct entry {
  u64 reserved;
  unsigned short version, kind;
  unsigned flags;
  void *addr;
  const char *name;
  u64 size, data;
  void *aux;
};

static char function_a;
#pragma section("llvm_offload_entries$OE", read)
__declspec(allocate("llvm_offload_entries$OE")) struct entry entries[] = {
    {0, 1, 4, 0, &function_a, "hip_function", 0, 0, 0},
    {0, 1, 2, 0, &function_a, "cuda_function", 0, 0, 0},
    {0, 1, 1, 0, &function_a, "omp_function", 0, 0, 0},
};

char __start_omp_offloading_entries[1], __stop_omp_offloading_entries[1];

#define RUNTIME(R)                                                                              \
  void **__##R##RegisterFatBinary(void *w) { return (void **)w; }                              \
  void __##R##UnregisterFatBinary(void **h) { (void)h; }                                       \
  int __##R##RegisterFunction(void **h, const char *a, char *b, const char *c, int d, void *e, \
                              void *f, void *g, void *i, int *j) {                             \
    return 0;                                                                                   \
  }                                                                                             \
  void __##R##RegisterVar(void **h, char *a, char *b, const char *c, int d, u64 e, int f,      \
                          int g) {}                                                             \
  void __##R##RegisterManagedVar(void **h, void *a, void *b, const char *c, u64 d, unsigned e) \
  {}                                                                                            \
  void __##R##RegisterSurface(void **h, void *a, char *b, const char *c, int d, int e) {}      \
  void __##R##RegisterTexture(void **h, void *a, char *b, const char *c, int d, int e, int f) {}

RUNTIME(hip)
RUNTIME(cuda)

void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __tgt_register_lib(void *d) { (void)d; }
void __tgt_unregister_lib(void *d) { (void)d; }
int atexit(void (*f)(void)) { return f == 0; }
