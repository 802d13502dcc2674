/*
 * compare.h - what `fsprism compare`'s two halves share: the command, which
 * sets the targets up and runs them (compare.c), and the report it prints
 * from the database afterwards (compare_report.c).
 */
#ifndef FSP_CLI_COMPARE_H
#define FSP_CLI_COMPARE_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fsp_store;

#define MAX_PASS 64

enum { T_RAW, T_FS, T_FSPRISM, T_EMU, T__COUNT };
extern const char *const target_label[T__COUNT]; /* "raw", "fs", "fsprism", "emu" */
#define TARGET_NAMES "raw, fs, fsprism, emu"

struct opts {
	const char *profile, *device, *fs, *db, *scale;
	const char *cow, *journal, *alloc; /* the emu mount's modes; NULL: mount's default */
	int want[T__COUNT];
	int destroy_data;
	int quiet;
	const char *report;   /* --report FILE.html, or NULL */
	uint64_t image_size;
	char *pass[MAX_PASS]; /* --PARAM=VALUE overrides for run */
	const char *pass_key[MAX_PASS], *pass_val[MAX_PASS]; /* the same, parsed */
	int npass;
	char joined[MAX_PASS][PATH_MAX + 64]; /* pass[i]'s text: "--key=value" */
	char span_arg[64];    /* the common --span=, or "" */
	const char *device_model; /* --device-model SPEC: the image on a model mount */
	int rounds;           /* --rounds: every target this many times, order rotated */
	int rounds_given;     /* --rounds was given (else DEFAULT_ROUNDS may apply) */
	int details;          /* --details (or --wide): everything after the answer */
	const char *max_write; /* --max-write: passed to the fsprism and emu mounts */
	const char *inject;   /* --inject: passed to the fsprism and emu mounts */
	int replay;           /* --replay: the fs and emu targets' device IO on raw */
	const char *record;   /* --record MODE for every run and mount [full] */
	int no_trace;         /* --no-trace: passed to every run and mount */
	int format;           /* --format: CMP_TABLE, CMP_JSON, CMP_CSV */
	int wide;             /* --wide: the table's long lines uncut */
	double status_interval; /* --status-interval SECS, 0: none */
};

enum { CMP_TABLE, CMP_JSON, CMP_CSV };

/*
 * The side-by-side table of every step on every target of compare run
 * cmp_run (its child runs, found by label), the per-layer split of the FUSE
 * targets from their mounts' runs (mount_run[t], 0 if none) and the emu
 * mount's device accounting. device is what the targets ran on.
 */
void compare_report(FILE *out, struct fsp_store *st, const struct opts *o,
		    const char *device, int64_t cmp_run,
		    const int64_t mount_run[T__COUNT]);

/*
 * Only the side-by-side table of compare run cmp_run, per step and target,
 * in format (CMP_TABLE, CMP_JSON, CMP_CSV); want: the targets it was to
 * measure (NULL: those that have a run). Also `fsprism stats` on a compare
 * run. 0, or -1 if no step was measured.
 */
int compare_print_table(FILE *out, struct fsp_store *st, int64_t cmp_run,
			const int want[T__COUNT], int format);

/*
 * text[0..n) to out with every line longer than width broken at a space and
 * indented under its text (the report without --wide; the diagnosis folds
 * itself with this, so that compare prints it as `fsprism diagnose` does).
 */
#define COMPARE_COLS 100 /* the width of compare's and diagnose's tables */
void compare_fold(FILE *out, const char *text, size_t n, size_t width);

/*
 * Replay the device IO of target t's round (the fs target's block rows of
 * engine_run, the emu target's device rows of mount_run, step by step) on
 * device, stored as a child run of cmp_run labelled replay-fs / replay-emu
 * with attribute round (compare_replay.c). Stops early when *stop is set.
 * 0, or -1 with err set.
 */
int compare_replay(struct fsp_store *st, const char *device, int64_t cmp_run, int t,
		   int round, int64_t engine_run, int64_t mount_run,
		   volatile sig_atomic_t *stop, char *err, size_t errlen);

/*
 * The diagnosis of compare run cmp_run (src/cli/diagnose.c), printed after
 * the report.
 */
void compare_report_diagnosis(FILE *out, struct fsp_store *st, int64_t cmp_run, int wide);

#endif
