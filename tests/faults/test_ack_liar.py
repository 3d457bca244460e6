#!/usr/bin/python3
"""test_ack_liar.py FANORELAY - fanorelay's --check-acks end to end, on
loopback, against a server that lies.

A client sends fragmented frames (wire.md 2.1: 4-byte fragment header,
10-byte aeon header, 2 fragments per frame) through fanorelay with 30% loss
upward to a small server here. Run 1, honest: the server ACKs a frame only
once it holds both fragments; the relay must prove every ACK (exit 0,
unproven 0, proven > 0). Run 2, liar: the server ACKs on the first fragment
it sees, so frames the relay dropped half of get ACKed; the relay must
count them as unproven and exit 1. Exits 0 when both hold.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from fgtest import relay as fgrelay, wait  # noqa: E402
from fgtest.flow import ack_frame, datagram, fragments, frame  # noqa: E402

CHUNK = 100
STREAM = 0xAF61
LISTEN = 24000  # the relay's port, in this run's own network namespace (main)


def frame_fragments(fid, seq):
    return fragments(frame(STREAM, seq, 0, bytes((seq + i) & 0xFF for i in range(150))), fid, CHUNK)


def ack_datagram(ack_id, seq):
    return datagram(ack_id, ack_frame([(STREAM, seq, 0, 1)]))


def server(sock, liar, stop, seen):
    """ACKs what it receives (liar: on the first fragment); seen["handled"]
    counts the datagrams it is done with (ACK sent or not), seen["acks"]
    the ACKs sent, each bumped after the send."""
    got = {}
    ack_id = 0
    sock.settimeout(0.05)
    while not stop.is_set():
        try:
            dg, src = sock.recvfrom(2048)
        except socket.timeout:
            continue
        fid, idx, total = struct.unpack('>HBB', dg[:4])
        key = (src, fid)
        have = got.setdefault(key, {})
        have[idx] = dg[4:]
        if liar and idx == 0:
            seq = struct.unpack('>I', dg[6:10])[0]
        elif not liar and len(have) == total:
            seq = struct.unpack('>I', have[0][2:6])[0]
        else:
            seen["handled"] += 1
            continue
        sock.sendto(ack_datagram(ack_id, seq), src)
        ack_id = (ack_id + 1) & 0xFFFF
        seen["acks"] += 1
        seen["handled"] += 1


def run(relay, liar, tmp):
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(('127.0.0.1', 0))
    listen = LISTEN
    stats = os.path.join(tmp, 'liar.json' if liar else 'honest.json')
    ready = stats + '.ready'
    p = subprocess.Popen([relay, '--listen', '127.0.0.1:%d' % listen, '--server',
                          '127.0.0.1:%d' % srv.getsockname()[1], '--up-loss', '0.3', '--seed', '5',
                          '--check-acks', '--duration', '30', '--quiet', '--json', '--stats', stats,
                          '--ready-file', ready], stdout=open(stats + '.out', 'w'))
    stop = threading.Event()
    seen = {"handled": 0, "acks": 0}
    th = threading.Thread(target=server, args=(srv, liar, stop, seen))
    th.start()
    try:
        if not wait.until(lambda: os.path.exists(ready) or p.poll() is not None, 5) or not os.path.exists(ready):
            raise SystemExit('FAIL: fanorelay did not start')
        cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sent = 0
        for seq in range(300):
            for dg in frame_fragments(seq, 1000 + seq):
                cli.sendto(dg, ('127.0.0.1', listen))
                sent += 1
            if seq % 20 == 0:
                time.sleep(0.005)  # pacing: the relay's queues are not the subject
        # Before the relay stops and writes the verdicts this test reads:
        # every fragment through it (sent on or lost), handled by the server,
        # and every ACK the server sent back seen (checked) by the relay.
        def settled():
            st = fgrelay.stats_now(p, stats + '.out')
            return (fgrelay.idle(st, sent) and seen["handled"] == st["up"]["out"]
                    and st["down"]["in"] == seen["acks"])
        if not wait.until(settled, 10):
            raise SystemExit('FAIL: fragments or ACKs still in flight through the relay after 10 s: %r' % seen)
        p.terminate()
        rc = p.wait(timeout=10)
    finally:
        stop.set()
        th.join()
        if p.poll() is None:
            p.kill()
    return rc, json.load(open(stats))['acks']


def main():
    relay = sys.argv[1]
    wait.private_net()  # LISTEN cannot collide with another test's port
    with tempfile.TemporaryDirectory(prefix='fgft-liar-') as tmp:
        rc, a = run(relay, False, tmp)
        print('honest: exit %d, acked %d proven %d unproven %d' % (rc, a['acked_seqs'], a['ack_proven'],
                                                                     a['ack_unproven']))
        if rc != 0 or a['ack_unproven'] != 0 or a['ack_proven'] < 100:
            print('FAIL: the honest server\'s ACKs must all be proven')
            return 1
        rc, a = run(relay, True, tmp)
        print('liar:   exit %d, acked %d proven %d unproven %d' % (rc, a['acked_seqs'], a['ack_proven'],
                                                                     a['ack_unproven']))
        # 300 frames, 30% loss per fragment: about 63 first fragments go
        # through without their second one
        if rc != 1 or a['ack_unproven'] < 20:
            print('FAIL: the liar\'s ACKs for half-delivered frames must be caught')
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
