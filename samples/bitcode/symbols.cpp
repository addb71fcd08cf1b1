// C++ inline functions and templates (comdats), a class with a vtable, namespaces, statics.
inline int inl(int x) { return x * 2; }
template <typename T> T twice(T x) { return x + x; }
template int twice<int>(int);
namespace ns {
int nsvar = 1;
int nsfn() { return inl(nsvar); }
} // namespace ns
struct Base {
  virtual ~Base();
  virtual int f();
};
Base::~Base() {}
int Base::f() { return twice(2.0) > 1; }
static int file_static() { return 3; }
namespace {
int anon_var = 4;
}
int use_all() { return file_static() + anon_var + inl(5) + twice<long>(6); }
extern "C" int c_linkage(int y) { return y; }
__attribute__((weak)) int weak_cxx() { return 0; }
int guarded() {
  static int local_static = use_all();
  return local_static;
}
