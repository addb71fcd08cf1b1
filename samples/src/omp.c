/* A tiny OpenMP target region. */
int main(void) {
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 42;
  return x != 42;
}
