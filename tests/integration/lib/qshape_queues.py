#!/usr/bin/env python3
"""qshape_queues.py SLUICE_MAILDROP POSTFIX_QUEUE_DIR NOW

The same messages twice: as sluice maildrop files (imported with "sluice
import") and as Postfix queue files in incoming/ and hold/ under
POSTFIX_QUEUE_DIR, as Postfix's qshape reads them (records: C sizes,
T arrival, S sender, R recipients, M content, X, E). Arrival times are
NOW minus each message's age, in whole seconds on both sides. Prints,
one per line, "hold" for each message meant to be held, in the order the
maildrop files are named, so that the test can hold the same ones in
sluice. Used by qshape.sh.
"""
import os
import sys

# (age in seconds, sender, recipients, held)
MESSAGES = [
    (60, "s@snd.test", ["a@x.test", "b@x.test"], False),
    (250, "s@snd.test", ["c@x.test", "d@Y.Test"], False),
    (450, "", ["e@x.test"], False),
    (800, "t@other.test", ["f@y.test", "g@z.test", "h@x.test"], False),
    (2000, "s@snd.test", ["i@z.test"], False),
    (4200, "s@snd.test",
     ["j@a-rather-long-subdomain-name.of.an-example-provider.test"], False),
    (9000, "u@snd.test", ["k@x.test"], False),
    (18000, "", ["l@y.test", "m@y.test"], False),
    (30000, "s@snd.test", ["n@z.test"], False),
    (60000, "s@snd.test", ["o@x.test"], True),
    (180000, "v@snd.test", ["p@x.test", "q@w.test"], True),
    (400000, "s@snd.test", ["r@w.test"], False),
]


def value(v):
    out = ""
    for ch in v.encode():
        if 0x20 < ch < 0x7F and ch != ord("%"):
            out += chr(ch)
        else:
            out += "%%%02X" % ch
    return out


def maildrop(path, arrival, sender, rcpts):
    body = b"Subject: qshape\n\nhi\n"
    lines = ["sluice-maildrop 1", "uid %d" % os.getuid(),
             "arrival %d" % (arrival * 1000000), "sender " + value(sender),
             "rcpts %d" % len(rcpts)]
    for r in rcpts:
        lines.append("rcpt " + value(r))
    lines.append("body %d" % len(body))
    with open(path, "wb") as f:
        f.write(("\n".join(lines) + "\n").encode() + body + b"end\n")


def record(kind, data):
    n = len(data)
    out = kind.encode()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            out += bytes([b])
            break
    return out + data


def postfix(path, arrival, sender, rcpts):
    content = record("N", b"Subject: qshape") + record("N", b"") + \
        record("N", b"hi")
    sizes = b"%15d %15d %15d %15d %15d" % (len(content), 0, len(rcpts), 0, 0)
    data = record("C", sizes) + record("T", b"%d 0" % arrival)
    data += record("S", sender.encode())
    for r in rcpts:
        data += record("R", r.encode())
    data += record("M", b"") + content + record("X", b"") + record("E", b"")
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o700)


def main():
    drop, pfq, now = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for sub in ("incoming", "active", "hold", "deferred"):
        os.makedirs(os.path.join(pfq, sub), exist_ok=True)
    for i, (age, sender, rcpts, held) in enumerate(MESSAGES):
        arrival = now - age
        maildrop(os.path.join(drop, "m%02d" % i), arrival, sender, rcpts)
        postfix(os.path.join(pfq, "hold" if held else "incoming",
                             "ABCDEF%02d" % i), arrival, sender, rcpts)
        print("hold" if held else "keep")


main()
