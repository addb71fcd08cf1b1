# 1 "src/omp.c"
# 1 "<built-in>" 1
# 1 "<built-in>" 3
# 401 "<built-in>" 3
# 1 "<command line>" 1
# 1 "<built-in>" 2
# 1 "src/omp.c" 2

int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 42;
  return x != 42;
}
