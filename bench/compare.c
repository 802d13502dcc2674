/* placeholder: bench/compare.c is being written */
#include <stdio.h>
#include "cli.h"
int cmd_compare(int argc, char **argv) { fprintf(stderr, "fsprism compare: not built yet\n"); return 1; }
