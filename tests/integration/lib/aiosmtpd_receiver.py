#!/usr/bin/python3
"""A strict SMTP receiver for tests: aiosmtpd, an independently written
server that answers 501 to an empty or missing EHLO/HELO name and refuses
lines over 998 octets.

    /usr/bin/python3 aiosmtpd_receiver.py DIR PORT [smtputf8]

Listens on 127.0.0.1:PORT; each message accepted is written to
DIR/NNNN.eml as the lines "helo: NAME", "from: SENDER", "to: RCPT"
(one per recipient), "options: MAIL PARAMETERS" when MAIL had some,
"peer: PORT" (the client's port), a blank line, then the content as
received. With "smtputf8" it offers SMTPUTF8 (RFC 6531), which aiosmtpd
does only when told. A recipient whose local part starts with "grey" is
answered 450 at RCPT, as a greylisting server would; each such refusal
and each RSET is a line "PEER_PORT COMMAND" in DIR/events, so that a
test can tell which connection carried what. DIR/ready appears once it
listens. It stops on SIGTERM. Debian's python3-aiosmtpd
is installed for /usr/bin/python3, hence that interpreter.
"""

import os
import signal
import sys
import threading

from aiosmtpd.controller import Controller


class Recorder:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()

    def event(self, session, what):
        with self.lock:
            with open(os.path.join(self.directory, "events"), "a") as f:
                f.write("%d %s\n" % (session.peer[1], what))

    async def handle_RCPT(self, server, session, envelope, address, options):
        if address.split("@")[0].lower().startswith("grey"):
            self.event(session, "RCPT-450")
            return "450 4.7.1 <%s>: Recipient address rejected: greylisted" % address
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(options)
        return "250 OK"

    async def handle_RSET(self, server, session, envelope):
        self.event(session, "RSET")
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            n = self.count
        head = "helo: %s\nfrom: %s\n" % (session.host_name, envelope.mail_from)
        for rcpt in envelope.rcpt_tos:
            head += "to: %s\n" % rcpt
        if envelope.mail_options:
            head += "options: %s\n" % " ".join(envelope.mail_options)
        head += "peer: %d\n" % session.peer[1]
        path = os.path.join(self.directory, "%04d.eml" % n)
        with open(path + ".tmp", "wb") as f:
            f.write(head.encode() + b"\n" + envelope.original_content)
        os.rename(path + ".tmp", path)
        return "250 2.0.0 Ok: stored as %04d" % n


def main():
    directory, port = sys.argv[1], int(sys.argv[2])
    utf8 = len(sys.argv) > 3 and sys.argv[3] == "smtputf8"
    os.makedirs(directory, exist_ok=True)
    controller = Controller(Recorder(directory), hostname="127.0.0.1",
                            port=port, server_hostname="aiosmtpd.test",
                            enable_SMTPUTF8=utf8)
    controller.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    open(os.path.join(directory, "ready"), "w").close()
    while not stop.wait(1):
        pass
    controller.stop()


if __name__ == "__main__":
    main()
