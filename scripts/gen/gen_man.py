#!/usr/bin/env python3
"""gen_man.py - write fanogate's manual pages at build time from what the
programs themselves say, so no page is a hand-kept copy that can drift:

  ini   fanogate.ini(5): the sections and keys from the parser's key table
        (`fanoctl config keys --json`), the syntax and the cross-field rules
        from docs/config.md (its "Syntax" and "Cross-field rules" sections).
  help  a program's page (fanogate(8), fanoctl(8), fanofleet(1), ...): its
        --help text as OPTIONS, with a short description, files and see-also
        held in PAGES below.

Usage: gen_man.py ini --fanoctl PATH --config-md FILE --out FILE --version V
       gen_man.py help --name NAME --binary PATH --out FILE --version V
"""
import argparse
import json
import re
import subprocess
import sys

# Prose per page: what the program is, its files, related pages. The options
# themselves always come from the binary's --help.
PAGES = {
    "fanogate": {
        "section": "8",
        "summary": "jump-delivery appliance daemon",
        "synopsis": "fanogate [--config FILE] [--no-dataplane] [--dp-profile FILE] [--ready-fd N]",
        "description": [
            "fanogate collects the signed contributions of a distributed transformer-inference fleet "
            "for each (token, layer) slot, resolves the slot when its last expected contribution "
            "arrives, and delivers the resolved seed to the worker that runs the next layer. Every "
            "line starts in shadow mode: the fleet's canonical chain still runs, fanogate compares "
            "both results, writes each verdict to a hash-chained audit log and pages the on-call on "
            "divergence.",
            "The DPDK dataplane drives the NIC named by [dataplane] port through the drivers-config "
            "profile named by [dataplane] profile; the control plane serves TLS (WebSocket and HTTPS "
            "ingress), the operator socket used by fanoctl(8) and the metrics endpoint.",
            "Under systemd the unit fanogate.service runs it as Type=notify: READY=1 is sent once "
            "the listeners are bound, the dataplane runs and the process is confined. Logs go to "
            "standard error, one line per event; when standard error is the journal "
            "(JOURNAL_STREAM) each line carries its syslog priority, so journalctl -p warning "
            "shows divergences, demotions, alerts and failures.",
        ],
        "files": [
            ("@SYSCONFDIR@/fanogate/fanogate.ini", "the configuration, fanogate.ini(5)"),
            ("@SYSCONFDIR@/fanogate/drivers-config/", "operator's drivers-config profiles (searched first)"),
            ("@DATADIR@/fanogate/drivers-config/", "the packaged profiles (af_xdp, af_packet, memif, ...)"),
            ("/var/lib/fanogate/", "state: the audit log, the self-signed TLS pair of the default"),
            ("/run/fanogate/fanoctl.sock", "the operator socket"),
        ],
        "see_also": ["fanoctl(8)", "fanogate.ini(5)", "fanogate-dp(8)", "systemd.service(5)"],
    },
    "fanoctl": {
        "section": "8",
        "summary": "operator CLI of the fanogate appliance",
        "synopsis": "fanoctl [--socket PATH] COMMAND [ARGS...]",
        "description": [
            "fanoctl talks to a running fanogate(8) over its Unix operator socket (root, or a member "
            "of [operator] group) to show status, lines, slots, peers and counters, to enable, "
            "disable, shadow or force lines, and to reload the configuration. Every change is "
            "recorded in the audit log with the caller's uid. The offline commands (config check, "
            "config keys, audit verify, decode, counters) need no daemon.",
            "Each command prints its own help: fanoctl COMMAND --help.",
        ],
        "files": [
            ("/run/fanogate/fanoctl.sock", "the default operator socket ($FANOCTL_SOCKET overrides it)"),
            ("@SYSCONFDIR@/fanogate/fanogate.ini", "the configuration fanoctl config check reads"),
        ],
        "see_also": ["fanogate(8)", "fanogate.ini(5)"],
    },
    "fanogate-dp": {
        "section": "8",
        "summary": "the fanogate DPDK dataplane alone, without the control plane",
        "synopsis": "fanogate-dp [--config FILE] [--profile NAME|FILE] [--duration SEC]",
        "description": [
            "fanogate-dp starts the same DPDK dataplane as fanogate(8) from a configuration and a "
            "drivers-config profile, with no TLS, audit or operator socket: for bring-up of a NIC "
            "and for benchmarks. It writes a JSON report of the counters when it stops.",
        ],
        "files": [
            ("@DATADIR@/fanogate/drivers-config/", "the packaged profiles"),
        ],
        "see_also": ["fanogate(8)", "fanogate.ini(5)"],
    },
    "fanofleet": {
        "section": "1",
        "summary": "synthetic inference fleet that drives a fanogate appliance",
        "synopsis": "fanofleet [options]",
        "description": [
            "fanofleet emulates the fleet's workers and coordinator: it sends each token's "
            "contributions over UDP, WebSocket or HTTPS, canonical reports, and checks the resolved "
            "seeds it gets back; it also measures jump delivery latency. A test and benchmark tool, "
            "not for a production host.",
        ],
        "files": [],
        "see_also": ["fanogate(8)", "fanorelay(1)"],
    },
    "fanorelay": {
        "section": "1",
        "summary": "UDP relay that injects loss, duplication, reordering and delay",
        "synopsis": "fanorelay --listen HOST:PORT --server HOST:PORT [options]",
        "description": [
            "fanorelay sits between UDP clients and a server and injects faults per direction with "
            "a seeded random generator, so a faulty network can be replayed; with --check-acks it "
            "proves that every ACK of fanogate's fragmented profile covers only frames whose "
            "fragments all went through. A test tool.",
        ],
        "files": [],
        "see_also": ["fanofleet(1)", "fanogate(8)"],
    },
}


def esc(s):
    """Plain text to roff: backslashes, dashes, and a leading dot or quote."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def inline(md):
    """One line of markdown prose to roff: `code` bold, [text](link) text."""
    md = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", md)
    parts = md.split("`")
    out = []
    for i, p in enumerate(parts):
        out.append("\\fB" + esc(p) + "\\fR" if i % 2 else esc(p))
    line = "".join(out)
    if line.startswith(".") or line.startswith("'"):
        line = "\\&" + line
    return line


def md_section(path, title):
    """The body of '## title' in a markdown file, as a list of lines."""
    lines = open(path).read().splitlines()
    try:
        start = lines.index("## " + title) + 1
    except ValueError:
        sys.exit("gen_man: %s has no section '## %s'" % (path, title))
    body = []
    for l in lines[start:]:
        if l.startswith("## "):
            break
        body.append(l)
    return body


def md_to_roff(body):
    """Paragraphs, '- ' bullets (with indented continuations) and pipe tables."""
    out, para = [], []

    def flush():
        if para:
            out.append(".PP")
            out.extend(inline(p) for p in para)
            para.clear()

    i = 0
    while i < len(body):
        l = body[i]
        if not l.strip():
            flush()
            i += 1
        elif l.startswith("- "):
            flush()
            item = [l[2:]]
            i += 1
            while i < len(body) and body[i].startswith("  ") and not body[i].startswith("- "):
                item.append(body[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            out.extend(inline(p) for p in item)
        elif l.startswith("|"):
            flush()
            rows = []
            while i < len(body) and body[i].startswith("|"):
                cells = [c.strip() for c in body[i].strip().strip("|").split("|")]
                if not all(re.fullmatch(r"-+", c) for c in cells):
                    rows.append(cells)
                i += 1
            # a table as tagged paragraphs, the first column as the tag and
            # the header row, in bold, first
            for n, r in enumerate(rows):
                out.append(".TP")
                if n == 0:
                    out.append("\\fB" + esc(r[0]) + "\\fR")
                    out.append("\\fB" + esc("; ".join(r[1:])) + "\\fR")
                else:
                    out.append(inline(r[0]))
                    out.append(inline("; ".join(r[1:])))
        else:
            para.append(l.strip())
            i += 1
    flush()
    return out


def th(name, section, version):
    return ['.TH "%s" "%s" "" "fanogate %s" "fanogate"' % (name.upper(), section, version)]


def page_ini(a):
    keys = json.loads(subprocess.run([a.fanoctl, "config", "keys", "--json"], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout)
    out = th("fanogate.ini", "5", a.version)
    out += [".SH NAME", "fanogate.ini \\- configuration file of the fanogate appliance daemon",
            ".SH SYNOPSIS", esc(a.sysconfdir + "/fanogate/fanogate.ini"),
            ".SH DESCRIPTION",
            "fanogate(8) reads one INI file, given with \\fB\\-\\-config\\fR; without it the embedded "
            "default applies. Every key below may be left out and then has its default; the "
            "installed file lists every key with its default value.",
            ".PP",
            "Check a file before using it: \\fBfanogate \\-\\-check\\-config FILE\\fR or "
            "\\fBfanoctl config check FILE\\fR (the effective configuration, every key). A refusal "
            "names the file, the line and the reason.",
            ".SH SYNTAX"]
    out += md_to_roff(md_section(a.config_md, "Syntax"))
    out.append(".SH KEYS")
    section = None
    for k in keys:
        if k["section"] != section:
            section = k["section"]
            out += [".SS [%s]" % esc(section)]
        default = k["default"] if k["default"] else "(empty)"
        out += [".TP",
                "\\fB%s\\fR (%s, default \\fB%s\\fR)" % (esc(k["key"]), esc(k["type"]), esc(default)),
                esc(k["help"]) + ".",
                "Accepted: " + esc(k["range"]) + "."]
    out.append(".SH CROSS-FIELD RULES")
    out += md_to_roff(md_section(a.config_md, "Cross-field rules"))
    out += [".SH FILES", ".TP", esc(a.sysconfdir + "/fanogate/fanogate.ini"), "the configuration",
            ".TP", esc(a.docdir + "/config.md"), "the same keys with longer explanations",
            ".SH SEE ALSO", "fanogate(8), fanoctl(8)"]
    return out


def page_help(a):
    p = PAGES.get(a.name)
    if p is None:
        sys.exit("gen_man: no page text for %s" % a.name)
    r = subprocess.run([a.binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        sys.exit("gen_man: %s --help: exit %d" % (a.binary, r.returncode))

    def subst(s):
        return s.replace("@SYSCONFDIR@", a.sysconfdir).replace("@DATADIR@", a.datadir)

    out = th(a.name, p["section"], a.version)
    out += [".SH NAME", "%s \\- %s" % (esc(a.name), esc(p["summary"])),
            ".SH SYNOPSIS", esc(p["synopsis"]), ".SH DESCRIPTION"]
    for i, para in enumerate(p["description"]):
        if i:
            out.append(".PP")
        out.append(esc(para))
    out += [".SH OPTIONS", "The program's own \\fB\\-\\-help\\fR:", ".PP", ".nf", ".ft CR"]
    out += [esc(l) if l else "" for l in r.stdout.rstrip("\n").splitlines()]
    out += [".ft R", ".fi"]
    if p["files"]:
        out.append(".SH FILES")
        for path, what in p["files"]:
            out += [".TP", esc(subst(path)), esc(what)]
    out += [".SH SEE ALSO", esc(", ".join(p["see_also"]))]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["ini", "help"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--fanoctl")
    ap.add_argument("--config-md")
    ap.add_argument("--name")
    ap.add_argument("--binary")
    ap.add_argument("--sysconfdir", default="/etc")
    ap.add_argument("--datadir", default="/usr/share")
    ap.add_argument("--docdir", default="/usr/share/doc/fanogate")
    a = ap.parse_args()
    lines = page_ini(a) if a.mode == "ini" else page_help(a)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
