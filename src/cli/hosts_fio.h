/*
 * hosts_fio.h - what `fsprism run --hosts` needs of fio until the fio
 * branch's job-file writer and json+ import take its place (issue 31): a
 * profile's steps as a fio job file, and one host's results read back out
 * of `fio --client --output-format=json+` into fsprism's histograms.
 *
 * STAND-IN: both halves are the minimum the many-hosts run needs; when
 * `fsprism profiles --fio` (the job writer) and `fsprism import` (the
 * json+ reader) land, run_hosts.c calls theirs and this file goes.
 */
#ifndef FSP_CLI_HOSTS_FIO_H
#define FSP_CLI_HOSTS_FIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "src/base/hist.h"
#include "bench/engine/profile.h"

/* One step of a profile: its queue depth, read share and label. */
struct fsp_hosts_step {
	unsigned qd, read_pct;
	char label[48];
};

/* The steps of p, in run's order (qd x mix, or one fill step): n of them, malloc'ed. */
struct fsp_hosts_step *fsp_hosts_steps(const struct fsp_params *p, unsigned *n);

/* p's steps as a fio job on target, one job a step, each after the last
 * (stonewall). 0, or -1 (errno). */
int fsp_hosts_job_write(FILE *f, const struct fsp_params *p, const struct fsp_hosts_step *s,
			unsigned nsteps, const char *target);

/* What one host returned for one step (job): 0 read, 1 write. */
struct fsp_host_step_result {
	int present;         /* the host returned this job's results */
	int error;           /* fio's error for the job (an errno), 0 none */
	uint64_t runtime_ms;
	uint64_t ios[2], bytes[2];
	struct fsp_hist *hist[2]; /* completion latency, NULL without IO */
};

/*
 * Read fio's json+ output (text: what fio printed on stdout, with any text
 * lines before the JSON) and fill res[h][s] for the host whose address and
 * port are addr[h], port[h], the job named "step-S". 0, or -1 with a line
 * in err when the text holds no fio JSON. Free the histograms with
 * fsp_hosts_results_free.
 */
int fsp_hosts_read_json(const char *text, size_t nhosts, const char *const *addr,
			const unsigned *port, unsigned nsteps,
			struct fsp_host_step_result **res, char *err, size_t errlen);
void fsp_hosts_results_free(struct fsp_host_step_result *r, unsigned nsteps);

#endif
