#!/usr/bin/env python3
"""gen_conffile.py - write the installed /etc/fanogate/fanogate.ini at build
time from the configuration's own writer: `fanoctl config check` of an empty
file prints the embedded default, every key once, in the key table's order;
`fanoctl config keys --json` gives each key's meaning and accepted values,
written above it as comments. --set SECTION.KEY=VALUE overrides one setting
(the package runs the daemon as its system user) and says so in a comment.
The result is checked with `fanoctl config check` before it is written.

Usage: gen_conffile.py --fanoctl PATH --out FILE [--set S.K=V ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

HEADER = """\
; fanogate.ini - the configuration of the fanogate appliance daemon.
;
; Every key is here with the embedded default value{overrides_note}.
; Edit, then check and apply:
;   fanogate --check-config {path}
;   systemctl restart fanogate    (or: fanoctl config reload, for the keys it
;                                 can change live)
; The meaning of every key: fanogate.ini(5), {docdir}/config.md.
; [dataplane] port names the NIC (an interface or a PCI address) that the
; [dataplane] profile drives: set both before starting the unit.
"""


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("gen_conffile: %s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout


def comment(text, width=76):
    return ["; " + l for l in textwrap.wrap(text, width - 2, break_on_hyphens=False)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fanoctl", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--path", default="/etc/fanogate/fanogate.ini", help="where the file is installed")
    ap.add_argument("--docdir", default="/usr/share/doc/fanogate")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    a = ap.parse_args()

    keys = json.loads(run([a.fanoctl, "config", "keys", "--json"]))
    doc = {(k["section"], k["key"]): k for k in keys}
    overrides = {}
    for s in a.set:
        name, _, value = s.partition("=")
        section, _, key = name.partition(".")
        if (section, key) not in doc:
            sys.exit("gen_conffile: --set %s: no such key in the table" % name)
        overrides[(section, key)] = value

    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.ini")
        open(empty, "w").close()
        effective = run([a.fanoctl, "config", "check", empty])

    note = ""
    if overrides:
        note = ", except " + ", ".join("[%s] %s" % k for k in overrides)
    out = HEADER.format(overrides_note=note, path=a.path, docdir=a.docdir).splitlines()
    section = None
    families_seen = set()
    written = set()

    def gap():
        # one blank line between settings, none right under a [section]
        if not out[-1].startswith("["):
            out.append("")

    def family_examples(sec):
        # a family with no member written (layer.N): show how to write one
        for k in keys:
            if k["section"] == sec and k["key"].endswith(".N") and (sec, k["key"]) not in families_seen:
                gap()
                out.extend(comment("%s: %s (accepted: %s)" % (k["key"], k["help"], k["range"])))
                out.append(";%s =" % k["key"].replace(".N", ".0"))

    for line in effective.splitlines():
        if not line or line.startswith(";"):
            continue
        if line.startswith("["):
            if section:
                family_examples(section)
            section = line.strip("[]")
            out.append("")
            out.append(line)
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        fam = key.split(".")[0] + ".N" if "." in key else None
        k = doc.get((section, key)) or doc.get((section, fam))
        if k is None:
            sys.exit("gen_conffile: [%s] %s is not in the key table" % (section, key))
        if k["key"].endswith(".N"):
            if (section, k["key"]) not in families_seen:
                families_seen.add((section, k["key"]))
                gap()
                out.extend(comment("%s: %s (accepted: %s)" % (k["key"], k["help"], k["range"])))
        else:
            gap()
            out.extend(comment("%s (accepted: %s)" % (k["help"], k["range"])))
        if (section, key) in overrides:
            out.extend(comment("packaged value; the embedded default is \"%s\"" % value))
            value = overrides[(section, key)]
        written.add((section, key))
        out.append("%s =%s" % (key, " " + value if value else ""))
    if section:
        family_examples(section)
    missing = [k for k in overrides if k not in written]
    if missing:
        sys.exit("gen_conffile: --set for keys the writer did not print: %s" % missing)
    text = "\n".join(out) + "\n"
    for n, l in enumerate(text.splitlines(), 1):
        if len(l.encode()) > 197:
            sys.exit("gen_conffile: line %d is longer than the parser's 197 bytes" % n)

    tmp_out = a.out + ".tmp"
    with open(tmp_out, "w") as f:
        f.write(text)
    run([a.fanoctl, "config", "check", tmp_out])
    os.replace(tmp_out, a.out)


if __name__ == "__main__":
    main()
