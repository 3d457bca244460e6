"""fgtest.peer - the command line the UDP peer scripts share: they run
inside a test's network namespace, send aeon-flow datagrams from a source
address to the dataplane and read its ACKs, statuses and resolved seeds.
Callers: tests/dataplane/reasm_flood.py, points_peer.py, veth_fleet.py,
tests/faults/test_reasm_exhaust.py; main thread."""
import argparse


def udp_peer_parser(hidden, src="--src", flood_src=False, dst="--dst", src_default=None, dst_default=None):
    """An ArgumentParser with the options of a UDP peer: SRC (the option
    naming the source address; required unless src_default), --flood-src
    when flood_src (a second source, the attacker's), DST (the dataplane's
    address; required unless dst_default), --port (4242), --consumer-port
    (7000, where resolved seeds arrive), --mtu (1472, UDP payload per
    fragment), --hidden (hidden). The caller adds its own options."""
    ap = argparse.ArgumentParser()
    ap.add_argument(src, required=src_default is None, default=src_default)
    if flood_src:
        ap.add_argument('--flood-src', required=True)
    ap.add_argument(dst, required=dst_default is None, default=dst_default)
    ap.add_argument('--port', type=int, default=4242)
    ap.add_argument('--consumer-port', type=int, default=7000)
    ap.add_argument('--mtu', type=int, default=1472)
    ap.add_argument('--hidden', type=int, default=hidden)
    return ap
