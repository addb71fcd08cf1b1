
# __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-

# __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-

# __CLANG_OFFLOAD_BUNDLE____START__ hipv4-amdgcn-amd-amdhsa--gfx906
/* A tiny OpenMP target region. */
int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 42;
  return x != 42;
}

# __CLANG_OFFLOAD_BUNDLE____END__ hipv4-amdgcn-amd-amdhsa--gfx906
