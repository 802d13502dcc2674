/*
 * diagnose_int.h - what diagnose.c (reading the evidence, judging it) and
 * answer.c (printing the answer: the screen compare shows first, and the
 * "answer" object of diagnose's JSON) share: everything diagnose knows
 * about one compare run and what the rules decided.
 */
#ifndef FSP_CLI_DIAGNOSE_INT_H
#define FSP_CLI_DIAGNOSE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "src/prism/answer.h"
#include "src/prism/decomp.h"
#include "src/prism/stall.h"
#include "src/prism/diagnose.h"

#define MAX_STEPS 64

struct step_info {
	int step;
	char label[64];
};

/* A stall or an outlier of one target's run in one round. */
struct dx_stall {
	int t, round;
	int64_t run;
	struct fsp_stall s;
};

/* Everything diagnose knows about one compare run. */
struct dx_run {
	int64_t cmp_run;
	char fs[32];
	int64_t runs[FSP_DX__TARGETS][FSP_DX_MAX_ROUNDS];   /* engine runs per round */
	int64_t mounts[FSP_DX__TARGETS][FSP_DX_MAX_ROUNDS]; /* their mounts (fsprism, emu) */
	int64_t replays[FSP_DX__TARGETS][FSP_DX_MAX_ROUNDS];
	int nruns[FSP_DX__TARGETS], nmounts[FSP_DX__TARGETS], nreplays[FSP_DX__TARGETS];
	int rounds;
	struct step_info steps[MAX_STEPS];
	int nsteps;
	struct fsp_dx_step ev[FSP_DX__TARGETS][MAX_STEPS];
	/* sums over the rounds that had each kind of evidence */
	int lat_n[FSP_DX__TARGETS][MAX_STEPS], dev_n[FSP_DX__TARGETS][MAX_STEPS],
	    fuse_n[FSP_DX__TARGETS][MAX_STEPS];
	int seq_n[FSP_DX__DIRS][FSP_DX__TARGETS][MAX_STEPS],
	    streams_n[FSP_DX__DIRS][FSP_DX__TARGETS][MAX_STEPS], recent_n[FSP_DX__TARGETS][MAX_STEPS];
	int split_n[FSP_DX__TARGETS][MAX_STEPS];
	/* the stalls and outliers of every round's run (src/cli/stalls.h) */
	struct dx_stall *stalls;
	size_t nstalls;
	/* the user bytes of each round's step: a replay's MB/s is of those */
	double user_bytes[FSP_DX__TARGETS][MAX_STEPS][FSP_DX_MAX_ROUNDS];
	/*
	 * A load curve (every step labelled rate=..., docs/profiles.md "Load
	 * curves"): each target's rate steps are shares of its own maximum,
	 * so its steps are read along the curve, not against each other's
	 * MB/s. Means over the rounds: the IOPS achieved and asked (0: the
	 * closed-loop maximum), and the layer split's mean per IO of each part
	 * (curve_split_n rounds had it).
	 */
	int curve;
	double iops[FSP_DX__TARGETS][MAX_STEPS], asked[FSP_DX__TARGETS][MAX_STEPS];
	int iops_n[FSP_DX__TARGETS][MAX_STEPS];
	double part_us[FSP_DX__TARGETS][MAX_STEPS][FSP_DC__COUNT];
	int curve_split_n[FSP_DX__TARGETS][MAX_STEPS];
};

struct dx_result {
	struct fsp_dx_verdict v[MAX_STEPS][FSP_DX__TARGETS]; /* [step][pair: by tb] */
	int have[MAX_STEPS][FSP_DX__TARGETS];
	struct fsp_dx_shape shape[FSP_DX__TARGETS];
	int shape_done[FSP_DX__TARGETS];
	enum fsp_dx_owner shape_owner[FSP_DX__TARGETS];
	/* the one owner of each verdict (src/prism/answer.h) */
	struct fsp_answer_owner own[MAX_STEPS][FSP_DX__TARGETS];
	/* the headline of each pair, by its b; its steps */
	struct fsp_answer_headline head[FSP_DX__TARGETS];
	int have_head[FSP_DX__TARGETS];
	int head_a[FSP_DX__TARGETS]; /* the pair's a */
	int head_step[FSP_DX__TARGETS][MAX_STEPS]; /* its steps, as indexes of d->steps */
	int head_worst[FSP_DX__TARGETS];           /* the worst of them, or -1 */
};

/* The targets' labels as their runs carry them ("raw", "fs", "fsprism", "emu"). */
extern const char *const fsp_dx_label[FSP_DX__TARGETS];
/* Did target t run in the compare? */
int fsp_dx_present(const struct dx_run *d, int t);
/* The name a person reads for target t: the fs target by its file system. */
const char *fsp_dx_tname(const struct dx_run *d, int t);

/* The answer of a compare (src/cli/answer.c): the screen compare prints
 * by default, and diagnose's JSON member "answer" (',\n"answer": {...}'). */
void fsp_answer_print(FILE *out, const struct dx_run *d, const struct dx_result *res);
void fsp_answer_json(FILE *out, const struct dx_run *d, const struct dx_result *res);
/* A verdict's owners as JSON members ("median_owner": ..., "mid_us": {...}, ),
 * each followed by ", ". */
void fsp_answer_owner_json(FILE *out, const struct fsp_answer_owner *o);
/* The split's line of evidence where the median's or the tail's owner is
 * another than the owner ("median IOs +120 us fuse-transport ...; tail IOs
 * ..."); 0 when there is nothing to say. */
int fsp_answer_split_text(const struct fsp_answer_owner *o, char *buf, size_t len);

#endif
