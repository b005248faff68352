#!/usr/bin/env python3
"""SMTP clients for tests/integration/smtpd.sh, from Python's standard library.

    smtp_clients.py features HOST PORT
        EHLO, then the extensions the server announced, one per line
        (lower case keyword, then its argument if any).
    smtp_clients.py send HOST PORT FROM TO [--source ADDR] [--subject S]
                         [--mail-opt OPT]... [--rcpt-opt OPT]... [--body B]
                         [--timeout S]
        One message through smtplib; prints "CODE TEXT" of the answer to
        the end of data, or of the first refusal (of MAIL, RCPT or DATA).
        --timeout bounds each wait, the greeting's included (10 s).
    smtp_clients.py raw HOST PORT TEXT [--source ADDR]
        Sends TEXT (Python escapes: \\r, \\n, \\x00; "@FILE": the text
        of FILE, escapes and all) in one write, then
        prints every byte the server sends until it closes or is quiet
        for 1.5 s, with CRLF shown as LF; "[closed]" if it closed.
    smtp_clients.py burst HOST PORT SESSIONS IDS_FILE [--max N]
        SESSIONS threads, each sending messages on one connection as fast
        as it can, appending the queue id of each "250 ... queued as ID"
        to IDS_FILE (one line, flushed at once) until the connection
        fails or N messages (default 5000) are sent; prints the count.
"""

import argparse
import re
import smtplib
import socket
import sys
import threading
import time


def features(args):
    with smtplib.SMTP(args.host, args.port, timeout=10) as s:
        s.ehlo("client.test")
        for k in sorted(s.esmtp_features):
            v = s.esmtp_features[k]
            print(k if not v else "%s %s" % (k, v))
        s.quit()


def send(args):
    msg = "From: %s\r\nTo: %s\r\nSubject: %s\r\n\r\n%s\r\n" % (
        args.sender, args.to, args.subject, args.body)
    source = (args.source, 0) if args.source else None
    s = smtplib.SMTP(args.host, args.port, timeout=args.timeout,
                     source_address=source)
    try:
        s.ehlo("client.test")
        code, text = s.mail(args.sender, args.mail_opt)
        if code != 250:
            print(code, text.decode())
            return
        code, text = s.rcpt(args.to, args.rcpt_opt)
        if code not in (250, 251):
            print(code, text.decode())
            return
        code, text = s.data(msg.encode())
        print(code, text.decode())
    finally:
        try:
            s.quit()
        except smtplib.SMTPException:
            pass


def raw(args):
    text = args.text
    if text.startswith("@"):
        with open(text[1:]) as f:
            text = f.read()
    data = text.encode().decode("unicode_escape").encode("latin-1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if args.source:
        sock.bind((args.source, 0))
    sock.connect((args.host, args.port))
    sock.settimeout(1.5)
    out = b""
    try:
        out += sock.recv(65536)  # the greeting, before anything is sent
        sock.sendall(data)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                out += b"[closed]\n"
                break
            out += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        out += b"[reset]\n"
    sock.close()
    sys.stdout.write(out.decode("latin-1").replace("\r\n", "\n"))


def burst(args):
    lock = threading.Lock()
    count = [0]
    ids = open(args.ids_file, "a")
    queued = re.compile(rb"queued as ([0-9A-Z]+)")

    def one(n):
        try:
            s = smtplib.SMTP(args.host, args.port, timeout=10)
            s.ehlo("burst%d.test" % n)
            for i in range(args.max):
                body = ("Subject: burst %d.%d\r\n\r\n" % (n, i)) + "x" * 2000
                s.mail("burst@client.test")
                s.rcpt("r%d.%d@far.test" % (n, i))
                code, text = s.data(body.encode())
                m = queued.search(text)
                if code != 250 or not m:
                    return
                with lock:
                    ids.write(m.group(1).decode() + "\n")
                    ids.flush()
                    count[0] += 1
        except (OSError, smtplib.SMTPException):
            return

    threads = [threading.Thread(target=one, args=(n,))
               for n in range(args.sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids.close()
    print(count[0])


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("features")
    f.add_argument("host")
    f.add_argument("port", type=int)
    s = sub.add_parser("send")
    s.add_argument("host")
    s.add_argument("port", type=int)
    s.add_argument("sender")
    s.add_argument("to")
    s.add_argument("--source")
    s.add_argument("--subject", default="test")
    s.add_argument("--body", default="body")
    s.add_argument("--mail-opt", action="append", default=[])
    s.add_argument("--rcpt-opt", action="append", default=[])
    s.add_argument("--timeout", type=float, default=10.0)
    r = sub.add_parser("raw")
    r.add_argument("host")
    r.add_argument("port", type=int)
    r.add_argument("text")
    r.add_argument("--source")
    b = sub.add_parser("burst")
    b.add_argument("host")
    b.add_argument("port", type=int)
    b.add_argument("sessions", type=int)
    b.add_argument("ids_file")
    b.add_argument("--max", type=int, default=5000)
    args = p.parse_args()
    {"features": features, "send": send, "raw": raw, "burst": burst}[
        args.cmd](args)


if __name__ == "__main__":
    main()
