/*
 * diagnose.c - the noise rule, the bathtub, the mechanisms and the verdict
 * of a pair of targets at one step (diagnose.h; docs/diagnose.md). Every
 * threshold is a named constant here, so that the documentation can say
 * exactly what a verdict means.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/prism/diagnose.h"
#include "src/base/cmp.h"

/* A mechanism's gate: how much the pattern must change to count. */
#define SEQ_DROP 0.20      /* device sequentiality (reads, writes), absolute share */
#define AMP_RISE 0.15      /* device bytes per user byte */
#define FLUSH_RISE 0.02    /* flushes per user IO */
#define SPLIT_RATIO 1.20   /* requests per user IO, b against a */
#define SIZE_CHANGE 0.25   /* mean device request size, relative */
#define RECENT_RISE 0.20   /* share of device reads of just-written data */
#define OWN_SHARE 0.33     /* the owner explains at least this share */
#define OWN_LEAD 1.5       /* ... and this many times the runner-up's claim */

static const char *const owner_names[FSP_DX__OWNERS] = {
	[FSP_DX_NOISE] = "noise",
	[FSP_DX_UNKNOWN] = "unknown",
	[FSP_DX_DRIVE] = "drive",
	[FSP_DX_COW_RELOCATION] = "cow-relocation",
	[FSP_DX_EXTRA_IO] = "extra-io",
	[FSP_DX_REQUEST_SIZE] = "request-size",
	[FSP_DX_RECENCY] = "read-after-write",
	[FSP_DX_FUSE_TRANSPORT] = "fuse-transport",
	[FSP_DX_DAEMON] = "fsprism-daemon",
	[FSP_DX_EMULATION] = "emulation-cpu",
	[FSP_DX_FS_CPU] = "native-fs-cpu",
};

const char *fsp_dx_owner_name(enum fsp_dx_owner o)
{
	return o < FSP_DX__OWNERS ? owner_names[o] : "?";
}

/* ---- the noise rule --------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
	return FSP_CMP(*(const double *)x, *(const double *)y);
}

/* The values > 0 of v, sorted, into out; their number. */
static int present_sorted(const double *v, int n, double *out)
{
	int k = 0;
	for (int i = 0; i < n && i < FSP_DX_MAX_ROUNDS; i++)
		if (v[i] > 0)
			out[k++] = v[i];
	qsort(out, (size_t)k, sizeof *out, cmp_double);
	return k;
}

double fsp_dx_median(const double *v, int n)
{
	double s[FSP_DX_MAX_ROUNDS];
	int k = present_sorted(v, n, s);
	if (!k)
		return 0;
	return k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

/* (max - min) / median of the present values; -1 with fewer than two. */
static double rel_range(const double *v, int n)
{
	double s[FSP_DX_MAX_ROUNDS];
	int k = present_sorted(v, n, s);
	if (k < 2)
		return -1;
	double med = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
	return med > 0 ? (s[k - 1] - s[0]) / med : -1;
}

double fsp_dx_spread(const double *v, int n)
{
	return rel_range(v, n);
}

/*
 * Paired by round when both sides have the same rounds: each round's
 * b / a - 1 compares two measurements made minutes apart, so a drift of the
 * machine over the rounds cancels; the spread is then that of the rounds'
 * ratios, and a difference counts only when its median is beyond half
 * their range (and the floor). With two rounds that means both point the
 * same way; with three or more, one round the other way (a moment of the
 * shared machine) does not hide a difference the others agree on.
 */
static int judge_paired(const double *a, const double *b, int n, struct fsp_dx_cmp *c)
{
	double rel[FSP_DX_MAX_ROUNDS];
	for (int i = 0; i < n; i++) {
		if (a[i] <= 0 || b[i] <= 0)
			return -1;
		rel[i] = b[i] / a[i] - 1;
	}
	double s[FSP_DX_MAX_ROUNDS];
	memcpy(s, rel, sizeof rel[0] * (size_t)n);
	qsort(s, (size_t)n, sizeof s[0], cmp_double);
	c->rel = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	c->spread = s[n - 1] - s[0];
	c->paired = 1;
	double limit = c->spread / 2 > FSP_DX_FLOOR ? c->spread / 2 : FSP_DX_FLOOR;
	c->j = fabs(c->rel) > limit ? FSP_DX_OUTSIDE : FSP_DX_INSIDE;
	return 0;
}

int fsp_dx_judge(const double *a, int na, const double *b, int nb, struct fsp_dx_cmp *c)
{
	memset(c, 0, sizeof *c);
	c->med_a = fsp_dx_median(a, na);
	c->med_b = fsp_dx_median(b, nb);
	c->spread = -1;
	if (c->med_a <= 0 || c->med_b <= 0) {
		c->j = FSP_DX_SPREAD_UNKNOWN;
		return -1;
	}
	if (na == nb && na >= 2 && na <= FSP_DX_MAX_ROUNDS && !judge_paired(a, b, na, c))
		return 0;
	c->rel = c->med_b / c->med_a - 1;
	double sa = rel_range(a, na), sb = rel_range(b, nb);
	if (sa >= 0 && sb >= 0)
		c->spread = sa > sb ? sa : sb;
	double limit = c->spread > FSP_DX_FLOOR ? c->spread : FSP_DX_FLOOR;
	if (fabs(c->rel) <= limit)
		c->j = FSP_DX_INSIDE;
	else
		c->j = c->spread < 0 ? FSP_DX_SPREAD_UNKNOWN : FSP_DX_OUTSIDE;
	return 0;
}

/* ---- the shape ---------------------------------------------------------------- */

static int by_read_pct_desc(const void *x, const void *y)
{
	const struct fsp_dx_point *a = x, *b = y;
	return FSP_CMP(b->read_pct, a->read_pct);
}

/* A mixed step below FSP_DX_DIP of the pure level, and the top of its
 * rounds' spread below the pure level itself. */
static int dip_low(const struct fsp_dx_point *p, double pure)
{
	if (p->read_pct <= 0 || p->read_pct >= 100)
		return 0;
	double r = p->mbps / pure;
	return r < FSP_DX_DIP && (p->spread < 0 || r + p->spread / 2 < 1);
}

int fsp_dx_bathtub(const struct fsp_dx_point *p, int n, struct fsp_dx_shape *s)
{
	memset(s, 0, sizeof *s);
	struct fsp_dx_point q[64];
	int k = 0;
	double pure = 0;
	for (int i = 0; i < n && k < 64; i++) {
		if (p[i].mbps <= 0)
			continue;
		q[k++] = p[i];
		if ((p[i].read_pct == 0 || p[i].read_pct == 100) &&
		    (pure == 0 || p[i].mbps < pure))
			pure = p[i].mbps;
	}
	if (pure <= 0)
		return -1;
	s->pure_mbps = pure;
	qsort(q, (size_t)k, sizeof *q, by_read_pct_desc);
	/* the longest run of adjacent low mixed steps */
	int best_first = -1, best_len = 0;
	for (int i = 0; i < k;) {
		if (!dip_low(&q[i], pure)) {
			i++;
			continue;
		}
		int j = i;
		while (j + 1 < k && dip_low(&q[j + 1], pure))
			j++;
		if (j - i + 1 > best_len) {
			best_len = j - i + 1;
			best_first = i;
		}
		i = j + 1;
	}
	if (best_len < 2)
		return 0;
	s->found = 1;
	s->nlow = best_len;
	s->first_pct = q[best_first].read_pct;
	s->last_pct = q[best_first + best_len - 1].read_pct;
	s->low_mbps = q[best_first].mbps;
	s->low_pct = q[best_first].read_pct;
	for (int i = best_first; i < best_first + best_len; i++)
		if (q[i].mbps < s->low_mbps) {
			s->low_mbps = q[i].mbps;
			s->low_pct = q[i].read_pct;
		}
	s->depth = s->low_mbps / pure;
	return 0;
}

/* ---- the mechanisms ------------------------------------------------------------ */

/* The device view to compare b's with: a's, else raw's (the same device). */
static const struct fsp_dx_step *dev_base(const struct fsp_dx_pair *p)
{
	if (p->a && p->a->have_dev)
		return p->a;
	if (p->raw && p->raw->have_dev && p->raw != p->b)
		return p->raw;
	return NULL;
}

static const char *const tname[FSP_DX__TARGETS] = { "raw", "fs", "fsprism", "emu" };

static double pos(double x)
{
	return x > 0 ? x : 0;
}

static const char *const dir_name[FSP_DX__DIRS] = { "reads", "writes" };

/* From x to y a share fell by at least SEQ_DROP (both known). */
static int share_dropped(double x, double y)
{
	return x >= 0 && y >= 0 && x - y >= SEQ_DROP;
}

/*
 * The directions (a bit set of 1 << FSP_DX_READS, 1 << FSP_DX_WRITES) whose
 * device IO lost its sequentiality from the base to b, under a sequential
 * application stream, by one rule for both: fewer of the direction's IOs
 * continue a stream, or fewer continue the IO just before them (one stream
 * became several interleaved: the streams grew; a new stream every k IOs
 * lowers that share by 1/k). A direction counts only where the step has it.
 */
static unsigned relocation_dirs(const struct fsp_dx_pair *p, const struct fsp_dx_step *base)
{
	const struct fsp_dx_step *b = p->b;
	unsigned set = 0;
	if (!b->seq || !b->have_dev || !base)
		return 0;
	for (int d = 0; d < FSP_DX__DIRS; d++) {
		if (d == FSP_DX_READS ? b->read_pct <= 0 : b->read_pct >= 100)
			continue;
		if (share_dropped(base->dev_seq[d], b->dev_seq[d]) ||
		    share_dropped(base->dev_next[d], b->dev_next[d]))
			set |= 1u << d;
	}
	return set;
}

double fsp_dx_mech_relocation(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *base = dev_base(p), *b = p->b;
	unsigned dirs = relocation_dirs(p, base);
	if (!dirs)
		return 0;
	const char *sep = ",";
	size_t n = (size_t)snprintf(why, len, "application stream sequential");
	for (int d = 0; d < FSP_DX__DIRS; d++) {
		if (!(dirs & (1u << d)) || n >= len)
			continue;
		n += (size_t)snprintf(why + n, len - n, "%s device %s sequential %.0f%% -> "
				      "%.0f%%, continuing the IO before them %.0f%% -> %.0f%%",
				      sep, dir_name[d], 100 * base->dev_seq[d],
				      100 * b->dev_seq[d], 100 * base->dev_next[d],
				      100 * b->dev_next[d]);
		if (n < len && base->dev_streams[d] >= 0 && b->dev_streams[d] >= 0)
			n += (size_t)snprintf(why + n, len - n, ", streams %.1f -> %.1f",
					      base->dev_streams[d], b->dev_streams[d]);
		sep = ";";
	}
	if (n < len)
		snprintf(why + n, len - n, "; device time per IO %.0f -> %.0f us", base->dev_us,
			 b->dev_us);
	return pos(b->dev_us - base->dev_us);
}

static int extra_gate(const struct fsp_dx_pair *p, const struct fsp_dx_step *base)
{
	const struct fsp_dx_step *b = p->b;
	double base_amp = base ? base->amp : 1, base_fl = base ? base->flush_per_io : 0;
	return b->have_dev && b->amp > 0 &&
	       (b->amp - base_amp > AMP_RISE || b->flush_per_io - base_fl > FLUSH_RISE);
}

double fsp_dx_mech_extra_io(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *base = dev_base(p), *b = p->b;
	if (!extra_gate(p, base))
		return 0;
	double base_amp = base ? base->amp : 1, base_fl = base ? base->flush_per_io : 0;
	double base_flus = base ? base->flush_us : 0;
	double c = (b->dev_us - b->flush_us) * pos(1 - base_amp / b->amp) +
		   pos(b->flush_us - base_flus);
	snprintf(why, len, "device bytes per user byte %.2f -> %.2f, flushes per user "
		 "IO %.3f -> %.3f, device time per IO %.0f us (flushes %.0f)",
		 base_amp, b->amp, base_fl, b->flush_per_io, b->dev_us, b->flush_us);
	return c;
}

static int size_gate_dev(const struct fsp_dx_pair *p, const struct fsp_dx_step *base)
{
	const struct fsp_dx_step *b = p->b;
	return b->have_dev && base && base->dev_bytes > 0 && b->dev_bytes > 0 &&
	       fabs(b->dev_bytes / base->dev_bytes - 1) > SIZE_CHANGE &&
	       !extra_gate(p, base);
}

double fsp_dx_mech_request_size(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *base = dev_base(p), *a = p->a, *b = p->b;
	double c = 0;
	double na = a->have_fuse && a->fuse_req_per_io > 0 ? a->fuse_req_per_io : 1;
	if (b->have_fuse && b->fuse_req_per_io > SPLIT_RATIO * na) {
		double fuse = b->transport_us + b->daemon_us + b->backing_us + b->emu_us;
		c = fuse * (1 - na / b->fuse_req_per_io);
		snprintf(why, len, "each %ld KiB IO became %.2f FUSE requests (%.2f on %s): "
			 "%.0f us of FUSE time per IO, summed over its requests", b->block_size / 1024,
			 b->fuse_req_per_io, na, tname[p->ta], fuse);
	}
	if (size_gate_dev(p, base)) {
		double d = b->dev_us * pos(1 - base->dev_per_io / b->dev_per_io);
		if (d > c) {
			c = d;
			snprintf(why, len, "mean device request %.0f KiB -> %.0f KiB, "
				 "%.2f -> %.2f requests per IO", base->dev_bytes / 1024,
				 b->dev_bytes / 1024, base->dev_per_io, b->dev_per_io);
		}
	}
	return c;
}

static int recency_gate(const struct fsp_dx_pair *p, const struct fsp_dx_step *base)
{
	const struct fsp_dx_step *b = p->b;
	return b->have_dev && b->read_pct > 0 && b->recent_reads >= 0 &&
	       b->recent_reads - (base && base->recent_reads > 0 ? base->recent_reads : 0) >
		       RECENT_RISE;
}

double fsp_dx_mech_recency(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *base = dev_base(p), *b = p->b;
	if (!recency_gate(p, base))
		return 0;
	double base_us = base ? base->dev_us : 0;
	snprintf(why, len, "device reads of data written < 100 ms before: %.0f%% -> %.0f%%; "
		 "device time per IO %.0f -> %.0f us",
		 base && base->recent_reads > 0 ? 100 * base->recent_reads : 0,
		 100 * b->recent_reads, base_us, b->dev_us);
	return pos(b->dev_us - base_us);
}

double fsp_dx_mech_drive(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *base = dev_base(p), *b = p->b;
	if (!b->have_dev || !base || relocation_dirs(p, base) || extra_gate(p, base) ||
	    size_gate_dev(p, base) || recency_gate(p, base))
		return 0;
	char seq[64] = "";
	size_t n = 0;
	for (int d = 0; d < FSP_DX__DIRS; d++)
		if (b->dev_seq[d] >= 0)
			n += (size_t)snprintf(seq + n, sizeof seq - n, ", %s %.0f%% sequential",
					      dir_name[d], 100 * b->dev_seq[d]);
	snprintf(why, len, "same device pattern (%.2f requests of %.0f KiB per IO%s), "
		 "device time per IO %.0f -> %.0f us", b->dev_per_io, b->dev_bytes / 1024,
		 seq, base->dev_us, b->dev_us);
	return pos(b->dev_us - base->dev_us);
}

double fsp_dx_mech_transport(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *a = p->a, *b = p->b;
	if (!b->have_fuse)
		return 0;
	double base = a->have_fuse ? a->transport_us : 0;
	char q[64] = "";
	if (b->transport_measured)
		snprintf(q, sizeof q, "; FUSE queue p50 %.1f us, p99 %.1f us", b->fuse_queue_p50_us,
			 b->fuse_queue_p99_us);
	snprintf(why, len, "kernel FUSE queue and round trip (%s) %.0f -> %.0f us per IO%s",
		 b->transport_measured ? "measured: submit, queue, dispatch, reply, completion"
				       : "engine latency - handler total", base, b->transport_us, q);
	return pos(b->transport_us - base);
}

double fsp_dx_mech_daemon(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *a = p->a, *b = p->b;
	if (!b->have_fuse)
		return 0;
	double base = a->have_fuse ? a->daemon_us : 0;
	char inj[64] = "";
	if (b->inject_us > 0)
		snprintf(inj, sizeof inj, ", of it %.1f us injected by mount --inject",
			 b->inject_us);
	snprintf(why, len, "fsprism's own time in the handler %.1f -> %.1f us per IO%s "
		 "(backing %.0f us)", base, b->daemon_us, inj, b->backing_us);
	return pos(b->daemon_us - base);
}

double fsp_dx_mech_emulation(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *a = p->a, *b = p->b;
	if (!b->have_fuse || b->emu_us <= 0)
		return 0;
	char scratch[256];
	double io = fsp_dx_mech_extra_io(p, scratch, sizeof scratch);
	double base = a->have_fuse ? a->emu_us : 0;
	snprintf(why, len, "the emulation's time beyond moving the data %.0f -> %.0f us "
		 "per IO (%.0f us of it extra device IO)", base, b->emu_us, io);
	return pos(b->emu_us - base - io);
}

double fsp_dx_mech_fs_cpu(const struct fsp_dx_pair *p, char *why, size_t len)
{
	const struct fsp_dx_step *a = p->a, *b = p->b;
	if (p->ta != FSP_DX_RAW || p->tb != FSP_DX_FS || !a->have_dev || !b->have_dev)
		return 0;
	double c = p->delta_us - (b->dev_us - a->dev_us);
	snprintf(why, len, "latency +%.0f us per IO of which device time +%.0f us: the "
		 "rest is above the device", p->delta_us, b->dev_us - a->dev_us);
	return pos(c);
}

/* ---- the verdict -------------------------------------------------------------- */

static const struct {
	enum fsp_dx_owner owner;
	fsp_dx_mechanism fn;
	int device_side; /* a replay on raw can confirm or refute it */
} mechanisms[] = {
	/* order breaks ties: the pattern-changing mechanisms before the drive */
	{ FSP_DX_COW_RELOCATION, fsp_dx_mech_relocation, 1 },
	{ FSP_DX_EXTRA_IO, fsp_dx_mech_extra_io, 1 },
	{ FSP_DX_REQUEST_SIZE, fsp_dx_mech_request_size, 0 },
	{ FSP_DX_RECENCY, fsp_dx_mech_recency, 1 },
	{ FSP_DX_DRIVE, fsp_dx_mech_drive, 1 },
	{ FSP_DX_FUSE_TRANSPORT, fsp_dx_mech_transport, 0 },
	{ FSP_DX_DAEMON, fsp_dx_mech_daemon, 0 },
	{ FSP_DX_EMULATION, fsp_dx_mech_emulation, 0 },
	{ FSP_DX_FS_CPU, fsp_dx_mech_fs_cpu, 0 },
};
#define NMECH (sizeof mechanisms / sizeof mechanisms[0])

static void spread_text(const struct fsp_dx_cmp *c, char *buf, size_t len)
{
	if (c->spread < 0)
		snprintf(buf, len, "spread unknown: one round");
	else if (c->paired)
		snprintf(buf, len, "rounds' ratios spread %.1f%%", 100 * c->spread);
	else
		snprintf(buf, len, "spread %.1f%%", 100 * c->spread);
}

void fsp_dx_pair_verdict(const struct fsp_dx_pair *p, struct fsp_dx_verdict *v)
{
	const struct fsp_dx_step *a = p->a, *b = p->b;
	memset(v, 0, sizeof *v);
	v->ta = p->ta;
	v->tb = p->tb;
	v->delta_us = p->delta_us;
	v->owner = FSP_DX_UNKNOWN;
	v->device_owner = FSP_DX_DRIVE;
	if (fsp_dx_judge(a->mbps, a->nrounds, b->mbps, b->nrounds, &v->mbps)) {
		snprintf(v->evidence[0], sizeof v->evidence[0], "not measured on both");
		return;
	}
	v->have_lat = !fsp_dx_judge(a->p50, a->nrounds, b->p50, b->nrounds, &v->p50) &&
		      !fsp_dx_judge(a->p99, a->nrounds, b->p99, b->nrounds, &v->p99);
	char sp[64];
	spread_text(&v->mbps, sp, sizeof sp);
	snprintf(v->evidence[0], sizeof v->evidence[0],
		 "MB/s %.1f -> %.1f (%+.1f%%, %s); latency %+.0f us per IO",
		 v->mbps.med_a, v->mbps.med_b, 100 * v->mbps.rel, sp, p->delta_us);
	if (v->mbps.j == FSP_DX_INSIDE) {
		v->owner = FSP_DX_NOISE;
		snprintf(v->evidence[1], sizeof v->evidence[1], "inside the %s",
			 v->mbps.spread > FSP_DX_FLOOR ? "round-to-round spread" :
			 "resolution floor of 3%");
		if (v->mbps.paired && v->mbps.spread / 2 <= FSP_DX_FLOOR + 1e-9 &&
		    v->mbps.spread > 0)
			snprintf(v->evidence[1], sizeof v->evidence[1], "inside the "
				 "resolution floor of 3%%");
		else if (v->mbps.paired)
			snprintf(v->evidence[1], sizeof v->evidence[1], "inside half the "
				 "spread of the rounds' ratios");
		return;
	}
	if (v->mbps.rel > 0) {
		snprintf(v->evidence[1], sizeof v->evidence[1], "%s is faster than %s: "
			 "no layer of it costs time here", tname[p->tb], tname[p->ta]);
		return;
	}
	double best = 0, best_sw = 0, best_dev = 0, second = 0;
	int bi = -1, si = -1;
	char why[NMECH][FSP_DX_EVIDENCE];
	for (size_t i = 0; i < NMECH; i++) {
		why[i][0] = 0;
		double c = mechanisms[i].fn(p, why[i], sizeof why[i]);
		if (c > best) {
			if (bi >= 0 && mechanisms[bi].owner != mechanisms[i].owner)
				second = best;
			best = c;
			bi = (int)i;
		} else if (c > second) {
			second = c;
		}
		if (!mechanisms[i].device_side && c > best_sw) {
			best_sw = c;
			si = (int)i;
		}
		if (mechanisms[i].device_side && c > best_dev) {
			best_dev = c;
			v->device_owner = mechanisms[i].owner;
		}
	}
	double need = OWN_SHARE * (p->delta_us > 0 ? p->delta_us : 0);
	if (bi < 0 || best < need || p->delta_us <= 0 || best < OWN_LEAD * second) {
		snprintf(v->evidence[1], sizeof v->evidence[1], "no part explains a third "
			 "of it well ahead of the others%s%s", bi >= 0 ? "; largest: " : "",
			 bi >= 0 ? why[bi] : "");
		v->claim_us = best;
		return;
	}
	v->owner = mechanisms[bi].owner;
	v->claim_us = best;
	snprintf(v->evidence[1], sizeof v->evidence[1], "%s", why[bi]);
	if (!mechanisms[bi].device_side || !b->have_replay || !p->raw)
		return;
	/* the replay of b's device pattern on raw: does the drive alone do it?
	 * Reproduced when the replay's MB/s is nearer b's than raw's (below
	 * their geometric mean): the replays run after the rounds, so they
	 * are not paired with either. */
	double rep = fsp_dx_median(b->replay_mbps, b->replay_rounds);
	double raw_mbps = fsp_dx_median(p->raw->mbps, p->raw->nrounds);
	double b_mbps = fsp_dx_median(b->mbps, b->nrounds);
	if (rep <= 0 || raw_mbps <= 0 || b_mbps <= 0)
		return;
	size_t n = strlen(v->evidence[1]);
	char qd[32] = "";
	if (b->replay_qd_max > 0)
		snprintf(qd, sizeof qd, " at QD up to %d", b->replay_qd_max);
	if (rep < sqrt(raw_mbps * b_mbps)) {
		snprintf(v->evidence[1] + n, sizeof v->evidence[1] - n, "; replayed on raw "
			 "%.1f MB/s%s (raw %.1f, %s %.1f): the drive's response to the pattern",
			 rep, qd, raw_mbps, tname[p->tb], b_mbps);
		return;
	}
	snprintf(v->evidence[1] + n, sizeof v->evidence[1] - n, "; replayed on raw %.1f "
		 "MB/s%s (raw %.1f, %s %.1f): not reproduced, software", rep, qd, raw_mbps,
		 tname[p->tb], b_mbps);
	if (si >= 0 && best_sw >= need) {
		v->owner = mechanisms[si].owner;
		v->claim_us = best_sw;
	} else {
		v->owner = FSP_DX_UNKNOWN;
	}
}
