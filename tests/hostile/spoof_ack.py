#!/usr/bin/python3
"""spoof_ack.py DST_IP CONSUMER_IP CONSUMER_PORT OTHER_IP SECONDS - the
ACK spoofer of run_spoofed_ack.sh (run inside the fleet's namespace).

Through a raw socket (IP_HDRINCL) it sends fragmented-profile datagrams to
DST_IP:4242 holding one consumer ACK frame (wire.md 2.1: stream 0xFFFF,
flags 0x80, 14-byte entries) every 20 ms for SECONDS:
 - from OTHER_IP:CONSUMER_PORT (another fleet address) and from
   CONSUMER_IP:CONSUMER_PORT+1 (the consumer's host, another port): entries
   covering tokens 1000..1063 of the resolved streams of layers 0..7 (every
   seed the test delivers): none may retire a delivery;
 - from CONSUMER_IP:CONSUMER_PORT itself, once a second: 104 entries of
   sequences nothing is pending for (6,656 seqs): the dataplane must stop
   after its budget (x counter ack_budget), retiring nothing.
Prints the datagram counts."""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.flow import RESOLVED_BASE, ack_frame, datagram  # noqa: E402


def ip_udp(src, sport, dst, dport, payload):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload  # checksum 0: none (IPv4)
    tot = 20 + len(udp)
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, tot, 0, 0x4000, 64, 17, 0, socket.inet_aton(src),
                      socket.inet_aton(dst))
    s = 0
    for i in range(0, 20, 2):
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return hdr[:10] + struct.pack(">H", ~s & 0xFFFF) + hdr[12:] + udp


def main():
    dst, cip, cport, other, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    real = ack_frame([(RESOLVED_BASE + layer, 1000, 0xFFFFFFFF, 0xFFFFFFFF) for layer in range(8)])
    junk = ack_frame([(RESOLVED_BASE + (k % 8), 5000000 + 64 * k, 0xFFFFFFFF, 0xFFFFFFFF) for k in range(104)])
    assert len(junk) + 4 <= 1472
    n_spoof = n_junk = 0
    fid = 1
    end = time.time() + secs
    last_junk = 0.0
    while time.time() < end:
        for src, sport in ((other, cport), (cip, cport + 1)):
            raw.sendto(ip_udp(src, sport, dst, 4242, datagram(fid, real)), (dst, 0))
            fid = (fid + 1) & 0xFFFF
            n_spoof += 1
        if time.time() - last_junk >= 1.0:
            raw.sendto(ip_udp(cip, cport, dst, 4242, datagram(fid, junk)), (dst, 0))
            fid = (fid + 1) & 0xFFFF
            n_junk += 1
            last_junk = time.time()
        if n_junk == 1 and n_spoof == 2:
            print("spoofing: the first round is sent", flush=True)  # the caller waits for this line
        time.sleep(0.02)  # pacing: a spoof every 20 ms (not a wait for anything)
    print(f"spoofed {n_spoof} junk {n_junk}", flush=True)


if __name__ == "__main__":
    main()
