/*
 * ring.h - what every kernel-side trace (block.c, fuse.c) does alike with
 * its BPF programs: a consumer thread that drains a BPF ring buffer every
 * few milliseconds (the programs submit without waking it), the counters
 * the programs keep of what they lost, libbpf's messages kept for the
 * one-line reason of a failure, and the sizes tests may change.
 * Only built with eBPF (HAVE_BPF).
 */
#ifndef FSP_TRACE_RING_H
#define FSP_TRACE_RING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_map;
struct bpf_program;
struct ring_buffer;

/* How often the consumer drains the ring buffer. */
#define FSP_TRING_POLL_MS 5

struct fsp_tring {
	struct ring_buffer *rb;
	pthread_t consumer;
	int consumer_up;
	int stop; /* atomic: set by fsp_tring_stop, read by the consumer */
};

/* One record: what libbpf's ring_buffer_sample_fn is. */
typedef int (*fsp_tring_fn)(void *ctx, void *data, size_t size);

/* Map the ring buffer `map` and start its consumer thread (which blocks
 * every signal: Ctrl-C must reach the measuring thread). 0, or -1 with
 * why set. */
int fsp_tring_start(struct fsp_tring *r, struct bpf_map *map, fsp_tring_fn fn, void *ctx,
		    char *why, size_t whylen);
/* Stop the consumer and drain what is left (the programs detached first). */
void fsp_tring_stop(struct fsp_tring *r);
void fsp_tring_free(struct fsp_tring *r);

/* libbpf's messages are kept, not printed: the last names the failure in
 * the reasons below. */
void fsp_trace_libbpf_quiet(void);
/* The reason a skeleton's load failed, one line: "no privilege ..." or
 * "cannot load the WHAT BPF program: ...". */
void fsp_trace_load_why(int err, const char *what, char *why, size_t whylen);
/* The reason a skeleton's attach failed: "cannot attach to the WHAT
 * tracepoints: ...". */
void fsp_trace_attach_why(int err, const char *what, char *why, size_t whylen);

/* 1 when the kernel's BTF (vmlinux, else module's if not NULL) has
 * tracepoint `name`, e.g. ("fuse", "fuse_request_send"). */
int fsp_trace_has_tracepoint(const char *module, const char *name);

/* The positive number in environment variable name, else dflt. */
size_t fsp_trace_env_size(const char *name, size_t dflt);
/* Runs of p the kernel skipped (it was already running on that CPU). */
uint64_t fsp_trace_prog_misses(struct bpf_program *p);
/* Counter `which` of a per-CPU array of u64, summed over the CPUs. */
uint64_t fsp_trace_percpu_sum(struct bpf_map *m, uint32_t which);

#endif
