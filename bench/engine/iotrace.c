/*
 * iotrace.c - the trace model and its schedule (iotrace.h).
 */
#include <stdlib.h>
#include <string.h>
#include "bench/engine/iotrace.h"
#include "src/base/cmp.h"
#include "src/base/grow.h"

int fsp_iotrace_add(struct fsp_iotrace *t, const struct fsp_iotrace_io *io)
{
	if (fsp_grow((void **)&t->io, &t->cap, t->n + 1, sizeof *t->io, 1024))
		return -1;
	t->io[t->n++] = *io;
	uint64_t end = io->offset + io->len;
	if (io->op != FSP_IOTRACE_READ && io->op != FSP_IOTRACE_WRITE)
		end = 0;
	if (io->file == FSP_IOTRACE_DEVICE) {
		if (end > t->device_size)
			t->device_size = end;
	} else if (io->file < t->nfiles) {
		struct fsp_iotrace_file *f = &t->file[io->file];
		if (end > f->size)
			f->size = end;
		if (io->op == FSP_IOTRACE_READ && end > f->read_end)
			f->read_end = end;
	}
	return 0;
}

int64_t fsp_iotrace_file(struct fsp_iotrace *t, const char *name)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (!strcmp(t->file[i].name, name))
			return (int64_t)i;
	if (fsp_grow((void **)&t->file, &t->fcap, t->nfiles + 1, sizeof *t->file, 16))
		return -1;
	char *s = strdup(name);
	if (!s)
		return -1;
	t->file[t->nfiles] = (struct fsp_iotrace_file){ .name = s };
	return (int64_t)t->nfiles++;
}

void fsp_iotrace_free(struct fsp_iotrace *t)
{
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->file[i].name);
	free(t->file);
	free(t->io);
	memset(t, 0, sizeof *t);
}

static int by_issue(const void *a, const void *b)
{
	const struct fsp_iotrace_io *x = a, *y = b;
	return FSP_CMP(x->issue_ns, y->issue_ns);
}

/* qsort is not stable: sort (time, position) pairs, then permute */
struct key {
	uint64_t ns;
	size_t i;
};

static int by_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	return FSP_CMP(x->ns, y->ns) ?: FSP_CMP(x->i, y->i);
}

void fsp_iotrace_sort(struct fsp_iotrace *t)
{
	if (!t->n)
		return;
	struct key *k = malloc(t->n * sizeof *k);
	struct fsp_iotrace_io *s = malloc(t->n * sizeof *s);
	if (!k || !s) {
		/* out of memory: an unstable sort still orders by time */
		free(k);
		free(s);
		qsort(t->io, t->n, sizeof *t->io, by_issue);
	} else {
		for (size_t i = 0; i < t->n; i++)
			k[i] = (struct key){ t->io[i].issue_ns, i };
		qsort(k, t->n, sizeof *k, by_key);
		for (size_t i = 0; i < t->n; i++)
			s[i] = t->io[k[i].i];
		memcpy(t->io, s, t->n * sizeof *s);
		free(k);
		free(s);
	}
	uint64_t t0 = t->io[0].issue_ns;
	for (size_t i = 0; i < t->n; i++) {
		t->io[i].issue_ns -= t0;
		t->io[i].complete_ns = t->io[i].complete_ns > t0 + t->io[i].issue_ns ?
			t->io[i].complete_ns - t0 : t->io[i].issue_ns;
	}
}

const char *fsp_iotrace_op_name(int op)
{
	static const char *names[FSP_IOTRACE__COUNT] = { "read", "write", "fsync", "datasync",
						       "trim" };
	return op >= 0 && op < FSP_IOTRACE__COUNT ? names[op] : "?";
}

uint64_t fsp_iotrace_schedule(const struct fsp_iotrace *t, uint64_t max_idle_ns, double scale,
			    uint64_t *at)
{
	uint64_t shift = 0, busy_until = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct fsp_iotrace_io *e = &t->io[i];
		if (i && e->issue_ns > busy_until && e->issue_ns - busy_until > max_idle_ns)
			shift += e->issue_ns - busy_until - max_idle_ns;
		uint64_t end = t->has_complete ? e->complete_ns : e->issue_ns;
		if (end < e->issue_ns)
			end = e->issue_ns;
		if (!i || end > busy_until)
			busy_until = end;
		uint64_t x = e->issue_ns - shift;
		at[i] = scale == 1.0 ? x : (uint64_t)((double)x * scale + 0.5);
	}
	return shift;
}
