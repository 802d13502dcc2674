/*
 * test_diagnose.c - diagnose's rules on synthetic numbers (src/prism/diagnose.h):
 * the noise rule (inside the spread, outside it, one round), the bathtub on
 * synthetic curves (found, too shallow, one low step only, inside the spread,
 * no pure step), each mechanism on evidence made to show it and only it (the
 * relocation on the device reads and on the device writes), and
 * the verdict's choice of one owner, the replay moving a device-side owner
 * to software.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "src/prism/diagnose.h"
#include "tests/unit.h"

/* The judgement of a (na rounds) against b (nb rounds), the call succeeding;
 * c the whole comparison. */
static enum fsp_dx_judgement judge(const double *a, int na, const double *b, int nb,
				   struct fsp_dx_cmp *c)
{
	assert_int_equal(fsp_dx_judge(a, na, b, nb, c), 0);
	return c->j;
}

UNIT_TEST(test_noise_rule)
{
	struct fsp_dx_cmp c;
	/* unpaired (2 rounds against 3): 10% apart, rounds spread 20%: noise */
	double a[] = { 100, 90, 110 }, b[] = { 90, 99, 81 };
	assert_int_equal(judge(a, 3, b, 2, &c), FSP_DX_INSIDE);
	assert_false(c.paired);
	assert_true(c.spread > 0.19 && c.spread < 0.21);
	/* paired: the rounds disagree on the direction: noise */
	assert_int_equal(judge(a, 3, b, 3, &c), FSP_DX_INSIDE);
	assert_true(c.paired);
	/* two rounds the other way: noise however large */
	double two_a[] = { 100, 100 }, two_b[] = { 40, 110 };
	assert_int_equal(judge(two_a, 2, two_b, 2, &c), FSP_DX_INSIDE);
	/* three rounds, two agree on -70%, one the other way: still a difference */
	double out_a[] = { 100, 100, 100 }, out_b[] = { 25, 29, 127 };
	assert_int_equal(judge(out_a, 3, out_b, 3, &c), FSP_DX_OUTSIDE);
	/* paired: the machine drifts 60..140 over the rounds, b is 30% below a
	 * in every round: a difference the unpaired ranges would call noise */
	double dr_a[] = { 100, 60, 140 }, dr_b[] = { 70, 42, 98 };
	assert_int_equal(judge(dr_a, 3, dr_b, 3, &c), FSP_DX_OUTSIDE);
	assert_true(c.rel < -0.29 && c.rel > -0.31);
	assert_int_equal(judge(dr_a, 3, dr_b, 2, &c), FSP_DX_INSIDE);
	/* paired, all one way but the median inside half the ratios' range */
	double w_a[] = { 100, 100, 100 }, w_b[] = { 98, 40, 99 };
	assert_int_equal(judge(w_a, 3, w_b, 3, &c), FSP_DX_INSIDE);
	/* 40% apart, spread 4%: a difference */
	double d[] = { 60, 61, 59 }, e[] = { 100, 102, 98 };
	assert_int_equal(judge(e, 3, d, 3, &c), FSP_DX_OUTSIDE);
	assert_true(c.rel < -0.39 && c.rel > -0.41);
	/* one round: spread unknown, above the floor */
	double f[] = { 100 }, g[] = { 70 };
	assert_int_equal(judge(f, 1, g, 1, &c), FSP_DX_SPREAD_UNKNOWN);
	assert_true(c.spread < 0);
	/* one round, 2% apart: inside the floor */
	double h[] = { 98 };
	assert_int_equal(judge(f, 1, h, 1, &c), FSP_DX_INSIDE);
	/* a missing side */
	double z[] = { 0, 0 };
	assert_int_equal(fsp_dx_judge(f, 1, z, 2, &c), -1);
	/* missing rounds are left out of the median */
	double m[] = { 0, 50, 70 };
	assert_true(fsp_dx_median(m, 3) == 60);
}

static void curve(struct fsp_dx_point *p, const double *mbps, double spread)
{
	for (int i = 0; i < 11; i++) {
		p[i].read_pct = 100 - 10 * i;
		p[i].mbps = mbps[i];
		p[i].spread = spread;
	}
}

/* Whether the curve of mbps over the 11 mixes 100/0 .. 0/100, each step's
 * rounds spread as given, has a bathtub (the call succeeds); s its shape. */
static int bathtub(const double *mbps, double spread, struct fsp_dx_shape *s)
{
	struct fsp_dx_point p[11];
	curve(p, mbps, spread);
	assert_int_equal(fsp_dx_bathtub(p, 11, s), 0);
	return s->found;
}

UNIT_TEST(test_bathtub)
{
	struct fsp_dx_shape s;
	/* the seed's finding: 80/20 .. 10/90 at a third of the pure steps */
	const double tub[] = { 300, 280, 110, 100, 95, 100, 98, 102, 105, 110, 310 };
	assert_true(bathtub(tub, -1, &s));
	assert_int_equal(s.first_pct, 80);
	assert_int_equal(s.last_pct, 10);
	assert_int_equal(s.nlow, 8);
	assert_int_equal(s.low_pct, 60);
	assert_true(s.depth > 0.31 && s.depth < 0.32);
	/* a flat curve, and one that dips only to 85%: no bathtub */
	const double flat[] = { 300, 290, 295, 300, 310, 300, 290, 305, 300, 295, 300 };
	assert_false(bathtub(flat, -1, &s));
	const double shallow[] = { 300, 270, 260, 255, 255, 260, 255, 262, 265, 270, 300 };
	assert_false(bathtub(shallow, -1, &s));
	/* one low step is a dent, not a bathtub */
	const double dent[] = { 300, 300, 300, 300, 300, 100, 300, 300, 300, 300, 300 };
	assert_false(bathtub(dent, -1, &s));
	/* a dip to 70% when the rounds' ratios spread 70 points: the top of the
	 * spread reaches the pure level */
	const double noisy[] = { 300, 210, 210, 210, 210, 210, 210, 210, 210, 210, 300 };
	assert_false(bathtub(noisy, 0.70, &s));
	assert_true(bathtub(noisy, 0.05, &s));
	/* pure levels differ: measured against the lower one */
	const double uneven[] = { 600, 280, 250, 220, 200, 190, 180, 170, 160, 155, 150 };
	assert_false(bathtub(uneven, -1, &s));
	/* no pure step */
	struct fsp_dx_point p[11];
	curve(p, uneven, -1);
	assert_int_equal(fsp_dx_bathtub(p + 1, 9, &s), -1);
}

/* Two steps alike in everything: the base of the mechanisms' evidence. */
static void plain(struct fsp_dx_step *s, double mbps, double lat_us)
{
	memset(s, 0, sizeof *s);
	s->present = 1;
	s->read_pct = 50;
	s->qd = 1;
	s->seq = 1;
	s->block_size = 128 << 10;
	s->nrounds = 3;
	for (int i = 0; i < 3; i++)
		s->mbps[i] = mbps * (1 + 0.01 * (i - 1));
	for (int i = 0; i < 3; i++) {
		s->p50[i] = lat_us;
		s->p99[i] = 2 * lat_us;
	}
	s->lat_us = lat_us;
	for (int d = 0; d < FSP_DX__DIRS; d++)
		s->dev_seq[d] = s->dev_next[d] = s->dev_streams[d] = -1;
	s->recent_reads = -1;
}

static void dev(struct fsp_dx_step *s, double dev_us)
{
	s->have_dev = 1;
	s->dev_per_io = 1;
	s->dev_bytes = 128 << 10;
	s->amp = 1;
	s->dev_us = dev_us;
	for (int d = 0; d < FSP_DX__DIRS; d++) {
		s->dev_seq[d] = 0.98;
		s->dev_next[d] = 0.97;
		s->dev_streams[d] = 1.0;
	}
	s->recent_reads = 0;
}

/* The first step of the pairs below, the one a slowdown is measured from:
 * 300 MB/s, 400 us per IO, 380 us of it on the device. */
static void base(struct fsp_dx_step *s)
{
	plain(s, 300, 400);
	dev(s, 380);
}

static void fuse(struct fsp_dx_step *s, double transport, double daemon, double backing)
{
	s->have_fuse = 1;
	s->fuse_req_per_io = 1;
	s->transport_us = transport;
	s->daemon_us = daemon;
	s->backing_us = backing;
}

/*
 * A pair fsprism -> emu with its three targets: raw (the base of the device
 * view, the passthrough having none), the passthrough over it, and an
 * emulated store at emu_mbps whose device takes emu_dev_us per IO.
 */
struct emu_case {
	struct fsp_dx_step raw, fsp, emu;
	struct fsp_dx_verdict v;
};

static void emu_case(struct emu_case *c, double emu_mbps, double emu_lat_us, double emu_dev_us)
{
	base(&c->raw);
	plain(&c->fsp, 280, 430);
	fuse(&c->fsp, 40, 1, 380);
	plain(&c->emu, emu_mbps, emu_lat_us);
	dev(&c->emu, emu_dev_us);
	fuse(&c->emu, 40, 1, emu_dev_us);
}

static struct fsp_dx_pair pair_of(struct fsp_dx_step *a, struct fsp_dx_step *b,
				  struct fsp_dx_step *raw, int ta, int tb)
{
	return (struct fsp_dx_pair){ .ta = ta, .tb = tb, .a = a, .b = b, .raw = raw,
				     .delta_us = b->lat_us - a->lat_us };
}

static enum fsp_dx_owner verdict(struct fsp_dx_step *a, struct fsp_dx_step *b,
				 struct fsp_dx_step *raw, int ta, int tb,
				 struct fsp_dx_verdict *v)
{
	struct fsp_dx_pair p = pair_of(a, b, raw, ta, tb);
	fsp_dx_pair_verdict(&p, v);
	return v->owner;
}

/* Every mechanism that claims anything for pair p, as a bit set of owners. */
static unsigned claims(struct fsp_dx_step *a, struct fsp_dx_step *b,
		       struct fsp_dx_step *raw, int ta, int tb)
{
	struct fsp_dx_pair p = pair_of(a, b, raw, ta, tb);
	static const struct { fsp_dx_mechanism fn; enum fsp_dx_owner o; } m[] = {
		{ fsp_dx_mech_relocation, FSP_DX_COW_RELOCATION },
		{ fsp_dx_mech_extra_io, FSP_DX_EXTRA_IO },
		{ fsp_dx_mech_request_size, FSP_DX_REQUEST_SIZE },
		{ fsp_dx_mech_recency, FSP_DX_RECENCY },
		{ fsp_dx_mech_drive, FSP_DX_DRIVE },
		{ fsp_dx_mech_transport, FSP_DX_FUSE_TRANSPORT },
		{ fsp_dx_mech_daemon, FSP_DX_DAEMON },
		{ fsp_dx_mech_emulation, FSP_DX_EMULATION },
		{ fsp_dx_mech_fs_cpu, FSP_DX_FS_CPU },
	};
	unsigned set = 0;
	char why[FSP_DX_EVIDENCE];
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (m[i].fn(&p, why, sizeof why) > 0)
			set |= 1u << m[i].o;
	return set;
}

static enum fsp_dx_owner emu_owner(struct emu_case *c)
{
	return verdict(&c->fsp, &c->emu, &c->raw, FSP_DX_FSPRISM, FSP_DX_EMU, &c->v);
}

static unsigned emu_claims(struct emu_case *c)
{
	return claims(&c->fsp, &c->emu, &c->raw, FSP_DX_FSPRISM, FSP_DX_EMU);
}

/* A target's device sequentiality in one direction: the share continuing a
 * stream, and the share continuing the IO just before. */
static void set_seq(struct fsp_dx_step *s, int dir, double seq, double next)
{
	s->dev_seq[dir] = seq;
	s->dev_next[dir] = next;
}

/* o is the verdict's owner and the only mechanism that claims anything. */
static void sole_owner(struct emu_case *c, enum fsp_dx_owner o)
{
	assert_int_equal(emu_claims(c), 1u << o);
	assert_int_equal(emu_owner(c), o);
}

UNIT_TEST(test_noise_verdict)
{
	struct fsp_dx_step a, b;
	struct fsp_dx_verdict v;
	plain(&a, 300, 400);
	plain(&b, 295, 405);
	assert_int_equal(verdict(&a, &b, &a, FSP_DX_RAW, FSP_DX_FS, &v), FSP_DX_NOISE);
	assert_non_null(strstr(v.evidence[1], "inside"));
	/* one round, 30% slower, nothing explains it: unknown, and it says the
	 * spread is unknown */
	plain(&b, 210, 570);
	a.nrounds = b.nrounds = 1;
	assert_int_equal(verdict(&a, &b, &a, FSP_DX_RAW, FSP_DX_FS, &v), FSP_DX_UNKNOWN);
	assert_non_null(strstr(v.evidence[0], "spread unknown"));
	/* faster: unknown, never a cost */
	plain(&b, 400, 300);
	assert_int_equal(verdict(&a, &b, &a, FSP_DX_RAW, FSP_DX_FS, &v), FSP_DX_UNKNOWN);
	assert_non_null(strstr(v.evidence[1], "faster"));
}

UNIT_TEST(test_mech_drive_and_fs_cpu)
{
	struct fsp_dx_step raw, fs;
	struct fsp_dx_verdict v;
	base(&raw);
	plain(&fs, 200, 600);
	dev(&fs, 570); /* same pattern, the device takes 190 us longer */
	assert_int_equal(claims(&raw, &fs, &raw, FSP_DX_RAW, FSP_DX_FS),
			 (1u << FSP_DX_DRIVE) | (1u << FSP_DX_FS_CPU));
	assert_int_equal(verdict(&raw, &fs, &raw, FSP_DX_RAW, FSP_DX_FS, &v), FSP_DX_DRIVE);
	/* the device the same, the file system's own path 200 us */
	dev(&fs, 380);
	assert_int_equal(verdict(&raw, &fs, &raw, FSP_DX_RAW, FSP_DX_FS, &v), FSP_DX_FS_CPU);
}

UNIT_TEST(test_mech_relocation)
{
	struct emu_case c;
	emu_case(&c, 120, 1000, 900);
	c.emu.dev_seq[FSP_DX_READS] = 0.35;
	sole_owner(&c, FSP_DX_COW_RELOCATION);
	assert_non_null(strstr(c.v.evidence[1], "98% -> 35%"));
	/* every read continues a stream, but not the IO before it: one
	 * application stream split into interleaved device streams */
	set_seq(&c.emu, FSP_DX_READS, 0.95, 0.10);
	assert_int_equal(emu_owner(&c), FSP_DX_COW_RELOCATION);
	assert_non_null(strstr(c.v.evidence[1], "continuing the IO before them 97% -> 10%"));
	c.emu.dev_next[FSP_DX_READS] = 0.97;
	assert_int_equal(emu_owner(&c), FSP_DX_DRIVE);
	c.emu.dev_seq[FSP_DX_READS] = 0.35;
	/* a random application stream: not relocation */
	c.emu.seq = 0;
	assert_false(emu_claims(&c) & (1u << FSP_DX_COW_RELOCATION));
	c.emu.seq = 1;
	/* the replay on raw reproduces it: stays, and says so */
	c.emu.have_replay = 1;
	c.emu.replay_rounds = 3;
	for (int i = 0; i < 3; i++)
		c.emu.replay_mbps[i] = 130 + i;
	assert_int_equal(emu_owner(&c), FSP_DX_COW_RELOCATION);
	assert_non_null(strstr(c.v.evidence[1], "drive's response"));
	/* it does not: software, here the emulation's own time */
	for (int i = 0; i < 3; i++)
		c.emu.replay_mbps[i] = 299 + i;
	c.emu.emu_us = 300;
	c.emu.backing_us = 380;
	assert_int_equal(emu_owner(&c), FSP_DX_EMULATION);
	assert_non_null(strstr(c.v.evidence[1], "not reproduced"));
}

/* Copy-on-write scatters or splits the device writes of a sequential
 * writer: they lose their sequentiality, the reads keep theirs (or there
 * are none). The same rule as the reads', the same threshold. */
UNIT_TEST(test_mech_relocation_writes)
{
	struct emu_case c;
	/* a pure-write step: no reads on any target */
	emu_case(&c, 150, 900, 800);
	c.raw.read_pct = c.fsp.read_pct = c.emu.read_pct = 0;
	set_seq(&c.raw, FSP_DX_READS, -1, -1);
	set_seq(&c.emu, FSP_DX_READS, -1, -1);
	set_seq(&c.emu, FSP_DX_WRITES, 0.62, 0.60);
	c.emu.dev_streams[FSP_DX_WRITES] = 4.2;
	sole_owner(&c, FSP_DX_COW_RELOCATION);
	assert_non_null(strstr(c.v.evidence[1], "application stream sequential, device writes "
			       "sequential 98% -> 62%, continuing the IO before them 97% -> "
			       "60%, streams 1.0 -> 4.2; device time per IO 380 -> 800 us"));
	assert_null(strstr(c.v.evidence[1], "reads"));
	/* the streams alone: every write continues a stream, but one write
	 * stream became several interleaved */
	c.emu.dev_seq[FSP_DX_WRITES] = 0.97;
	assert_int_equal(emu_owner(&c), FSP_DX_COW_RELOCATION);
	/* the writes stayed sequential: the drive, and no relocation claimed */
	c.emu.dev_next[FSP_DX_WRITES] = 0.96;
	c.emu.dev_streams[FSP_DX_WRITES] = 1.1;
	sole_owner(&c, FSP_DX_DRIVE);
	assert_non_null(strstr(c.v.evidence[1], "writes 97% sequential"));
	/* a drop inside the threshold (SEQ_DROP, 20 points) is not one */
	set_seq(&c.emu, FSP_DX_WRITES, 0.80, 0.79);
	assert_int_equal(emu_owner(&c), FSP_DX_DRIVE);
	/* a random writer has no sequentiality to lose */
	set_seq(&c.emu, FSP_DX_WRITES, 0.10, 0.05);
	c.emu.seq = 0;
	assert_false(emu_claims(&c) & (1u << FSP_DX_COW_RELOCATION));
	c.emu.seq = 1;
	/* the drive's own: raw's writes are as scattered as emu's (raw
	 * degrades too), so the pattern did not change between the two */
	set_seq(&c.raw, FSP_DX_WRITES, 0.12, 0.06);
	sole_owner(&c, FSP_DX_DRIVE);

	/* a mixed step whose writes lost their sequentiality and whose reads
	 * did not: relocation, with the writes' evidence only */
	emu_case(&c, 120, 1000, 900);
	c.emu.dev_seq[FSP_DX_WRITES] = 0.55;
	sole_owner(&c, FSP_DX_COW_RELOCATION);
	assert_non_null(strstr(c.v.evidence[1], "device writes sequential 98% -> 55%"));
	assert_null(strstr(c.v.evidence[1], "device reads"));
	/* both lost it: both named, reads first */
	c.emu.dev_next[FSP_DX_READS] = 0.05;
	assert_int_equal(emu_owner(&c), FSP_DX_COW_RELOCATION);
	assert_non_null(strstr(c.v.evidence[1], "device reads sequential 98% -> 98%, "
			       "continuing the IO before them 97% -> 5%"));
	assert_non_null(strstr(c.v.evidence[1], "; device writes sequential 98% -> 55%"));
	/* a pure-read step judges no writes */
	c.emu.read_pct = 100;
	c.emu.dev_next[FSP_DX_READS] = 0.97;
	assert_false(emu_claims(&c) & (1u << FSP_DX_COW_RELOCATION));
}

UNIT_TEST(test_mech_extra_io)
{
	struct emu_case c;
	emu_case(&c, 100, 1200, 1100);
	c.emu.backing_us = 380;
	c.emu.emu_us = 720;
	c.emu.amp = 2.05;       /* --journal=data: every block twice */
	c.emu.dev_per_io = 2.1;
	c.emu.flush_per_io = 0.3;
	c.emu.flush_us = 300;
	unsigned set = emu_claims(&c);
	assert_true(set & (1u << FSP_DX_EXTRA_IO));
	assert_false(set & ((1u << FSP_DX_COW_RELOCATION) | (1u << FSP_DX_DRIVE) |
			    (1u << FSP_DX_REQUEST_SIZE)));
	assert_int_equal(emu_owner(&c), FSP_DX_EXTRA_IO);
	assert_non_null(strstr(c.v.evidence[1], "flushes per user IO"));
}

UNIT_TEST(test_mech_request_size)
{
	struct fsp_dx_step fs, fsp;
	struct fsp_dx_verdict v;
	base(&fs);
	plain(&fsp, 150, 800);
	fuse(&fsp, 300, 20, 480);
	fsp.fuse_req_per_io = 4; /* --max-write=32k under 128 KiB writes */
	unsigned set = claims(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM);
	assert_true(set & (1u << FSP_DX_REQUEST_SIZE));
	assert_int_equal(verdict(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM, &v),
			 FSP_DX_REQUEST_SIZE);
	assert_non_null(strstr(v.evidence[1], "4.00 FUSE requests"));
	/* whole requests: the transport owns the same slowdown */
	fsp.fuse_req_per_io = 1;
	assert_false(claims(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM) &
		     (1u << FSP_DX_REQUEST_SIZE));
	assert_int_equal(verdict(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM, &v),
			 FSP_DX_FUSE_TRANSPORT);
	/* split at the block layer: smaller device requests, same bytes */
	struct fsp_dx_step raw, fs2;
	base(&raw);
	plain(&fs2, 200, 600);
	dev(&fs2, 580);
	fs2.dev_bytes = 32 << 10;
	fs2.dev_per_io = 4;
	assert_int_equal(claims(&raw, &fs2, &raw, FSP_DX_RAW, FSP_DX_FS) &
			 ~(1u << FSP_DX_FS_CPU), 1u << FSP_DX_REQUEST_SIZE);
	assert_int_equal(verdict(&raw, &fs2, &raw, FSP_DX_RAW, FSP_DX_FS, &v),
			 FSP_DX_REQUEST_SIZE);
}

UNIT_TEST(test_mech_recency)
{
	struct fsp_dx_step raw, fs;
	struct fsp_dx_verdict v;
	base(&raw);
	plain(&fs, 200, 600);
	dev(&fs, 580);
	fs.recent_reads = 0.6;
	assert_int_equal(claims(&raw, &fs, &raw, FSP_DX_RAW, FSP_DX_FS) &
			 ~(1u << FSP_DX_FS_CPU), 1u << FSP_DX_RECENCY);
	assert_int_equal(verdict(&raw, &fs, &raw, FSP_DX_RAW, FSP_DX_FS, &v), FSP_DX_RECENCY);
	/* a writing step has no reads to be recent */
	fs.read_pct = 0;
	assert_false(claims(&raw, &fs, &raw, FSP_DX_RAW, FSP_DX_FS) & (1u << FSP_DX_RECENCY));
}

UNIT_TEST(test_mech_software)
{
	struct fsp_dx_step fs, fsp;
	struct fsp_dx_verdict v;
	base(&fs);
	/* a read delay in the handler: the daemon's part */
	plain(&fsp, 150, 900);
	fuse(&fsp, 100, 400, 400);
	assert_int_equal(claims(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM),
			 (1u << FSP_DX_FUSE_TRANSPORT) | (1u << FSP_DX_DAEMON));
	assert_int_equal(verdict(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM, &v),
			 FSP_DX_DAEMON);
	/* the transport's known cost only */
	fuse(&fsp, 480, 1, 400);
	assert_int_equal(verdict(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM, &v),
			 FSP_DX_FUSE_TRANSPORT);
	/* the parts split evenly, none half: unknown */
	fuse(&fsp, 180, 170, 400);
	fsp.lat_us = 1100;
	assert_int_equal(verdict(&fs, &fsp, &fs, FSP_DX_FS, FSP_DX_FSPRISM, &v),
			 FSP_DX_UNKNOWN);
	assert_non_null(strstr(v.evidence[1], "no part explains a third"));
}
