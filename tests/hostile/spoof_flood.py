#!/usr/bin/python3
"""spoof_flood.py KIND DST_IP SRC_IP SRC_PORT COUNT SECONDS RATE TOKEN_BASE -
the flooder of hostile_flood_fleet.py (the floods at the
fleet's datagram rates). Run inside the fleet's namespace; main thread.

Through a raw socket (IP_HDRINCL) it sends, from the forged SRC_IP:SRC_PORT
to DST_IP:4242 (the fragmented profile), COUNT units of KIND paced at RATE
units a second, stopping after SECONDS whatever the count, or at SIGTERM (bounded in
time and count). Layers 0..7, hidden 512 (the test's model), frames of two
fragments where a seed is carried:
  frag0     fragment 0 (of 2) of a seed frame for a fresh key (token
            TOKEN_BASE + k): a group that never completes (one datagram)
  ack       a consumer ACK frame of 104 entries (6,656 sequences) of
            resolved streams, sequences from TOKEN_BASE (one datagram)
  garbage   random bytes, 1..1472 of them (one datagram)
  canonical a canonical digest (flags 1, 16-byte payload, a random digest)
            for layer 1 + k % 7, token TOKEN_BASE + (k / 7) % 2048: the keys
            fanofleet's seeds have (layers 1..7) (one datagram)
  conflict  a conflicting pair: line 5 of layer 1, token TOKEN_BASE + k,
            once with one body and once with another (four datagrams)
Prints "ready" once its socket is open, "sent KIND UNITS DATAGRAMS SECONDS" at the end."""
import os
import random
import signal
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from fgtest.flow import CANON_BASE, RESOLVED_BASE, ack_frame, datagram, fragments, frame, seed  # noqa: E402
from spoof_ack import ip_udp  # noqa: E402

HIDDEN = 512
CHUNK = 1472 - 4  # the fragmented profile's 4-byte header inside a 1472-byte payload


def body(v):
    return struct.pack("<%df" % HIDDEN, *([v] * HIDDEN))


def units(kind, base, rng):
    """Yield, per unit, the list of UDP payloads it sends."""
    fid = rng.randrange(0x10000)
    body_a, body_b = body(1.0), body(2.0)
    k = 0
    while True:
        fid = (fid + 2) & 0xFFFF
        if kind == "frag0":
            yield [fragments(seed(k % 8, base + k, 1, body_a), fid, CHUNK)[0]]
        elif kind == "ack":
            entries = [(RESOLVED_BASE + (i % 8), base + 64 * i, 0xFFFFFFFF, 0xFFFFFFFF) for i in range(104)]
            yield [datagram(fid, ack_frame(entries))]
        elif kind == "garbage":
            yield [rng.randbytes(rng.randrange(1, 1473))]
        elif kind == "canonical":
            payload = struct.pack("<IIQ", 0, 1, rng.getrandbits(64))
            yield [datagram(fid, frame(CANON_BASE + 1 + k % 7, base + (k // 7) % 2048, 0x01, payload))]
        elif kind == "conflict":
            a = fragments(seed(1, base + k, 5, body_a), fid, CHUNK)
            b = fragments(seed(1, base + k, 5, body_b), (fid + 1) & 0xFFFF, CHUNK)
            yield a + b
        else:
            raise SystemExit(f"spoof_flood.py: unknown kind {kind}")
        k += 1


def main():
    if len(sys.argv) != 9:
        raise SystemExit(__doc__)
    kind, dst, src = sys.argv[1:4]
    sport, count = int(sys.argv[4]), int(sys.argv[5])
    secs, rate, base = float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
    rng = random.Random(base ^ sport)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))  # stop early, still print the counts
    print("ready", flush=True)
    n = dgrams = 0
    t0 = time.monotonic()
    gen = units(kind, base, rng)
    while n < count and not stop:
        now = time.monotonic()
        if now - t0 >= secs:
            break
        due = t0 + n / rate
        if due > now:
            time.sleep(min(due - now, 0.05))  # pacing at RATE (a send schedule, not a wait for anything)
            continue
        for p in next(gen):
            try:
                raw.sendto(ip_udp(src, sport, dst, 4242, p), (dst, 0))
                dgrams += 1
            except OSError as e:  # ENOBUFS under a busy veth: counted as not sent
                print(f"send: {e}", file=sys.stderr)
        n += 1
    print(f"sent {kind} {n} {dgrams} {time.monotonic() - t0:.2f}", flush=True)


if __name__ == "__main__":
    main()
