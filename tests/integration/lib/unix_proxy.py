#!/usr/bin/python3
"""unix_proxy.py LISTEN TARGET - a Unix-socket proxy, to cut one client off.

Listens on the Unix socket LISTEN and relays every connection, both ways,
to the Unix socket TARGET. cluster.sh points one daemon's
cluster_redis_url at LISTEN: stopping this process (SIGSTOP) partitions
that daemon from Redis while the others still reach it (its syncs get no
reply, its new connections no answer), SIGCONT heals it. Used only by the
tests, on loopback.
"""
import os
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listen, target):
    if os.path.exists(listen):
        os.unlink(listen)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(listen)
    srv.listen(16)
    while True:
        client, _ = srv.accept()
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            up.connect(target)
        except OSError:
            client.close()
            continue
        for a, b in ((client, up), (up, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
