/* C with .bss and common data, static and weak functions, a file symbol (MinGW) and a long
   file name. */
static int counter_in_bss;
int common_variable;
int initialised = 7;
const char message_in_rdata[] = "a message that is long enough to be interesting";

static int helper(int x) { return x + counter_in_bss++; }
__attribute__((weak)) int weak_function(int x) { return helper(x) * 2; }
extern int defined_elsewhere_with_a_long_name(int);

int entry_point_with_a_long_name(int x) {
  return weak_function(x) + defined_elsewhere_with_a_long_name(initialised) + message_in_rdata[x];
}
