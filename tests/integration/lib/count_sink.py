"""count_sink.py - a counting SMTP receiver for sluice's integration tests.

Usage:
    python3 tests/integration/lib/count_sink.py --stats FILE [options] PORT...

Listens on 127.0.0.1:PORT (or --listen's address) for every PORT given
and speaks just enough
ESMTP for sluice's client: the 220 greeting, EHLO (PIPELINING, 8BITMIME,
SIZE) or HELO, MAIL, RCPT, DATA with a dot-terminated body, RSET, NOOP,
QUIT. Pipelined commands are answered one by one, in the order they sit
in the input. Every message is accepted; nothing is stored but counts.

Options:
    --stats FILE        where the counts go, one line per port:
                            port=P open=N max_open=N busy=N max_busy=N
                            connections=N messages=N idle_closes=N
                            max_open_all=N
                        open: connections open now; busy: connections in a
                        transaction (MAIL to the end-of-data reply) now;
                        max_*: the most ever seen at once; connections:
                        accepted in all; idle_closes: connections this
                        receiver closed because they were idle;
                        max_open_all: the most connections held at once
                        by the client over all the ports (from the accept
                        to the client's QUIT or close: a connection the
                        client has said QUIT on is no longer its). The file is
                        written, by rename, once all ports listen (so its
                        existence says "ready"), after every change, and
                        on SIGTERM or SIGINT, which stop the receiver.
    --ids FILE          append "PORT MESSAGE-ID" for every message accepted
                        (the Message-ID header's value, "-" when absent)
    --data-delay S      wait S seconds (a fraction is fine) before the
                        reply to the end of DATA, so that deliveries last
                        long enough to overlap
    --idle-close S      close a connection that sent no command for S
                        seconds after the last reply
    --idle-reply TEXT   with --idle-close, send TEXT (e.g. "421 4.4.2 idle
                        timeout") before closing; without it the close is
                        silent
    --idle-crossing TEXT
                        with --idle-close, do not close at once: answer the
                        client's next command with TEXT, then close, as if
                        the server's idle-timeout reply had crossed that
                        command on the wire (the connection counts as an
                        idle close when the timeout passes)
    --listen ADDR       the loopback address to listen on (default
                        127.0.0.1), so that several receivers can share a
                        port as the MX hosts of one domain do
    --close-after N     close a connection, without a word, after the reply
                        to its Nth message (what the client sent after it,
                        pipelined or not, is lost with it)
    --greeting TEXT     answer every connection with TEXT (e.g. "421 4.3.2
                        service not available") instead of the 220 greeting,
                        then close it: a site where nothing can be delivered
                        (the connection is counted all the same)
    --silent            accept every connection and say nothing, ever: a
                        host slower than any timeout of the client's (the
                        connection stays open until the client closes it)
    --garbage TEXT      not SMTP: answer every connection with the line
                        TEXT, and every line the client sends with it
                        again, never closing (a service that is not a mail
                        server, e.g. "SSH-2.0-OpenSSH_9.2")

Only the standard library is used, so that the tests need nothing beyond
python3.
"""

import argparse
import asyncio
import os
import signal
import sys

EHLO_REPLY = (
    b"250-count-sink\r\n250-PIPELINING\r\n250-8BITMIME\r\n"
    b"250 SIZE 10240000\r\n"
)
NESTED_MAIL = b"503 5.5.1 Error: nested MAIL command\r\n"
NEED_MAIL = b"503 5.5.1 Error: need MAIL command\r\n"
NO_RCPT = b"554 5.5.1 Error: no valid recipients\r\n"
UNKNOWN = b"502 5.5.2 Error: command not recognized\r\n"


class Counts:
    """What one listening port has seen."""

    def __init__(self, port):
        self.port = port
        self.open = 0
        self.max_open = 0
        self.busy = 0
        self.max_busy = 0
        self.connections = 0
        self.messages = 0
        self.idle_closes = 0
        self.max_open_all = 0

    def line(self):
        return (
            f"port={self.port} open={self.open} max_open={self.max_open}"
            f" busy={self.busy} max_busy={self.max_busy}"
            f" connections={self.connections} messages={self.messages}"
            f" idle_closes={self.idle_closes}"
            f" max_open_all={self.max_open_all}\n"
        )


class Sink:
    """The listening ports, their counts and the options they share."""

    def __init__(self, opts):
        self.opts = opts
        self.counts = {p: Counts(p) for p in opts.ports}
        self.ids = open(opts.ids, "a") if opts.ids else None
        self.serial = 0
        self.open_all = 0
        self.max_open_all = 0

    def write_stats(self):
        tmp = self.opts.stats + ".tmp"
        with open(tmp, "w") as f:
            for port in self.opts.ports:
                self.counts[port].max_open_all = self.max_open_all
                f.write(self.counts[port].line())
        os.replace(tmp, self.opts.stats)

    def record_message(self, port, message_id):
        self.serial += 1
        self.counts[port].messages += 1
        if self.ids:
            self.ids.write(f"{port} {message_id or '-'}\n")
            self.ids.flush()
        return self.serial

    async def session(self, port, reader, writer):
        c = self.counts[port]
        c.open += 1
        c.connections += 1
        c.max_open = max(c.max_open, c.open)
        self.open_all += 1
        self.max_open_all = max(self.max_open_all, self.open_all)
        held = [True]  # the client holds it until its QUIT or close
        self.write_stats()
        try:
            await self.converse(c, reader, writer, held)
        except (ConnectionError, ValueError):  # reset, or a line too long
            pass
        finally:
            writer.close()
            c.open -= 1
            self.release(held)
            self.write_stats()

    def release(self, held):
        if held[0]:
            held[0] = False
            self.open_all -= 1

    async def other(self, reader, writer):
        """--silent and --garbage: no SMTP at all."""
        if self.opts.garbage:
            writer.write(self.opts.garbage.encode() + b"\r\n")
        while True:
            await writer.drain()
            line = await reader.readline()
            if not line.endswith(b"\n"):
                return
            if self.opts.garbage:
                writer.write(self.opts.garbage.encode() + b"\r\n")

    async def converse(self, c, reader, writer, held):
        """The command loop; returns when the connection should close."""
        rcpts = 0
        taken = 0
        in_mail = False

        def end_mail():
            nonlocal in_mail, rcpts
            if in_mail:
                c.busy -= 1
            in_mail = False
            rcpts = 0

        try:
            if self.opts.silent or self.opts.garbage:
                await self.other(reader, writer)
                return
            if self.opts.greeting:
                writer.write(self.opts.greeting.encode() + b"\r\n")
                await writer.drain()
                return
            writer.write(b"220 count-sink ESMTP\r\n")
            while True:
                await writer.drain()
                line = await self.command(c, reader, writer)
                if line is None:
                    return
                verb = line[:4].upper()
                if verb == b"EHLO":
                    writer.write(EHLO_REPLY)
                elif verb == b"HELO":
                    writer.write(b"250 count-sink\r\n")
                elif verb == b"MAIL":
                    if in_mail:
                        writer.write(NESTED_MAIL)
                        continue
                    in_mail = True
                    c.busy += 1
                    c.max_busy = max(c.max_busy, c.busy)
                    self.write_stats()
                    writer.write(b"250 2.1.0 Ok\r\n")
                elif verb == b"RCPT":
                    if not in_mail:
                        writer.write(NEED_MAIL)
                        continue
                    rcpts += 1
                    writer.write(b"250 2.1.5 Ok\r\n")
                elif verb == b"DATA":
                    if rcpts == 0:
                        writer.write(NO_RCPT)
                        continue
                    writer.write(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                    await writer.drain()
                    message_id = await self.body(reader)
                    if message_id is None:
                        return
                    if self.opts.data_delay > 0:
                        await asyncio.sleep(self.opts.data_delay)
                    serial = self.record_message(c.port, message_id)
                    end_mail()
                    self.write_stats()
                    writer.write(b"250 2.0.0 Ok: queued as %d\r\n" % serial)
                    taken += 1
                    if self.opts.close_after and taken >= self.opts.close_after:
                        await writer.drain()
                        return
                elif verb == b"RSET":
                    end_mail()
                    self.write_stats()
                    writer.write(b"250 2.0.0 Ok\r\n")
                elif verb == b"NOOP":
                    writer.write(b"250 2.0.0 Ok\r\n")
                elif verb == b"QUIT":
                    self.release(held)
                    writer.write(b"221 2.0.0 Bye\r\n")
                    await writer.drain()
                    return
                else:
                    writer.write(UNKNOWN)
        finally:
            end_mail()

    async def command(self, c, reader, writer):
        """The next command line, or None when the connection should end."""
        try:
            if self.opts.idle_close > 0:
                line = await asyncio.wait_for(
                    reader.readline(), self.opts.idle_close
                )
            else:
                line = await reader.readline()
        except asyncio.TimeoutError:
            c.idle_closes += 1
            self.write_stats()
            if self.opts.idle_crossing:
                await reader.readline()
                writer.write(self.opts.idle_crossing.encode() + b"\r\n")
                await writer.drain()
                return None
            if self.opts.idle_reply:
                writer.write(self.opts.idle_reply.encode() + b"\r\n")
                await writer.drain()
            return None
        if not line.endswith(b"\n"):
            return None  # end of file, or a partial last line
        return line.rstrip(b"\r\n")

    async def body(self, reader):
        """Read the message up to the lone dot; its Message-ID or None."""
        message_id = ""
        in_headers = True
        while True:
            line = await reader.readline()
            if not line.endswith(b"\n"):
                return None
            line = line.rstrip(b"\r\n")
            if line == b".":
                return message_id
            if in_headers:
                if line == b"":
                    in_headers = False
                elif line.lower().startswith(b"message-id:"):
                    message_id = line[11:].strip().decode("ascii", "replace")


async def main(opts):
    sink = Sink(opts)
    servers = []
    for port in opts.ports:

        def handler(reader, writer, port=port):
            return sink.session(port, reader, writer)

        servers.append(await asyncio.start_server(handler, opts.listen, port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sink.write_stats()
    await stop.wait()
    for s in servers:
        s.close()
    sink.write_stats()


def parse_args(argv):
    p = argparse.ArgumentParser(description="a counting SMTP receiver")
    p.add_argument("--stats", required=True)
    p.add_argument("--ids")
    p.add_argument("--data-delay", type=float, default=0.0)
    p.add_argument("--idle-close", type=float, default=0.0)
    p.add_argument("--idle-reply", default="")
    p.add_argument("--idle-crossing", default="")
    p.add_argument("--greeting", default="")
    p.add_argument("--silent", action="store_true")
    p.add_argument("--garbage", default="")
    p.add_argument("--listen", default="127.0.0.1")
    p.add_argument("--close-after", type=int, default=0)
    p.add_argument("ports", nargs="+", type=int)
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args(sys.argv[1:])))
