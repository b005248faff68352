#!/usr/bin/python3
"""Check the messages the injection API built from a structured content,
as aiosmtpd_receiver.py stored them, with Python's email package.

    /usr/bin/python3 inject_mime_check.py FILE...

Each file is parsed with policy.strict (a defect raises) and again with
policy.default, where every part's and every header's defects must be
none. Prints one line per file, sorted by recipient: the recipient, then
what was found, for the test to compare:
  RCPT | STRUCTURE | Subject | From | To | Reply-To | X-Campaign |
  text | html | attachments (type:file name:bytes:cid) | ok/problems
"""

import email
import email.policy
import hashlib
import sys


def structure(part):
    if part.is_multipart():
        return "%s(%s)" % (part.get_content_type(),
                           ",".join(structure(p) for p in part.iter_parts()))
    return part.get_content_type()


def defects(msg):
    found = []
    for part in msg.walk():
        found += [repr(d) for d in part.defects]
        for name, value in part.items():
            found += ["%s: %r" % (name, d) for d in getattr(value, "defects", ())]
    return found


def raw_problems(raw):
    body = raw.split(b"\n\n", 1)[1]  # past the receiver's envelope lines
    problems = []
    for i, line in enumerate(body.split(b"\r\n")):
        if len(line) > 998:
            problems.append("line %d has %d bytes" % (i, len(line)))
        if b"\n" in line or b"\r" in line:
            problems.append("line %d: a bare CR or LF" % i)
    if not body.endswith(b"\r\n"):
        problems.append("no CRLF at the end")
    return body, problems


def crlf(text):
    """Texts as their line ends were given (LF), shown on one line."""
    return text.replace("\r\n", "\n").replace("\n", "\\n")


def one(path):
    raw = open(path, "rb").read()
    rcpt = [l for l in raw.split(b"\n\n", 1)[0].split(b"\n")
            if l.startswith(b"to: ")][0][4:].decode()
    body, problems = raw_problems(raw)
    try:
        email.message_from_bytes(body, policy=email.policy.strict)
    except Exception as e:  # a defect, raised
        problems.append("strict: %r" % e)
    msg = email.message_from_bytes(body, policy=email.policy.default)
    problems += defects(msg)
    for need in ("Date", "Message-ID", "MIME-Version"):
        if msg[need] is None:
            problems.append("no " + need)
    text = html = ""
    atts = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        if part.get_content_disposition() in ("attachment", "inline"):
            data = part.get_content()
            if isinstance(data, str):
                data = data.encode()
            atts.append("%s:%s:%s:%s" % (part.get_content_type(),
                                         part.get_filename(),
                                         hashlib.sha256(data).hexdigest()[:12],
                                         part["Content-ID"]))
        elif part.get_content_type() == "text/plain":
            text = part.get_content()
        elif part.get_content_type() == "text/html":
            html = part.get_content()
    fields = [rcpt, structure(msg), str(msg["Subject"]), str(msg["From"]),
              str(msg["To"]), str(msg["Reply-To"]), str(msg["X-Campaign"]),
              crlf(text), crlf(html),
              " ".join(atts), "; ".join(problems) or "ok"]
    return " | ".join(fields)


for line in sorted(one(p) for p in sys.argv[1:]):
    print(line)
