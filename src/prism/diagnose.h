/*
 * diagnose.h - the verdicts of `fsprism diagnose`: for each step and each
 * pair of neighbouring targets (raw -> native fs -> fsprism passthrough ->
 * emulated), whether their difference is outside the round-to-round spread,
 * and which ONE part owns it, with its evidence in numbers; and the
 * "bathtub" (mixed steps collapsing below the pure ones) as a shape.
 *
 * Pure functions over small structs of evidence that the caller read from
 * the database (src/cli/diagnose.c gathers them): no sqlite3, no kernel.
 * Each mechanism is one function over the same struct of a pair, so that a
 * better number (the per-IO decomposition, the device-pattern module) only
 * changes what fills the struct. docs/diagnose.md describes every rule.
 */
#ifndef FSP_PRISM_DIAGNOSE_H
#define FSP_PRISM_DIAGNOSE_H

#include <stddef.h>

#define FSP_DX_MAX_ROUNDS 16
/* Differences below this share are never findings: the histograms' and
 * the clock's resolution, and the order effects of one round. */
#define FSP_DX_FLOOR 0.03

enum fsp_dx_target { FSP_DX_RAW, FSP_DX_FS, FSP_DX_FSPRISM, FSP_DX_EMU, FSP_DX__TARGETS };

/* Who owns a difference. Every verdict names one of these. */
enum fsp_dx_owner {
	FSP_DX_NOISE,          /* inside the spread (or below FSP_DX_FLOOR) */
	FSP_DX_UNKNOWN,        /* outside it, but no part explains half of it */
	FSP_DX_DRIVE,          /* the device's time grew, the pattern did not change */
	FSP_DX_COW_RELOCATION, /* device reads or writes lost their sequentiality */
	FSP_DX_EXTRA_IO,       /* metadata / journal / flush IO beside the data */
	FSP_DX_REQUEST_SIZE,   /* requests split or merged between layers */
	FSP_DX_RECENCY,        /* reads of data written moments earlier */
	FSP_DX_FUSE_TRANSPORT, /* kernel FUSE queue and round trip */
	FSP_DX_DAEMON,         /* fsprism's own work in the handler */
	FSP_DX_EMULATION,      /* the emulation's CPU and waits, beyond its IO */
	FSP_DX_FS_CPU,         /* the native file system above its device IO */
	FSP_DX__OWNERS
};
const char *fsp_dx_owner_name(enum fsp_dx_owner o);

/* ---- the noise rule --------------------------------------------------------- */

enum fsp_dx_judgement {
	FSP_DX_INSIDE,         /* noise */
	FSP_DX_OUTSIDE,        /* a difference beyond the spread */
	FSP_DX_SPREAD_UNKNOWN, /* one round: above the floor, spread unknown */
};
struct fsp_dx_cmp {
	double med_a, med_b; /* medians over the rounds */
	double rel;          /* med_b / med_a - 1 */
	double spread;       /* paired: max - min of the rounds' b/a - 1; else the
				larger (max - min) / median of a and b; -1: unknown */
	int paired;          /* judged round by round */
	enum fsp_dx_judgement j;
};
/*
 * b against a, each one value per round (values <= 0 are missing). With
 * the same two or more rounds on both sides, paired: rel is the median of
 * the rounds' b/a - 1, and the difference is outside when |rel| > max(half
 * the range of those ratios, FSP_DX_FLOOR) (with two rounds: both point the
 * same way). Otherwise rel = median(b) / median(a) - 1, inside when
 * |rel| <= max(spread, FSP_DX_FLOOR), and with fewer than two rounds on a
 * side the spread is unknown. 0, or -1 when either side has no value.
 */
int fsp_dx_judge(const double *a, int na, const double *b, int nb, struct fsp_dx_cmp *c);
/* (max - min) / median of one series' values > 0; -1 with fewer than two. */
double fsp_dx_spread(const double *v, int n);
double fsp_dx_median(const double *v, int n); /* of the values > 0; 0 if none */

/* ---- the shape ---------------------------------------------------------------- */

struct fsp_dx_point {
	int read_pct;
	double mbps;     /* median over rounds */
	double spread;   /* max - min over the rounds of the step's MB/s over its
			    round's lower pure step; -1 unknown */
};
struct fsp_dx_shape {
	int found;
	int first_pct, last_pct; /* the mixes of the dip (read %, high to low) */
	int nlow;                /* mixed steps in it */
	double depth;            /* the lowest mixed step / the lower pure step */
	double pure_mbps;        /* the lower of the pure steps */
	double low_mbps;
	int low_pct;             /* the mix of the lowest */
};
/*
 * A bathtub: at least two mixed steps (0 < read % < 100), adjacent in mix
 * order, below FSP_DX_DIP times the lower of the pure steps (100% and 0%
 * reads; one of them is enough), each with the top of its rounds' spread
 * (the step's median ratio to the pure level + half its spread) still
 * below the pure level. n points in any order. 0, or -1 when there is no
 * pure step.
 */
#define FSP_DX_DIP 0.75
int fsp_dx_bathtub(const struct fsp_dx_point *p, int n, struct fsp_dx_shape *s);

/* ---- the evidence of one step on one target -------------------------------- */

/* The directions of the device's sequentiality: one rule judges both. */
enum fsp_dx_dir { FSP_DX_READS, FSP_DX_WRITES, FSP_DX__DIRS };

struct fsp_dx_step {
	int present;
	int read_pct, qd, seq;   /* seq: the application's access is sequential */
	long block_size;
	int nrounds;
	double mbps[FSP_DX_MAX_ROUNDS];
	double p50[FSP_DX_MAX_ROUNDS], p99[FSP_DX_MAX_ROUNDS]; /* µs, the main direction */
	/* means over the rounds, per user IO; negative: unknown */
	double lat_us;           /* engine latency (reads and writes) */
	/* the device view: block rows (raw, fs; fsprism, emu: the mount's trace) or emu's dev rows */
	int have_dev;
	double dev_per_io;       /* device reads and writes per user IO */
	double dev_bytes;        /* mean bytes of one */
	double amp;              /* device bytes / user bytes */
	double flush_per_io;     /* flushes (a FUA write counts as one) */
	double dev_us;           /* device time per user IO, flushes included */
	double flush_us;         /* of which flushes */
	/* the device's sequentiality per direction (FSP_DX_READS, FSP_DX_WRITES) */
	double dev_seq[FSP_DX__DIRS];  /* share of the direction's device IOs continuing
					  a stream; -1 none */
	double dev_next[FSP_DX__DIRS]; /* share continuing the IO just before, of either
					  direction (one stream, not several
					  interleaved); -1 none */
	double dev_streams[FSP_DX__DIRS]; /* distinct streams per 16 of the direction's
					     IOs; -1 fewer than 16 */
	double recent_reads;     /* share of device reads of data written < 100 ms before */
	/* the FUSE side (fsprism, emu): per user IO, µs */
	int have_fuse;
	double fuse_req_per_io;  /* FUSE read and write requests per user IO */
	double transport_us;     /* the kernel's side: measured (layers per IO: submit,
				    FUSE queue, dispatch, reply, completion), else
				    engine latency - the handler's total */
	int transport_measured;  /* transport_us measured (in some round) */
	double fuse_queue_p50_us, fuse_queue_p99_us; /* measured: of the main direction,
				    means over the rounds; 0 unknown */
	double daemon_us, emu_us, backing_us;
	double inject_us;        /* of daemon_us: the delay mount --inject added */
	/* the layer split per IO (src/prism/decomp.h) of the main direction,
	 * the parts summed into owner classes (fsp_answer_part_owner): their
	 * mean µs over the IOs around the median (p45 to p55) and over those at
	 * or above p99; means over the rounds that had it */
	int have_split;
	double mid_us[FSP_DX__OWNERS], tail_us[FSP_DX__OWNERS];
	/* the device-pattern replay of this target's device IO on raw */
	int have_replay;
	double replay_mbps[FSP_DX_MAX_ROUNDS];
	int replay_rounds;
	int replay_qd_max;       /* the replays' largest queue depth at this step; 0 unknown */
};

/* A pair: b is the target below a's neighbour (a -> b), raw for reference. */
struct fsp_dx_pair {
	enum fsp_dx_target ta, tb;
	const struct fsp_dx_step *a, *b, *raw; /* raw may be a itself or NULL */
	double delta_us;         /* b.lat_us - a.lat_us */
};

/*
 * The mechanisms: each returns the µs per user IO of the difference it
 * explains (0: it does not apply) and says why in why (one line, numbers).
 */
typedef double (*fsp_dx_mechanism)(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_relocation(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_extra_io(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_request_size(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_recency(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_drive(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_transport(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_daemon(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_emulation(const struct fsp_dx_pair *p, char *why, size_t len);
double fsp_dx_mech_fs_cpu(const struct fsp_dx_pair *p, char *why, size_t len);

#define FSP_DX_EVIDENCE 512 /* a line of evidence, with its NUL */
struct fsp_dx_verdict {
	enum fsp_dx_target ta, tb;
	struct fsp_dx_cmp mbps, p50, p99;
	int have_lat;            /* p50 / p99 judged */
	enum fsp_dx_owner owner;
	/* the device-side mechanism the device's time goes to: the largest
	 * device-side claim (drive when none gates); names the device parts
	 * of the layer split (src/prism/answer.h) */
	enum fsp_dx_owner device_owner;
	double claim_us, delta_us;
	char evidence[2][FSP_DX_EVIDENCE];
};
/*
 * The verdict for b against a at one step: the noise rule on throughput;
 * outside it, the mechanism that explains the largest part of the latency
 * difference if that is at least a third of it and 1.5 times the next
 * mechanism's part; a replay that does not
 * reproduce the slowdown on raw (its MB/s not below the geometric mean of
 * raw's and b's) moves a device-side owner to software.
 */
void fsp_dx_pair_verdict(const struct fsp_dx_pair *p, struct fsp_dx_verdict *v);

#endif
