"""fgtest.ws - WebSocket client frames (RFC 6455) for the tests that speak
to the daemon's wss:// ingress byte by byte or write fuzz seeds.
Callers: tests/control/ws_raw_client.py, gen_fuzz_seeds.py, conn_chaos.py,
daemon_ws.py, tests/hostile/hostile_slow_consumer_close.py,
hostile_ws_paused_message.py, hostile_disk_full.py, fgtest.harness; any
thread."""
import socket
import ssl
import struct

MASK = b"\x37\xfa\x21\x3d"  # the fixed masking key (reproducible bytes)


def upgrade_request(path, token):
    """The client's HTTP/1.1 upgrade of `path` to WebSocket (RFC 6455 4.1,
    the RFC's sample key) with a Bearer token, as bytes."""
    return (f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n").encode()


def read_to_end(s):
    """Everything a server sends on socket s until it closes, a TLS error,
    a reset or s's timeout: (the bytes, the exception that ended it or
    None)."""
    data = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                return data, None
            data += c
    except (ssl.SSLError, socket.timeout, ConnectionError) as e:
        return data, e


def close_code(data):
    """The code of the first WebSocket close frame in a server-to-client
    byte stream (unmasked frames), or None (none, or cut short)."""
    for b0, payload in server_frames(data)[0]:
        if b0 == 0x88:
            return struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
    return None


def _frame_at(buf, i):
    """The unmasked server frame at buf[i:]: (b0, payload, its end), or
    None while it is unfinished."""
    if i + 2 > len(buf):
        return None
    n, off = buf[i + 1] & 0x7F, 2
    if n == 126:
        if i + 4 > len(buf):
            return None
        n, off = struct.unpack(">H", buf[i + 2:i + 4])[0], 4
    elif n == 127:
        if i + 10 > len(buf):
            return None
        n, off = struct.unpack(">Q", buf[i + 2:i + 10])[0], 10
    if i + off + n > len(buf):
        return None
    return buf[i], buf[i + off:i + off + n], i + off + n


def server_frames(buf):
    """Split a server byte stream (unmasked frames) into [(b0, payload)]
    and the bytes of an unfinished frame."""
    out, i = [], 0
    while (f := _frame_at(buf, i)) is not None:
        out.append(f[:2])
        i = f[2]
    return out, buf[i:]


def read_message(s, buf=b""):
    """The first whole server frame on socket s, buf holding bytes already
    read: (b0, payload, the bytes after it); EOFError if s closes first."""
    while (f := _frame_at(buf, 0)) is None:
        c = s.recv(65536)
        if not c:
            raise EOFError("connection closed before a whole frame")
        buf += c
    return f[0], f[1], buf[f[2]:]


def ws_frame(b0, payload=b"", mask=True, form=None, length=None, key=MASK):
    """A client frame. b0 = FIN|RSV|opcode; form (7, 16, 64) forces the
    length encoding; length overrides the declared length; key is the
    masking key when mask."""
    n = len(payload) if length is None else length
    mb = 0x80 if mask else 0
    if form is None:
        form = 7 if n < 126 else 16 if n < 65536 else 64
    if form == 7:
        h = bytes([b0, mb | n])
    elif form == 16:
        h = bytes([b0, mb | 126]) + struct.pack(">H", n)
    else:
        h = bytes([b0, mb | 127]) + struct.pack(">Q", n)
    if not mask:
        return h + payload
    return h + key + bytes(c ^ key[i & 3] for i, c in enumerate(payload))
