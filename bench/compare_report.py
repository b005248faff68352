#!/usr/bin/python3
"""compare_report.py - bench/compare's counts and its table

SYNOPSIS
    compare_report.py status SIDE_DIR
    compare_report.py table SIDE_DIR...

DESCRIPTION
    A side's directory holds the world (world: "DOMAIN KIND HOST ADDR
    PORT"),
    what was submitted (inject.log, from compare_inject.py) and what the
    receivers logged (recv-KIND.log, from compare_receivers.py); all
    times are CLOCK_MONOTONIC seconds.

    status prints one line, "live WANT GOT grey WANT GOT probes WANT
    GOT": the recipients submitted so far for the live bulk receivers
    (fast, slow, limit), for the greylisting ones, the probes, and how
    many of each the receivers accepted.

    table prints the comparison, one column per side (the directory's
    name is its heading: "postfix", "sluice-postfix", "sluice-finch"),
    the first side being the reference of every ratio column:

    probe latency p50, p99   from a probe's MAIL FROM at the MTA to its
                             acceptance at the probe receiver
                             (nearest-rank percentiles)
    sessions opened          connections the bulk receivers (fast, slow,
                             limit, grey) accepted, the limiters' 421s
                             included
    messages per connection  messages they accepted over those sessions
    421s at the limiter      sessions the limiters refused: deliveries
                             deferred at their first attempt
    drain time               from the first bulk message submitted (or
                             its release, a "release" line of inject.log,
                             with bench/compare --backlog) to the
                             last recipient accepted by the live bulk
                             receivers (mail for the dead and the last
                             greylisted retries excluded; those have their
                             own row)

    and more rows for the reasons behind them: how long the bulk
    submission took (the same pace for every side, or the MTA held it
    back), the greylisted mail's last acceptance, probes lost, the time
    sessions sat unused at the bulk receivers before they ended (a
    connection cached and not used), sessions that carried mail for more
    than one domain (a cache that serves a host's other domains), then
    per receiver kind the sessions, messages per connection and idle
    time, the 421s given while one of the limiter's sessions sat idle,
    and the 451s. A figure is marked "*" when the side did not finish
    (some mail or probe never arrived).
"""

import math
import os
import sys

LIVE = ("fast", "slow", "limit")
BULK = LIVE + ("grey",)


def events(path):
    """(time, event, domain, detail) of a log, [] if it is not there."""
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        f = line.split()
        if len(f) == 4:
            out.append((float(f[0]), f[1], f[2], f[3]))
    return out


class Side:
    def __init__(self, d):
        self.name = os.path.basename(d.rstrip("/"))
        self.kind = {r.split()[0]: r.split()[1] for r in open(os.path.join(d, "world"))}
        self.sent = events(os.path.join(d, "inject.log"))
        self.recv = {k: events(os.path.join(d, f"recv-{k}.log")) for k in BULK + ("probe",)}

    def want(self, kinds):
        return sum(int(n) for _, e, dom, n in self.sent
                   if e == "bulk" and self.kind[dom] in kinds)

    def got(self, kinds):
        return sum(int(n) for k in kinds for _, e, _, n in self.recv[k] if e == "msg")

    def count(self, kinds, what):
        return sum(1 for k in kinds for ev in self.recv[k] if ev[1] == what)

    def latencies(self):
        sent = {n: t for t, e, _, n in self.sent if e == "probe"}
        got = {}
        for t, e, _, n in self.recv["probe"]:
            if e == "probe" and n in sent:
                got.setdefault(n, t - sent[n])
        return sorted(got.values()), len(sent) - len(got)

    def idle(self, kinds):
        """Seconds sessions sat unused before their end, summed."""
        return sum(float(d.split(":")[1]) for k in kinds
                   for _, e, _, d in self.recv[k] if e == "close")

    def shared(self, kinds):
        """Sessions that carried mail for more than one domain."""
        return sum(1 for k in kinds for _, e, _, d in self.recv[k]
                   if e == "close" and int(d.split(":")[2]) > 1)

    def idle_421(self):
        """421s given while one of the limiter's sessions sat idle."""
        return sum(1 for _, e, _, d in self.recv["limit"]
                   if e == "421" and not d.startswith("idle=0/"))

    def last(self, kinds):
        """Seconds from the first bulk submission to the last acceptance."""
        times = [t for k in kinds for t, e, _, _ in self.recv[k] if e == "msg"]
        release = [t for t, e, _, _ in self.sent if e == "release"]
        first = release[0] if release else min(
            (t for t, e, _, _ in self.sent if e == "bulk"), default=None)
        return max(times) - first if times and first is not None else None

    def status(self):
        lat, _ = self.latencies()
        probes = sum(1 for ev in self.sent if ev[1] == "probe")
        return (f"live {self.want(LIVE)} {self.got(LIVE)} "
                f"grey {self.want(('grey',))} {self.got(('grey',))} "
                f"probes {probes} {len(lat)}")


def percentile(values, p):
    if not values:
        return None
    return values[max(0, math.ceil(p * len(values)) - 1)]


def rows(s):
    """(label, value, format) of one side's table."""
    lat, lost = s.latencies()
    live_done = s.got(LIVE) >= s.want(LIVE)
    grey_done = s.got(("grey",)) >= s.want(("grey",))
    opened = s.count(BULK, "open")
    msgs = sum(1 for k in BULK for ev in s.recv[k] if ev[1] == "msg")
    bulk = [t for t, e, _, _ in s.sent if e == "bulk"]
    out = [
        ("bulk submission took (s)", max(bulk) - min(bulk) if bulk else None, "%.2f", True),
        ("probe latency p50 (s)", percentile(lat, 0.5), "%.3f", lost == 0),
        ("probe latency p99 (s)", percentile(lat, 0.99), "%.3f", lost == 0),
        ("sessions opened to bulk receivers", opened, "%d", True),
        ("messages per connection", msgs / opened if opened else None, "%.2f", True),
        ("421s at the limiter (first-attempt deferrals)", s.count(("limit",), "421"), "%d", True),
        ("drain time, live bulk receivers (s)", s.last(LIVE), "%.2f", live_done),
        ("greylisted mail all accepted (s)", s.last(("grey",)), "%.2f", grey_done),
        ("probes lost", lost, "%d", True),
    ]
    out.append(("session time held idle at bulk receivers (s)", s.idle(BULK), "%.1f", True))
    out.append(("sessions that carried mail for 2+ domains", s.shared(BULK), "%d", True))
    for k in BULK:
        o = s.count((k,), "open")
        m = sum(1 for ev in s.recv[k] if ev[1] == "msg")
        out.append((f"  {k}: sessions", o, "%d", True))
        out.append((f"  {k}: messages per connection", m / o if o else None, "%.2f", True))
        out.append((f"  {k}: session time held idle (s)", s.idle((k,)), "%.1f", True))
    out.append(("  limit: 421s with an idle session there", s.idle_421(), "%d", True))
    out.append(("  grey: 451s", s.count(("grey",), "451"), "%d", True))
    return out


def fmt(value, form, done):
    if value is None:
        return "-"
    return (form % value) + ("" if done else "*")


def table(dirs):
    sides = [Side(d) for d in dirs]
    table_rows = [rows(s) for s in sides]
    head = ["", sides[0].name]
    for s in sides[1:]:
        head += [s.name, f"ratio {s.name}/{sides[0].name}"]
    lines = [head]
    for i, (label, ref, form, done) in enumerate(table_rows[0]):
        line = [label, fmt(ref, form, done)]
        for r in table_rows[1:]:
            _, v, _, d = r[i]
            ratio = "-" if v is None or not ref else "%.2f" % (v / ref)
            line += [fmt(v, form, d), ratio]
        lines.append(line)
    widths = [max(len(line[c]) for line in lines) for c in range(len(head))]
    for n, line in enumerate(lines):
        print("| " + " | ".join(
            line[c].ljust(widths[c]) if c == 0 else line[c].rjust(widths[c])
            for c in range(len(line))) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    if any(not d for r in table_rows for (_, _, _, d) in r):
        print("* that side did not finish: some mail or probes never arrived")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("status", "table"):
        sys.exit("usage: compare_report.py status SIDE_DIR | table SIDE_DIR...")
    if sys.argv[1] == "status":
        print(Side(sys.argv[2]).status())
    else:
        table(sys.argv[2:])
