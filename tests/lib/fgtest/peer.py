"""fgtest.peer - the command line the UDP peer scripts share: they run
inside a test's network namespace, send aeon-flow datagrams from a source
address to the dataplane and read its ACKs, statuses and resolved seeds.
Callers: tests/dataplane/reasm_flood.py, points_peer.py,
tests/faults/test_reasm_exhaust.py; main thread."""
import argparse


def udp_peer_parser(hidden, src="--src", flood_src=False):
    """An ArgumentParser with the options of a UDP peer: SRC (the option
    naming the source address), --flood-src when flood_src (a second
    source, the attacker's), --dst (the dataplane's address), --port
    (4242), --consumer-port (7000, where resolved seeds arrive), --mtu
    (1472, UDP payload per fragment), --hidden (hidden). The caller adds
    its own options."""
    ap = argparse.ArgumentParser()
    ap.add_argument(src, required=True)
    if flood_src:
        ap.add_argument('--flood-src', required=True)
    ap.add_argument('--dst', required=True)
    ap.add_argument('--port', type=int, default=4242)
    ap.add_argument('--consumer-port', type=int, default=7000)
    ap.add_argument('--mtu', type=int, default=1472)
    ap.add_argument('--hidden', type=int, default=hidden)
    return ap
