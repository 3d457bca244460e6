#!/usr/bin/python3
"""ws_raw_client.py - raw-socket RFC 6455 conformance client for fanogate's
wss://.../flow (ssl + socket only, no WebSocket library).

It sends what WebSocket libraries refuse to send: unmasked frames, reserved
bits and opcodes, oversized and fragmented control frames, text frames, bad
close codes and reasons, non-minimal and 63-bit lengths, oversized and
interleaved messages, frames cut across TLS records and truncated frames.
Each case runs on its own connection and checks the exact close code (and
that the close reason names the codec's stable reason), that the server
closes TCP after its close frame, and, after every case, that the daemon
still serves a normal client (upgrade, binary seed frame -> status frame).

Usage:
  ws_raw_client.py                    start a daemon (tests/control/daemon_harness.py,
                                      FANOGATE = the binary), run, stop it
  ws_raw_client.py --port P [--ca F] [--token T] [--hidden N]
                                      run against a running server on 127.0.0.1
Exit status: 0 all passed, 1 a check failed, 77 skipped (no daemon binary).
Run with /usr/bin/python3."""
import argparse
import base64
import hashlib
import os
import socket
import ssl
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from fgtest.flow import STATUS_STREAM, seed  # noqa: E402
from fgtest.ws import MASK, ws_frame as frame  # noqa: E402

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

passed = 0
failed = 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + msg, flush=True)
    else:
        failed += 1
        print("FAIL - " + msg, flush=True)
    return cond


# ---- frames ---------------------------------------------------------------

def aeon_seed(layer, token_seq, line, hidden):
    return seed(layer, token_seq, line, [0.5] * hidden)


# ---- connection -----------------------------------------------------------

class Conn:
    def __init__(self, cfg, query="?layers=0", head_step=0, early=b""):
        """head_step > 0 sends the upgrade request that many bytes per TLS
        record; early is sent in the same write as the request (frames
        before the 101 arrives)."""
        raw = socket.create_connection(("127.0.0.1", cfg.port), timeout=10)
        ctx = ssl.create_default_context(cafile=cfg.ca) if cfg.ca else ssl._create_unverified_context()
        self.s = ctx.wrap_socket(raw, server_hostname="localhost")
        self.buf = b""
        key = base64.b64encode(os.urandom(16)).decode()
        head = (f"GET /flow{query} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
        if cfg.token:
            head += f"Authorization: Bearer {cfg.token}\r\n"
        req = (head + "\r\n").encode() + early
        if head_step:
            for i in range(0, len(req), head_step):
                self.s.sendall(req[i:i + head_step])
        else:
            self.s.sendall(req)
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("closed during the handshake")
            self.buf += d
        resp, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = resp.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        want = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        self.accept_ok = self.headers.get("sec-websocket-accept") == want

    def send(self, data):
        self.s.sendall(data)

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("eof")
            self.buf += d

    def read_frame(self):
        """(fin, rsv, opcode, payload) of one server frame; servers never mask."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        if b1 & 0x80:
            raise ValueError("server frame is masked")
        n, off = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, off = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
        self._need(off + n)
        p = self.buf[off:off + n]
        self.buf = self.buf[off + n:]
        return bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F, p

    def read_close(self):
        """Skip data/pong frames until a close: (code or None, reason)."""
        while True:
            fin, rsv, op, p = self.read_frame()
            if op == 0x8:
                if not p:
                    return None, ""
                return struct.unpack(">H", p[:2])[0], p[2:].decode("utf-8", "replace")

    def closed_after(self, secs=5.0):
        """True when the server closes TCP (EOF or reset) within secs."""
        self.s.settimeout(secs)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
        except (ssl.SSLError, ConnectionError, OSError) as e:
            return not isinstance(e, socket.timeout)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


# ---- the cases ------------------------------------------------------------

def expect_close(cfg, name, data, code, reason, query="?layers=0"):
    c = Conn(cfg, query)
    try:
        if not check(c.status == 101 and c.accept_ok, f"{name}: upgraded"):
            return
        c.send(data)
        try:
            got, why = c.read_close()
        except (ConnectionError, ssl.SSLError, OSError, ValueError) as e:
            check(False, f"{name}: close frame expected, got {e!r}")
            return
        check(got == code, f"{name}: close code {got} (want {code})")
        if reason is not None:
            check(why == reason, f"{name}: close reason '{why}' (want '{reason}')")
        check(c.closed_after(), f"{name}: TCP closed after the close frame")
    finally:
        c.close()


def normal_client(cfg, name):
    """A well-behaved client: one seed frame in one binary message -> one
    status frame (stream 0xFFFE) in one binary message; clean close 1000."""
    c = Conn(cfg)
    ok = c.status == 101 and c.accept_ok
    if ok:
        c.send(frame(0x82, aeon_seed(0, 1000 + passed, 1, cfg.hidden)))
        fin, rsv, op, p = c.read_frame()
        ok = fin and rsv == 0 and op == 0x2 and len(p) >= 10 and struct.unpack(">H", p[:2])[0] == STATUS_STREAM
        if ok:
            c.send(frame(0x88, struct.pack(">H", 1000)))
            code, _ = c.read_close()
            ok = code == 1000 and c.closed_after()
    c.close()
    check(ok, f"after {name}: a normal client is still served")


def cases(cfg):
    max_msg = cfg.max_message
    seed = aeon_seed(0, 7, 1, cfg.hidden)
    C = []
    add = C.append
    # header classes (RFC 6455 5.2)
    add(("unmasked binary", frame(0x82, seed, mask=False), 1002, "unmasked"))
    add(("unmasked close", frame(0x88, b"\x03\xe8", mask=False), 1002, "unmasked"))
    add(("RSV1 set", frame(0xC2, seed), 1002, "rsv_bits"))
    add(("RSV2 set", frame(0xA2, seed), 1002, "rsv_bits"))
    add(("RSV3 set", frame(0x92, seed), 1002, "rsv_bits"))
    add(("RSV on ping", frame(0xC9, b"x"), 1002, "rsv_bits"))
    for op in (0x3, 0x7, 0xB, 0xF):
        add((f"reserved opcode {op:#x}", frame(0x80 | op, b"x"), 1002, "bad_opcode"))
    add(("16-bit length for 5 bytes", frame(0x82, b"hello", form=16), 1002, "length_not_minimal"))
    add(("64-bit length for 300 bytes", frame(0x82, bytes(300), form=64), 1002, "length_not_minimal"))
    add(("64-bit length with the top bit", bytes([0x82, 0xFF]) + b"\x80" + bytes(7) + MASK, 1002,
         "length_63bit"))
    # control frames (5.5)
    add(("ping of 126 bytes", frame(0x89, bytes(126)), 1002, "control_too_long"))
    add(("close of 126 bytes", frame(0x88, b"\x03\xe8" + b"r" * 124), 1002, "control_too_long"))
    add(("fragmented ping", frame(0x09, b"a") + frame(0x80, b"b"), 1002, "control_fragmented"))
    add(("fragmented close", frame(0x08, b"\x03\xe8"), 1002, "control_fragmented"))
    # message sequence (5.4)
    add(("continuation without a message", frame(0x80, seed), 1002, "unexpected_continuation"))
    add(("binary inside a fragmented message", frame(0x02, seed[:4]) + frame(0x82, seed), 1002,
         "expected_continuation"))
    # data types
    add(("text frame", frame(0x81, b"hello"), 1003, "text_refused"))
    add(("fragmented text", frame(0x01, b"he"), 1003, "text_refused"))
    add(("text after a binary fragment", frame(0x02, seed[:4]) + frame(0x81, b"x"), 1002,
         "expected_continuation"))
    # sizes
    add(("message over ws_max_message (header only)", frame(0x82, length=max_msg + 1), 1009,
         "message_too_big"))
    add(("fragments summing over ws_max_message",
         frame(0x02, bytes(max_msg // 2)) + frame(0x00, bytes(max_msg // 2)) + frame(0x80, b"x"), 1009,
         "message_too_big"))
    # close frames (5.5.1, 7.4)
    for code in (0, 999, 1004, 1005, 1006, 1012, 1014, 1015, 1016, 2000, 2999, 5000, 65535):
        add((f"close code {code}", frame(0x88, struct.pack(">H", code)), 1002, "close_code"))
    add(("close with a 1-byte payload", frame(0x88, b"\x03"), 1002, "close_payload"))
    add(("close reason not UTF-8", frame(0x88, b"\x03\xe8\xc0\xaf"), 1007, "close_reason_utf8"))
    add(("close reason with a surrogate", frame(0x88, b"\x03\xe8\xed\xa0\x80"), 1007, "close_reason_utf8"))
    # valid closes are echoed
    for code in (1000, 1001, 1003, 1007, 1011, 3000, 4999):
        add((f"valid close {code} echoed", frame(0x88, struct.pack(">H", code) + "bye κ".encode()), code, ""))
    add(("empty close echoed empty", frame(0x88, b""), None, ""))
    add(("close between fragments of a message echoed",
         frame(0x02, seed[:4]) + frame(0x88, struct.pack(">H", 1000)), 1000, ""))
    return C


def truncated_then_eof(cfg):
    """A frame cut short, then the client goes away: the server must just
    drop the connection."""
    c = Conn(cfg)
    check(c.status == 101, "truncated frame: upgraded")
    f = frame(0x82, aeon_seed(0, 8, 1, cfg.hidden))
    c.send(f[: len(f) // 2])
    time.sleep(0.1)  # not readiness: the half frame and the EOF arrive as two events
    c.close()
    normal_client(cfg, "truncated frame + EOF")


def split_records(cfg):
    """A valid message cut into one TLS record per byte, with a ping and a
    pong between its fragments: one pong back with the ping's payload, one
    status frame for the seed."""
    c = Conn(cfg)
    check(c.status == 101, "split records: upgraded")
    s = aeon_seed(0, 9, 1, cfg.hidden)
    data = frame(0x02, s[:5]) + frame(0x89, b"ping!") + frame(0x8A, b"") + frame(0x00, s[5:12]) + \
        frame(0x80, s[12:])
    for i in range(len(data)):
        c.send(data[i:i + 1])
    fin, rsv, op, p = c.read_frame()
    check(op == 0xA and p == b"ping!", "split records: pong carries the ping payload")
    fin, rsv, op, p = c.read_frame()
    check(op == 0x2 and struct.unpack(">H", p[:2])[0] == STATUS_STREAM,
          "split records: the reassembled seed is answered with a status frame")
    c.send(frame(0x88, struct.pack(">H", 1000)))
    code, _ = c.read_close()
    check(code == 1000, "split records: close 1000 echoed")
    c.close()


def at_the_limits(cfg):
    """What is exactly at a limit is accepted: a 125-byte ping (pong with the
    same payload), a 125-byte close reason, and a message of exactly
    ws_max_message bytes in fragments around a ping (its contents are not
    whole aeon frames, so it is answered with one status frame, outcome
    malformed, and the session goes on)."""
    c = Conn(cfg)
    check(c.status == 101, "limits: upgraded")
    ping = bytes(range(125))
    c.send(frame(0x89, ping))
    fin, rsv, op, p = c.read_frame()
    check(fin and op == 0xA and p == ping, "limits: 125-byte ping -> pong with the same payload")
    n = cfg.max_message
    body = bytes(n)
    c.send(frame(0x02, body[: n // 2]) + frame(0x89, b"mid") + frame(0x80, body[n // 2:]))
    fin, rsv, op, p = c.read_frame()
    check(op == 0xA and p == b"mid", "limits: ping between fragments of a max-size message answered")
    fin, rsv, op, p = c.read_frame()
    check(op == 0x2 and struct.unpack(">H", p[:2])[0] == STATUS_STREAM,
          "limits: message of exactly ws_max_message bytes accepted (status frame back)")
    c.send(frame(0x82, aeon_seed(0, 11, 1, cfg.hidden)))
    fin, rsv, op, p = c.read_frame()
    check(op == 0x2 and struct.unpack(">H", p[:2])[0] == STATUS_STREAM, "limits: session still serves frames")
    c.send(frame(0x88, struct.pack(">H", 4000) + b"r" * 123))
    code, why = c.read_close()
    check(code == 4000, "limits: close with a 123-byte reason echoed")
    c.close()


def handshake_pieces(cfg):
    """The upgrade request one byte per TLS record, and a request with a
    frame right behind it in the same record: both upgrade and the frame is
    answered."""
    c = Conn(cfg, head_step=1)
    check(c.status == 101 and c.accept_ok, "upgrade request sent one byte per TLS record: upgraded")
    c.send(frame(0x82, aeon_seed(0, 12, 1, cfg.hidden)))
    fin, rsv, op, p = c.read_frame()
    check(op == 0x2 and struct.unpack(">H", p[:2])[0] == STATUS_STREAM, "byte-wise upgrade: frames served")
    c.close()
    c = Conn(cfg, early=frame(0x82, aeon_seed(0, 13, 1, cfg.hidden)) + frame(0x89, b"early"))
    check(c.status == 101 and c.accept_ok, "frames behind the upgrade request: upgraded")
    fin, rsv, op, p = c.read_frame()
    check(op == 0x2 and struct.unpack(">H", p[:2])[0] == STATUS_STREAM,
          "a frame in the same record as the upgrade request is answered")
    fin, rsv, op, p = c.read_frame()
    check(op == 0xA and p == b"early", "a ping behind it is answered too")
    c.close()
    c = Conn(cfg, early=frame(0x82, b"x", mask=False))
    check(c.status == 101, "unmasked frame behind the upgrade request: upgraded first")
    code, why = c.read_close()
    check(code == 1002 and why == "unmasked", "... then closed 1002 unmasked")
    c.close()


def frames_after_close(cfg):
    """Bytes after the client's close: the server answers the close and
    ignores the rest (no second close, no crash)."""
    c = Conn(cfg)
    c.send(frame(0x88, struct.pack(">H", 1000)) + frame(0x82, b"late") + b"\x00\x01garbage")
    code, _ = c.read_close()
    check(code == 1000, "bytes after close: the close is echoed once")
    check(c.closed_after(), "bytes after close: TCP closed")
    c.close()


def handshake_refusals(cfg):
    """Upgrade requests the parser refuses (status codes of docs/websocket.md)."""
    def raw(head):
        raw_s = socket.create_connection(("127.0.0.1", cfg.port), timeout=10)
        ctx = ssl.create_default_context(cafile=cfg.ca) if cfg.ca else ssl._create_unverified_context()
        s = ctx.wrap_socket(raw_s, server_hostname="localhost")
        s.sendall(head.encode())
        buf = b""
        while b"\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        return int(buf.split()[1]) if buf.startswith(b"HTTP/1.1 ") else 0

    auth = f"Authorization: Bearer {cfg.token}\r\n" if cfg.token else ""
    base = ("GET /flow HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" + auth)
    key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    ver = "Sec-WebSocket-Version: 13\r\n"
    for name, head, want in (
        ("version 8", base + key + "Sec-WebSocket-Version: 8\r\n\r\n", 426),
        ("key of 15 bytes", base + "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAA\r\n" + ver + "\r\n", 400),
        ("two keys", base + key + key + ver + "\r\n", 400),
        ("obs-fold in the upgrade", base + key + ver + "X: a\r\n b\r\n\r\n", 400),
        ("chunked upgrade", base + key + ver + "Transfer-Encoding: chunked\r\n\r\n", 501),
        ("HTTP/1.0 upgrade", base.replace("HTTP/1.1", "HTTP/1.0") + key + ver + "\r\n", 400),
        ("bad layer", base.replace("/flow", "/flow?layers=99999") + key + ver + "\r\n", 400),
    ):
        check(raw(head) == want, f"handshake refused: {name} -> {want}")


def library_client(cfg):
    """After everything, a mainstream client (python3-websockets) is still
    served: upgrade with the aeon-flow subprotocol, one seed -> one status."""
    try:
        import asyncio
        import websockets
    except ImportError:
        print("skip - python3-websockets not installed: library client not run", flush=True)
        return

    async def go():
        ctx = ssl.create_default_context(cafile=cfg.ca) if cfg.ca else ssl._create_unverified_context()
        headers = {"Authorization": "Bearer " + cfg.token} if cfg.token else {}
        async with websockets.connect(f"wss://localhost:{cfg.port}/flow?layers=0", ssl=ctx,
                                      extra_headers=headers, subprotocols=["aeon-flow"]) as ws:
            sub = ws.subprotocol
            await ws.send(aeon_seed(0, 14, 1, cfg.hidden))
            m = await asyncio.wait_for(ws.recv(), 10)
            await ws.close()
            return sub, m, ws.close_code

    sub, m, code = asyncio.run(go())
    check(sub == "aeon-flow", "library client: aeon-flow subprotocol selected")
    check(isinstance(m, bytes) and struct.unpack(">H", m[:2])[0] == STATUS_STREAM,
          "library client: seed answered with a status frame")
    check(code == 1000, "library client: clean close 1000")


def run_all(cfg):
    handshake_refusals(cfg)
    for name, data, code, reason in cases(cfg):
        expect_close(cfg, name, data, code, reason)
        normal_client(cfg, name)
    truncated_then_eof(cfg)
    split_records(cfg)
    at_the_limits(cfg)
    handshake_pieces(cfg)
    frames_after_close(cfg)
    normal_client(cfg, "all cases")
    library_client(cfg)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int)
    ap.add_argument("--ca")
    ap.add_argument("--token")
    ap.add_argument("--hidden", type=int, default=8)
    ap.add_argument("--max-message", type=int, default=1 << 20, help="the server's [tls] ws_max_message")
    cfg = ap.parse_args()
    if cfg.port:
        sys.exit(run_all(cfg))
    # Self-hosted: D1's harness makes the PKI and config (self-signed CA via
    # openssl req), starts `fanogate --no-dataplane --config` on a free port
    # and always stops it.
    from fgtest import harness as h
    with h.Daemon(hidden=cfg.hidden) as d:
        cfg.port, cfg.ca, cfg.token = d.port, f"{d.dir}/ca.pem", h.TOKEN
        rc = run_all(cfg)
        if rc:
            print("---- daemon log (tail) ----\n" + d.log()[-4000:], flush=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
