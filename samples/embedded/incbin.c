/* A program that carries its device code as a file embedded in .rodata by the assembler's
   .incbin, as programs that load their GPU code themselves (hipModuleLoadData) do. */
#include <stdio.h>

__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl kernel_bundle\n"
        "kernel_bundle:\n"
        ".incbin \"kernel.bundle\"\n"
        ".globl kernel_bundle_end\n"
        "kernel_bundle_end:\n"
        ".previous\n");

extern const unsigned char kernel_bundle[], kernel_bundle_end[];

int main(void) {
  printf("device code: %zu bytes\n", (size_t)(kernel_bundle_end - kernel_bundle));
  return 0;
}
