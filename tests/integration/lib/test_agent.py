#!/usr/bin/python3
"""An external agent for the tests (sluice-agent(7)'s hungry protocol)
that misbehaves when it is told to.

    test_agent.py DIR HOST [QUEUE_DIRECTORY]

At its start it writes DIR/env.HOST, the names of its environment, and
with QUEUE_DIRECTORY DIR/probe.HOST, "UID A B": whether it could list the
spool's db/ and open db/data.mdb ("read" or "refused"). At each job it
reads DIR/mode.HOST: "good" answers every recipient ok; otherwise, at the
job's second recipient (its first when it has one):
  kill     writes its pid to DIR/busy.HOST and waits (for the test's
           SIGKILL);
  hang     the same, for agent_time_limit;
  garbage  a line on its standard error, then a line that is not the
           protocol, then waits;
  exit     exits with status 3;
  flood    100,000 bytes without a newline, then waits;
  big      answers every recipient with 480 bytes of text.
Each recipient it answers ok is a line "HOST RCPT" in DIR/delivered.
"""
import os
import sys
import time

w, host = sys.argv[1], sys.argv[2]
env = open("/proc/self/environ", "rb").read().split(b"\0")
with open(os.path.join(w, "env." + host), "w") as f:
    f.write(" ".join(sorted(e.split(b"=")[0].decode() for e in env if e)))
if len(sys.argv) > 3:
    q, seen = sys.argv[3], []
    for path in (q + "/db", q + "/db/data.mdb"):
        try:
            open(path, "rb").close() if path.endswith("mdb") else os.listdir(path)
            seen.append("read")
        except OSError:
            seen.append("refused")
    with open(os.path.join(w, "probe." + host), "w") as f:
        f.write("%d %s\n" % (os.getuid(), " ".join(seen)))
out, inp = sys.stdout, sys.stdin.buffer


def say(text):
    out.write(text + "\n")
    out.flush()


def misbehave(mode):
    out.flush()
    if mode in ("kill", "hang"):
        with open(os.path.join(w, "busy." + host), "w") as f:
            f.write(str(os.getpid()))
    elif mode == "garbage":
        sys.stderr.write("garbage coming\n")
        sys.stderr.flush()
        say("this is not the protocol")
    elif mode == "exit":
        sys.exit(3)
    elif mode == "flood":
        out.write("x" * 100000)
        out.flush()
    time.sleep(30)


say("#hungry")
while True:
    line = inp.readline()
    if not line:
        sys.exit(0)
    words = line.split()
    inp.read(int(words[2]))
    mode = open(os.path.join(w, "mode." + host)).read().strip()
    rcpts = words[4:]
    at = min(2, len(rcpts))
    for k, r in enumerate(rcpts, 1):
        if k == at and mode not in ("good", "big"):
            misbehave(mode)
        with open(os.path.join(w, "delivered"), "a") as f:
            f.write("%s %s\n" % (host, r.decode()))
        text = "y" * 480 if mode == "big" else "done"
        out.write("%d ok 2.0.0 %s\n" % (k, text))
    say("#hungry")
