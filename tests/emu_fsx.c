/*
 * emu_fsx.c - a file exerciser with an in-memory model, in the spirit of
 * fsx, for the copy-on-write / journaling emulation.
 *
 *   emu_fsx run DIR [options]        random operations on N files in DIR,
 *                                    every read checked against the model,
 *                                    every file verified at the end
 *   emu_fsx verify STATE DIR         the files in DIR equal the model saved
 *                                    by `run --state STATE` (after a remount)
 *   emu_fsx verify-crash LOG DIR [--allow-loss]
 *                                    after a crash (daemon killed, store
 *                                    remounted), the files in DIR are
 *                                    consistent with `run --crash-log LOG`
 *
 * Operations: pwrite / pread at random offsets and lengths (with --direct:
 * O_DIRECT and 4 KiB-aligned buffers, offsets and lengths), truncate up and
 * down, fallocate (0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE,
 * ZERO_RANGE|KEEP_SIZE), copy_file_range between (or within) files,
 * fsync / fdatasync, dropping the page cache and reopening.
 *
 * --mix opens every file twice, buffered and then O_DIRECT (so the kernel's
 * write-back of mapped pages goes through the O_DIRECT handle, the one it
 * finds first), and each read or write picks one: O_DIRECT ones aligned,
 * buffered ones anywhere, so file sizes end anywhere while O_DIRECT IO runs
 * up to that end. --mmap adds writes through a shared mapping of the file
 * (MAP_SHARED over the O_DIRECT handle with --mix or --direct), often
 * ending at the file's last, partial page, followed by msync(MS_SYNC) (or,
 * one time in four, only munmap, leaving the write-back to the kernel).
 * Mapped writes are "write" operations in the logs.
 *
 * Data are traceable: every 16-byte unit written by step K at file offset
 * U holds {K, file, U/16, checksum(seed, K, file, U)}, so a mismatch report
 * can say which step wrote the expected data and which step (if any) wrote
 * what was found instead. The state file and the crash log hold the same
 * text: a header, one line per state-changing operation (written before
 * the operation is issued), "failed ID ERRNO" for an operation that was
 * refused and changed nothing, and "synced ID FILE" after an fsync or
 * fdatasync returned. The model is rebuilt by replaying those lines; the
 * data themselves follow from the seed.
 *
 * Crash rule checked by verify-crash, per 4 KiB block of each file: a block
 * not changed since the last fsync of its file holds exactly the fsync'd
 * content; a block changed since holds the fsync'd content or one of the
 * contents it had after an operation since (the operation in flight when
 * the daemon died counts, done or not); the size is likewise one of the
 * sizes since the last fsync. A block that breaks the rule but holds
 * content it had at some earlier point (or zeros it held once) is "lost";
 * anything else is "garbage". A block the file system refuses with EIO is
 * "refused". With --allow-loss only garbage fails (no-journal mode, where
 * the loss must be reported by the mount instead).
 *
 * Exit status: 0 ok, 1 verification failed, 2 usage or setup error, 3 the
 * mount went away (ENOTCONN, ECONNABORTED, EIO, ENODEV) during a run, 4 an
 * operation failed unexpectedly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLK 4096u
#define UNIT 16u
#define MAX_FILES 64
#define MAX_SIZE_LIMIT (256ull << 20) /* unit index must fit 24 bits */

enum { EX_OK = 0, EX_MISMATCH = 1, EX_USAGE = 2, EX_GONE = 3, EX_ERROR = 4 };

enum op_type {
	OP_WRITE, OP_TRUNCATE, OP_FALLOCATE, OP_COPY, OP_FSYNC, OP_FDATASYNC,
	OP_READ, OP_DROP, OP_REOPEN, OP_MWRITE, OP_NTYPES
};
static const char *const op_names[OP_NTYPES] = {
	"write", "truncate", "fallocate", "copy", "fsync", "fdatasync",
	"read", "drop", "reopen", "mwrite"
};

/* How a read or write reaches the file (--mix: buffered or O_DIRECT). */
enum { VIA_BUF, VIA_DIRECT };

/* One operation. Offsets and lengths in bytes; for OP_TRUNCATE len is the
 * new size; for OP_COPY file/off is the destination, src/soff the source. */
struct op {
	uint32_t id;
	int type;
	int file, src;
	int mode;
	int via;   /* VIA_*, for reads and writes */
	uint64_t off, len, soff;
};

/* The model of one file: its bytes (zero beyond size) and, per byte, the
 * step whose data the byte holds (for reports; 0 = never written). */
struct mfile {
	uint64_t size;
	uint8_t *data;
	uint32_t *writer;
};

struct model {
	uint64_t seed;
	int nfiles;
	uint64_t max_size;
	uint64_t cap; /* bytes allocated per file (>= max_size) */
	int direct;
	struct mfile f[MAX_FILES];
	struct op *ops; /* state-changing operations, in order */
	size_t nops, ops_cap;
};

/* ------------------------------------------------------------------ */
/* small helpers */

static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int status, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("emu_fsx: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		die(EX_USAGE, "out of memory");
	return p;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state += 0x9e3779b97f4a7c15ull;
	return mix64(rng_state);
}
/* uniform in [0, n) (n > 0) */
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

static uint64_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		die(EX_USAGE, "bad size '%s'", s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		die(EX_USAGE, "bad size '%s'", s);
	return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A mounted FUSE file system whose daemon died answers ENOTCONN (new
 * requests) or ECONNABORTED (requests in flight); EIO and ENODEV are what
 * other layers say when the device underneath went away. */
static int mount_gone(int e)
{
	return e == ENOTCONN || e == ECONNABORTED || e == EIO || e == ENODEV;
}

/* ------------------------------------------------------------------ */
/* traceable data */

static uint64_t unit_check(uint64_t seed, uint32_t id, uint32_t w1)
{
	return mix64(seed ^ mix64(((uint64_t)id << 32) | w1));
}

static void stamp_unit(uint64_t seed, uint32_t id, int file, uint64_t unit_off, uint8_t out[UNIT])
{
	uint32_t w1 = (uint32_t)(file & 0xff) | (uint32_t)((unit_off / UNIT) << 8);
	uint64_t chk = unit_check(seed, id, w1);
	put_le32(out, id);
	put_le32(out + 4, w1);
	put_le32(out + 8, (uint32_t)chk);
	put_le32(out + 12, (uint32_t)(chk >> 32));
}

/* The bytes step id writes at [off, off+len) of file. */
static void gen_data(uint64_t seed, uint32_t id, int file, uint64_t off, uint64_t len, uint8_t *out)
{
	uint8_t u[UNIT];
	uint64_t cur = UINT64_MAX;
	for (uint64_t p = off; p < off + len; p++) {
		uint64_t uo = p & ~(uint64_t)(UNIT - 1);
		if (uo != cur) {
			stamp_unit(seed, id, file, uo, u);
			cur = uo;
		}
		out[p - off] = u[p % UNIT];
	}
}

/* Is the 16 bytes at p a valid stamp? */
static int decode_unit(uint64_t seed, const uint8_t *p, uint32_t *id, int *file, uint64_t *off)
{
	uint32_t i = get_le32(p), w1 = get_le32(p + 4);
	uint64_t chk = (uint64_t)get_le32(p + 8) | (uint64_t)get_le32(p + 12) << 32;
	if (i == 0 || chk != unit_check(seed, i, w1))
		return 0;
	*id = i;
	*file = (int)(w1 & 0xff);
	*off = (uint64_t)(w1 >> 8) * UNIT;
	return 1;
}

/* Describe what buf[pos..] (len bytes valid in buf) holds, for a report:
 * zeros, a stamp of some step (possibly shifted by a copy), or neither. */
static void describe_found(uint64_t seed, const uint8_t *buf, uint64_t len, uint64_t pos,
			   char *out, size_t outlen)
{
	uint64_t end = pos + 2 * UNIT < len ? pos + 2 * UNIT : len;
	int zeros = 1;
	for (uint64_t i = pos; i < end && i < pos + UNIT; i++)
		if (buf[i])
			zeros = 0;
	if (zeros) {
		snprintf(out, outlen, "zeros");
		return;
	}
	uint64_t start = pos >= UNIT ? pos - UNIT + 1 : 0;
	for (uint64_t s = start; s + UNIT <= len && s <= pos; s++) {
		uint32_t id;
		int file;
		uint64_t off;
		if (decode_unit(seed, buf + s, &id, &file, &off)) {
			snprintf(out, outlen, "data of step #%" PRIu32 " for file %d offset %" PRIu64,
				 id, file, off + (pos - s));
			return;
		}
	}
	char hex[3 * UNIT + 1];
	size_t n = 0;
	for (uint64_t i = pos; i < pos + UNIT && i < len; i++)
		n += (size_t)snprintf(hex + n, sizeof(hex) - n, "%02x", buf[i]);
	hex[n] = '\0';
	snprintf(out, outlen, "unrecognised bytes %s (no step wrote them)", hex);
}

/* ------------------------------------------------------------------ */
/* the model */

static void model_init(struct model *m, uint64_t cap)
{
	m->cap = (cap + BLK - 1) / BLK * BLK;
	for (int i = 0; i < m->nfiles; i++) {
		m->f[i].size = 0;
		m->f[i].data = xcalloc(m->cap, 1);
		m->f[i].writer = xcalloc(m->cap, sizeof(uint32_t));
	}
}

static void op_desc(const struct op *o, char *out, size_t len)
{
	const char *name = op_names[o->type];
	switch (o->type) {
	case OP_WRITE:
	case OP_READ:
	case OP_MWRITE:
		snprintf(out, len, "#%" PRIu32 " %s%s f%d off=%" PRIu64 " len=%" PRIu64, o->id, name,
			 o->via == VIA_DIRECT ? "(direct)" : "", o->file, o->off, o->len);
		break;
	case OP_TRUNCATE:
		snprintf(out, len, "#%" PRIu32 " truncate f%d size=%" PRIu64, o->id, o->file, o->len);
		break;
	case OP_FALLOCATE: {
		const char *mname = o->mode == 0 ? "alloc" :
			o->mode == FALLOC_FL_KEEP_SIZE ? "keep-size" :
			o->mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) ? "punch-hole" :
			o->mode == FALLOC_FL_ZERO_RANGE ? "zero-range" : "zero-range|keep-size";
		snprintf(out, len, "#%" PRIu32 " fallocate(%s) f%d off=%" PRIu64 " len=%" PRIu64,
			 o->id, mname, o->file, o->off, o->len);
		break;
	}
	case OP_COPY:
		snprintf(out, len, "#%" PRIu32 " copy_file_range f%d off=%" PRIu64 " <- f%d off=%" PRIu64
			 " len=%" PRIu64, o->id, o->file, o->off, o->src, o->soff, o->len);
		break;
	default:
		snprintf(out, len, "#%" PRIu32 " %s f%d", o->id, name, o->file);
	}
}

static void m_zero(struct mfile *f, uint64_t from, uint64_t to, uint32_t id)
{
	if (to <= from)
		return;
	memset(f->data + from, 0, to - from);
	for (uint64_t p = from; p < to; p++)
		f->writer[p] = id;
}

/* Apply a state-changing operation to the model (it succeeded, or might
 * have). Returns the byte range whose content or visibility changed. */
static void model_apply(struct model *m, const struct op *o, uint64_t *lo, uint64_t *hi)
{
	struct mfile *f = &m->f[o->file];
	uint64_t old = f->size, end = o->off + o->len;
	*lo = *hi = 0;
	switch (o->type) {
	case OP_WRITE:
	case OP_MWRITE: /* inside the file: the same as a write */
		gen_data(m->seed, o->id, o->file, o->off, o->len, f->data + o->off);
		for (uint64_t p = o->off; p < end; p++)
			f->writer[p] = o->id;
		if (end > f->size)
			f->size = end;
		*lo = o->off < old ? o->off : old;
		*hi = end;
		break;
	case OP_TRUNCATE:
		if (o->len < old)
			m_zero(f, o->len, old, o->id);
		f->size = o->len;
		*lo = o->len < old ? o->len : old;
		*hi = o->len < old ? old : o->len;
		break;
	case OP_FALLOCATE: {
		int keep = o->mode & FALLOC_FL_KEEP_SIZE;
		if (o->mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
			m_zero(f, o->off, keep && end > old ? (o->off < old ? old : o->off) : end, o->id);
		if (!keep && end > f->size)
			f->size = end;
		*lo = o->off < old ? o->off : old;
		*hi = end > old ? end : old;
		break;
	}
	case OP_COPY: {
		struct mfile *s = &m->f[o->src];
		memmove(f->data + o->off, s->data + o->soff, o->len);
		memmove(f->writer + o->off, s->writer + o->soff, o->len * sizeof(uint32_t));
		if (end > f->size)
			f->size = end;
		*lo = o->off < old ? o->off : old;
		*hi = end;
		break;
	}
	default:
		break;
	}
}

static void model_push(struct model *m, const struct op *o)
{
	if (m->nops == m->ops_cap) {
		m->ops_cap = m->ops_cap ? 2 * m->ops_cap : 1024;
		m->ops = realloc(m->ops, m->ops_cap * sizeof(*m->ops));
		if (!m->ops)
			die(EX_USAGE, "out of memory");
	}
	m->ops[m->nops++] = *o;
}

static const struct op *model_find(const struct model *m, uint32_t id)
{
	size_t lo = 0, hi = m->nops;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->ops[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nops && m->ops[lo].id == id ? &m->ops[lo] : NULL;
}

/* Print the operations that set file f at offset pos (newest last). */
static void print_history(const struct model *m, int file, uint64_t pos)
{
	size_t idx[8], n = 0;
	for (size_t i = 0; i < m->nops; i++) {
		const struct op *o = &m->ops[i];
		if (o->file != file)
			continue;
		int hit = 0;
		switch (o->type) {
		case OP_WRITE: case OP_MWRITE: case OP_COPY: case OP_FALLOCATE:
			hit = pos >= o->off && pos < o->off + o->len;
			break;
		case OP_TRUNCATE:
			hit = o->len <= pos;
			break;
		default:
			break;
		}
		if (hit)
			idx[n++ % 8] = i;
	}
	fprintf(stderr, "  operations on f%d covering offset %" PRIu64 " (last %zu of %zu):\n", file,
		pos, n < 8 ? n : (size_t)8, n);
	for (size_t k = n > 8 ? n - 8 : 0; k < n; k++) {
		char d[160];
		op_desc(&m->ops[idx[k % 8]], d, sizeof(d));
		fprintf(stderr, "    %s\n", d);
	}
}

/* Report the first difference of got[0..n) against the model of file f at
 * off; "what" says where it was seen. */
static void report_mismatch(const struct model *m, const char *what, int file, uint64_t off,
			    const uint8_t *got, uint64_t n)
{
	const struct mfile *f = &m->f[file];
	uint64_t i = 0;
	while (i < n && got[i] == f->data[off + i])
		i++;
	uint64_t last = i, count = 0;
	for (uint64_t k = i; k < n; k++)
		if (got[k] != f->data[off + k]) {
			last = k;
			count++;
		}
	uint64_t pos = off + i;
	char exp[200], fnd[200];
	uint32_t w = f->writer[pos];
	const struct op *wo = model_find(m, w);
	if (wo)
		op_desc(wo, exp, sizeof(exp));
	else
		snprintf(exp, sizeof(exp), "never written");
	describe_found(m->seed, got, n, i, fnd, sizeof(fnd));
	fprintf(stderr, "MISMATCH %s: f%d offset %" PRIu64 " (%" PRIu64 " bytes differ up to offset %"
		PRIu64 "): expected byte %02x from %s%s; found %s\n", what, file, pos, count,
		off + last, f->data[pos], exp, f->data[pos] || !wo ? "" : " (zeros)", fnd);
	print_history(m, file, pos);
}

/* ------------------------------------------------------------------ */
/* the operation log (state file and crash log share the format) */

struct oplog {
	FILE *state;  /* buffered, completed at the end of the run */
	int crash_fd; /* -1, or a file made durable after every line */
};

static void log_line(struct oplog *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(struct oplog *l, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		die(EX_USAGE, "log line too long");
	if (l->state && fputs(buf, l->state) == EOF)
		die(EX_USAGE, "cannot write the state file: %s", strerror(errno));
	if (l->crash_fd >= 0) {
		/* durable before the operation is issued: write, then fdatasync */
		if (write(l->crash_fd, buf, (size_t)n) != n || fdatasync(l->crash_fd) < 0)
			die(EX_USAGE, "cannot write the crash log: %s", strerror(errno));
	}
}

static void log_op(struct oplog *l, const struct op *o)
{
	switch (o->type) {
	case OP_WRITE:
	case OP_MWRITE:
		log_line(l, "write %" PRIu32 " %d %" PRIu64 " %" PRIu64 "\n", o->id, o->file, o->off, o->len);
		break;
	case OP_TRUNCATE:
		log_line(l, "truncate %" PRIu32 " %d %" PRIu64 "\n", o->id, o->file, o->len);
		break;
	case OP_FALLOCATE:
		log_line(l, "fallocate %" PRIu32 " %d %d %" PRIu64 " %" PRIu64 "\n", o->id, o->file,
			 o->mode, o->off, o->len);
		break;
	case OP_COPY:
		log_line(l, "copy %" PRIu32 " %d %" PRIu64 " %d %" PRIu64 " %" PRIu64 "\n", o->id, o->file,
			 o->off, o->src, o->soff, o->len);
		break;
	case OP_FSYNC:
	case OP_FDATASYNC:
		log_line(l, "%s %" PRIu32 " %d\n", op_names[o->type], o->id, o->file);
		break;
	default:
		break;
	}
}

/* A parsed log: header, operations, failures, syncs, end records. */
enum { REC_OP, REC_FAILED, REC_SYNCED };
struct rec {
	int kind;
	struct op op; /* REC_OP; for REC_SYNCED op.id / op.file */
};
struct parsed {
	struct rec *r;
	size_t n;
	int have_end;
	uint64_t end_size[MAX_FILES], end_hash[MAX_FILES];
	int end_seen[MAX_FILES];
};

static uint64_t fnv64(const uint8_t *p, uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void parse_log(const char *path, struct model *m, struct parsed *pl)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		die(EX_USAGE, "cannot open %s: %s", path, strerror(errno));
	char line[512];
	unsigned long long seed, maxsz;
	int nf, direct, ver;
	if (!fgets(line, sizeof(line), fp) ||
	    sscanf(line, "emu_fsx %d seed=%llu files=%d max_size=%llu direct=%d", &ver, &seed, &nf,
		   &maxsz, &direct) != 5 || ver != 1 || nf < 1 || nf > MAX_FILES ||
	    maxsz > MAX_SIZE_LIMIT)
		die(EX_USAGE, "%s: not an emu_fsx log (bad header)", path);
	m->seed = seed;
	m->nfiles = nf;
	m->max_size = maxsz;
	m->direct = direct;
	memset(pl, 0, sizeof(*pl));
	size_t cap = 0;
	unsigned lineno = 1;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (!strchr(line, '\n'))
			break; /* a torn last line: the operation was never issued */
		struct rec r = { 0 };
		struct op *o = &r.op;
		char word[32];
		unsigned long long a = 0, b = 0, c = 0;
		int i1 = 0, i2 = 0, n;
		if (sscanf(line, "%31s", word) != 1)
			continue;
		if (!strcmp(word, "write") &&
		    sscanf(line, "write %" SCNu32 " %d %llu %llu", &o->id, &i1, &a, &b) == 4) {
			o->type = OP_WRITE; o->file = i1; o->off = a; o->len = b;
		} else if (!strcmp(word, "truncate") &&
			   sscanf(line, "truncate %" SCNu32 " %d %llu", &o->id, &i1, &a) == 3) {
			o->type = OP_TRUNCATE; o->file = i1; o->len = a;
		} else if (!strcmp(word, "fallocate") &&
			   sscanf(line, "fallocate %" SCNu32 " %d %d %llu %llu", &o->id, &i1, &i2, &a, &b) == 5) {
			o->type = OP_FALLOCATE; o->file = i1; o->mode = i2; o->off = a; o->len = b;
		} else if (!strcmp(word, "copy") &&
			   sscanf(line, "copy %" SCNu32 " %d %llu %d %llu %llu", &o->id, &i1, &a, &i2, &b, &c) == 6) {
			o->type = OP_COPY; o->file = i1; o->off = a; o->src = i2; o->soff = b; o->len = c;
		} else if (!strcmp(word, "fsync") && sscanf(line, "fsync %" SCNu32 " %d", &o->id, &i1) == 2) {
			o->type = OP_FSYNC; o->file = i1;
		} else if (!strcmp(word, "fdatasync") &&
			   sscanf(line, "fdatasync %" SCNu32 " %d", &o->id, &i1) == 2) {
			o->type = OP_FDATASYNC; o->file = i1;
		} else if (!strcmp(word, "failed") && sscanf(line, "failed %" SCNu32 " %d", &o->id, &n) == 2) {
			r.kind = REC_FAILED;
		} else if (!strcmp(word, "synced") && sscanf(line, "synced %" SCNu32 " %d", &o->id, &i1) == 2) {
			r.kind = REC_SYNCED; o->file = i1;
		} else if (!strcmp(word, "end") && sscanf(line, "end %d %llu %llx", &i1, &a, &b) == 3 &&
			   i1 >= 0 && i1 < nf) {
			pl->have_end = 1;
			pl->end_seen[i1] = 1;
			pl->end_size[i1] = a;
			pl->end_hash[i1] = b;
			continue;
		} else {
			die(EX_USAGE, "%s:%u: cannot parse '%.*s'", path, lineno, (int)strcspn(line, "\n"), line);
		}
		int bad = o->file < 0 || o->file >= nf || o->src < 0 || o->src >= nf ||
			  (o->type == OP_TRUNCATE ? o->len > maxsz :
			   o->off + o->len > maxsz || o->soff + o->len > maxsz);
		if (bad)
			die(EX_USAGE, "%s:%u: operation out of range", path, lineno);
		if (pl->n == cap) {
			cap = cap ? 2 * cap : 1024;
			pl->r = realloc(pl->r, cap * sizeof(*pl->r));
			if (!pl->r)
				die(EX_USAGE, "out of memory");
		}
		pl->r[pl->n++] = r;
	}
	fclose(fp);
}

/* Was operation id refused (a "failed" record anywhere after it)? */
static int op_failed(const struct parsed *pl, size_t i)
{
	for (size_t k = i + 1; k < pl->n; k++) {
		if (pl->r[k].kind == REC_FAILED && pl->r[k].op.id == pl->r[i].op.id)
			return 1;
		if (pl->r[k].kind == REC_OP)
			return 0; /* failures are logged before the next operation */
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* file access */

static void file_path(char *out, size_t len, const char *dir, int i)
{
	snprintf(out, len, "%s/fsx.%d", dir, i);
}

static void *aligned_buf(size_t len)
{
	void *p;
	if (posix_memalign(&p, BLK, len ? len : BLK))
		die(EX_USAGE, "out of memory");
	memset(p, 0, len);
	return p;
}

/* Read up to len bytes at off, looping over short reads (with direct, a
 * short read is the end of the file: the next offset would be unaligned);
 * -errno on error. */
static int64_t read_full(int fd, uint8_t *buf, uint64_t len, uint64_t off, int direct)
{
	uint64_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, buf + done, len - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (uint64_t)r;
		if (direct && done % BLK)
			break;
	}
	return (int64_t)done;
}

/* Compare every file in dir with the model. Returns EX_OK / EX_MISMATCH;
 * exits EX_GONE when the mount is gone. */
static int verify_files(const struct model *m, const char *dir, const char *what)
{
	int bad = 0;
	uint8_t *buf = aligned_buf(m->cap + BLK);
	for (int i = 0; i < m->nfiles; i++) {
		char path[4096];
		file_path(path, sizeof(path), dir, i);
		int fd = open(path, O_RDONLY | (m->direct ? O_DIRECT : 0));
		if (fd < 0) {
			if (mount_gone(errno))
				die(EX_GONE, "mount gone: open %s: %s", path, strerror(errno));
			fprintf(stderr, "MISMATCH %s: cannot open %s: %s\n", what, path, strerror(errno));
			bad = 1;
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) < 0)
			die(mount_gone(errno) ? EX_GONE : EX_ERROR, "fstat %s: %s", path, strerror(errno));
		if ((uint64_t)st.st_size != m->f[i].size) {
			fprintf(stderr, "MISMATCH %s: f%d size %lld, expected %" PRIu64 "\n", what, i,
				(long long)st.st_size, m->f[i].size);
			bad = 1;
		}
		uint64_t want = m->f[i].size;
		uint64_t len = (want + BLK - 1) / BLK * BLK;
		int64_t r = read_full(fd, buf, len + BLK, 0, m->direct);
		if (r < 0) {
			if (mount_gone((int)-r))
				die(EX_GONE, "mount gone: read %s: %s", path, strerror((int)-r));
			fprintf(stderr, "MISMATCH %s: read f%d: %s\n", what, i, strerror((int)-r));
			bad = 1;
		} else {
			uint64_t n = (uint64_t)r < want ? (uint64_t)r : want;
			if (memcmp(buf, m->f[i].data, n)) {
				report_mismatch(m, what, i, 0, buf, n);
				bad = 1;
			}
			if ((uint64_t)r != want && (uint64_t)st.st_size == want) {
				fprintf(stderr, "MISMATCH %s: f%d read %" PRId64 " bytes, size is %" PRIu64 "\n",
					what, i, r, want);
				bad = 1;
			}
		}
		close(fd);
	}
	free(buf);
	return bad ? EX_MISMATCH : EX_OK;
}

/* ------------------------------------------------------------------ */
/* run */

struct run_cfg {
	const char *dir;
	uint64_t seed;
	int nfiles;
	uint64_t ops;     /* 0: until --seconds or the mount goes away */
	double seconds;   /* 0: no time limit */
	uint64_t max_size, max_len;
	int direct, verbose;
	int mix, mmap;    /* --mix: buffered and O_DIRECT handles; --mmap */
	int no_copy, no_falloc;
	const char *state, *crash_log;
};

struct runner {
	struct run_cfg *c;
	struct model m;
	struct oplog log;
	int fd[MAX_FILES];
	int dfd[MAX_FILES]; /* --mix: the O_DIRECT handle, opened after fd */
	int aligned;        /* this operation's offsets and lengths: BLK multiples */
	uint8_t *buf;
	uint64_t count[OP_NTYPES];
	int falloc_off[5]; /* fallocate modes found unsupported */
	int copy_off;
};

static const int falloc_modes[5] = {
	0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE
};

static int open_path(struct runner *r, int i, int flags)
{
	char path[4096];
	file_path(path, sizeof(path), r->c->dir, i);
	int fd = open(path, O_RDWR | flags, 0644);
	if (fd < 0)
		die(mount_gone(errno) ? EX_GONE : EX_ERROR, "open %s: %s", path, strerror(errno));
	return fd;
}

/* Open file i's handles: one (O_DIRECT with --direct), or with --mix a
 * buffered one and then an O_DIRECT one. */
static void open_file(struct runner *r, int i, int flags)
{
	r->fd[i] = open_path(r, i, flags | (r->c->direct ? O_DIRECT : 0));
	r->dfd[i] = r->c->mix ? open_path(r, i, O_DIRECT) : r->fd[i];
}

static void close_file(struct runner *r, int i)
{
	if (r->dfd[i] != r->fd[i])
		close(r->dfd[i]);
	close(r->fd[i]);
}

/* The handle a read or write goes through. */
static int op_fd(const struct runner *r, const struct op *o)
{
	return o->via == VIA_DIRECT ? r->dfd[o->file] : r->fd[o->file];
}

/* An operation failed with e: stop (mount gone or unexpected). */
static void op_error(const struct op *o, const char *call, int e) __attribute__((noreturn));
static void op_error(const struct op *o, const char *call, int e)
{
	char d[200];
	op_desc(o, d, sizeof(d));
	if (mount_gone(e))
		die(EX_GONE, "mount gone at %s: %s: %s", d, call, strerror(e));
	die(EX_ERROR, "%s: %s failed: %s", d, call, strerror(e));
}

/* Random length in [1, max] (multiple of BLK for aligned operations). */
static uint64_t pick_len(struct runner *r, uint64_t max)
{
	if (r->aligned) {
		uint64_t nb = max / BLK;
		return nb ? (1 + rnd_below(nb)) * BLK : 0;
	}
	if (!max)
		return 0;
	switch (rnd_below(3)) {
	case 0: /* small, inside one block */
		return 1 + rnd_below(max < 512 ? max : 512);
	case 1: { /* whole blocks */
		uint64_t nb = max / BLK;
		if (nb)
			return (1 + rnd_below(nb)) * BLK;
	}
	/* fall through */
	default:
		return 1 + rnd_below(max);
	}
}

/* Random offset in [0, limit] (aligned for aligned operations). */
static uint64_t pick_off(struct runner *r, uint64_t limit)
{
	if (r->aligned)
		return rnd_below(limit / BLK + 1) * BLK;
	if (rnd_below(4) == 0) /* block-aligned now and then */
		return rnd_below(limit / BLK + 1) * BLK;
	return rnd_below(limit + 1);
}

static int pick_type(struct runner *r)
{
	static const int weight[OP_NTYPES] = {
		[OP_WRITE] = 28, [OP_READ] = 22, [OP_TRUNCATE] = 7, [OP_FALLOCATE] = 10,
		[OP_COPY] = 10, [OP_FSYNC] = 5, [OP_FDATASYNC] = 4, [OP_DROP] = 8, [OP_REOPEN] = 6,
		[OP_MWRITE] = 12,
	};
	for (;;) {
		uint64_t x = rnd_below(112);
		int t = 0;
		while (x >= (uint64_t)weight[t])
			x -= (uint64_t)weight[t++];
		if (t == OP_COPY && (r->c->no_copy || r->copy_off))
			continue;
		if (t == OP_FALLOCATE && r->c->no_falloc)
			continue;
		if (t == OP_MWRITE && !r->c->mmap)
			continue;
		return t;
	}
}

/* Issue one state-changing operation after it has been logged. Returns 0,
 * or -errno for a refusal that changed nothing (logged as failed). */
/* A write through a shared mapping of the file's first pages up to the
 * write's end, then msync(MS_SYNC), or (one time in four) only munmap. */
static void mapped_write(struct runner *r, const struct op *o, int fd)
{
	uint64_t end = o->off + o->len, maplen = (end + BLK - 1) / BLK * BLK;
	uint8_t *map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		op_error(o, "mmap", errno);
	gen_data(r->m.seed, o->id, o->file, o->off, o->len, map + o->off);
	if (o->mode && msync(map, maplen, MS_SYNC) < 0)
		op_error(o, "msync", errno);
	if (munmap(map, maplen) < 0)
		op_error(o, "munmap", errno);
}

static int issue(struct runner *r, struct op *o)
{
	int fd = r->fd[o->file];
	switch (o->type) {
	case OP_MWRITE:
		mapped_write(r, o, op_fd(r, o));
		return 0;
	case OP_WRITE:
		fd = op_fd(r, o);
		gen_data(r->m.seed, o->id, o->file, o->off, o->len, r->buf);
		/* a short write is continued: when the mount went away half-way
		 * the next call says so */
		for (uint64_t done = 0; done < o->len;) {
			ssize_t n = pwrite(fd, r->buf + done, o->len - done, (off_t)(o->off + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				op_error(o, "pwrite", errno);
			if (n == 0)
				die(EX_ERROR, "pwrite wrote nothing at step #%" PRIu32, o->id);
			done += (uint64_t)n;
		}
		return 0;
	case OP_TRUNCATE:
		if (ftruncate(fd, (off_t)o->len) < 0)
			op_error(o, "ftruncate", errno);
		return 0;
	case OP_FALLOCATE:
		if (fallocate(fd, o->mode, (off_t)o->off, (off_t)o->len) < 0) {
			if (errno == EOPNOTSUPP || errno == ENOSYS)
				return -errno;
			op_error(o, "fallocate", errno);
		}
		return 0;
	case OP_COPY: {
		loff_t so = (loff_t)o->soff, dof = (loff_t)o->off;
		for (uint64_t done = 0; done < o->len;) {
			ssize_t n = copy_file_range(r->fd[o->src], &so, fd, &dof, o->len - done, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && !done &&
			    (errno == EOPNOTSUPP || errno == ENOSYS || errno == EXDEV))
				return -errno;
			if (n < 0)
				op_error(o, "copy_file_range", errno);
			if (n == 0)
				die(EX_ERROR, "copy_file_range copied %" PRIu64 " of %" PRIu64
				    " bytes at step #%" PRIu32 " (end of the source?)", done, o->len, o->id);
			done += (uint64_t)n;
		}
		return 0;
	}
	case OP_FSYNC:
		if (fsync(fd) < 0)
			op_error(o, "fsync", errno);
		return 0;
	case OP_FDATASYNC:
		if (fdatasync(fd) < 0)
			op_error(o, "fdatasync", errno);
		return 0;
	default:
		return 0;
	}
}

/* Fill in a random operation of the given type; 0 if none fits now. */
static int make_op(struct runner *r, struct op *o, int type)
{
	struct model *m = &r->m;
	uint64_t max = r->c->max_size, ml = r->c->max_len;
	o->type = type;
	o->file = (int)rnd_below((uint64_t)m->nfiles);
	uint64_t size = m->f[o->file].size;
	/* --mix: reads and writes go O_DIRECT (aligned) or buffered (anywhere) */
	o->via = r->c->direct ? VIA_DIRECT : VIA_BUF;
	r->aligned = r->c->direct;
	if (r->c->mix && (type == OP_READ || type == OP_WRITE) && rnd_below(2)) {
		o->via = VIA_DIRECT;
		r->aligned = 1;
	}
	switch (type) {
	case OP_MWRITE:
		/* inside the file (a mapping has no pages beyond it), half the
		 * time up to its end, which may be in the middle of a page */
		if (!size)
			return 0;
		if (r->c->mix)
			o->via = VIA_DIRECT; /* mapped through the O_DIRECT handle */
		o->len = 1 + rnd_below(size < ml ? size : ml);
		o->off = rnd_below(2) ? size - o->len : rnd_below(size - o->len + 1);
		o->mode = rnd_below(4) != 0; /* msync, or only munmap */
		return 1;
	case OP_WRITE:
		o->len = pick_len(r, ml < max ? ml : max);
		o->off = pick_off(r, max - o->len);
		return o->len > 0;
	case OP_READ: {
		/* mostly inside the file, sometimes across or past its end */
		uint64_t lim = size + (size < max ? (max - size) / 8 : 0);
		o->len = pick_len(r, ml < max ? ml : max);
		o->off = pick_off(r, lim > o->len ? lim - o->len : 0);
		if (r->aligned && o->off % BLK)
			o->off -= o->off % BLK;
		return o->len > 0;
	}
	case OP_TRUNCATE:
		if (rnd_below(2) && size) /* shrink */
			o->len = pick_off(r, size);
		else
			o->len = pick_off(r, max);
		return 1;
	case OP_FALLOCATE: {
		int k = (int)rnd_below(5);
		if (r->falloc_off[k])
			return 0;
		o->mode = falloc_modes[k];
		o->len = pick_len(r, ml < max ? ml : max);
		o->off = pick_off(r, max - o->len);
		return o->len > 0;
	}
	case OP_COPY: {
		o->src = (int)rnd_below((uint64_t)m->nfiles);
		uint64_t ssize = m->f[o->src].size;
		if (r->aligned)
			ssize -= ssize % BLK;
		if (!ssize)
			return 0;
		o->soff = pick_off(r, ssize - 1);
		if (r->aligned && o->soff >= ssize)
			o->soff -= BLK;
		uint64_t room = ssize - o->soff;
		o->len = pick_len(r, room < ml ? room : ml);
		if (!o->len)
			return 0;
		uint64_t phase = o->soff % BLK;
		if (!r->aligned && rnd_below(2) && max - o->len >= phase)
			/* the same offset within a block: whole blocks can be shared */
			o->off = rnd_below((max - o->len - phase) / BLK + 1) * BLK + phase;
		else
			o->off = pick_off(r, max - o->len);
		if (o->src == o->file && o->off < o->soff + o->len && o->soff < o->off + o->len)
			return 0; /* overlapping ranges of one file: EINVAL by definition */
		return 1;
	}
	default:
		return 1;
	}
}

static void do_read(struct runner *r, struct op *o)
{
	struct mfile *f = &r->m.f[o->file];
	/* short reads are continued: only end of file (0) ends the read, and
	 * a mount that went away half-way says so on the next call */
	int64_t n = read_full(op_fd(r, o), r->buf, o->len, o->off, o->via == VIA_DIRECT);
	if (n < 0)
		op_error(o, "pread", (int)-n);
	uint64_t want = o->off >= f->size ? 0 : f->size - o->off;
	if (want > o->len)
		want = o->len;
	char what[200];
	op_desc(o, what, sizeof(what));
	if ((uint64_t)n != want) {
		fprintf(stderr, "MISMATCH at %s: read returned %" PRId64 " bytes, expected %" PRIu64
			" (size %" PRIu64 ")\n", what, n, want, f->size);
		exit(EX_MISMATCH);
	}
	if (memcmp(r->buf, f->data + o->off, want)) {
		report_mismatch(&r->m, what, o->file, o->off, r->buf, want);
		exit(EX_MISMATCH);
	}
}

static int cmd_run(struct run_cfg *c)
{
	struct runner r = { .c = c };
	r.log.crash_fd = -1;
	if (c->nfiles < 1 || c->nfiles > MAX_FILES)
		die(EX_USAGE, "--files must be 1..%d", MAX_FILES);
	if (c->max_size < BLK || c->max_size > MAX_SIZE_LIMIT || (c->direct && c->max_size % BLK))
		die(EX_USAGE, "--max-size must be 4K..256M (a multiple of 4K with --direct)");
	if (c->mix && c->direct)
		die(EX_USAGE, "--mix and --direct exclude each other");
	if (c->max_len < 1 || (c->direct && c->max_len < BLK))
		die(EX_USAGE, "--max-len too small");
	r.m.seed = c->seed;
	r.m.nfiles = c->nfiles;
	r.m.max_size = c->max_size;
	r.m.direct = c->direct;
	model_init(&r.m, c->max_size);
	r.buf = aligned_buf(c->max_size + BLK);
	rng_state = mix64(c->seed ^ 0x5eed);

	struct stat dst;
	if (stat(c->dir, &dst) < 0 || !S_ISDIR(dst.st_mode))
		die(EX_USAGE, "%s is not a directory", c->dir);
	if (c->crash_log) {
		r.log.crash_fd = open(c->crash_log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		struct stat lst;
		if (r.log.crash_fd < 0 || fstat(r.log.crash_fd, &lst) < 0)
			die(EX_USAGE, "cannot create %s: %s", c->crash_log, strerror(errno));
		if (lst.st_dev == dst.st_dev)
			die(EX_USAGE, "the crash log must live outside the exercised file system");
	}
	if (c->state && !(r.log.state = fopen(c->state, "w")))
		die(EX_USAGE, "cannot create %s: %s", c->state, strerror(errno));

	/* fresh, empty files whose existence is durable before the log starts */
	for (int i = 0; i < c->nfiles; i++) {
		open_file(&r, i, O_CREAT | O_TRUNC);
		if (ftruncate(r.fd[i], 0) < 0 || fsync(r.fd[i]) < 0)
			die(mount_gone(errno) ? EX_GONE : EX_ERROR, "preparing f%d: %s", i, strerror(errno));
	}
	int dfd = open(c->dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) < 0)
		die(mount_gone(errno) ? EX_GONE : EX_ERROR, "fsync %s: %s", c->dir, strerror(errno));
	close(dfd);
	log_line(&r.log, "emu_fsx 1 seed=%" PRIu64 " files=%d max_size=%" PRIu64 " direct=%d\n",
		 c->seed, c->nfiles, c->max_size, c->direct);

	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint32_t step = 0;
	for (uint64_t tries = 0; (!c->ops || step < c->ops) && step < UINT32_MAX - 1; tries++) {
		if (c->seconds > 0 && (tries & 15) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= c->seconds)
				break;
		}
		struct op o = { 0 };
		int type = pick_type(&r);
		if (!make_op(&r, &o, type))
			continue; /* nothing of this kind fits now (e.g. a copy from empty files) */
		o.id = ++step;
		if (c->verbose) {
			char d[200];
			op_desc(&o, d, sizeof(d));
			printf("%s\n", d);
		}
		r.count[type]++;
		switch (type) {
		case OP_READ:
			do_read(&r, &o);
			break;
		case OP_DROP: /* the next reads go to the file system, not the page cache */
			(void)posix_fadvise(r.fd[o.file], 0, 0, POSIX_FADV_DONTNEED);
			break;
		case OP_REOPEN:
			close_file(&r, o.file);
			open_file(&r, o.file, 0);
			break;
		default: {
			log_op(&r.log, &o);
			int e = issue(&r, &o);
			if (e < 0) {
				/* refused and changed nothing: remember, stop asking */
				log_line(&r.log, "failed %" PRIu32 " %d\n", o.id, -e);
				if (type == OP_COPY)
					r.copy_off = 1;
				for (int k = 0; k < 5; k++)
					if (type == OP_FALLOCATE && falloc_modes[k] == o.mode)
						r.falloc_off[k] = 1;
				fprintf(stderr, "emu_fsx: %s refused (%s); not used from now on\n",
					op_names[type], strerror(-e));
				break;
			}
			uint64_t lo, hi;
			model_apply(&r.m, &o, &lo, &hi);
			model_push(&r.m, &o);
			if (type == OP_FSYNC || type == OP_FDATASYNC)
				log_line(&r.log, "synced %" PRIu32 " %d\n", o.id, o.file);
		}
		}
	}
	for (int i = 0; i < c->nfiles; i++) {
		(void)posix_fadvise(r.fd[i], 0, 0, POSIX_FADV_DONTNEED);
		close_file(&r, i);
	}
	int rc = verify_files(&r.m, c->dir, "final check");
	if (r.log.state) {
		for (int i = 0; i < c->nfiles; i++)
			fprintf(r.log.state, "end %d %" PRIu64 " %016" PRIx64 "\n", i, r.m.f[i].size,
				fnv64(r.m.f[i].data, r.m.f[i].size));
		if (fflush(r.log.state) || fsync(fileno(r.log.state)) || fclose(r.log.state))
			die(EX_USAGE, "cannot write %s", c->state);
	}
	printf("emu_fsx: seed %" PRIu64 ", %u steps on %d files (%s%s):", c->seed, step, c->nfiles,
	       c->direct ? "O_DIRECT" : c->mix ? "buffered and O_DIRECT" : "buffered",
	       c->mmap ? ", mapped writes" : "");
	for (int t2 = 0; t2 < OP_NTYPES; t2++)
		printf(" %s %" PRIu64, op_names[t2], r.count[t2]);
	printf("; %s\n", rc == EX_OK ? "all reads and the final check match the model" : "MISMATCH");
	for (int i = 0; i < c->nfiles; i++) {
		free(r.m.f[i].data);
		free(r.m.f[i].writer);
	}
	free(r.m.ops);
	free(r.buf);
	if (r.log.crash_fd >= 0)
		close(r.log.crash_fd);
	return rc;
}

/* ------------------------------------------------------------------ */
/* verify: the model replayed from a state file equals the files */

static int cmd_verify(const char *state, const char *dir)
{
	struct model m = { 0 };
	struct parsed pl;
	parse_log(state, &m, &pl);
	if (!pl.have_end)
		die(EX_USAGE, "%s has no end records (the run did not finish)", state);
	model_init(&m, m.max_size);
	for (size_t i = 0; i < pl.n; i++) {
		if (pl.r[i].kind != REC_OP || op_failed(&pl, i))
			continue;
		uint64_t lo, hi;
		model_apply(&m, &pl.r[i].op, &lo, &hi);
		model_push(&m, &pl.r[i].op);
	}
	for (int i = 0; i < m.nfiles; i++)
		if (!pl.end_seen[i] || pl.end_size[i] != m.f[i].size ||
		    pl.end_hash[i] != fnv64(m.f[i].data, m.f[i].size))
			die(EX_USAGE, "%s: the replayed model of f%d disagrees with the recorded end state",
			    state, i);
	int rc = verify_files(&m, dir, "verify");
	printf("emu_fsx verify: %d files, %zu operations replayed: %s\n", m.nfiles, m.nops,
	       rc == EX_OK ? "equal to the model" : "MISMATCH");
	for (int i = 0; i < m.nfiles; i++) {
		free(m.f[i].data);
		free(m.f[i].writer);
	}
	free(m.ops);
	free(pl.r);
	return rc;
}

/* ------------------------------------------------------------------ */
/* verify-crash */

/* What was found in one file after the crash, and which of its states
 * each block has matched. */
struct cfile {
	uint64_t asize;       /* size found */
	uint8_t *actual;      /* content found (cap bytes) */
	uint8_t *refused;     /* per block: read failed with EIO */
	uint8_t *since, *ever; /* per block: matched a state since the last sync / ever */
	uint32_t *nver;       /* per block: changes since the last sync */
	uint32_t *last_ver;   /* per block: the last step that changed it */
	uint32_t sync_id;     /* last "synced" step (0: creation) */
	int size_since, size_ever;
	int missing;
};

struct crash_ck {
	struct model m;
	struct cfile f[MAX_FILES];
	uint64_t nblk;
};

static void ck_block(struct crash_ck *c, int file, uint64_t b)
{
	struct cfile *cf = &c->f[file];
	if (b >= c->nblk || b * BLK >= cf->asize || cf->refused[b])
		return;
	uint64_t n = cf->asize - b * BLK < BLK ? cf->asize - b * BLK : BLK;
	if (!memcmp(cf->actual + b * BLK, c->m.f[file].data + b * BLK, n))
		cf->since[b] = cf->ever[b] = 1;
}

static void ck_size(struct crash_ck *c, int file)
{
	if (c->f[file].asize == c->m.f[file].size)
		c->f[file].size_since = c->f[file].size_ever = 1;
}

/* An fsync returned: the file's current state is the only one allowed. */
static void ck_sync(struct crash_ck *c, int file, uint32_t id)
{
	struct cfile *cf = &c->f[file];
	cf->sync_id = id;
	cf->size_since = 0;
	memset(cf->since, 0, c->nblk);
	memset(cf->nver, 0, c->nblk * sizeof(uint32_t));
	for (uint64_t b = 0; b < c->nblk; b++)
		ck_block(c, file, b);
	ck_size(c, file);
}

static int cmd_verify_crash(const char *logpath, const char *dir, int allow_loss)
{
	struct crash_ck c;
	memset(&c, 0, sizeof(c));
	struct parsed pl;
	parse_log(logpath, &c.m, &pl);
	struct model *m = &c.m;

	/* read what survived, block by block (EIO on one block spoils no other) */
	uint64_t cap = m->max_size;
	struct stat st[MAX_FILES];
	int fds[MAX_FILES];
	for (int i = 0; i < m->nfiles; i++) {
		char path[4096];
		file_path(path, sizeof(path), dir, i);
		fds[i] = open(path, O_RDONLY | (m->direct ? O_DIRECT : 0));
		if (fds[i] < 0) {
			if (errno == ENOTCONN || errno == ECONNABORTED || errno == ENODEV)
				die(EX_GONE, "mount gone: open %s: %s", path, strerror(errno));
			fprintf(stderr, "LOST: cannot open %s: %s\n", path, strerror(errno));
			c.f[i].missing = 1;
			continue;
		}
		if (fstat(fds[i], &st[i]) < 0)
			die(EX_ERROR, "fstat %s: %s", path, strerror(errno));
		if ((uint64_t)st[i].st_size > cap)
			cap = (uint64_t)st[i].st_size;
	}
	model_init(m, cap);
	c.nblk = m->cap / BLK;
	uint8_t *blk = aligned_buf(BLK);
	for (int i = 0; i < m->nfiles; i++) {
		struct cfile *cf = &c.f[i];
		cf->actual = xcalloc(m->cap, 1);
		cf->refused = xcalloc(c.nblk, 1);
		cf->since = xcalloc(c.nblk, 1);
		cf->ever = xcalloc(c.nblk, 1);
		cf->nver = xcalloc(c.nblk, sizeof(uint32_t));
		cf->last_ver = xcalloc(c.nblk, sizeof(uint32_t));
		if (cf->missing)
			continue;
		cf->asize = (uint64_t)st[i].st_size;
		for (uint64_t b = 0; b * BLK < cf->asize; b++) {
			ssize_t n = pread(fds[i], blk, BLK, (off_t)(b * BLK));
			if (n < 0 && (errno == ENOTCONN || errno == ECONNABORTED || errno == ENODEV))
				die(EX_GONE, "mount gone: reading f%d: %s", i, strerror(errno));
			if (n < 0) {
				cf->refused[b] = 1;
				continue;
			}
			/* a short read inside the file leaves zeros in the rest
			 * of the block, which are then compared like data */
			memcpy(cf->actual + b * BLK, blk, (size_t)n);
			if ((uint64_t)n < BLK && b * BLK + (uint64_t)n < cf->asize)
				fprintf(stderr, "note: f%d block %" PRIu64 " read only %zd bytes\n", i, b, n);
		}
		close(fds[i]);
	}
	free(blk);

	/* replay: the initial state (created, empty, synced) then every step */
	for (int i = 0; i < m->nfiles; i++)
		ck_sync(&c, i, 0);
	for (size_t k = 0; k < pl.n; k++) {
		struct rec *rc = &pl.r[k];
		if (rc->kind == REC_SYNCED) {
			ck_sync(&c, rc->op.file, rc->op.id);
			continue;
		}
		if (rc->kind != REC_OP || op_failed(&pl, k))
			continue;
		uint64_t lo, hi;
		model_apply(m, &rc->op, &lo, &hi);
		model_push(m, &rc->op);
		if (hi <= lo)
			continue;
		struct cfile *cf = &c.f[rc->op.file];
		for (uint64_t b = lo / BLK; b <= (hi - 1) / BLK && b < c.nblk; b++) {
			cf->nver[b]++;
			cf->last_ver[b] = rc->op.id;
			ck_block(&c, rc->op.file, b);
		}
		ck_size(&c, rc->op.file);
	}

	/* verdict */
	uint64_t checked = 0, okb = 0, lost = 0, refused = 0, garbage = 0, reports = 0;
	int size_lost = 0, size_bad = 0, missing = 0;
	for (int i = 0; i < m->nfiles; i++) {
		struct cfile *cf = &c.f[i];
		if (cf->missing) {
			missing++;
			continue;
		}
		if (!cf->size_since) {
			if (cf->size_ever)
				size_lost++;
			else
				size_bad++;
			fprintf(stderr, "%s: f%d size %" PRIu64 " is not a size it had since its last fsync "
				"(step #%" PRIu32 "); now %" PRIu64 "%s\n", cf->size_ever ? "LOST" : "GARBAGE",
				i, cf->asize, cf->sync_id, m->f[i].size,
				cf->size_ever ? " (an earlier size)" : " (never its size)");
		}
		for (uint64_t b = 0; b * BLK < cf->asize && b < c.nblk; b++) {
			checked++;
			if (cf->refused[b]) {
				refused++;
				continue;
			}
			if (cf->since[b]) {
				okb++;
				continue;
			}
			const char *cls = cf->ever[b] ? "LOST" : "GARBAGE";
			if (cf->ever[b])
				lost++;
			else
				garbage++;
			if (reports++ < 20) {
				char fnd[200];
				uint64_t n = cf->asize - b * BLK < BLK ? cf->asize - b * BLK : BLK;
				uint64_t p = 0;
				while (p < n && cf->actual[b * BLK + p] == m->f[i].data[b * BLK + p])
					p++;
				if (p == n)
					p = 0;
				describe_found(m->seed, cf->actual + b * BLK, n, p, fnd, sizeof(fnd));
				fprintf(stderr, "%s: f%d block %" PRIu64 " (offset %" PRIu64 "): %s since the fsync "
					"at step #%" PRIu32 " (%" PRIu32 " changes since, last by step #%" PRIu32
					"); at offset %" PRIu64 " found %s%s\n", cls, i, b, b * BLK,
					cf->nver[b] ? "holds none of its versions" : "differs from its content",
					cf->sync_id, cf->nver[b], cf->last_ver[b], b * BLK + p, fnd,
					cf->ever[b] ? " (content it had earlier)" : "");
				if (!cf->ever[b])
					print_history(m, i, b * BLK + p);
			}
		}
	}
	printf("emu_fsx verify-crash: %d files, %zu operations in the log, %" PRIu64
	       " blocks checked: %" PRIu64 " ok, %" PRIu64 " lost, %" PRIu64 " refused (EIO), %" PRIu64
	       " garbage; sizes: %d lost, %d bad; %d files missing\n", m->nfiles, m->nops, checked, okb,
	       lost, refused, garbage, size_lost, size_bad, missing);
	for (int i = 0; i < m->nfiles; i++) {
		free(m->f[i].data);
		free(m->f[i].writer);
		free(c.f[i].actual);
		free(c.f[i].refused);
		free(c.f[i].since);
		free(c.f[i].ever);
		free(c.f[i].nver);
		free(c.f[i].last_ver);
	}
	free(m->ops);
	free(pl.r);
	if (garbage || size_bad)
		return EX_MISMATCH;
	if ((lost || refused || size_lost || missing) && !allow_loss)
		return EX_MISMATCH;
	return EX_OK;
}

/* ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: emu_fsx run DIR [--seed N] [--files N] [--ops N] [--seconds S]\n"
		"                   [--max-size SIZE] [--max-len SIZE] [--direct | --mix] [--mmap]\n"
		"                   [--no-copy] [--no-falloc] [--state FILE] [--crash-log LOG]\n"
		"                   [--verbose]\n"
		"       emu_fsx verify STATE DIR\n"
		"       emu_fsx verify-crash LOG DIR [--allow-loss]\n");
	exit(EX_USAGE);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *cmd = argv[1];
	if (!strcmp(cmd, "verify")) {
		if (argc != 4)
			usage();
		return cmd_verify(argv[2], argv[3]);
	}
	if (!strcmp(cmd, "verify-crash")) {
		if (argc == 5 && !strcmp(argv[4], "--allow-loss"))
			return cmd_verify_crash(argv[2], argv[3], 1);
		if (argc != 4)
			usage();
		return cmd_verify_crash(argv[2], argv[3], 0);
	}
	if (strcmp(cmd, "run") || argc < 3)
		usage();
	struct run_cfg c = {
		.dir = argv[2], .seed = 1, .nfiles = 4, .ops = 1000,
		.max_size = 1 << 20, .max_len = 64 << 10,
	};
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'f' },
		{ "ops", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "max-size", required_argument, NULL, 'S' },
		{ "max-len", required_argument, NULL, 'L' },
		{ "direct", no_argument, NULL, 'd' },
		{ "mix", no_argument, NULL, 'x' },
		{ "mmap", no_argument, NULL, 'm' },
		{ "no-copy", no_argument, NULL, 'C' },
		{ "no-falloc", no_argument, NULL, 'F' },
		{ "state", required_argument, NULL, 'o' },
		{ "crash-log", required_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	optind = 3;
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': c.seed = strtoull(optarg, NULL, 0); break;
		case 'f': c.nfiles = atoi(optarg); break;
		case 'n': c.ops = strtoull(optarg, NULL, 0); break;
		case 't': c.seconds = atof(optarg); break;
		case 'S': c.max_size = parse_size(optarg); break;
		case 'L': c.max_len = parse_size(optarg); break;
		case 'd': c.direct = 1; break;
		case 'x': c.mix = 1; break;
		case 'm': c.mmap = 1; break;
		case 'C': c.no_copy = 1; break;
		case 'F': c.no_falloc = 1; break;
		case 'o': c.state = optarg; break;
		case 'l': c.crash_log = optarg; break;
		case 'v': c.verbose = 1; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	return cmd_run(&c);
}
