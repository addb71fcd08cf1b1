/* Module-level assembly, ifunc, weakref, gnu_inline, and an llvm.metadata section. */
__asm__(".globl asm_global\nasm_global:\n.long 1\n"
        ".weak asm_weak\nasm_weak:\n.long 2\n"
        "asm_local:\n.long 3\n"
        ".globl asm_undef_ref\n.long asm_undef\n");
static int impl(void) { return 1; }
static int (*resolve(void))(void) { return impl; }
int ifn(void) __attribute__((ifunc("resolve")));
static int wr(void) __attribute__((weakref("target_fn")));
extern inline __attribute__((gnu_inline)) int gi(int x) { return x + 1; }
int call(void) { return ifn() + gi(2) + (wr ? wr() : 0); }
__attribute__((section("llvm.metadata"))) int in_llvm_metadata = 5;
