/* A stand-in for the CUDA runtime, for tests: programs built by nvcc with -cudart=none link
 * against it and run without a GPU. __cudaRegisterFatBinary prints the wrapper it is given
 * and every entry of the fat binaries it points at: kind, SM, flags, stored size and a hash
 * of the stored bytes, so that a rewritten program shows what it registers (and, for a device
 * link's wrapper, the prelinked fat binaries it lists). Launches do nothing. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct dim3 { unsigned x, y, z; };

struct wrapper {
  int magic;
  int version;
  const unsigned char *data;
  void *filename_or_fatbins;
};

static uint64_t fnv1a(const unsigned char *bytes, uint64_t len) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < len; i++) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

static uint64_t u64_at(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t u32_at(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t u16_at(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* Prints the entries of the fat binary at `fatbin`; returns its size. */
static uint64_t print_fatbin(const unsigned char *fatbin) {
  if (u32_at(fatbin) != 0xba55ed50u) {
    printf("  no fat binary (magic %#x)\n", u32_at(fatbin));
    return 0;
  }
  uint64_t header = u16_at(fatbin + 6), size = u64_at(fatbin + 8);
  printf("  fat binary, %llu bytes\n", (unsigned long long)(header + size));
  for (uint64_t at = header; at < header + size;) {
    const unsigned char *e = fatbin + at;
    uint32_t entry_header = u32_at(e + 4);
    uint64_t payload = u64_at(e + 8);
    uint32_t compressed = u32_at(e + 16);
    uint64_t stored = compressed ? compressed : payload;
    printf("    %s sm_%u flags %#llx stored %llu hash %016llx\n",
           u16_at(e) == 1 ? "ptx" : u16_at(e) == 2 ? "elf" : "other", u32_at(e + 28),
           (unsigned long long)u64_at(e + 40), (unsigned long long)stored,
           (unsigned long long)fnv1a(e + entry_header, stored));
    at += entry_header + payload;
  }
  return header + size;
}

void **__cudaRegisterFatBinary(void *fat) {
  const struct wrapper *w = fat;
  printf("register wrapper magic %#x version %d\n", w->magic, w->version);
  if (w->magic == 0x466243b1)
    print_fatbin(w->data);
  /* A device link's wrapper (version 2) lists the prelinked fat binaries of the relocatable
   * translation units (in __nv_relfatbin), the list ending with a null pointer. */
  if (w->magic == 0x466243b1 && w->version == 2 && w->filename_or_fatbins) {
    const unsigned char *const *prelinked = w->filename_or_fatbins;
    for (; *prelinked; prelinked++) {
      printf("  prelinked\n");
      print_fatbin(*prelinked);
    }
  }
  fflush(stdout);
  return (void **)fat;
}

void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }
void __cudaUnregisterFatBinary(void **handle) { (void)handle; }
void __cudaRegisterFunction(void **handle, const char *host, char *device, const char *name,
                            int limit, void *tid, void *bid, void *block, void *grid, int *size) {
  (void)handle; (void)host; (void)device; (void)limit; (void)tid; (void)bid; (void)block;
  (void)grid; (void)size;
  printf("  function %s\n", name);
}
unsigned __cudaPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t shared,
                                     void *stream) {
  (void)grid; (void)block; (void)shared; (void)stream;
  return 0;
}
int __cudaPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *shared,
                               void *stream) {
  (void)grid; (void)block; (void)shared; (void)stream;
  return 0;
}
/* Declared without prototypes: whatever the caller passes, nothing is read. */
int __cudaLaunchKernel() { return 0; }
int __cudaGetKernel() { return 0; }
int cudaLaunchKernel() { return 0; }
