#!/usr/bin/python3
"""mkpcap.py - write a small pcap of fanogate traffic for the dissector test.

Packets (Ethernet/IPv4/UDP unless said):
 1. vector S01 (seed, layer 1, token 42, line 1) in a fragment header, port 4242
 2. vector A02 (ACK frame, one entry = A01), port 4242 -> sender
 3. a status frame (token 42, layer 1, outcome resolved, shadow_mode, the
    audit failed), port 4242
 4. vector U03 (a continuation fragment), port 4242
 5. vector C02 (canonical digest) as a raw-profile datagram on port 4300
 6..: a TCP stream: HTTP upgrade to WebSocket on port 8080, then one masked
    binary message holding vector S02 (seed, layer 27, line 6, sign -).
 12. packet 3's status with the audit off instead of failed.
Only the standard library; the bytes come from tests/data/vectors.txt."""
import os, struct, sys

def vectors(path):
    v = {}
    for ln in open(path):
        if ln.startswith('#') or '|' not in ln:
            continue
        parts = [x.strip() for x in ln.split('|')]
        v[parts[0]] = bytes.fromhex(parts[2])
    return v

def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff

def ip4(proto, src, dst, payload):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, bytes(src), bytes(dst))
    h = h[:10] + struct.pack('!H', csum(h)) + h[12:]
    return h + payload

def eth(payload):
    return b'\x02\0\0\0\0\x02' + b'\x02\0\0\0\0\x01' + b'\x08\x00' + payload

A = [10, 99, 0, 2]
B = [10, 99, 0, 1]

def udp(sport, dport, data, src=A, dst=B):
    u = struct.pack('!HHHH', sport, dport, 8 + len(data), 0) + data
    return eth(ip4(17, src, dst, u))

seqs = {}
def tcp(sport, dport, flags, data=b'', src=A, dst=B):
    key = (sport, dport)
    seq = seqs.get(key, 1000 if sport != 8080 else 5000)
    ack = seqs.get((dport, sport), 1000 if dport != 8080 else 5000)
    t = struct.pack('!HHIIBBHHH', sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + data
    ph = bytes(src) + bytes(dst) + struct.pack('!BBH', 0, 6, len(t))
    t = t[:16] + struct.pack('!H', csum(ph + t)) + t[18:]
    seqs[key] = seq + len(data) + (1 if flags & 0x03 else 0)
    return eth(ip4(6, src, dst, t))

def main():
    data = os.environ.get('FG_TEST_DATA', os.path.join(os.path.dirname(__file__), '..', 'data'))
    v = vectors(os.path.join(data, 'vectors.txt'))
    out = sys.argv[1]
    # status version 2: bitset 0x7f (every line satisfied), expected 0x02, landed 0x02
    # facts: ack, shadow_mode, fully_resolved and audit_failed (bit 5) or audit_off (bit 6)
    def status_frame(audit):
        s = struct.pack('!HIB', 0xFFFE, 42, 0) + (32).to_bytes(3, 'big')
        return s + struct.pack('<BBBBHBBBBHIIQBBBB', 2, 1, 1, 0, 1, 0x7F, 0x02, 0x01 | 0x02 | 0x04 | audit, 1, 0,
                               16, 3, 0x5e2de06ec4043aa2, 0x02, 0, 0, 0)
    status = status_frame(0x20)
    pkts = [
        udp(40000, 4242, struct.pack('!HBB', 5, 0, 1) + v['S01']),
        udp(4242, 40000, v['A02'], src=B, dst=A),
        udp(4242, 40000, struct.pack('!HBB', 6, 0, 1) + status, src=B, dst=A),
        udp(40000, 4242, v['U03']),
        udp(40001, 4300, v['C02']),
    ]
    # WebSocket over plain TCP (the dissector sees what TLS would hide).
    req = (b'GET /flow HTTP/1.1\r\nHost: fg\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
           b'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n'
           b'Sec-WebSocket-Protocol: aeon-flow\r\n\r\n')
    resp = (b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
            b'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: aeon-flow\r\n\r\n')
    payload = v['S02']
    mask = b'\x11\x22\x33\x44'
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    wsf = bytes([0x82, 0x80 | len(payload)]) + mask + masked
    pkts += [
        tcp(50000, 8080, 0x02),
        tcp(8080, 50000, 0x12, src=B, dst=A),
        tcp(50000, 8080, 0x10),
        tcp(50000, 8080, 0x18, req),
        tcp(8080, 50000, 0x18, resp, src=B, dst=A),
        tcp(50000, 8080, 0x18, wsf),
        udp(4242, 40000, struct.pack('!HBB', 7, 0, 1) + status_frame(0x40), src=B, dst=A),
    ]
    with open(out, 'wb') as fo:
        fo.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(pkts):
            fo.write(struct.pack('<IIII', 1700000000 + i, 0, len(p), len(p)) + p)

if __name__ == '__main__':
    main()
