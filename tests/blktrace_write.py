#!/usr/bin/env python3
"""blktrace_write.py - write a blktrace capture (NAME.blktrace.N, one file per
CPU) in the kernel's binary format, struct blk_io_trace (48 bytes, then
pdu_len bytes), for tests: the fixtures under tests/fixtures/blktrace/ and
the integration test where blktrace(8) itself cannot run (a kernel in
lockdown refuses its debugfs files).

usage: blktrace_write.py [--big-endian] [--version V] NAME < EVENTS
EVENTS: one per line, "CPU TIME_NS ACTION RWBS SECTOR BYTES PID", ACTION one
of Q D C, or P (a notify event naming the process PID, RWBS its name, the
name as the event's data, as blktrace records one per process), RWBS letters
of R W F (flush) S (sync) M (FUA) D (discard) N (none); '#' starts a comment.
"""
import struct
import sys

MAGIC = 0x65617400
CAT = {"R": 1 << 0, "W": 1 << 1, "F": 1 << 2, "S": 1 << 3, "D": 1 << 13, "M": 1 << 15, "N": 0}
ACT = {"Q": 1, "D": 7, "C": 8}
# category bits every event of that kind carries besides its direction
ACT_CAT = {"Q": 1 << 4, "D": 1 << 6, "C": 1 << 7}


def main(argv):
    big, version, args = False, 7, []
    i = 1
    while i < len(argv):
        if argv[i] == "--big-endian":
            big = True
        elif argv[i] == "--version":
            i += 1
            version = int(argv[i])
        else:
            args.append(argv[i])
        i += 1
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    order = ">" if big else "<"
    files, seq = {}, {}
    for line in sys.stdin:
        line = line.split("#")[0].split()
        if not line:
            continue
        cpu, t, act, rwbs, sector, nbytes, pid = line
        cpu = int(cpu)
        pdu = b""
        if act == "P":  # BLK_TC_NOTIFY, __BLK_TN_PROCESS
            action = (1 << 10) << 16
            pdu = rwbs.encode() + b"\0"
        else:
            cat = ACT_CAT[act] | (1 << 8)  # BLK_TC_FS
            for c in rwbs:
                cat |= CAT[c]
            action = (cat << 16) | ACT[act]
        seq[cpu] = seq.get(cpu, 0) + 1
        ev = struct.pack(order + "IIQQIIIIIHH", MAGIC | version, seq[cpu], int(t),
                         int(sector), int(nbytes), action, int(pid), (7 << 20) | 5, cpu,
                         0, len(pdu)) + pdu
        files.setdefault(cpu, bytearray()).extend(ev)
    for cpu in range(max(files) + 1 if files else 1):
        with open("%s.blktrace.%d" % (args[0], cpu), "wb") as f:
            f.write(files.get(cpu, b""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
