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
"  profiles [--fio PROFILE]                 list the benchmark profiles and their parameters,\n"
"                                           or write one as a fio job file\n"
"  stats DB [--run N] [--format F] [--extents]\n"
"                                           per-operation, per-layer latency statistics\n"
"  report DB [--run N] [--vs M] -o FILE.html\n"
"                                           the run's charts in one HTML file\n"
"  diagnose DB [--run N] [--format F]       which layer and mechanism own a compare's differences\n"
"  replay SOURCE TARGET [options]           replay a mount run, fio iolog or blktrace capture\n"
"                                           at its times, with the replay's fidelity\n"
"  import FILE.json [--db DB] [--label L]   store fio's JSON results (json+) as runs\n"
"  export DB [--run N] [--output FILE]      a run's recorded IOs as a fio iolog\n"
"  version, -V, --version                   print the version\n"
"  help COMMAND                             a command's options (as COMMAND --help)\n"
"\n"
"'fsprism <command> --help' describes a command's options. A usage error exits 2,\n"
"a failure 1.\n");
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "mount", cmd_mount },
	{ "umount", cmd_umount },
	{ "unmount", cmd_umount },
	{ "run", cmd_run },
	{ "profiles", cmd_profiles },
	{ "compare", cmd_compare },
	{ "stats", cmd_stats },
	{ "report", cmd_report },
	{ "diagnose", cmd_diagnose },
	{ "replay", cmd_replay },
	{ "import", cmd_import },
	{ "export", cmd_export },
};

static int (*find_command(const char *name))(int, char **)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return commands[i].run;
	return NULL;
}

static int unknown_command(const char *name)
{
	fprintf(stderr, "fsprism: unknown command '%s' (try 'fsprism help')\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("fsprism %s\n", FSP_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		if (argc == 2) {
			usage(stdout);
			return 0;
		}
		/* fsprism help CMD: CMD's own --help */
		int (*run)(int, char **) = find_command(argv[2]);
		if (!run)
			return unknown_command(argv[2]);
		if (argc > 3) {
			fprintf(stderr, "fsprism help: unexpected argument '%s' (try 'fsprism help')\n",
				argv[3]);
			return 2;
		}
		char *help_argv[] = { argv[2], "--help", NULL };
		return run(2, help_argv);
	}
	int (*run)(int, char **) = find_command(cmd);
	if (!run)
		return unknown_command(cmd);
	return run(argc - 1, argv + 1);
}
