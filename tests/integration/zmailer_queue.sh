#!/bin/sh
# zmailer_queue.sh BUILD - the zmailer delivery scheduler's queue side
# (issue 20, decisions 124 to 126) against aiosmtpd, a strict receiver:
# a failed connection ends its thread's run, the rest deferred without a
# try; retries follow the rule's retries and interval, not the backoff;
# a queueonly thread starts only for ETRN or "sluice flush" of its host;
# a reload swaps the rules whole, nothing lost. Bounded in time, stops
# only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'
need python3 command -v python3
chmod 711 "$tmp"

pa=$(free_port)
dead=$(free_port)
smtpd=$(free_port)
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/rx" "$pa" \
    2>"$tmp/rx.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/rx/ready" || not_ok "aiosmtpd listens"
cat >"$tmp/transport" <<EOF
dead.test relay:[127.0.0.1]:$dead
ok.test relay:[127.0.0.1]:$pa
held.test hold:[127.0.0.1]:$pa
etrn.test hold:[127.0.0.1]:$pa
late.test hold:[127.0.0.1]:$pa
EOF
# relay: retried after 1 s, 1 s, then 30 s; hold: queueonly, its held
# mail back every second (and held again) until ETRN or a flush.
cat >"$tmp/rules" <<EOF
relay/* interval=1s retries="1 1 30" command=smtp
hold/*  queueonly interval=1s command=smtp
EOF
if sluiced_start "$tmp/d" "transports = smtp:smtp, relay:smtp, hold:smtp
relay_delivery_scheduler = zmailer
hold_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules
queue_run_delay = 1s
smtpd_listen = 127.0.0.1:$smtpd
relay_domains = etrn.test
relay_destination_recipient_limit = 1"; then
    ok "sluiced starts with relay and hold under zmailer"
else
    not_ok "sluiced starts with relay and hold under zmailer"
    cat "$tmp/d/log" >&2
    tap_done
fi
s() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
send() { printf 'Subject: %s\n\nbody\n' "$1" | s sendmail -f s@sluice.test "$1"; }
count() { grep -c -F "$1" "$tmp/d/log"; }
count_ge() { test "$(count "$1")" -ge "$2"; }
received() { grep -l -F "to: $1" "$tmp"/rx/*.eml 2>/dev/null | wc -l; }
received_ge() { test "$(received "$1")" -ge "$2"; }

# Three recipients for a host that refuses connections, each its own
# vertex (relay_destination_recipient_limit = 1), one thread, one try:
# "All vertices within a thread are attempted to deliver at the
# same run": the two others are deferred in that run without a try.
printf 'Subject: r\n\nbody\n' |
    s sendmail -f s@sluice.test r1@dead.test r2@dead.test r3@dead.test
send "h1@held.test"
send "e1@etrn.test"
send "ok1@ok.test"
wait_for 5 count_ge 'status=deferred (delivery temporarily suspended: connect to 127.0.0.1' 2 &&
    ok "after a failed connection the thread's other vertices are deferred without one" ||
    not_ok "after a failed connection the thread's other vertices are deferred without one"
wait_for 5 received_ge "ok1@ok.test" 1
expect "aiosmtpd received the message for ok.test" 1 "$(received ok1@ok.test)"

# "(Except when the configuration is equiped with 'queueonly' option --
# then only SMTP originated "ETRN hostpart" will start the thread.)"
wait_for 6 count_ge 'to=<h1@held.test>' 2
expect "queueonly: h1@held.test held at arrival and again at its retry" 2 \
    "$(grep -c 'to=<h1@held.test>.*status=deferred (queueonly: held until ETRN or sluice flush for 127.0.0.1)' "$tmp/d/log")"
expect "queueonly: nothing reached the receiver" 0 "$(received h1@held.test)"
# retries="1 1 30" with interval=1s: tries at about 0, 1 and 2 s, then
# not for 30 s (minimal_backoff_time would have waited 300 s)
wait_for 5 count_ge 'to=<r1@dead.test>' 3
expect "retries: r1@dead.test deferred three times in a few seconds" 3 \
    "$(count 'to=<r1@dead.test>')"
s flush held.test >/dev/null
wait_for 5 received_ge "h1@held.test" 1 &&
    ok "sluice flush held.test: the queueonly thread runs, h1 delivered" ||
    not_ok "sluice flush held.test: the queueonly thread runs, h1 delivered"
expect "etrn.test stays held" 0 "$(received e1@etrn.test)"
python3 tests/integration/lib/smtp_clients.py raw 127.0.0.1 "$smtpd" \
    'EHLO c\r\nETRN etrn.test\r\nQUIT\r\n' >"$tmp/etrn.out"
grep -q '^25[0-3] ' "$tmp/etrn.out" && ok "ETRN etrn.test is accepted" ||
    not_ok "ETRN etrn.test is accepted"
wait_for 5 received_ge "e1@etrn.test" 1 &&
    ok "ETRN etrn.test: its queueonly thread runs, e1 delivered" ||
    not_ok "ETRN etrn.test: its queueonly thread runs, e1 delivered"

# A reload swaps the rules whole: hold without queueonly now. The mail
# held under the old rules comes back at its retry and is delivered.
send "l1@late.test"
wait_for 5 count_ge 'to=<l1@late.test>' 1
printf '%s\n' 'relay/* interval=1s retries="1 1 30" command=smtp' \
    'hold/* interval=1s command=smtp' >"$tmp/rules"
kill -HUP "$sluiced_pid"
wait_for 5 count_ge 'reloaded:' 1 && ok "SIGHUP: reloaded" || not_ok "SIGHUP: reloaded"
wait_for 5 count_ge 'ended by a reload' 1 &&
    ok "the idle agents of the old rules end at the reload" ||
    not_ok "the idle agents of the old rules end at the reload"
wait_for 6 received_ge "l1@late.test" 1 &&
    ok "after the reload the held message is delivered under the new rules" ||
    not_ok "after the reload the held message is delivered under the new rules"
expect "r1@dead.test: no fourth try within the 30 s factor" 3 \
    "$(count 'to=<r1@dead.test>')"
for r in ok1@ok.test h1@held.test e1@etrn.test l1@late.test; do
    expect "$r received exactly once" 1 "$(received "$r")"
done
kill -0 "$sluiced_pid" 2>/dev/null && ok "sluiced is still running" ||
    not_ok "sluiced is still running"
tap_done
