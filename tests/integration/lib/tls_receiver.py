#!/usr/bin/python3
"""A scripted SMTP receiver with STARTTLS, for the SMTP client's TLS tests.

    python3 tls_receiver.py DIR MODE CERT KEY [ADDR [PORT]]

Listens on ADDR (default 127.0.0.1) on PORT, or a port of its choosing,
and writes the port to DIR/port (so that two receivers can be two MX
hosts of one domain: the same port on two loopback addresses).
MODE is what the server does about TLS:

    good      offers STARTTLS, handshakes with CERT/KEY
    none      does not offer STARTTLS (and refuses it: 502)
    refuse    offers STARTTLS and answers it 454
    broken    offers STARTTLS, answers 220, then sends garbage and closes
    stall     offers STARTTLS, answers 220, then reads the ClientHello and
              says nothing (a TLS handshake that never ends)

Every message accepted is written to DIR/NNNN.eml as the lines
"tls: yes|no", "sni: NAME", "resumed: yes|no", "from: SENDER", one
"to: RCPT" per recipient, a blank line and the content. DIR/sessions
counts connections, one line each ("tls" or "plain" at QUIT or close).
It answers RFC 5321 strictly enough for the client's dialogue: EHLO
again after STARTTLS, MAIL before RCPT, RCPT before DATA. It runs until
SIGTERM.
"""

import os
import signal
import socket
import ssl
import sys
import threading


class Session:
    def __init__(self, server, conn):
        self.server = server
        self.conn = conn
        self.file = conn.makefile("rb")
        self.tls = False
        self.sni = ""
        self.resumed = False
        self.reset()

    def reset(self):
        self.sender = None
        self.rcpts = []

    def send(self, text):
        self.conn.sendall(text.encode() + b"\r\n")

    def ehlo(self, arg):
        if not arg:
            self.send("501 5.5.4 Syntax: EHLO hostname")
            return
        lines = ["250-tls.test", "250-PIPELINING", "250-SIZE 10240000"]
        if self.server.mode != "none" and not self.tls:
            lines.append("250-STARTTLS")
        lines.append("250 8BITMIME")
        self.send("\r\n".join(lines))
        self.reset()

    def starttls(self):
        mode = self.server.mode
        if mode == "none" or self.tls:
            self.send("502 5.5.1 Error: command not implemented")
            return True
        if mode == "refuse":
            self.send("454 4.7.0 TLS not available due to local problem")
            return True
        self.send("220 2.0.0 Ready to start TLS")
        if mode == "stall":
            # read the ClientHello and never answer it
            self.conn.settimeout(60)
            try:
                while self.conn.recv(4096):
                    pass
            except OSError:
                pass
            return False
        if mode == "broken":
            self.conn.sendall(b"\x15\x03\x03\x00\x02\x02\x28garbage")
            return False
        try:
            self.conn = self.server.context.wrap_socket(
                self.conn, server_side=True)
        except (ssl.SSLError, OSError):
            return False
        self.tls = True
        self.resumed = self.conn.session_reused
        self.sni = self.server.sni.pop(threading.get_ident(), "")
        self.file = self.conn.makefile("rb")
        self.reset()
        return True

    def data(self):
        if not self.rcpts:
            self.send("503 5.5.1 Error: need RCPT command")
            return
        self.send("354 End data with <CR><LF>.<CR><LF>")
        body = b""
        while True:
            line = self.file.readline()
            if not line:
                raise EOFError
            if line == b".\r\n":
                break
            body += line[1:] if line.startswith(b".") else line
        n = self.server.next_number()
        head = "tls: %s\nsni: %s\nresumed: %s\nfrom: %s\n" % (
            "yes" if self.tls else "no", self.sni,
            "yes" if self.resumed else "no", self.sender)
        for rcpt in self.rcpts:
            head += "to: %s\n" % rcpt
        path = os.path.join(self.server.directory, "%04d.eml" % n)
        with open(path + ".tmp", "wb") as f:
            f.write(head.encode() + b"\n" + body)
        os.rename(path + ".tmp", path)
        self.send("250 2.0.0 Ok: stored as %04d" % n)
        self.reset()

    def run(self):
        self.send("220 tls.test ESMTP")
        while True:
            line = self.file.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            verb, _, arg = text.partition(" ")
            verb = verb.upper()
            if verb in ("EHLO", "HELO", "LHLO"):
                self.ehlo(arg.strip())
            elif verb == "STARTTLS":
                if not self.starttls():
                    return
            elif verb == "MAIL":
                self.sender = arg.split(":", 1)[-1].split(" ")[0].strip("<>")
                self.send("250 2.1.0 Ok")
            elif verb == "RCPT":
                if self.sender is None:
                    self.send("503 5.5.1 Error: need MAIL command")
                    continue
                self.rcpts.append(arg.split(":", 1)[-1].split(" ")[0]
                                  .strip("<>"))
                self.send("250 2.1.5 Ok")
            elif verb == "DATA":
                self.data()
            elif verb == "RSET":
                self.reset()
                self.send("250 2.0.0 Ok")
            elif verb == "NOOP":
                self.send("250 2.0.0 Ok")
            elif verb == "QUIT":
                self.send("221 2.0.0 Bye")
                return
            else:
                self.send("502 5.5.2 Error: command not recognized")


class Server:
    def __init__(self, directory, mode, cert, key):
        self.directory = directory
        self.mode = mode
        self.count = 0
        self.lock = threading.Lock()
        self.sni = {}
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.context.sni_callback = self.on_sni

    def on_sni(self, sslobj, name, context):
        self.sni[threading.get_ident()] = name or ""

    def next_number(self):
        with self.lock:
            self.count += 1
            return self.count

    def serve(self, conn):
        s = Session(self, conn)
        try:
            s.run()
        except (OSError, EOFError, ssl.SSLError):
            pass
        with self.lock:
            with open(os.path.join(self.directory, "sessions"), "a") as f:
                f.write("tls\n" if s.tls else "plain\n")
        try:
            s.conn.close()
        except OSError:
            pass


def main():
    directory, mode, cert, key = sys.argv[1:5]
    addr = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
    port = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    os.makedirs(directory, exist_ok=True)
    server = Server(directory, mode, cert, key)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(16)
    with open(os.path.join(directory, "port.tmp"), "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(os.path.join(directory, "port.tmp"),
              os.path.join(directory, "port"))
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=server.serve, args=(conn,),
                         daemon=True).start()


if __name__ == "__main__":
    main()
