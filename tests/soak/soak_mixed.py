"""soak_mixed.py - the mixed soak: one fanogate WITH its
DPDK dataplane (af_packet on a veth pair into a network namespace) under a
bounded mixed load for SOAK_SECONDS (default 60), then the ledger is closed
per ingress from the daemon's own counters (/metrics, fanoctl stats --json,
the dataplane's rte_telemetry socket) against what the clients counted.

    [namespace fgsk-n<pid>]                                [root namespace]
    fanofleet (udp) -> fanorelay #1 (loss, dup, reorder) -veth-> dataplane
    fanofleet consumer <- fanorelay #2 (dup, reorder) <--veth--  (af_packet)
    malformed datagrams (bad fragments, bad frames) ------veth->    |
                                                                fanogate
    fanofleet wss/https, HTTPS injector, TLS churn -- 127.0.0.1 --> (TLS)

The load (all at once, bounded in time and count):
- UDP: back-to-back short fanofleet runs in the namespace (fragmented
  contributions, 2 fragments each, the fleet's own resends) through
  fanorelay #1 with SOAK_UDP_LOSS (default 0.05) loss plus 2 % duplicates
  and 5 % reordering in both directions (contributions up, ACKs and status
  frames down); resolved seeds come back through fanorelay #2 (duplicates
  and reordering, no loss: nothing resends a lost UDP delivery);
- UDP malformed input from the namespace: frag_total 0, frag_index past
  frag_total, frag_total changing inside a group, datagrams shorter than a
  fragment header, whole frames of an unknown stream or with a wrong body,
  groups left incomplete (the reassembly timeout drops them);
- TLS (tests/soak/soak_ledger.py's load): fanofleet runs over wss and
  HTTPS (one with --corrupt-at), the HTTPS injector (incomplete slots,
  duplicates, late contributions, malformed frames, bodies that are no
  frame), connection churn (healthz, TCP close, garbage, half a
  ClientHello, handshake then close, silent connections);
- after the load, 3 conflicts over HTTPS (each poisons a slot and moves the
  model epoch, which flushes the open slots in the dataplane's shards).

Checks (exact unless a bound is named):
- per ingress: seed frames decided = accepted + resolved + rejected by
  outcome (+ malformed by reason); UDP: contributions accepted = those the
  fleet sent less the ones it gave up on; TLS: soak_ledger's ledger
  (outcomes = the clients' acks, malformed = sent, connections accepted =
  closed = made, handshake timeouts = silent connections);
- slots: contributions accepted (all ingresses) = 3 x resolved + those in
  slots that expired, were flushed or poisoned; expired + flushed +
  poisoned slots = the slots the clients left unresolved; nothing open;
- fleet: every seed it got is bit-exact vs its reference sum, none wrong,
  none missing unless it gave a frame up; daemon resolved = fleets + injector;
- dataplane: malformed by reason = the bad datagrams sent; the dataplane's
  mbuf and frame-buffer pools in use at the end = at the start (telemetry
  /fanogate/pools);
- relays: no ACK for a frame that never arrived whole (--check-acks);
- VmRSS peak after the 25 % mark <= (1 + SOAK_RSS_GROWTH) x VmRSS there;
- SIGTERM: exit 0, no sanitizer report (under ASan: leak check at exit).

Environment: FANOGATE, FANOCTL, FANOFLEET, FANORELAY (meson passes them),
SOAK_SECONDS, SOAK_UDP_LOSS, SOAK_RSS_GROWTH, SOAK_RESULTS (append the
figures as one JSON line), SOAK_KEEP=1 (keep the temp dir),
SOAK_STOP_STACKS=1 (print the daemon's thread stacks 1.5 s into its stop),
SOAK_SECCOMP=on|log|off (the daemon's [daemon] seccomp; default: its own).
Exit 77 with a reason without root, network namespaces, veth, a daemon
built with the dataplane, or a usable af_packet port.
Run with /usr/bin/python3."""
import atexit
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import soak_ledger as sl  # noqa: E402  (its load threads and scrapers)
from fgtest import telemetry  # noqa: E402  (soak_ledger put tests/lib on the path)
h = sl.h

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
LAYERS, HIDDEN = 16, 512        # a contribution is a 2058-byte frame: 2 UDP fragments
DEADLINE_MS = 3000              # longer than the fleet's six attempts (RTO 200 ms)
CAPACITY = 16384                # a window of 1024 tokens (about 30 s of the load in the normal build)
sl.LAYERS, sl.HIDDEN, sl.DEADLINE_MS = LAYERS, HIDDEN, DEADLINE_MS
sl.FLEET_SHAPES = [("wss=1", 1, 1, 4), ("https=1", 1, 2, 3), ("wss=1,https=1", 2, 2, 5), ("wss=2,https=1", 1, 3, 4)]

ID = os.getpid()
NS = "fgsk-n%d" % ID
VA, VB = "fgsk%da" % ID, "fgsk%db" % ID   # dataplane side (root ns), fleet side (in NS)
NET = "10.94.%d." % (ID % 250)
DP_IP, NS_IP = NET + "1", NET + "2"
_procs = []   # relays (the daemon is daemon_harness's)


def sh(*cmd, check=True):
    try:
        r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:   # ethtool is optional
        if check:
            raise
        return subprocess.CompletedProcess(cmd, 127, "")
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stdout.strip()))
    return r


def cleanup():
    for p in _procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    sh("ip", "netns", "del", NS, check=False)
    sh("ip", "link", "del", VA, check=False)


def netns_setup():
    if os.geteuid() != 0:
        sl.skip("needs root (network namespace, veth, AF_PACKET)")
    if subprocess.run(["sh", "-c", "command -v ip"], stdout=subprocess.DEVNULL).returncode != 0:
        sl.skip("iproute2 missing")
    atexit.register(cleanup)
    if sh("ip", "netns", "add", NS, check=False).returncode != 0:
        sl.skip("cannot create a network namespace")
    if sh("ip", "link", "add", VA, "type", "veth", "peer", "name", VB, check=False).returncode != 0:
        sl.skip("cannot create a veth pair")
    sh("ip", "link", "set", VB, "netns", NS)
    sh("ip", "link", "set", VA, "up")
    sh("sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % VA, check=False)
    # af_packet sees what the kernel would coalesce or leave unsegmented
    sh("ethtool", "-K", VA, "gro", "off", "gso", "off", "tso", "off", check=False)
    sh("ip", "netns", "exec", NS, "ethtool", "-K", VB, "tx", "off", "gro", "off", "gso", "off", "tso", "off",
       check=False)
    sh("ip", "-n", NS, "link", "set", "lo", "up")
    sh("ip", "-n", NS, "addr", "add", NS_IP + "/24", "dev", VB)
    sh("ip", "-n", NS, "link", "set", VB, "up")


def in_ns(*cmd):
    return ["ip", "netns", "exec", NS, *cmd]


# ---- UDP: fanofleet through fanorelay #1, from the namespace ----------------

UDP_RE = re.compile(r"udp sender: frames (\d+) fragments (\d+) resends (\d+) gave-up (\d+) acks (\d+) "
                    r"acked-frames (\d+)")


class UdpLedger:
    def __init__(self):
        self.runs = []          # fanofleet JSON + its sender line
        self.bad_sent = {}      # malformed datagram kind -> count
        self.errors = []


def udp_fleet_thread(fleet_bin, tmp, led, uled, stop):
    k = 0
    while not stop.is_set():
        tokens = 4 + k % 5
        out = "%s/udp-%d.json" % (tmp, k)
        cmd = in_ns(fleet_bin, "--udp", "127.0.0.1:14000", "--consumer", "127.0.0.1:17001", "--mix", "udp=1",
                    "--layers", str(LAYERS), "--hidden", str(HIDDEN), "--tokens", str(tokens), "--window", "4",
                    "--seed", str(5000 + k), "--token-base", str(led.tokens(tokens)), "--canonical", "digest",
                    "--canonical-via", "udp", "--slot-timeout-ms", str(2 * DEADLINE_MS), "--max-missing",
                    "1000000", "--duration", "60", "--quiet", "--json", out)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            with open(out) as f:
                j = json.load(f)
        except (OSError, ValueError):
            uled.errors.append("udp fanofleet run %d wrote no JSON (status %d): %s" % (k, r.returncode,
                                                                                      r.stdout[-600:]))
            return
        m = UDP_RE.search(r.stdout)
        if not m:
            uled.errors.append("udp fanofleet run %d: no sender line: %s" % (k, r.stdout[-600:]))
            return
        j["_sender"] = dict(zip(("frames", "fragments", "resends", "gave_up", "acks", "acked"),
                                (int(x) for x in m.groups())))
        j["_rc"] = r.returncode
        with open(out, "w") as f:   # kept for a post-mortem (SOAK_KEEP)
            json.dump(j, f)
        uled.runs.append(j)
        if r.returncode not in (0, 2):   # 2: missing seeds, judged below
            uled.errors.append("udp fanofleet run %d exited %d: %s" % (k, r.returncode, r.stdout[-600:]))
        k += 1


BAD_KINDS = ("frag_total_zero", "frag_index_past_total", "frag_total_changed", "short_datagram",
             "unknown_stream", "bad_body", "incomplete_group")


def bad_udp_script(rounds, seconds):
    """A Python program run in the namespace: `rounds` rounds of every
    malformed kind, spread over `seconds`, from one socket; prints the
    counts as JSON."""
    return r"""
import json, socket, struct, sys, time
sys.path.insert(0, %r)
from fgtest import flow
from fgtest.flow import hdr
rounds, seconds, dst = %d, %f, ("%s", 4242)
hidden, layers = %d, %d
def seed(layer, tok, line, nrows):
    return flow.seed(layer, tok, line, bytes(4 * nrows))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("%s", 0))
sent = {}
fid = 40000
def send(kind, d):
    s.sendto(d, dst)
    sent[kind] = sent.get(kind, 0) + 1
for r in range(rounds):
    tok = 3000000000 + r
    fid = (fid + 8) & 0xFFFF
    # layer 0: no client uses it, and with capacity a multiple of the
    # layers its slot indices never meet theirs (index = token * layers + layer)
    fr = seed(0, tok, 1, hidden)
    c = 1468
    send("frag_total_zero", struct.pack(">HBB", fid, 0, 0) + fr[:c])
    send("frag_index_past_total", struct.pack(">HBB", fid + 1, 2, 2) + fr[:c])
    s.sendto(struct.pack(">HBB", fid + 2, 0, 2) + fr[:c], dst)
    send("frag_total_changed", struct.pack(">HBB", fid + 2, 1, 3) + (fr * 2)[c:2 * c])
    send("short_datagram", b"\x01\x02\x03")
    send("unknown_stream", struct.pack(">HBB", fid + 3, 0, 1) + hdr(0x1234, tok, 0, 8) + b"\x00" * 8)
    send("bad_body", struct.pack(">HBB", fid + 4, 0, 1) + seed(0, tok, 1, 3))
    send("incomplete_group", struct.pack(">HBB", fid + 5, 0, 2) + fr[:c])
    time.sleep(seconds / rounds)  # pacing: the rounds spread over the run
print(json.dumps(sent))
""" % (os.path.join(ROOT, "tests", "lib"), rounds, seconds, DP_IP, HIDDEN, LAYERS, NS_IP)


def bad_udp_thread(uled, rounds, seconds):
    r = subprocess.run(in_ns("/usr/bin/python3", "-c", bad_udp_script(rounds, seconds)), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=seconds + 60)
    try:
        uled.bad_sent = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        uled.errors.append("malformed-datagram sender: %s" % r.stdout[-600:])


def start_relay(relay_bin, tmp, name, listen, server, bind, faults, seed, seconds):
    # every fanofleet run brings new stations (source ports): one upstream
    # socket each for the relay's whole life
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 65535 + 256 if hard == resource.RLIM_INFINITY else hard
    clients = max(64, min(65535, 256 + 16 * int(seconds), hard - 256))
    args = [relay_bin, "--listen", listen, "--server", server] + (["--bind", bind] if bind else []) + [
        "--seed", str(seed), *faults.split(), "--check-acks", "--duration", str(int(seconds)), "--quiet",
        "--max-clients", str(clients), "--stats", "%s/%s.json" % (tmp, name),
        "--ready-file", "%s/%s.ready" % (tmp, name)]

    def fds():
        resource.setrlimit(resource.RLIMIT_NOFILE, (clients + 256, hard))
    p = subprocess.Popen(in_ns(*args), stdout=open("%s/%s.log" % (tmp, name), "w"), stderr=subprocess.STDOUT,
                         preexec_fn=fds)
    _procs.append(p)
    ready = "%s/%s.ready" % (tmp, name)
    if sl.wait.until(lambda: os.path.exists(ready) or p.poll() is not None, 10, 0.1) and os.path.exists(ready):
        return p
    h.fail("fanorelay %s did not start: %s" % (name, open("%s/%s.log" % (tmp, name)).read()))


def stop_relay(p):
    p.terminate()
    try:
        return p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def arena_kib(pid):
    """Resident KiB of the DPDK memory arena (--no-huge: the memfd the EAL
    maps; hugepages are not counted in RSS at all)."""
    kib, name = 0, ""
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for ln in f:
                if ln[0] in "0123456789abcdef" and "-" in ln.split(" ", 1)[0]:
                    name = ln.rstrip("\n")
                elif ln.startswith("Rss:") and ("nohuge" in name or "rtemap" in name):
                    kib += int(ln.split()[1])
    except OSError:
        pass
    return kib


# the dataplane counters /metrics and telemetry must agree on
DP_KEYS = ("contrib_accepted", "seeds_resolved", "slots_expired", "frames", "canonical", "reasm_timeout",
           "rx_pkts", "status_sent", "seeds_sent", "slots_abandoned")


def dp_differ(m, dpc):
    """The DP_KEYS on which /metrics m and telemetry counters dpc differ:
    {key: (metrics, telemetry)}."""
    out = {}
    for k in DP_KEYS:
        a, b = metric_sum(m, "fanogate_dp_%s_total" % k), int(dpc[k])
        if a != b:
            out[k] = (a, b)
    return out


def metric_sum(m, prefix, **labels):
    """Sum of the samples of a family, optionally those whose labels match."""
    tot = 0
    for k, v in m.items():
        if k == prefix or k.startswith(prefix + "{"):
            if all('%s="%s"' % (a, b) in k for a, b in labels.items()):
                tot += int(v)
    return tot


def by_label(m, prefix, label):
    out = {}
    for k, v in m.items():
        if k.startswith(prefix + "{"):
            mm = re.search(r'%s="([^"]*)"' % label, k)
            if mm and v:
                out[mm.group(1)] = out.get(mm.group(1), 0) + int(v)
    return out


def main():
    fanogate = sl.tool("FANOGATE")
    fanoctl = sl.tool("FANOCTL")
    fleet_bin = sl.tool("FANOFLEET")
    relay_bin = sl.tool("FANORELAY")
    if b"--dp-profile" not in subprocess.run([fanogate, "--help"], capture_output=True).stdout + \
            subprocess.run([fanogate, "--help"], capture_output=True).stderr:
        sl.skip("fanogate has no dataplane (--dp-profile)")
    seconds = float(os.environ.get("SOAK_SECONDS", "60"))
    loss = float(os.environ.get("SOAK_UDP_LOSS", "0.05"))
    growth = float(os.environ.get("SOAK_RSS_GROWTH", "0.20"))
    netns_setup()
    os.environ["ASAN_OPTIONS"] = "detect_leaks=1:exitcode=23:halt_on_error=1:quarantine_size_mb=8"
    os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    os.environ.update(FG_IFACE=VA, FG_DP_IP4=DP_IP, FG_DP_IP6="", FG_IDLE_SLEEP_US="50", FG_HUGEPAGES="off")
    extra = """[rules]
default = 1,3,5
[udp]
port = 4242
mtu = 1472
ack_interval_ms = 20
reasm_timeout_ms = 250
allow = %s0/24
[shadow]
canonical_sources = %s0/24
[consumers]
default = %s:17000
[dataplane]
lcores = 1
""" % (NET, NET, NS_IP)
    if os.environ.get("SOAK_SECCOMP"):   # on (the default), log, off: see the report on LSan and seccomp
        extra += "[daemon]\nseccomp = %s\n" % os.environ["SOAK_SECCOMP"]
    led, uled = sl.Ledger(), UdpLedger()
    t0 = time.time()
    d = h.Daemon(layers=LAYERS, hidden=HIDDEN, deadline_ms=DEADLINE_MS, max_conns=256, handshake_ms=4000,
                 idle_ms=20000, capacity=CAPACITY, extra=extra, expect_start=False,
                 dp_profile=os.path.join(ROOT, "drivers-config", "af_packet.ini"))
    with d:
        if d.proc.poll() is not None:
            log = d.log()
            d.expect_start = False
            print(log[-3000:])
            if re.search(r"EAL|af_packet|cannot|No such device|permission", log, re.I):
                sl.skip("fanogate cannot run its af_packet port here (log above)")
            h.fail("fanogate did not start")
        d.expect_start = True
        pid = d.proc.pid
        tmp = d.dir
        tel = telemetry.socket_path(pid)
        pools0 = telemetry.mempools(tel)
        print("mempools at start (size, in use): %s" % pools0, flush=True)
        rl = seconds + 120
        r1 = start_relay(relay_bin, tmp, "r1", "127.0.0.1:14000", DP_IP + ":4242", NS_IP,
                         "--loss %g --dup 0.02 --reorder 0.05 --reorder-gap 3 --jitter-ms 1" % loss, ID, rl)
        r2 = start_relay(relay_bin, tmp, "r2", NS_IP + ":17000", "127.0.0.1:17001", None,
                         "--dup 0.02 --reorder 0.05 --reorder-gap 2", ID + 1, rl)
        stop = threading.Event()
        threads = [threading.Thread(target=udp_fleet_thread, args=(fleet_bin, tmp, led, uled, stop)),
                   threading.Thread(target=bad_udp_thread, args=(uled, max(5, int(seconds / 2)), seconds * 0.8)),
                   threading.Thread(target=sl.fleet_thread, args=(d, led, stop, fleet_bin, 0, 2)),
                   threading.Thread(target=sl.inject_thread, args=(d, led, stop)),
                   threading.Thread(target=sl.churn_thread, args=(d, led, stop, 100000))]
        # samples: (s, VmRSS KiB, next token, DPDK arena KiB every 10th sample and the last, else -1)
        samples, load_s = sl.run_load(d, threads, stop, seconds, lambda t, n: (
            t, sl.rss_kib(pid), led.next_token, arena_kib(pid) if n is None or n % 10 == 0 else -1), 120)
        # the last deliveries and their ACKs through the relays: every seed
        # sent was ACKed or given up (the delivery ledger closed), 15 s at most
        sl.wait.until(lambda: telemetry.ledger_open(telemetry.counters(tel)) == 0, 15, 0.2)
        sl.conflict_phase(d, led)

        def slots_now():
            return json.loads(subprocess.run([fanoctl, "--socket", f"{d.dir}/fanoctl.sock", "slots", "--json"],
                                             capture_output=True, text=True, timeout=20).stdout or "{}")

        def settled():
            """what the ledger counts is final: every slot ended (incomplete
            ones expire at their deadline), every reassembly group timed out
            (its mbufs and frame buffers back), every connection closed"""
            pl = telemetry.query(tel, "/fanogate/pools") or {}
            return (sl.scrape(d).get("fanogate_tls_connections") == 0
                    and all(s.get("in_use", 0) == 0 for s in slots_now().get("shards", []))
                    and pl.get("xfer_in_use") == 0 and pl.get("mbuf_in_use") == pl.get("mbuf_in_use_at_start"))
        # bounded by two deadlines and 20 s; short of that, the checks say what is open
        sl.wait.until(settled, DEADLINE_MS / 1000 * 2 + 21, 0.5)

        def agreed():
            """/metrics and telemetry read as one: a packet the kernel still
            sends the port (neighbour discovery) may come between two reads"""
            mm, cc = sl.scrape(d), telemetry.counters(tel)
            return (mm, cc) if not dp_differ(mm, cc) else None
        m, dpc = sl.wait.until(agreed, 10, 0.5) or (sl.scrape(d), telemetry.counters(tel))
        st = sl.stats(d, fanoctl)
        dpc["pools"] = telemetry.query(tel, "/fanogate/pools") or {}
        pools1 = telemetry.mempools(tel)
        slots = slots_now()
        rss_end = sl.rss_kib(pid)
        r1rc, r2rc = stop_relay(r1), stop_relay(r2)
        with open(os.path.join(tmp, "final.json"), "w") as f:   # everything the ledger reads, for a post-mortem
            json.dump(dict(metrics=m, stats=st, dp=dpc, slots=slots, pools0=pools0, pools1=pools1,
                           clients={k: v for k, v in vars(led).items() if k not in ("lock", "fleet")},
                           udp_bad_sent=uled.bad_sent, udp_errors=uled.errors), f, indent=1, default=str)
        print("ok - load ran %.1f s: %d udp fanofleet runs, %d tls fanofleet runs, %d client connections"
              % (load_s, len(uled.runs), len(led.fleet), led.conns + led.fleet_conns), flush=True)
        print("dp counters: %s" % {k: v for k, v in dpc.items() if v}, flush=True)
        print("fanoctl slots: %s" % slots, flush=True)
        # a churn connection whose handshake the daemon closed (its handshake
        # timeout, on a loaded box) is counted against the timeouts below
        hs_closed = [e for e in led.errors if e.startswith("churn ") and ("SSLEOFError" in e or "ConnectionReset" in e)]
        others = [e for e in led.errors if e not in hs_closed] + uled.errors
        h.check(not others, "no client-side errors (%s); %d churn handshakes closed by the daemon"
                % (others[:5], len(hs_closed)))
        led.hs_closed = len(hs_closed)
        failed = None
        try:
            figures = ledger(d, led, uled, m, st, dpc, slots, pools0, pools1, tmp, r1rc, r2rc, loss)
            figures.update(memory(d, samples, load_s, growth))
        except SystemExit as e:   # a failed check: still stop the daemon below, so its leak check runs
            failed, figures = e, {}
        figures.update(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)), seconds=round(load_s, 1),
                       udp_loss=loss, rss_after_kib=rss_end, daemon=fanogate)
        if os.environ.get("SOAK_KEEP"):
            os.environ["D1_KEEP"] = "1"
            print("kept %s" % tmp)
        # SIGTERM here (the harness waits 5 s only): the stop is timed, and a
        # daemon still alive after 30 s has its threads' stacks shown
        t_term = time.time()
        d.proc.send_signal(15)
        if os.environ.get("SOAK_STOP_STACKS"):   # diagnosis: the threads' stacks 1.5 s into the stop
            time.sleep(1.5)  # not a wait: the moment of the stop the stacks are taken at (a diagnosis)
            print(subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120).stdout)
        try:
            d.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if shutil.which("gdb"):
                r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
                print(r.stdout[-6000:])
            h.fail("the daemon did not exit within 30 s of SIGTERM")
        figures["stop_s"] = round(time.time() - t_term, 2)
        print("daemon: exit %d %.2f s after SIGTERM" % (d.proc.returncode, figures["stop_s"]), flush=True)
        if failed is not None:
            raise failed
        h.check(d.proc.returncode == 0, "SIGTERM: exit %d after %.2f s" % (d.proc.returncode, figures["stop_s"]))
    print("ok - the daemon stopped cleanly on SIGTERM (exit 0, no sanitizer report)", flush=True)
    figures["wall_s"] = round(time.time() - t0, 1)
    print("figures: " + json.dumps(figures), flush=True)
    out = os.environ.get("SOAK_RESULTS")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(figures) + "\n")


def memory(d, samples, load_s, growth):
    """RSS bound. The DPDK arena (the EAL's -m reservation, allocated once at
    dp_init) is touched page by page as slots and buffers are first used:
    bounded by its size. Everything else (the control plane's heap, TLS,
    the audit, ASan's own) must stay within (1 + growth) x its size at the
    end of the warm-up: 25 % of the load and the dense token sequence once
    through the slot table. A run too short to leave a quarter of its
    samples after that has no RSS bound (a note says so)."""
    mm = re.search(r" -m (\d+) ", d.log())
    arena_max = int(mm.group(1)) * 1024 if mm else 0
    wrap = CAPACITY // LAYERS + 64
    split = [(t, r - a, a, tok) for t, r, tok, a in samples if a >= 0]
    arena_peak = max(a for _, _, a, _ in split)
    h.check(arena_max and arena_peak <= arena_max, "DPDK arena resident %d KiB <= its reservation -m %d KiB"
            % (arena_peak, arena_max))
    warm = [(t, o) for t, o, _, tok in split if t >= 0.25 * load_s and tok > wrap]
    out = dict(rss_start_kib=samples[0][1], rss_peak_kib=max(r for _, r, _, _ in samples),
               rss_end_load_kib=samples[-1][1], arena_start_kib=split[0][2], arena_end_kib=split[-1][2],
               arena_max_kib=arena_max, other_start_kib=split[0][1],
               rss_series=[(round(t), o, a) for t, o, a, _ in split[::max(1, len(split) // 20)]])
    if len(warm) >= 0.25 * len(split) and len(warm) >= 2:
        t25, o25 = warm[0]
        peak = max(o for _, o in warm)
        h.check(peak <= o25 * (1 + growth), "RSS outside the DPDK arena after warm-up: %d KiB at %.0f s, peak %d, "
                "%d at the end (bound +%d%%); arena %d -> %d KiB of %d" % (o25, t25, peak, split[-1][1], growth * 100,
                                                                            split[0][2], split[-1][2], arena_max))
        out.update(other_warm_kib=o25, warm_s=round(t25, 1), other_peak_kib=peak, other_end_kib=split[-1][1])
    else:
        print("note: no RSS bound: the load ended too soon after the slot table's first pass (token %d)" % wrap,
              flush=True)
    return out


def ledger(d, led, uled, m, st, dpc, slots, pools0, pools1, tmp, r1rc, r2rc, loss):
    """Close the ledger per ingress; returns the figures."""
    ck = h.check
    oc_dp = {k[len("outcome_"):]: int(v) for k, v in dpc.items() if k.startswith("outcome_")}
    oc_tls = {k[len('fanogate_tls_outcomes_total{outcome="'):-2]: int(v) for k, v in m.items()
              if k.startswith("fanogate_tls_outcomes_total{")}
    ck(all(st["engine_tls"]["outcomes"].get(k, 0) == v for k, v in oc_tls.items()),
       "fanoctl stats outcomes = /metrics outcomes (TLS)")
    dp_m = {k: metric_sum(m, "fanogate_dp_%s_total" % k) for k in DP_KEYS}
    ck(not dp_differ(m, dpc), "/metrics fanogate_dp_* = telemetry /fanogate/counters %s; differing (metrics, "
       "telemetry): %s" % ({k: dp_m[k] for k in ("contrib_accepted", "seeds_resolved", "slots_expired")},
                           dp_differ(m, dpc)))
    # an outcome may come back for a request whose connection has gone: a
    # fanofleet run closing with its last canonical report in flight
    unmatched = st["engine_tls"]["outcomes_unmatched"]
    ck(not dpc.get("drop_lane_full") and not st["engine_tls"]["lane_full"] and not st["engine_tls"]["pool_empty"]
       and unmatched <= len(led.fleet) and not dpc.get("drop_no_slot"),
       "no lane full, pool empty or no_slot; %d outcomes for requests of closed connections" % unmatched)

    # ---- the clients' side ----
    bad = uled.bad_sent
    udp = uled.runs
    u = {k: sum(j.get(k, 0) for j in udp) for k in ("slots", "resolved", "bit_exact", "wrong", "missing")}
    u.update({k: sum(j["_sender"][k] for j in udp) for k in ("frames", "fragments", "resends", "gave_up")})
    u["sent"] = sum(j["contributions"]["udp"] for j in udp)
    u_got = {}
    for j in udp:
        for k, v in j.get("outcomes", {}).items():
            u_got[k] = u_got.get(k, 0) + v
    tf = led.fleet
    t = {k: sum(j.get(k, 0) for j in tf) for k in ("slots", "resolved", "bit_exact", "wrong", "missing",
                                                   "divergence_seen")}
    t["sent"] = sum(j["contributions"].get("wss", 0) + j["contributions"].get("https", 0) for j in tf)
    r1 = json.load(open(os.path.join(tmp, "r1.json")))
    r2 = json.load(open(os.path.join(tmp, "r2.json")))

    # ---- fleet: bit-exact, nothing lost ----
    ck(len(udp) > 0 and u["wrong"] == 0 and u["bit_exact"] == u["resolved"],
       "UDP fanofleet (%d runs): %d seeds bit-exact of %d resolved, 0 wrong" % (len(udp), u["bit_exact"],
                                                                             u["resolved"]))
    ck(all(j["missing"] <= j["_sender"]["gave_up"] for j in udp),
       "UDP: no seed missing unless the fleet gave a frame up (missing %d, gave up %d, resends %d)"
       % (u["missing"], u["gave_up"], u["resends"]))
    ck(len(tf) > 0 and t["wrong"] == 0 and t["missing"] == 0 and t["bit_exact"] == t["resolved"]
       and t["divergence_seen"] == 1,
       "TLS fanofleet (%d runs): %d seeds bit-exact of %d resolved, 0 wrong, 0 missing, the corruption seen once"
       % (len(tf), t["bit_exact"], t["resolved"]))
    resolved = int(m["fanogate_seeds_resolved_total"])
    ck(resolved == dp_m["seeds_resolved"] == u["resolved"] + t["resolved"] + led.inj_resolved,
       "seeds resolved: daemon %d = dataplane %d = UDP fleet %d + TLS fleet %d + injector %d"
       % (resolved, dp_m["seeds_resolved"], u["resolved"], t["resolved"], led.inj_resolved))
    ck(dp_m["seeds_sent"] == resolved, "every resolved seed sent to the UDP consumer (%d)" % dp_m["seeds_sent"])

    # ---- contributions accepted, per ingress ----
    acc = dp_m["contrib_accepted"]
    ck(acc == oc_dp.get("accepted", 0) + oc_dp.get("resolved", 0),
       "contributions accepted %d = outcomes accepted + resolved (dataplane, every ingress)" % acc)
    tls_acc = t["sent"] + led.outcomes.get("accepted", 0) + led.outcomes.get("resolved", 0)
    udp_acc = acc - tls_acc
    ck(u["sent"] - u["gave_up"] <= udp_acc <= u["sent"] and (u["gave_up"] > 0 or udp_acc == u["sent"]),
       "UDP contributions accepted %d = sent by the fleet %d (gave up %d)" % (udp_acc, u["sent"], u["gave_up"]))
    tls_canon_as_acc = oc_tls.get("accepted", 0) + oc_tls.get("resolved", 0) - tls_acc
    ck(0 <= tls_canon_as_acc <= t["slots"],
       "TLS contributions accepted %d = fleet %d + injector %d (the daemon's TLS accepted+resolved outcomes %d"
       " also count %d canonical frames: gap 1)" % (tls_acc, t["sent"], tls_acc - t["sent"],
                                                    oc_tls.get("accepted", 0) + oc_tls.get("resolved", 0),
                                                    tls_canon_as_acc))
    # ---- slots: every accepted contribution ended in a resolved, expired, flushed or poisoned slot ----
    expired_cp = int(m["fanogate_slots_expired_total"])
    poisoned = int(m["fanogate_slots_poisoned_total"])
    if "fanogate_slots_flushed_total" in m:
        flushed = int(m["fanogate_slots_flushed_total"])
        ck(dp_m["slots_expired"] in (expired_cp, expired_cp + flushed),
           "dataplane expired %d = expired %d (+ flushed %d)" % (dp_m["slots_expired"], expired_cp, flushed))
    else:
        # the lcores count the slots a FLUSH (epoch change) dropped in slots_expired;
        # the control plane counts only the expiries it was told of
        flushed = dp_m["slots_expired"] - expired_cp
    udp_unres_in = acc - 3 * resolved - led.unresolved_in
    # the first fragment of a seed frame opens its slot (the dataplane places
    # fragments in the slot): each round of bad datagrams leaves one slot
    # opened by a group that never completes; when its reassembly times out
    # the slot is freed at once (abandoned) instead of
    # expiring. Abandoned slots also come from the fleet's own lost fragments
    # (freed, then reopened by the resend), so between max(0, incomplete -
    # abandoned) and all of the incomplete groups' slots may have expired.
    inc = bad.get("incomplete_group", 0)
    empty_lo, empty_hi = max(0, inc - dp_m["slots_abandoned"]), inc
    ended = expired_cp + flushed + poisoned - len(led.unresolved_slots)
    # ended = (incomplete groups' slots that expired, in [empty_lo, empty_hi])
    #       + (UDP slots the fleet never saw resolve, in [0, missing])
    empty = min(max(ended, empty_lo), empty_hi)
    udp_unres_slots = ended - empty  # < 0 when fewer ended than the groups alone explain
    # a slot the UDP fleet never saw resolve holds 0-2 of its contributions
    ck(udp_unres_in == 0 if u["missing"] == 0 else 0 <= udp_unres_in <= 2 * u["missing"],
       "contributions accepted %d = 3 x resolved %d + in the injector's unresolved slots %d + in UDP slots left"
       " incomplete %d (fleet missing %d)" % (acc, resolved, led.unresolved_in, udp_unres_in, u["missing"]))
    ck((udp_unres_slots == 0 if u["missing"] == 0 else 0 <= udp_unres_slots <= u["missing"])
       and flushed >= 0 and poisoned == 3,
       "expired %d + flushed %d + poisoned %d = the injector's unresolved slots %d + UDP missing %d + opened by"
       " an incomplete first fragment and expired %d (of %d; %d slots abandoned); 0 open"
       % (expired_cp, flushed, poisoned, len(led.unresolved_slots), u["missing"], empty, inc,
          dp_m["slots_abandoned"]))
    if "shards" in slots:
        ck(all(s.get("in_use", 0) == 0 for s in slots["shards"]), "fanoctl slots: 0 in use (%s)" % slots["shards"])

    # ---- rejected with a reason, per ingress ----
    client = dict(led.outcomes)
    for j in tf:
        for k, v in j.get("outcomes", {}).items():
            if k not in ("accepted", "resolved"):
                client[k] = client.get(k, 0) + v
    rej_tls = {k: v for k, v in oc_tls.items() if k not in ("accepted", "resolved") and v}
    client_rej = {k: v for k, v in client.items()
                  if k not in ("accepted", "resolved", "malformed", "undecodable") and v}
    # a request the dataplane has not answered within 2 s is answered no_slot to the client and its
    # outcome, when it comes, is dropped uncounted (fanogate_lane_outcomes_unmatched_total): gap 5
    lost = client_rej.pop("no_slot", 0)
    ck(rej_tls == client_rej and lost <= unmatched,
       "TLS rejected by outcome, daemon %s = clients' acks %s (+ %d answered no_slot after the 2 s lane timeout,"
       " %d outcomes came later)" % (rej_tls, client_rej, lost, unmatched))
    tls_bad_body = tls_unknown = led.malformed_sent // 2
    # the control plane counts no outcome for a TLS malformed seed in dataplane mode (gap 2)
    rej_udp = {k: v - oc_tls.get(k, 0) - (tls_bad_body if k == "malformed" else 0) for k, v in oc_dp.items()
               if k not in ("accepted", "resolved")}
    rej_udp = {k: v for k, v in rej_udp.items() if v}
    # (the outcomes of unmatched TLS requests land here, of any kind)
    odd = sum(v for k, v in rej_udp.items() if k not in ("duplicate", "late", "malformed", "stale") and
              not (k == "expired" and u["missing"]))
    ck(rej_udp.get("malformed", 0) == bad.get("bad_body", 0) and odd <= unmatched,
       "UDP rejected by outcome %s: malformed = bad bodies sent %d, the rest duplicates, late copies or"
       " fragments of an attempt a resend replaced (stale)"
       % (rej_udp, bad.get("bad_body", 0)))
    copies = sum(rej_udp.get(k, 0) for k in ("duplicate", "late", "expired", "stale"))
    r1_dup = r1.get("up", {}).get("dup", 0)
    ck(copies <= u["resends"] + r1_dup + unmatched,
       "UDP duplicate + late + stale %d <= the fleet's resends %d + relay duplicates %d (+ unmatched TLS %d)"
       % (copies, u["resends"], r1_dup, unmatched))
    # status frames (seeds and canonical frames) go back over UDP through relay #1's lossy down path
    got_st, r1_down_lost = sum(u_got.values()), r1.get("down", {}).get("lost", 0)
    ck(got_st <= dp_m["status_sent"] and u_got.get("resolved", 0) <= u["resolved"],
       "the UDP fleet got %d of the %d status frames the dataplane sent (%s; relay #1 lost %d datagrams down)"
       % (got_st, dp_m["status_sent"], u_got, r1_down_lost))
    # the TLS frames: outcomes (canonical ones included, gap 1) + malformed by reason (frames and
    # POST bodies that are no whole frame); before gap 2 was fixed: no reason counter in dataplane mode
    frames_tls = int(m["fanogate_tls_frames_total"])
    mal_tls = metric_sum(m, "fanogate_tls_malformed_total")
    # the TLS fleet's canonical digests (one per slot; counted as outcomes before gap 1 was fixed). A
    # run may close its connection with its last report in flight: at most one lost per run
    canon_sent = sum(j.get("_canonical", 0) for j in tf)
    canon_tls = frames_tls - sum(oc_tls.values()) - (mal_tls or led.malformed_sent)
    ck(0 <= canon_sent - canon_tls - tls_canon_as_acc <= len(tf),
       "TLS canonical reports the daemon counted %d (+ %d as outcomes) of %d the fleet sent (%d runs)"
       % (canon_tls, tls_canon_as_acc, canon_sent, len(tf)))
    if mal_tls:
        reasons = by_label(m, "fanogate_tls_malformed_total", "reason")
        ck(mal_tls == led.malformed_sent + led.undecodable_sent,
           "TLS frames %d = outcomes %d + canonical %d + malformed %d %s = frames sent %d + bodies that are no"
           " frame %d" % (frames_tls, sum(oc_tls.values()), canon_tls, mal_tls, reasons, led.malformed_sent,
                          led.undecodable_sent))
    else:
        print("note: TLS malformed frames have no reason counter in dataplane mode (gap 2): %d sent"
              % led.malformed_sent, flush=True)
    # ---- malformed input, by reason (the dataplane's counters cover both ingresses) ----
    want = {"frag_total_zero": bad.get("frag_total_zero", 0), "frag_index_range": bad.get("frag_index_past_total", 0),
            "frag_total_changed": bad.get("frag_total_changed", 0), "frag_short": bad.get("short_datagram", 0),
            "seed_body_rows": bad.get("bad_body", 0) + tls_bad_body}
    got = by_label(m, "fanogate_dp_malformed_total", "reason")
    ck(got == {k: v for k, v in want.items() if v} and all(want.values()),
       "dataplane malformed by reason %s = sent (UDP %s, TLS %d bad bodies)" % (got, bad, tls_bad_body))
    ck(int(dpc["drop_unknown_stream"]) == bad.get("unknown_stream", 0) + tls_unknown,
       "unknown stream %d = UDP %d + TLS %d sent" % (dpc["drop_unknown_stream"], bad.get("unknown_stream", 0),
                                                   tls_unknown))
    ck(dp_m["reasm_timeout"] >= bad.get("incomplete_group", 0) + bad.get("frag_total_changed", 0),
       "reassembly timeouts %d >= the groups left incomplete %d" % (dp_m["reasm_timeout"],
                                                                     bad.get("incomplete_group", 0) +
                                                                     bad.get("frag_total_changed", 0)))
    # ---- connections (TLS) ----
    acc_c, closed = int(m["fanogate_tls_accepted_total"]), int(m["fanogate_tls_closed_total"])
    live = int(m["fanogate_tls_connections"])
    made = led.conns + led.fleet_conns
    ck(live == 0 and acc_c == closed == made, "TLS connections accepted %d = closed %d = made %d (%s), open %d"
       % (acc_c, closed, made, led.conn_kinds, live))
    hto, silent = int(m["fanogate_tls_head_timeouts_total"]), led.conn_kinds.get("silent", 0)
    ck(silent > 0 and hto == silent + led.hs_closed, "handshake timeouts %d = silent connections %d + churn handshakes"
       " the daemon closed %d" % (hto, silent, led.hs_closed))
    # ---- relays: no ACK for a frame that never arrived whole; faults applied ----
    # (relay #2's sends to the consumer fail while no UDP fleet run has it bound:
    # every resolved seed, TLS ones too, goes to the [consumers] address)
    for name, r, rc in (("relay #1", r1, r1rc), ("relay #2", r2, r2rc)):
        a = r.get("acks", {})
        ck(rc == 0 and a.get("ack_unproven", 1) == 0 and a.get("ack_proven", 0) > 0 and r.get("clients_refused") == 0 and
           not any(r.get(x, {}).get("queue_full") for x in ("up", "down")) and
           (name == "relay #2" or not any(r.get(x, {}).get("send_failed") for x in ("up", "down"))),
           "%s: exit %d, %d ACKed frames proven, 0 unproven, no queue overflow (send failures %d)"
           % (name, rc, a.get("ack_proven", 0), sum(r.get(x, {}).get("send_failed", 0) for x in ("up", "down"))))
    ck(loss == 0 or (r1["up"].get("lost", 0) > 0 and r1["down"].get("lost", 0) > 0), "relay #1 lost %d datagrams up, %d down"
       % (r1["up"]["lost"], r1["down"]["lost"]))
    # ---- mbufs ----
    # telemetry /fanogate/pools: after the load and past reasm_timeout_ms every
    # mbuf but those the RX rings held at start is back, and every frame buffer
    # (mbuf_in_use leaves out the few TX mbufs each lcore takes ahead, which
    # it reports as mbuf_stashed: at most 16 per lcore)
    pl = dpc.get("pools") or {}
    ck(bool(pl) and pl.get("mbuf_in_use") == pl.get("mbuf_in_use_at_start") and pl.get("xfer_in_use") == 0 and
       pl.get("mbuf_stashed", 0) <= 16 * int(dpc.get("lcores", 1)),
       "dataplane pools returned: mbufs in use %s = at start %s (of %s; %s taken ahead for TX), frame buffers in "
       "use %s (of %s)" % (pl.get("mbuf_in_use"), pl.get("mbuf_in_use_at_start"), pl.get("mbuf_size"),
                           pl.get("mbuf_stashed"), pl.get("xfer_in_use"), pl.get("xfer_size")))
    pool = max(s for s, _ in pools1.values()) if pools1 else 0
    # a pool that lost even a small share of its buffers per packet would run dry
    # over more packets than it holds: allocations would fail, and traffic stop
    ck(not dpc.get("tx_nombuf") and not dpc.get("frag_nobuf"),
       "no mbuf or frame-buffer allocation failed (tx_nombuf 0, frag_nobuf 0) over %d packets received, "
       "%d sent (%.1f x the largest pool, %d)" % (dp_m["rx_pkts"], int(dpc["tx_pkts"]),
                                                  (dp_m["rx_pkts"] + int(dpc["tx_pkts"])) / max(pool, 1), pool))
    return dict(udp_runs=len(udp), udp_sent=u["sent"], udp_accepted=udp_acc, udp_resolved=u["resolved"],
                udp_missing=u["missing"], udp_frames=u["frames"], udp_fragments=u["fragments"],
                udp_resends=u["resends"], udp_gave_up=u["gave_up"], udp_rejected=rej_udp, udp_bad_sent=bad,
                tls_runs=len(tf), tls_fleet_sent=t["sent"], tls_accepted=tls_acc, tls_fleet_resolved=t["resolved"],
                tls_rejected=rej_tls, tls_malformed_sent=led.malformed_sent,
                tls_undecodable_sent=led.undecodable_sent, injector_resolved=led.inj_resolved,
                conns=acc_c, conn_kinds=led.conn_kinds, contributions_accepted=acc, resolved=resolved,
                expired=expired_cp, flushed=flushed, poisoned=poisoned, unresolved_in=led.unresolved_in,
                dp_malformed=got, reasm_timeouts=dp_m["reasm_timeout"], rx_pkts=dp_m["rx_pkts"],
                tx_pkts=int(dpc["tx_pkts"]), canonical=dp_m["canonical"], tls_canonical_as_accepted=tls_canon_as_acc,
                relay1=dict(up=r1.get("up"), down=r1.get("down"), acks=r1.get("acks")),
                relay2=dict(up=r2.get("up"), down=r2.get("down"), acks=r2.get("acks")))


if __name__ == "__main__":
    main()
