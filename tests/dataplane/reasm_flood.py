#!/usr/bin/python3
"""reasm_flood.py - reassembly-context exhaustion from the network
(run_reasm_flood.sh). Runs inside the test's namespace with kernel UDP
sockets:

  1. a flooder (--flood-src) opens --groups incomplete fragment groups: the
     last fragment (index 1 of 2) of as many frame_ids, never the first, so
     each holds a reassembly context until reasm_timeout_ms;
  2. while the table is full, an honest station (--src) sends token A's three
     contributions as single-fragment frames (seq_len 1: they never need a
     context) and must get the resolved seed on the consumer socket; it also
     sends token B's first contribution as a two-fragment frame (seq_len 2),
     which the full table admits by evicting the flood's oldest group (the
     flooder is another source address);
  3. after --wait seconds (past reasm_timeout_ms) the station sends token B's
     three contributions as two-fragment frames under new frame_ids: the
     contexts are back, so B must resolve too.

Prints one JSON line with what it saw; exits 1 when a resolved seed is
missing or wrong (each is checked against the f32 reduction of what was
sent, default rule 1,3,5).
"""
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from fgtest.flow import RESOLVED_BASE, RULE, f32, fragments, reduce_rule, seed  # noqa: E402
from fgtest.peer import udp_peer_parser  # noqa: E402


def values(token, line, n):
    return [f32(((token * 7 + line * 13 + i) % 97) / 8.0 - 3.0) for i in range(n)]


def expect(token, n):
    return reduce_rule({line: (0, values(token, line, n)) for line in RULE})


def main():
    ap = udp_peer_parser(hidden=256, flood_src=True)
    ap.add_argument('--groups', type=int, default=64)
    ap.add_argument('--layer', type=int, default=1)
    ap.add_argument('--wait', type=float, default=1.5)
    a = ap.parse_args()
    C = a.mtu - 4
    dp = (a.dst, a.port)
    st = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    st.bind((a.src, 0))
    fl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fl.bind((a.flood_src, 0))
    cons = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cons.bind((a.src, a.consumer_port))
    resolved = {}
    groups = {}
    fid = [100]

    def nfid():
        fid[0] += 1
        return fid[0] & 0xFFFF

    def pump(t):
        end = time.monotonic() + t
        while time.monotonic() < end:
            r, _, _ = select.select([st, fl, cons], [], [], 0.02)
            for s in r:
                d, src = s.recvfrom(65536)
                if s is not cons or len(d) < 4:
                    continue  # ACKs and status frames: not judged here
                f, i, tot = struct.unpack('>HBB', d[:4])
                g = groups.setdefault(f, {})
                g[i] = d[4:]
                if len(g) == tot:
                    frame = b''.join(g[k] for k in range(tot))
                    del groups[f]
                    stream, seq = struct.unpack('>HI', frame[:6])
                    resolved[(seq, stream - RESOLVED_BASE)] = frame[18:]

    # the neighbour entries first (a veth's first datagrams can be lost)
    for s in (st, fl):
        s.sendto(b'probe', (a.dst, a.port + 1))  # another port: counted drop_bad_port
    pump(0.3)

    # 1. the flood: the last fragment of `groups` two-fragment frames
    for g in range(a.groups):
        frame = seed(a.layer, 900000 + g, 1, values(g, 1, 2 * a.hidden), seq_len=2)
        fl.sendto(fragments(frame, 30000 + g, C)[1], dp)
    pump(0.1)

    # 2. table full: single-fragment contributions still resolve; a two-fragment one evicts a flood group
    A, B = 1000, 2000
    for line in RULE:
        for d in fragments(seed(a.layer, A, line, values(A, line, a.hidden)), nfid(), C):
            st.sendto(d, dp)
    for d in fragments(seed(a.layer, B, RULE[0], values(B, RULE[0], 2 * a.hidden), seq_len=2), nfid(), C):
        st.sendto(d, dp)
    pump(0.3)
    a_ok = resolved.get((A, a.layer)) == expect(A, a.hidden)

    # 3. after reasm_timeout_ms the contexts are back: B's frames (new frame_ids) resolve
    pump(a.wait)
    for line in RULE:
        for d in fragments(seed(a.layer, B, line, values(B, line, 2 * a.hidden), seq_len=2), nfid(), C):
            st.sendto(d, dp)
    pump(0.5)
    b_ok = resolved.get((B, a.layer)) == expect(B, 2 * a.hidden)
    print(json.dumps({'groups': a.groups, 'a_resolved': a_ok, 'b_resolved': b_ok, 'seeds': len(resolved)}))
    return 0 if a_ok and b_ok else 1


if __name__ == '__main__':
    sys.exit(main())
