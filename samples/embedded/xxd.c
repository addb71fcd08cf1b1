/* A program that carries its device code as a C array, written by `xxd -i kernel-z.bundle`
   (an array that is not const: it lands in .data). */
#include <stdio.h>

#include "kernel-z.h"

int main(void) {
  printf("device code: %u bytes\n", kernel_z_bundle_len);
  return kernel_z_bundle[0] != 'C';
}
