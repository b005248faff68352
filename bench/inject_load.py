#!/usr/bin/python3
"""The HTTP side of bench/inject_http.sh: POST /api/inject, many at once.

    inject_load.py client HOST PORT TOKEN MESSAGES CLIENTS BYTES
    inject_load.py server HOST PORT

client: CLIENTS processes (not threads: the GIL would make one core the
limit), each with one keep-alive HTTP/1.1 connection, POST MESSAGES
requests in all, each one message of BYTES bytes of body to one
recipient (rcpt@sink.bench), and wait for each answer before the next,
as smtp-source waits for each 250. Prints "N ok in S seconds" (S from
the first request to the last answer), and fails unless every answer
was 200.

server: a trivial HTTP server on HOST:PORT (asyncio, two processes)
that reads each request and answers 200 at once, without parsing the
JSON: the client alone against it shows how fast the client can go.
"""

import asyncio
import http.client
import json
import multiprocessing
import os
import signal
import sys
import time


def body(length, i):
    text = ("x" * 75 + "\n") * (length // 76) + "x" * (length % 76)
    return json.dumps({
        "envelope_sender": "sender@bench.test",
        "recipients": [{"email": "rcpt@sink.bench"}],
        "content": "From: sender@bench.test\nTo: rcpt@sink.bench\n"
                   "Subject: bench %d\n\n%s\n" % (i, text)}).encode()


def one_client(args):
    host, port, token, count, length = args
    c = http.client.HTTPConnection(host, port, timeout=60)
    headers = {"Authorization": "Bearer " + token,
               "Content-Type": "application/json"}
    payload = body(length, 0)
    bad = 0
    for _ in range(count):
        c.request("POST", "/api/inject", payload, headers)
        r = c.getresponse()
        r.read()
        bad += r.status != 200
    c.close()
    return bad


def client(host, port, token, messages, clients, length):
    per = [messages // clients + (i < messages % clients)
           for i in range(clients)]
    with multiprocessing.Pool(clients) as pool:
        start = time.monotonic()
        bad = sum(pool.map(one_client,
                           [(host, port, token, n, length) for n in per]))
        took = time.monotonic() - start
    print("%d ok in %.3f seconds" % (messages - bad, took))
    return 1 if bad else 0


async def serve_one(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json"
                         b"\r\nContent-Length: 38\r\n\r\n"
                         b'{"queue_ids": ["x"], "recipients": 1}\n')
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def server(host, port):
    srv = await asyncio.start_server(serve_one, host, port,
                                     backlog=256, reuse_port=True)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "client":
        h, p, tok, n, k, b = sys.argv[2:8]
        sys.exit(client(h, int(p), tok, int(n), int(k), int(b)))
    # Two processes on one port (SO_REUSEPORT); SIGTERM to the first
    # stops the second too.
    child = os.fork()
    if child != 0:
        def stop(*_):
            os.kill(child, signal.SIGTERM)
            os.waitpid(child, 0)
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)
    asyncio.run(server(sys.argv[2], int(sys.argv[3])))
