"""fgtest.ws - WebSocket client frames (RFC 6455) for the tests that speak
to the daemon's wss:// ingress byte by byte or write fuzz seeds.
Callers: tests/control/ws_raw_client.py, gen_fuzz_seeds.py, conn_chaos.py;
any thread."""
import struct

MASK = b"\x37\xfa\x21\x3d"  # the fixed masking key (reproducible bytes)


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
