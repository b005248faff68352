#!/bin/sh
# zmailer_threads.sh BUILD - the zmailer delivery scheduler's threads and
# agents with the built-in SMTP session (issue 20, decisions 124 to 126),
# one check per sentence of seeds/zmailer-scheduler-notes.txt, against
# count_sink.py (which counts connections per port) and Postfix's
# smtp-sink. Bounded in time, stops only the processes it started.
# Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 command -v python3
need smtp-sink test -x "$sink"
chmod 711 "$tmp"

pa=$(free_port)
pb=$(free_port)
start_count_sink cs "$pa $pb" --data-delay 0.15 ||
    not_ok "count_sink listens"
# smtp-sink on another address, so that no ageorder clause matches it
port_ss=$(free_port)
"$sink" $sink_user_opt 127.0.0.2:"$port_ss" 64 2>/dev/null &
pids="$pids $!"
cat >"$tmp/transport" <<EOF
a.test relay:[127.0.0.1]:$pa
b.test relay:[127.0.0.1]:$pb
s.test relay:[127.0.0.2]:$port_ss
EOF
# maxta=1: one agent in all, so that b.test's thread meets the limit
# while a.test's runs; idlemax=2s so that the pool's expiry is seen.
cat >"$tmp/rules" <<EOF
*/*     maxta=1 idlemax=2s
relay/127.0.0.1  ageorder
        command=smtp
relay/* command=smtp
EOF
if sluiced_start "$tmp/d" "relay_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules"; then
    ok "sluiced starts with relay under zmailer"
else
    not_ok "sluiced starts with relay under zmailer"
    cat "$tmp/d/log" >&2
    tap_done
fi
expect "no warning that zmailer delivers as postfix any more" 0 \
    "$(grep -c -F 'delivers as under the postfix scheduler' "$tmp/d/log")"
s() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
send() { # send RCPT MESSAGE-ID
    printf 'Message-ID: <%s>\nSubject: %s\n\nbody\n' "$2" "$2" |
        s sendmail -f sender@sluice.test "$1"
}
sent() { grep -c "$1.*status=sent" "$tmp/d/log"; }
sent_ge() { test "$(sent "$1")" -ge "$2"; }

# "if there is no thread with same set of triplet: config/channel/
# thread, a new thread is created, else the new vertex is appended into
# the existing thread": six messages to a.test, one thread.
for i in 1 2 3 4 5 6; do send "u$i@a.test" "a$i@t"; done
# "Only one transport agent is to be running on any given thread at any
# given moment": b.test's eight wait for the only agent (maxta=1).
for i in 1 2 3 4 5 6 7 8; do send "u$i@b.test" "b$i@t"; done
# "All threads are grouped into thread-rings, which contain such threads
# that can be processed with same transport agent": a connection serves
# one host, so the built-in agent's rings are a host's (decision 124).
# While a.test's run goes on, b.test's thread waits in a ring of its own.
s status --json >"$tmp/rings.json"
python3 - "$tmp/rings.json" <<'PY' &&
import json, sys
st = json.load(open(sys.argv[1]))
z = [t for t in st["transports"] if t["name"] == "relay"][0]["zmailer"]
assert z["rings"] == 2 and z["threads"] == 2, z
assert z["agents"] == 1 and z["running"] == 1, z
assert z["vertices"] >= 9, z
PY
    ok "two hosts, two threads in two rings, one agent running" ||
    not_ok "two hosts, two threads in two rings, one agent running"
wait_for 15 sent_ge '@[ab].test' 14
expect "all 14 messages delivered" 14 "$(sent '@[ab].test')"
expect "each received once" 14 "$(wc -l <"$tmp/cs.ids")"
expect "a.test: one connection at a time" 1 "$(counter cs max_open "$pa")"
expect "a.test: all six down one connection" 1 "$(counter cs connections "$pa")"
expect "b.test: one connection at a time" 1 "$(counter cs max_open "$pb")"
expect "never more than maxta=1 connections at once" 1 \
    "$(counter cs max_open_all "")"
# "All attempted threads that met resource limits, are re-scheduled":
# b.test's thread had a.test's idle agent ended to make room (maxta).
grep -q -F "zmailer: transport relay: agent 1 for [127.0.0.1]:$pa ended to make room (maxta)" \
    "$tmp/d/log" && ok "maxta: a.test's idle agent ended for b.test's thread" ||
    not_ok "maxta: a.test's idle agent ended for b.test's thread"
# "(Here use of 'ageorder' will make sure the order is kept in strict
# ascending age order.)": b.test's thread started with all eight in it.
b_order=$(awk -v p="$pb" '$1 == p { printf "%s ", $2 }' "$tmp/cs.ids")
expect "ageorder: the receiver saw b.test's mail oldest first" \
    "<b1@t> <b2@t> <b3@t> <b4@t> <b5@t> <b6@t> <b7@t> <b8@t> " "$b_order"
# "the programs are moved into thread-ring idle pool, from which they
# can be taken into active use, in case a new job appears"
send "u9@b.test" "b9@t"
wait_for 10 sent_ge '@b.test' 9
expect "a new vertex for b.test reuses the idle agent's connection" 1 \
    "$(counter cs connections "$pb")"
grep 'to=<u9@b.test>' "$tmp/d/log" | grep -q 'conn_use=9' &&
    ok "logged with conn_use=9: the ninth message down that connection" ||
    not_ok "logged with conn_use=9: the ninth message down that connection"
# "If no jobs appear within some time (configurable with 'idlemax='
# entry in config file), the transporter programs from idle pool are
# killed."
wait_for 6 grep -q -F "agent 2 for [127.0.0.1]:$pb ended after idlemax" \
    "$tmp/d/log" && ok "idlemax: the idle agent ends, logged" ||
    not_ok "idlemax: the idle agent ends, logged"
closed() { test "$(counter cs open "$pb")" = 0; }
wait_for 5 closed &&
    ok "idlemax: its connection is closed" ||
    not_ok "idlemax: its connection is closed"

# "Order of vertices within the thread is randomized at the initiation
# time": s.test has no ageorder; its eight wait behind a busy agent
# (maxta) and start together, shuffled.
for i in 1 2; do send "v$i@a.test" "c$i@t"; done
for i in 1 2 3 4 5 6 7 8; do send "r$i@s.test" "s$i@t"; done
wait_for 15 sent_ge 'to=<r.@s.test>' 8
expect "s.test: all eight delivered to smtp-sink" 8 "$(sent 'to=<r.@s.test>')"
s_order=$(grep -o 'to=<r.@s.test>' "$tmp/d/log" | cut -c5-6 | tr -d '\n')
[ "$s_order" != "r1r2r3r4r5r6r7r8" ] &&
    ok "randomized: s.test's thread ran in another order ($s_order)" ||
    not_ok "randomized: s.test's thread ran in another order ($s_order)"

s status --json >"$tmp/status.json"
python3 - "$tmp/status.json" <<'PY' &&
import json, sys
st = json.load(open(sys.argv[1]))
t = [t for t in st["transports"] if t["name"] == "relay"][0]
z = t["zmailer"]
assert set(z) == {"threads", "rings", "agents", "running", "idle",
                  "vertices"}, z
assert z["agents"] <= 1 and z["agents"] == z["idle"] + z["running"], z
assert z["threads"] == 0 and z["vertices"] == 0, z
PY
    ok "sluice status --json: relay's threads, rings and agents" ||
    not_ok "sluice status --json: relay's threads, rings and agents"
s status | grep -q -E '^  zmailer: 0 threads in [01] rings, [01] agents \([0-9]+ running, [01] idle\), 0 vertices$' &&
    ok "sluice status says the same as text" ||
    not_ok "sluice status says the same as text"
tap_done
