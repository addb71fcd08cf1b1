/* A stand-in HIP, CUDA and OpenMP runtime without a C library, for running the registration
 * code of LLVM 22's wrapper modules on another architecture (AArch64 under qemu-user) and
 * comparing it with x86-64: the program's entry point runs the constructors of .init_array,
 * prints "main", then runs what was handed to atexit, and each registration call prints its
 * arguments, as tests/support/offload_runtime22.c does, through the write system call.
 *
 * Build: clang --target=T -ffreestanding -fno-builtin -fno-stack-protector -O1 -c; link with
 * ld.lld -static -e _start. */
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

struct entry {
  u64 reserved;
  u16 version, kind;
  u32 flags;
  void *addr;
  const char *name;
  u64 size, data;
  void *aux;
};
struct wrapper { u32 magic, version; const unsigned char *image; const void *unused; };
struct image { const unsigned char *start, *end; struct entry *begin, *end_entries; };
struct desc { int count; struct image *images; struct entry *begin, *end; };

static long sys(long number, long a, long b, long c) {
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(number), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
#endif
}

#if defined(__x86_64__)
enum { SYS_WRITE = 1, SYS_EXIT = 231 };
__asm__(".globl _start\n_start:\n xor %rbp, %rbp\n and $-16, %rsp\n call start\n hlt\n");
#elif defined(__aarch64__)
enum { SYS_WRITE = 64, SYS_EXIT = 94 };
__asm__(".globl _start\n_start:\n mov x29, #0\n mov x30, #0\n bl start\n");
#endif

static char out[1 << 16];
static u64 used;

static void put(const char *s) {
  while (*s && used < sizeof out) out[used++] = *s++;
}

static void put_number(u64 value, unsigned base, int width) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value % base];
    value /= base;
  } while (value || n < width);
  while (n && used < sizeof out) out[used++] = digits[--n];
}

static void put_int(long value) {
  if (value < 0) {
    put("-");
    value = -value;
  }
  put_number((u64)value, 10, 1);
}

static u64 fnv(const unsigned char *p, const unsigned char *end) {
  u64 h = 0xcbf29ce484222325ull;
  for (; p < end; p++) h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

static char function_a, variable_b[16], managed_c[8], managed_c_ptr[8], surface_d, texture_e;
#define ENTRY(KIND, FLAGS, ADDR, NAME, SIZE, DATA, AUX)                                        \
  {0, 1, KIND, FLAGS, (void *)(ADDR), NAME, SIZE, DATA, (void *)(AUX)}
__attribute__((used, section("llvm_offload_entries"), aligned(8))) static struct entry entries[] = {
    ENTRY(4, 0, &function_a, "hip_function", 0, 0, 0),
    ENTRY(4, 8 | 16, variable_b, "hip_variable", 16, 0, 0),
    ENTRY(4, 1, managed_c, "hip_managed", 8, 4, managed_c_ptr),
    ENTRY(4, 2 | 8, &surface_d, "hip_surface", 1, 2, 0),
    ENTRY(4, 3 | 32, &texture_e, "hip_texture", 1, 3, 0),
    ENTRY(2, 0, &function_a, "cuda_function", 0, 0, 0),
    ENTRY(2, 16, variable_b, "cuda_variable", 16, 0, 0),
    ENTRY(2, 1, managed_c, "cuda_managed", 8, 4, managed_c_ptr),
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

static void **register_fat_binary(const char *runtime, struct wrapper *w) {
  put(runtime);
  put(" register: magic ");
  put_number(w->magic, 16, 8);
  put(" version ");
  put_int(w->version);
  put(" image fnv ");
  put_number(fnv(w->image, w->image + 64), 16, 16);
  put("\n");
  return handle;
}

/* One registration call: the runtime, what it registers, whether the handle is the one given,
 * then its arguments. */
static void call(const char *runtime, const char *what, void **h) {
  put(runtime);
  put(" ");
  put(what);
  put(h == handle ? " 1" : " 0");
}

static void arg(const char *s) {
  put(" ");
  put(s);
}

static void arg_int(long value) {
  put(" ");
  put_int(value);
}

#define RUNTIME(R)                                                                              \
  void **__##R##RegisterFatBinary(struct wrapper *w) { return register_fat_binary(#R, w); }   \
  void __##R##UnregisterFatBinary(void **h) {                                                  \
    call(#R, "unregister", h);                                                                 \
    put("\n");                                                                                  \
  }                                                                                             \
  int __##R##RegisterFunction(void **h, const char *host, const char *device, const char *name, \
                              int limit, void *a, void *b, void *c, void *d, void *e) {         \
    call(#R, "function", h);                                                                   \
    arg(which(host)), arg(device), arg(name), arg_int(limit);                                  \
    arg(which(a)), arg(which(b)), arg(which(c)), arg(which(d)), arg(which(e));                 \
    put("\n");                                                                                  \
    return 0;                                                                                   \
  }                                                                                             \
  void __##R##RegisterVar(void **h, char *host, const char *device, const char *name, int ext, \
                          u64 size, int constant, int global) {                                \
    call(#R, "var", h);                                                                        \
    arg(which(host)), arg(device), arg(name), arg_int(ext), arg_int((long)size);               \
    arg_int(constant), arg_int(global);                                                        \
    put("\n");                                                                                  \
  }                                                                                             \
  void __##R##RegisterManagedVar(void **h, void *ptr, void *addr, const char *name, u64 size,  \
                                 unsigned align) {                                              \
    call(#R, "managed", h);                                                                    \
    arg(which(ptr)), arg(which(addr)), arg(name), arg_int((long)size), arg_int(align);         \
    put("\n");                                                                                  \
  }                                                                                             \
  void __##R##RegisterSurface(void **h, void *host, const char *device, const char *name,      \
                              int dim, int ext) {                                               \
    call(#R, "surface", h);                                                                    \
    arg(which(host)), arg(device), arg(name), arg_int(dim), arg_int(ext);                      \
    put("\n");                                                                                  \
  }                                                                                             \
  void __##R##RegisterTexture(void **h, void *host, const char *device, const char *name,      \
                              int dim, int norm, int ext) {                                     \
    call(#R, "texture", h);                                                                    \
    arg(which(host)), arg(device), arg(name), arg_int(dim), arg_int(norm), arg_int(ext);       \
    put("\n");                                                                                  \
  }

RUNTIME(hip)
RUNTIME(cuda)

void __cudaRegisterFatBinaryEnd(void **h) {
  call("cuda", "register end", h);
  put("\n");
}

void __tgt_register_lib(struct desc *d) {
  put("openmp register: ");
  put_int(d->count);
  put(" images\n");
  for (int i = 0; i < d->count; i++) {
    struct image *im = &d->images[i];
    put("  image ");
    put_int(i);
    put(": ");
    put_int(im->end - im->start);
    put(" bytes, fnv ");
    put_number(fnv(im->start, im->end), 16, 16);
    put(", entries ");
    put_int(im->end_entries - im->begin);
    put("\n");
  }
  for (struct entry *e = d->begin; e < d->end; e++) {
    put("  entry kind ");
    put_int(e->kind);
    put(" ");
    put(which(e->addr));
    put(" ");
    put(e->name);
    put("\n");
  }
}

void __tgt_unregister_lib(struct desc *d) {
  put("openmp unregister: ");
  put_int(d->count);
  put(" images\n");
}

static void (*at_exit[8])(void);
static int exits;

int atexit(void (*f)(void)) {
  if (exits == 8) return -1;
  at_exit[exits++] = f;
  return 0;
}

extern void (*__init_array_start[])(void) __attribute__((weak));
extern void (*__init_array_end[])(void) __attribute__((weak));

void start(void) {
  for (void (**f)(void) = __init_array_start; f < __init_array_end; f++) (*f)();
  put("main\n");
  while (exits) at_exit[--exits]();
  sys(SYS_WRITE, 1, (long)out, (long)used);
  sys(SYS_EXIT, 0, 0, 0);
}
