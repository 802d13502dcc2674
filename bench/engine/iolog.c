/*
 * iolog.c - fio's iolog v2 and v3 parsed into a trace (iolog.h).
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "bench/engine/iolog.h"
#include "src/base/err.h"

int fsp_iolog_is(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char head[16] = "";
	size_t n = fread(head, 1, 12, f);
	fclose(f);
	return n == 12 && !memcmp(head, "fio version ", 12);
}

/* a whole decimal number in s, or -1 */
static int number(const char *s, uint64_t *v)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long x = strtoull(s, &end, 10);
	if (*end || errno)
		return -1;
	*v = x;
	return 0;
}

static int action_op(const char *a)
{
	static const struct {
		const char *name;
		int op;
	} acts[] = { { "read", FSP_IOTRACE_READ }, { "write", FSP_IOTRACE_WRITE },
		     { "sync", FSP_IOTRACE_FSYNC }, { "datasync", FSP_IOTRACE_DATASYNC },
		     { "trim", FSP_IOTRACE_TRIM } };
	for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
		if (!strcmp(a, acts[i].name))
			return acts[i].op;
	return -1;
}

#define MAX_FIELDS 6

int fsp_iolog_parse(FILE *f, const char *name, struct fsp_iotrace *t, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned long lineno = 0;
	int version = 0, rc = -1;
	uint64_t wait_ns = 0; /* v2: the sum of the waits so far */
	/* per file: added, opened */
	uint8_t *state = NULL;
	size_t nstate = 0;
#define FAIL(...)                                                                      \
	do {                                                                           \
		char m_[200];                                                          \
		snprintf(m_, sizeof m_, __VA_ARGS__);                                  \
		fsp_set_err(err, errlen, "%s:%lu: %s", name, lineno, m_);              \
		goto out;                                                              \
	} while (0)
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (memchr(line, 0, (size_t)len))
			FAIL("a NUL byte: not a text iolog");
		if (lineno == 1) {
			if (!strcmp(line, "fio version 2 iolog"))
				version = 2;
			else if (!strcmp(line, "fio version 3 iolog"))
				version = 3;
			else if (!strncmp(line, "fio version ", 12))
				FAIL("iolog version '%.20s' is not supported (2 and 3 are)", line + 12);
			else
				FAIL("not a fio iolog (the first line is not 'fio version 2 iolog' or 'fio version 3 iolog')");
			continue;
		}
		char *fld[MAX_FIELDS + 1], *save = NULL;
		int nf = 0;
		for (char *p = strtok_r(line, " \t", &save); p; p = strtok_r(NULL, " \t", &save))
			if (nf <= MAX_FIELDS)
				fld[nf++] = p;
		if (!nf)
			continue; /* an empty line */
		uint64_t ts_us = 0;
		char **w = fld;
		int nw = nf;
		if (version == 3) {
			if (number(fld[0], &ts_us))
				FAIL("'%.40s' is not a timestamp (microseconds; version 3 starts every line with one)",
				     fld[0]);
			w++;
			nw--;
		}
		if (nw != 2 && nw != 4)
			FAIL("%d fields: expected '%sFILE ACTION' or '%sFILE ACTION OFFSET LENGTH'",
			     nf, version == 3 ? "TIME " : "", version == 3 ? "TIME " : "");
		const char *file = w[0], *act = w[1];
		if (nw == 2) {
			int64_t id = fsp_iotrace_file(t, file);
			if (id < 0)
				FAIL("out of memory");
			if ((size_t)id >= nstate) {
				uint8_t *p = realloc(state, (size_t)id + 16);
				if (!p)
					FAIL("out of memory");
				memset(p + nstate, 0, (size_t)id + 16 - nstate);
				state = p;
				nstate = (size_t)id + 16;
			}
			if (!strcmp(act, "add"))
				state[id] = 1;
			else if (!strcmp(act, "open") && state[id])
				state[id] = 2;
			else if (!strcmp(act, "open"))
				FAIL("%s is opened before it was added", file);
			else if (!strcmp(act, "close") && state[id] == 2)
				state[id] = 1;
			else if (!strcmp(act, "close"))
				FAIL("%s is closed but not open", file);
			else
				FAIL("unknown file action '%.20s' (add, open or close)", act);
			continue;
		}
		uint64_t off, n;
		if (number(w[2], &off))
			FAIL("offset '%.40s' is not a number", w[2]);
		if (number(w[3], &n))
			FAIL("length '%.40s' is not a number", w[3]);
		if (!strcmp(act, "wait")) {
			if (version == 3)
				FAIL("'wait' is not allowed in version 3 (its times say when)");
			if (off >= 100) /* as fio: shorter waits are discarded */
				wait_ns += off * 1000;
			continue;
		}
		int op = action_op(act);
		if (op < 0)
			FAIL("unknown action '%.20s' (read, write, sync, datasync, trim%s)", act,
			     version == 2 ? ", wait" : "");
		int64_t id = -1;
		for (size_t i = 0; i < t->nfiles; i++)
			if (!strcmp(t->file[i].name, file))
				id = (int64_t)i;
		if (id < 0 || (size_t)id >= nstate || !state[id])
			FAIL("%s was not added ('%s add' first)", file, file);
		if (state[id] != 2)
			FAIL("%s is not open", file);
		if (n > UINT32_MAX || ((op == FSP_IOTRACE_READ || op == FSP_IOTRACE_WRITE) && !n))
			FAIL("length %" PRIu64 " is out of range (1 byte to 4 GiB)", n);
		if (off > (UINT64_C(1) << 60))
			FAIL("offset %" PRIu64 " is out of range", off);
		if (op == FSP_IOTRACE_FSYNC || op == FSP_IOTRACE_DATASYNC)
			off = n = 0;
		struct fsp_iotrace_io io = {
			.issue_ns = version == 3 ? ts_us * 1000 : wait_ns, .offset = off,
			.len = (uint32_t)n, .file = (uint32_t)id, .op = (uint8_t)op };
		if (fsp_iotrace_add(t, &io))
			FAIL("out of memory");
	}
	if (ferror(f)) {
		fsp_set_err(err, errlen, "%s: read error: %s", name, strerror(errno));
		goto out;
	}
	if (!version) {
		fsp_set_err(err, errlen, "%s:1: empty file: not a fio iolog", name);
		goto out;
	}
	t->has_complete = 0;
	fsp_iotrace_sort(t);
	rc = 0;
out:
	free(line);
	free(state);
	return rc;
#undef FAIL
}

int fsp_iolog_load(const char *path, struct fsp_iotrace *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fsp_set_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	int rc = fsp_iolog_parse(f, path, t, err, errlen);
	fclose(f);
	return rc;
}

/* A name fio can read back from one field of a line. */
static int iolog_name_ok(const char *name)
{
	return name && *name && !strpbrk(name, " \t\r\n");
}

int fsp_iolog_write(FILE *f, const struct fsp_iotrace *t, const char *device)
{
	static const char *const action[FSP_IOTRACE__COUNT] = {
		[FSP_IOTRACE_READ] = "read", [FSP_IOTRACE_WRITE] = "write",
		[FSP_IOTRACE_FSYNC] = "sync", [FSP_IOTRACE_DATASYNC] = "datasync",
		[FSP_IOTRACE_TRIM] = "trim",
	};
	int any_device = 0;
	for (size_t i = 0; i < t->nfiles; i++)
		if (!iolog_name_ok(t->file[i].name))
			return -1;
	for (size_t i = 0; i < t->n; i++)
		any_device |= t->io[i].file == FSP_IOTRACE_DEVICE;
	if (any_device && !iolog_name_ok(device))
		return -1;
	fprintf(f, "fio version 3 iolog\n");
	for (size_t i = 0; i < t->nfiles; i++)
		fprintf(f, "0 %s add\n", t->file[i].name);
	if (any_device)
		fprintf(f, "0 %s add\n", device);
	for (size_t i = 0; i < t->nfiles; i++)
		fprintf(f, "0 %s open\n", t->file[i].name);
	if (any_device)
		fprintf(f, "0 %s open\n", device);
	uint64_t last_us = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct fsp_iotrace_io *io = &t->io[i];
		const char *name = io->file == FSP_IOTRACE_DEVICE ? device : t->file[io->file].name;
		last_us = io->issue_ns / 1000;
		fprintf(f, "%" PRIu64 " %s %s %" PRIu64 " %" PRIu32 "\n", last_us, name,
			io->op < FSP_IOTRACE__COUNT ? action[io->op] : "read", io->offset, io->len);
	}
	for (size_t i = 0; i < t->nfiles; i++)
		fprintf(f, "%" PRIu64 " %s close\n", last_us, t->file[i].name);
	if (any_device)
		fprintf(f, "%" PRIu64 " %s close\n", last_us, device);
	return 0;
}
