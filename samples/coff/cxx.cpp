// C++ with inline functions and templates (COMDAT sections), long names, statics and
// relocations between sections.
#include <stddef.h>

namespace offload_samples {
template <typename T> struct accumulator_with_a_long_name {
  T total = 0;
  inline void add(T v) { total += v; }
  T get() const { return total; }
};

static int counter_in_bss;
int initialised_global = 42;
const char *const greeting_in_rdata = "hello from a COFF sample";

inline int inline_helper_function_with_long_name(int x) { return x * 3 + counter_in_bss; }

int sum_ints(const int *v, size_t n) {
  accumulator_with_a_long_name<int> a;
  for (size_t i = 0; i < n; ++i)
    a.add(inline_helper_function_with_long_name(v[i]));
  return a.get();
}

double sum_doubles(const double *v, size_t n) {
  accumulator_with_a_long_name<double> a;
  for (size_t i = 0; i < n; ++i)
    a.add(v[i]);
  return a.get();
}

struct base { virtual ~base() {} virtual int f() { return 1; } };
struct derived : base { int f() override { return counter_in_bss++; } };
int call_virtual(base &b) { return b.f(); }
base *make_derived() { static derived d; return &d; }
}

extern "C" int __attribute__((weak)) weak_hook(int x) { return x; }
extern "C" int use_weak(int x) { return weak_hook(x) + offload_samples::initialised_global; }
