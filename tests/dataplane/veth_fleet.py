#!/usr/bin/python3
"""veth_fleet.py - a synthetic fleet for the dataplane veth test (b).

Phase "send" runs inside the test's network namespace with kernel UDP
sockets: several workers send fragmented residual-seed contributions
(wire.md 2.1/3.1) for many (token, layer) slots, out of order, with
duplicated and dropped fragments, resend whole frames under new frame_ids
when they are not ACKed (like the fleet), leave some slots incomplete on
purpose, then send late duplicates and a few conflicting contributions.
A consumer socket receives the resolved seeds; each is checked bit for bit
against a reference sum computed here in IEEE f32 (one rounding per
addition, the rule's order). ACK bitmaps are checked against what was
really sent whole, status frames against the outcomes.

Phase "check" runs after fanogate-dp exits and checks its JSON report
against the expectations phase "send" wrote.

Deterministic (seeded RNG). Exits non-zero with a message on any mismatch.
"""
import json
import os
import random
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from fgtest.flow import RESOLVED_BASE, RULE, SEED_BASE, f32, fragments, reduce_rule, seed  # noqa: E402
from fgtest.peer import udp_peer_parser  # noqa: E402


def fail(msg):
    print('FAIL: ' + msg, file=sys.stderr)
    if REPORT:
        c, o = REPORT['counters'], REPORT['outcomes']
        print('report: outcomes %s; counters %s' % ({k: v for k, v in o.items() if v},
                                                     {k: v for k, v in c.items() if v}), file=sys.stderr)
    sys.exit(1)


REPORT = None


def send_phase(a):
    rnd = random.Random(a.seed)
    chunk = a.mtu - 4
    fam = socket.AF_INET
    dp = (a.dp_ip, a.port)
    socks = []
    for i in range(a.workers):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((a.src_ip, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        socks.append(s)
    if a.src_ip6:
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.bind((a.src_ip6, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        socks.append(s)
    cons = socket.socket(fam, socket.SOCK_DGRAM)
    cons.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    cons.bind((a.src_ip, a.consumer_port))

    def dest(s):
        return (a.dp_ip6, a.port) if s.family == socket.AF_INET6 else dp

    # ---- the slots ----
    slots = {}   # (token, layer) -> {line: (neg, floats, body_bytes)}
    contribs = []  # dicts: token, layer, line, sock, frame, complete(bool planned)
    incomplete = set()
    for n in range(a.slots):
        token, layer = 1000 + n, n % a.layers
        c = {}
        for line in RULE:
            neg = rnd.random() < 0.3
            vals = [f32(rnd.uniform(-1, 1) * 10 ** rnd.randint(-3, 7)) for _ in range(a.hidden)]
            body = struct.pack('<%df' % a.hidden, *vals)
            c[line] = (neg, vals, body)
        slots[(token, layer)] = c
        broken = n % 17 == 5  # one line of this slot never arrives whole
        if broken:
            incomplete.add((token, layer))
        for j, line in enumerate(RULE):
            neg, vals, body = c[line]
            # workers own lines, but some slots get their lines from random sockets
            sock = socks[(j + n) % len(socks)] if n % 3 else socks[j % a.workers]
            contribs.append(dict(token=token, layer=layer, line=line, sock=sock,
                                 frame=seed(layer, token, line, body, int(neg)),
                                 whole=not (broken and j == 2)))

    fid = [rnd.randrange(65536)]
    sent_whole = {}   # sock -> set((stream, seq)) of frames sent with every fragment at least once
    acked = {}        # sock -> set((stream, seq))
    statuses = []
    resolved = {}     # (token, layer) -> body bytes
    cons_groups = {}
    counts = dict(datagrams=0, dup_frags=0, dropped_frags=0, resends=0)
    stats = dict(dup_deliveries=0, acks_sent=0)  # consumer side

    def next_fid():
        fid[0] = (fid[0] + 1) & 0xFFFF
        return fid[0]

    def plan(c, first):
        """datagrams for one transmission of contribution c."""
        frags = fragments(c['frame'], next_fid(), chunk)
        out = []
        whole = True
        for i, f in enumerate(frags):
            if not c['whole'] and i == len(frags) - 1:
                whole = False          # the last fragment of a broken contribution never leaves
                counts['dropped_frags'] += 1
                continue
            if first and rnd.random() < a.drop:
                whole = False
                counts['dropped_frags'] += 1
                continue
            out.append(f)
            if rnd.random() < a.dup:
                out.append(f)
                counts['dup_frags'] += 1
        if whole:
            stream = SEED_BASE + c['layer']
            sent_whole.setdefault(c['sock'], set()).add((stream, c['token']))
        return [(c['sock'], d) for d in out]

    def pump(timeout):
        """read ACKs, statuses and resolved seeds for up to timeout seconds."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select(socks + [cons], [], [], min(left, 0.05))
            for s in r:
                while True:
                    try:
                        d, src = s.recvfrom(65536, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    if len(d) < 4:
                        fail('short datagram from the dataplane')
                    fidx, idx, tot = struct.unpack('>HBB', d[:4])
                    if s is cons:
                        g = cons_groups.setdefault(fidx, {})
                        g[idx] = d[4:]
                        if len(g) == tot:
                            frame = b''.join(g[i] for i in range(tot))
                            del cons_groups[fidx]
                            stream, seq, flags = struct.unpack('>HIB', frame[:7])
                            length = int.from_bytes(frame[7:10], 'big')
                            if flags != 0x10 or length != len(frame) - 10:
                                fail('bad resolved frame header')
                            key = (seq, stream - RESOLVED_BASE)
                            # a resend (our ACK was lost or late) must be the same seed
                            if key in resolved and resolved[key] != frame[18:]:
                                fail('slot %s resolved twice with different bodies' % (key,))
                            if key in resolved:
                                stats['dup_deliveries'] += 1
                            resolved[key] = frame[18:]
                            # ACK it, as the fleet's consumer does (wire.md 2.1); every
                            # third one is ACKed twice: a repeated ACK must be a no-op
                            ack = struct.pack('>HIB', 0xFFFF, 0, 0x80) + (14).to_bytes(3, 'big') + \
                                struct.pack('>HIII', stream, seq, 0, 1)
                            for _ in range(2 if seq % 3 == 0 else 1):
                                cons.sendto(struct.pack('>HBB', next_fid(), 0, 1) + ack, src)
                                stats['acks_sent'] += 1
                        continue
                    if tot != 1:
                        fail('the dataplane fragmented an ACK or status')
                    frame = d[4:]
                    stream, seq, flags = struct.unpack('>HIB', frame[:7])
                    length = int.from_bytes(frame[7:10], 'big')
                    if length != len(frame) - 10:
                        fail('bad frame length from the dataplane')
                    if stream == 0xFFFF:
                        if flags != 0x80 or seq != 0 or length % 14:
                            fail('bad ACK header')
                        if len(d) > a.mtu:
                            fail('ACK datagram of %d bytes exceeds the MTU' % len(d))
                        for k in range(length // 14):
                            st, base, hi, lo = struct.unpack('>HIII', frame[10 + 14 * k:24 + 14 * k])
                            for b in range(64):
                                bit = (lo >> b) & 1 if b < 32 else (hi >> (b - 32)) & 1
                                if bit:
                                    acked.setdefault(s, set()).add((st, (base + b) & 0xFFFFFFFF))
                    elif stream == 0xFFFE:
                        if length != 32 or flags & 0x80:
                            fail('bad status frame')
                        p = frame[10:]
                        statuses.append(dict(token=seq, outcome=p[1], line=p[2], layer=struct.unpack('<H', p[4:6])[0],
                                             facts=p[8], fp=struct.unpack('<Q', p[20:28])[0]))
                    else:
                        fail('unexpected stream 0x%04x from the dataplane' % stream)

    def blast(dgrams):
        # out of order: shuffle inside windows, so groups interleave
        for i in range(0, len(dgrams), a.window):
            w = dgrams[i:i + a.window]
            rnd.shuffle(w)
            for s, d in w:
                s.sendto(d, dest(s))
                counts['datagrams'] += 1
            pump(0)

    dgrams = []
    for c in contribs:
        dgrams += plan(c, True)
    blast(dgrams)
    pump(0.3)
    # the fleet resends what is not ACKed, whole, under a new frame_id
    for rnd_i in range(5):
        again = []
        for c in contribs:
            key = (SEED_BASE + c['layer'], c['token'])
            if key not in acked.get(c['sock'], set()) and c['whole']:
                again += plan(c, False)
                counts['resends'] += 1
        if not again:
            break
        blast(again)
        pump(0.3)
    complete = [k for k in slots if k not in incomplete]
    end = time.monotonic() + 5
    while len([k for k in complete if k in resolved]) < len(complete) and time.monotonic() < end:
        pump(0.1)
    # late duplicates (same bodies) and conflicts (other bodies) on resolved slots
    late = [c for c in contribs if (c['token'], c['layer']) in resolved][:a.late]
    dg = []
    for c in late:
        dg += plan(dict(c, whole=True), False)
    conflicts = []
    for c in [c for c in contribs if (c['token'], c['layer']) in resolved and c['line'] == 1][-a.conflicts:]:
        vals = [f32(v + 1.0) for v in slots[(c['token'], c['layer'])][1][1]]
        body = struct.pack('<%df' % a.hidden, *vals)
        cc = dict(c, frame=seed(c['layer'], c['token'], 1, body), whole=True)
        conflicts.append(cc)
        dg += plan(cc, False)
    for s, d in dg:
        s.sendto(d, dest(s))
    pump(0.5)

    # ---- checks ----
    for k in complete:
        if k not in resolved:
            fail('slot %s never resolved' % (k,))
        want = reduce_rule({l: v[:2] for l, v in slots[k].items()})
        if resolved[k] != want:
            bad = next(i for i in range(0, len(want), 4) if resolved[k][i:i + 4] != want[i:i + 4])
            fail('slot %s: resolved seed differs from the reference at float %d' % (k, bad // 4))
    for k in incomplete:
        if k in resolved:
            fail('incomplete slot %s resolved' % (k,))
    for s in socks:
        got, sent = acked.get(s, set()), sent_whole.get(s, set())
        extra = got - sent
        if extra:
            fail('ACKed frames that never arrived whole: %s' % sorted(extra)[:5])
        missing = sent - got
        if missing:
            fail('frames sent whole but never ACKed: %s' % sorted(missing)[:5])
    res_status = [st for st in statuses if st['outcome'] == 1]
    if len(res_status) != len(complete):
        fail('%d RESOLVED statuses for %d resolved slots' % (len(res_status), len(complete)))
    if any(not (st['facts'] & 0x04) or st['fp'] == 0 for st in res_status):
        fail('RESOLVED status without fully_resolved or fingerprint')
    exp = dict(resolved=len(complete), incomplete=len(incomplete), late=len(late), conflicts=len(conflicts),
               consumer_acks=stats['acks_sent'], dup_deliveries=stats['dup_deliveries'], **counts)
    with open(a.expect, 'w') as f:
        json.dump(exp, f)
    print('fleet: %d slots resolved bit-exact, %d incomplete, %d datagrams (%d dup, %d dropped), %d resends, '
          '%d late, %d conflicts, %d statuses' % (len(complete), len(incomplete), counts['datagrams'],
                                                  counts['dup_frags'], counts['dropped_frags'], counts['resends'],
                                                  len(late), len(conflicts), len(statuses)))


def check_phase(a):
    global REPORT
    exp = json.load(open(a.expect))
    r = json.load(open(a.report))
    REPORT = r
    c, x, o = r['counters'], r['x'], r['outcomes']

    def eq(name, got, want):
        if got != want:
            fail('%s: %d, expected %d' % (name, got, want))

    eq('seeds_resolved', c['seeds_resolved'], exp['resolved'])
    eq('seeds_sent', c['seeds_sent'], exp['resolved'])
    eq('slots_resolved', r['slots_resolved'], exp['resolved'])
    eq('slots_expired', r['slots_expired'], exp['incomplete'])
    eq('slots_poisoned', r['slots_poisoned'], exp['conflicts'])
    eq('outcome conflict', o['conflict'], exp['conflicts'])
    # a poisoned slot was resolved first (conflicts hit resolved slots), so it is counted there;
    # a slot whose only attempt was aborted (a lost fragment's reassembly timed out before
    # any line was whole) is freed and reopened by the resend
    eq('slots_opened', r['slots_opened'], r['slots_resolved'] + r['slots_expired'] + r.get('slots_abandoned', 0))
    if o['late'] < exp['late']:
        fail('outcome late %d < %d late duplicates sent' % (o['late'], exp['late']))
    eq('slots_in_use', r['slots_in_use'], 0)
    eq('drop_malformed', c['drop_malformed'], 0)
    eq('rx_pkts identity', c['rx_pkts'], x['arp'] + x['ndp_solicitations'] + x['ndp_advertisements'] + x['drop_ip_fragment'] + x['drop_multiseg'] + x['pkt_malformed'] +
       c['drop_not_udp'] + x['drop_bad_source'] + x['drop_not_ours'] + c['drop_bad_port'] + c['drop_not_allowed'] + x['raw_datagrams'] + c['frags'])
    eq('frags identity', c['frags'], x['frag_single'] + x['frag_taken'] + x['frag_duplicate'] + x['frag_discarded'] +
       x['frag_nobuf'] + x['frag_malformed'] + c['drop_reasm_overflow'])
    if x['frag_duplicate'] < 1 or c['reasm_timeout'] < exp['incomplete']:
        fail('duplicates %d / reassembly timeouts %d not seen' % (x['frag_duplicate'], c['reasm_timeout']))
    # every contribution that reached a slot whole is accepted once; extra whole copies are
    # duplicates, late or conflicts; nothing else
    eq('contrib_accepted', c['contrib_accepted'], o['accepted'] + o['resolved'])
    eq('accepted contributions', o['accepted'] + o['resolved'], 3 * exp['resolved'] + 2 * exp['incomplete'])
    for k in ('no_slot', 'shape_mismatch', 'unexpected_line', 'line_disabled', 'bad_range', 'malformed', 'expired'):
        eq('outcome ' + k, o[k], 0)
    if r['mbufs_out_started'] == 0:
        eq('mbufs returned', r['mbuf_pool_avail'], r['mbuf_pool_size'])
    else:
        # af_xdp posts mbufs to its UMEM fill ring at start and DPDK 22.11 does not give
        # them back at close: everything but that ring (and one burst in flight) came back
        if r['mbufs_out_closed'] - r['mbufs_out_started'] > 32:
            fail('mbufs not returned: %d out after close, %d posted by the PMD at start' %
                 (r['mbufs_out_closed'], r['mbufs_out_started']))
    eq('frame buffers returned', r['xfer_pool_avail'], r['xfer_pool_size'])
    eq('drop_lane_full', c['drop_lane_full'], 0)
    eq('drop_tx_full', c['drop_tx_full'], 0)
    # reliable delivery: every seed sent is ACKed, given up, or still pending at exit;
    # the consumer ACKed every one (some twice: those repeats match nothing)
    eq('delivery ledger', c['seeds_sent'], c['delivery_acked'] + c['delivery_given_up'] + r['delivery_pending'])
    eq('delivery given-up reasons', c['delivery_given_up'],
       x['delivery_giveup_resends'] + x['delivery_giveup_reclaimed'] + x['delivery_giveup_full'] +
       x['delivery_superseded'])
    eq('deliveries given up after every resend', x['delivery_giveup_resends'], 0)
    if c['delivery_acked'] + r['delivery_pending'] + x['delivery_giveup_reclaimed'] < exp['resolved']:
        fail('delivery_acked %d: fewer than the %d seeds the consumer ACKed' % (c['delivery_acked'], exp['resolved']))
    if exp['consumer_acks'] > exp['resolved'] and c['delivery_ack_unmatched'] < 1:
        fail('repeated consumer ACKs were not counted as unmatched')
    print('report: rx %d frags %d accepted %d resolved %d expired %d duplicate %d late %d conflict %d stale %d '
          'acks %d status %d handoff %d hugepages %s' % (c['rx_pkts'], c['frags'], c['contrib_accepted'],
                                                       c['seeds_resolved'], r['slots_expired'], o['duplicate'],
                                                       o['late'], o['conflict'], o['stale'], c['acks_sent'],
                                                       c['status_sent'], x['handoff_out'], r['hugepages']))


def main():
    p = udp_peer_parser(1536, src='--src-ip', dst='--dp-ip', src_default='10.98.0.2', dst_default='10.98.0.1')
    p.add_argument('phase', choices=['send', 'check'])
    p.add_argument('--dp-ip6', default='fd98::1')
    p.add_argument('--src-ip6', default='')
    p.add_argument('--layers', type=int, default=28)
    p.add_argument('--slots', type=int, default=120)
    p.add_argument('--workers', type=int, default=4)
    p.add_argument('--window', type=int, default=48)
    p.add_argument('--drop', type=float, default=0.03)
    p.add_argument('--dup', type=float, default=0.05)
    p.add_argument('--late', type=int, default=10)
    p.add_argument('--conflicts', type=int, default=3)
    p.add_argument('--seed', type=int, default=7)
    p.add_argument('--expect', required=True)
    p.add_argument('--report')
    a = p.parse_args()
    send_phase(a) if a.phase == 'send' else check_phase(a)


if __name__ == '__main__':
    main()
