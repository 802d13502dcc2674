/*
 * fiojson.c - fio's JSON results read with json-c and stored as runs
 * (fiojson.h).
 *
 * fio's json+ gives each direction's latency histogram as "bins": a map
 * from a bucket's value in ns (the middle of the bucket, fio's
 * plat_idx_to_val) to its count. fio's buckets are exact below 128 ns and
 * 1/64 of their power of two above, fsprism's (src/base/hist.h) exact below
 * 256 ns and 1/128 above: each fio value falls into one fsprism bucket, so
 * a quantile read back is within half a fio bucket (1/128 of the value) of
 * the sample fio counted, the precision fio's own percentiles have. The
 * count, mean, min and max are fio's, which are exact.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "bench/engine/fiojson.h"
#include "bench/engine/fiowrite.h"
#include "src/base/err.h"
#include "src/base/grow.h"
#include "src/base/ops.h"
#include "src/base/units.h"

/* ---- reading ------------------------------------------------------------------ */

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static const char *member_str(struct json_object *o, const char *key)
{
	struct json_object *v = member(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* A count: a JSON number 0 or more (fio prints them as integers). */
static uint64_t member_u64(struct json_object *o, const char *key)
{
	struct json_object *v = member(o, key);
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);
		return i > 0 ? (uint64_t)i : 0;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		return d > 0 ? (uint64_t)(d + 0.5) : 0;
	}
	return 0;
}

static double member_double(struct json_object *o, const char *key)
{
	struct json_object *v = member(o, key);
	return v ? json_object_get_double(v) : 0;
}

/* An option of the job, else of [global] (fio prints both as strings). */
static const char *option(struct json_object *job, struct json_object *global, const char *key)
{
	const char *v = member_str(member(job, "job options"), key);
	return v ? v : member_str(global, key);
}

static uint64_t option_size(struct json_object *job, struct json_object *global,
			    const char *key)
{
	const char *v = option(job, global, key);
	uint64_t n;
	/* "4k,8k" or "4k-64k" have no one value: 0, unknown */
	return v && fsp_parse_size(v, &n) == 0 ? n : 0;
}

/*
 * One direction's histogram from its "lat_ns" (or "clat_ns") bins. 0, 1
 * when there are no bins, -1 on a malformed one (err set).
 */
static int read_bins(struct json_object *lat, struct fsp_hist **out, char *err, size_t errlen)
{
	struct json_object *bins = member(lat, "bins");
	if (!bins || !json_object_is_type(bins, json_type_object))
		return 1;
	struct fsp_hist *h = malloc(sizeof(*h));
	if (!h)
		return fsp_set_err(err, errlen, "out of memory");
	fsp_hist_init(h);
	json_object_object_foreach(bins, key, val) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(key, &end, 10);
		int64_t n = json_object_get_int64(val);
		if (errno || end == key || *end || n < 0 || !json_object_is_type(val, json_type_int)) {
			free(h);
			return fsp_set_err(err, errlen, "a latency bin '%s': %s is not a count",
					   key, json_object_to_json_string(val));
		}
		h->buckets[fsp_hist_bucket(v)] += (uint64_t)n;
		h->count += (uint64_t)n;
		h->sum += v * (uint64_t)n;
		if (n && v < h->min)
			h->min = v;
		if (n && v > h->max)
			h->max = v;
	}
	/* fio's own min, max and mean are exact; its bins are not */
	uint64_t N = member_u64(lat, "N");
	if (N == h->count && h->count) {
		uint64_t mn = member_u64(lat, "min"), mx = member_u64(lat, "max");
		if (mn <= mx) {
			h->min = mn;
			h->max = mx;
		}
		h->sum = (uint64_t)(member_double(lat, "mean") * (double)h->count + 0.5);
	}
	*out = h;
	return 0;
}

static int read_dir(struct json_object *job, const char *dname, struct fsp_fio_dir *d,
		    const char *jobname, char *err, size_t errlen)
{
	struct json_object *o = member(job, dname);
	if (!o)
		return 0;
	d->ios = member_u64(o, "total_ios");
	d->bytes = member_u64(o, "io_bytes");
	d->runtime_ms = member_u64(o, "runtime");
	char why[200] = "";
	int rc = read_bins(member(o, "lat_ns"), &d->hist, why, sizeof(why));
	d->from_lat = rc == 0;
	if (rc == 1)
		rc = read_bins(member(o, "clat_ns"), &d->hist, why, sizeof(why));
	if (rc < 0)
		return fsp_set_err(err, errlen, "job '%s', %s: %s", jobname, dname, why);
	if (rc == 1 && d->ios)
		return fsp_set_err(err, errlen, "job '%s' has no latency bins (fio's "
				   "--output-format=json+ has them; json does not)", jobname);
	if (d->hist && !d->hist->count) { /* no IO in this direction */
		free(d->hist);
		d->hist = NULL;
	}
	return 0;
}

static int read_pct_of(const char *rw, struct json_object *job, struct json_object *global)
{
	if (!rw)
		return -1;
	if (!strcmp(rw, "read") || !strcmp(rw, "randread"))
		return 100;
	if (!strcmp(rw, "write") || !strcmp(rw, "randwrite") || !strcmp(rw, "trim") ||
	    !strcmp(rw, "randtrim"))
		return 0;
	const char *v = option(job, global, "rwmixread");
	if (v)
		return atoi(v);
	v = option(job, global, "rwmixwrite");
	if (v)
		return 100 - atoi(v);
	return 50; /* fio's default mix */
}

static void job_free(struct fsp_fio_job *j)
{
	free(j->name);
	free(j->rw);
	free(j->dir[0].hist);
	free(j->dir[1].hist);
}

static int read_job(struct json_object *job, struct json_object *global, struct fsp_fio_job *j,
		    char *err, size_t errlen)
{
	memset(j, 0, sizeof(*j));
	const char *name = member_str(job, "jobname");
	j->name = strdup(name ? name : "");
	const char *rw = option(job, global, "rw");
	if (!rw)
		rw = option(job, global, "readwrite");
	j->rw = rw ? strdup(rw) : NULL;
	if (!j->name || (rw && !j->rw))
		return fsp_set_err(err, errlen, "out of memory");
	j->error = (int)member_u64(job, "error");
	j->bs = option_size(job, global, "bs");
	if (!j->bs)
		j->bs = option_size(job, global, "blocksize");
	const char *qd = option(job, global, "iodepth");
	j->iodepth = qd ? (unsigned)atoi(qd) : 1; /* fio's default depth */
	j->read_pct = read_pct_of(j->rw ? j->rw : "read", job, global);
	j->job_runtime_ms = member_u64(job, "job_runtime");
	if (read_dir(job, "read", &j->dir[0], j->name, err, errlen) ||
	    read_dir(job, "write", &j->dir[1], j->name, err, errlen))
		return -1;
	return 0;
}

/* The host entry named hostname in r, made if new; NULL if out of memory. */
static struct fsp_fio_host *host_of(struct fsp_fio_result *r, size_t *cap, const char *hostname,
				    unsigned port)
{
	for (size_t i = 0; i < r->nhosts; i++)
		if (!strcmp(r->hosts[i].hostname, hostname) && r->hosts[i].port == port)
			return &r->hosts[i];
	if (fsp_grow((void **)&r->hosts, cap, r->nhosts + 1, sizeof(*r->hosts), 4) != 0)
		return NULL;
	struct fsp_fio_host *h = &r->hosts[r->nhosts];
	memset(h, 0, sizeof(*h));
	h->hostname = strdup(hostname);
	h->port = port;
	if (!h->hostname)
		return NULL;
	r->nhosts++;
	return h;
}

/* Servers of one name on several ports (one machine, several fio
 * --server) are told apart by the port. 0, or -1 out of memory. */
static int name_by_port(struct fsp_fio_result *r)
{
	int *dup = calloc(r->nhosts ? r->nhosts : 1, sizeof(*dup));
	if (!dup)
		return -1;
	for (size_t i = 0; i < r->nhosts; i++)
		for (size_t k = i + 1; k < r->nhosts; k++)
			if (!strcmp(r->hosts[i].hostname, r->hosts[k].hostname))
				dup[i] = dup[k] = 1;
	int rc = 0;
	for (size_t i = 0; i < r->nhosts && !rc; i++) {
		if (!dup[i])
			continue;
		size_t len = strlen(r->hosts[i].hostname) + 16;
		char *name = malloc(len);
		if (!name) {
			rc = -1;
			break;
		}
		snprintf(name, len, "%s:%u", r->hosts[i].hostname, r->hosts[i].port);
		free(r->hosts[i].hostname);
		r->hosts[i].hostname = name;
	}
	free(dup);
	return rc;
}

/* "fio-3.33" (or "fio-3.33-12-gabcdef"): its major version, -1 if not that shape. */
static int fio_major(const char *v)
{
	if (strncmp(v, "fio-", 4) != 0)
		return -1;
	char *end;
	long major = strtol(v + 4, &end, 10);
	return end == v + 4 || *end != '.' ? -1 : (int)major;
}

static int read_result(struct json_object *root, const char *name, struct fsp_fio_result *r,
		       char *err, size_t errlen)
{
	if (!json_object_is_type(root, json_type_object))
		return fsp_set_err(err, errlen, "%s: JSON but not fio's (not an object)", name);
	const char *version = member_str(root, "fio version");
	if (!version)
		return fsp_set_err(err, errlen, "%s: JSON but not fio's (no \"fio version\")",
				   name);
	if (fio_major(version) != FSP_FIO_MAJOR)
		return fsp_set_err(err, errlen, "%s: fio version '%s' is not supported "
				   "(fio %d.x)", name, version, FSP_FIO_MAJOR);
	r->version = strdup(version);
	r->timestamp = member_u64(root, "timestamp");
	struct json_object *global = member(root, "global options");
	/* fio --client: "client_stats", an entry per job and host (and, of
	 * several hosts, their sum "All clients"); fio alone: "jobs" */
	struct json_object *jobs = member(root, "client_stats");
	int client = jobs != NULL;
	if (!jobs)
		jobs = member(root, "jobs");
	if (!jobs || !json_object_is_type(jobs, json_type_array))
		return fsp_set_err(err, errlen, "%s: fio's JSON without \"jobs\" or "
				   "\"client_stats\"", name);
	size_t hcap = 0;
	size_t *jcap = NULL; /* per host, parallel to r->hosts */
	size_t jcapn = 0;
	int rc = 0;
	size_t n = json_object_array_length(jobs);
	for (size_t i = 0; i < n && !rc; i++) {
		struct json_object *job = json_object_array_get_idx(jobs, i);
		const char *jobname = member_str(job, "jobname");
		if (!jobname) {
			rc = fsp_set_err(err, errlen, "%s: job %zu has no \"jobname\"", name, i);
			break;
		}
		if (!strncmp(jobname, FSP_FIO_IDLE_PREFIX, strlen(FSP_FIO_IDLE_PREFIX)) ||
		    (client && !strcmp(jobname, "All clients")))
			continue;
		const char *hostname = client ? member_str(job, "hostname") : "";
		if (!hostname) {
			rc = fsp_set_err(err, errlen, "%s: client_stats entry '%s' has no "
					 "\"hostname\"", name, jobname);
			break;
		}
		struct fsp_fio_host *h = host_of(r, &hcap, hostname,
						 client ? (unsigned)member_u64(job, "port") : 0);
		size_t hi = h ? (size_t)(h - r->hosts) : 0;
		if (!h || fsp_grow((void **)&jcap, &jcapn, r->nhosts, sizeof(*jcap), 4) != 0) {
			rc = fsp_set_err(err, errlen, "out of memory");
			break;
		}
		if (hi + 1 == r->nhosts && !h->njobs)
			jcap[hi] = 0;
		if (fsp_grow((void **)&h->jobs, &jcap[hi], h->njobs + 1, sizeof(*h->jobs), 8) != 0) {
			rc = fsp_set_err(err, errlen, "out of memory");
			break;
		}
		char why[400];
		struct fsp_fio_job *j = &h->jobs[h->njobs++];
		if (read_job(job, global, j, why, sizeof(why)) != 0)
			rc = fsp_set_err(err, errlen, "%s: %s", name, why);
	}
	free(jcap);
	if (!rc && name_by_port(r) != 0)
		rc = fsp_set_err(err, errlen, "out of memory");
	if (!rc && !r->nhosts)
		rc = fsp_set_err(err, errlen, "%s: fio's JSON with no job", name);
	return rc;
}

int fsp_fio_json_parse(const char *text, size_t len, const char *name,
		       struct fsp_fio_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	/* fio may print a note before its JSON ("fio: ..."): from the first
	 * line that opens an object */
	size_t at = 0;
	while (at < len && text[at] != '{') {
		const char *nl = memchr(text + at, '\n', len - at);
		if (!nl) {
			at = len;
			break;
		}
		at = (size_t)(nl - text) + 1;
	}
	if (at == len)
		return fsp_set_err(err, errlen, "%s: not JSON (no object in it)", name);
	if (len - at > INT_MAX) /* json-c takes an int length */
		return fsp_set_err(err, errlen, "%s: %zu bytes: too large for a fio result",
				   name, len);
	struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!tok)
		return fsp_set_err(err, errlen, "out of memory");
	struct json_object *root = json_tokener_parse_ex(tok, text + at, (int)(len - at));
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = at + json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!root || jerr != json_tokener_success) {
		json_object_put(root);
		if (jerr == json_tokener_continue)
			return fsp_set_err(err, errlen, "%s: not JSON (it ends at byte %zu inside "
					   "an object: truncated?)", name, len);
		return fsp_set_err(err, errlen, "%s: not JSON (at byte %zu: %s)", name, end,
				   json_tokener_error_desc(jerr));
	}
	int rc = read_result(root, name, r, err, errlen);
	json_object_put(root);
	if (rc) {
		fsp_fio_result_free(r);
		return -1;
	}
	return 0;
}

int fsp_fio_json_load(const char *path, struct fsp_fio_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	FILE *f = fopen(path, "rb");
	if (!f)
		return fsp_set_err(err, errlen, "%s: %s", path, strerror(errno));
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (fsp_grow((void **)&buf, &cap, len + 65536, 1, 65536) != 0) {
			rc = fsp_set_err(err, errlen, "%s: out of memory", path);
			break;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f))
				rc = fsp_set_err(err, errlen, "%s: %s", path, strerror(errno));
			break;
		}
	}
	fclose(f);
	if (!rc)
		rc = fsp_fio_json_parse(buf, len, path, r, err, errlen);
	free(buf);
	return rc;
}

const struct fsp_fio_host *fsp_fio_host_of(const struct fsp_fio_result *r, const char *hostname,
					   unsigned port)
{
	size_t len = strlen(hostname);
	for (size_t i = 0; i < r->nhosts; i++) {
		const struct fsp_fio_host *h = &r->hosts[i];
		if (h->port != port || strncmp(h->hostname, hostname, len))
			continue;
		/* "NAME", or "NAME:PORT" when two servers share the name */
		if (!h->hostname[len] || h->hostname[len] == ':')
			return h;
	}
	return NULL;
}

void fsp_fio_result_free(struct fsp_fio_result *r)
{
	for (size_t i = 0; i < r->nhosts; i++) {
		for (size_t k = 0; k < r->hosts[i].njobs; k++)
			job_free(&r->hosts[i].jobs[k]);
		free(r->hosts[i].jobs);
		free(r->hosts[i].hostname);
	}
	free(r->hosts);
	free(r->version);
	memset(r, 0, sizeof(*r));
}

/* ---- storing ------------------------------------------------------------------ */

static const char *access_of(const char *rw)
{
	return rw && !strncmp(rw, "rand", 4) ? "random" : "seq";
}

/* The engine stores total = backing and a layer share of 0 per IO (its
 * whole time is outside fsprism); an imported IO is stored the same way,
 * so stats, compare and the report read it as an engine run's. */
static int save_dir(struct fsp_store *st, int64_t run, int step, int op,
		    const struct fsp_fio_dir *d)
{
	if (!d->hist)
		return 0;
	struct fsp_hist *zero = malloc(sizeof(*zero));
	if (!zero)
		return -1;
	fsp_hist_init(zero);
	zero->count = d->hist->count;
	zero->min = zero->max = 0;
	zero->buckets[0] = d->hist->count;
	int rc = fsp_store_save_hist(st, run, step, op, FSP_LAYER_TOTAL, d->hist, d->bytes, 0, 0) ||
		 fsp_store_save_hist(st, run, step, op, FSP_LAYER_BACKING, d->hist, d->bytes, 0, 0) ||
		 fsp_store_save_hist(st, run, step, op, FSP_LAYER_LAYER, zero, d->bytes, 0, 0) ||
		 fsp_store_save_hist(st, run, step, op, FSP_LAYER_EMU, zero, d->bytes, 0, 0);
	free(zero);
	return rc ? -1 : 0;
}

static int64_t store_host(struct fsp_store *st, const struct fsp_fio_result *r,
			  const struct fsp_fio_host *h, const struct fsp_fio_import *o,
			  const char *label, int64_t parent)
{
	struct fsp_run_info info = {
		.kind = "run", .options = o->options, .record_mode = "hist",
		.parent = parent, .label = label,
		.host = *h->hostname ? h->hostname : NULL,
	};
	int64_t run = fsp_store_begin_run(st, &info);
	if (run < 0)
		return -1;
	if (fsp_store_set_attr(st, run, "fio.version", r->version) ||
	    (o->source && fsp_store_set_attr(st, run, "fio.source", o->source)) ||
	    (*h->hostname && fsp_store_set_attr(st, run, "fio.hostname", h->hostname)) ||
	    fsp_store_set_attr_u64(st, run, "fio.timestamp", r->timestamp) ||
	    /* what stats says of the layers per IO: fio has no block trace */
	    fsp_store_set_attr(st, run, "block.traced", "0") ||
	    fsp_store_set_attr(st, run, "block.untraced_reason", "a result imported from fio"))
		return -1;
	int from_lat = -1, step = 0;
	uint64_t t = 1; /* fio's runtimes laid end to end */
	for (size_t k = 0; k < h->njobs; k++, step++) {
		const struct fsp_fio_job *j = &h->jobs[k];
		uint64_t busy = j->job_runtime_ms * FSP_MS;
		struct fsp_step_row row = {
			.step = step, .label = j->name, .access = access_of(j->rw),
			.pattern = NULL, .block_size = (int64_t)j->bs, .qd = j->iodepth,
			.read_pct = j->read_pct,
			.started_ns = t, .ended_ns = t + busy, .busy_ns = busy,
			.read_ios = j->dir[0].ios, .write_ios = j->dir[1].ios,
			.read_bytes = j->dir[0].bytes, .write_bytes = j->dir[1].bytes,
		};
		t += busy;
		if (fsp_store_add_step(st, run, &row) ||
		    save_dir(st, run, step, FSP_OP_READ, &j->dir[0]) ||
		    save_dir(st, run, step, FSP_OP_WRITE, &j->dir[1]))
			return -1;
		for (int d = 0; d < 2; d++)
			if (j->dir[d].hist)
				from_lat = from_lat < 0 ? j->dir[d].from_lat
							: from_lat && j->dir[d].from_lat;
		if (j->error) {
			char key[64];
			snprintf(key, sizeof(key), "fio.error.%d", step);
			if (fsp_store_set_attr_u64(st, run, key, (uint64_t)j->error))
				return -1;
		}
	}
	if (from_lat >= 0 &&
	    fsp_store_set_attr(st, run, "fio.latency", from_lat ? "lat" : "clat"))
		return -1;
	if (fsp_store_end_run(st, run, 0, 0))
		return -1;
	return run;
}

int64_t fsp_fio_store(struct fsp_store *st, const struct fsp_fio_result *r,
		      const struct fsp_fio_import *o, int64_t *runs, char *err, size_t errlen)
{
	if (!r->nhosts) {
		fsp_set_err(err, errlen, "no job to store");
		return -1;
	}
	if (fsp_store_tx_begin(st) != 0) {
		fsp_set_err(err, errlen, "cannot store: %s", fsp_store_errmsg(st));
		return -1;
	}
	int64_t top = o->parent, parent = o->parent;
	if (r->nhosts > 1 && !o->parent) {
		struct fsp_run_info info = {
			.kind = "fio-clients", .options = o->options, .parent = o->parent,
			.label = o->label,
		};
		top = parent = fsp_store_begin_run(st, &info);
		if (parent < 0 || fsp_store_set_attr(st, parent, "fio.version", r->version) ||
		    (o->source && fsp_store_set_attr(st, parent, "fio.source", o->source)) ||
		    fsp_store_set_attr_u64(st, parent, "fio.hosts", r->nhosts) ||
		    fsp_store_end_run(st, parent, 0, 0))
			goto fail;
	}
	for (size_t i = 0; i < r->nhosts; i++) {
		const struct fsp_fio_host *h = &r->hosts[i];
		const char *label = r->nhosts > 1 ? h->hostname : o->label ? o->label : h->hostname;
		int64_t run = store_host(st, r, h, o, *label ? label : NULL, parent);
		if (run < 0)
			goto fail;
		if (runs)
			runs[i] = run;
		if (r->nhosts == 1)
			top = run;
	}
	if (fsp_store_tx_commit(st) != 0) {
		fsp_set_err(err, errlen, "cannot store: %s", fsp_store_errmsg(st));
		return -1;
	}
	return top;
fail:
	fsp_set_err(err, errlen, "cannot store: %s", fsp_store_errmsg(st));
	fsp_store_tx_rollback(st);
	return -1;
}
