/*
 * main.c - the fsprism command line: dispatch to a subcommand.
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "src/cli/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: fsprism <command> [options] [args]\n"
"\n"
"Split storage latency into its layers.\n"
"\n"
"commands:\n"
"  mount [options] BACKING_DIR MOUNTPOINT   passthrough FUSE mount that logs every operation,\n"
"                                           optionally emulating copy-on-write / journaling\n"
"  umount MOUNTPOINT                        unmount and wait until every record is stored\n"
"  run PROFILE TARGET [options]             run a benchmark profile on a device or file\n"
"  compare [options]                        one profile on raw device, native fs, fsprism mount\n"
"                                           (and, with --cow/--journal, the emulation)\n"
"  profiles                                 list the benchmark profiles and their parameters\n"
"  stats DB [--run N] [--format F] [--extents]\n"
"                                           per-operation, per-layer latency statistics\n"
"  version                                  print the version\n"
"\n"
"'fsprism <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "mount"))
		return cmd_mount(argc - 1, argv + 1);
	if (!strcmp(cmd, "umount") || !strcmp(cmd, "unmount"))
		return cmd_umount(argc - 1, argv + 1);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "profiles"))
		return cmd_profiles(argc - 1, argv + 1);
	if (!strcmp(cmd, "compare"))
		return cmd_compare(argc - 1, argv + 1);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("fsprism %s\n", FSP_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "fsprism: unknown command '%s' (try 'fsprism help')\n", cmd);
	return 2;
}
