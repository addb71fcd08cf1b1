// Asks AMD's kpack loader (rocm-kpack/runtime, built by kpack_loader/build.sh) for one code
// object, the way the HIP runtime does for a HIPK wrapper, and prints what it got.
//
// Usage: kpack_load METADATA_FILE BINARY_PATH CO_INDEX ARCH...
//   METADATA_FILE holds the msgpack of the binary's .rocm_kpack_ref section.
// Prints `ok SIZE FNV1A64` (the FNV-1a 64-bit hash of the bytes, in hex) and exits 0, or
// `error CODE` and exits 1. With KPACK_LOAD_OUTPUT set, the loaded bytes are written there.
// The loader reads ROCM_KPACK_PATH, ROCM_KPACK_PATH_PREFIX, ROCM_KPACK_DISABLE and
// ROCM_KPACK_DEBUG itself.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "rocm_kpack/kpack.h"

static uint64_t fnv1a64(const unsigned char* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    hash = (hash ^ data[i]) * 0x100000001b3ULL;
  }
  return hash;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: kpack_load METADATA_FILE BINARY_PATH CO_INDEX ARCH...\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "kpack_load: cannot read %s\n", argv[1]);
    return 2;
  }
  std::vector<char> metadata((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  // The loader parses up to 64 KiB past the pointer: give it that much room.
  metadata.resize(metadata.size() + 64 * 1024, 0);

  uint32_t index = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
  const char* const* arches = argv + 4;
  size_t arch_count = static_cast<size_t>(argc - 4);

  kpack_cache_t cache = nullptr;
  kpack_error_t err = kpack_cache_create(&cache);
  if (err != KPACK_SUCCESS) {
    std::printf("error %d\n", static_cast<int>(err));
    return 1;
  }
  void* code = nullptr;
  size_t size = 0;
  err = kpack_load_code_object(cache, metadata.data(), argv[2], index, arches,
                               arch_count, &code, &size);
  if (err != KPACK_SUCCESS) {
    std::printf("error %d\n", static_cast<int>(err));
    kpack_cache_destroy(cache);
    return 1;
  }
  const auto* bytes = static_cast<const unsigned char*>(code);
  std::printf("ok %zu %016llx\n", size,
              static_cast<unsigned long long>(fnv1a64(bytes, size)));
  if (const char* out = std::getenv("KPACK_LOAD_OUTPUT")) {
    std::ofstream(out, std::ios::binary)
        .write(static_cast<const char*>(code), static_cast<std::streamsize>(size));
  }
  kpack_free_code_object(code);
  kpack_cache_destroy(cache);
  return 0;
}
