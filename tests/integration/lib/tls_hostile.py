"""tls_hostile.py - a hostile TLS peer where Redis should be, for cluster_tls.sh.

Usage:
    python3 tests/integration/lib/tls_hostile.py PORTFILE CERT KEY COUNTFILE

Listens on 127.0.0.1 (a port of its choosing, written to PORTFILE) and
meets each connection in turn with one kind of trouble, cycling: a TLS
handshake that never ends (the client's hello read, nothing answered), a
close in the middle of the handshake, a good handshake with CERT and KEY
(so that the client's verification passes) followed by 64 KB of garbage,
and a good handshake followed by a close without close_notify. The number
of connections accepted is written to COUNTFILE after each one. Stops on
SIGTERM.
"""

import os
import signal
import socket
import ssl
import sys
import threading
import time


def count(path, n):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{n}\n")
    os.replace(tmp, path)


def session(conn, kind, ctx):
    try:
        conn.settimeout(10)
        if kind == 0:  # never finishes: read, answer nothing
            while conn.recv(65536):
                pass
        elif kind == 1:  # the hello, then a close
            conn.recv(65536)
        else:
            tls = ctx.wrap_socket(conn, server_side=True)
            tls.recv(65536)  # the first command (AUTH or EVAL)
            if kind == 2:
                tls.sendall(b"\x00\xff" * 32768)
                time.sleep(0.2)
            conn = tls
    except (OSError, ssl.SSLError):
        pass
    finally:
        # a plain close: no close_notify, whatever the state
        try:
            socket.socket(fileno=conn.detach()).close()
        except (OSError, ValueError):
            conn.close()


def main():
    portfile, cert, key, countfile = sys.argv[1:5]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    count(countfile, 0)
    with open(portfile + ".tmp", "w") as f:
        f.write(f"{srv.getsockname()[1]}\n")
    os.replace(portfile + ".tmp", portfile)
    n = 0
    while True:
        conn, _ = srv.accept()
        n += 1
        count(countfile, n)
        threading.Thread(
            target=session, args=(conn, (n - 1) % 4, ctx), daemon=True
        ).start()


if __name__ == "__main__":
    main()
