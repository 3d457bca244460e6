#!/usr/bin/python3
"""gen_fuzz_seeds.py - regenerate the seed corpora of the control-plane
protocol fuzzers: fuzz/corpus/fuzz_http/seed-* and fuzz/corpus/fuzz_ws/seed-*.
Run from anywhere: /usr/bin/python3 tests/control/gen_fuzz_seeds.py
Crashers kept beside the seeds (crash-<sha1>) are never touched."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

KEY = "dGhlIHNhbXBsZSBub25jZQ=="

HTTP = {
    "get-root": b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    "get-health-10": b"GET /healthz HTTP/1.0\r\n\r\n",
    "head-close": b"HEAD /healthz HTTP/1.1\r\nHost: gw:8443\r\nConnection: close\r\n\r\n",
    "flow-upgrade": ("GET /flow?layers=1,2,27&status=0 HTTP/1.1\r\nHost: gw\r\n"
                     "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: aeon-flow\r\n"
                     "Authorization: Bearer abc.DEF-123_~+/==\r\n\r\n" % KEY).encode(),
    "flow-all": ("GET /flow?layers=all HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                 "Sec-WebSocket-Version: 13\r\n\r\n" % KEY).encode(),
    "flow-pct": b"GET /flow?status=1&layers=0%2C5%2c31 HTTP/1.1\r\nHost: gw\r\n\r\n",
    "post-seed": (b"POST /residual-seed HTTP/1.1\r\nHost: gw\r\n"
                  b"Content-Type: application/octet-stream\r\nContent-Length: 10\r\n"
                  b"Expect: 100-continue\r\n\r\n" + bytes(10)),
    "post-canonical-10": b"POST /canonical HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
    "get-pull": b"GET /residual-seed/3/17 HTTP/1.1\r\nhOsT:h\r\nX-Empty:\r\nX-Tabs:\t v \t\r\n\r\n",
    "pipelined": b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n",
    "bad-chunked": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
    "bad-fold": b"GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n c\r\n\r\n",
    "bad-version": b"GET / HTTP/2.0\r\n\r\n",
    "bad-cl-dup": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
}

sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from fgtest.flow import frame as _frame  # noqa: E402
from fgtest.ws import MASK, ws_frame as frame  # noqa: E402


def aeon(stream, seq, payload):
    return _frame(stream, seq, 0, payload)


# ws seeds: 2 bytes of fuzzer config (flags, split seed) then the stream.
# flags: bit0 accept_text; bits1-3 max_message index (7 = 1 MiB, 4 = 1000).
BIN = bytes([7 << 1, 5])
TXT = bytes([(7 << 1) | 1, 9])
SMALL = bytes([4 << 1, 3])
WS = {
    "binary-aeon": BIN + frame(0x82, aeon(0xAF60, 7, bytes(16))),
    "rfc-hello-text": TXT + bytes([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]),
    "rfc-unmasked": TXT + bytes([0x81, 0x05]) + b"Hello",
    "fragmented-ping": BIN + frame(0x02, b"AB") + frame(0x89, b"p1") + frame(0x00, b"")
    + frame(0x8A, b"") + frame(0x00, b"CDE") + frame(0x80, b"F") + frame(0x88, b"\x03\xe8bye"),
    "len16": BIN + frame(0x82, bytes(300)),
    "len64": BIN + frame(0x82, bytes(65536)),
    "not-minimal": BIN + frame(0x82, b"abc", form=16),
    "too-big": SMALL + frame(0x02, bytes(600)) + frame(0x80, bytes(401)),
    "close-empty": BIN + frame(0x88, b""),
    "close-bad-code": BIN + frame(0x88, b"\x03\xed"),
    "close-utf8": BIN + frame(0x88, b"\x03\xe8\xce\xba\xe1\xbd\xb9"),
    "text-kosme-split": TXT + frame(0x01, b"\xce\xba\xe1") + frame(0x89, b"") + frame(0x80, b"\xbd\xb9"),
    "rsv": BIN + bytes([0xC2, 0x80]) + MASK,
    "ping-fragmented": BIN + bytes([0x09, 0x80]) + MASK,
}


def write(dirname, seeds):
    d = os.path.join(CORPUS, dirname)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    write("fuzz_http", HTTP)
    write("fuzz_ws", WS)
