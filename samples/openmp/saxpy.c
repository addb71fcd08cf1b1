/* A second OpenMP target region, with no main, to link beside ../src/omp.c. */
void saxpy(int n, float a, const float *x, float *y) {
#pragma omp target teams distribute parallel for map(to : x[0 : n]) map(tofrom : y[0 : n])
  for (int i = 0; i < n; ++i)
    y[i] = a * x[i] + y[i];
}
