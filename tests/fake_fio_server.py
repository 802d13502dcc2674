#!/usr/bin/env python3
# fake_fio_server.py ADDR PORT - a server that speaks fio's client/server
# framing with another protocol version (driven by it_hosts.sh): to every
# connection it sends one well-formed command header (fio's crc16 right)
# whose version is not this fio's, as a server of another fio release
# would, and holds the connection until the client closes it. fio's client says "client/server version mismatch".
import socket
import struct
import sys


def crc16(data, crc=0):
    # fio's crc16 (lib/crc16.c): CRC-16/ARC, reflected polynomial 0xA001
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def header(version):
    # struct fio_net_cmd: version, opcode, flags, tag, pdu_len; then the
    # header's crc16 over those 20 bytes and the (empty) payload's crc16
    head = struct.pack("<HHIQI", version, 1, 0, 0, 0)
    return head + struct.pack("<HH", crc16(head), 0)


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(8)
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(5)
            c.sendall(header(99))
            while c.recv(4096):  # until the client gives up on us
                pass
        except OSError:
            pass
        c.close()


if __name__ == "__main__":
    main()
