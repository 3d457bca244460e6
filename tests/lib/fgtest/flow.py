"""fgtest.flow - the aeon-flow codec the Python tests share: frame headers,
seed / canonical / resolved / ACK frames, the UDP fragmented profile, the
status payload, and the f32 reference reduction (bit-exact checks).
Wire layout: docs/wire-decisions.md and include/fg/wire.h; a frame is
stream u16 BE, seq u32 BE, flags u8, length u24 BE, then the payload.
Callers: every Python test that builds or parses frames; any thread."""
import struct

SEED_BASE, CANON_BASE, RESOLVED_BASE = 0xAF60, 0xAF80, 0xAFA0
STATUS_STREAM, ACK_STREAM = 0xFFFE, 0xFFFF
RULE = (1, 3, 5)  # the default rule: lines 1, 3, 5 reduced in that order
HDR_LEN = 10

OUTCOMES = ["accepted", "resolved", "partial", "duplicate", "duplicate_pending", "conflict", "late", "expired",
            "poisoned", "no_slot", "shape_mismatch", "unexpected_line", "stale", "bad_range", "malformed",
            "line_disabled"]


def hdr(stream, seq, flags, length):
    """The 10-byte frame header."""
    return struct.pack(">HIB", stream, seq, flags) + length.to_bytes(3, "big")


def frame(stream, seq, flags, payload):
    """A whole frame: header and payload."""
    return hdr(stream, seq, flags, len(payload)) + payload


def f32(x):
    """x rounded to the nearest f32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def floats(values):
    """values (floats, or bytes already packed) as little-endian f32."""
    if isinstance(values, (bytes, bytearray)):
        return bytes(values)
    return struct.pack("<%df" % len(values), *values)


def seed_payload(values, start_pos=0, seq_len=1):
    """start_pos u32 LE, seq_len u32 LE, then the f32 values."""
    return struct.pack("<II", start_pos, seq_len) + floats(values)


def seed(layer, token_seq, line, values, neg=0, start_pos=0, seq_len=1):
    """A residual seed contribution: stream SEED_BASE + layer, flags
    line << 4 | neg. values: floats or packed bytes."""
    return frame(SEED_BASE + layer, token_seq, (line << 4) | neg, seed_payload(values, start_pos, seq_len))


def canonical(layer, token_seq, values, start_pos=0, seq_len=1):
    """A canonical report (the coordinator's reduction) for a slot."""
    return frame(CANON_BASE + layer, token_seq, 0, seed_payload(values, start_pos, seq_len))


def resolved_frame(layer, token_seq, values, start_pos=0, seq_len=1):
    """A resolved seed as the appliance delivers it."""
    return frame(RESOLVED_BASE + layer, token_seq, 0x10, seed_payload(values, start_pos, seq_len))


def ack_frame(entries):
    """A consumer ACK frame: entries (stream, base, hi, lo) -> stream 0xFFFF,
    flags 0x80."""
    payload = b"".join(struct.pack(">HIII", s, b, hi, lo) for s, b, hi, lo in entries)
    return frame(ACK_STREAM, 0, 0x80, payload)


def datagram(fid, payload, index=0, total=1):
    """One datagram of the UDP fragmented profile: frame_id u16 BE, index
    u8, total u8, then the chunk."""
    return struct.pack(">HBB", fid, index, total) + payload


def fragments(frm, fid, chunk):
    """frm cut into datagrams of at most chunk bytes of frame each."""
    total = (len(frm) + chunk - 1) // chunk
    return [datagram(fid, frm[i * chunk:(i + 1) * chunk], i, total) for i in range(total)]


def parse_frames(buf):
    """bytes holding whole frames -> [(stream, seq, flags, payload)];
    ValueError on trailing bytes."""
    out, off = [], 0
    while off < len(buf):
        stream, seq, flags = struct.unpack(">HIB", buf[off:off + 7])
        length = int.from_bytes(buf[off + 7:off + 10], "big")
        out.append((stream, seq, flags, buf[off + 10:off + 10 + length]))
        off += 10 + length
    if off != len(buf):
        raise ValueError("trailing bytes")
    return out


def parse_status(payload):
    """The 32-byte status payload, version 2 (include/fg/wire.h): bitset =
    lines satisfied (0x7f exactly when fully resolved), landed at byte 28."""
    (ver, outcome, line, sign, layer, bitset, expected, facts, line_state, reason, nbytes, epoch,
     fp, landed, r0, r1, r2) = struct.unpack("<BBBBHBBBBHIIQBBBB", payload)
    if ver != 2 or r0 | r1 | r2:
        raise ValueError("status version %d / reserved bytes" % ver)
    return dict(version=ver, outcome=outcome, line=line, sign=sign, dst_layer=layer, bitset=bitset,
                expected=expected, facts=facts, line_state=line_state, reason=reason, bytes=nbytes,
                model_epoch=epoch, fingerprint=fp, landed=landed)


def reduce_pair_x(contribs):
    """contribs: list of (values, neg) in canonical order (lines 1, 3, 5).
    f32 addition, one rounding per step: a double sum of two f32 rounded to f32
    is the correctly rounded f32 sum (53 >= 2*24 + 2)."""
    out = [f32(v) for v in contribs[0][0]]
    if contribs[0][1]:
        out = [-v for v in out]
    for vals, neg in contribs[1:]:
        out = [f32(a - f32(b)) if neg else f32(a + f32(b)) for a, b in zip(out, vals)]
    return out


def reduce_rule(by_line, rule=RULE):
    """by_line: {line: (neg, values)} -> the rule's reduction, packed f32
    (the bytes a resolved seed must carry)."""
    return floats(reduce_pair_x([(by_line[line][1], by_line[line][0]) for line in rule]))
