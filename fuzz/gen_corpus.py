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


if __name__ == "__main__":
    main()
