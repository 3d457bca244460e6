#!/bin/bash
# test_fanoctl.sh - fanoctl end to end: decode on the conformance vectors
# (tests/data/vectors.txt via FG_TEST_DATA), config check on good and bad
# files, docs/fanogate.ini.example and docs/config.md against the key table,
# help and exit codes.
# usage: test_fanoctl.sh FANOCTL SOURCE_ROOT
set -u
FANOCTL=$1
ROOT=$2
DATA=${FG_TEST_DATA:-$ROOT/tests/data}
VEC=$DATA/vectors.txt
PY=/usr/bin/python3
. "$ROOT/tests/lib/netns.sh" # fg_wait_until
TMP=$(mktemp -d /tmp/fanoctl-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
n=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# vec ID: the hex column of a vector
vec() { awk -F' [|] ' -v id="$1" '$1 == id { gsub(/ /, "", $3); print $3 }' "$VEC"; }

# expect CODE NEEDLE... -- ARGS: run fanoctl ARGS, check the exit code and
# that stdout+stderr contain every needle.
expect() {
	local code=$1; shift
	local needles=()
	while [ "$1" != "--" ]; do needles+=("$1"); shift; done
	shift
	n=$((n + 1))
	local out rc
	out=$("$FANOCTL" "$@" 2>&1); rc=$?
	if [ "$rc" != "$code" ]; then
		fail "fanoctl $* -> exit $rc, want $code"; echo "$out" | head -20; return
	fi
	for s in "${needles[@]}"; do
		if ! grep -qF -- "$s" <<<"$out"; then
			fail "fanoctl $* : output lacks '$s'"; echo "$out" | head -20; return
		fi
	done
}

[ -r "$VEC" ] || { echo "no vectors at $VEC"; exit 77; }
[ -x "$PY" ] || { echo "no $PY"; exit 77; }

# ---- decode: seeds -----------------------------------------------------
expect 0 "line=1 (1,4,5)" "sign=+" "start_pos=0" "seq_len=1" "hidden=4" "floats[4]: 0.1 0.2 0.3 0.4" \
	"fingerprint=5e2de06ec4043aa2" "dst_layer=1" "token_seq=42" -- decode --hidden 4 "$(vec S01)"
expect 0 "hidden=4 (inferred)" "0.1 0.2 0.3 0.4" -- decode "$(vec S01)"
expect 0 "line=6 (3,6,5)" "sign=-" "start_pos=5" "floats[4]: 1 -2 0.5 0" "dst_layer=27" "token_seq=9001" \
	-- decode --hidden 4 "$(vec S02)"
expect 2 "malformed: seed_line" -- decode --hidden 4 "$(vec S03)"
expect 2 "malformed: seed_orientation" -- decode --hidden 4 "$(vec S04)"
expect 2 "malformed: seed_body_rows" -- decode --hidden 4 "$(vec S05)"
expect 2 "malformed: seed_body_length" -- decode --hidden 4 "$(vec S06)"
expect 2 "malformed: seed_prefix" -- decode --hidden 4 "$(vec S07)"
expect 2 "malformed: seed_too_large" -- decode --hidden 4 --max-seq-len 1 "$(vec S06)"
expect 2 "malformed: unknown_layer" -- decode --layers 20 "$(vec S02)"
# the hex may come on stdin, with whitespace
n=$((n + 1))
out=$(vec S01 | sed 's/../& /g' | "$FANOCTL" decode --hidden 4 - 2>&1) || fail "decode - (stdin): $out"
grep -qF "(1,4,5)" <<<"$out" || fail "decode - (stdin) lacks the line"
expect 0 "line=1 (1,4,5)" -- decode "$(vec S01 | sed 's/../&:/g; s/:$//')"

# --json: parse it and check the fields
n=$((n + 1))
"$FANOCTL" decode --json --hidden 4 "$(vec S01)" >"$TMP/s01.json" || fail "decode --json S01 exit $?"
$PY - "$TMP/s01.json" <<'EOF' || fail "decode --json S01 fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True, d
f = d["frames"][0]
assert f["band"] == "seed" and f["dst_layer"] == 1 and f["token_seq"] == 42, f
assert f["line"] == 1 and f["triple"] == "(1,4,5)" and f["sign"] == "+", f
assert f["start_pos"] == 0 and f["seq_len"] == 1 and f["hidden"] == 4, f
assert f["floats"] == ["0.1", "0.2", "0.3", "0.4"], f["floats"]
assert f["fingerprint"] == "5e2de06ec4043aa2", f
EOF
n=$((n + 1))
"$FANOCTL" decode --json --hidden 4 "$(vec S03)" >"$TMP/s03.json"; rc=$?
[ $rc = 2 ] || fail "decode --json S03 exit $rc, want 2"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and d["reason"]=="seed_line", d' \
	"$TMP/s03.json" || fail "decode --json S03 reason"

# ---- decode: frames, batches, transports --------------------------------
expect 0 "stream=0x002a seq=7 flags=0x03 len=5" "payload=0102030405" "not a fanogate stream" -- decode "$(vec F01)"
expect 0 "3 frames" "frame 2: stream=0x0002 seq=0 flags=0x10 len=0" -- decode "$(vec F10)"
expect 2 "malformed: truncated_frame" -- decode "$(vec F11)"
expect 2 "malformed: incomplete" -- decode --transport stream "$(vec F11)"
expect 2 "malformed: truncated_frame" -- decode "$(vec F12)"
expect 2 "malformed: short_header" -- decode "$(vec F13)"
expect 2 "malformed: incomplete" -- decode --transport stream "$(vec F13)"
expect 0 "0 frames" -- decode ""

# ---- decode: datagrams and ACKs -----------------------------------------
expect 0 "frame_id=42 index=0 total=1" "stream=0x3039 seq=67890" -- decode --datagram "$(vec U01)"
expect 0 "frame_id=9 index=0 total=3 chunk=1468" "first fragment of a 3082-byte frame" "stream=0x0007" \
	-- decode --datagram "$(vec U02)"
expect 0 "frame_id=9 index=2 total=3 chunk=146" -- decode --datagram "$(vec U04)"
expect 2 "malformed: frag_total_zero" -- decode --datagram "$(vec U05)"
expect 2 "malformed: frag_index_range" -- decode --datagram "$(vec U06)"
expect 2 "malformed: frag_short" -- decode --datagram "$(vec U07)"
expect 0 "frame_id=77" "band=ack" "stream=0x002a base_seq=100" "acks {100,101,103,107,163}" \
	-- decode --datagram "$(vec A02)"

# several datagrams: reassembled per frame_id in any order
expect 0 "frame_id=9: reassembled 3 fragments, 3082 bytes" "stream=0x0007 seq=0 flags=0x00 len=3072" "1 frame" \
	-- decode --datagram "$(vec U04)" "$(vec U02)" "$(vec U03)"
expect 2 "malformed: incomplete (frame_id 9: 2 of 3 fragments)" -- decode --datagram "$(vec U04)" "$(vec U02)"
u3=$(vec U03)
expect 2 "malformed: frag_total_changed" -- decode --datagram "$(vec U02)" "${u3:0:6}04${u3:8}" "$(vec U04)"
expect 0 "2 frames" "band=ack" "stream=0x3039" -- decode --datagram "$(vec U01)" "$(vec A02)"
expect 2 "several only with --datagram" -- decode "$(vec F01)" "$(vec F02)"
# a Pair X seed of the default shape (hidden 1536) cut at MTU 1472, lines on stdin
n=$((n + 1))
$PY - >"$TMP/frags.txt" <<'EOF'
import struct
hidden = 1536
body = b"".join(struct.pack("<f", i * 0.25) for i in range(hidden))
payload = struct.pack("<II", 7, 1) + body
frame = struct.pack(">HI", 0xAF60 + 2, 1234) + bytes([0x31]) + len(payload).to_bytes(3, "big") + payload
C = 1472 - 4
chunks = [frame[i:i + C] for i in range(0, len(frame), C)]
for i in reversed(range(len(chunks))):
    print((struct.pack(">HBB", 500, i, len(chunks)) + chunks[i]).hex())
EOF
out=$("$FANOCTL" decode --datagram --hidden 1536 - <"$TMP/frags.txt" 2>&1) || fail "reassembled seed: $out"
for s in "frame_id=500: reassembled 5 fragments, 6162 bytes" "line=3 (2,4,6) sign=-" "start_pos=7 seq_len=1 hidden=1536" \
	"floats[1536]: 0 0.25 0.5 0.75 1"; do
	grep -qF "$s" <<<"$out" || fail "reassembled seed lacks '$s'"
done

# ---- decode: canonical and status ---------------------------------------
expect 0 "band=canonical dst_layer=1" "kind=full" "fingerprint=5e2de06ec4043aa2" -- decode --hidden 4 "$(vec C01)"
expect 0 "kind=digest" "fingerprint=5e2de06ec4043aa2 (xxh3_64, as reported)" -- decode "$(vec C02)"
# status frame (layout v2 in include/fg/wire.h): token 42, resolved, line 1,
# layer 1, bitset 0x7f (every line satisfied), expected 0x02, facts
# ack|resolved, line_state active, landed 0x02
status=fffe0000002a000000200201010001007f02050200001000000000000000a23a04c46ee02d5e02000000
expect 0 "band=status" "outcome=resolved line=(1,4,5)" "line_state=active" "shadow_mode=0 fully_resolved=1" \
	"bitset=0x7f expected=0x02 landed=0x02" "fingerprint=5e2de06ec4043aa2" -- decode "$status"
# version 1 (28 bytes) is refused by name
expect 2 "status_length" -- decode fffe0000002a0000001c0101010001000202050200001000000000000000a23a04c46ee02d5e

# ---- decode: orientation readings and address-bound layers ---------------
# S01 with its orientation nibble 0 (bit: +) and the same seed written the
# signed way (0x1 = +, 0xF = -)
s01=$(vec S01)
s01_signed=${s01:0:12}$(printf '%x' $(( 0x${s01:12:1} )))1${s01:14}
s01_neg_signed=${s01:0:12}$(printf '%x' $(( 0x${s01:12:1} )))f${s01:14}
expect 0 "sign=+" -- decode --hidden 4 "$s01"
# the same bytes read the bit way subtract: why the reading is configuration
expect 0 "sign=-" -- decode --hidden 4 "$s01_signed"
expect 2 "malformed: seed_orientation" -- decode --hidden 4 "$s01_neg_signed"
expect 0 "sign=+" -- decode --hidden 4 --orientation signed "$s01_signed"
expect 0 "sign=-" -- decode --hidden 4 --orientation signed "$s01_neg_signed"
expect 2 "malformed: seed_orientation" -- decode --hidden 4 --orientation signed "$s01"
expect 2 "--orientation is bit or signed" -- decode --orientation plus "$s01"
# S01 is on 0xAF61: for layer 17 on its address, for layer 2 a mismatch
expect 0 "dst_layer=17" -- decode --hidden 4 --layer 17 "$s01"
expect 2 "layer_mismatch" -- decode --hidden 4 --layer 2 "$s01"

# ---- decode: usage --------------------------------------------------------
expect 2 "not hex" -- decode zz
expect 2 "not hex" -- decode abc
expect 2 "exactly one HEX" -- decode
n=$((n + 1))
out=$(: | "$FANOCTL" decode --datagram - 2>&1); rc=$?
[ $rc = 2 ] && grep -qF "no datagram on stdin" <<<"$out" || fail "empty stdin with --datagram: $rc $out"
expect 2 "--transport is stream or message" -- decode --transport udp 00
expect 2 "--hidden" -- decode --hidden 0 00

# ---- config check -------------------------------------------------------
EXAMPLE=$ROOT/docs/fanogate.ini.example
expect 0 "valid" "[model]" "hidden = 1536" -- config check "$EXAMPLE"
# the summary is itself a valid configuration with the same meaning
n=$((n + 1))
"$FANOCTL" config check "$EXAMPLE" >"$TMP/summary.ini" || fail "config check example"
"$FANOCTL" config check --json "$EXAMPLE" >"$TMP/a.json" || fail "config check --json example"
"$FANOCTL" config check --json "$TMP/summary.ini" >"$TMP/b.json" || fail "config check of the summary"
$PY - "$TMP/a.json" "$TMP/b.json" <<'EOF' || fail "summary round trip differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["ok"] and b["ok"]
assert a["config"] == b["config"], [k for k in a["config"] if a["config"][k] != b["config"][k]]
EOF
# non-default [consumers] delivery, [points] and [daemon] keys are shown and round trip
n=$((n + 1))
printf '[consumers]\ndefault = 127.0.0.1:5000\nresend_ms = 150\nresends = 3\npending_max = 64\n[points]\ne2 = 10.0.0.0/24, fd00::/64\npeer_timeout_ms = 1500\n[daemon]\nuser = nobody\nseccomp = log\n' >"$TMP/nd.ini"
"$FANOCTL" config check "$TMP/nd.ini" >"$TMP/nd-summary.ini" || fail "config check of non-default keys"
grep -q '^e2 = 10.0.0.0/24, fd00::/64$' "$TMP/nd-summary.ini" || fail "summary lacks [points] e2"
grep -q '^seccomp = log$' "$TMP/nd-summary.ini" || fail "summary lacks [daemon] seccomp"
"$FANOCTL" config check --json "$TMP/nd.ini" >"$TMP/nd-a.json" || fail "config check --json non-default"
"$FANOCTL" config check --json "$TMP/nd-summary.ini" >"$TMP/nd-b.json" || fail "config check of the non-default summary"
$PY - "$TMP/nd-a.json" "$TMP/nd-b.json" <<'EOF' || fail "non-default summary round trip differs"
import json, sys
a, b = (json.load(open(p))["config"] for p in sys.argv[1:3])
assert a == b, [k for k in a if a[k] != b[k]]
assert a["points"]["e2"] == ["10.0.0.0/24", "fd00::/64"] and a["points"]["peer_timeout_ms"] == 1500, a["points"]
assert a["consumers"]["resends"] == 3 and a["consumers"]["pending_max"] == 64, a["consumers"]
assert a["daemon"] == {"user": "nobody", "group": "", "seccomp": "log"}, a["daemon"]
EOF
# every key of the table is in the summary and in --json, once, in its
# section (a family, layer.N or line.N, as members: nd2.ini gives [rules]
# and [consumers] one layer each that differs from the default), and
# nothing else is; the summary still round trips
n=$((n + 1))
printf '[rules]\nlayer.2 = 2,4,6\n[consumers]\nlayer.3 = 127.0.0.1:5001\n[udp]\nlayer_ports = 5000\n[dataplane]\nneighbours = 10.0.0.2=02:00:00:00:00:02, fd00::2=02:00:00:00:00:03\n[wire]\norientation = signed\n[shadow]\ncanonical_sources = 10.1.0.0/16\n[cluster]\nnode = n1\nendpoints = http://127.0.0.1:2379\nkey_file = /etc/fanogate/fleet.key\n' >"$TMP/nd2.ini"
"$FANOCTL" config keys --json >"$TMP/keys2.json" || fail "config keys --json"
"$FANOCTL" config check "$TMP/nd2.ini" >"$TMP/nd2-summary.ini" || fail "config check of nd2.ini"
"$FANOCTL" config check --json "$TMP/nd2.ini" >"$TMP/nd2-a.json" || fail "config check --json nd2.ini"
"$FANOCTL" config check --json "$TMP/nd2-summary.ini" >"$TMP/nd2-b.json" || fail "config check of the nd2 summary"
$PY - "$TMP/keys2.json" "$TMP/nd2-summary.ini" "$TMP/nd2-a.json" "$TMP/nd2-b.json" <<'EOF' || fail "config check does not print every key of the table once"
import json, re, sys
keys = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
conf = json.load(open(sys.argv[3]))["config"]
assert conf == json.load(open(sys.argv[4]))["config"], "the summary does not round trip"
heads = re.findall(r"^\[(\w+)\]$", text, re.M)
bad = ["section [%s] printed %d times" % (h, heads.count(h)) for h in set(heads) if heads.count(h) != 1]
body = {m.group(1): m.group(2) for m in re.finditer(r"^\[(\w+)\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)}
printed = {(s, k) for s, b in body.items() for k in re.findall(r"^([\w.]+) =", b, re.M)}
want = set()
pat_of = lambda key: re.escape(key[:-1]) + r"[0-9]+" if key.endswith(".N") else re.escape(key)
for k in keys:
    sec, key = k["section"], k["key"]
    pat = pat_of(key)
    got = re.findall(r"^(%s) =" % pat, body.get(sec, ""), re.M)
    if not got or len(got) != len(set(got)):
        bad.append("text [%s] %s: %s" % (sec, key, got or "missing"))
    want |= {(sec, g) for g in got}
    if not [j for j in conf.get(sec, {}) if re.fullmatch(pat, j)]:
        bad.append("json [%s] %s missing" % (sec, key))
bad += ["text [%s] %s is not a key of the table" % p for p in sorted(printed - want)]
bad += ["json [%s] %s is not a key of the table" % (s, j) for s in conf for j in conf[s]
        if not any(k["section"] == s and re.fullmatch(pat_of(k["key"]), j) for k in keys)]
assert conf["rules"]["layer.2"] == [2, 4, 6] and "layer.3" not in conf["rules"], conf["rules"]
assert conf["consumers"]["layer.3"] == "127.0.0.1:5001" and conf["consumers"]["default"] is None, conf["consumers"]
assert conf["dataplane"]["neighbours"] == ["10.0.0.2=02:00:00:00:00:02", "fd00::2=02:00:00:00:00:03"], conf["dataplane"]
assert conf["wire"]["orientation"] == "signed" and conf["cluster"]["node"] == "n1", (conf["wire"], conf["cluster"])
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
# the example sets every key to its default: same meaning as an empty file
n=$((n + 1))
: >"$TMP/empty.ini"
"$FANOCTL" config check --json "$TMP/empty.ini" >"$TMP/e.json" || fail "config check of an empty file"
$PY - "$TMP/a.json" "$TMP/e.json" <<'EOF' || fail "the example's values differ from the defaults"
import json, sys
a, e = (json.load(open(p))["config"] for p in sys.argv[1:3])
assert a == e, [k for k in a if a[k] != e[k]]
EOF
printf '[model]\nhidden = 4\n[udp]\nport = 0\n' >"$TMP/bad.ini"
expect 1 "$TMP/bad.ini:4: [udp] port = 0: out of range" -- config check "$TMP/bad.ini"
printf '[rules]\ndefault = 1,3,1\n' >"$TMP/dup.ini"
expect 1 "$TMP/dup.ini:2: [rules] default = 1,3,1: line 1 listed twice" -- config check "$TMP/dup.ini"
expect 1 "$TMP/nope.ini:0: cannot open" -- config check "$TMP/nope.ini"
n=$((n + 1))
"$FANOCTL" config check --json "$TMP/bad.ini" >"$TMP/bad.json"; rc=$?
[ $rc = 1 ] || fail "config check --json bad exit $rc"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and d["line"]==4 and "port" in d["reason"], d' \
	"$TMP/bad.json" || fail "config check --json bad fields"
expect 2 "exactly one FILE" -- config check
expect 2 "unknown subcommand" -- config frob

# ---- docs against the key table -----------------------------------------
n=$((n + 1))
"$FANOCTL" config keys --json >"$TMP/keys.json" || fail "config keys --json"
$PY - "$TMP/keys.json" "$ROOT/docs/config.md" "$EXAMPLE" <<'EOF' || fail "docs do not cover every key"
import json, re, sys
keys = json.load(open(sys.argv[1]))
md = open(sys.argv[2]).read()
ex = open(sys.argv[3]).read()
missing = []
for k in keys:
    # config.md: a "## [section]" heading, and the key in backticks in that section
    m = re.search(r"^## \[%s\]\s*$(.*?)(?=^## |\Z)" % re.escape(k["section"]), md, re.S | re.M)
    if not m or ("`%s`" % k["key"]) not in m.group(1):
        missing.append("config.md [%s] %s" % (k["section"], k["key"]))
    # the example: the key set or shown commented out in its section
    m = re.search(r"^\[%s\]\s*$(.*?)(?=^\[|\Z)" % re.escape(k["section"]), ex, re.S | re.M)
    name = k["key"].replace(".N", r"\.[0-9(]")
    if not m or not re.search(r"^[;#]?\s*%s" % name, m.group(1), re.M):
        missing.append("example [%s] %s" % (k["section"], k["key"]))
if missing:
    print("\n".join(missing))
    sys.exit(1)
EOF
expect 0 "[model] hidden (uint) default \"1536\"" -- config keys

# ---- help, dispatcher, exit codes -----------------------------------------
expect 0 "usage: fanoctl" "exit codes" "3  the daemon" -- --help
expect 0 "usage: fanoctl" -- help
expect 2 "usage: fanoctl" --
expect 2 "unknown command 'frob'" -- frob
expect 2 "unknown option" -- --frob
expect 0 "fanoctl " -- --version
for cmd in decode config status lines slots peers stats; do
	expect 0 "usage: fanoctl $cmd" -- "$cmd" --help
	expect 0 "usage: fanoctl $cmd" -- help "$cmd"
done
if "$FANOCTL" --help | grep -q '^  audit'; then
	n=$((n + 1))
	"$FANOCTL" audit --help >/dev/null 2>&1; rc=$?
	[ $rc = 0 ] || fail "fanoctl audit --help exit $rc"
fi

# ---- daemon commands without a daemon: exit 3 ---------------------------------
for cmd in status peers stats slots lines; do
	expect 3 "cannot reach fanogate at $TMP/none.sock" -- --socket "$TMP/none.sock" "$cmd"
done
expect 2 "'1,5,4' is ambiguous" "(1 5 4) for several lines" -- --socket "$TMP/none.sock" lines enable 1,5,4
expect 2 "'(1,5,4)' is not an oriented Fano triple" -- --socket "$TMP/none.sock" lines enable '(1,5,4)'
expect 2 "'(1,4,5)' for line 1" -- --socket "$TMP/none.sock" lines shadow 0 1,4,5
expect 2 "want LAYER TOKEN_SEQ" -- --socket "$TMP/none.sock" slots 1
expect 2 "--watch wants" -- stats --watch 0
expect 2 "takes --json, or --watch" -- stats --count 3
# a fake daemon: checks the request, answers, and the exit code follows "ok"
n=$((n + 1))
$PY - "$TMP/op.sock" <<'EOF' &
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(4)
s.settimeout(20)
script = [
    ({"cmd": "lines"}, {"ok": True, "lines": [{"line": 1, "state": "shadow"}]}),
    ({"cmd": "line", "line": 1, "op": "enable", "why": "OPS-1"}, {"ok": False, "error": "already_enabled"}),
    ({"cmd": "stats"}, {"ok": True, "tls": {"accepted": 5, "ws_sessions": 1}, "up": 1}),
    ({"cmd": "stats"}, {"ok": True, "tls": {"accepted": 9, "ws_sessions": 1}, "up": 1}),
    ({"cmd": "line", "line": 6, "op": "auto_promote", "on": False, "why": "OPS-2"}, {"ok": True}),
    ({"cmd": "slot", "layer": 3, "token_seq": 42}, {"ok": True, "state": "open"}),
]
for want, reply in script:
    c, _ = s.accept()
    req = json.loads(c.makefile().readline())
    assert req == want, req
    c.sendall((json.dumps(reply) + "\n").encode())
    c.close()
EOF
fake=$!
fg_wait_until 5 test -S "$TMP/op.sock" || fail "the fake daemon did not bind $TMP/op.sock"
expect 0 "line=1 state=shadow" -- --socket "$TMP/op.sock" lines
expect 1 "refused: already_enabled" -- --socket "$TMP/op.sock" lines enable '(1,4,5)' --why OPS-1
expect 0 "fanogate stats at " "rates over the last" "tls.accepted" " 9 " "+4.0/s" -- --socket "$TMP/op.sock" stats --watch 1 --count 2
# the operator guide's spellings: line, --reason, auto-promote on|off LINE, slot TOKEN LAYER
expect 0 "" -- --socket "$TMP/op.sock" line auto-promote off '(3,6,5)' --reason OPS-2
expect 0 "" -- --socket "$TMP/op.sock" slot 42 3
wait $fake || fail "fake daemon saw a wrong request"

# ---- audit: the reader here, repair through the daemon's writer -------------
# (FANOGATE: the daemon binary, which `fanoctl audit repair` runs)
if [ -n "${FANOGATE:-}" ]; then
	expect 0 "intact, nothing to repair" -- audit repair "$TMP/a.audit"
	expect 0 "OK: 1 records in 1 file(s), chain verified from genesis" -- audit verify "$TMP/a.audit"
	expect 0 "genesis" "by fanoctl audit repair" -- audit tail "$TMP/a.audit"
	expect 2 "usage: fanoctl audit repair FILE" -- audit repair
	FANOGATE=$TMP/no-such-fanogate expect 2 "cannot run" -- audit repair "$TMP/a.audit"
else
	fail "FANOGATE unset: audit repair not tested"
fi

# ---- bash completion ------------------------------------------------------
n=$((n + 1))
comp=$(bash -c 'source "$1"; c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _fanoctl; echo "${COMPREPLY[*]}"; }
	c fanoctl de; c fanoctl lines enable 1 ""; c fanoctl lines auto-promote 1 o; c fanoctl --socket /x config ""' \
	_ "$ROOT/tools/fanoctl.bash-completion" 2>&1)
want=$'decode\n0 1 2 3 4 5 6 --why --json\non off\ncheck keys reload --help'
[ "$comp" = "$want" ] || fail "bash completion: got [$comp] want [$want]"

echo "$n checks, $fails failed"
[ $fails = 0 ]
