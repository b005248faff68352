#!/usr/bin/env python3
"""A slowloris attacker for tests/integration/smtpd_hostile.sh.

    slowloris.py HOST PORT FIRST_SOURCE COUNT PER_SOURCE
                 [--gap S] [--line TEXT] [--seconds S] [--connects N]
                 [--ready FILE] [--stats FILE]

From COUNT loopback source addresses starting at FIRST_SOURCE
(127.0.0.10, 20: 127.0.0.10 to 127.0.0.29), opens PER_SOURCE sessions
each, then sends LINE (default "EHLO slow.test\\r\\n") one byte at a time,
a byte every GAP seconds (default 3) on each session, never a whole line
within the server's stress deadline. A session the server closes is
opened again from the same address, at once, as a persistent attacker
would. When all first sessions are connected it writes their count to
READY. It stops after SECONDS (default 60), after CONNECTS connections in
all (default 3000), or on SIGTERM, and writes to STATS one line:
"connects=N closed=N timeouts=N" (timeouts: sessions closed after the
server's "421 4.4.2"). Bounded in time and in sockets: at most
COUNT * PER_SOURCE are open at once.
"""

import argparse
import ipaddress
import random
import selectors
import signal
import socket
import sys
import time


class Attack:
    def __init__(self, args):
        self.args = args
        self.sel = selectors.DefaultSelector()
        self.connects = self.closed = self.timeouts = 0
        self.stop = False

    def open(self, source):
        if self.connects >= self.args.connects:
            return
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.settimeout(5)
        try:
            s.connect((self.args.host, self.args.port))
        except OSError:
            s.close()
            return
        s.setblocking(False)
        self.connects += 1
        state = {"source": source, "sent": 0, "got": b"",
                 "next": time.monotonic() + random.uniform(0, self.args.gap)}
        self.sel.register(s, selectors.EVENT_READ, state)

    def close(self, key):
        state = key.data
        self.sel.unregister(key.fileobj)
        key.fileobj.close()
        self.closed += 1
        if b"421 4.4.2" in state["got"]:
            self.timeouts += 1
        if not self.stop:
            self.open(state["source"])

    def read(self, key):
        try:
            data = key.fileobj.recv(4096)
        except (ConnectionResetError, BlockingIOError):
            data = b""
        if data:
            key.data["got"] = (key.data["got"] + data)[-512:]
        else:
            self.close(key)

    def trickle(self):
        line = self.args.line.encode().decode("unicode_escape").encode()
        now = time.monotonic()
        for key in list(self.sel.get_map().values()):
            state = key.data
            if state["next"] > now:
                continue
            byte = line[state["sent"] % len(line):][:1]
            try:
                key.fileobj.send(byte)
            except OSError:
                pass
            state["sent"] += 1
            state["next"] = now + self.args.gap

    def run(self):
        first = ipaddress.ip_address(self.args.first_source)
        for i in range(self.args.count):
            for _ in range(self.args.per_source):
                self.open(str(first + i))
        if self.args.ready:
            with open(self.args.ready, "w") as f:
                f.write("%d\n" % self.connects)
        end = time.monotonic() + self.args.seconds
        while not self.stop and time.monotonic() < end:
            for key, _ in self.sel.select(timeout=0.2):
                self.read(key)
            self.trickle()
        self.stop = True
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        if self.args.stats:
            with open(self.args.stats, "w") as f:
                f.write("connects=%d closed=%d timeouts=%d\n" %
                        (self.connects, self.closed, self.timeouts))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("first_source")
    p.add_argument("count", type=int)
    p.add_argument("per_source", type=int)
    p.add_argument("--gap", type=float, default=3.0)
    p.add_argument("--line", default="EHLO slow.test\\r\\n")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--connects", type=int, default=3000)
    p.add_argument("--ready")
    p.add_argument("--stats")
    attack = Attack(p.parse_args())

    def stop(signum, frame):
        attack.stop = True
    signal.signal(signal.SIGTERM, stop)
    attack.run()


if __name__ == "__main__":
    sys.exit(main())
