#!/usr/bin/python3
"""no_slot_client.py DST_IP N - the sender of run_no_slot_ack.sh (run in the
fleet's namespace): sends N single-fragment seed frames (layer 0, line 1,
tokens 1..N) to DST_IP:4242 on a slot table far too small for them, then
reads ACK and status datagrams until every token has a status and every
token whose status is not no_slot is ACKed (10 s at most). Prints one JSON
line: tokens per outcome, ACKed tokens, and the tokens refused no_slot that
were ACKed anyway (must be none)."""
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.flow import OUTCOMES, datagram, seed  # noqa: E402


def seed_frame(token, hidden=8):
    return seed(0, token, 1, [float(token + i) for i in range(hidden)])


def main():
    dst, n = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.2)
    for t in range(1, n + 1):
        s.sendto(datagram(t, seed_frame(t)), (dst, 4242))
    status, acked = {}, set()
    end = time.time() + 10
    while time.time() < end:
        placed = {t for t, o in status.items() if o != "no_slot"}
        if len(status) == n and placed <= acked:
            break
        try:
            d, _ = s.recvfrom(65536)
        except socket.timeout:
            continue
        f = d[4:]
        while len(f) >= 10:
            stream, seq, flags = struct.unpack(">HIB", f[:7])
            ln = int.from_bytes(f[7:10], "big")
            p = f[10:10 + ln]
            if stream == 0xFFFF and flags & 0x80:
                for k in range(0, len(p) - 13, 14):
                    st, base, hi, lo = struct.unpack(">HIII", p[k:k + 14])
                    if st != 0xAF60:
                        continue
                    for b in range(64):
                        if (lo if b < 32 else hi) >> (b & 31) & 1:
                            acked.add(base + b)
            elif stream == 0xFFFE and len(p) == 32 and p[0] == 2:  # status frame v2 (docs/wire-decisions.md)
                status[seq] = OUTCOMES[p[1]] if p[1] < len(OUTCOMES) else str(p[1])
            f = f[10 + ln:]
    by = {}
    for t, o in status.items():
        by.setdefault(o, []).append(t)
    print(json.dumps({"sent": n, "statuses": len(status), "outcomes": {k: len(v) for k, v in by.items()},
                      "acked": len(acked), "no_slot_acked": sorted(set(by.get("no_slot", [])) & acked),
                      "placed_unacked": sorted({t for t, o in status.items() if o != "no_slot"} - acked)}),
          flush=True)


if __name__ == "__main__":
    main()
