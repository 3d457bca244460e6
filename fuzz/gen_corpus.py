#!/usr/bin/python3
"""gen_corpus.py - regenerate the seed corpora of fuzz/corpus/ from
tests/data/vectors.txt plus a few synthetic frames (status, resolved, a
whole ingest session). Run from anywhere: /usr/bin/python3 fuzz/gen_corpus.py
Seeds are named seed-<what>; crashers kept in the same directories are named
crash-<sha1> (libFuzzer's names) and are never touched by this script."""
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def vectors():
    out = {}
    with open(os.path.join(ROOT, "tests", "data", "vectors.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            vid, kind, hexs = [x.strip() for x in line.split("|")[:3]]
            out[vid] = (kind, bytes.fromhex(hexs))
    return out


def frame(stream, seq, flags, payload):
    n = len(payload)
    return struct.pack(">HIB", stream, seq, flags) + bytes([n >> 16, (n >> 8) & 255, n & 255]) + payload


def seed(layer, seq, line, neg, start, floats, base=0xAF60, flags=None):
    rows = struct.pack("<II", start, 1 if floats else 0) + struct.pack("<%df" % len(floats), *floats)
    return frame(base + layer, seq, (line << 4 | neg) if flags is None else flags, rows)


def status(seq, layer):
    p = struct.pack("<BBBBHBBBBHIIQ", 1, 1, 1, 0, layer, 0x2A, 0x2A, 0x05, 2, 0, 16, 3, 0x5E2DE06EC4043AA2)
    return frame(0xFFFE, seq, 0, p)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        if old == "seed-" + name:
            os.remove(os.path.join(d, old))
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def main():
    v = vectors()
    for vid, (kind, b) in v.items():
        if kind in ("frame", "header", "batch", "reduce"):
            write("fuzz_wire_frame", vid, b)
        if kind in ("datagram", "ack-entry"):
            write("fuzz_wire_frag", vid, b)
        if kind in ("frame", "reduce"):
            hidden = 1 if vid.startswith("R") else 4
            write("fuzz_wire_payload", vid, bytes([(hidden - 1) | (6 << 4), 32]) + b)
    write("fuzz_wire_payload", "status", bytes([3 | (6 << 4), 32]) + status(42, 1))
    write("fuzz_wire_payload", "resolved",
          bytes([3 | (6 << 4), 32]) + seed(1, 42, 1, 0, 0, [0.1, 0.2, 0.3, 0.4], base=0xAFA0, flags=0x10))
    # ingest: all lines active (state 2), clock step 7, hidden = 2
    active = bytes([0xAA, 0x2A, 7])
    l1 = [seed(1, 9, 1, 0, 0, [1.0, 2.0]), seed(1, 9, 3, 1, 0, [0.5, 0.25]), seed(1, 9, 5, 0, 0, [1e8, -1e8])]
    write("fuzz_ingest", "layer1-resolve", active + b"".join(l1))
    write("fuzz_ingest", "layer1-reverse-dup", active + b"".join(reversed(l1)) + l1[0])
    write("fuzz_ingest", "conflict", active + seed(0, 3, 0, 0, 0, [1.0, 1.0]) + seed(0, 3, 0, 0, 0, [1.0, 2.0]))
    write("fuzz_ingest", "canonical", active + b"".join(l1) +
          frame(0xAF81, 9, 0, struct.pack("<II", 0, 1) + struct.pack("<2f", 1.0, 2.0)))
    write("fuzz_ingest", "shadow-malformed", bytes([0x55, 0x15, 200]) + seed(2, 1, 7, 0, 0, [1.0, 1.0]) +
          seed(9, 1, 0, 0, 0, [1.0, 1.0]) + seed(2, 1, 0, 0, 0, [1.0]) + status(1, 1))

    # slot fragment path: layer 1 (lines 1,3,5), seq_len 1 (8-byte bodies)
    def body(*fs):
        return struct.pack("<%df" % len(fs), *fs)

    def begin(tok, layer, line, neg, chunk, b):
        return bytes([0, tok, layer, line, neg, 0, chunk - 1]) + b

    def place(att, pick):
        return bytes([1, att, pick])

    def put(tok, layer, line, neg, b):
        return bytes([3, tok, layer, line, neg, 0]) + b

    frag = (begin(1, 1, 1, 0, 3, body(1.0, 2.0)) + b"".join(place(1, 2) for _ in range(3)) +
            put(1, 1, 3, 1, body(0.5, 0.25)) +
            begin(1, 1, 5, 0, 1, body(1e8, -1e8)) + b"".join(place(1, 7 - i) for i in range(8)))
    write("fuzz_slot_frag", "layer1-chunks", frag)
    write("fuzz_slot_frag", "supersede-abort",
          begin(2, 0, 2, 1, 4, body(3.0, 4.0)) + place(2, 0) + begin(2, 0, 2, 0, 2, body(5.0, 6.0)) +
          place(2, 0) + place(2, 0) + bytes([2, 2]) + put(2, 0, 2, 1, body(3.0, 4.0)))
    write("fuzz_slot_frag", "expire", begin(3, 2, 4, 0, 8, body(1.0, 1.0)) + bytes([4, 255, 4, 255]) +
          place(3, 0) + put(3, 2, 0, 0, body(1.0, 1.0)))

    # UDP receive path (fuzz_udp_rx): c0 = shards-1 | (contexts-1) << 1 |
    # buffers << 4 | chunk index << 6; c1 = capacity-1 | disabled line << 2 |
    # timeout << 5 (line 7: none disabled); hidden = 2, so a row is 8 bytes.
    def cfg(shards=1, contexts=8, bufs=3, chunk=0, cap=4, dis=7, tmo=2):
        return bytes([(shards - 1) | (contexts - 1) << 1 | bufs << 4 | chunk << 6, (cap - 1) | dis << 2 | tmo << 5])

    def send(peer, fid, tok, layer, line, neg, rows, order=0, kind=0, mode=0, fill=1.0):
        return (bytes([0, peer, fid, kind, tok, layer, line | neg << 4, rows - 1, mode, order]) +
                struct.pack("<%df" % (2 * rows), *[fill * (i + 1) for i in range(2 * rows)]))

    def one(peer, fid, idx):
        return bytes([1, peer, fid, idx])

    def raw(peer, dgram):
        return bytes([2, peer, len(dgram)]) + dgram

    def tick(dt, mx=7):
        return bytes([3, dt, mx])

    def fraghdr(fid, idx, total):
        return struct.pack(">HBB", fid, idx, total)

    l1 = send(0, 1, 1, 1, 1, 0, 10) + send(1, 1, 1, 1, 3, 1, 10, order=1, fill=0.5) + send(2, 1, 1, 1, 5, 0, 10, order=2, fill=3.0)
    write("fuzz_udp_rx", "layer1-orders", cfg() + l1)
    write("fuzz_udp_rx", "two-shards", cfg(shards=2) + l1 + send(0, 2, 2, 2, 4, 0, 20) + send(1, 2, 2, 2, 0, 1, 20, order=1))
    write("fuzz_udp_rx", "timeout-resend", cfg(tmo=0) + send(0, 3, 3, 0, 2, 0, 30, order=3 | 2 << 3) + tick(255) +
          one(0, 3, 2) + send(0, 3, 3, 0, 2, 0, 30, order=2))
    write("fuzz_udp_rx", "dup-conflict", cfg() + send(0, 4, 4, 2, 4, 0, 8) + send(1, 4, 4, 2, 4, 0, 8, fill=2.0) +
          send(2, 4, 4, 2, 4, 0, 8) + send(0, 4, 4, 2, 4, 0, 8))
    write("fuzz_udp_rx", "nobuf-overflow", cfg(contexts=1, bufs=0) + send(0, 5, 1, 1, 1, 0, 10, order=1) +
          send(1, 5, 1, 1, 3, 0, 10, order=2) + send(2, 6, 1, 3, 6, 0, 35, kind=5))
    s0 = seed(1, 7, 1, 0, 0, [1.0, 2.0])
    big = seed(0, 8, 2, 0, 0, [float(i) for i in range(2 * 12)])
    big = big[:8] + struct.pack("<II", 0, 12) + big[18:]
    write("fuzz_udp_rx", "raw", cfg(chunk=0) + raw(4, fraghdr(9, 0, 1) + s0) +
          raw(5, fraghdr(3, 1, 2) + big[64:]) + raw(5, fraghdr(3, 0, 2) + big[:64]) + raw(4, fraghdr(3, 0, 0)) +
          raw(4, fraghdr(3, 2, 2) + b"x") + send(3, 7, 5, 3, 0, 0, 40, mode=5) + send(3, 8, 5, 3, 7, 0, 4, mode=0x40))

    # HTTP router (fuzz_http_route): op 0 = bytes arrive (<= 255 per op),
    # 1 = engine outcome, 2 = seed event, 3 = deadline, 4 = mode byte
    # (submit: 0 now, 1 later, 2 busy, 3 too large | lookup state << 2 |
    # peer verified << 5 | next put fails << 6). Token "secret" is a sender, "reader" a consumer.
    def data(b):
        out = b""
        for i in range(0, len(b), 255):
            part = b[i:i + 255]
            out += bytes([0, len(part)]) + part
        return out

    def mode(submit=0, lookup=1, verified=0, fail=0):
        return bytes([4, submit | lookup << 2 | verified << 5 | fail << 6])

    auth = b"Authorization: Bearer secret\r\n"
    sf = seed(1, 9, 1, 0, 0, [1.0, 2.0, 3.0, 4.0])
    post = b"POST /residual-seed HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: %d\r\n\r\n" % len(sf) + sf
    write("fuzz_http_route", "healthz-head", data(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
    write("fuzz_http_route", "post-now-later", mode(0) + data(post) + mode(1) + data(post + post) + bytes([1, 1, 1, 0]) +
          bytes([1, 0, 2, 0]))
    write("fuzz_http_route", "put-fails", mode(fail=1) + data(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
    write("fuzz_http_route", "post-busy-large", mode(2) + data(post) + mode(3) + data(post))
    get = b"GET /residual-seed/3/9 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
    write("fuzz_http_route", "get-wait", mode(lookup=1) + data(get) + bytes([2, 2]) + mode(lookup=2) + data(get) +
          mode(lookup=1) + data(get) + bytes([3]))
    write("fuzz_http_route", "flow", data(b"GET /flow?layers=1,2&status=0 HTTP/1.1\r\nHost: x\r\n" + auth +
          b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
          b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: aeon-flow\r\n\r\n\x82\x00"))
    cf = frame(0xAF81, 9, 0, struct.pack("<II", 0, 1) + struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))
    write("fuzz_http_route", "canonical-continue", data(b"POST /canonical HTTP/1.1\r\nHost: x\r\n" + auth +
          b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(cf)) + data(cf))
    write("fuzz_http_route", "refusals", mode(verified=1) + data(
        b"POST /residual-seed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader\r\nContent-Length: 0\r\n\r\n") +
        data(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n") +
        data(b"GET /residual-seed/99/1 HTTP/1.1\r\nHost: x\r\n\r\n") + data(b"BREW / HTTP/1.1\r\n\r\n"))

    # L2/L3/L4 (fuzz_dp_pkt): byte 0 even = parse the rest as an Ethernet
    # frame; odd = build+parse from parameters.
    def eth(et, tags=b""):
        return bytes.fromhex("020000000001") + bytes.fromhex("020000000002") + tags + struct.pack(">H", et)

    def ipv4(payload, proto=17, frag=0x4000):
        tot = 20 + len(payload)
        return struct.pack(">BBHHHBBH4s4s", 0x45, 0, tot, 1, frag, 64, proto, 0, bytes([10, 0, 0, 2]),
                           bytes([10, 0, 0, 1])) + payload

    def ipv6(payload, nh=17):
        return struct.pack(">IHBB", 0x60000000, len(payload), nh, 64) + bytes(15) + b"\x02" + bytes(15) + b"\x01" + payload

    def udp(payload, sport=5000, dport=4242):
        return struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload

    dg = struct.pack(">HBB", 7, 0, 1) + s0
    write("fuzz_dp_pkt", "ipv4-udp", b"\x00" + eth(0x0800) + ipv4(udp(dg)))
    write("fuzz_dp_pkt", "ipv6-udp", b"\x00" + eth(0x86DD) + ipv6(udp(dg)))
    write("fuzz_dp_pkt", "vlan-ipv4", b"\x00" + eth(0x0800, struct.pack(">HH", 0x8100, 5)) + ipv4(udp(dg)))
    write("fuzz_dp_pkt", "qinq-ipv6", b"\x00" + eth(0x86DD, struct.pack(">HHHH", 0x88A8, 9, 0x8100, 5)) + ipv6(udp(dg)))
    write("fuzz_dp_pkt", "ipv4-frag-tcp", b"\x00" + eth(0x0800) + ipv4(udp(dg), frag=0x2000) + ipv4(b"x" * 20, proto=6))
    write("fuzz_dp_pkt", "ipv6-frag", b"\x00" + eth(0x86DD) + ipv6(b"\x11\x00\x00\x01" + bytes(4) + udp(dg), nh=44))
    arp = struct.pack(">HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, bytes.fromhex("020000000002"), bytes([10, 0, 0, 2]),
                      bytes(6), bytes([10, 0, 0, 1]))
    ns = bytes([135, 0, 0, 0]) + bytes(4) + bytes([0xfd] + [0] * 14 + [1]) + bytes([1, 1]) + bytes.fromhex("020000000002")
    ns6 = struct.pack(">IHBB", 0x60000000, len(ns), 58, 255) + bytes([0xfd] + [0] * 14 + [2]) + bytes([0xff, 2] + [0] * 9 + [1, 0xff, 0, 0, 1]) + ns
    write("fuzz_dp_pkt", "ndp-ns", b"\x00" + eth(0x86DD, struct.pack(">HH", 0x8100, 5)) + ns6)
    write("fuzz_dp_pkt", "arp-request", b"\x00" + eth(0x0806, struct.pack(">HH", 0x8100, 5)) + arp)
    params = (bytes([2]) + struct.pack(">H", 5) + bytes.fromhex("020000000001020000000002") + bytes([10, 0, 0, 2]) +
              bytes(12) + bytes([10, 0, 0, 1]) + bytes(12) + struct.pack(">HHH", 5000, 4242, 1))
    write("fuzz_dp_pkt", "build-v4-vlan", b"\x01" + params + dg)
    write("fuzz_dp_pkt", "build-v6", b"\x01" + bytes([1]) + params[1:] + dg + b"\x00")

    op_parse()


def op_parse():
    """fuzz_op_parse: requests byte for byte as fanoctl sends them
    (json_dumps JSON_COMPACT, insertion order, then '\\n'), plus edge cases."""
    import json

    def req(name, obj, tail=b"\n"):
        write("fuzz_op_parse", name, json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + tail)

    for cmd in ("status", "lines", "slots", "peers", "stats", "reload"):
        req(cmd, {"cmd": cmd})
    for op in ("enable", "disable", "shadow", "active"):
        req("line-" + op, {"cmd": "line", "line": 1, "op": op, "why": "OPS-1"})
    req("line-no-why", {"cmd": "line", "line": 6, "op": "disable"})
    req("auto-promote-on", {"cmd": "line", "line": 3, "op": "auto_promote", "on": True})
    req("auto-promote-off-why", {"cmd": "line", "line": 6, "op": "auto_promote", "on": False, "why": "OPS-2"})
    req("slot", {"cmd": "slot", "layer": 3, "token_seq": 42})
    req("slot-max", {"cmd": "slot", "layer": 27, "token_seq": 4294967295})
    # edge cases: the checks' boundaries and each refusal class
    req("line-7", {"cmd": "line", "line": 7, "op": "enable"})
    req("line-triple", {"cmd": "line", "line": "1,4,5", "op": "enable"})
    req("unknown-op", {"cmd": "line", "line": 2, "op": "reboot"})
    req("unknown-cmd", {"cmd": "reboot"})
    req("slot-layer-28", {"cmd": "slot", "layer": 28, "token_seq": 1})
    req("slot-tok-2e32", {"cmd": "slot", "layer": 1, "token_seq": 4294967296})
    req("why-unicode", {"cmd": "line", "line": 4, "op": "active", "why": "caf\u00e9 \"q\" \\ \U0001F600"})
    req("why-long", {"cmd": "line", "line": 5, "op": "shadow", "why": "w" * 300})
    write("fuzz_op_parse", "nul-in-string", b'{"cmd":"sta\\u0000tus"}\n')
    write("fuzz_op_parse", "nul-byte", b'{"cmd":"status"}\x00\n')
    write("fuzz_op_parse", "truncated", b'{"cmd":"line","line":1,"op":"ena')
    write("fuzz_op_parse", "two-requests", b'{"cmd":"status"}\n{"cmd":"reload"}\n')
    write("fuzz_op_parse", "whitespace-dup", b' {"cmd" : "peers", "cmd":"stats", "x":[1,{"y":null}]}\r\n')
    write("fuzz_op_parse", "not-object", b'["status"]\n')
    write("fuzz_op_parse", "deep", b'{"cmd":"status","x":' + b"[" * 3000 + b"\n")
    # No 64 KiB seeds: they would raise libFuzzer's max_len to 65536 and cut
    # the execution rate tenfold. The harness puts every input at the size
    # limit itself (cp_op_frame at CP_OP_REQ_MAX); tests/control/test_op_parse.c
    # parses requests of exactly the limit.


if __name__ == "__main__":
    main()
