/* placeholder: fs/mount.c is being written */
#include <stdio.h>
#include "cli.h"
int cmd_mount(int argc, char **argv) { fprintf(stderr, "fsprism mount: not built yet\n"); return 1; }
int cmd_umount(int argc, char **argv) { fprintf(stderr, "fsprism umount: not built yet\n"); return 1; }
