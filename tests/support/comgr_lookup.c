/* The oracle for which bundle entry comgr gives one ISA name: reads a clang offload bundle,
 * hands comgr the first 4096 bytes as the HIP runtime does (zero-padded when the file is
 * shorter), asks amd_comgr_lookup_code_object for the one ISA name given, and prints the
 * offset and size it picked ("0 0" for none), or "error N" for a failed lookup.
 *
 * One ISA per call: comgr 5.2.3 stops filling a query list after its first hit.
 *
 * Usage: comgr_lookup BUNDLE ISA */
#include <amd_comgr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 4096

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s BUNDLE ISA\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  static char window[WINDOW];
  memset(window, 0, sizeof window);
  size_t got = fread(window, 1, WINDOW, f);
  (void)got;
  fclose(f);

  amd_comgr_data_t data;
  if (amd_comgr_create_data(AMD_COMGR_DATA_KIND_FATBIN, &data) != AMD_COMGR_STATUS_SUCCESS ||
      amd_comgr_set_data(data, WINDOW, window) != AMD_COMGR_STATUS_SUCCESS) {
    fprintf(stderr, "comgr: cannot make the data object\n");
    return 2;
  }
  amd_comgr_code_object_info_t query;
  query.isa = argv[2];
  query.offset = 0;
  query.size = 0;
  amd_comgr_status_t status = amd_comgr_lookup_code_object(data, &query, 1);
  if (status != AMD_COMGR_STATUS_SUCCESS) {
    printf("error %d\n", (int)status);
  } else {
    printf("%llu %llu\n", (unsigned long long)query.offset, (unsigned long long)query.size);
  }
  amd_comgr_release_data(data);
  return 0;
}
