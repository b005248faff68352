"""dsn_summary.py - what a delivery status notification says, for tests.

Usage:
    python3 tests/integration/lib/dsn_summary.py FILE

FILE is a message as Postfix's smtp-sink saves it with -d (its own
X-Mail-Args / X-Rcpt-Args lines first, then the message). It is parsed
with Python's standard email package (compat32), which takes a
message/delivery-status part apart into its blocks, and summarised one
fact a line, so that a shell test can compare exact lines:

    mail_from: <>                     the envelope sender (X-Mail-Args)
    rcpt_args: <a@b> NOTIFY=NEVER     the envelope recipient (X-Rcpt-Args)
    subject: ...
    content_type: multipart/report; report-type=delivery-status
    parts: text/plain message/delivery-status message/rfc822
    defects: 0                        parse defects, all parts together
    text_recipients: a@b c@d          the <address> lines of the text part
    per_message_order: NAME NAME ...  field names, in their order
    per_message: NAME: VALUE          one line per per-message field
    recipient: NAME: VALUE | ...      one line per recipient block, its
                                      fields in order; Will-Retry-Until
                                      is shown as arrival+Ns (N seconds
                                      after Arrival-Date)
    returned_subject: ...             the returned message's Subject
    returned_body: ...                its first body line, "" if none

Only the standard library is used.
"""

import email
import email.utils
import sys


def unfold(value):
    return " ".join(str(value).split())


def when(value):
    return email.utils.mktime_tz(email.utils.parsedate_tz(value))


def main(path):
    with open(path, "rb") as f:
        msg = email.message_from_bytes(f.read())
    out = []
    out.append("mail_from: %s" % unfold(msg.get("X-Mail-Args", "")))
    out.append("rcpt_args: %s" % unfold(msg.get("X-Rcpt-Args", "")))
    out.append("subject: %s" % unfold(msg.get("Subject", "")))
    ctype = msg.get_content_type()
    out.append(
        "content_type: %s; report-type=%s"
        % (ctype, msg.get_param("report-type", ""))
    )
    parts = msg.get_payload() if msg.is_multipart() else []
    out.append("parts: %s" % " ".join(p.get_content_type() for p in parts))
    out.append("defects: %d" % sum(len(p.defects) for p in msg.walk()))
    arrival = None
    for part in parts:
        kind = part.get_content_type()
        if kind == "text/plain":
            found = []
            for line in part.get_payload().splitlines():
                if line.startswith("<") and ">:" in line:
                    found.append(line[1 : line.index(">:")])
            out.append("text_recipients: %s" % " ".join(found))
        elif kind == "message/delivery-status":
            blocks = part.get_payload()
            head = blocks[0] if blocks else {}
            out.append("per_message_order: %s" % " ".join(head.keys()))
            for name, value in head.items():
                out.append("per_message: %s: %s" % (name, unfold(value)))
                if name.lower() == "arrival-date":
                    arrival = when(value)
            for block in blocks[1:]:
                fields = []
                for name, value in block.items():
                    value = unfold(value)
                    if name.lower() == "will-retry-until" and arrival:
                        value = "arrival+%ds" % (when(value) - arrival)
                    fields.append("%s: %s" % (name, value))
                out.append("recipient: %s" % " | ".join(fields))
        elif kind in ("message/rfc822", "text/rfc822-headers"):
            if kind == "message/rfc822":
                inner = part.get_payload(0)
            else:
                inner = email.message_from_string(part.get_payload())
            body = inner.get_payload().strip().splitlines() or [""]
            subject = unfold(inner.get("Subject", ""))
            out.append("returned_subject: %s" % subject)
            out.append("returned_body: %s" % body[0])
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
