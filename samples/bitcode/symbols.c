/* External, static, weak, common, declared-only, alias, TLS, used, hidden and section symbols,
   in an order that differs from the one the archive symbol table lists them in. */
extern int ext_decl;
extern void ext_fn(void);
int defined_var = 1;
int common_var; /* common with -fcommon */
const int const_var = 2;
static int static_var = 3;
static int static_fn(int x) { return x + static_var + ext_decl; }
__attribute__((weak)) int weak_var = 4;
__attribute__((weak)) int weak_fn(void) { return 5; }
__attribute__((visibility("hidden"))) int hidden_var = 6;
__attribute__((visibility("hidden"))) int hidden_fn(void) { return 7; }
__attribute__((used)) static int used_static = 9;
__attribute__((used)) int used_global = 10;
__thread int tls_var = 11;
static __thread int static_tls;
int alias_target(void) { return 12; }
#ifndef __APPLE__
__attribute__((visibility("protected"))) int protected_var = 8;
__attribute__((section("mysec"))) int sec_var = 13;
int fn_alias(void) __attribute__((alias("alias_target")));
__attribute__((weak)) int weak_alias(void) __attribute__((alias("alias_target")));
#endif
void fn(void) { ext_fn(); static_fn(1); static_tls++; }
const char *str(void) { return "a string literal"; }
int zzz_last(void) { return 0; }
int aaa_first;
