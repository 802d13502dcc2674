/*
 * microbench.c - CPU cost of fsprism's own inner loops, so that the figures
 * quoted in docs/profiles.md and docs/emulation.md can be re-measured:
 *
 *   pattern   stamping a write buffer (what the engine does before every
 *             write) against refilling it with fresh random data;
 *   emap      the copy-on-write bookkeeping of one overwrite (classify,
 *             allocate, insert, release) on a fragmenting 256 MiB file, as in
 *             validation test 1, for both allocator policies;
 *   oplog     the per-operation log: a producer's cost per record (clock
 *             reads excluded), the whole process's CPU per record while the
 *             log is open (the writer's histograms and spill file included)
 *             and at close (loading the rows into SQLite), per --record mode;
 *   store     one 4 KiB random overwrite through the whole emulated store in
 *             several --cow/--journal modes, on a store in /dev/shm (page
 *             cache, no device), i.e. the emulation's CPU and memory cost
 *             without the drive.
 *
 * Times are CPU time of this thread, best of N rounds (the development
 * machine is a shared 2-core VM: compare ratios within one run, not
 * absolute figures across runs). Usage: bench/microbench [rounds]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fs/emu/alloc.h"
#include "fs/emu/extent.h"
#include "fs/emu/io.h"
#include "fs/emu/store.h"
#include "src/db/oplog.h"
#include "bench/engine/pattern.h"
#include "src/db/store.h"

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void bench_pattern(int rounds)
{
	static unsigned char buf[128 << 10] __attribute__((aligned(4096)));
	struct fsp_pattern p = { .kind = FSP_PATTERN_RANDOM };
	uint64_t rng = fsp_rand_seed(1), counter = 0;
	const size_t sizes[] = { 4096, 128 << 10 };
	printf("pattern (ns per write buffer, best of %d)\n", rounds);
	printf("  %-8s %14s %14s %8s\n", "size", "stamp", "refill", "ratio");
	for (int s = 0; s < 2; s++) {
		double best_stamp = 1e30, best_fill = 1e30;
		const int iters = sizes[s] == 4096 ? 200000 : 4000;
		for (int r = 0; r < rounds; r++) {
			double t0 = cpu_ns();
			for (int i = 0; i < iters; i++)
				fsp_pattern_refresh(&p, buf, sizes[s], &rng, &counter);
			double t1 = cpu_ns();
			for (int i = 0; i < iters / 10; i++)
				fsp_pattern_fill(&p, buf, sizes[s], &rng);
			double t2 = cpu_ns();
			double stamp = (t1 - t0) / iters, fill = (t2 - t1) / (iters / 10);
			best_stamp = stamp < best_stamp ? stamp : best_stamp;
			best_fill = fill < best_fill ? fill : best_fill;
		}
		printf("  %-8zu %14.1f %14.1f %8.1f\n", sizes[s], best_stamp, best_fill,
		       best_fill / best_stamp);
	}
}

struct rel {
	struct emu_alloc *a;
	uint64_t txid;
};

static void release(void *ctx, uint64_t pblk, uint64_t len, uint64_t txid)
{
	struct rel *r = ctx;
	if (txid == r->txid)
		emu_alloc_free_now(r->a, pblk, len);
	else
		emu_alloc_free(r->a, pblk, len);
}

static void bench_emap(int rounds)
{
	const uint64_t file = 65536, store = 4 * 65536;
	printf("emap: 8192 random one-block CoW overwrites of a 65536-block file, commit every 1024 "
	       "(ns per overwrite, best of %d)\n", rounds);
	printf("  %-10s %10s %10s\n", "policy", "ns", "extents");
	for (int pol = 0; pol < 2; pol++) {
		double best = 1e30;
		size_t extents = 0;
		for (int r = 0; r < rounds; r++) {
			struct emu_alloc *a = emu_alloc_new(store, 4096, (enum emu_alloc_policy)pol);
			struct emu_emap m;
			struct rel rl = { a, 0 };
			emu_emap_init(&m, 32768);
			for (uint64_t l = 0; l < file; l += 32) {
				struct emu_run run;
				size_t nr;
				emu_alloc_get(a, 32, &run, 1, &nr);
				emu_emap_insert(&m, l, run.start, run.len, emu_alloc_txid(a),
						emu_alloc_txid(a), NULL, NULL);
			}
			emu_alloc_commit(a);
			uint64_t rng = fsp_rand_seed(42);
			double t0 = cpu_ns();
			for (int i = 0; i < 8192; i++) {
				uint64_t l = fsp_rand64(&rng) % file, cur = emu_alloc_txid(a);
				struct emu_map mp;
				emu_emap_classify(&m, l, 1, cur, &mp);
				if (mp.kind == EMU_MAP_MOVE) {
					struct emu_run run;
					size_t nr;
					emu_alloc_get(a, 1, &run, 1, &nr);
					rl.txid = cur;
					emu_emap_insert(&m, l, run.start, 1, cur, cur, release, &rl);
				}
				if (i % 1024 == 1023)
					emu_alloc_commit(a);
			}
			double ns = (cpu_ns() - t0) / 8192;
			best = ns < best ? ns : best;
			extents = emu_emap_count_physical(&m);
			emu_emap_free(&m);
			emu_alloc_destroy(a);
		}
		printf("  %-10s %10.0f %10zu\n", emu_alloc_policy_name((enum emu_alloc_policy)pol),
		       best, extents);
	}
}

static double process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void bench_oplog(int rounds)
{
	static const char *const modes[] = { "hist", "full" };
	char path[256], err[256];
	snprintf(path, sizeof(path), "/dev/shm/fsprism-microbench.%d.db", (int)getpid());
	printf("oplog: 1M records from one thread into a database in /dev/shm "
	       "(ns per record, best of %d)\n", rounds);
	printf("  %-6s %12s %14s %10s %8s\n", "mode", "producer", "while open", "at close",
	       "dropped");
	for (int k = 0; k < 2; k++) {
		double best_add = 1e30, best_open = 1e30, best_close = 1e30;
		uint64_t dropped = 0;
		for (int r = 0; r < rounds; r++) {
			unlink(path);
			struct fsp_store *db = fsp_store_open(path, err, sizeof(err));
			if (!db) {
				fprintf(stderr, "microbench: %s\n", err);
				exit(1);
			}
			struct fsp_run_info info = { .kind = "mount", .options = "microbench",
						     .backing_path = "/dev/shm", .record_mode = modes[k] };
			int64_t run = fsp_store_begin_run(db, &info);
			enum fsp_record_mode mode;
			unsigned sample_n;
			fsp_record_mode_parse(modes[k], &mode, &sample_n);
			struct fsp_oplog *log = fsp_oplog_open(db, run, mode, sample_n, 0);
			const int n = 1000000;
			struct fsp_rec rec = { .op = FSP_OP_READ, .length = 4096, .bytes = 4096 };
			double p0 = process_cpu_ns(), t0 = cpu_ns();
			for (int i = 0; i < n; i++) {
				rec.start_ns = (uint64_t)i * 1000;
				rec.total_ns = 20000 + (uint64_t)(i % 5000);
				rec.backing_ns = 18000 + (uint64_t)(i % 3000);
				rec.offset = (uint64_t)i * 4096;
				fsp_oplog_add(log, &rec);
				if ((i & 1023) == 1023) {
					/* about 100k records/s, as a fast FUSE mount produces */
					struct timespec ts = { 0, 10 * 1000 * 1000 };
					double t = cpu_ns();
					nanosleep(&ts, NULL);
					t0 += cpu_ns() - t;
				}
			}
			double add = (cpu_ns() - t0) / n;
			/* let the writer finish its last pass before "while open" ends */
			struct timespec settle = { 0, 20 * 1000 * 1000 };
			nanosleep(&settle, NULL);
			dropped = fsp_oplog_dropped(log);
			double p1 = process_cpu_ns();
			fsp_oplog_close(log);
			double open_ns = (p1 - p0) / n, close_ns = (process_cpu_ns() - p1) / n;
			fsp_store_end_run(db, run, 0, 0);
			fsp_store_close(db);
			best_add = add < best_add ? add : best_add;
			best_open = open_ns < best_open ? open_ns : best_open;
			best_close = close_ns < best_close ? close_ns : best_close;
		}
		printf("  %-6s %12.1f %14.1f %10.1f %8llu\n", modes[k], best_add, best_open,
		       best_close, (unsigned long long)dropped);
	}
	fsp_store_remove_files(path);
}

static void bench_store(int rounds)
{
	static const struct {
		int cow, journal;
	} modes[] = { { 0, 0 }, { 2, 0 }, { 0, 2 }, { 2, 2 }, { 0, 3 } };
	static unsigned char buf[4096] __attribute__((aligned(4096)));
	char path[256];
	snprintf(path, sizeof(path), "/dev/shm/fsprism-microbench.%d", (int)getpid());
	printf("store: 4 KiB random overwrites of a 64 MiB file, store in /dev/shm, commit every 5 s "
	       "(us of CPU per write incl. its share of commits, best of %d)\n", rounds);
	printf("  %-8s %-10s %10s %12s\n", "cow", "journal", "us/write", "device/user");
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		double best = 1e30, amp = 0;
		for (int r = 0; r < rounds; r++) {
			struct emu_store_cfg cfg;
			struct emu_store_info info;
			char err[256];
			emu_store_cfg_default(&cfg);
			cfg.cow = modes[k].cow;
			cfg.journal = modes[k].journal;
			cfg.format = 1;
			cfg.flush = 0;
			unlink(path);
			struct emu_store *st = emu_store_open(path, 256u << 20, &cfg, &info, err, sizeof(err));
			if (!st) {
				fprintf(stderr, "microbench: %s\n", err);
				exit(1);
			}
			struct emu_cx cx = { 0 };
			for (uint64_t off = 0; off < (64u << 20); off += sizeof(buf))
				emu_store_write(st, &cx, 1, buf, sizeof(buf), off);
			emu_store_commit(st, &cx);
			struct emu_store_acct a0, a1;
			emu_store_get_acct(st, &a0);
			uint64_t rng = fsp_rand_seed(7);
			const int n = 20000;
			double t0 = cpu_ns();
			for (int i = 0; i < n; i++) {
				uint64_t off = (fsp_rand64(&rng) % 16384) * 4096;
				emu_store_write(st, &cx, 1, buf, sizeof(buf), off);
				if (i % 4000 == 3999) /* ~5 s of writes at a few thousand IOPS */
					emu_store_commit(st, &cx);
			}
			emu_store_commit(st, &cx);
			double us = (cpu_ns() - t0) / n / 1000;
			emu_store_get_acct(st, &a1);
			uint64_t dev = 0;
			for (int kind = 0; kind < EMU_IO_FLUSH; kind++)
				dev += a1.bytes[kind] - a0.bytes[kind];
			amp = (double)dev / (double)(a1.user_write_bytes - a0.user_write_bytes);
			best = us < best ? us : best;
			emu_store_close(st, NULL);
		}
		printf("  %-8s %-10s %10.2f %12.3f\n", emu_cow_mode_name(modes[k].cow),
		       emu_journal_mode_name(modes[k].journal), best, amp);
	}
	unlink(path);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	if (rounds < 1) {
		fprintf(stderr, "usage: microbench [rounds]\n");
		return 2;
	}
	bench_pattern(rounds);
	bench_emap(rounds);
	bench_oplog(rounds < 3 ? rounds : 3);
	bench_store(rounds < 3 ? rounds : 3);
	return 0;
}
