#!/usr/bin/python3
"""compare_inject.py - the sending side of bench/compare's world

SYNOPSIS
    compare_inject.py WORLD HOST:PORT LOG MESSAGES RCPTS SECONDS PROBE_SECONDS
        PROBE_EVERY

DESCRIPTION
    Submits the workload over SMTP to the MTA listening on HOST:PORT, the
    same for every MTA of a run:

    bulk    MESSAGES messages, evenly paced over SECONDS, each with RCPTS
            recipients of one domain (u<i>-<j>@<domain>, so that no two
            recipients are alike); the domains are every non-probe
            domain of WORLD (lines "DOMAIN KIND HOST ADDR PORT"), each getting
            the same share, in an order shuffled with a fixed seed (the
            same order for every MTA). Eight sessions submit them, each
            session reused for its share of the messages.
    probes  one single-recipient message to the probe domain every
            PROBE_EVERY seconds for PROBE_SECONDS from the start of the
            bulk (while it goes in and is delivered), each in a new
            session, its recipient probe-<n>@<probe domain> its id.

    The bulk sessions come from 127.0.6.201, the probes from 127.0.0.1.
    MESSAGES or PROBE_SECONDS may be 0 (no bulk, no probes). With
    HOST:PORT written "sendmail:COMMAND", the bulk goes instead through
    COMMAND -f SENDER RCPT... (the message on its standard input), one
    message after the other as fast as it goes, and there are no probes:
    bench/compare --backlog fills a stopped sluice's queue so.

    Every message is about 2 KB. LOG gets one line per message submitted,
    its first field the CLOCK_MONOTONIC seconds at which its transaction
    started (MAIL FROM; for a probe this is its injection time):
        T bulk DOMAIN NRCPT
        T probe DOMAIN probe-<n>
    A refused message is an error: the program says so and exits 1.
"""

import random
import smtplib
import subprocess
import sys
import threading
import time

SESSIONS = 8
BULK_SOURCE = "127.0.6.201"  # the bulk sessions' address (a Postfix HOLD can name it)
SENDER = "bulk@compare-bench.test"
BODY = "".join(f"{i:02d} {'x' * 75}\r\n" for i in range(26))


def message(rcpts, ident):
    return (f"From: <{SENDER}>\r\nTo: <{rcpts[0]}>\r\nSubject: {ident}\r\n"
            f"Message-Id: <{ident}@compare-bench.test>\r\n\r\n{BODY}")


class Log:
    def __init__(self, name):
        self.f = open(name, "a", buffering=1)
        self.lock = threading.Lock()

    def write(self, t, what, domain, detail):
        with self.lock:
            self.f.write(f"{t:.6f} {what} {domain} {detail}\n")


def plan(domains, count, rcpts):
    """The bulk messages: (domain, recipients), the same every run."""
    order = [domains[i % len(domains)] for i in range(count)]
    random.Random(19).shuffle(order)
    return [(d, [f"u{i}-{j}@{d}" for j in range(rcpts)]) for i, d in enumerate(order)]


def connect(host, port, source=None):
    s = smtplib.SMTP(host, port, local_hostname="client.compare-bench.test", timeout=120,
                     source_address=(source, 0) if source else None)
    s.ehlo()
    return s


def bulk_sendmail(command, log, jobs, errors):
    """The bulk through COMMAND -f SENDER RCPT..., one after the other."""
    for _, domain, rcpts in jobs:
        t = time.monotonic()
        r = subprocess.run([command, "-f", SENDER] + rcpts,
                           input=message(rcpts, rcpts[0].replace("@", ".")).encode(),
                           capture_output=True)
        if r.returncode != 0:
            errors.append(f"{command} for {rcpts[0]}: {r.stderr.decode().strip()}")
            return
        log.write(t, "bulk", domain, len(rcpts))


def bulk(host, port, log, jobs, errors):
    """One session's share: (due time, domain, recipients), in order."""
    if not jobs:
        return
    try:
        s = connect(host, port, BULK_SOURCE)
        for due, domain, rcpts in jobs:
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            t = time.monotonic()
            s.sendmail(SENDER, rcpts, message(rcpts, rcpts[0].replace("@", ".")))
            log.write(t, "bulk", domain, len(rcpts))
        s.quit()
    except (smtplib.SMTPException, OSError) as e:
        errors.append(f"bulk session: {e}")


def probes(host, port, log, domain, every, start, end, errors):
    n = 0
    due = start
    while due < end:
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        n += 1
        rcpt = f"probe-{n}@{domain}"
        try:
            s = connect(host, port)
            t = time.monotonic()
            s.sendmail(SENDER, [rcpt], message([rcpt], f"probe-{n}"))
            log.write(t, "probe", domain, f"probe-{n}")
            s.quit()
        except (smtplib.SMTPException, OSError) as e:
            errors.append(f"probe {n}: {e}")
            return
        due += every


def main(world, where, logname, count, rcpts, seconds, probe_seconds, every):
    host, port = where.rsplit(":", 1)
    count, rcpts = int(count), int(rcpts)
    seconds, probe_seconds, every = float(seconds), float(probe_seconds), float(every)
    rows = [line.split() for line in open(world)]
    domains = [r[0] for r in rows if r[1] != "probe"]
    probe = [r[0] for r in rows if r[1] == "probe"][0]
    log = Log(logname)
    errors = []
    start = time.monotonic() + 0.5
    jobs = [[] for _ in range(SESSIONS)]
    for i, (domain, to) in enumerate(plan(domains, count, rcpts)):
        jobs[i % SESSIONS].append((start + i * seconds / count, domain, to))
    if host == "sendmail":
        bulk_sendmail(port, log, sorted(sum(jobs, []), key=lambda j: j[0]), errors)
        threads = []
    else:
        port = int(port)
        threads = [threading.Thread(target=bulk, args=(host, port, log, j, errors))
                   for j in jobs]
        threads.append(threading.Thread(target=probes, args=(host, port, log, probe, every, start,
                                                             start + probe_seconds, errors)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("compare_inject: " + "; ".join(errors[:5]))


if __name__ == "__main__":
    if len(sys.argv) != 9:
        sys.exit("usage: compare_inject.py WORLD HOST:PORT LOG MESSAGES RCPTS SECONDS "
                 "PROBE_SECONDS PROBE_EVERY")
    main(*sys.argv[1:])
