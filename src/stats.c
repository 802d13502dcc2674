/* placeholder: src/stats.c is being written */
#include <stdio.h>
#include "cli.h"
int cmd_stats(int argc, char **argv) { fprintf(stderr, "fsprism stats: not built yet\n"); return 1; }
