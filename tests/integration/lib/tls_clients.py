#!/usr/bin/python3
"""tls_clients.py - scripted TLS clients for tests/integration/smtpd_tls.sh,
on Python's ssl module (a client independent of sluice's OpenSSL code).

  tls_clients.py inject PORT CA KIND  STARTTLS with a command in the same
        write (KIND rset: "STARTTLS\\r\\nRSET\\r\\n", mail: "STARTTLS\\r\\n
        MAIL FROM:<x@y.test>\\r\\n"), then the handshake; prints the reply
        to STARTTLS, then (rset) the first reply in TLS, to EHLO, or
        (mail) the reply to a MAIL sent in TLS without a new EHLO
  tls_clients.py again PORT CA        STARTTLS in TLS, and with an argument
  tls_clients.py held PORT CA GO      a session in TLS up to RCPT; then
        waits (10 s at most) for file GO, sends the message and prints
        the reply to its end
  tls_clients.py fingerprint PORT CA  the SHA-256 of the server's
        certificate after STARTTLS
  tls_clients.py silent PORT          STARTTLS, then nothing: prints
        "closed after N s" when the server closes (20 s at most)
  tls_clients.py garbage PORT         STARTTLS, then garbage instead of a
        ClientHello: prints "closed" when the server closes
  tls_clients.py crowd PORT N         N sessions at once, each STARTTLS and
        then half a TLS record; prints how many the server closed (20 s
        at most)
  tls_clients.py plain PORT           plain SMTP to a wrapper-mode port:
        prints "closed, no SMTP reply" when the server closes without one
Every socket has a timeout: nothing waits for ever.
"""
import hashlib
import os
import socket
import ssl
import sys
import time


def reply(f):
    """One reply, all its lines, as text."""
    lines = []
    while True:
        line = f.readline()
        if not line:
            lines.append("EOF")
            break
        lines.append(line.decode("latin-1").rstrip("\r\n"))
        if len(line) < 4 or line[3:4] != b"-":
            break
    return "\n".join(lines)


def plain(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    f = s.makefile("rb")
    reply(f)
    s.sendall(b"EHLO client.test\r\n")
    reply(f)
    return s, f


def starttls(port, ca, extra=b""):
    s, f = plain(port)
    s.sendall(b"STARTTLS\r\n" + extra)
    r = reply(f)
    ctx = ssl.create_default_context(cafile=ca)
    t = ctx.wrap_socket(s, server_hostname="localhost")
    return r, t, t.makefile("rb")


def closed_within(s, seconds):
    s.settimeout(seconds)
    t0 = time.time()
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return time.time() - t0, data
            data += chunk
    except (socket.timeout, ConnectionResetError):
        return (time.time() - t0 if not isinstance(sys.exc_info()[1],
                socket.timeout) else None), data


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "inject":
        ca, kind = sys.argv[3], sys.argv[4]
        extra = b"RSET\r\n" if kind == "rset" else b"MAIL FROM:<x@y.test>\r\n"
        r, t, f = starttls(port, ca, extra)
        print(r)
        if kind == "rset":
            t.sendall(b"EHLO client.test\r\n")
        else:
            t.sendall(b"MAIL FROM:<a@client.test>\r\n")
        print(reply(f).split("\n")[0])
        t.sendall(b"QUIT\r\n")
        reply(f)
    elif cmd == "again":
        r, t, f = starttls(port, sys.argv[3])
        t.sendall(b"EHLO client.test\r\n")
        reply(f)
        t.sendall(b"STARTTLS\r\n")
        print(reply(f))
        t.sendall(b"STARTTLS now\r\n")
        print(reply(f))
        t.sendall(b"QUIT\r\n")
        reply(f)
    elif cmd == "held":
        ca, go = sys.argv[3], sys.argv[4]
        r, t, f = starttls(port, ca)
        for c in (b"EHLO client.test", b"MAIL FROM:<held@client.test>",
                  b"RCPT TO:<held@far.test>"):
            t.sendall(c + b"\r\n")
            reply(f)
        print("ready", flush=True)
        for _ in range(100):
            if os.path.exists(go):
                break
            time.sleep(0.1)
        t.sendall(b"DATA\r\n")
        reply(f)
        t.sendall(b"Subject: held\r\n\r\nheld over a reload\r\n.\r\n")
        print(reply(f).split(": queued")[0])
        t.sendall(b"QUIT\r\n")
        reply(f)
    elif cmd == "fingerprint":
        r, t, f = starttls(port, sys.argv[3])
        print(hashlib.sha256(t.getpeercert(binary_form=True)).hexdigest())
        t.sendall(b"QUIT\r\n")
        reply(f)
    elif cmd == "silent":
        s, f = plain(port)
        s.sendall(b"STARTTLS\r\n")
        reply(f)
        took, _ = closed_within(s, 20)
        print("closed after %d s" % round(took) if took is not None
              else "still open after 20 s")
    elif cmd == "garbage":
        s, f = plain(port)
        s.sendall(b"STARTTLS\r\n")
        reply(f)
        s.sendall(b"\x16\x09\x09 garbage, no ClientHello\r\n" * 4)
        took, _ = closed_within(s, 10)
        print("closed" if took is not None else "still open after 10 s")
    elif cmd == "crowd":
        socks = []
        for _ in range(int(sys.argv[3])):
            s, f = plain(port)
            s.sendall(b"STARTTLS\r\n")
            reply(f)
            s.sendall(b"\x16\x03\x01\x02")  # a record that never ends
            socks.append(s)
        print("open", flush=True)
        closed, t0 = 0, time.time()
        for s in socks:
            took, _ = closed_within(s, max(0.1, 20 - (time.time() - t0)))
            closed += took is not None
        print("%d closed" % closed)
    elif cmd == "plain":
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"EHLO client.test\r\n")
        took, data = closed_within(s, 10)
        if took is None:
            print("still open after 10 s")
        elif b"220" in data or b"250" in data:
            print("closed after an SMTP reply: %r" % data)
        else:
            print("closed, no SMTP reply")


if __name__ == "__main__":
    main()
