# devpat_pattern.py DEV - a scripted pattern of O_DIRECT writes and reads of
# 4 KiB blocks on the block device DEV (its first 7 MiB are overwritten),
# whose read-after-write recency is known (tests/it_devpat.sh):
#   A 16 blocks: each read right after its write        -> < 1 ms   16
#   B  8 blocks: read 3 ms after their writes           -> < 10 ms   8
#   C  4 blocks: read 30 ms after                       -> < 100 ms  4
#   D  2 blocks: read 300 ms after                      -> < 1 s     2
#   E  6 blocks: read 1.5 s after                       -> >= 1 s    6
#   F 10 blocks never written, read                     -> never    10
#   G a 64 KiB write, 300 ms later a 64 KiB write over its second half
#     and on; then four 32 KiB reads: across both writes (the second: < 1
#     ms), the second write's second half (< 1 ms), past both (never), and
#     the first half (only the first write: 300 ms, < 1 s)
# 50 reads, then an fsync of the device (one flush). Each read is sent only
# while its age, measured here from the return of its write, is well inside
# its bucket; when this machine was too slow for that (a busy CPU), the
# block is written again and the read retried, so the reads are always the
# same and the writes may be more: the script prints how many of each size.
import mmap
import os
import sys
import time

K = 4096
MiB = 1 << 20
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 128 * 1024)  # page-aligned, as O_DIRECT needs
buf.write(b"\xa5" * len(buf))
writes = {}


def write(off, n):
    assert os.pwritev(fd, [memoryview(buf)[:n]], off) == n
    writes[n] = writes.get(n, 0) + 1
    return time.monotonic()


def read(off, n):
    assert os.preadv(fd, [memoryview(buf)[:n]], off) == n


def read_aged(off, n, written, lo, hi, rewrite):
    """Read off..+n at an age in [lo, hi) s since written; else rewrite."""
    while True:
        age = time.monotonic() - written
        if age < lo:
            time.sleep(lo - age)
        elif age < hi:
            read(off, n)
            return
        else:
            written = rewrite()


def block(off):
    return lambda: write(off, K)


E, G = 5 * MiB, 6 * MiB
e_written = [write(E + i * K, K) for i in range(6)]
for i in range(16):
    read_aged(i * K, K, write(i * K, K), 0, 0.0005, block(i * K))
for region, blocks, lo, hi in ((1, 8, 0.002, 0.007), (2, 4, 0.02, 0.08), (3, 2, 0.2, 0.8)):
    offs = [region * MiB + i * K for i in range(blocks)]
    written = [write(off, K) for off in offs]
    for off, w in zip(offs, written):
        read_aged(off, K, w, lo, hi, block(off))
first = write(G, 64 * 1024)
time.sleep(0.3)
second = lambda: write(G + 32 * 1024, 64 * 1024)
read_aged(G + 16 * 1024, 32 * 1024, second(), 0, 0.0005, second)
read_aged(G + 64 * 1024, 32 * 1024, second(), 0, 0.0005, second)
read(G + 96 * 1024, 32 * 1024)
read_aged(G, 32 * 1024, first, 0.15, 0.8, lambda: write(G, 64 * 1024))
for i in range(10):
    read(4 * MiB + i * K, K)
for i in range(6):
    read_aged(E + i * K, K, e_written[i], 1.2, 1e9, block(E + i * K))
os.fsync(fd)
os.close(fd)
print(" ".join("%d:%d" % (n, writes[n]) for n in sorted(writes)))
