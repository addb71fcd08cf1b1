/* OpenMP declare target functions and variables (no target region, so no names derived from
   the source file's inode). */
#pragma omp declare target
int counter = 0;
static int hidden_state = 1;
int bump(int x) { return counter += x + hidden_state; }
#pragma omp end declare target
int host_only(void) { return 2; }
