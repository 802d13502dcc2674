/*
 * bufpool.c - the O_DIRECT buffer pool (why: bufpool.h): power-of-two size
 * classes, each carving its buffers from 2 MiB-aligned chunks advised for
 * huge pages, with a free list per class.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "src/base/bufpool.h"
#include "src/base/grow.h"

#define CHUNK ((size_t)2 << 20)
#define MIN_SHIFT 12 /* the smallest class: 4 KiB */
#define NCLASS 36    /* up to 2^47 bytes: any request is refused before that */

struct free_buf {
	struct free_buf *next;
};

struct size_class {
	struct free_buf *free;
	char *carve, *carve_end; /* the uncarved rest of the class's newest chunk */
};

struct chunk {
	char *addr;
	size_t len;
};

struct fsp_bufpool {
	pthread_mutex_t lock;
	struct size_class cls[NCLASS];
	struct chunk *chunks;
	size_t nchunks, chunks_cap;
	uint64_t mapped;
};

struct fsp_bufpool *fsp_bufpool_new(void)
{
	struct fsp_bufpool *p = calloc(1, sizeof(*p));
	if (p)
		pthread_mutex_init(&p->lock, NULL);
	return p;
}

/* The class index for len bytes; *size is the class's buffer size. */
static unsigned class_of(size_t len, size_t *size)
{
	unsigned c = 0;
	size_t s = (size_t)1 << MIN_SHIFT;
	while (s < len && c + 1 < NCLASS) {
		s <<= 1;
		c++;
	}
	*size = s;
	return c;
}

/* len bytes (a multiple of CHUNK) mapped alone, aligned to CHUNK and advised
 * for huge pages; the alignment slack is unmapped again. */
static char *map_chunk(size_t len)
{
	char *m = mmap(NULL, len + CHUNK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)m + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1));
	size_t head = (size_t)(a - m);
	if (head)
		munmap(m, head);
	munmap(a + len, CHUNK - head);
	(void)madvise(a, len, MADV_HUGEPAGE); /* EINVAL without THP: plain pages */
	return a;
}

/* Under the lock: a new chunk for class cs, whose buffers are size bytes. */
static int add_chunk(struct fsp_bufpool *p, struct size_class *cs, size_t size)
{
	if (fsp_grow((void **)&p->chunks, &p->chunks_cap, p->nchunks + 1, sizeof(*p->chunks), 16))
		return -1;
	size_t len = size > CHUNK ? size : CHUNK; /* a power of two: a multiple of CHUNK */
	char *a = map_chunk(len);
	if (!a)
		return -1;
	p->chunks[p->nchunks++] = (struct chunk){ a, len };
	p->mapped += len;
	cs->carve = a;
	cs->carve_end = a + len;
	return 0;
}

void *fsp_bufpool_get(struct fsp_bufpool *p, size_t len, size_t *cap)
{
	size_t size;
	unsigned c = class_of(len, &size);
	if (size < len) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&p->lock);
	struct size_class *cs = &p->cls[c];
	void *buf = NULL;
	if (cs->free) {
		buf = cs->free;
		cs->free = cs->free->next;
	} else if (cs->carve < cs->carve_end || add_chunk(p, cs, size) == 0) {
		buf = cs->carve;
		cs->carve += size;
	}
	pthread_mutex_unlock(&p->lock);
	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	*cap = size;
	return buf;
}

void fsp_bufpool_put(struct fsp_bufpool *p, void *buf, size_t cap)
{
	if (!buf)
		return;
	size_t size;
	struct size_class *cs = &p->cls[class_of(cap, &size)];
	struct free_buf *f = buf;
	pthread_mutex_lock(&p->lock);
	f->next = cs->free;
	cs->free = f;
	pthread_mutex_unlock(&p->lock);
}

static int in_chunks(const struct chunk *ch, size_t n, uintptr_t start, uintptr_t end)
{
	for (size_t i = 0; i < n; i++)
		if ((uintptr_t)ch[i].addr < end && start < (uintptr_t)ch[i].addr + ch[i].len)
			return 1;
	return 0;
}

void fsp_bufpool_usage(struct fsp_bufpool *p, uint64_t *mapped, uint64_t *huge)
{
	*mapped = *huge = 0;
	pthread_mutex_lock(&p->lock);
	size_t n = p->nchunks;
	struct chunk *ch = n ? malloc(n * sizeof(*ch)) : NULL;
	if (ch)
		memcpy(ch, p->chunks, n * sizeof(*ch));
	*mapped = p->mapped;
	pthread_mutex_unlock(&p->lock);
	FILE *f = ch ? fopen("/proc/self/smaps", "re") : NULL;
	if (f) {
		/* adjacent chunks may share one kernel mapping: count each mapping once */
		char line[512];
		int in = 0;
		while (fgets(line, sizeof(line), f)) {
			unsigned long start, end, kb;
			if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
				in = in_chunks(ch, n, start, end);
			else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
				*huge += (uint64_t)kb * 1024;
		}
		fclose(f);
	}
	free(ch);
	if (*huge > *mapped)
		*huge = *mapped;
}

void fsp_bufpool_free(struct fsp_bufpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nchunks; i++)
		munmap(p->chunks[i].addr, p->chunks[i].len);
	free(p->chunks);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
