/* The host program of the linked samples: it only needs to link. */
int main(void) { return 0; }
