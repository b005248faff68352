#!/usr/bin/env python3
"""mime_check.py make FILE | check ORIGINAL RECEIVED

make: writes a MIME message with 8-bit parts (declared 8bit, a nested
message/rfc822, a base64 part, a text part with a long line and
trailing white space) to FILE, LF line ends (sendmail's input).

check: RECEIVED is what a server without 8BITMIME got (an smtp-sink
dump: envelope lines first, then the message); it must be 7-bit only,
and every leaf part must decode to the same bytes as in ORIGINAL, with
the same content types. Prints "ok" or what differs."""
import email
import email.policy
import sys


def make(path):
    long_line = "\u00e9" * 60 + " end with space "
    msg = (
        "From: s@sluice.test\n"
        "To: r@sink.test\n"
        "Subject: mime conversion\n"
        "MIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="OUTER"\n'
        "Content-Transfer-Encoding: 8bit\n"
        "\n"
        "preamble\n"
        "--OUTER\n"
        "Content-Type: text/plain; charset=utf-8\n"
        "Content-Transfer-Encoding: 8bit\n"
        "\n"
        "caf\u00e9 = na\u00efve\n"
        + long_line + "\n"
        "--OUTER\n"
        "Content-Type: application/octet-stream\n"
        "Content-Transfer-Encoding: base64\n"
        "\n"
        "AAECAwQF\n"
        "--OUTER\n"
        "Content-Type: message/rfc822\n"
        "Content-Transfer-Encoding: 8bit\n"
        "\n"
        "Subject: inner\n"
        "MIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=iso-8859-1\n"
        "Content-Transfer-Encoding: 8bit\n"
        "\n"
    )
    data = msg.encode("utf-8") + "d\u00e9j\u00e0 vu\n".encode("latin-1") + \
        b"--OUTER--\n"
    with open(path, "wb") as f:
        f.write(data)


def leaves(m, out):
    if m.is_multipart():
        for p in m.get_payload():
            leaves(p, out)
    elif m.get_content_type() == "message/rfc822":
        for p in m.get_payload():
            leaves(p, out)
    else:
        out.append((m.get_content_type(), m.get_payload(decode=True)))
    return out


def check(original, received):
    # Line ends as LF on both sides: smtp-sink dumps with LF.
    orig = open(original, "rb").read()
    got = open(received, "rb").read().replace(b"\r\n", b"\n")
    bad = [b for b in got if b >= 0x80]
    if bad:
        print("8-bit bytes received: %d" % len(bad))
        return 1
    a = leaves(email.message_from_bytes(orig, policy=email.policy.compat32), [])
    b = leaves(email.message_from_bytes(got, policy=email.policy.compat32), [])
    if a != b:
        print("parts differ:\n%r\n%r" % (a, b))
        return 1
    print("ok")
    return 0


if sys.argv[1] == "make":
    make(sys.argv[2])
else:
    sys.exit(check(sys.argv[2], sys.argv[3]))
