#!/usr/bin/python3
"""ack_bases.py DST_IP CONSUMER_IP CONSUMER_PORT SECONDS - the bad ACK
bases of run_delivery.sh `bases` (run inside the fleet's namespace).

Through a raw socket (IP_HDRINCL) it sends, every 100 ms for SECONDS, one
fragmented-profile datagram to DST_IP:4242 from CONSUMER_IP:CONSUMER_PORT
(the configured consumer itself, so the dataplane reads its entries)
holding one consumer ACK frame (wire.md 2.1) with two entries per resolved
stream of layers 0..7: a far-ahead base (5,000,000, beyond anything sent)
and a stale one (500, below every token the test delivers from 1000),
each naming only its base. Read as the consumer's window, the stale one
holds every pending delivery (beyond 563) without resends. Prints the
datagram count."""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.flow import RESOLVED_BASE, ack_frame, datagram  # noqa: E402

STALE, AHEAD = 500, 5000000


def ip_udp(src, sport, dst, dport, payload):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload  # checksum 0: none (IPv4)
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0, socket.inet_aton(src),
                      socket.inet_aton(dst))
    s = sum((hdr[i] << 8) | hdr[i + 1] for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return hdr[:10] + struct.pack(">H", ~s & 0xFFFF) + hdr[12:] + udp


def main():
    dst, cip, cport, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    entries = []
    for layer in range(8):
        # the stale one last: read as the latest base it holds every
        # pending delivery (beyond 563) without resends until the next frame
        entries += [(RESOLVED_BASE + layer, AHEAD, 0, 1), (RESOLVED_BASE + layer, STALE, 0, 1)]
    frame = ack_frame(entries)
    n, fid = 0, 0x7000
    end = time.time() + secs
    while time.time() < end:
        raw.sendto(ip_udp(cip, cport, dst, 4242, datagram(fid, frame)), (dst, 0))
        fid = (fid + 1) & 0xFFFF
        n += 1
        if n == 1:
            print("injecting: the first frame is sent", flush=True)  # the caller waits for this line
        time.sleep(0.1)  # pacing: one frame every 100 ms (not a wait for anything)
    print(f"sent {n} frames of stale and far-ahead bases", flush=True)


if __name__ == "__main__":
    main()
