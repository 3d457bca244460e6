#!/usr/bin/python3
"""points_peer.py - one UDP peer for the [points] liveness test (run_points.sh).

Runs inside the test's network namespace with a kernel UDP socket bound to
--src: sends one single-fragment residual-seed contribution (wire.md 2.1,
3.1) on --line every --interval seconds for --seconds, each to a new token
so every one is answered, and reads the status frames (stream 0xFFFE, the
layout of include/fg/wire.h) the dataplane sends back. Prints one JSON line:
{"sent": N, "status": N, "degraded": N, "not_degraded": N}: how many status
frames carried the degraded fact (bit 4) and how many did not. ACK frames
(stream 0xFFFF) are counted apart.
"""
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from fgtest.flow import ACK_STREAM as ACK, STATUS_STREAM as STATUS, datagram, seed  # noqa: E402
from fgtest.peer import udp_peer_parser  # noqa: E402

FACT_DEGRADED = 0x10


def seed_frame(layer, token, line, hidden):
    """a seed of hidden floats 0..6 repeating"""
    return seed(layer, token, line, [float(i % 7) for i in range(hidden)])


def main():
    ap = udp_peer_parser(hidden=16)
    ap.add_argument('--line', type=int, default=3)
    ap.add_argument('--layer', type=int, default=1)
    ap.add_argument('--token-base', type=int, default=1)
    ap.add_argument('--seconds', type=float, default=1.0)
    ap.add_argument('--interval', type=float, default=0.05)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.src, 0))
    s.setblocking(False)
    out = {'sent': 0, 'status': 0, 'degraded': 0, 'not_degraded': 0, 'acks': 0}
    fid = 1
    t_end = time.monotonic() + a.seconds
    next_send = time.monotonic()
    drain_until = t_end + 0.3
    while True:
        now = time.monotonic()
        if now >= drain_until:
            break
        if now < t_end and now >= next_send:
            frame = seed_frame(a.layer, a.token_base + out['sent'], a.line, a.hidden)
            s.sendto(datagram(fid & 0xFFFF, frame), (a.dst, a.port))
            fid += 1
            out['sent'] += 1
            next_send += a.interval
        r, _, _ = select.select([s], [], [], 0.01)
        if not r:
            continue
        while True:
            try:
                d = s.recv(65536)
            except BlockingIOError:
                break
            if len(d) < 4 + 10:
                continue
            stream = struct.unpack('>H', d[4:6])[0]
            if stream == ACK:
                out['acks'] += 1
            elif stream == STATUS and len(d) >= 4 + 10 + 28:
                out['status'] += 1
                facts = d[4 + 10 + 8]
                if facts & FACT_DEGRADED:
                    out['degraded'] += 1
                else:
                    out['not_degraded'] += 1
    print(json.dumps(out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
