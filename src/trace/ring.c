/*
 * ring.c - a trace's programs from load to teardown, the BPF ring-buffer
 * consumer, and the helpers every trace shares (ring.h).
 */
#include "config.h"
#ifdef HAVE_BPF
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "src/base/err.h"
#include "src/trace/ring.h"

#define DEFAULT_MAX_ROWS (4u << 20)

static void *consumer_main(void *arg)
{
	struct fsp_tring *r = arg;
	struct timespec nap = { 0, FSP_TRING_POLL_MS * 1000000L };
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		ring_buffer__consume(r->rb);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int fsp_tring_start(struct fsp_tring *r, struct bpf_map *map, fsp_tring_fn fn, void *ctx,
		    char *why, size_t whylen)
{
	memset(r, 0, sizeof(*r));
	r->rb = ring_buffer__new(bpf_map__fd(map), fn, ctx, NULL);
	if (!r->rb) {
		snprintf(why, whylen, "cannot map the BPF ring buffer: %s", strerror(errno));
		return -1;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&r->consumer, NULL, consumer_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		snprintf(why, whylen, "cannot start the trace's consumer thread: %s", strerror(err));
		return -1;
	}
	r->consumer_up = 1;
	return 0;
}

void fsp_tring_stop(struct fsp_tring *r)
{
	if (r->consumer_up) {
		__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
		pthread_join(r->consumer, NULL);
		r->consumer_up = 0;
	}
	if (r->rb)
		ring_buffer__consume(r->rb);
}

void fsp_tring_free(struct fsp_tring *r)
{
	fsp_tring_stop(r);
	ring_buffer__free(r->rb);
	r->rb = NULL;
}

static char libbpf_last[256];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
	libbpf_last[strcspn(libbpf_last, "\n")] = 0;
	return 0;
}

void fsp_trace_libbpf_quiet(void)
{
	libbpf_set_print(libbpf_print);
	libbpf_last[0] = 0;
}

int fsp_trace_have_btf(char *why, size_t whylen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 1;
	fsp_set_err(why, whylen, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s)",
		    strerror(errno));
	return 0;
}

void fsp_trace_open_why(const char *what, char *why, size_t whylen)
{
	fsp_set_err(why, whylen, "cannot open the %s BPF program: %s", what, strerror(errno));
}

static void load_why(int err, const char *what, char *why, size_t whylen)
{
	if (err == -EPERM || errno == EPERM)
		snprintf(why, whylen, "no privilege to load BPF programs (needs root, or CAP_BPF and CAP_PERFMON)");
	else
		snprintf(why, whylen, "cannot load the %s BPF program: %s%s%s", what,
			 strerror(-err), libbpf_last[0] ? ": " : "", libbpf_last);
}

static void attach_why(int err, const char *what, char *why, size_t whylen)
{
	snprintf(why, whylen, "cannot attach to the %s tracepoints: %s%s%s", what, strerror(-err),
		 libbpf_last[0] ? ": " : "", libbpf_last);
}

int fsp_trace_start(struct fsp_trace *t, struct bpf_object_skeleton *skel,
		    const struct fsp_trace_spec *spec, char *why, size_t whylen)
{
	t->skel = skel;
	/* a map's size is set between open and load; a failure is the load's */
	int err = bpf_map__set_max_entries(spec->events, (uint32_t)spec->ring_bytes);
	if (!err)
		err = bpf_map__set_max_entries(spec->inflight, spec->slots);
	if (!err)
		err = bpf_object__load_skeleton(skel);
	if (err) {
		load_why(err, spec->program, why, whylen);
		return -1;
	}
	err = bpf_object__attach_skeleton(skel);
	if (err) {
		attach_why(err, spec->tracepoints, why, whylen);
		return -1;
	}
	return fsp_tring_start(&t->ring, spec->events, spec->on_event, spec->ctx, why, whylen);
}

int fsp_trace_stop(struct fsp_trace *t)
{
	if (t->stopped)
		return 0;
	t->stopped = 1;
	if (t->skel)
		bpf_object__detach_skeleton(t->skel); /* destroys the links */
	fsp_tring_stop(&t->ring);
	return t->skel != NULL;
}

void fsp_trace_free(struct fsp_trace *t)
{
	fsp_trace_stop(t);
	fsp_tring_free(&t->ring);
}

int fsp_trace_has_tracepoint(const char *module, const char *name)
{
	/* tp_btf programs attach through the kernel's BTF, not tracefs (which
	 * a fresh boot may not have mounted): a tracepoint is there when its
	 * btf_trace_ typedef is, in vmlinux or in its module's BTF. */
	char type[128];
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	struct btf *vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return 0;
	int found = btf__find_by_name_kind(vmlinux, type, BTF_KIND_TYPEDEF) > 0;
	if (!found && module) {
		struct btf *mod = btf__load_module_btf(module, vmlinux);
		if (mod) {
			found = btf__find_by_name_kind(mod, type, BTF_KIND_TYPEDEF) > 0;
			btf__free(mod);
		}
	}
	btf__free(vmlinux);
	return found;
}

size_t fsp_trace_size(size_t given, const char *name, size_t dflt)
{
	const char *v = getenv(name);
	char *end;
	if (given)
		return given;
	if (!v || !*v)
		return dflt;
	unsigned long long n = strtoull(v, &end, 10);
	return *end || !n ? dflt : (size_t)n;
}

size_t fsp_trace_max_rows(size_t max)
{
	return fsp_trace_size(max, "FSPRISM_TRACE_MAX_ROWS", DEFAULT_MAX_ROWS);
}

uint64_t fsp_trace_prog_misses(struct bpf_program *p)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) != 0)
		return 0;
	return info.recursion_misses;
}

uint64_t fsp_trace_percpu_sum(struct bpf_map *m, uint32_t which)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return 0;
	uint64_t *v = calloc((size_t)ncpu, sizeof(*v)), sum = 0;
	if (v && bpf_map__lookup_elem(m, &which, sizeof(which), v, (size_t)ncpu * sizeof(*v),
				      0) == 0)
		for (int i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}
uint64_t fsp_trace_slots_open(struct bpf_map *m, size_t size, size_t open_at)
{
	uint32_t n = bpf_map__max_entries(m), flag;
	unsigned char v[64];
	uint64_t open = 0;
	if (bpf_map__value_size(m) != size || size > sizeof(v) || open_at + sizeof(flag) > size)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (bpf_map__lookup_elem(m, &i, sizeof(i), v, size, 0) == 0) {
			memcpy(&flag, v + open_at, sizeof(flag));
			open += flag != 0;
		}
	return open;
}
#endif
