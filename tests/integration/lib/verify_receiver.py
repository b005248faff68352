#!/usr/bin/python3
"""A strict receiver for address verification tests: aiosmtpd (an
independently written server) that records what probes do to it.

    /usr/bin/python3 verify_receiver.py DIR PORT [RCPT_DELAY]

Listens on 127.0.0.1:PORT. RCPT TO a local part starting with "bad" is
"550 5.1.1 <A>: Recipient address rejected: User unknown"; any other is
accepted ("250 OK"), after RCPT_DELAY seconds (default 0) when the local
part starts with "slow". Every MAIL, RCPT, DATA, RSET and QUIT is
appended to DIR/commands as "VERB ARG"; DIR/stats holds "open=N max=M
conns=K" (connections open now, the most open at once, all so far).
DIR/ready appears once it listens; it stops on SIGTERM. Debian's
python3-aiosmtpd is installed for /usr/bin/python3.
"""

import asyncio
import os
import signal
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP

DIR = sys.argv[1]
PORT = int(sys.argv[2])
DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
LOCK = threading.Lock()
STATS = {"open": 0, "max": 0, "conns": 0}


def note(line):
    with LOCK:
        with open(os.path.join(DIR, "commands"), "a") as f:
            f.write(line + "\n")


def write_stats():
    path = os.path.join(DIR, "stats")
    with open(path + ".tmp", "w") as f:
        f.write("open=%(open)d max=%(max)d conns=%(conns)d\n" % STATS)
    os.rename(path + ".tmp", path)


class Handler:
    async def handle_RCPT(self, server, session, envelope, address, options):
        local = address.split("@")[0]
        if local.startswith("bad"):
            return ("550 5.1.1 <%s>: Recipient address rejected: User "
                    "unknown" % address)
        if local.startswith("slow") and DELAY > 0:
            await asyncio.sleep(DELAY)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        return "250 2.0.0 Ok"


class Recording(SMTP):
    def connection_made(self, transport):
        with LOCK:
            STATS["open"] += 1
            STATS["conns"] += 1
            STATS["max"] = max(STATS["max"], STATS["open"])
            write_stats()
        super().connection_made(transport)

    def connection_lost(self, exc):
        with LOCK:
            STATS["open"] -= 1
            write_stats()
        super().connection_lost(exc)

    async def smtp_MAIL(self, arg):
        note("MAIL " + (arg or ""))
        await super().smtp_MAIL(arg)

    async def smtp_RCPT(self, arg):
        note("RCPT " + (arg or ""))
        await super().smtp_RCPT(arg)

    async def smtp_DATA(self, arg):
        note("DATA")
        await super().smtp_DATA(arg)

    async def smtp_RSET(self, arg):
        note("RSET")
        await super().smtp_RSET(arg)

    async def smtp_QUIT(self, arg):
        note("QUIT")
        await super().smtp_QUIT(arg)


class RecordingController(Controller):
    def factory(self):
        return Recording(self.handler, **self.SMTP_kwargs)


def main():
    os.makedirs(DIR, exist_ok=True)
    write_stats()
    controller = RecordingController(Handler(), hostname="127.0.0.1",
                                     port=PORT,
                                     server_hostname="receiver.test")
    controller.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    open(os.path.join(DIR, "ready"), "w").close()
    while not stop.wait(0.2):
        pass
    controller.stop()


if __name__ == "__main__":
    main()
