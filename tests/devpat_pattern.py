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
#     and on; then four 32 KiB reads: its first half (only the first write:
#     300 ms, < 1 s), across both writes (the second: < 1 ms), the second
#     write's second half (< 1 ms), past both (never)
# 38 writes and 50 reads in all, then an fsync of the device (one flush).
import mmap
import os
import sys
import time

K = 4096
MiB = 1 << 20
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 128 * 1024)  # page-aligned, as O_DIRECT needs
buf.write(b"\xa5" * len(buf))


def write(off, n):
    assert os.pwritev(fd, [memoryview(buf)[:n]], off) == n


def read(off, n):
    assert os.preadv(fd, [memoryview(buf)[:n]], off) == n


E, G = 5 * MiB, 6 * MiB
for i in range(6):
    write(E + i * K, K)
e_written = time.monotonic()
for i in range(16):
    write(i * K, K)
    read(i * K, K)
for region, blocks, pause in ((1, 8, 0.003), (2, 4, 0.03), (3, 2, 0.3)):
    for i in range(blocks):
        write(region * MiB + i * K, K)
    time.sleep(pause)
    for i in range(blocks):
        read(region * MiB + i * K, K)
write(G, 64 * 1024)
time.sleep(0.3)
write(G + 32 * 1024, 64 * 1024)
for off in (0, 16, 64, 96):
    read(G + off * 1024, 32 * 1024)
for i in range(10):
    read(4 * MiB + i * K, K)
time.sleep(max(0.0, e_written + 1.5 - time.monotonic()))
for i in range(6):
    read(E + i * K, K)
os.fsync(fd)
os.close(fd)
