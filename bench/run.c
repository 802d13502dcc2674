/* placeholder: bench/run.c is being written */
#include <stdio.h>
#include "cli.h"
int cmd_run(int argc, char **argv) { fprintf(stderr, "fsprism run: not built yet\n"); return 1; }
int cmd_profiles(int argc, char **argv) { fprintf(stderr, "fsprism profiles: not built yet\n"); return 1; }
