#!/usr/bin/python3
"""tlsrpt_check.py MAILDIR [POSTDIR] - what TLS reports (RFC 8460) arrived.

MAILDIR holds the messages tls_receiver.py stored (NNNN.eml: its own
lines, a blank line, the message); POSTDIR the POSTs sts_peer.py kept
(NNNN.body, NNNN.type). Each report message is checked against section
5.3 (multipart/report with report-type "tlsrpt", a text/plain part, the
report as application/tlsrpt+gzip in base64, the Subject "Report Domain:
D Submitter: S Report-ID: <ID>", TLS-Report-Domain and
TLS-Report-Submitter) and section 5.1 (the gzip'd JSON and its file
name); each POST against section 5.4 (Content-Type
application/tlsrpt+gzip, the same JSON as the message of its
report-id). It prints, sorted:

    mail: ok | mail: BAD why          (one line per message)
    post: ok | post: BAD why          (one line per POST)
    DOMAIN TYPE success=N failure=M results=R1,R2   (summed over reports)
    sending-mta-ip DOMAIN IP          (each distinct one of its failures)
"""
import email
import email.policy
import gzip
import json
import os
import re
import sys

out = []
reports = {}  # report-id: the JSON text, from the mails
counts = {}
sending = set()


def check_report(doc):
    for key in ("organization-name", "date-range", "contact-info",
                "report-id", "policies"):
        if key not in doc:
            return "no %s" % key
    for d in ("start-datetime", "end-datetime"):
        if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$",
                        doc["date-range"][d]):
            return "bad %s" % d
    for p in doc["policies"]:
        pol = p["policy"]
        key = (pol["policy-domain"], pol["policy-type"])
        c = counts.setdefault(key, [0, 0, set()])
        c[0] += p["summary"]["total-successful-session-count"]
        c[1] += p["summary"]["total-failure-session-count"]
        for f in p.get("failure-details", []):
            c[2].add(f["result-type"])
            if "sending-mta-ip" in f:
                sending.add((pol["policy-domain"], f["sending-mta-ip"]))
            if "failed-session-count" not in f:
                return "a failure without its count"
    return None


def mail(path):
    with open(path, "rb") as f:
        raw = f.read()
    _, _, body = raw.partition(b"\n\n")  # the receiver's lines first
    msg = email.message_from_bytes(body, policy=email.policy.default)
    if msg.get_content_type() != "multipart/report" or \
            msg.get_param("report-type") != "tlsrpt":
        return "not multipart/report; report-type=tlsrpt"
    m = re.match(r"^Report Domain: (\S+) Submitter: (\S+) "
                 r"Report-ID: <([^>]+)>$", str(msg["Subject"]))
    if not m:
        return "Subject %r" % msg["Subject"]
    if msg["TLS-Report-Domain"] != m.group(1) or \
            msg["TLS-Report-Submitter"] != m.group(2):
        return "TLS-Report-Domain or TLS-Report-Submitter"
    parts = [p.get_content_type() for p in msg.iter_parts()]
    if parts != ["text/plain", "application/tlsrpt+gzip"]:
        return "parts %s" % parts
    part = list(msg.iter_parts())[1]
    if part["Content-Transfer-Encoding"] != "base64":
        return "not base64"
    name = part.get_filename() or ""
    if not re.match(r"^[^!]+!%s!\d+!\d+!.+\.json\.gz$" % re.escape(m.group(1)),
                    name):
        return "file name %r" % name
    text = gzip.decompress(part.get_content()).decode()
    doc = json.loads(text)
    if doc["report-id"] != m.group(3):
        return "report-id differs from the Subject's"
    for p in doc["policies"]:
        if p["policy"]["policy-domain"] != m.group(1):
            return "a policy of another domain"
    reports[doc["report-id"]] = text
    return check_report(doc)


def post(base):
    with open(base + ".type") as f:
        ctype = f.read().strip()
    if ctype != "application/tlsrpt+gzip":
        return "Content-Type %r" % ctype
    with open(base + ".body", "rb") as f:
        text = gzip.decompress(f.read()).decode()
    doc = json.loads(text)
    if reports.get(doc["report-id"]) != text:
        return "not the JSON of the mail of report %s" % doc["report-id"]
    return None


def main():
    maildir = sys.argv[1]
    for name in sorted(os.listdir(maildir)):
        if name.endswith(".eml"):
            why = mail(os.path.join(maildir, name))
            out.append("mail: " + ("BAD " + why if why else "ok"))
    if len(sys.argv) > 2 and os.path.isdir(sys.argv[2]):
        for name in sorted(os.listdir(sys.argv[2])):
            if name.endswith(".body"):
                why = post(os.path.join(sys.argv[2], name[:-5]))
                out.append("post: " + ("BAD " + why if why else "ok"))
    for (domain, kind), c in counts.items():
        out.append("%s %s success=%d failure=%d results=%s" %
                   (domain, kind, c[0], c[1], ",".join(sorted(c[2]))))
    for domain, ip in sending:
        out.append("sending-mta-ip %s %s" % (domain, ip))
    print("\n".join(sorted(out)))


main()
