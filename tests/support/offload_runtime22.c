/* A stand-in for the HIP, CUDA and OpenMP runtimes as the registration modules of LLVM 22's
 * llvm-offload-wrapper call them, for tests: it prints the fat binary wrapper it is given (magic,
 * version, a hash of the image's first 64 bytes), each registration call with its arguments,
 * and for OpenMP each image of the __tgt_bin_desc (size, FNV-1a 64) and its entries. It also
 * defines entries in llvm_offload_entries (LLVM 22's layout) of the three runtimes' kinds, so
 * that the modules' loops over them run.
 *
 * Built with -DRUNTIME_ABI='__attribute__((ms_abi))', the functions the modules call (atexit
 * among them) take the Microsoft x64 convention, as COFF objects' code calls them: the same
 * code, in an ELF object, then runs on Linux. */
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>

#ifdef RUNTIME_ABI
int __cxa_atexit(void (*f)(void *), void *arg, void *dso);
RUNTIME_ABI int atexit(void (*f)(void)) { return __cxa_atexit((void (*)(void *))f, 0, 0); }
#else
#define RUNTIME_ABI
#endif

struct entry {
  uint64_t reserved;
  uint16_t version, kind;
  uint32_t flags;
  void *addr;
  const char *name;
  uint64_t size, data;
  void *aux;
};
struct wrapper { uint32_t magic, version; const unsigned char *image; const void *unused; };
struct image { const unsigned char *start, *end; struct entry *begin, *end_entries; };
struct desc { int32_t count; struct image *images; struct entry *begin, *end; };

static uint64_t fnv(const unsigned char *p, const unsigned char *end) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; p < end; p++) h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

static char function_a, variable_b[16], managed_c[8], managed_c_ptr[8], surface_d, texture_e;
#define ENTRY(KIND, FLAGS, ADDR, NAME, SIZE, DATA, AUX)                                        \
  {0, 1, KIND, FLAGS, (void *)(ADDR), NAME, SIZE, DATA, (void *)(AUX)}
/* Kinds: 1 OpenMP, 2 CUDA, 4 HIP. Flags: the low three bits the type (0 variable, 1 managed,
 * 2 surface, 3 texture), 8 extern, 16 constant, 32 normalized. */
__attribute__((used, section("llvm_offload_entries"), aligned(8))) static struct entry entries[] = {
  ENTRY(4, 0, &function_a, "hip_function", 0, 0, 0),
  ENTRY(4, 8 | 16, variable_b, "hip_variable", 16, 0, 0),
  ENTRY(4, 1, managed_c, "hip_managed", 8, 4, managed_c_ptr),
  ENTRY(4, 2 | 8, &surface_d, "hip_surface", 1, 2, 0),
  ENTRY(4, 3 | 32, &texture_e, "hip_texture", 1, 3, 0),
  ENTRY(2, 0, &function_a, "cuda_function", 0, 0, 0),
  ENTRY(2, 16, variable_b, "cuda_variable", 16, 0, 0),
  ENTRY(2, 1, managed_c, "cuda_managed", 8, 4, managed_c_ptr),
  ENTRY(2, 2, &surface_d, "cuda_surface", 1, 2, 0),
  ENTRY(2, 3, &texture_e, "cuda_texture", 1, 3, 0),
  ENTRY(1, 0, &function_a, "omp_function", 0, 0, 0),
};

static const char *which(const void *p) {
  if (p == &function_a) return "function_a";
  if (p == variable_b) return "variable_b";
  if (p == managed_c) return "managed_c";
  if (p == managed_c_ptr) return "managed_c_ptr";
  if (p == &surface_d) return "surface_d";
  if (p == &texture_e) return "texture_e";
  return p ? "?" : "null";
}

static void *handle = &handle;

/* Whether an unwinder walks from here through the wrapper's constructor into the C library
 * that called it (the wrapper's call frame information is right), or stops at the wrapper. */
static const char *unwinds(void) {
  void *frames[32];
  return backtrace(frames, 32) >= 5 ? "through the wrapper" : "not past the wrapper";
}

static void **register_fat_binary(const char *runtime, struct wrapper *w) {
  printf("%s register: magic %08x version %u image fnv %016llx, unwinds %s\n", runtime, w->magic,
         w->version, (unsigned long long)fnv(w->image, w->image + 64), unwinds());
  return handle;
}

#define RUNTIME(R)                                                                              \
  RUNTIME_ABI void **__##R##RegisterFatBinary(struct wrapper *w) { return register_fat_binary(#R, w); }   \
  RUNTIME_ABI void __##R##UnregisterFatBinary(void **h) { printf(#R " unregister %d\n", h == handle); }  \
  RUNTIME_ABI int __##R##RegisterFunction(void **h, const char *host, const char *device, const char *name, \
                              int limit, void *a, void *b, void *c, void *d, void *e) {         \
    printf(#R " function %d %s %s %s %d %p %p %p %p %p\n", h == handle, which(host), device,   \
           name, limit, a, b, c, d, e);                                                         \
    return 0;                                                                                   \
  }                                                                                             \
  RUNTIME_ABI void __##R##RegisterVar(void **h, char *host, const char *device, const char *name, int ext, \
                          uint64_t size, int constant, int global) {                           \
    printf(#R " var %d %s %s %s extern %d size %llu constant %d global %d\n", h == handle,      \
           which(host), device, name, ext, (unsigned long long)size, constant, global);         \
  }                                                                                             \
  RUNTIME_ABI void __##R##RegisterManagedVar(void **h, void *ptr, void *addr, const char *name,             \
                                 uint64_t size, unsigned align) {                               \
    printf(#R " managed %d %s %s %s size %llu align %u\n", h == handle, which(ptr), which(addr), \
           name, (unsigned long long)size, align);                                              \
  }                                                                                             \
  RUNTIME_ABI void __##R##RegisterSurface(void **h, void *host, const char *device, const char *name,      \
                              int dim, int ext) {                                               \
    printf(#R " surface %d %s %s %s dim %d extern %d\n", h == handle, which(host), device,      \
           name, dim, ext);                                                                     \
  }                                                                                             \
  RUNTIME_ABI void __##R##RegisterTexture(void **h, void *host, const char *device, const char *name,      \
                              int dim, int norm, int ext) {                                     \
    printf(#R " texture %d %s %s %s dim %d normalized %d extern %d\n", h == handle,             \
           which(host), device, name, dim, norm, ext);                                          \
  }

RUNTIME(hip)
RUNTIME(cuda)

RUNTIME_ABI void __cudaRegisterFatBinaryEnd(void **h) { printf("cuda register end %d\n", h == handle); }

RUNTIME_ABI void __tgt_register_lib(struct desc *d) {
  printf("openmp register: %d images, unwinds %s\n", d->count, unwinds());
  for (int i = 0; i < d->count; i++) {
    struct image *im = &d->images[i];
    printf("  image %d: %ld bytes, fnv %016llx, entries %ld\n", i, (long)(im->end - im->start),
           (unsigned long long)fnv(im->start, im->end), (long)(im->end_entries - im->begin));
  }
  for (struct entry *e = d->begin; e < d->end; e++)
    printf("  entry kind %u flags %u %s %s size %llu\n", e->kind, e->flags, which(e->addr),
           e->name, (unsigned long long)e->size);
}

RUNTIME_ABI void __tgt_unregister_lib(struct desc *d) { printf("openmp unregister: %d images\n", d->count); }

int main(void) {
  printf("main\n");
  return 0;
}
