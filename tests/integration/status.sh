#!/bin/sh
# status.sh BUILD - "sluice status" against a running sluiced, through its
# control socket (QUEUE/private/control, mode 0660): a slow receiver
# (busy deliveries and a backlog) and a destination with nothing
# listening (declared dead, with its reason and time to retry), both
# queues keyed by their next hop "[127.0.0.1]:PORT", as text
# and as JSON (checked by Python's strict parser); a bounded view
# (--destinations 1) and bad arguments; "sluice top" (the view
# refreshed); "sluice suspend" and "resume"
# of a destination (mail deferred while suspended, delivered at once
# when resumed; errors); hostile clients (garbage, an
# endless line, a NUL, a silent client, an abrupt close, more sessions
# than allowed) each cost only their own session; with the daemon
# stopped, a clear message and exit status 69. Bounded in time (about
# 20 s), stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 command -v python3

dead_port=$(free_port)
slow_port=$(free_port)
start_count_sink slow "$slow_port" --data-delay 5 ||
    { not_ok "the slow receiver starts"; tap_done; }
held_port=$(free_port)
start_count_sink held "$held_port" ||
    { not_ok "the receiver of the suspended destination starts"; tap_done; }
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$tmp/transport" <<EOF
dead.test relay:[127.0.0.1]:$dead_port
slow.test relay:[127.0.0.1]:$slow_port
held.test relay:[127.0.0.1]:$held_port
EOF
s() { "$build/sluice" -c "$conf" "$@"; }

sluiced_start "$tmp" "minimal_backoff_time = 1h
maximal_backoff_time = 2h
relay_destination_concurrency_limit = 2" ||
    { not_ok "sluiced -f starts"; tap_done; }

mode=$(stat -c %a "$q/private/control" 2>/dev/null)
expect "the control socket is its owner's and group's only" 660 "$mode"

i=1
while [ $i -le 6 ]; do
    printf 'Subject: d%d\n\nbody\n' $i | s sendmail -f s@host.test "u$i@dead.test"
    printf 'Subject: s%d\n\nbody\n' $i | s sendmail -f s@host.test "u$i@slow.test"
    i=$((i + 1))
done
dead_key="\\[127.0.0.1\\]:$dead_port"
slow_key="\\[127.0.0.1\\]:$slow_port"
dead_now() { s status 2>/dev/null | grep -q "^  $dead_key  *dead"; }
wait_for 10 dead_now
s status >"$tmp/status.txt" 2>&1
rc=$?
expect "sluice status exits 0" 0 "$rc"
grep -q '^messages in core: [0-9]* of 20000$' "$tmp/status.txt" &&
    ok "text: messages in core against the limit" ||
    not_ok "text: messages in core against the limit"
grep -q '^transport relay: [12] of [0-9]* deliveries' "$tmp/status.txt" &&
    ok "text: the transport's deliveries in flight" ||
    not_ok "text: the transport's deliveries in flight"
grep -q "^  $dead_key  *dead  *0  *[0-9]*  retry in [0-9]*s: .*refused" \
    "$tmp/status.txt" &&
    ok "text: the dead destination, its time to retry and why" ||
    not_ok "text: the dead destination, its time to retry and why"
grep -q "^  $slow_key  *[0-9]*/2  *[12]  " "$tmp/status.txt" &&
    ok "text: the slow destination's window, limit and busy" ||
    not_ok "text: the slow destination's window, limit and busy"
sed 's/^/#   /' "$tmp/status.txt"

s status --json >"$tmp/status.json" 2>&1
expect "sluice status --json exits 0" 0 "$?"
check=$(python3 - "$tmp/status.json" "$dead_port" "$slow_port" <<'PYEOF'
import json, sys
def strict(x):
    raise ValueError("not JSON: " + x)
with open(sys.argv[1], "rb") as f:
    raw = f.read()
st = json.loads(raw.decode("utf-8"), parse_constant=strict)
out = []
out.append("messages %s" % (st["messages"]["limit"] == 20000 and
                            st["messages"]["in_core"] >= 1))
t = [t for t in st["transports"] if t["name"] == "relay"][0]
d = {x["name"]: x for x in t["destinations"]}
dead = d["[127.0.0.1]:" + sys.argv[2]]
out.append("dead %s" % (dead["dead"] is True and dead["window"] >= 0 and
                        "refused" in dead["reason"] and
                        0 < dead["retry_in_s"] <= 3600))
slow = d["[127.0.0.1]:" + sys.argv[3]]
out.append("slow %s" % (slow["dead"] is False and slow["limit"] == 2 and
                        1 <= slow["busy"] <= 2 and slow["reason"] is None and
                        slow["retry_in_s"] is None))
out.append("transport %s" % (t["busy"] >= 1 and t["scheduler"] in
                             ("preemptive", "round_robin") and
                             t["more_destinations"] == 0 and
                             isinstance(t["job_list"], list)))
print(" ".join(out))
PYEOF
)
expect "JSON: messages, dead and slow destinations, the transport" \
    "messages True dead True slow True transport True" "$check"

s status --json --destinations 1 | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin)["transports"] if t["name"] == "relay"][0]
print(len(t["destinations"]), t["more_destinations"])' >"$tmp/bounded" 2>&1
expect "--destinations 1: one shown, the other counted" "1 1" "$(cat "$tmp/bounded")"

# sluice top: the same view, refreshed (two frames, 0.2 s apart).
s top -d 0.2 -n 2 >"$tmp/top" 2>&1
expect "sluice top -n 2 exits 0" 0 "$?"
expect "two frames, each cleared first" 2 \
    "$(grep -c "$(printf '\033\\[H\033\\[2J')sluice top - " "$tmp/top")"
expect "each frame holds the status view" 2 \
    "$(grep -c '^transport relay: ' "$tmp/top")"
s top -d 0 >/dev/null 2>&1
expect "top: a refresh below 0.1 s is a usage error" 64 "$?"

s status --bogus >/dev/null 2>"$tmp/err"
expect "an unknown argument is a usage error" 64 "$?"
grep -q 'unknown argument "--bogus"' "$tmp/err" &&
    ok "the usage error names the argument" ||
    not_ok "the usage error names the argument"

# The operator's suspension: before any mail, by domain (routed).
held_key="[127.0.0.1]:$held_port"
out=$(s suspend held.test 1h 2>&1)
expect "suspend: the destination's queue, for how long" \
    "suspended relay:$held_key for 3600s" "$out"
grep -q "suspend held.test for 3600s: by the operator" "$tmp/log" &&
    ok "suspend is logged" || not_ok "suspend is logged"
printf 'Subject: h1\n\nbody\n' | s sendmail -f s@host.test h1@held.test
printf 'Subject: h2\n\nbody\n' | s sendmail -f s@host.test h2@held.test
held_deferred() {
    [ "$(grep -c 'to=<h[12]@held.test>.*status=deferred (delivery temporarily suspended: by the operator)' \
        "$tmp/log")" = 2 ]
}
if wait_for 10 held_deferred; then
    ok "mail for it is deferred: by the operator"
else
    not_ok "mail for it is deferred: by the operator"
    grep 'held' "$tmp/log" | sed 's/^/#   /'
fi
held_line=$(s status | grep -F "  $held_key ")
case $held_line in
*" suspended "*"resumes in "*"s: by the operator") ok "status shows the suspension" ;;
*) not_ok "status shows the suspension"; echo "#   $held_line" ;;
esac
expect "no message reached it" 0 "$(counter held messages)"
out=$(s resume held.test 2>&1)
expect "resume names the queue" "resumed relay:$held_key" "$out"
held_delivered() { [ "$(counter held messages)" = 2 ]; }
wait_for 10 held_delivered && ok "resume: its deferred mail goes at once" ||
    not_ok "resume: its deferred mail goes at once"
s resume held.test >/dev/null 2>"$tmp/err"
expect "resuming what is not suspended fails" 1 "$?"
grep -q "sluice: resume: held.test: no suspended destination by that name" \
    "$tmp/err" && ok "... and says so" || not_ok "... and says so"
s suspend held.test soon >/dev/null 2>"$tmp/err"
expect "a bad duration fails" 1 "$?"
grep -q "sluice: suspend: expected a time like 300s, 5m, 1h" "$tmp/err" &&
    ok "... with the expected form" || not_ok "... with the expected form"
s suspend >/dev/null 2>&1
expect "suspend without a destination is a usage error" 64 "$?"
s suspend 'bad@dest[' >/dev/null 2>"$tmp/err"
expect "a destination that does not route fails" 1 "$?"

# Hostile clients, each on its own session.
raw() { # raw DATA: send DATA (Python escapes), print the first reply line
    python3 - "$q/private/control" "$1" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(15)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
try:
    print(s.recv(4096).decode("latin-1").split("\n")[0])
except Exception as e:
    print("no reply: %s" % e)
PYEOF
}
expect "garbage gets an error" 'error unknown request "GET"' \
    "$(raw 'GET / HTTP/1.0\r\n\r\n')"
expect "an endless line gets an error" "error request longer than 1024 bytes" \
    "$(raw "$(head -c 5000 /dev/zero | tr '\0' x)")"
expect "a NUL byte gets an error" "error request holds a NUL byte" \
    "$(raw 'sta\x00tus\n')"
expect "unknown status arguments are refused" \
    'error unknown argument "--nope"' "$(raw 'status --nope\n')"
python3 - "$q/private/control" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"stat")
s.close()
PYEOF
ok "a client that closes mid-request"

# Sixteen silent sessions fill the table: one more is refused at once;
# once they time out (10 s), status answers again.
python3 - "$q/private/control" "$tmp/silent" <<'PYEOF' &
import socket, sys, time
socks = []
for i in range(16):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    socks.append(s)
time.sleep(0.5)
extra = socket.socket(socket.AF_UNIX)
extra.connect(sys.argv[1])
extra.settimeout(5)
busy = extra.recv(200).decode().strip()
replies = []
for s in socks:
    s.settimeout(15)
    replies.append(s.recv(200).decode().strip())
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(busy + "\n" + str(len(set(replies))) + " " + replies[0] + "\n")
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
PYEOF
silent=$!
pids="$pids $silent"
wait_for 20 test -s "$tmp/silent"
expect "one session more than allowed is refused at once" \
    "error busy: too many control sessions" "$(sed -n 1p "$tmp/silent")"
expect "silent sessions end after 10 s with an error" \
    "1 error no request within 10 seconds" "$(sed -n 2p "$tmp/silent")"
s status >/dev/null 2>&1
expect "status answers again afterwards" 0 "$?"
kill -0 "$sluiced_pid" 2>/dev/null && ok "the daemon survived every client" ||
    not_ok "the daemon survived every client"

kill "$sluiced_pid"
wait "$sluiced_pid" 2>/dev/null
s status >/dev/null 2>"$tmp/err"
expect "no daemon: exit status 69" 69 "$?"
grep -q "sluice: status: sluiced is not running on queue $q" "$tmp/err" &&
    ok "no daemon: a clear message" || not_ok "no daemon: a clear message"
s suspend held.test >/dev/null 2>"$tmp/err"
expect "no daemon: suspend exits 69" 69 "$?"
s resume held.test >/dev/null 2>&1
expect "no daemon: resume exits 69" 69 "$?"
s top -n 1 >/dev/null 2>&1
expect "no daemon: top exits 69" 69 "$?"
tap_done
