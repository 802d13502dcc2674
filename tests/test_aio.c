/*
 * test_aio.c - the FUSE layer's asynchronous backing IO (fs/fuse/aio.h):
 * slots with buffers of the size asked (a power of two, page-aligned),
 * recycled with their buffers and grown in place; real O_DIRECT reads and
 * writes of a file on disk through fsp_aio_submit, each answered by one
 * done() on the reaper thread with the byte count or -errno (short reads
 * at the end, EINVAL for a misaligned offset) and the collection time when
 * timed; the synchronous fallback (a slot that cannot be had is NULL and
 * the slot kept; a submission the kernel refuses is -errno, the slot still
 * the caller's, nothing counted in flight); several submitting threads on
 * a small context; and stop, which waits for every done() in flight.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "fs/fuse/aio.h"
#include "src/base/clock.h"
#include "tests/testdir.h"
#include "tests/unit.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define FILE_SIZE MIB

static char dir[64], path[96];
static int dfd = -1; /* the file, O_DIRECT */

/* What the test expects of one IO; the slot carries it. */
struct slot {
	struct fsp_aio_io io;
	int write;
	uint64_t off;
	long want; /* the result done() must see */
	unsigned delay_us; /* done() sleeps this long (to be in flight at stop) */
};

/* What the done() calls saw, under lock. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls, wrong_res, wrong_data, untimely, finished;
	pthread_t thread;
	int threads_seen; /* done() calls on a thread other than the first one's */
	uint64_t last_done_ns;
} seen = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0 };

static int timed_run; /* the aio under test reads the clock */

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)((off >> 9) * 13 + off);
}

static void fill(uint8_t *buf, uint64_t off, size_t len, uint8_t x)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(off + i) ^ x;
}

static int matches(const uint8_t *buf, uint64_t off, size_t len, uint8_t x)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(pattern(off + i) ^ x))
			return 0;
	return 1;
}

static void done(struct fsp_aio_io *io, long res, uint64_t done_ns)
{
	struct slot *s = (struct slot *)io;
	/* the buffer is the caller's only until done() returns: check it here */
	int data_ok = s->write || res <= 0 || matches(io->buf, s->off, (size_t)res, 0);
	int time_ok = timed_run ? done_ns >= io->submit_ns && done_ns <= fsp_now_ns()
				: done_ns == 0;
	if (s->delay_us)
		usleep(s->delay_us);
	pthread_mutex_lock(&seen.lock);
	if (seen.calls == 0)
		seen.thread = pthread_self();
	else if (!pthread_equal(seen.thread, pthread_self()))
		seen.threads_seen++;
	seen.calls++;
	seen.wrong_res += res != s->want;
	seen.wrong_data += !data_ok;
	seen.untimely += !time_ok;
	seen.last_done_ns = done_ns;
	seen.finished++; /* last: done() has returned but for the unlock */
	pthread_cond_broadcast(&seen.cond);
	pthread_mutex_unlock(&seen.lock);
}

/* Wait (at most 5 s) until n done() calls in all have been seen. */
static void wait_calls(int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&seen.lock);
	while (seen.finished < n &&
	       pthread_cond_timedwait(&seen.cond, &seen.lock, &until) == 0)
		;
	int got = seen.finished;
	pthread_mutex_unlock(&seen.lock);
	assert_int_equal(got, n);
}

/* Every done() call saw the result and the data its IO expected, a
 * collection time as the run asked, and all on one (reaper) thread. */
static void seen_all_right(void)
{
	assert_int_equal(seen.wrong_res, 0);
	assert_int_equal(seen.wrong_data, 0);
	assert_int_equal(seen.untimely, 0);
	assert_int_equal(seen.threads_seen, 0);
}

static int setup(void **state)
{
	(void)state;
	pthread_mutex_lock(&seen.lock);
	seen.calls = seen.wrong_res = seen.wrong_data = seen.untimely = 0;
	seen.finished = seen.threads_seen = 0;
	pthread_mutex_unlock(&seen.lock);
	/* on disk: tmpfs may refuse O_DIRECT */
	if (test_dir_make(dir, sizeof(dir), "/var/tmp", "aio"))
		return -1;
	test_dir_path(path, sizeof(path), dir, "data");
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	uint8_t *buf = malloc(FILE_SIZE);
	fill(buf, 0, FILE_SIZE, 0);
	int bad = pwrite(fd, buf, FILE_SIZE, 0) != (ssize_t)FILE_SIZE || fsync(fd);
	free(buf);
	close(fd);
	if (bad)
		return -1;
	dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	return 0; /* dfd < 0: the tests that need it skip */
}

static int teardown(void **state)
{
	(void)state;
	if (dfd >= 0)
		close(dfd);
	dfd = -1;
	unlink(path);
	return rmdir(dir);
}

static void need_direct(void)
{
	if (dfd < 0)
		skip(); /* no O_DIRECT on this file system */
}

/* An aio of depth slots of struct slot, reading the clock or not (and the
 * done() calls expecting it). */
static struct fsp_aio *start(unsigned depth, int timed)
{
	timed_run = timed;
	struct fsp_aio *a = fsp_aio_start(depth, sizeof(struct slot), timed);
	assert_non_null(a);
	return a;
}

static struct slot *get(struct fsp_aio *a, size_t len)
{
	struct slot *s = (struct slot *)fsp_aio_get(a, len);
	assert_non_null(s);
	assert_true(s->io.cap >= len);
	assert_int_equal(s->io.cap & (s->io.cap - 1), 0); /* a power of two */
	assert_int_equal((uintptr_t)s->io.buf % 4096, 0); /* page-aligned, as O_DIRECT needs */
	s->io.done = done;
	s->delay_us = 0;
	return s;
}

static void prep(struct slot *s, int write, uint64_t off, size_t len, long want)
{
	s->write = write;
	s->off = off;
	s->want = want;
	if (write) {
		fill(s->io.buf, off, len, 0xff);
		io_prep_pwrite(&s->io.cb, dfd, s->io.buf, len, (long long)off);
	} else {
		memset(s->io.buf, 0, len);
		io_prep_pread(&s->io.cb, dfd, s->io.buf, len, (long long)off);
	}
	s->io.submit_ns = timed_run ? fsp_now_ns() : 0;
}

UNIT_TEST_SETUP(test_slots, setup, teardown)
{
	(void)state;
	struct fsp_aio *a = start(8, 0);
	uint64_t mapped, huge;
	fsp_aio_usage(a, &mapped, &huge);
	assert_int_equal(mapped, 0); /* nothing before the first slot */

	/* a buffer of the next power of two from 4 KiB */
	const size_t asks[] = { 1, 4096, 4097, 100000, 131072, 2 * MIB + 1 };
	const size_t caps[] = { 4096, 4096, 8192, 131072, 131072, 4 * MIB };
	struct slot *s[6];
	for (int i = 0; i < 6; i++) {
		s[i] = get(a, asks[i]);
		assert_int_equal(s[i]->io.cap, caps[i]);
		memset(s[i]->io.buf, i, s[i]->io.cap); /* all of it is ours */
		for (int k = 0; k < i; k++)
			assert_true(s[k] != s[i] &&
				    ((char *)s[k]->io.buf + s[k]->io.cap <= (char *)s[i]->io.buf ||
				     (char *)s[i]->io.buf + s[i]->io.cap <= (char *)s[k]->io.buf));
	}
	fsp_aio_usage(a, &mapped, &huge);
	/* a 2 MiB chunk each for 4, 8 and 128 KiB, and one 4 MiB buffer */
	assert_int_equal(mapped, 3 * 2 * MIB + 4 * MIB);
	assert_true(huge <= mapped);

	/* a slot given back comes back with its buffer, mapping nothing */
	void *buf1 = s[1]->io.buf;
	fsp_aio_put(a, &s[1]->io);
	struct slot *again = get(a, 2000);
	assert_ptr_equal(again, s[1]);
	assert_ptr_equal(again->io.buf, buf1);
	assert_int_equal(again->io.cap, 4096);

	/* asked for more, the same slot grows its buffer */
	fsp_aio_put(a, &again->io);
	again = get(a, 65536);
	assert_ptr_equal(again, s[1]);
	assert_int_equal(again->io.cap, 65536);
	/* and keeps the larger one when asked for less */
	fsp_aio_put(a, &again->io);
	again = get(a, 512);
	assert_ptr_equal(again, s[1]);
	assert_int_equal(again->io.cap, 65536);
	fsp_aio_usage(a, &mapped, &huge);
	assert_int_equal(mapped, 4 * 2 * MIB + 4 * MIB); /* one chunk for 64 KiB */

	for (int i = 0; i < 6; i++)
		fsp_aio_put(a, &s[i]->io);
	fsp_aio_stop(a);

	/* a slot size below the header's is the header's */
	a = fsp_aio_start(2, 1, 0);
	assert_non_null(a);
	struct fsp_aio_io *io = fsp_aio_get(a, 4096);
	assert_non_null(io);
	assert_int_equal(io->cap, 4096);
	fsp_aio_put(a, io);
	fsp_aio_stop(a);
}

/* No slot can be had: NULL, and the slot it would have grown is kept. */
UNIT_TEST_SETUP(test_no_slot, setup, teardown)
{
	(void)state;
	struct fsp_aio *a = start(4, 0);
	struct slot *s = get(a, 4096);
	void *buf = s->io.buf;
	fsp_aio_put(a, &s->io);
	assert_null(fsp_aio_get(a, SIZE_MAX)); /* no buffer class holds it */
	struct slot *again = get(a, 4096);
	assert_ptr_equal(again, s);
	assert_ptr_equal(again->io.buf, buf);
	fsp_aio_put(a, &again->io);
	fsp_aio_stop(a);
}

static void run_read_write(int timed)
{
	need_direct();
	struct fsp_aio *a = start(16, timed);
	struct slot *s;
	int n = 0;
	/* reads of several sizes and places */
	for (int k = 0; k < 6; k++) {
		size_t len = (size_t)4096 << k;
		uint64_t off = (uint64_t)k * 3 * 4096;
		s = get(a, len);
		prep(s, 0, off, len, (long)len);
		assert_int_equal(fsp_aio_submit(a, &s->io), 0);
		n++;
	}
	/* short at the end of the file, empty past it */
	s = get(a, 8192);
	prep(s, 0, FILE_SIZE - 4096, 8192, 4096);
	assert_int_equal(fsp_aio_submit(a, &s->io), 0);
	s = get(a, 4096);
	prep(s, 0, FILE_SIZE, 4096, 0);
	assert_int_equal(fsp_aio_submit(a, &s->io), 0);
	/* O_DIRECT refuses a misaligned offset: an error in done(), not at submit */
	s = get(a, 4096);
	prep(s, 0, 1, 4096, -EINVAL);
	assert_int_equal(fsp_aio_submit(a, &s->io), 0);
	n += 3;
	wait_calls(n);
	/* writes: the file then holds what they wrote, around it what it had */
	const uint64_t woff[] = { 0, 64 * KIB, 512 * KIB };
	const size_t wlen[] = { 4096, 8192, 128 * KIB };
	for (int k = 0; k < 3; k++) {
		s = get(a, wlen[k]);
		prep(s, 1, woff[k], wlen[k], (long)wlen[k]);
		assert_int_equal(fsp_aio_submit(a, &s->io), 0);
		n++;
	}
	wait_calls(n);
	fsp_aio_stop(a);

	assert_int_equal(seen.calls, n);
	seen_all_right(); /* one reaper answers all */
	assert_false(pthread_equal(seen.thread, pthread_self()));
	if (timed)
		assert_true(seen.last_done_ns > 0);

	uint8_t *buf = malloc(FILE_SIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, FILE_SIZE, 0), FILE_SIZE);
	close(fd);
	uint64_t off = 0;
	for (int k = 0; k < 3; k++) {
		assert_true(matches(buf + off, off, woff[k] - off, 0));
		assert_true(matches(buf + woff[k], woff[k], wlen[k], 0xff));
		off = woff[k] + wlen[k];
	}
	assert_true(matches(buf + off, off, FILE_SIZE - off, 0));
	free(buf);
}

UNIT_TEST_SETUP(test_read_write_timed, setup, teardown)
{
	(void)state;
	run_read_write(1);
}

UNIT_TEST_SETUP(test_read_write_untimed, setup, teardown)
{
	(void)state;
	run_read_write(0);
}

/* A stop that hangs: say so, remove the file, and end (async-signal-safe). */
static void stop_hung(int sig)
{
	(void)sig;
	static const char msg[] = "fsp_aio_stop hangs: an IO still counted in flight\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	unlink(path);
	rmdir(dir);
	_exit(1);
}

/* The kernel refuses the submission: -errno, no done(), the slot is still
 * the caller's to do the IO synchronously, and nothing is left in flight
 * (stop returns at once). */
UNIT_TEST_SETUP(test_submit_refused, setup, teardown)
{
	(void)state;
	struct fsp_aio *a = start(4, 0);
	struct slot *s = get(a, 4096);
	s->want = 0;
	s->write = 0;
	io_prep_pread(&s->io.cb, -1, s->io.buf, 4096, 0);
	assert_int_equal(fsp_aio_submit(a, &s->io), -EBADF);
	/* a write through a read-only descriptor */
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	io_prep_pwrite(&s->io.cb, ro, s->io.buf, 4096, 0);
	assert_int_equal(fsp_aio_submit(a, &s->io), -EBADF);
	/* the synchronous fallback with the same slot */
	assert_int_equal(pread(ro, s->io.buf, 4096, 8192), 4096);
	assert_true(matches(s->io.buf, 8192, 4096, 0));
	close(ro);
	fsp_aio_put(a, &s->io);
	usleep(20000);
	assert_int_equal(seen.calls, 0);
	signal(SIGALRM, stop_hung);
	alarm(5); /* a count left in flight would hang here */
	fsp_aio_stop(a);
	alarm(0);
}

/* stop waits until every submitted IO has been answered: done() has run. */
UNIT_TEST_SETUP(test_stop_waits, setup, teardown)
{
	(void)state;
	need_direct();
	struct fsp_aio *a = start(8, 0);
	enum { N = 4 };
	for (int k = 0; k < N; k++) {
		struct slot *s = get(a, 4096);
		prep(s, 0, (uint64_t)k * 4096, 4096, 4096);
		s->delay_us = 50000; /* 0.2 s in all: still running at stop */
		assert_int_equal(fsp_aio_submit(a, &s->io), 0);
	}
	fsp_aio_stop(a);
	pthread_mutex_lock(&seen.lock);
	int finished = seen.finished;
	pthread_mutex_unlock(&seen.lock);
	assert_int_equal(finished, N);
	assert_int_equal(seen.wrong_res, 0);
	assert_int_equal(seen.wrong_data, 0);
	/* and stop with nothing ever submitted, or no aio at all */
	a = start(8, 0);
	fsp_aio_stop(a);
	fsp_aio_stop(NULL);
}

/*
 * Several threads submit through a context smaller than what they put in
 * flight: each submission is either answered by done() or refused with
 * -EAGAIN (and then done synchronously), never lost, never both.
 */
enum { SUBMITTERS = 4, PER_THREAD = 100 };

struct submitter {
	struct fsp_aio *a;
	int id;
	int sync, bad;
};

static void *submitter_main(void *arg)
{
	struct submitter *w = arg;
	for (int k = 0; k < PER_THREAD; k++) {
		uint64_t off = (uint64_t)((w->id * PER_THREAD + k) % 256) * 4096;
		struct slot *s = (struct slot *)fsp_aio_get(w->a, 4096);
		if (!s) {
			w->bad++;
			continue;
		}
		s->io.done = done;
		s->delay_us = 0;
		prep(s, 0, off, 4096, 4096);
		int rc = fsp_aio_submit(w->a, &s->io);
		if (rc == 0)
			continue;
		if (rc != -EAGAIN)
			w->bad++;
		if (pread(dfd, s->io.buf, 4096, (off_t)off) != 4096 ||
		    !matches(s->io.buf, off, 4096, 0))
			w->bad++;
		fsp_aio_put(w->a, &s->io);
		w->sync++;
	}
	return NULL;
}

UNIT_TEST_SETUP(test_threads, setup, teardown)
{
	(void)state;
	need_direct();
	struct fsp_aio *a = start(2, 1);
	pthread_t th[SUBMITTERS];
	struct submitter w[SUBMITTERS];
	for (int i = 0; i < SUBMITTERS; i++) {
		w[i] = (struct submitter){ a, i, 0, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, submitter_main, &w[i]), 0);
	}
	int sync = 0;
	for (int i = 0; i < SUBMITTERS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].bad, 0);
		sync += w[i].sync;
	}
	fsp_aio_stop(a);
	print_message("# %d of %d done synchronously (context full)\n", sync,
		      SUBMITTERS * PER_THREAD);
	assert_int_equal(seen.calls + sync, SUBMITTERS * PER_THREAD);
	seen_all_right();
}
