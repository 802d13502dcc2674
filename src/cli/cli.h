/*
 * cli.h - the subcommands of the fsprism program. Each returns the process
 * exit status (0 success, 1 failure, 2 usage error) and prints its own
 * one-line error messages as "fsprism <cmd>: <problem>".
 */
#ifndef FSP_CLI_H
#define FSP_CLI_H

int cmd_mount(int argc, char **argv);    /* src/cli/mount.c */
int cmd_umount(int argc, char **argv);   /* src/cli/mount.c */
int cmd_stats(int argc, char **argv);    /* src/cli/stats.c */
int cmd_run(int argc, char **argv);      /* src/cli/run.c */
int cmd_profiles(int argc, char **argv); /* src/cli/run.c */
int cmd_compare(int argc, char **argv);  /* src/cli/compare.c */
int cmd_report(int argc, char **argv);   /* src/cli/report.c */
int cmd_diagnose(int argc, char **argv); /* src/cli/diagnose.c */
int cmd_replay(int argc, char **argv);   /* src/cli/replay.c */
int cmd_import(int argc, char **argv);   /* src/cli/import.c */
int cmd_export(int argc, char **argv);   /* src/cli/export.c */

#endif
