#!/usr/bin/python3
"""auth_clients.py - SMTP AUTH clients for smtpd_auth.sh.

  send PORT CA MECH TLS USER PASSWORD SUBJECT
      Python's smtplib from 127.0.0.2 ($SOURCE if set): EHLO, STARTTLS when TLS is "tls",
      AUTH MECH (PLAIN or LOGIN) unless USER is "-", then a message to
      r@far.test. Prints one line: "auth=CODE send=RESULT" where CODE is
      235, 535, 454, "none" (no AUTH tried) or "not-offered", and RESULT
      "queued", or the code that refused the message.
  hostile PORT
      bad clients, one line each with the server's reply: garbage
      base64, a huge AUTH line, a huge response, a client that closes
      in the middle of AUTH; then a good AUTH on a new connection.
  silent PORT
      AUTH LOGIN, then nothing: prints what the server says when it
      gives up (smtpd_timeout), and how long it took.
  brute PORT SECONDS ADDRESSES SESSIONS USER PASSWORD
      a password guesser: SESSIONS sessions from each of ADDRESSES
      (comma-separated loopback addresses) send wrong passwords for USER
      for SECONDS, reconnecting when dropped, while a legitimate client
      from 127.0.0.1 logs in with PASSWORD every 0.5 s. Prints
      "attempts=N dropped=N legit=OK/TRIED max_ms=N median_ms=N".
"""
import base64
import os
import smtplib
import socket
import ssl
import statistics
import sys
import threading
import time


def b64(text):
    return base64.b64encode(text.encode()).decode()


def send(port, ca, mech, tls, user, password, subject):
    source = os.environ.get("SOURCE", "127.0.0.2")
    s = smtplib.SMTP(timeout=40, source_address=(source, 0))
    s.connect("127.0.0.1", port)
    s._host = "localhost"  # the name in the test certificate
    s.ehlo("client.test")
    if tls == "tls":
        s.starttls(context=ssl.create_default_context(cafile=ca))
        s.ehlo("client.test")
    auth = "none"
    if user != "-":
        if not s.has_extn("auth"):
            auth = "not-offered"
        else:
            s.user, s.password = user, password
            fn = s.auth_plain if mech == "PLAIN" else s.auth_login
            try:
                code, _ = s.auth(mech, fn, initial_response_ok=(mech == "PLAIN"))
                auth = str(code)
            except smtplib.SMTPAuthenticationError as e:
                auth = str(e.smtp_code)
    result = "queued"
    try:
        s.sendmail("a@client.test", ["r@far.test"],
                   "Subject: %s\r\n\r\nbody\r\n" % subject)
    except smtplib.SMTPRecipientsRefused as e:
        result = str(list(e.recipients.values())[0][0])
    except smtplib.SMTPResponseException as e:
        result = str(e.smtp_code)
    try:
        s.quit()
    except Exception:
        pass
    print("auth=%s send=%s" % (auth, result))


class Conn:
    def __init__(self, port, source="127.0.0.1"):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=15,
                                          source_address=(source, 0))
        self.f = self.s.makefile("rb")
        self.reply()

    def reply(self):
        lines = []
        while True:
            line = self.f.readline().decode(errors="replace").rstrip("\r\n")
            lines.append(line)
            if len(line) < 4 or line[3] != "-":
                return lines[-1]

    def cmd(self, text):
        self.s.sendall(text.encode() + b"\r\n")
        return self.reply()

    def close(self):
        self.s.close()


def hostile(port):
    c = Conn(port)
    c.cmd("EHLO client.test")
    print("garbage:", c.cmd("AUTH PLAIN ???not-base64==="))
    print("garbage response:", c.cmd("AUTH LOGIN"), "/", c.cmd("%%%%"))
    print("huge AUTH:", c.cmd("AUTH PLAIN " + "A" * 100000))
    print("huge response:", c.cmd("AUTH PLAIN"), "/", c.cmd("QUFB" * 30000))
    print("alive:", c.cmd("NOOP"))
    c.close()
    for step in range(3):  # closed at the 334, in the middle, at once
        c = Conn(port)
        c.cmd("EHLO client.test")
        if step == 0:
            c.s.sendall(b"AUTH LOGIN\r\n")
        elif step == 1:
            c.cmd("AUTH LOGIN")
            c.s.sendall(b"YWxpY2U=\r\nd3Jvbmc=")
        else:
            c.s.sendall(b"AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\n")
        c.s.shutdown(socket.SHUT_RDWR)
        c.close()
    c = Conn(port)
    c.cmd("EHLO client.test")
    print("after:", c.cmd("AUTH PLAIN " + b64("\0alice\0wonderland")))
    c.close()


def silent(port):
    c = Conn(port)
    c.cmd("EHLO client.test")
    print("334:", c.cmd("AUTH LOGIN"))
    t0 = time.monotonic()
    line = c.reply()
    print("then: %s after %.0f s" % (line, time.monotonic() - t0))


def brute(port, seconds, addresses, sessions, user, password):
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    counts = {"attempts": 0, "dropped": 0}
    wrong = "AUTH PLAIN " + b64("\0%s\0wrong" % user)

    def attacker(source):
        while time.monotonic() < stop:
            try:
                c = Conn(port, source)
                c.cmd("EHLO guesser.test")
                while time.monotonic() < stop:
                    r = c.cmd(wrong)
                    with lock:
                        counts["attempts"] += 1
                    if r.startswith("421"):
                        with lock:
                            counts["dropped"] += 1
                        break
                c.close()
            except (OSError, ValueError):
                time.sleep(0.05)

    threads = [threading.Thread(target=attacker, args=(a,), daemon=True)
               for a in addresses for _ in range(sessions)]
    for t in threads:
        t.start()
    latencies, good, tried = [], 0, 0
    time.sleep(1)  # the guessers are at it
    while time.monotonic() < stop - 0.5:
        tried += 1
        c = Conn(port)
        c.cmd("EHLO legit.test")
        t0 = time.monotonic()
        r = c.cmd("AUTH PLAIN " + b64("\0%s\0%s" % (user, password)))
        latencies.append((time.monotonic() - t0) * 1000)
        good += r.startswith("235")
        c.cmd("QUIT")
        c.close()
        time.sleep(0.5)
    for t in threads:
        t.join(timeout=5)
    print("attempts=%d dropped=%d legit=%d/%d max_ms=%.0f median_ms=%.0f" %
          (counts["attempts"], counts["dropped"], good, tried,
           max(latencies), statistics.median(latencies)))


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "send":
        send(port, *sys.argv[3:9])
    elif cmd == "hostile":
        hostile(port)
    elif cmd == "silent":
        silent(port)
    elif cmd == "brute":
        brute(port, float(sys.argv[3]), sys.argv[4].split(","),
              int(sys.argv[5]), sys.argv[6], sys.argv[7])


if __name__ == "__main__":
    main()
