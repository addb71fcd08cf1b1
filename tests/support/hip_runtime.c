/* A stand-in for the HIP runtime, for tests: __hipRegisterFatBinary follows the wrapper that
 * clang's HIP host code passes (magic "HIPF", version, pointer to the fat binary) and prints
 * what a runtime would see there: a bundle and each entry's ID, size and whether a device
 * entry is an ELF code object, or a compressed bundle's header. Every other function does
 * nothing. Any inconsistency is printed as "INVALID ..." and the program exits with 3. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wrapper {
  uint32_t magic;
  uint32_t version;
  const unsigned char *binary;
  const void *unused;
};

static uint64_t u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void invalid(const char *what) {
  printf("INVALID %s\n", what);
  exit(3);
}

static void bundle(const unsigned char *b) {
  uint64_t count = u64(b + 24);
  if (count == 0 || count > 64) invalid("entry count");
  printf("bundle, %llu entries\n", (unsigned long long)count);
  const unsigned char *p = b + 32;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t offset = u64(p), size = u64(p + 8), id_size = u64(p + 16);
    if (id_size == 0 || id_size > 256) invalid("entry ID size");
    char id[257];
    memcpy(id, p + 24, id_size);
    id[id_size] = 0;
    p += 24 + id_size;
    int host = strncmp(id, "host-", 5) == 0;
    const char *kind = "";
    if (!host) {
      if (size < 4) invalid("device entry size");
      kind = memcmp(b + offset, "\177ELF", 4) == 0 ? " elf" : " not-elf";
    }
    printf("  %s %llu%s\n", id, (unsigned long long)size, kind);
  }
}

void **__hipRegisterFatBinary(const void *w) {
  const struct wrapper *wrap = w;
  if (wrap->magic != 0x48495046u) invalid("wrapper magic");
  if (wrap->version != 1) invalid("wrapper version");
  const unsigned char *b = wrap->binary;
  if (memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) {
    bundle(b);
  } else if (memcmp(b, "CCOB", 4) == 0) {
    uint16_t version, method;
    memcpy(&version, b + 4, 2);
    memcpy(&method, b + 6, 2);
    if (version < 1 || version > 3) invalid("compressed bundle version");
    if (method != 0 && method != 1) invalid("compression method");
    printf("compressed bundle, version %u, %s\n", version, method == 1 ? "zstd" : "zlib");
  } else {
    invalid("fat binary magic");
  }
  static void *handle;
  return &handle;
}

struct dim3 { unsigned x, y, z; };
void __hipUnregisterFatBinary(void **handle) { (void)handle; }
void __hipRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a,
                           void *b, void *c, void *e, int *g) {
  (void)h; (void)f; (void)d; (void)n; (void)t; (void)a; (void)b; (void)c; (void)e; (void)g;
}
void __hipRegisterVar(void **h, char *a, char *b, const char *n, int e, size_t s, int c,
                      int g) {
  (void)h; (void)a; (void)b; (void)n; (void)e; (void)s; (void)c; (void)g;
}
unsigned __hipPushCallConfiguration(struct dim3 g, struct dim3 b, size_t s, void *st) {
  (void)g; (void)b; (void)s; (void)st;
  return 0;
}
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, size_t *s, void **st) {
  (void)g; (void)b; (void)s; (void)st;
  return 0;
}
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **a, size_t s, void *st) {
  (void)f; (void)g; (void)b; (void)a; (void)s; (void)st;
  return 0;
}
int main(void) { return 0; }
