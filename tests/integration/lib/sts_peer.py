#!/usr/bin/python3
"""sts_peer.py DIR [PORT] - an HTTPS server of MTA-STS policies for the tests.

Listens on 127.0.0.1, on PORT or a port of the kernel's choosing, which
it writes to DIR/port once it accepts connections; serves with
DIR/server.pem and DIR/server.key (tests/integration/lib/sts_ca.sh).
A GET of /.well-known/mta-sts.txt for Host H answers what DIR/www/H
says: its first line is "STATUS CONTENT-TYPE [DELAY-SECONDS [LOCATION]]"
(CONTENT-TYPE "-" sends none; "!TYPE" sends TYPE and no Content-Length,
so that the body ends with the connection), the rest is the body. No file, or any
other path: 404. Every request is appended to DIR/requests as
"HOST PATH". A POST (a TLS report, RFC 8460 5.4) is kept as
DIR/posts/NNNN.body with its Content-Type in NNNN.type and its path in
NNNN.path, and answered with the status in DIR/post-status (default
200). It runs until it is killed.
"""
import http.server
import os
import ssl
import sys
import time

DIR = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        with open(os.path.join(DIR, "requests"), "a") as log:
            log.write("%s %s\n" % (host, self.path))
        spec = os.path.join(DIR, "www", os.path.basename(host))
        status, ctype, delay, location, body = 404, "text/plain", 0, None, b""
        if self.path == "/.well-known/mta-sts.txt" and os.path.isfile(spec):
            with open(spec, "rb") as f:
                first, _, body = f.read().partition(b"\n")
            words = first.decode().split()
            status, ctype = int(words[0]), words[1]
            if len(words) > 2:
                delay = float(words[2])
            if len(words) > 3:
                location = words[3]
        time.sleep(delay)
        self.send_response(status)
        length = not ctype.startswith("!")
        ctype = ctype.lstrip("!")
        if ctype != "-":
            self.send_header("Content-Type", ctype)
        if location:
            self.send_header("Location", location)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def do_POST(self):
    length = int(self.headers.get("Content-Length") or 0)
    body = self.rfile.read(length)
    posts = os.path.join(DIR, "posts")
    os.makedirs(posts, exist_ok=True)
    n = len([f for f in os.listdir(posts) if f.endswith(".body")])
    base = os.path.join(posts, "%04d" % n)
    with open(base + ".type", "w") as f:
        f.write(self.headers.get("Content-Type") or "")
    with open(base + ".path", "w") as f:
        f.write(self.path)
    with open(base + ".tmp", "wb") as f:
        f.write(body)
    os.rename(base + ".tmp", base + ".body")
    status = 200
    spec = os.path.join(DIR, "post-status")
    if os.path.isfile(spec):
        with open(spec) as f:
            status = int(f.read().split()[0])
    self.send_response(status)
    self.send_header("Content-Length", "0")
    self.send_header("Connection", "close")
    self.end_headers()


Handler.do_POST = do_POST


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def main():
    httpd = Server(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2
                    else 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(DIR, "server.pem"),
                        os.path.join(DIR, "server.key"))
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    tmp = os.path.join(DIR, "port.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % httpd.server_address[1])
    os.rename(tmp, os.path.join(DIR, "port"))
    httpd.serve_forever()


main()
