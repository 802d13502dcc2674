/*
 * fiowrite.c - a profile written as the equivalent fio job file (fiowrite.h).
 *
 * One [global] section with what every step shares (target, engine, block
 * size, span, data pattern), then one job per step behind a stonewall, and
 * between steps an idle job: fio has no idle between jobs of its own
 * (startdelay counts from fio's start, not from the stonewall), so the idle
 * is a job of the null engine that does one IO and then thinks for the idle
 * time. Its name starts with FSP_FIO_IDLE_PREFIX, so that the import skips it.
 * The mapping, and what fio cannot say, is docs/fio.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "bench/engine/fiowrite.h"
#include "src/base/err.h"

unsigned fsp_fio_job_steps(const struct fsp_params *p)
{
	return p->fill ? 1 : p->nqd * p->nmix;
}

/* fio reads times as microseconds where we write no unit; round up, so a
 * short idle stays one. */
static uint64_t usec(uint64_t ns)
{
	return (ns + 999) / 1000;
}

static void write_pattern(FILE *f, const struct fsp_pattern *pat)
{
	switch (pat->kind) {
	case FSP_PATTERN_ZEROS:
		fprintf(f, "zero_buffers=1\n");
		return;
	case FSP_PATTERN_COMPRESS:
		/* fsprism zeros the first N% of every 512-byte sector */
		fprintf(f, "buffer_compress_percentage=%u\nbuffer_compress_chunk=512\n",
			pat->compress_pct);
		break;
	case FSP_PATTERN_RANDOM:
		break;
	}
	/* fsprism stamps every write afresh unless ",fixed" */
	if (pat->fixed)
		fprintf(f, "scramble_buffers=0\n");
	else
		fprintf(f, "refill_buffers=1\n");
}

/* fio's rw= for a step */
static const char *rw_of(const struct fsp_params *p, unsigned read_pct)
{
	int seq = p->fill || p->access == FSP_ACCESS_SEQ;
	if (p->fill || read_pct == 0)
		return seq ? "write" : "randwrite";
	if (read_pct == 100)
		return seq ? "read" : "randread";
	return seq ? "rw" : "randrw";
}

/*
 * The busy time of one burst, which fio needs to think for a share of it:
 * fio's thinktime is a time, fsprism's idle a share of the burst's measured
 * busy time. The estimate is the rate at which the step's byte and time
 * limits meet. 0 when neither is given.
 */
static uint64_t burst_estimate_ns(const struct fsp_params *p)
{
	if (!p->time_ns || !p->bytes)
		return 0;
	return (uint64_t)((double)p->time_ns * (double)p->burst / (double)p->bytes);
}

int fsp_fio_write_job(FILE *f, const struct fsp_params *p, const struct fsp_fiowrite *w,
		      char *err, size_t errlen)
{
	if (!w->filename || !*w->filename)
		return fsp_set_err(err, errlen, "no target for fio's filename=");
	if (strpbrk(w->filename, "\n\r"))
		return fsp_set_err(err, errlen, "target '%s': fio cannot name a file with a "
				   "newline", w->filename);
	/* a percentage is of a maximum measured at run time, and fio's rate_iops
	 * paces differently (no latency from the intended time): no counterpart */
	if (p->nrate > 1 || (p->nrate == 1 && p->rates[0].kind != FSP_RATE_MAX))
		return fsp_set_err(err, errlen, "rate: a load curve's rate steps have no fio job "
				   "(docs/fio.md); run them with fsprism run or compare");
	uint64_t burst_busy = 0;
	if (p->burst && !p->fill && p->duty < 100) {
		burst_busy = burst_estimate_ns(p);
		if (!burst_busy)
			return fsp_set_err(err, errlen, "burst: fio thinks for a fixed time after "
					   "each burst; give both --time and --bytes to set it "
					   "(docs/fio.md)");
	}
	if (!p->burst && !p->fill && p->duty < 100 && !p->time_ns)
		return fsp_set_err(err, errlen, "duty: fio idles for a fixed time between jobs; "
				   "give --time to set it (docs/fio.md)");

	char pat[32];
	fsp_pattern_format(&p->pattern, pat, sizeof(pat));
	fprintf(f, "; fio job file written by fsprism%s%s (docs/fio.md)\n",
		w->profile ? " for " : "", w->profile ? w->profile : "");
	fprintf(f, "; one job per step, each behind a stonewall; the fsprism-idle jobs are the\n"
		   "; idle between steps (the null engine, one IO, then thinktime)\n");
	fprintf(f, "[global]\n");
	/* fio splits filename= at ':' (several files) unless escaped, as a
	 * /dev/disk/by-path name needs */
	fprintf(f, "filename=");
	for (const char *c = w->filename; *c; c++)
		fprintf(f, "%s%c", *c == ':' ? "\\" : "", *c);
	fprintf(f, "\n");
	fprintf(f, "ioengine=libaio\ndirect=1\n");
	fprintf(f, "bs=%" PRIu32 "\n", p->bs);
	/* fsprism's latency is the whole IO, submission included: fio's lat */
	fprintf(f, "lat_percentiles=1\n");
	if (p->offset)
		fprintf(f, "offset=%" PRIu64 "\n", p->offset);
	if (p->span)
		fprintf(f, "size=%" PRIu64 "\n", p->span);
	/* span 0: the whole target, fio's default without size= */
	if (fsp_params_writes(p)) {
		fprintf(f, "; pattern=%s\n", pat);
		write_pattern(f, &p->pattern);
	}
	if (!p->fill && p->access == FSP_ACCESS_RANDOM)
		/* fsprism draws with repeats unless norepeat (a permutation per pass) */
		fprintf(f, "norandommap=%d\n", p->norepeat ? 0 : 1);

	unsigned nsteps = fsp_fio_job_steps(p);
	for (unsigned i = 0; i < nsteps; i++) {
		unsigned qd = p->fill ? p->qds[0] : p->qds[i / p->nmix];
		unsigned read_pct = p->fill ? 0 : p->mixes[i % p->nmix];
		char label[64];
		fsp_step_label(p, qd, read_pct, NULL, label, sizeof(label));
		fprintf(f, "\n[%s]\n", label);
		if (i)
			fprintf(f, "stonewall\n");
		fprintf(f, "rw=%s\n", rw_of(p, read_pct));
		if (read_pct % 100 != 0 && !p->fill) {
			fprintf(f, "rwmixread=%u\n", read_pct);
			if (p->access == FSP_ACCESS_SEQ && p->offsets == FSP_OFFSETS_SHARED)
				fprintf(f, "; offsets=shared: fio keeps one position per "
					   "direction (as offsets=per-direction)\n");
		}
		fprintf(f, "iodepth=%u\n", qd);
		fprintf(f, "randseed=%" PRIu64 "\n", p->seed + i); /* step i uses seed + i */
		if (p->fill) {
			/* one pass over the span, no limit but the span */
		} else {
			uint64_t runtime = p->time_ns;
			if (p->burst) {
				uint64_t blocks = p->burst / p->bs ? p->burst / p->bs : 1;
				if (burst_busy) {
					uint64_t think = fsp_duty_idle_ns(burst_busy, p->duty);
					fprintf(f, "thinktime=%" PRIu64 "\nthinktime_blocks=%" PRIu64
						   "\nthinktime_blocks_type=complete\n", usec(think), blocks);
					/* fio's runtime counts the thinking too */
					if (runtime)
						runtime += fsp_duty_idle_ns(runtime, p->duty);
				}
			}
			if (p->bytes)
				fprintf(f, "io_size=%" PRIu64 "\n", p->bytes);
			if (runtime) {
				fprintf(f, "runtime=%" PRIu64 "us\n", usec(runtime));
				if (!p->bytes)
					fprintf(f, "time_based=1\n");
			}
			if (p->ramp_ns && !p->burst)
				fprintf(f, "ramp_time=%" PRIu64 "us\n", usec(p->ramp_ns));
		}
		if (w->iolog)
			fprintf(f, "write_iolog=%s.%u\n", w->iolog, i);

		if (i + 1 < nsteps) {
			uint64_t idle = p->idle_ns;
			if (!p->burst && !p->fill && p->duty < 100)
				idle += fsp_duty_idle_ns(p->time_ns, p->duty);
			if (idle)
				fprintf(f, "\n[" FSP_FIO_IDLE_PREFIX "%u]\nstonewall\nioengine=null\n"
					   "rw=read\nsize=%" PRIu32 "\noffset=0\nio_size=%" PRIu32
					   "\nthinktime=%" PRIu64 "\nthinktime_blocks=1\n",
					i, p->bs, p->bs, usec(idle));
		}
	}
	return 0;
}
