// Virtual calls checked by CFI: ThinLTO then splits the module in two.
struct A { virtual int f(); };
int A::f() { return 1; }
struct B : A { int f() override; };
int B::f() { return 2; }
int call(A *a) { return a->f(); }
static int helper() { return 3; }
int user() { return helper(); }
