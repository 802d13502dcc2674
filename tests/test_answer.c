/*
 * test_answer.c - the one-owner rule and the headline (src/prism/answer.h)
 * on evidence made to show each case: the verdict's owner kept and the
 * split's median and tail beside it; a tail owned by another part than the
 * median (said, not hidden); an unknown verdict named by its median IOs; a
 * device part named by the verdict's device-side mechanism; noise and a
 * faster target; the split owner's thresholds at their edges; the parts'
 * classes; the headline's counts, worst step and owner.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "src/prism/answer.h"
#include "src/prism/decomp.h"
#include "tests/unit.h"

/* Two steps of three rounds: a at 1000 MB/s, b at b_mbps; b's p99 at
 * b_p99 (a's 500 us); the verdict judged by fsp_dx_pair_verdict. */
struct pair_case {
	struct fsp_dx_step a, b;
	struct fsp_dx_pair p;
	struct fsp_dx_verdict v;
	struct fsp_answer_owner o;
};

static void setup_case(struct pair_case *c, double b_mbps, double b_p99)
{
	memset(c, 0, sizeof *c);
	struct fsp_dx_step *s[2] = { &c->a, &c->b };
	for (int k = 0; k < 2; k++) {
		s[k]->present = 1;
		s[k]->read_pct = 50;
		s[k]->qd = 1;
		s[k]->seq = 1;
		s[k]->block_size = 131072;
		s[k]->nrounds = 3;
		for (int r = 0; r < 3; r++) {
			s[k]->mbps[r] = (k ? b_mbps : 1000) * (1 + 0.01 * r);
			s[k]->p50[r] = k ? 200 : 130;
			s[k]->p99[r] = (k ? b_p99 : 500) * (1 + 0.01 * r);
		}
		s[k]->lat_us = k ? 1e6 / (b_mbps / 0.131072) : 131;
		s[k]->have_split = 1;
		s[k]->recent_reads = -1;
		for (int d = 0; d < FSP_DX__DIRS; d++)
			s[k]->dev_seq[d] = s[k]->dev_next[d] = s[k]->dev_streams[d] = -1;
	}
	c->p = (struct fsp_dx_pair){ .ta = FSP_DX_FS, .tb = FSP_DX_FSPRISM, .a = &c->a, .b = &c->b,
				     .delta_us = c->b.lat_us - c->a.lat_us };
	/* the same device time on both: around the median each IO spends 100 us
	 * in the device */
	c->a.mid_us[FSP_DX_DRIVE] = c->b.mid_us[FSP_DX_DRIVE] = 100;
	c->a.tail_us[FSP_DX_DRIVE] = c->b.tail_us[FSP_DX_DRIVE] = 400;
}

static void decide(struct pair_case *c)
{
	fsp_dx_pair_verdict(&c->p, &c->v);
	fsp_answer_owner(&c->p, &c->v, &c->o);
}

/* The FUSE transport grows around the median, the device in the tail:
 * both named, the owner the verdict's. */
UNIT_TEST(test_median_and_tail_differ)
{
	struct pair_case c;
	setup_case(&c, 500, 5000);
	c.b.have_fuse = 1;
	c.b.fuse_req_per_io = 1;
	c.b.transport_us = 130; /* the mean difference is 131 us: the transport's */
	c.b.mid_us[FSP_DX_FUSE_TRANSPORT] = 90;
	c.b.tail_us[FSP_DX_FUSE_TRANSPORT] = 300;
	c.b.tail_us[FSP_DX_DRIVE] = 4000; /* +3600 us of device in the tail */
	decide(&c);
	assert_int_equal(c.v.owner, FSP_DX_FUSE_TRANSPORT);
	assert_int_equal(c.o.owner, FSP_DX_FUSE_TRANSPORT);
	assert_int_equal(c.o.median, FSP_DX_FUSE_TRANSPORT);
	assert_int_equal(c.o.tail, FSP_DX_DRIVE);
	assert_string_equal(c.o.text, "fuse-transport; tail: drive");
	assert_true(c.o.mid_us[FSP_DX_FUSE_TRANSPORT] > 89 && c.o.mid_us[FSP_DX_DRIVE] == 0);
}

/* No mechanism explains a third of the mean (no evidence of any), but the
 * median IOs' transport does: the one owner is the median's. */
UNIT_TEST(test_unknown_named_by_median)
{
	struct pair_case c;
	setup_case(&c, 500, 510);
	c.b.mid_us[FSP_DX_FUSE_TRANSPORT] = 120;
	decide(&c);
	assert_int_equal(c.v.owner, FSP_DX_UNKNOWN);
	assert_int_equal(c.o.mean, FSP_DX_UNKNOWN);
	assert_int_equal(c.o.median, FSP_DX_FUSE_TRANSPORT);
	assert_int_equal(c.o.tail, FSP_DX_UNKNOWN); /* p99 inside its spread */
	assert_int_equal(c.o.owner, FSP_DX_FUSE_TRANSPORT);
	assert_string_equal(c.o.text, "fuse-transport");
}

/* The device parts are named by the verdict's device-side mechanism: a
 * copy-on-write that lost the device's sequentiality owns the device time
 * at the median and in the tail alike. */
UNIT_TEST(test_device_named_by_mechanism)
{
	struct pair_case c;
	setup_case(&c, 500, 5000);
	c.a.have_dev = c.b.have_dev = 1;
	c.a.dev_per_io = c.b.dev_per_io = 1;
	c.a.dev_bytes = c.b.dev_bytes = 131072;
	c.a.amp = c.b.amp = 1;
	c.a.dev_us = 100;
	c.b.dev_us = 230;
	c.a.dev_seq[FSP_DX_READS] = c.a.dev_next[FSP_DX_READS] = 1;
	c.b.dev_seq[FSP_DX_READS] = 0.5;
	c.b.dev_next[FSP_DX_READS] = 0.1;
	c.b.mid_us[FSP_DX_DRIVE] = 220;
	c.b.tail_us[FSP_DX_DRIVE] = 4000;
	decide(&c);
	assert_int_equal(c.v.owner, FSP_DX_COW_RELOCATION);
	assert_int_equal(c.v.device_owner, FSP_DX_COW_RELOCATION);
	assert_int_equal(c.o.median, FSP_DX_COW_RELOCATION);
	assert_int_equal(c.o.tail, FSP_DX_COW_RELOCATION);
	assert_string_equal(c.o.text, "cow-relocation");
}

/* Inside the spread: noise, whatever the split says; a faster b has no
 * owner, though a tail that grew is still said. */
UNIT_TEST(test_noise_and_faster)
{
	struct pair_case c;
	setup_case(&c, 1000, 500);
	c.b.mid_us[FSP_DX_FUSE_TRANSPORT] = 120;
	decide(&c);
	assert_int_equal(c.o.owner, FSP_DX_NOISE);
	assert_string_equal(c.o.text, "noise");
	setup_case(&c, 1500, 5000);
	c.b.tail_us[FSP_DX_DAEMON] = 4000;
	decide(&c);
	assert_int_equal(c.o.owner, FSP_DX_UNKNOWN);
	assert_int_equal(c.o.median, FSP_DX_UNKNOWN);
	assert_int_equal(c.o.tail, FSP_DX_DAEMON);
	assert_string_equal(c.o.text, "unknown; tail: fsprism-daemon");
}

/* The split owner: a third of the total and 1.5 times the next class. */
UNIT_TEST(test_split_owner_edges)
{
	double d[FSP_DX__OWNERS] = { 0 };
	d[FSP_DX_FUSE_TRANSPORT] = 60;
	d[FSP_DX_FS_CPU] = 40.5; /* 60 < 1.5 * 40.5: no lead */
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_DRIVE), FSP_DX_UNKNOWN);
	d[FSP_DX_FS_CPU] = 39.9;
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_DRIVE), FSP_DX_FUSE_TRANSPORT);
	/* a large unattributed remainder: 60 is under a third of 200 */
	d[FSP_DX_UNKNOWN] = 100.1;
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_DRIVE), FSP_DX_UNKNOWN);
	d[FSP_DX_UNKNOWN] = 0;
	/* a part that shrank adds to nothing, but the total is net */
	d[FSP_DX_DAEMON] = -80; /* total 19.9: the transport is more than all of it */
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_DRIVE), FSP_DX_FUSE_TRANSPORT);
	d[FSP_DX_DAEMON] = -200; /* nothing grew on the whole */
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_DRIVE), FSP_DX_UNKNOWN);
	/* the device class takes the mechanism's name */
	memset(d, 0, sizeof d);
	d[FSP_DX_DRIVE] = 50;
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_EXTRA_IO), FSP_DX_EXTRA_IO);
	memset(d, 0, sizeof d);
	assert_int_equal(fsp_answer_split_owner(d, FSP_DX_DRIVE), FSP_DX_UNKNOWN);
}

/* Every part has a class, and the classes a target's parts fall in. */
UNIT_TEST(test_part_classes)
{
	assert_int_equal(fsp_answer_part_owner(FSP_DC_DEVICE, FSP_DX_RAW), FSP_DX_DRIVE);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_BLOCK_QUEUE, FSP_DX_EMU), FSP_DX_DRIVE);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_SUBMIT, FSP_DX_RAW), FSP_DX_FS_CPU);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_SUBMIT, FSP_DX_FSPRISM),
			 FSP_DX_FUSE_TRANSPORT);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_FS_SUBMIT, FSP_DX_FS), FSP_DX_FS_CPU);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_FUSE_QUEUE, FSP_DX_FSPRISM),
			 FSP_DX_FUSE_TRANSPORT);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_INJECT, FSP_DX_FSPRISM), FSP_DX_DAEMON);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_LAYER, FSP_DX_EMU), FSP_DX_DAEMON);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_EMU, FSP_DX_EMU), FSP_DX_EMULATION);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_BACKING, FSP_DX_FSPRISM), FSP_DX_FS_CPU);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_BACKING, FSP_DX_EMU), FSP_DX_EMULATION);
	assert_int_equal(fsp_answer_part_owner(FSP_DC_RESIDUAL, FSP_DX_RAW), FSP_DX_UNKNOWN);
	for (unsigned p = 0; p < FSP_DC__COUNT; p++)
		for (int t = 0; t < FSP_DX__TARGETS; t++)
			assert_true(fsp_answer_part_owner(p, (enum fsp_dx_target)t) < FSP_DX__OWNERS);
}

/* The headline: counts over the steps, the worst, its owner and how many
 * slower steps share it; not slower anywhere; one round. */
UNIT_TEST(test_headline)
{
	struct fsp_answer_owner tr = { .owner = FSP_DX_FUSE_TRANSPORT },
				dr = { .owner = FSP_DX_DRIVE };
	snprintf(tr.text, sizeof tr.text, "fuse-transport; tail: drive");
	snprintf(dr.text, sizeof dr.text, "drive");
	struct fsp_answer_step s[4] = {
		{ 100, 1, "mix=100/0", 1000, 990, FSP_DX_INSIDE, &dr },  /* -1%: not slower */
		{ 60, 1, "mix=60/40", 733, 66, FSP_DX_OUTSIDE, &tr },    /* the worst */
		{ 30, 1, "mix=30/70", 700, 400, FSP_DX_OUTSIDE, &tr },
		{ 0, 1, "mix=0/100", 800, 700, FSP_DX_SPREAD_UNKNOWN, &dr },
	};
	struct fsp_answer_headline h;
	fsp_answer_headline("ext4", "fsprism", s, 4, 3, &h);
	assert_int_equal(h.steps, 4);
	assert_int_equal(h.slower, 3);
	assert_int_equal(h.outside, 2);
	assert_int_equal(h.worst, 1);
	assert_int_equal(h.owner_steps, 2);
	assert_string_equal(h.step_name, "60/40");
	assert_string_equal(h.text, "fsprism slower than ext4 at 3/4 mixes (2 beyond the noise), "
			    "worst 60/40: 66.0 vs 733.0 MB/s (-91%); owner fuse-transport; tail: "
			    "drive (at 2 of the 3 slower mixes)");
	fsp_answer_headline("ext4", "fsprism", s, 4, 1, &h);
	assert_non_null(strstr(h.text, "(one round: noise not judged)"));
	/* never slower */
	struct fsp_answer_step f[2] = {
		{ 50, 1, "qd=1", 100, 120, FSP_DX_OUTSIDE, &dr },
		{ 50, 4, "qd=4", 200, 200, FSP_DX_INSIDE, &dr },
	};
	fsp_answer_headline("raw", "ext4", f, 2, 3, &h);
	assert_int_equal(h.slower, 0);
	assert_string_equal(h.text, "ext4 not slower than raw at any of 2 queue depths (mean x1.07)");
	char name[32];
	fsp_answer_step_name(f, 2, 1, name, sizeof name);
	assert_string_equal(name, "QD4");
	/* nothing measured on both */
	fsp_answer_headline("raw", "ext4", f, 0, 3, &h);
	assert_int_equal(h.worst, -1);
	assert_string_equal(h.text, "ext4 against raw: no step measured on both");
}
