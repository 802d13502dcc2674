/*
 * ring.h - what every kernel-side trace (block.c, fuse.c) does alike with
 * its BPF programs: their life from load to teardown around the skeleton
 * bpftool generates (fsp_trace_*), a consumer thread that drains a BPF ring
 * buffer every few milliseconds (the programs submit without waking it),
 * the counters the programs keep of what they lost, libbpf's messages kept
 * for the one-line reason of a failure, and the sizes tests may change.
 * ring.c is only built with eBPF (HAVE_BPF); FSP_TRACE_UNBUILT serves the
 * builds without.
 */
#ifndef FSP_TRACE_RING_H
#define FSP_TRACE_RING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_map;
struct bpf_object_skeleton;
struct bpf_program;
struct ring_buffer;

/* Why a trace cannot start in a build without eBPF. */
#define FSP_TRACE_UNBUILT "this fsprism was built without eBPF (configure --disable-bpf, or libbpf, clang, bpftool or the kernel's BTF were missing)"

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

/*
 * A trace's programs from load to teardown. The trace opens its generated
 * skeleton (fsp_trace_libbpf_quiet first, fsp_trace_open_why on a failure)
 * and sets its read-only data; fsp_trace_start does the rest with the
 * skeleton's `skeleton` member; after fsp_trace_free the trace destroys
 * its skeleton.
 */
struct fsp_trace {
	struct bpf_object_skeleton *skel; /* NULL: never started */
	struct fsp_tring ring;
	int stopped;
};

/* The two maps every trace sizes before load, its consumer, and its names
 * in the reasons of a failure. */
struct fsp_trace_spec {
	const char *program;      /* "cannot load the PROGRAM BPF program: ..." */
	const char *tracepoints;  /* "cannot attach to the TRACEPOINTS tracepoints: ..." */
	struct bpf_map *events;   /* the ring buffer, of ring_bytes */
	size_t ring_bytes;
	struct bpf_map *inflight; /* the slots of requests in flight, slots of them */
	uint32_t slots;
	fsp_tring_fn on_event;    /* with ctx, on the consumer thread */
	void *ctx;
};

/* Size the maps, load, attach, start the consumer. 0, or -1 with why set
 * (fsp_trace_free then undoes what was done). */
int fsp_trace_start(struct fsp_trace *t, struct bpf_object_skeleton *skel,
		    const struct fsp_trace_spec *spec, char *why, size_t whylen);
/* Detach the programs (nothing stays attached), then stop the consumer and
 * drain what is left; once. 1 when this call stopped started programs:
 * their counters are final, for the caller to read now; else 0. */
int fsp_trace_stop(struct fsp_trace *t);
/* Stop, and free the ring buffer. */
void fsp_trace_free(struct fsp_trace *t);

/* libbpf's messages are kept, not printed: the last names the failure in
 * the reasons below. */
void fsp_trace_libbpf_quiet(void);
/* 1 when the kernel has BTF, which the programs (tp_btf) need; else 0
 * with why set: "the kernel has no BTF (...)". */
int fsp_trace_have_btf(char *why, size_t whylen);
/* The reason a skeleton's open failed (errno): "cannot open the WHAT BPF
 * program: ...". */
void fsp_trace_open_why(const char *what, char *why, size_t whylen);

/* 1 when the kernel's BTF (vmlinux, else module's if not NULL) has
 * tracepoint `name`, e.g. ("fuse", "fuse_request_send"). */
int fsp_trace_has_tracepoint(const char *module, const char *name);

/* given if not 0, else the positive number in environment variable name,
 * else dflt. */
size_t fsp_trace_size(size_t given, const char *name, size_t dflt);
/* The rows a trace keeps: max if not 0, else FSPRISM_TRACE_MAX_ROWS, else
 * 4 Mi (one knob for both traces). */
size_t fsp_trace_max_rows(size_t max);
/* Runs of p the kernel skipped (it was already running on that CPU). */
uint64_t fsp_trace_prog_misses(struct bpf_program *p);
/* Counter `which` of a per-CPU array of u64, summed over the CPUs. */
uint64_t fsp_trace_percpu_sum(struct bpf_map *m, uint32_t which);
/* The entries of the array map m (values of size bytes) whose u32 at
 * open_at is not 0: once the programs are detached, the requests seen
 * begun and never seen to end. FSP_TRACE_SLOTS_OPEN(m, T): of a map of T
 * with a member `open`. */
uint64_t fsp_trace_slots_open(struct bpf_map *m, size_t size, size_t open_at);
#define FSP_TRACE_SLOTS_OPEN(m, T) fsp_trace_slots_open(m, sizeof(T), offsetof(T, open))

#endif
