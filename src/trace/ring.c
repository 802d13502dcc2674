/*
 * ring.c - the BPF ring-buffer consumer and the helpers every trace shares
 * (ring.h).
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
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "src/trace/ring.h"

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

void fsp_trace_load_why(int err, const char *what, char *why, size_t whylen)
{
	if (err == -EPERM || errno == EPERM)
		snprintf(why, whylen, "no privilege to load BPF programs (needs root, or CAP_BPF and CAP_PERFMON)");
	else
		snprintf(why, whylen, "cannot load the %s BPF program: %s%s%s", what,
			 strerror(-err), libbpf_last[0] ? ": " : "", libbpf_last);
}

void fsp_trace_attach_why(int err, const char *what, char *why, size_t whylen)
{
	snprintf(why, whylen, "cannot attach to the %s tracepoints: %s%s%s", what, strerror(-err),
		 libbpf_last[0] ? ": " : "", libbpf_last);
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

size_t fsp_trace_env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	char *end;
	if (!v || !*v)
		return dflt;
	unsigned long long n = strtoull(v, &end, 10);
	return *end || !n ? dflt : (size_t)n;
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
#endif
