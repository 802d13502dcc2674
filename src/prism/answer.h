/*
 * answer.h - the answer of a compare, decided once for every view: the
 * screen `fsprism compare` prints, `fsprism diagnose` (table and JSON) and
 * the HTML report all show what these functions decide, so that they
 * cannot name different owners for the same step.
 *
 * - One owner per step and pair of neighbouring targets (a -> b), with the
 *   owners of the IOs around the median and of the tail beside it when
 *   they differ ("fuse-transport; tail: drive").
 * - One headline per pair over all steps ("fsprism slower than ext4 at
 *   11/11 mixes, worst 60/40: ...").
 *
 * Pure functions over the verdicts of diagnose.h and the layer split per
 * IO already summed into owner classes: no sqlite3, no kernel.
 * docs/diagnose.md, "One owner", states the rule.
 */
#ifndef FSP_PRISM_ANSWER_H
#define FSP_PRISM_ANSWER_H

#include <stddef.h>
#include "src/prism/diagnose.h"

/*
 * The owner class of one part of the layer split (enum fsp_dc_part) on
 * target t. The device parts (block queue, device) are FSP_DX_DRIVE, which
 * the rule names by the verdict's device-side mechanism; the kernel's
 * submission and completion around the device are the native file
 * system's path on raw and fs (so that raw -> fs counts what the file
 * system adds) and the FUSE transport on a mount; a mount's backing
 * system calls are the native file system's path (fsprism) or the
 * emulation's (emu); the residual is FSP_DX_UNKNOWN (not attributed).
 */
enum fsp_dx_owner fsp_answer_part_owner(unsigned part, enum fsp_dx_target t);

/* A split owner needs this share of the difference, and this lead over
 * the next class (the verdict's OWN_SHARE and OWN_LEAD). */
#define FSP_ANSWER_SHARE 0.33
#define FSP_ANSWER_LEAD 1.5

/*
 * The owner among per-class differences b - a (µs per IO, indexed by
 * enum fsp_dx_owner): the class with the largest positive difference,
 * when it is at least FSP_ANSWER_SHARE of the total difference and
 * FSP_ANSWER_LEAD times the next class's; else FSP_DX_UNKNOWN. The device
 * class is returned as device_owner.
 */
enum fsp_dx_owner fsp_answer_split_owner(const double delta_us[FSP_DX__OWNERS],
					 enum fsp_dx_owner device_owner);

struct fsp_answer_owner {
	enum fsp_dx_owner owner;  /* the one owner every view names */
	enum fsp_dx_owner mean;   /* the verdict's: the mechanism over the means */
	enum fsp_dx_owner median; /* of the IOs around the median; UNKNOWN: none or no split */
	enum fsp_dx_owner tail;   /* of the IOs at or above p99 */
	int have_split;
	double mid_us[FSP_DX__OWNERS], tail_us[FSP_DX__OWNERS]; /* b - a per class */
	char text[128];           /* the owner, then where median and tail differ */
};

/*
 * The owner of the pair p at one step, whose verdict is v:
 *   noise (the throughput is inside the spread): noise;
 *   else the verdict's owner when it names a cause, else the median's,
 *   else the tail's, else unknown.
 * The median owner is judged when the throughput differs; the tail owner
 * when the p99 does too (not inside its spread). text is the owner, then
 * "; median: X" and "; tail: Y" for those that name another cause.
 */
void fsp_answer_owner(const struct fsp_dx_pair *p, const struct fsp_dx_verdict *v,
		      struct fsp_answer_owner *o);

/* One step of a pair, for the headline. */
struct fsp_answer_step {
	int read_pct, qd;
	const char *label;                 /* the step's own label */
	double a_mbps, b_mbps;             /* medians over the rounds; <= 0 not measured */
	enum fsp_dx_judgement j;           /* of the throughput */
	const struct fsp_answer_owner *o;
};

struct fsp_answer_headline {
	int steps;          /* measured on both */
	int slower;         /* b below a by more than FSP_DX_FLOOR */
	int outside;        /* ... and beyond the spread (judged outside) */
	int worst;          /* index of the lowest b / a; -1 none */
	double rel;         /* b / a - 1 there */
	int owner_steps;    /* slower steps whose owner is the worst step's */
	char step_name[32]; /* "60/40", "QD4", or the step's label */
	char text[384];
};

/*
 * The headline of the pair a_name -> b_name over n steps: how often b is
 * slower, beyond the noise or not, its worst step with both MB/s and the
 * owner there, and how many slower steps share that owner. rounds: how
 * many the noise rule had (1: not judged, said so).
 */
void fsp_answer_headline(const char *a_name, const char *b_name,
			 const struct fsp_answer_step *s, int n, int rounds,
			 struct fsp_answer_headline *h);

/* A step's short name: "60/40" where the steps differ in mix, "QD4" in
 * queue depth, else its label. */
void fsp_answer_step_name(const struct fsp_answer_step *s, int n, int i, char *buf,
			  size_t len);

#endif
