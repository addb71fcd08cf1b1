/* A stand-in for the HIP runtime, for tests: __hipRegisterFatBinary follows the wrapper that
 * clang's HIP host code passes (magic "HIPF", version, pointer to the fat binary) and prints
 * what a runtime would see there: a bundle and each entry's ID, size and whether a device
 * entry is an ELF code object, or a compressed bundle's header. With HIP_STANDIN_DEVICE set to
 * a device's target ID (gfx1101, gfx90a:xnack-), it also says which entry of each uncompressed
 * bundle the HIP runtime would load for that device: its native code, else the code of the
 * generic target its map gives, else SPIR-V. Every other function does nothing. Any
 * inconsistency is printed as "INVALID ..." and the program exits with 3. A split binary's
 * "HIPK" wrapper prints the binary's name in its kpack reference and the code-object index. */
#define _GNU_SOURCE /* memmem */
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

/* The HIP runtime's map from processor to generic target (TargetGenericMap). */
static const char *const generic_of[][2] = {
  {"gfx900", "gfx9-generic"}, {"gfx902", "gfx9-generic"}, {"gfx904", "gfx9-generic"},
  {"gfx906", "gfx9-generic"}, {"gfx909", "gfx9-generic"}, {"gfx90c", "gfx9-generic"},
  {"gfx942", "gfx9-4-generic"}, {"gfx950", "gfx9-4-generic"},
  {"gfx1010", "gfx10-1-generic"}, {"gfx1011", "gfx10-1-generic"},
  {"gfx1012", "gfx10-1-generic"}, {"gfx1013", "gfx10-1-generic"},
  {"gfx1030", "gfx10-3-generic"}, {"gfx1031", "gfx10-3-generic"},
  {"gfx1032", "gfx10-3-generic"}, {"gfx1033", "gfx10-3-generic"},
  {"gfx1034", "gfx10-3-generic"}, {"gfx1035", "gfx10-3-generic"},
  {"gfx1036", "gfx10-3-generic"},
  {"gfx1100", "gfx11-generic"}, {"gfx1101", "gfx11-generic"}, {"gfx1102", "gfx11-generic"},
  {"gfx1103", "gfx11-generic"}, {"gfx1150", "gfx11-generic"}, {"gfx1151", "gfx11-generic"},
  {"gfx1152", "gfx11-generic"}, {"gfx1153", "gfx11-generic"},
  {"gfx1200", "gfx12-generic"}, {"gfx1201", "gfx12-generic"},
};

/* Whether the bundle entry `id` holds AMDGPU code for `processor` that a device with the
 * features in `device` (":xnack-" and the like) can run: each feature the entry sets, the
 * device sets alike. */
static int entry_for(const char *id, const char *processor, const char *device) {
  const char *target = strstr(id, "-amdgcn-amd-amdhsa-");
  if (!target) return 0;
  target += strlen("-amdgcn-amd-amdhsa-");
  if (*target == '-') target++;
  size_t n = strlen(processor);
  if (strncmp(target, processor, n) != 0 || (target[n] != 0 && target[n] != ':')) return 0;
  for (const char *f = strchr(target, ':'); f; f = strchr(f + 1, ':')) {
    char feature[32];
    size_t len = strcspn(f + 1, ":");
    if (len == 0 || len >= sizeof feature - 1) return 0;
    feature[0] = ':';
    memcpy(feature + 1, f + 1, len);
    feature[len + 1] = 0;
    if (!strstr(device, feature)) return 0;
  }
  return 1;
}

/* Which entry of the bundle `ids` (count of them) a device with target ID `device` loads. */
static void choose(char ids[][257], uint64_t count, const char *device) {
  char processor[64];
  size_t len = strcspn(device, ":");
  if (len >= sizeof processor) invalid("device");
  memcpy(processor, device, len);
  processor[len] = 0;
  for (uint64_t i = 0; i < count; i++)
    if (entry_for(ids[i], processor, device)) {
      printf("  %s loads %s\n", device, ids[i]);
      return;
    }
  for (size_t g = 0; g < sizeof generic_of / sizeof generic_of[0]; g++) {
    if (strcmp(generic_of[g][0], processor) != 0) continue;
    for (uint64_t i = 0; i < count; i++)
      if (entry_for(ids[i], generic_of[g][1], device)) {
        printf("  %s loads %s\n", device, ids[i]);
        return;
      }
  }
  for (uint64_t i = 0; i < count; i++)
    if (strstr(ids[i], "-spirv64-amd-amdhsa-") && strstr(ids[i], "amdgcnspirv")) {
      printf("  %s loads %s\n", device, ids[i]);
      return;
    }
  printf("  %s finds no code\n", device);
}

static void bundle(const unsigned char *b) {
  uint64_t count = u64(b + 24);
  if (count == 0 || count > 64) invalid("entry count");
  printf("bundle, %llu entries\n", (unsigned long long)count);
  static char ids[64][257];
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
    memcpy(ids[i], id, sizeof id);
  }
  const char *device = getenv("HIP_STANDIN_DEVICE");
  if (device && *device) choose(ids, count, device);
}

/* A split binary's wrapper ("HIPK"): its pointer is the kpack reference, a MessagePack map
 * whose "kernel_name" (a string of under 256 bytes) names the binary in its archives, and its
 * third field the code-object index the runtime asks the archives for. */
static void kpack(const struct wrapper *wrap) {
  const unsigned char *r = wrap->binary;
  if ((r[0] & 0xf0) != 0x80) invalid("kpack reference: not a map");
  const unsigned char *key = memmem(r, 512, "\xabkernel_name", 12);
  if (!key) invalid("kpack reference: no kernel_name");
  const unsigned char *s = key + 12;
  size_t n;
  if ((s[0] & 0xe0) == 0xa0) {
    n = s[0] & 0x1f;
    s += 1;
  } else if (s[0] == 0xd9) {
    n = s[1];
    s += 2;
  } else {
    invalid("kpack reference: kernel_name is not a string");
  }
  printf("kpack %.*s#%llu\n", (int)n, (const char *)s, (unsigned long long)(uintptr_t)wrap->unused);
}

void **__hipRegisterFatBinary(const void *w) {
  const struct wrapper *wrap = w;
  static void *handle;
  if (wrap->magic == 0x4B504948u && wrap->version == 1) {
    kpack(wrap);
    return &handle;
  }
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
