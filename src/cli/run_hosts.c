/*
 * run_hosts.c - `fsprism run PROFILE TARGET --hosts HOSTFILE` (run_hosts.h).
 *
 * fio's client/server is the distributed engine the field already runs, so
 * fsprism drives it rather than a protocol of its own: every host runs
 * `fio --server`; this command probes each one first (reachable, a fio
 * server whose version is this fio's: fio's protocol refuses any other),
 * writes each host its job file (its own target), runs one
 * `fio --client=H1 job1 --client=H2 job2 ...`, whose client starts the jobs
 * on every server together, and stores each host's json+ results as a run
 * under one parent run, which holds the fleet's merged histograms and names
 * the straggler. A host that fails or disappears is named with what it
 * returned; the other hosts' results are kept.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "src/base/clock.h"
#include "src/base/ops.h"
#include "bench/engine/hostfile.h"
#include "src/db/store.h"
#include "src/prism/fleet.h"
#include "bench/engine/fiojson.h"
#include "bench/engine/fiowrite.h"
#include "src/cli/run_hosts.h"

#define ERRLEN 4608
/* a server that accepts but never answers (not fio) holds the probe this long */
#define PROBE_TIMEOUT_MS 10000

static volatile pid_t fio_child;

/* Ctrl-C reaches fio through the terminal's process group; a signal sent to
 * fsprism alone is passed on, so that fio stops its servers and reports. */
static void forward_signal(int sig)
{
	if (fio_child > 0)
		kill(fio_child, sig);
}

/* ---- the scratch directory ------------------------------------------------ */

struct scratch {
	char dir[4096];
};

static int scratch_make(struct scratch *s)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(s->dir, sizeof(s->dir), "%s/fsprism-hosts.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir)) {
		fprintf(stderr, "fsprism run: cannot make a directory in %s: %s\n",
			tmp && *tmp ? tmp : "/tmp", strerror(errno));
		s->dir[0] = 0;
		return -1;
	}
	return 0;
}

/* Remove the scratch directory and the files made in it (no subdirectories). */
static void scratch_remove(struct scratch *s)
{
	if (!s->dir[0])
		return;
	DIR *d = opendir(s->dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(s->dir);
	s->dir[0] = 0;
}

/* DIR/BASE-I.EXT: a file of the scratch directory */
static void scratch_path(const struct scratch *s, char *buf, size_t len, const char *base,
			 size_t i, const char *ext)
{
	snprintf(buf, len, "%s/%s-%zu%s", s->dir, base, i, ext);
}

/* A whole file (a few MiB at most: fio's output), NUL-terminated; NULL if unreadable. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		char *b = realloc(buf, cap *= 2);
		if (!b) {
			free(buf);
			buf = NULL;
		} else
			buf = b;
	}
	if (buf)
		buf[n] = 0;
	fclose(f);
	return buf;
}

/* ---- fio as a child --------------------------------------------------------- */

/* Start argv with stdout and stderr to out (and err, or out too). Its pid, or -1. */
static pid_t spawn(char *const *argv, const char *out, const char *err)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int fe = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : fd;
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fe < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 ||
	    dup2(fe, 2) < 0)
		_exit(126);
	execvp(argv[0], argv);
	_exit(127);
}

/*
 * Wait for the n children in pid[] until deadline_ms from now (0: no
 * deadline); those still running then are killed (status -1). status[i]:
 * the exit status, 128 + the signal that ended it, or -1.
 */
static void wait_all(pid_t *pid, int *status, size_t n, uint64_t deadline_ms)
{
	uint64_t end = fsp_now_ns() + deadline_ms * 1000000ull;
	size_t left = 0;
	for (size_t i = 0; i < n; i++) {
		status[i] = -1;
		left += pid[i] > 0;
	}
	while (left) {
		for (size_t i = 0; i < n; i++) {
			int ws;
			if (pid[i] <= 0)
				continue;
			pid_t r = waitpid(pid[i], &ws, WNOHANG);
			if (r == pid[i] || (r < 0 && errno == ECHILD)) {
				status[i] = r != pid[i] ? -1 : WIFEXITED(ws) ? WEXITSTATUS(ws) :
					    WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : -1;
				pid[i] = 0;
				left--;
			}
		}
		if (!left)
			break;
		if (deadline_ms && fsp_now_ns() > end) {
			/* SIGKILL: fio waits for a silent server through a SIGTERM */
			for (size_t i = 0; i < n; i++)
				if (pid[i] > 0) {
					kill(pid[i], SIGKILL);
					waitpid(pid[i], NULL, 0);
					pid[i] = 0;
				}
			break;
		}
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL);
	}
}

/* The local fio's version ("fio-3.33") into buf. 0, or -1 (said). */
static int local_fio_version(const struct scratch *s, char *buf, size_t len)
{
	char out[4200];
	scratch_path(s, out, sizeof(out), "fio-version", 0, "");
	char *argv[] = { "fio", "--version", NULL };
	pid_t pid = spawn(argv, out, NULL);
	int status = -1;
	if (pid > 0)
		wait_all(&pid, &status, 1, PROBE_TIMEOUT_MS);
	char *text = status == 0 ? slurp(out) : NULL;
	if (!text || strncmp(text, "fio-", 4)) {
		free(text);
		fprintf(stderr, "fsprism run: --hosts needs fio (%s)\n",
			status == 127 ? "not found in PATH" : "'fio --version' failed");
		return -1;
	}
	text[strcspn(text, " \r\n")] = 0;
	snprintf(buf, len, "%s", text);
	free(text);
	return 0;
}

/* The first line of text that starts with one of fio's messages, or its first line. */
static void fio_message(const char *text, char *buf, size_t len)
{
	const char *pick = NULL;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, "fio: ", 5) || !strncmp(l, "client: ", 8)) {
			/* the version line says the most; else the last connect error */
			if (!pick || strstr(l, "version"))
				pick = l;
		}
	if (!pick)
		pick = text;
	size_t n = strcspn(pick, "\n");
	snprintf(buf, len, "%.*s", (int)(n < 300 ? n : 300), pick);
	if (!buf[0])
		snprintf(buf, len, "no output");
}

/*
 * Ask every server to run a job of no IO (ioengine=null), all at once:
 * its answer names its fio version (handle_probe's "fio=fio-3.33"), and
 * fio's protocol refuses a server of another protocol version. 0 when all
 * answered with this fio's version; else one line on stderr and -1.
 */
static int probe_hosts(const struct fsp_hosts_opts *o, const struct fsp_hostfile *hf,
		       const struct scratch *s, const char *version)
{
	char job[4200];
	scratch_path(s, job, sizeof(job), "probe", 0, ".fio");
	FILE *f = fopen(job, "w");
	if (!f || fprintf(f, "[probe]\nioengine=null\nsize=4k\nbs=4k\nrw=read\n") < 0 ||
	    fclose(f) != 0) {
		fprintf(stderr, "fsprism run: %s: %s\n", job, strerror(errno));
		return -1;
	}
	pid_t *pid = calloc(hf->n, sizeof(*pid));
	int *status = calloc(hf->n, sizeof(*status));
	if (!pid || !status) {
		free(pid);
		free(status);
		fprintf(stderr, "fsprism run: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < hf->n; i++) {
		char arg[400], out[4200];
		fsp_host_fio_arg(&hf->hosts[i], arg + 9, sizeof(arg) - 9);
		memcpy(arg, "--client=", 9);
		scratch_path(s, out, sizeof(out), "probe", i, ".out");
		char *argv[] = { "fio", arg, job, NULL };
		pid[i] = spawn(argv, out, NULL);
	}
	wait_all(pid, status, hf->n, PROBE_TIMEOUT_MS);
	int bad = 0;
	char first[1400] = "";
	for (size_t i = 0; i < hf->n; i++) {
		const struct fsp_host *h = &hf->hosts[i];
		char out[4200], why[1000] = "", msg[400];
		scratch_path(s, out, sizeof(out), "probe", i, ".out");
		char *text = slurp(out);
		const char *v = text ? strstr(text, ", fio=") : NULL;
		if (status[i] < 0) {
			snprintf(why, sizeof(why), "no answer from a fio server within %d s",
				 PROBE_TIMEOUT_MS / 1000);
		} else if (status[i] != 0 || !v) {
			fio_message(text ? text : "", msg, sizeof(msg));
			if (status[i] > 128 && !strcmp(msg, "no output"))
				/* a listener that closes at once: fio's write gets SIGPIPE */
				snprintf(msg, sizeof(msg), "the server closed the connection "
					 "(fio ended by %s)", strsignal(status[i] - 128));
			int closed = !strncmp(msg, "the server closed", 17);
			if (strstr(msg, "version") && !closed)
				snprintf(why, sizeof(why), "its fio server is not of this fio's "
					 "version (%s): %s", version, msg);
			else if (strstr(msg, "connect") && !closed)
				snprintf(why, sizeof(why), "no fio server answers: %s", msg);
			else
				snprintf(why, sizeof(why), "not a fio server of this fio's "
					 "version (%s): %s", version, msg);
		} else {
			v += 6;
			size_t n = strcspn(v, ",\n");
			if (n != strlen(version) || strncmp(v, version, n))
				snprintf(why, sizeof(why), "its fio server is %.*s, this fio is %s: "
					 "the versions must match", (int)(n < 40 ? n : 40), v, version);
		}
		free(text);
		if (why[0] && !bad++)
			snprintf(first, sizeof(first), "host %s (%s:%d): %s", h->name,
				 o->hostfile, h->line, why);
	}
	free(pid);
	free(status);
	if (!bad)
		return 0;
	if (bad > 1)
		fprintf(stderr, "fsprism run: %s (and %d more hosts failed the probe); nothing ran\n",
			first, bad - 1);
	else
		fprintf(stderr, "fsprism run: %s; nothing ran\n", first);
	return -1;
}

/* ---- storing ----------------------------------------------------------------- */

/* One step of the profile: its depth, read share and label, in run's order. */
struct step {
	unsigned qd, read_pct;
	char label[48];
};

/* What one host returned for one step (fio job): [0] read, [1] write. */
struct step_result {
	int present;         /* the host returned the job's results */
	int error;           /* fio's error of the job (an errno), 0 none */
	uint64_t runtime_ms;
	uint64_t ios[2], bytes[2];
	const struct fsp_hist *hist[2]; /* fio's bins (the import's), NULL without IO */
};

struct host_run {
	const struct fsp_host *h;
	const char *target;
	struct step_result *res;          /* one per step */
	struct fsp_hist *all;             /* every IO it returned, NULL if none */
	int failed;
	char why[600];
	int64_t run;
	ptrdiff_t fio_idx;                /* its results in the import's hosts, -1 none */
};

/* The profile's steps, qd x mix (or the one fill step), as fsp_fio_write_job writes them. */
static struct step *profile_steps(const struct fsp_params *p, unsigned *n)
{
	unsigned nq = p->fill ? 1 : p->nqd, nm = p->fill ? 1 : p->nmix, i = 0;
	struct step *s = calloc((size_t)nq * nm, sizeof(*s));
	for (unsigned q = 0; s && q < nq; q++)
		for (unsigned m = 0; m < nm; m++, i++) {
			s[i].qd = p->qds[q];
			s[i].read_pct = p->fill ? 0 : p->mixes[m];
			fsp_step_label(p, s[i].qd, s[i].read_pct, NULL, s[i].label, sizeof(s[i].label));
		}
	*n = i;
	return s;
}

/* Host h's jobs, in order, as its steps' results. */
static void host_results(const struct fsp_fio_host *h, struct step_result *res, unsigned nsteps)
{
	for (size_t k = 0; h && k < h->njobs && k < nsteps; k++) {
		const struct fsp_fio_job *j = &h->jobs[k];
		struct step_result *r = &res[k];
		r->present = 1;
		r->error = j->error;
		r->runtime_ms = j->job_runtime_ms;
		for (int d = 0; d < 2; d++) {
			r->ios[d] = j->dir[d].ios;
			r->bytes[d] = j->dir[d].bytes;
			r->hist[d] = j->dir[d].hist;
		}
	}
}

static void set_attr_u64(struct fsp_store *st, int64_t run, const char *key, uint64_t v)
{
	fsp_store_set_attr_u64(st, run, key, v);
}

static void store_params(struct fsp_store *st, int64_t run, const struct fsp_hosts_opts *o,
			 const struct fsp_params *p, const char *version)
{
	char buf[256], key[64];
	fsp_store_set_attr(st, run, "profile", o->profile);
	for (int i = 0; fsp_param_names[i]; i++) {
		fsp_param_format(p, fsp_param_names[i], buf, sizeof(buf));
		snprintf(key, sizeof(key), "param.%s", fsp_param_names[i]);
		fsp_store_set_attr(st, run, key, buf);
	}
	fsp_store_set_attr(st, run, "fio.version", version);
	fsp_store_set_attr(st, run, "engine", "fio --client");
}

/* ---- the command --------------------------------------------------------------- */

/*
 * fio's own line about host addr in its text output (the JSON's lines
 * start with a space or a brace): "client: host=ADDR disconnected" or
 * "client <ADDR>: exited with error 1" first, else any line naming it;
 * "" if it said nothing of it.
 */
static void fio_line_about(const char *text, const char *addr, char *buf, size_t len)
{
	char key[300], key2[300];
	snprintf(key, sizeof(key), "host=%s ", addr);
	snprintf(key2, sizeof(key2), "<%s>", addr);
	buf[0] = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strcspn(l, "\n");
		if (*l == ' ' || *l == '{' || *l == '}' || *l == '"')
			continue;
		int exact = memmem(l, n, key, strlen(key)) || memmem(l, n, key2, strlen(key2));
		if (exact || (!buf[0] && memmem(l, n, addr, strlen(addr)))) {
			snprintf(buf, len, "%.*s", (int)(n < 300 ? n : 300), l);
			if (exact)
				return;
		}
	}
}

/* Why host hr failed, if it did: nothing returned, a job's error, steps missing. */
static void judge_host(struct host_run *hr, unsigned nsteps, const char *fio_text)
{
	unsigned present = 0, idle = 0;
	int err = 0;
	unsigned err_step = 0;
	for (unsigned i = 0; i < nsteps; i++) {
		const struct step_result *r = &hr->res[i];
		present += r->present;
		/* a step that ran did IO: none is a job that never started */
		idle += r->present && !r->ios[0] && !r->ios[1];
		if (r->error && !err) {
			err = r->error;
			err_step = i;
		}
	}
	char said[320];
	fio_line_about(fio_text ? fio_text : "", hr->h->addr, said, sizeof(said));
	int gone = strstr(said, "disconnect") != NULL;
	int exited = strstr(said, "exited with error") != NULL;
	if (present == nsteps && !err && !gone && !exited && !idle)
		return;
	hr->failed = 1;
	if (err)
		snprintf(hr->why, sizeof(hr->why), "fio error %d (%s) in step %u; returned %u of %u steps",
			 err, strerror(err), err_step, present, nsteps);
	else
		snprintf(hr->why, sizeof(hr->why), "%sreturned %u of %u steps%s%s%s%s",
			 gone ? "disconnected mid-run; " : "", present, nsteps,
			 idle ? ", with no IO" : "",
			 said[0] ? " (fio: " : "", said, said[0] ? ")" : "");
}

static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

static void print_line(const char *who, const char *step, const struct fsp_hist *h,
		       uint64_t runtime_ms)
{
	if (!h || !h->count) {
		printf("%-24s %-14s %10s\n", who, step, "no IO");
		return;
	}
	double iops = runtime_ms ? (double)h->count * 1e3 / (double)runtime_ms : 0;
	printf("%-24s %-14s %10llu %10.0f %9.1f %9.1f %9.1f\n", who, step,
	       (unsigned long long)h->count, iops, us(fsp_hist_quantile(h, 0.5)),
	       us(fsp_hist_quantile(h, 0.99)), us(fsp_hist_quantile(h, 0.999)));
}

int fsp_run_hosts(const struct fsp_hosts_opts *o, const struct fsp_params *p)
{
	char err[ERRLEN], version[64];
	struct fsp_hostfile hf;
	if (fsp_hostfile_load(o->hostfile, &hf, err, sizeof(err)) != 0) {
		fprintf(stderr, "fsprism run: --hosts: %s\n", err);
		return 2;
	}
	struct scratch s = { "" };
	int rc = 1;
	unsigned nsteps = 0;
	struct step *steps = NULL;
	struct host_run *hr = calloc(hf.n, sizeof(*hr));
	char *fio_out = NULL, *fio_err = NULL;
	struct fsp_store *st = NULL;
	struct fsp_fio_result fio_res = { 0 };
	if (!hr || !(steps = profile_steps(p, &nsteps))) {
		fprintf(stderr, "fsprism run: out of memory\n");
		goto out;
	}
	/* what fio cannot be told is a usage error, before any host is asked */
	for (size_t i = 0; i < hf.n; i++) {
		hr[i].h = &hf.hosts[i];
		hr[i].target = hf.hosts[i].target[0] ? hf.hosts[i].target : o->target;
		struct fsp_fiowrite w = { .profile = o->profile, .filename = hr[i].target };
		FILE *null = fopen("/dev/null", "w");
		int bad_job = null && fsp_fio_write_job(null, p, &w, err, sizeof(err)) != 0;
		if (null)
			fclose(null);
		if (bad_job) {
			fprintf(stderr, "fsprism run: %s\n", err);
			rc = 2;
			goto out;
		}
	}
	if (scratch_make(&s) != 0 || local_fio_version(&s, version, sizeof(version)) != 0 ||
	    probe_hosts(o, &hf, &s, version) != 0)
		goto out;

	/* each host's job on its own target */
	size_t argc = 0;
	char **argv = calloc(2 * hf.n + 3, sizeof(*argv));
	char **owned = calloc(2 * hf.n, sizeof(*owned));
	if (!argv || !owned) {
		free(argv);
		free(owned);
		fprintf(stderr, "fsprism run: out of memory\n");
		goto out;
	}
	argv[argc++] = "fio";
	argv[argc++] = "--output-format=json+";
	int bad = 0;
	for (size_t i = 0; i < hf.n && !bad; i++) {
		char arg[400], job[4200];
		struct fsp_fiowrite w = { .profile = o->profile, .filename = hr[i].target };
		scratch_path(&s, job, sizeof(job), "job", i, ".fio");
		FILE *f = fopen(job, "w");
		if (!f || fsp_fio_write_job(f, p, &w, err, sizeof(err)) != 0 || ferror(f)) {
			fprintf(stderr, "fsprism run: %s: %s\n", job, f ? err : strerror(errno));
			bad = 1;
		}
		if (f && fclose(f) != 0 && !bad) {
			fprintf(stderr, "fsprism run: %s: %s\n", job, strerror(errno));
			bad = 1;
		}
		fsp_host_fio_arg(&hf.hosts[i], arg, sizeof(arg));
		if (asprintf(&owned[2 * i], "--client=%s", arg) < 0 ||
		    !(owned[2 * i + 1] = strdup(job)))
			bad = 1;
		argv[argc++] = owned[2 * i];
		argv[argc++] = owned[2 * i + 1];
	}
	char out[4200], errf[4200];
	scratch_path(&s, out, sizeof(out), "fio", 0, ".out");
	scratch_path(&s, errf, sizeof(errf), "fio", 0, ".err");
	int status = -1;
	if (!bad) {
		struct sigaction sa = { .sa_handler = forward_signal }, old_int, old_term;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		if (!o->quiet)
			fprintf(stderr, "running %s on %zu hosts with fio --client (%s)\n",
				o->profile, hf.n, version);
		pid_t pid = spawn(argv, out, errf);
		fio_child = pid;
		wait_all(&pid, &status, 1, 0);
		fio_child = 0;
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	for (size_t i = 0; i < 2 * hf.n; i++)
		free(owned[i]);
	free(owned);
	free(argv);
	if (bad)
		goto out;
	fio_out = slurp(out);
	fio_err = slurp(errf);

	/* what each host returned: fio's json+ read by the import (bench/engine/fiojson.h) */
	if (fsp_fio_json_parse(fio_out ? fio_out : "", fio_out ? strlen(fio_out) : 0,
			       "fio --client's output", &fio_res, err, sizeof(err)) != 0) {
		/* nothing came back: fio's own words say why */
		char msg[400];
		fio_message(fio_err && *fio_err ? fio_err : (fio_out ? fio_out : ""), msg, sizeof(msg));
		fprintf(stderr, "fsprism run: fio --client exited %d: %s (%s); nothing stored\n",
			status, err, msg);
		goto out;
	}
	for (size_t i = 0; i < hf.n; i++) {
		if (!(hr[i].res = calloc(nsteps ? nsteps : 1, sizeof(*hr[i].res)))) {
			fprintf(stderr, "fsprism run: out of memory\n");
			goto out;
		}
		const struct fsp_fio_host *fh = fsp_fio_host_of(&fio_res, hf.hosts[i].addr,
								hf.hosts[i].port);
		host_results(fh, hr[i].res, nsteps);
		hr[i].fio_idx = fh ? fh - fio_res.hosts : -1;
		if (fh) {
			/* stored under the host file's name for it */
			struct fsp_fio_host *mine = &fio_res.hosts[hr[i].fio_idx];
			char *name = strdup(hf.hosts[i].name);
			if (name) {
				free(mine->hostname);
				mine->hostname = name;
			}
		}
	}
	char *both = NULL;
	if (asprintf(&both, "%s\n%s", fio_out ? fio_out : "", fio_err ? fio_err : "") < 0)
		both = NULL;
	size_t nfailed = 0;
	const struct fsp_hist **all = calloc(hf.n, sizeof(*all));
	for (size_t i = 0; i < hf.n; i++) {
		judge_host(&hr[i], nsteps, both);
		nfailed += hr[i].failed;
		for (unsigned k = 0; k < nsteps; k++)
			for (int d = 0; d < 2; d++) {
				const struct fsp_hist *h = hr[i].res[k].hist[d];
				if (!h || hr[i].res[k].error)
					continue;
				if (!hr[i].all && (hr[i].all = malloc(sizeof(*hr[i].all))))
					fsp_hist_init(hr[i].all);
				if (hr[i].all)
					fsp_hist_merge(hr[i].all, h);
			}
		/* a failed host's IOs are stored with it, in the fleet, never the straggler */
		if (all && !hr[i].failed)
			all[i] = hr[i].all;
	}
	free(both);

	/* store: the parent, a run per host, the fleet's histograms */
	st = fsp_store_open(o->db, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fsprism run: %s\n", err);
		free(all);
		goto out;
	}
	char *cmdline = fsp_store_cmdline(o->argc, o->argv);
	struct fsp_run_info pinfo = { .kind = "hosts", .options = cmdline,
				      .backing_path = o->target, .backing_device = "",
				      .backing_fstype = "", .record_mode = "hist",
				      .label = o->label };
	int64_t parent = fsp_store_begin_run(st, &pinfo);
	if (parent < 0) {
		free(cmdline);
		free(all);
		goto out;
	}
	store_params(st, parent, o, p, version);
	fsp_store_set_attr(st, parent, "hosts.file", o->hostfile);
	set_attr_u64(st, parent, "hosts.count", hf.n);
	int store_bad = 0;
	/* what the hosts returned, each host a run under the parent (fiojson.h) */
	int64_t *runs = calloc(fio_res.nhosts ? fio_res.nhosts : 1, sizeof(*runs));
	struct fsp_fio_import imp = { .options = cmdline, .parent = parent };
	if (!runs || (fio_res.nhosts && fsp_fio_store(st, &fio_res, &imp, runs, err, sizeof(err)) < 0)) {
		fprintf(stderr, "fsprism run: %s\n", runs ? err : "out of memory");
		store_bad = 1;
	}
	for (size_t i = 0; i < hf.n; i++) {
		hr[i].run = hr[i].fio_idx >= 0 && !store_bad ? runs[hr[i].fio_idx] : -1;
		if (hr[i].run < 0) {
			/* a host that returned nothing still has its run, saying so */
			struct fsp_run_info info = { .kind = "run", .options = cmdline,
						     .backing_path = hr[i].target,
						     .backing_device = "", .backing_fstype = "",
						     .record_mode = "hist", .parent = parent,
						     .label = hf.hosts[i].name };
			hr[i].run = fsp_store_begin_run(st, &info);
			if (hr[i].run < 0) {
				store_bad = 1;
				continue;
			}
			fsp_store_end_run(st, hr[i].run, 0, 0);
		}
		store_params(st, hr[i].run, o, p, version);
		fsp_store_set_attr(st, hr[i].run, "host.name", hf.hosts[i].name);
		fsp_store_set_attr(st, hr[i].run, "host.target", hr[i].target);
		fsp_store_set_attr(st, hr[i].run, "host.status", hr[i].failed ? "failed" : "ok");
		if (hr[i].failed) {
			fsp_store_set_attr(st, hr[i].run, "host.error", hr[i].why);
			fsp_store_set_attr(st, hr[i].run, "failed", "1");
		}
	}
	free(runs);
	free(cmdline);

	/* the fleet: per step and direction, the union of the hosts' IOs */
	struct fsp_hist *fleet = malloc(sizeof(*fleet)), *step_h = malloc(sizeof(*step_h));
	const struct fsp_hist **src = calloc(hf.n, sizeof(*src));
	if (!fleet || !step_h || !src || !all) {
		fprintf(stderr, "fsprism run: out of memory\n");
		store_bad = 1;
	} else {
		fsp_hist_init(fleet);
		for (unsigned k = 0; k < nsteps; k++)
			for (int d = 0; d < 2; d++) {
				uint64_t bytes = 0;
				for (size_t i = 0; i < hf.n; i++) {
					const struct step_result *r = &hr[i].res[k];
					src[i] = r->error ? NULL : r->hist[d];
					bytes += src[i] ? r->bytes[d] : 0;
				}
				fsp_hist_init(step_h);
				fsp_fleet_merge(step_h, (const struct fsp_hist *const *)src, hf.n);
				if (!step_h->count)
					continue;
				fsp_hist_merge(fleet, step_h);
				if (fsp_store_save_hist(st, parent, (int)k,
							d ? FSP_OP_WRITE : FSP_OP_READ,
							FSP_LAYER_TOTAL, step_h, bytes, 0, 0) != 0)
					store_bad = 1;
			}
		set_attr_u64(st, parent, "fleet.ios", fleet->count);
		if (fleet->count) {
			set_attr_u64(st, parent, "fleet.p50_ns", fsp_hist_quantile(fleet, 0.5));
			set_attr_u64(st, parent, "fleet.p99_ns", fsp_hist_quantile(fleet, 0.99));
			set_attr_u64(st, parent, "fleet.p999_ns", fsp_hist_quantile(fleet, 0.999));
		}
	}
	int strag = all ? fsp_fleet_straggler((const struct fsp_hist *const *)all, hf.n) : -1;
	if (strag >= 0) {
		fsp_store_set_attr(st, parent, "hosts.straggler", hf.hosts[strag].name);
		set_attr_u64(st, parent, "hosts.straggler_p99_ns",
			     fsp_hist_quantile(all[strag], 0.99));
	}
	set_attr_u64(st, parent, "hosts.ok", hf.n - nfailed);
	if (nfailed) {
		char list[4096] = "";
		size_t n = 0;
		for (size_t i = 0; i < hf.n && n + 300 < sizeof(list); i++)
			if (hr[i].failed)
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
						      n ? "," : "", hf.hosts[i].name);
		fsp_store_set_attr(st, parent, "hosts.failed", list);
		fsp_store_set_attr(st, parent, "failed", "1");
	}
	fsp_store_end_run(st, parent, 0, 0);

	if (!o->quiet) {
		printf("%s on %zu hosts (fio --client, %s, one start for all)\n", o->profile,
		       hf.n, version);
		printf("%-24s %-14s %10s %10s %9s %9s %9s\n", "host", "step", "IOs", "IOPS",
		       "p50 us", "p99 us", "p99.9 us");
		for (size_t i = 0; i < hf.n; i++)
			for (unsigned k = 0; k < nsteps; k++) {
				const struct step_result *r = &hr[i].res[k];
				if (!r->present)
					continue;
				struct fsp_hist h;
				fsp_hist_init(&h);
				for (int d = 0; d < 2; d++)
					if (r->hist[d])
						fsp_hist_merge(&h, r->hist[d]);
				print_line(hf.hosts[i].name, steps[k].label, &h, r->runtime_ms);
			}
		if (fleet && src)
			for (unsigned k = 0; k < nsteps; k++) {
				fsp_hist_init(step_h);
				uint64_t rt = 0;
				for (size_t i = 0; i < hf.n; i++) {
					const struct step_result *r = &hr[i].res[k];
					for (int d = 0; d < 2; d++)
						if (r->hist[d] && !r->error)
							fsp_hist_merge(step_h, r->hist[d]);
					if (r->runtime_ms > rt && !r->error)
						rt = r->runtime_ms;
				}
				char who[32];
				snprintf(who, sizeof(who), "fleet (%zu host%s)", hf.n - nfailed,
					 hf.n - nfailed == 1 ? "" : "s");
				print_line(who, steps[k].label, step_h, rt);
			}
	}
	if (fleet && fleet->count)
		printf("fleet: p50 %.1f us, p99 %.1f us, p99.9 %.1f us over %llu IOs "
		       "(merged histograms)\n", us(fsp_hist_quantile(fleet, 0.5)),
		       us(fsp_hist_quantile(fleet, 0.99)), us(fsp_hist_quantile(fleet, 0.999)),
		       (unsigned long long)fleet->count);
	if (strag >= 0)
		printf("straggler: %s (p99 %.1f us)\n", hf.hosts[strag].name,
		       us(fsp_hist_quantile(all[strag], 0.99)));
	for (size_t i = 0; i < hf.n; i++)
		if (hr[i].failed)
			printf("failed: %s: %s\n", hf.hosts[i].name, hr[i].why);
	printf("run %lld stored in %s (%zu hosts, %zu failed)\n", (long long)parent, o->db,
	       hf.n, nfailed);
	fflush(stdout);
	free(fleet);
	free(step_h);
	free(src);
	free(all);
	rc = store_bad || nfailed ? 1 : 0;
out:
	for (size_t i = 0; hr && i < hf.n; i++) {
		free(hr[i].res);
		free(hr[i].all);
	}
	free(hr);
	free(steps);
	free(fio_out);
	free(fio_err);
	fsp_fio_result_free(&fio_res);
	if (st)
		fsp_store_close(st);
	scratch_remove(&s);
	fsp_hostfile_free(&hf);
	return rc;
}
