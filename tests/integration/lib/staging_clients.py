#!/usr/bin/env python3
"""Large messages at once, and their delivered copies, for smtpd_staging.sh.

    staging_clients.py make OUTDIR NAME SIZE
        Writes OUTDIR/NAME.eml: a message of about SIZE bytes, CRLF line
        ends, its first header "X-Staging-Test: NAME", a body of lines
        drawn from NAME (some begin with a dot, to be stuffed), the last
        "-- end of NAME", and no "%" (swaks would take it for a token).
    staging_clients.py send HOST PORT OUTDIR COUNT SIZE [--timeout S]
        COUNT threads, all connected before any sends, each sending one
        message made as above (NAME c0 ... cN-1) through smtplib at the
        same moment; prints "NAME CODE TEXT" for each, in order.
    staging_clients.py check SINKDIR OUTDIR
        For each OUTDIR/*.eml, finds the smtp-sink dump holding its
        "X-Staging-Test: NAME" line and compares what follows, byte for
        byte, with the message (smtp-sink writes LF line ends and a blank
        line after it, swaks adds a line end to a file that has one: line
        ends after the last line are not compared); prints "NAME ok" or
        "NAME REASON".
"""

import argparse
import os
import random
import smtplib
import sys
import threading


def make_message(outdir, name, size):
    rnd = random.Random(name)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
    lines = ["X-Staging-Test: %s" % name, "Subject: staged %s" % name, ""]
    total = sum(len(x) + 2 for x in lines)
    while total < size:
        n = rnd.randint(0, 76)
        line = "".join(rnd.choice(alphabet) for _ in range(n))
        if rnd.random() < 0.01:
            line = "." + line
        lines.append(line)
        total += len(line) + 2
    lines.append("-- end of %s" % name)
    data = ("\r\n".join(lines) + "\r\n").encode()
    with open(os.path.join(outdir, name + ".eml"), "wb") as f:
        f.write(data)
    return data


def cmd_make(args):
    make_message(args.outdir, args.name, args.size)


def cmd_send(args):
    names = ["c%d" % i for i in range(args.count)]
    msgs = [make_message(args.outdir, n, args.size) for n in names]
    results = [None] * args.count
    conns = []
    for _ in names:
        s = smtplib.SMTP(args.host, args.port, timeout=args.timeout)
        s.ehlo("client.test")
        conns.append(s)
    go = threading.Barrier(args.count)

    def one(i):
        s = conns[i]
        try:
            go.wait()
            code, text = s.mail("src@client.test")
            if code == 250:
                code, text = s.rcpt("dst@far.test")
            if code in (250, 251):
                code, text = s.data(msgs[i])
            results[i] = "%d %s" % (code, text.decode())
            s.quit()
        except Exception as e:  # a refusal or a cut: the result says
            results[i] = "error %s" % e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(args.count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, r in zip(names, results):
        print(n, r)


def cmd_check(args):
    dumps = []
    for f in sorted(os.listdir(args.sinkdir)):
        with open(os.path.join(args.sinkdir, f), "rb") as fh:
            dumps.append(fh.read())
    for f in sorted(os.listdir(args.outdir)):
        if not f.endswith(".eml"):
            continue
        name = f[:-4]
        with open(os.path.join(args.outdir, f), "rb") as fh:
            want = fh.read().replace(b"\r\n", b"\n")
        mark = ("X-Staging-Test: %s\n" % name).encode()
        found = [d for d in dumps if mark in d]
        if len(found) != 1:
            print(name, "delivered %d times" % len(found))
            continue
        got = found[0][found[0].index(mark):]
        if got.rstrip(b"\n") == want.rstrip(b"\n"):
            print(name, "ok")
        else:
            print(name, "differs: %d bytes delivered, %d sent" % (len(got), len(want)))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("outdir")
    m.add_argument("name")
    m.add_argument("size", type=int)
    s = sub.add_parser("send")
    s.add_argument("host")
    s.add_argument("port", type=int)
    s.add_argument("outdir")
    s.add_argument("count", type=int)
    s.add_argument("size", type=int)
    s.add_argument("--timeout", type=float, default=60)
    c = sub.add_parser("check")
    c.add_argument("sinkdir")
    c.add_argument("outdir")
    args = p.parse_args()
    {"make": cmd_make, "send": cmd_send, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
