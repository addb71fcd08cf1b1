
// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-
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

// __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-

// __CLANG_OFFLOAD_BUNDLE____START__ openmp-amdgcn-amd-amdhsa--gfx906
/* A tiny OpenMP target region. */
int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 42;
  return x != 42;
}

// __CLANG_OFFLOAD_BUNDLE____END__ openmp-amdgcn-amd-amdhsa--gfx906
