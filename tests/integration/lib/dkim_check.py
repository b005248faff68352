#!/usr/bin/python3
"""DKIM checks with an independent verifier, dkimpy (Debian's python3-dkim,
for /usr/bin/python3), the public keys looked up in the test's DNS server.

    dkim_check.py send HOST PORT SOURCE FROM RCPT SUBJECT [BODY_BYTES]
        sends one message with smtplib from address SOURCE; the header
        fields are written the way a careless client writes them (runs of
        white space, a folded Subject:, trailing blanks), the body has
        tabs, runs of spaces and, with BODY_BYTES, lines up to that size.
        Prints the server's reply to the end of data.
    dkim_check.py verify FILE DNSPORT [MANGLE [INDEX]]
        verifies the message in FILE (an aiosmtpd_receiver.py file: the
        content after its first empty line), its signature number INDEX
        (0, the first, by default), and prints "pass" or "fail",
        then tags of its DKIM-Signature, "a=... c=... d=... s=...". MANGLE
        changes the message first, as receivers and relays do:
          refold   header fields unfolded and folded again elsewhere,
                   white space runs in header fields and in the body
                   changed, trailing blanks added to body lines, empty
                   lines added at the end of the body (relaxed survives)
          body     one word of the body changed (nothing survives)
          from     a second From: field added on top (oversigning)
          none     nothing changed
"""

import re
import smtplib
import sys

import dkim
import dns.resolver


def send(host, port, source, sender, rcpt, subject, size=0):
    head = ("From:   Joe  Sender <%s>\r\n"
            "To: <%s>\r\n"
            "Subject:  %s,\r\n\t folded   with  runs \r\n"
            "Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n"
            "Message-ID: <%s.%s@test>\r\n"
            "MIME-Version: 1.0\r\n"
            "Content-Type: text/plain; charset=us-ascii\r\n"
            "X-Not-Signed: anything\r\n"
            "\r\n" % (sender, rcpt, subject, subject, port))
    body = "Hello  there,\tfriend. \r\n\r\n  indented line\r\n"
    line = 0
    while len(body) < size:
        body += "line %d: %s\r\n" % (line, "x y  z\t" * 10)
        line += 1
    body += "-- \r\nend\r\n"
    with smtplib.SMTP(host, int(port), source_address=(source, 0),
                      timeout=60) as s:
        s.ehlo("client.test")
        s.mail(sender)
        s.rcpt(rcpt)
        code, text = s.data((head + body).encode())
        print(code, text.decode())


def dnsfunc_for(port):
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers = ["127.0.0.1"]
    resolver.port = int(port)

    def dnsfunc(name, timeout=5):
        name = name.decode() if isinstance(name, bytes) else name
        answer = resolver.resolve(name, "TXT", lifetime=timeout)
        return b"".join(b"".join(r.strings) for r in answer)
    return dnsfunc


def mangle(msg, how):
    head, _, body = msg.partition(b"\r\n\r\n")
    if how == "refold":
        fields = re.split(b"\r\n(?![ \t])", head)
        out = []
        for f in fields:
            if f.lower().startswith(b"dkim-signature"):
                out.append(f)
                continue
            f = re.sub(b"\r\n[ \t]+", b" ", f)        # unfolded
            f = re.sub(b"[ \t]+", b"  \t ", f)         # runs changed
            if len(f) > 30:                           # folded again
                cut = f.rfind(b" ", 0, 30)
                if cut > f.find(b":"):
                    f = f[:cut] + b"\r\n\t" + f[cut:]
            out.append(f + b"  ")                     # trailing blanks
        head = b"\r\n".join(out)
        lines = body.split(b"\r\n")
        lines = [re.sub(b"[ \t]+", b" \t  ", l) + b" \t" for l in lines]
        body = b"\r\n".join(lines) + b"\r\n\r\n  \r\n\r\n"
    elif how == "body":
        body = body.replace(b"friend", b"fiend", 1)
    elif how == "from":
        head = b"From: mallory@evil.test\r\n" + head
    return head + b"\r\n\r\n" + body


def verify(path, port, how=None, idx=0):
    with open(path, "rb") as f:
        content = f.read().split(b"\n\n", 1)[1]
    if how and how != "none":
        content = mangle(content, how)
    try:  # dkim.verify() returns False on these; DKIM.verify() raises
        ok = dkim.DKIM(content).verify(idx=idx, dnsfunc=dnsfunc_for(port))
    except dkim.DKIMException:
        ok = False
    tags = ""
    fields = re.findall(rb"^DKIM-Signature:(.*?)\r\n(?![ \t])", content,
                        re.S | re.M | re.I)
    if len(fields) > idx:
        t = dict(re.findall(rb"([a-z]+)=([^;]*)",
                            re.sub(rb"\s+", b"", fields[idx])))
        tags = " ".join("%s=%s" % (k, t.get(k.encode(), b"").decode())
                        for k in ("a", "c", "d", "s"))
    print("pass" if ok else "fail", tags)


def main():
    if sys.argv[1] == "send":
        send(*sys.argv[2:8], size=int(sys.argv[8]) if len(sys.argv) > 8
             else 0)
    elif sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3],
               sys.argv[4] if len(sys.argv) > 4 else None,
               int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
