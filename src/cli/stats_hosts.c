/*
 * stats_hosts.c - `fsprism stats` of a run of kind fio-clients or hosts (what
 * `fsprism import` makes of fio --client's results from several servers,
 * docs/fio.md, and what `run --hosts` stores, docs/hosts.md): its hosts side by side, a row per step, direction and host,
 * and the fleet's row: the hosts' histograms merged, so that its
 * percentiles are exact, not averages of the hosts' percentiles.
 *
 * The hosts ran the same job file: their steps are matched by number.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src/base/grow.h"
#include "src/base/hist.h"
#include "src/base/json.h"
#include "src/base/ops.h"
#include "src/cli/stats.h"
#include "src/cli/stats_hosts.h"
#include "src/cli/stats_part.h"
#include "src/db/results.h"

struct host {
	int64_t run;
	char *name;
};

struct hosts {
	struct host *h;
	size_t n, cap;
	int oom;
};

static int add_host(void *arg, int64_t id, const char *kind, const char *label)
{
	struct hosts *hs = arg;
	if (!kind || strcmp(kind, "run"))
		return 0;
	if (fsp_grow((void **)&hs->h, &hs->cap, hs->n + 1, sizeof(*hs->h), 8) != 0) {
		hs->oom = 1;
		return 1;
	}
	hs->h[hs->n].run = id;
	hs->h[hs->n].name = strdup(label ? label : "-");
	if (!hs->h[hs->n].name) {
		hs->oom = 1;
		return 1;
	}
	hs->n++;
	return 0;
}

/* One host's steps: number, label and busy time. */
struct step {
	int step;
	char *label;
	uint64_t busy_ns;
};

struct steps {
	struct step *s;
	size_t n, cap;
	int oom;
};

static int add_step(void *arg, const struct fsp_step_row *r)
{
	struct steps *ss = arg;
	if (fsp_grow((void **)&ss->s, &ss->cap, ss->n + 1, sizeof(*ss->s), 8) != 0) {
		ss->oom = 1;
		return 1;
	}
	ss->s[ss->n] = (struct step){ r->step, strdup(r->label ? r->label : ""), r->busy_ns };
	if (!ss->s[ss->n].label) {
		ss->oom = 1;
		return 1;
	}
	ss->n++;
	return 0;
}

static void steps_free(struct steps *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		free(ss->s[i].label);
	free(ss->s);
	memset(ss, 0, sizeof(*ss));
}

enum { F_TABLE, F_CSV, F_JSON };

/* One row: a host's (run > 0) or the fleet's (run 0). */
static void print_row(FILE *out, int f, int *first, const char *step_label, int step, int op,
		      const char *host, int64_t run, const struct fsp_hist *h, uint64_t bytes,
		      double mbps)
{
	double mean = fsp_hist_mean(h) / 1e3;
	double q[4] = { (double)fsp_hist_quantile(h, 0.50) / 1e3,
			(double)fsp_hist_quantile(h, 0.99) / 1e3,
			(double)fsp_hist_quantile(h, 0.999) / 1e3, (double)h->max / 1e3 };
	if (f == F_TABLE) {
		char c[5][24];
		fsp_stats_fmt_us(c[0], sizeof(c[0]), mean);
		for (int i = 0; i < 4; i++)
			fsp_stats_fmt_us(c[i + 1], sizeof(c[i + 1]), q[i]);
		fprintf(out, "%-14.14s %-5s %-16.16s %9" PRIu64 " %9.2f %9s %9s %9s %9s %9s\n",
			step_label, fsp_op_name(op), host, h->count, mbps, c[0], c[1], c[2], c[3],
			c[4]);
	} else if (f == F_CSV) {
		fprintf(out, "%d", step);
		fsp_stats_csv_field(out, step_label);
		fprintf(out, ",%s", fsp_op_name(op));
		fsp_stats_csv_field(out, host);
		fprintf(out, ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
			run, h->count, bytes, mbps, mean, q[0], q[1], q[2], q[3]);
	} else {
		fprintf(out, "%s\n    {\"step\": %d", *first ? "" : ",", step);
		fsp_json_member_str(out, "step_label", step_label);
		fprintf(out, ", \"op\": \"%s\"", fsp_op_name(op));
		fsp_json_member_str(out, "host", host);
		if (run)
			fprintf(out, ", \"run\": %" PRId64, run);
		else
			fprintf(out, ", \"run\": null");
		fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"mb_per_s\": %.3f, "
			"\"mean_us\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f, "
			"\"max_us\": %.3f}", h->count, bytes, mbps, mean, q[0], q[1], q[2], q[3]);
	}
	*first = 0;
}

int fsp_stats_hosts(FILE *out, struct fsp_store *st, const struct fsp_run_row *hdr,
		    const char *format)
{
	int f = !strcmp(format, "csv") ? F_CSV : !strcmp(format, "json") ? F_JSON : F_TABLE;
	struct hosts hs = { 0 };
	struct steps *steps = NULL;
	struct fsp_hist *h = malloc(sizeof(*h)), *fleet = malloc(sizeof(*fleet));
	int rc = -1;
	if (!h || !fleet)
		goto oom;
	if (fsp_store_each_child_run(st, hdr->id, add_host, &hs) != 0) {
		fprintf(stderr, "fsprism stats: %s\n", fsp_store_errmsg(st));
		goto out;
	}
	if (hs.oom || !(steps = calloc(hs.n ? hs.n : 1, sizeof(*steps))))
		goto oom;
	for (size_t i = 0; i < hs.n; i++) {
		if (fsp_store_each_step(st, hs.h[i].run, add_step, &steps[i]) != 0) {
			fprintf(stderr, "fsprism stats: %s\n", fsp_store_errmsg(st));
			goto out;
		}
		if (steps[i].oom)
			goto oom;
	}
	if (f == F_TABLE) {
		/* a run --hosts (kind hosts) ran them; an import (fio-clients) read them */
		int ran = hdr->kind && !strcmp(hdr->kind, "hosts");
		fprintf(out, "run %" PRId64 " (%s%s%s)  fio --client results of %zu hosts, "
			"%s %s\n", hdr->id, ran ? "hosts" : "fio-clients", hdr->label ? " " : "",
			hdr->label ? hdr->label : "", hs.n, ran ? "run --hosts" : "imported",
			hdr->started_at ? hdr->started_at : "-");
		fprintf(out, "a row per step, direction and host; 'all hosts': their histograms "
			"merged, MB/s summed (fsprism stats DB --run N: one host)\n\n");
		fprintf(out, "%-14s %-5s %-16s %9s %9s %9s %9s %9s %9s %9s\n", "step", "op", "host",
			"count", "MB/s", "mean", "p50", "p99", "p99.9", "max");
	} else if (f == F_CSV) {
		fprintf(out, "step,step_label,op,host,run,count,bytes,mb_per_s,mean_us,p50_us,"
			"p99_us,p999_us,max_us\n");
	} else {
		fprintf(out, "{\n  \"run\": {\"id\": %" PRId64 ", \"kind\": ", hdr->id);
		fsp_json_str(out, hdr->kind ? hdr->kind : "fio-clients");
		fsp_json_member_str(out, "label", hdr->label);
		fprintf(out, "},\n  \"hosts\": [");
		for (size_t i = 0; i < hs.n; i++) {
			fprintf(out, "%s{\"run\": %" PRId64, i ? ", " : "", hs.h[i].run);
			fsp_json_member_str(out, "host", hs.h[i].name);
			fputc('}', out);
		}
		fprintf(out, "],\n  \"rows\": [");
	}
	/* the steps of the first host that has any, matched by number on the others */
	const struct steps *ref = NULL;
	for (size_t i = 0; i < hs.n && !ref; i++)
		if (steps[i].n)
			ref = &steps[i];
	int first = 1;
	for (size_t k = 0; ref && k < ref->n; k++) {
		int step = ref->s[k].step;
		for (int op = FSP_OP_READ; op <= FSP_OP_WRITE; op++) {
			fsp_hist_init(fleet);
			uint64_t fleet_bytes = 0;
			double fleet_mbps = 0;
			int hosts_with = 0;
			for (size_t i = 0; i < hs.n; i++) {
				uint64_t bytes = 0, errors = 0, busy = 0;
				int got = fsp_store_load_hist(st, hs.h[i].run, step, op, FSP_LAYER_TOTAL,
							      h, &bytes, &errors);
				if (got < 0) {
					fprintf(stderr, "fsprism stats: %s\n", fsp_store_errmsg(st));
					goto out;
				}
				if (!got || !h->count)
					continue;
				for (size_t j = 0; j < steps[i].n; j++)
					if (steps[i].s[j].step == step)
						busy = steps[i].s[j].busy_ns;
				double mbps = busy ? (double)bytes / 1e6 / ((double)busy / 1e9) : 0;
				print_row(out, f, &first, ref->s[k].label, step, op, hs.h[i].name,
					  hs.h[i].run, h, bytes, mbps);
				fsp_hist_merge(fleet, h);
				fleet_bytes += bytes;
				fleet_mbps += mbps;
				hosts_with++;
			}
			if (hosts_with > 1)
				print_row(out, f, &first, ref->s[k].label, step, op, "all hosts", 0,
					  fleet, fleet_bytes, fleet_mbps);
		}
	}
	if (f == F_JSON)
		fprintf(out, "\n  ]\n}\n");
	else if (f == F_TABLE && (!ref || first))
		fprintf(out, "(no host measured a step)\n");
	rc = 0;
	goto out;
oom:
	fprintf(stderr, "fsprism stats: out of memory\n");
out:
	for (size_t i = 0; steps && i < hs.n; i++)
		steps_free(&steps[i]);
	free(steps);
	for (size_t i = 0; i < hs.n; i++)
		free(hs.h[i].name);
	free(hs.h);
	free(h);
	free(fleet);
	return rc;
}
