"""soak_ledger.py - the soak test: one fanogate
--no-dataplane under a bounded mixed load for SOAK_SECONDS (default 60),
then the ledger is closed from the daemon's own counters (fanoctl stats
--json and /metrics) against what the clients saw:

- fanofleet runs (wss, https, both; few tokens each, so connections churn),
  two threads in parallel, one run with --corrupt-at;
- an injector over HTTPS POST /residual-seed: slots left incomplete (they
  expire), duplicates, conflicts (the slot is poisoned), contributions to
  expired slots, malformed frames;
- a churn loop of short TLS connections: full handshake + GET /healthz,
  TCP connect and close, garbage instead of a ClientHello, half a
  ClientHello then close, handshake then close;
- the daemon's VmRSS sampled every 0.5 s (resource bound, not timing).

Checks: contributions accepted = 3 x resolved slots + contributions in
slots that expired or were poisoned (+ 0 still open); slots opened =
resolved + expired + poisoned + open (0); every rejected contribution is
counted under its outcome, malformed ones under a reason; fanofleet's
bit-exact seeds (+ the one injected divergence) + the injector's resolved
slots = the daemon's resolved seeds; connections accepted = closed + open
(0) = the connections the clients made; RSS growth between the 25 % and
100 % marks < SOAK_RSS_GROWTH (default 0.20). A sanitizer report in the
daemon's log or a non-zero exit after SIGTERM fails the test (the harness).

Environment: FANOGATE, FANOCTL, FANOFLEET (meson passes them),
SOAK_SECONDS, SOAK_RSS_GROWTH, SOAK_RESULTS (append a figures line).
Exit 77 with a reason when a tool is missing. Run with /usr/bin/python3."""
import json
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import harness as h  # noqa: E402
from fgtest import wait  # noqa: E402

SKIP = 77
# deadline: long enough that a fanofleet run's three HTTPS/wss contributions
# meet on a shared, loaded 2-core box (400 ms let one slot expire there)
LAYERS, HIDDEN, DEADLINE_MS = 28, 64, 1000
FLEET_LINES = (1, 3, 5)   # Pair X: x, attn, ffn


def skip(msg):
    print("SKIP: " + msg, flush=True)
    sys.exit(SKIP)


def tool(env):
    p = os.environ.get(env)
    if not p or not os.access(p, os.X_OK):
        skip("%s not set to an executable" % env)
    return p


class Ledger:
    """What the clients did, counted on the client side (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.conns = 0            # TCP connections opened to the TLS port
        self.conn_kinds = {}
        self.outcomes = {}        # injector: outcome name -> contributions
        self.unresolved_in = 0    # injector: contributions accepted into slots that never resolve
        self.unresolved_slots = []   # (layer, token) of every slot instance that never resolves
        self.inj_resolved = 0     # injector: slots it resolved
        self.malformed_sent = 0   # whole frames the codec refuses (a reason counter each)
        self.undecodable_sent = 0 # POST bodies that are no whole frame (truncated, short header)
        self.http_errors = 0      # injector answers with status >= 400
        self.fleet = []           # fanofleet JSON results
        self.fleet_conns = 0
        self.errors = []
        self.next_token = 1

    def tokens(self, n):
        """A block of n consecutive token_seq. One dense sequence for every
        client, as a real fleet decodes: the slot index is
        (token_seq * layers + layer) mod capacity, so keys far apart would
        collide on an open slot (no_slot) though the table is nearly empty."""
        with self.lock:
            base = self.next_token
            self.next_token += n
            return base

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def conn(self, kind):
        with self.lock:
            self.conns += 1
            self.conn_kinds[kind] = self.conn_kinds.get(kind, 0) + 1

    def outcome(self, name):
        with self.lock:
            self.outcomes[name] = self.outcomes.get(name, 0) + 1

    def error(self, msg):
        with self.lock:
            self.errors.append(msg)
        print("error: " + msg, flush=True)


# ---- fanofleet runs --------------------------------------------------------

FLEET_SHAPES = [  # mix, wss-conns, https-conns, tokens
    ("wss=1", 1, 1, 6),
    ("https=1", 1, 2, 4),
    ("wss=1,https=1", 2, 2, 8),
    ("wss=2,https=1", 1, 3, 5),
]


def fleet_thread(d, led, stop, fleet_bin, lane, corrupt_run):
    """Sequential short fanofleet runs, each on its own block of tokens."""
    k = 0
    while not stop.is_set():
        mix, nw, nh, tokens = FLEET_SHAPES[(k + lane) % len(FLEET_SHAPES)]
        out = f"{d.dir}/fleet-{lane}-{k}.json"
        cmd = [fleet_bin, "--tls", f"127.0.0.1:{d.port}", "--sni", "localhost", "--ca", f"{d.dir}/ca.pem",
               "--token", h.TOKEN, "--mix", mix, "--wss-conns", str(nw), "--https-conns", str(nh),
               "--tokens", str(tokens), "--layers", str(LAYERS), "--hidden", str(HIDDEN),
               "--seed", str(1 + lane * 1000 + k), "--token-base", str(led.tokens(tokens)),
               "--json", out, "--quiet", "--duration", "60", "--slot-timeout-ms", "5000"]
        if corrupt_run == k:
            cmd += ["--corrupt-at", str(tokens // 2), "--corrupt-layer", "14"]
        # connections this run opens: the WebSocket ones always (the first
        # subscribes to the seeds), the HTTPS ones when https is in the mix
        led.add(fleet_conns=nw + (nh if "https" in mix else 0))
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            with open(out) as f:
                j = json.load(f)
        except (OSError, ValueError):
            led.error("fanofleet run %d/%d wrote no JSON (status %d): %s" % (lane, k, r.returncode, r.stdout[-800:]))
            return
        j["_run"] = (lane, k, corrupt_run == k)
        mc = re.search(r"canonical reports (\d+)", r.stdout)
        j["_canonical"] = int(mc.group(1)) if mc else 0
        with open(out, "w") as f:   # kept for a post-mortem
            json.dump(j, f)
        with led.lock:
            led.fleet.append(j)
        if r.returncode != 0:
            led.error("fanofleet run %d/%d exited %d: %s" % (lane, k, r.returncode, r.stdout[-800:]))
        k += 1


# ---- the injector (HTTPS POST) ---------------------------------------------

def vals(rng):
    return [h.f32(rng.uniform(-4, 4)) for _ in range(HIDDEN)]


class Poster:
    """One keep-alive HTTPS connection, reopened every `every` requests."""

    def __init__(self, d, led, every=40):
        self.d, self.led, self.every, self.n, self.s = d, led, every, 0, None

    def post(self, frame):
        if self.s is None or self.n >= self.every:
            self.close()
            self.s = self.d.tls_socket()
            self.led.conn("inject")
            self.n = 0
        self.n += 1
        st, _, body = h.http(self.d, "POST", "/residual-seed", frame, sock=self.s)
        if st >= 400:
            self.led.add(http_errors=1)
        return st, json.loads(body) if body else {}

    def close(self):
        if self.s is not None:
            self.s.close()
            self.s = None


def inject_thread(d, led, stop):
    rng = random.Random(7)
    p = Poster(d, led)
    i = 0
    pending_expire = []   # (time, layer, token) of incomplete slots

    def send(layer, tok, line, v, neg=0):
        st, j = p.post(h.seed(layer, tok, line, v, neg))
        out = j.get("outcome", "?")
        led.outcome(out)
        return st, out

    try:
        while not stop.is_set():
            i += 1
            tok, layer = led.tokens(1), rng.randint(1, LAYERS - 1)
            kind = i % 5
            if kind == 0:       # incomplete: one or two of three lines, then the slot expires
                n = 1 + (i // 5) % 2
                for line in FLEET_LINES[:n]:
                    _, out = send(layer, tok, line, vals(rng))
                    if out == "accepted":
                        led.add(unresolved_in=1)
                with led.lock:
                    led.unresolved_slots.append((layer, tok))
                pending_expire.append((time.time(), layer, tok))
            elif kind in (1, 2):  # identical duplicates: while pending, and after resolution
                v1, v3, v5 = vals(rng), vals(rng), vals(rng)
                send(layer, tok, 1, v1)
                send(layer, tok, 1, v1)
                send(layer, tok, 3, v3)
                _, out = send(layer, tok, 5, v5)
                if out == "resolved":
                    led.add(inj_resolved=1)
                send(layer, tok, 5 if kind == 1 else 3, v5 if kind == 1 else v3)
            elif kind == 3:     # a complete slot, lines in random order
                lines = list(FLEET_LINES)
                rng.shuffle(lines)
                outs = [send(layer, tok, ln, vals(rng))[1] for ln in lines]
                if outs[-1] == "resolved":
                    led.add(inj_resolved=1)
            else:               # malformed frames (reason counters) and bodies that are no frame
                fr = h.seed(layer, tok, 1, vals(rng))
                for bad in (h.hdr(0x1234, tok, 0, 8) + b"\0" * 8, h.seed(layer, tok, 1, vals(rng)[:-1])):
                    st, j = p.post(bad)
                    led.outcome(j.get("outcome", "?"))
                    led.add(malformed_sent=1)
                for bad in (fr[:-5], fr[:7]):
                    st, j = p.post(bad)
                    led.outcome("undecodable" if j.get("outcome") == "malformed" else j.get("outcome", "?"))
                    led.add(undecodable_sent=1)
            # contributions to slots that expired a while ago: late / expired / a new slot
            while pending_expire and time.time() - pending_expire[0][0] > 3 * DEADLINE_MS / 1000:
                _, layer, tok = pending_expire.pop(0)
                if rng.random() < 0.5:
                    _, out = send(layer, tok, 5, vals(rng))
                    if out == "accepted":   # the index was reclaimed: a new slot, it expires too
                        led.add(unresolved_in=1)
                        with led.lock:
                            led.unresolved_slots.append((layer, tok))
            time.sleep(0.02)  # pacing: the injector's rate
    except Exception as e:  # noqa: BLE001 - a broken injector is a test failure, reported
        led.error("injector: %r" % e)
    finally:
        p.close()


def conflict_phase(d, led, n=3):
    """After the load (a conflict moves the model epoch and flushes every
    open slot, which would fail the fleet's runs): n slots get two different
    values on one line -> conflict, the slot is poisoned; one more
    contribution to each poisoned slot is refused."""
    rng = random.Random(11)
    p = Poster(d, led)
    try:
        for i in range(n):
            tok, layer = led.tokens(1), 1 + i
            st, j = p.post(h.seed(layer, tok, 3, vals(rng)))
            led.outcome(j.get("outcome", "?"))
            if j.get("outcome") == "accepted":
                led.add(unresolved_in=1)
            for line in (3, 5):
                st, j = p.post(h.seed(layer, tok, line, vals(rng)))
                led.outcome(j.get("outcome", "?"))
            with led.lock:
                led.unresolved_slots.append((layer, tok))
    finally:
        p.close()


# ---- connection churn ------------------------------------------------------

def churn_thread(d, led, stop, target):
    """Short-lived connections of several kinds, paced to spread `target`
    over the run."""
    ctx = d.ssl_ctx()
    kinds = ["healthz", "tcp_close", "garbage", "half_hello", "handshake_close", "healthz"]
    n = 0
    held = []   # "silent": connected, never a byte; the daemon's handshake timeout closes them
    while not stop.is_set() and n < target:
        kind = "silent" if n % 25 == 24 else kinds[n % len(kinds)]
        n += 1
        try:
            raw = socket.create_connection(("127.0.0.1", d.port), timeout=5)
            led.conn(kind)
            if kind == "silent":
                held.append(raw)
            elif kind == "tcp_close":
                raw.close()
            elif kind == "garbage":
                raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                try:
                    raw.recv(100)
                except OSError:
                    pass
                raw.close()
            elif kind == "half_hello":
                # the first bytes of a TLS record header + part of a ClientHello, never finished
                raw.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(16))
                time.sleep(0.05)  # not readiness: the half hello is left standing a moment
                raw.close()
            else:
                s = ctx.wrap_socket(raw, server_hostname="localhost")
                if kind == "healthz":
                    st, _, _ = h.http(d, "GET", "/healthz", token=None, sock=s)
                    if st != 200:
                        led.error("GET /healthz answered %d" % st)
                s.close()
        except (OSError, ssl.SSLError, ConnectionError) as e:
            led.error("churn %s: %r" % (kind, e))
        time.sleep(0.12)  # pacing: the churn's rate
    for raw in held:
        raw.settimeout(15)
        try:
            if raw.recv(100) != b"":
                led.error("a silent connection got bytes instead of a close")
        except ConnectionResetError:
            pass
        except OSError as e:
            led.error("a silent connection was not closed by the daemon: %r" % e)
        raw.close()


# ---- the daemon's counters ---------------------------------------------------

def scrape(d):
    body = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10).read().decode()
    m = {}
    for ln in body.splitlines():
        if ln and not ln.startswith("#"):
            k, _, v = ln.rpartition(" ")
            m[k] = float(v)
    return m


def stats(d, fanoctl):
    r = subprocess.run([fanoctl, "--socket", f"{d.dir}/fanoctl.sock", "stats", "--json"], capture_output=True,
                       text=True, timeout=20)
    if r.returncode != 0:
        h.fail("fanoctl stats --json: status %d %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def run_load(d, threads, stop, seconds, sample, join_s):
    """The load phase both soaks share: start threads, take sample(elapsed
    s, n) every 0.5 s for seconds (n counts the samples; None for the last
    one, taken after the threads stopped), fail when the daemon dies; then
    set stop and join the threads (join_s each at most). Returns (samples,
    seconds the load ran)."""
    for t in threads:
        t.daemon = True   # a SIGTERM to the script must not wait for them
        t.start()
    samples = []
    start = time.time()
    while time.time() - start < seconds:
        samples.append(sample(time.time() - start, len(samples)))
        if d.proc.poll() is not None:
            stop.set()
            h.fail("the daemon died during the load (status %s)" % d.proc.returncode)
        time.sleep(0.5)  # pacing: the RSS sampling period
    stop.set()
    for t in threads:
        t.join(timeout=join_s)
        if t.is_alive():
            h.fail("a load thread did not stop")
    load_s = time.time() - start
    samples.append(sample(load_s, None))
    return samples, load_s


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def main():
    fanogate = tool("FANOGATE")
    fanoctl = tool("FANOCTL")
    fleet_bin = tool("FANOFLEET")
    seconds = float(os.environ.get("SOAK_SECONDS", "60"))
    growth = float(os.environ.get("SOAK_RSS_GROWTH", "0.20"))
    # The daemon's leak check at exit: a report -> exit 23, which the harness
    # fails on (SIGTERM must give 0), as it fails on "Sanitizer" in the log.
    # A small quarantine keeps ASan's own freed-memory cache out of the RSS bound.
    os.environ["ASAN_OPTIONS"] = "detect_leaks=1:exitcode=23:halt_on_error=1:quarantine_size_mb=8"
    os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    led = Ledger()
    t0 = time.time()
    with h.Daemon(layers=LAYERS, hidden=HIDDEN, deadline_ms=DEADLINE_MS, max_conns=256, handshake_ms=2000,
                  idle_ms=20000, capacity=16384) as d:
        pid = d.proc.pid
        stop = threading.Event()
        threads = [threading.Thread(target=fleet_thread, args=(d, led, stop, fleet_bin, 0, 2)),
                   threading.Thread(target=fleet_thread, args=(d, led, stop, fleet_bin, 1, -1)),
                   threading.Thread(target=inject_thread, args=(d, led, stop)),
                   threading.Thread(target=churn_thread, args=(d, led, stop, 100000))]
        # samples: (seconds since start, VmRSS KiB)
        samples, load_s = run_load(d, threads, stop, seconds, lambda t, n: (t, rss_kib(pid)), 90)
        conflict_phase(d, led)
        # every slot ended (the incomplete ones expire at their deadline) and
        # every connection closed: what the ledger below counts. Bounded by
        # four deadlines and 15 s; short of that, the checks say what is open.
        wait.until(lambda: (lambda m: m.get("fanogate_tls_connections") == 0
                            and m.get('fanogate_slots_open{shard="0"}') == 0)(scrape(d)),
                   4 * DEADLINE_MS / 1000 + 16, 0.5)
        m = scrape(d)
        st = stats(d, fanoctl)
        rss_end = rss_kib(pid)
        print("ok - load ran %.1f s: %d fanofleet runs, %d client connections, injector outcomes %s"
              % (load_s, len(led.fleet), led.conns + led.fleet_conns, led.outcomes), flush=True)
        h.check(not led.errors, "no client-side errors (%d)" % len(led.errors))

        # ---- contributions and slots ----
        oc = st["engine_tls"]["outcomes"]
        om = {k[len('fanogate_tls_outcomes_total{outcome="'):-2]: int(v) for k, v in m.items()
              if k.startswith("fanogate_tls_outcomes_total{")}
        h.check(all(om.get(k, 0) == v for k, v in oc.items()) and all(oc.get(k, 0) == v for k, v in om.items()),
                "fanoctl stats outcomes = /metrics outcomes")
        # The shard's own counters. Slots an epoch change flushes: counted in
        # fanogate_shard_slots_flushed_total / fanogate_slots_flushed_total
        # (not in expired) where the daemon has them; before that the shard
        # counted them as expired and the control plane not at all.
        resolved = int(m["fanogate_seeds_resolved_total"])
        sh = {k: int(m.get('fanogate_shard_slots_%s_total{shard="0"}' % k, 0))
              for k in ("opened", "resolved", "expired", "poisoned", "reclaimed", "flushed")}
        expired, poisoned, opened, flushed = sh["expired"], sh["poisoned"], sh["opened"], sh["flushed"]
        print("shard counters %s; control plane: expired %d poisoned %d flushed %s"
              % (sh, m["fanogate_slots_expired_total"], m["fanogate_slots_poisoned_total"],
                 m.get("fanogate_slots_flushed_total", "-")), flush=True)
        if "fanogate_slots_flushed_total" in m:
            h.check(int(m["fanogate_slots_flushed_total"]) == flushed
                    and int(m["fanogate_slots_expired_total"]) == expired,
                    "control plane flushed %d = shard's, expired %d = shard's" % (flushed, expired))
        h.check(sh["resolved"] == resolved, "shard resolved %d = fanogate_seeds_resolved_total %d"
                % (sh["resolved"], resolved))
        still_open = int(m['fanogate_slots_open{shard="0"}'])
        h.check(still_open == 0, "no slot open after the deadline (%d)" % still_open)
        h.check(st["engine_tls"]["resolved"] == resolved and om.get("resolved", 0) == resolved,
                "resolved: fanoctl %d = metrics %d = 'resolved' outcomes %d"
                % (st["engine_tls"]["resolved"], resolved, om.get("resolved", 0)))
        h.check(opened == resolved + expired + flushed + poisoned + still_open,
                "slots opened %d = resolved %d + expired %d + flushed %d + poisoned %d + open %d"
                % (opened, resolved, expired, flushed, poisoned, still_open))
        accepted_in = om.get("accepted", 0) + om.get("resolved", 0)
        h.check(accepted_in == 3 * resolved + led.unresolved_in + 0,
                "contributions accepted %d = 3 x resolved %d + in expired/poisoned slots %d + open 0"
                % (accepted_in, resolved, led.unresolved_in))
        h.check(expired + flushed + poisoned == len(led.unresolved_slots) and expired > 0 and poisoned > 0,
                "expired %d + flushed %d + poisoned %d = the injector's %d unresolved slots"
                % (expired, flushed, poisoned, len(led.unresolved_slots)))
        # every rejected contribution under its outcome: daemon = fanofleet + injector
        client = dict(led.outcomes)
        for j in led.fleet:
            for k, v in j.get("outcomes", {}).items():
                if k not in ("accepted", "resolved"):
                    client[k] = client.get(k, 0) + v
        rejected = {k: v for k, v in om.items() if k not in ("accepted", "resolved") and v}
        # malformed frames have no slot outcome: they are counted by reason below
        client_rej = {k: v for k, v in client.items()
                      if k not in ("accepted", "resolved", "malformed", "undecodable") and v}
        h.check(rejected == client_rej, "rejected by outcome, daemon %s = clients %s" % (rejected, client_rej))
        mal = sum(int(v) for k, v in m.items() if k.startswith("fanogate_tls_malformed_total{"))
        reasons = {k[len('fanogate_tls_malformed_total{reason="'):-2]: int(v) for k, v in m.items()
                   if k.startswith("fanogate_tls_malformed_total{") and v}
        # malformed frames and POST bodies that are no whole frame (truncated,
        # short header: answered 400 "malformed"), each under its reason
        h.check(mal == led.malformed_sent + led.undecodable_sent and client.get("malformed", 0) == led.malformed_sent
                and len(reasons) >= 4,
                "malformed: by reason %d %s = frames sent %d (acks 'malformed' %d) + bodies that are no frame %d"
                % (mal, reasons, led.malformed_sent, client.get("malformed", 0), led.undecodable_sent))
        fleet_rej = sum(v for k, v in client.items() if k not in ("accepted", "resolved")) - sum(
            led.outcomes.get(k, 0) for k in led.outcomes if k not in ("accepted", "resolved"))
        herr = int(m["fanogate_http_errors_total"])
        h.check(client.get("undecodable", 0) == led.undecodable_sent > 0
                and herr == led.http_errors + fleet_rej,
                "undecodable bodies %d answered 'malformed'; http errors %d = injector's >= 400 answers %d"
                " + fanofleet's refusals %d" % (led.undecodable_sent, herr, led.http_errors, fleet_rej))
        frames = int(m["fanogate_tls_frames_total"])
        canon = int(m["fanogate_canonical_total"])
        h.check(frames == sum(om.values()) + canon + mal,
                "frames %d = outcomes %d + canonical %d + malformed %d" % (frames, sum(om.values()), canon, mal))
        # ---- seeds ----
        bit_exact = sum(j["bit_exact"] for j in led.fleet)
        seen = sum(j["divergence_seen"] for j in led.fleet)
        fleet_resolved = sum(j["resolved"] for j in led.fleet)
        h.check(all(j["wrong"] == 0 and j["missing"] == 0 for j in led.fleet if not j["_run"][2]),
                "every fanofleet run without corruption: 0 wrong, 0 missing")
        h.check(seen == 1, "the injected corruption was seen (%d)" % seen)
        # the corrupted seed is still bit-exact against the fleet's own (corrupted) inputs
        h.check(bit_exact == fleet_resolved and all(j["wrong"] == 0 and j["missing"] == 0 for j in led.fleet),
                "fanofleet: bit-exact %d = resolved %d, 0 wrong, 0 missing" % (bit_exact, fleet_resolved))
        h.check(fleet_resolved + led.inj_resolved == resolved,
                "seeds resolved %d = fanofleet %d + injector %d" % (resolved, fleet_resolved, led.inj_resolved))
        # ---- connections ----
        acc, closed = int(m["fanogate_tls_accepted_total"]), int(m["fanogate_tls_closed_total"])
        live = int(m["fanogate_tls_connections"])
        h.check(live == 0 and acc == closed + live, "connections accepted %d = closed %d + open %d"
                % (acc, closed, live))
        h.check(st["tls"]["accepted"] == acc, "fanoctl stats tls.accepted = metrics")
        hto = int(m["fanogate_tls_head_timeouts_total"])
        silent = led.conn_kinds.get("silent", 0)
        h.check(silent > 0 and hto == silent, "handshake timeouts %d = silent connections %d" % (hto, silent))
        made = led.conns + led.fleet_conns
        h.check(acc == made, "connections accepted %d = made by the clients %d (%s, fanofleet %d)"
                % (acc, made, led.conn_kinds, led.fleet_conns))
        h.check(made >= 200, "at least 200 connections churned (%d)" % made)
        # ---- memory ----
        warm = [r for t, r in samples if t >= 0.25 * load_s]
        r25, r100 = warm[0], samples[-1][1]
        peak = max(warm)
        h.check(peak <= r25 * (1 + growth),
                "VmRSS after warm-up: %d KiB at 25%%, peak %d, %d at 100%% (bound +%d%%)"
                % (r25, peak, r100, growth * 100))
        figures = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)), seconds=round(load_s, 1),
                       fleet_runs=len(led.fleet), conns_accepted=acc, conn_kinds=led.conn_kinds,
                       fleet_conns=led.fleet_conns, contributions_accepted=accepted_in, slots_opened=opened,
                       resolved=resolved, expired=expired, poisoned=poisoned, rejected=rejected,
                       bit_exact=bit_exact, divergence_seen=seen, rss_start_kib=samples[0][1], rss_25_kib=r25,
                       rss_peak_kib=peak, rss_end_load_kib=r100, rss_after_kib=rss_end, daemon=fanogate)
        print("figures: " + json.dumps(figures), flush=True)
        out = os.environ.get("SOAK_RESULTS")
        if out:
            with open(out, "a") as f:
                f.write(json.dumps(figures) + "\n")
    print("ok - the daemon stopped cleanly on SIGTERM (exit 0, no sanitizer report)", flush=True)


if __name__ == "__main__":
    main()
