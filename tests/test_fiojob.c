/*
 * test_fiojob.c - a fio job file given to `fsprism run` is known as one
 * (bench/engine/fiojob.c), and the message carries the nearest fsprism
 * parameters and the keys without a counterpart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "bench/engine/fiojob.h"
#include "bench/engine/jobfile.h"
#include "tests/unit.h"

UNIT_TEST(section_line_gives_it_away)
{
	(void)state;
	const char *job = "; the reviewers' mixed test\n"
			  "[global]\n"
			  "ioengine=libaio\n"
			  "direct=1\n"
			  "bs=128k\n"
			  "iodepth=1\n"
			  "runtime=30\n"
			  "time_based\n"
			  "[mixed]\n"
			  "rw=rw\n"
			  "rwmixread=70\n"
			  "size=8g\n"
			  "filename=/dev/nvme0n1\n"
			  "numjobs=4\n";
	char msg[1536];
	assert_int_equal(fsp_fiojob_explain(job, msg, sizeof msg), 1);
	assert_non_null(strstr(msg, "2: a fio job file ('[global]')"));
	assert_non_null(strstr(msg, "--access=seq --mix=70 --bs=128k --qd=1 --span=8g --time=30s"));
	assert_non_null(strstr(msg, "(no counterpart: filename=/dev/nvme0n1, numjobs=4)"));
	assert_null(strstr(msg, "ioengine")); /* libaio, direct=1: fsprism's way */
	assert_null(strstr(msg, "time_based"));
}

UNIT_TEST(first_job_only_later_value_wins)
{
	(void)state;
	const char *job = "[a]\nrw=randread\nbs=4k\nbs=8k\n[b]\nrw=write\nbs=1m\n";
	char msg[1536];
	assert_int_equal(fsp_fiojob_explain(job, msg, sizeof msg), 1);
	assert_non_null(strstr(msg, "2 jobs, the first translated"));
	assert_non_null(strstr(msg, "--access=random --mix=100 --bs=8k"));
	assert_null(strstr(msg, "1m"));
}

UNIT_TEST(fio_key_without_section)
{
	(void)state;
	char msg[1536];
	assert_int_equal(fsp_fiojob_explain("bs = 4k\nrw = randwrite\nvia = x\n", msg, sizeof msg), 1);
	assert_non_null(strstr(msg, "2: a fio job file (key 'rw')"));
	assert_non_null(strstr(msg, "--access=random --mix=0 --bs=4k"));
	assert_non_null(strstr(msg, "no counterpart: via=x"));
	/* rwmixwrite, ramp in ms, a rw mode without a counterpart */
	assert_int_equal(fsp_fiojob_explain("[j]\nrw=trim\nrwmixwrite=30\nramp_time=500ms\n",
					    msg, sizeof msg), 1);
	assert_non_null(strstr(msg, "--mix=70 --ramp=500ms"));
	assert_non_null(strstr(msg, "no counterpart: rw=trim"));
}

UNIT_TEST(fsprism_job_is_not_fio)
{
	(void)state;
	char msg[64] = "untouched";
	const char *job = "# 50/50 mixed sequential at 64 KiB, QD2\nprofile = mixed-seq\n"
			  "bs = 64k\nqd = 2\nmix = 50\ntime = 2s\n";
	assert_int_equal(fsp_fiojob_explain(job, msg, sizeof msg), 0);
	assert_string_equal(msg, "untouched");
	struct fsp_params p;
	char err[2048];
	assert_int_equal(fsp_jobfile_parse("job", job, FSP_SCALE_DEFAULT, &p, err, sizeof err), 0);
}

UNIT_TEST(jobfile_loader_says_fio)
{
	(void)state;
	struct fsp_params p;
	char err[2048];
	assert_int_equal(fsp_jobfile_parse("seq.fio", "[global]\nrw=read\n", FSP_SCALE_DEFAULT,
					   &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "seq.fio:1: a fio job file ('[global]')"));
	assert_non_null(strstr(err, "--access=seq --mix=100"));
}
