#!/usr/bin/env python3
"""Hostile SMTP clients for tests/integration/verify.sh (standard library).

    verify_clients.py flood HOST PORT CLIENTS RCPTS DOMAIN
        CLIENTS connections at once, each sending EHLO, MAIL and then
        RCPTS RCPT commands of distinct made-up addresses
        (slowC-R@DOMAIN) pipelined in one write; prints the count of
        each reply code ("250=N 450=N 550=N other=N") and, as
        "busy=N", the 450 replies saying the verification service has
        too many requests waiting. Each connection gives up after 30 s.
    verify_clients.py hangup HOST PORT ADDRESS
        EHLO, MAIL and RCPT TO:<ADDRESS>, then closes the connection at
        once, without waiting for the RCPT's reply.
"""

import socket
import sys
import threading


def read_replies(sock, count, deadline=30):
    sock.settimeout(deadline)
    data = b""
    lines = []
    while len(lines) < count:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        while b"\r\n" in data:
            line, data = data.split(b"\r\n", 1)
            if len(line) >= 4 and line[3:4] == b"-":
                continue  # a continuation line
            lines.append(line.decode("latin-1"))
    return lines


def session(host, port, domain, c, rcpts, out, lock):
    try:
        s = socket.create_connection((host, port), timeout=10)
        read_replies(s, 1)
        s.sendall(b"EHLO flood.test\r\nMAIL FROM:<x@flood.test>\r\n")
        read_replies(s, 2)
        cmds = "".join("RCPT TO:<slow%d-%d@%s>\r\n" % (c, r, domain)
                       for r in range(rcpts))
        s.sendall(cmds.encode())
        got = read_replies(s, rcpts)
        s.sendall(b"QUIT\r\n")
        s.close()
    except OSError:
        got = []
    with lock:
        out.extend(got)


def flood(host, port, clients, rcpts, domain):
    out, lock, threads = [], threading.Lock(), []
    for c in range(clients):
        t = threading.Thread(target=session,
                             args=(host, port, domain, c, rcpts, out, lock))
        t.start()
        threads.append(t)
    for t in threads:
        t.join(60)
    counts = {"250": 0, "450": 0, "550": 0, "other": 0}
    busy = 0
    for line in out:
        code = line[:3]
        counts[code if code in counts else "other"] += 1
        busy += "too many requests waiting" in line
    print("250=%(250)d 450=%(450)d 550=%(550)d other=%(other)d" % counts,
          "busy=%d" % busy)


def hangup(host, port, address):
    s = socket.create_connection((host, port), timeout=10)
    read_replies(s, 1)
    s.sendall(b"EHLO hangup.test\r\nMAIL FROM:<x@flood.test>\r\n")
    read_replies(s, 2)
    s.sendall(("RCPT TO:<%s>\r\n" % address).encode())
    s.close()


def main():
    if sys.argv[1] == "flood":
        flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
              int(sys.argv[5]), sys.argv[6])
    elif sys.argv[1] == "hangup":
        hangup(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit("usage: verify_clients.py flood|hangup ...")


if __name__ == "__main__":
    main()
