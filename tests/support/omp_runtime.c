/* A stand-in for the OpenMP offload runtime, for tests: prints what the wrapper's constructor
 * and destructor hand over: each image's size and a hash of its bytes (FNV-1a 64), the entries
 * range, and the image information when the wrapper registers it.
 *
 * Built with -DRUNTIME_ABI='__attribute__((ms_abi))', the runtime's functions take the Microsoft
 * x64 convention, as COFF objects' code calls them: the same code, in an ELF object, then runs
 * on Linux. */
#include <stdint.h>
#include <stdio.h>

#ifndef RUNTIME_ABI
#define RUNTIME_ABI
#endif

struct entry { void *addr; char *name; uint64_t size; int32_t flags, reserved; };
struct image { const unsigned char *start, *end; struct entry *entries_begin, *entries_end; };
struct desc { int32_t count; struct image *images; struct entry *entries_begin, *entries_end; };
struct info { int32_t version, image_number, number_images; const char *arch, *options; };

static uint64_t fnv(const unsigned char *p, const unsigned char *end) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; p < end; p++) h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

RUNTIME_ABI void __tgt_register_image_info(struct info *i) {
  printf("image info: version %d, image %d of %d, arch '%s', options %s\n", i->version,
         i->image_number, i->number_images, i->arch ? i->arch : "(null)",
         i->options ? i->options : "(null)");
}

RUNTIME_ABI void __tgt_register_lib(struct desc *d) {
  printf("register: %d images\n", d->count);
  for (int i = 0; i < d->count; i++) {
    struct image *im = &d->images[i];
    printf("  image %d: %ld bytes, fnv %016llx, entries %ld bytes\n", i,
           (long)(im->end - im->start), (unsigned long long)fnv(im->start, im->end),
           (long)((char *)im->entries_end - (char *)im->entries_begin));
  }
  printf("  entries %ld bytes\n", (long)((char *)d->entries_end - (char *)d->entries_begin));
}

RUNTIME_ABI void __tgt_unregister_lib(struct desc *d) { printf("unregister: %d images\n", d->count); }

int main(void) { printf("main\n"); return 0; }
