/* What the C runtime would give a Windows program, for a link with -nodefaultlib. */
int _fltused = 0;
int atexit(void (*fun)(void)) { (void)fun; return 0; }
