#!/usr/bin/python3
"""compare_receivers.py - the receiving side of bench/compare's world

SYNOPSIS
    compare_receivers.py WORLD KIND LOG

DESCRIPTION
    Serves every receiving host of kind KIND that the file WORLD names
    (lines "DOMAIN KIND HOST ADDR PORT", written by bench/compare: HOST
    is the domain's MX host, at ADDR:PORT), until SIGTERM. Each host is
    one listener on its own loopback address, serving all the domains
    whose MX it is. The kinds:

    fast       answers at once
    slow       answers every command (the greeting too) 0.1 s late and
               the final dot 0.5 s late: a new session costs 0.2 s
    limit      at most 5 sessions at once per host (whichever domains
               they are for); the sixth gets "421 4.7.0 too
               many connections" at the greeting and is closed (the
               seed's experiment); the final dot is answered 0.25 s
               late, so that sessions overlap
    grey       a recipient is refused with 451 4.7.1 the first time its
               (client address, sender, recipient) triple is seen and
               accepted once the triple is at least 1 s old
    probe      answers at once; logs each probe's id (the recipient's
               local part, "probe-N") with the time it was accepted
    blackhole  listens with a backlog of 0 and never accepts: the first
               connection hangs without a greeting, the kernel drops the
               SYNs of later ones (the client's connect times out)

    Every receiver advertises PIPELINING and answers pipelined commands
    in order, as a real server does. LOG gets one line per event, its
    first field CLOCK_MONOTONIC seconds (comparable across processes and
    immune to the steps of the wall clock), then the event, the host and
    a detail:
        T open HOST -            a connection accepted
        T 421 HOST idle=I/N      ... and refused by a limiter, which had
                                 N sessions, I of them idle (waiting for
                                 the client's next command for 0.2 s or
                                 more: a connection kept for later)
        T 451 HOST RCPT          a recipient greylisted
        T msg HOST NRCPT         a message accepted with NRCPT recipients
        T probe HOST ID          a probe accepted (also logged as msg)
        T close HOST M:IDLE:D    a session ended (QUIT or the client
                                 closed), after M messages for D
                                 distinct recipient domains and IDLE
                                 seconds since its last reply: how long
                                 the client held it unused
    Lines are flushed as written: bench/compare counts them while the
    run is under way.
"""

import asyncio
import signal
import socket
import sys
import time

LIMIT = 5  # sessions a limiter serves at once
GREY_AGE = 1.0  # seconds before a greylisted triple is accepted


class Listener:
    def __init__(self, host, kind, log):
        self.host = host
        self.kind = kind
        self.log = log
        self.sessions = []  # per session: messages, last reply, waiting
        self.seen = {}  # greylisting: triple -> first time seen

    def event(self, what, detail="-"):
        self.log.write(f"{time.monotonic():.6f} {what} {self.host} {detail}\n")
        self.log.flush()

    async def delay(self, cmd):
        """The kind's answer delay for a command ("dot": the final dot)."""
        if self.kind == "slow":
            await asyncio.sleep(0.5 if cmd == "dot" else 0.1)
        elif self.kind == "limit" and cmd == "dot":
            await asyncio.sleep(0.25)

    def rcpt_ok(self, peer, sender, rcpt):
        if self.kind != "grey":
            return True
        key = (peer, sender, rcpt.lower())
        first = self.seen.setdefault(key, time.monotonic())
        return time.monotonic() - first >= GREY_AGE

    async def session(self, reader, writer):
        self.event("open")
        if self.kind == "limit" and len(self.sessions) >= LIMIT:
            now = time.monotonic()
            idle = sum(1 for x in self.sessions if x["waiting"] and now - x["last"] >= 0.2)
            self.event("421", f"idle={idle}/{len(self.sessions)}")
            writer.write(b"421 4.7.0 limit.test Error: too many connections\r\n")
            await close(writer)
            return
        sess = {"msgs": 0, "last": time.monotonic(), "waiting": False, "domains": set()}
        self.sessions.append(sess)
        try:
            await self.converse(reader, writer, sess)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self.sessions.remove(sess)
            idle = time.monotonic() - sess["last"]
            self.event("close", f"{sess['msgs']}:{idle:.3f}:{len(sess['domains'])}")
            await close(writer)

    async def reply(self, writer, cmd, text, sess):
        await self.delay(cmd)
        writer.write(text.encode() + b"\r\n")
        await writer.drain()
        sess["last"] = time.monotonic()

    async def converse(self, reader, writer, sess):
        peer = writer.get_extra_info("peername")[0]
        await self.reply(writer, "greeting", f"220 {self.host} ESMTP compare", sess)
        sender, rcpts = None, []
        while True:
            sess["waiting"] = True
            line = await reader.readline()
            sess["waiting"] = False
            if not line:
                return
            words = line.decode("latin-1").strip().split(None, 1)
            verb = words[0].upper() if words else ""
            arg = words[1] if len(words) > 1 else ""
            if verb == "EHLO":
                await self.reply(writer, verb, f"250-{self.host}\r\n250-PIPELINING\r\n"
                                 "250-8BITMIME\r\n250 SIZE 10240000", sess)
            elif verb == "HELO":
                await self.reply(writer, verb, f"250 {self.host}", sess)
            elif verb == "MAIL":
                sender, rcpts = address(arg), []
                await self.reply(writer, verb, "250 2.1.0 Ok", sess)
            elif verb == "RCPT":
                rcpt = address(arg)
                if sender is None:
                    await self.reply(writer, verb, "503 5.5.1 Error: need MAIL command", sess)
                elif self.rcpt_ok(peer, sender, rcpt):
                    rcpts.append(rcpt)
                    await self.reply(writer, verb, "250 2.1.5 Ok", sess)
                else:
                    self.event("451", rcpt)
                    await self.reply(writer, verb, "451 4.7.1 Greylisted, try again later", sess)
            elif verb == "DATA":
                if not rcpts:
                    await self.reply(writer, verb, "554 5.5.1 Error: no valid recipients", sess)
                    continue
                await self.reply(writer, verb, "354 End data with <CR><LF>.<CR><LF>", sess)
                while (body := await reader.readline()) not in (b".\r\n", b".\n"):
                    if not body:
                        return
                if self.kind == "probe":
                    for r in rcpts:
                        self.event("probe", r.split("@")[0])
                self.event("msg", str(len(rcpts)))
                sess["msgs"] += 1
                sess["domains"].update(r.rpartition("@")[2].lower() for r in rcpts)
                await self.reply(writer, "dot", "250 2.0.0 Ok: queued", sess)
                sender, rcpts = None, []
            elif verb == "RSET":
                sender, rcpts = None, []
                await self.reply(writer, verb, "250 2.0.0 Ok", sess)
            elif verb == "NOOP":
                await self.reply(writer, verb, "250 2.0.0 Ok", sess)
            elif verb == "QUIT":
                writer.write(b"221 2.0.0 Bye\r\n")
                return
            else:
                await self.reply(writer, verb, "502 5.5.2 Error: command not recognized", sess)


def address(arg):
    """The address of "FROM:<a> ..." or "TO:<a> ..."."""
    start, end = arg.find("<"), arg.find(">")
    return arg[start + 1:end] if 0 <= start < end else arg


async def close(writer):
    try:
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 2)
    except (ConnectionError, asyncio.TimeoutError, OSError):
        pass


async def main(world, kind, logname):
    log = open(logname, "a", buffering=1)
    servers, holes = [], []
    hosts = {}
    for line in open(world):
        _, k, host, addr, port = line.split()
        if k == kind:
            hosts[host] = (addr, port)
    for host, (addr, port) in hosts.items():
        if kind == "blackhole":
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, int(port)))
            s.listen(0)
            holes.append(s)
            continue
        lst = Listener(host, kind, log)
        servers.append(await asyncio.start_server(lst.session, addr, int(port),
                                                  backlog=256, reuse_address=True))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    log.write(f"{time.monotonic():.6f} ready {kind} -\n")
    log.flush()
    await stop.wait()
    for s in servers:
        s.close()
    for s in holes:
        s.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: compare_receivers.py WORLD KIND LOG")
    asyncio.run(main(*sys.argv[1:]))
