#!/bin/sh
# finch.sh - Finch's delivery scheduler (issue 19,
# ../shared/seeds/finch-mta-scheduling.txt) against real MX records:
# dnsmasq serves spread.test with four exchangers of equal preference
# (127.0.0.11 to .14), each a counting receiver on the same port, and
# 4,000 messages through the SMTP server must spread over them ("If there
# are destinations on its unused list the job should pick one at random
# ... thereby spreading our load onto a part of the destination cluster we
# haven't used yet"), the connections aged out after 0.3 s ("We want
# to close active connections after a time to spread load around even
# when it is low"): every host between 15 and 35 %, every message once,
# fewer connections than messages (jobs queue on connections). dead.test
# has four exchangers, one answering every connection with 421: everything
# is delivered by the other three, and the bad host is tried no more often
# than its retry time allows ("For broken destinations it records when we
# should next bother to try"). closer.test's only exchanger closes each
# connection after its third message, with jobs queued behind it: "If the
# connection has a queue of pending jobs when it is closed then these must
# be re-scheduled": nothing lost, nothing doubled. strict.test's server is
# aiosmtpd, a strict peer, taking jobs queued down shared connections.
# Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need dnsmasq-base command -v dnsmasq
need postfix test -x /usr/sbin/smtp-source
need python3 test -x /usr/bin/python3
need python3-aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'

. tests/integration/lib/daemon_lib.sh
chmod 711 "$tmp"

port=$(free_port)
dns_port=$(free_port)
smtpd_port=$(free_port)
dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= \
    --port="$dns_port" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local=/test/ \
    --mx-host=spread.test,mx1.spread.test,10 \
    --mx-host=spread.test,mx2.spread.test,10 \
    --mx-host=spread.test,mx3.spread.test,10 \
    --mx-host=spread.test,mx4.spread.test,10 \
    --host-record=mx1.spread.test,127.0.0.11 \
    --host-record=mx2.spread.test,127.0.0.12 \
    --host-record=mx3.spread.test,127.0.0.13 \
    --host-record=mx4.spread.test,127.0.0.14 \
    --mx-host=dead.test,mx1.dead.test,10 \
    --mx-host=dead.test,mx2.dead.test,10 \
    --mx-host=dead.test,mx3.dead.test,10 \
    --mx-host=dead.test,mx4.dead.test,10 \
    --host-record=mx1.dead.test,127.0.0.21 \
    --host-record=mx2.dead.test,127.0.0.22 \
    --host-record=mx3.dead.test,127.0.0.23 \
    --host-record=mx4.dead.test,127.0.0.24 \
    --mx-host=closer.test,mx.closer.test,10 \
    --host-record=mx.closer.test,127.0.0.31 \
    2>"$tmp/dnsmasq.log" &
pids="$pids $!"
for h in 11 12 13 14 21 22 23 31; do
    opt=
    [ "$h" = 31 ] && opt="--close-after 3"
    # shellcheck disable=SC2086
    python3 "$count_sink" --listen "127.0.0.$h" --stats "$tmp/h$h.stats" \
        --ids "$tmp/h$h.ids" $opt "$port" 2>>"$tmp/h$h.err" &
    pids="$pids $!"
done
python3 "$count_sink" --listen 127.0.0.24 --stats "$tmp/h24.stats" \
    --greeting "421 4.3.2 service not available" "$port" 2>>"$tmp/h24.err" &
pids="$pids $!"
all_listen() {
    for h in 11 12 13 14 21 22 23 24 31; do
        [ -f "$tmp/h$h.stats" ] || return 1
    done
}
wait_for 10 all_listen && ok "nine receivers listen" || not_ok "nine receivers listen"
# A strict receiver (aiosmtpd) for the jobs queued down one connection.
strict_port=$(free_port)
mkdir -p "$tmp/strict"
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/strict" \
    "$strict_port" 2>"$tmp/strict.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/strict/ready" || not_ok "aiosmtpd listens"
stat() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$tmp/h$1.stats"; }

cat >"$tmp/transport" <<EOF
spread.test smtp:spread.test:$port
dead.test smtp:dead.test:$port
closer.test smtp:closer.test:$port
strict.test smtp:[127.0.0.1]:$strict_port
EOF
d=$tmp/run
sluiced_start "$d" "smtpd_listen = 127.0.0.1:$smtpd_port
dns_servers = 127.0.0.1:$dns_port
smtp_delivery_scheduler = finch
smtp_active_connection_max_age = 300ms
queue_run_delay = 1s
minimal_backoff_time = 300s
maximal_backoff_time = 300s" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }

total() {
    sum=0
    for h in $1; do sum=$((sum + $(stat "$h" messages))); done
    echo "$sum"
}

# 4,000 single-recipient messages to spread.test, 20 sessions at once.
smtp-source -s 20 -m 4000 -f s@sluice.test -t r@spread.test \
    "127.0.0.1:$smtpd_port" 2>"$tmp/source.err" ||
    not_ok "smtp-source delivers its 4,000 messages to sluiced"
spread_done() { [ "$(total '11 12 13 14')" -ge 4000 ]; }
wait_for 90 spread_done || not_ok "4,000 messages reach the exchangers within 90 s"
expect "spread.test: every message received once" 4000 "$(total '11 12 13 14')"
conns=0
for h in 11 12 13 14; do
    got=$(stat "$h" messages)
    conns=$((conns + $(stat "$h" connections)))
    echo "# mx$((h - 10)).spread.test: $got messages on $(stat "$h" connections) connections"
    if [ "$got" -ge 600 ] && [ "$got" -le 1400 ]; then
        ok "mx$((h - 10)).spread.test has between 15 and 35 % ($got)"
    else
        not_ok "mx$((h - 10)).spread.test has between 15 and 35 % ($got)"
    fi
done
[ "$conns" -lt 1000 ] && ok "jobs share connections ($conns for 4,000 messages)" ||
    not_ok "jobs share connections ($conns for 4,000 messages)"
expect "spread.test: 4,000 logged as sent" 4000 \
    "$(grep -c 'to=<r@spread.test>, relay=mx[1-4].spread.test.*status=sent' "$d/log")"

# dead.test: one exchanger of four answers 421 to every connection.
smtp-source -s 5 -m 400 -f s@sluice.test -t r@dead.test \
    "127.0.0.1:$smtpd_port" 2>>"$tmp/source.err" ||
    not_ok "smtp-source delivers its 400 messages to sluiced"
dead_done() { [ "$(total '21 22 23')" -ge 400 ]; }
wait_for 60 dead_done || not_ok "400 messages reach dead.test's good exchangers"
expect "dead.test: every message received once by the three good hosts" 400 \
    "$(total '21 22 23')"
tries=$(stat 24 connections)
echo "# mx4.dead.test (421) was connected to $tries times"
if [ "$tries" -ge 1 ] && [ "$tries" -le 8 ]; then
    ok "the bad exchanger is tried, then left alone until its retry time ($tries)"
else
    not_ok "the bad exchanger is tried, then left alone until its retry time ($tries)"
fi
expect "dead.test: nothing deferred for good" 0 \
    "$(grep 'to=<r@dead.test>' "$d/log" | grep -c 'status=bounced')"

# closer.test: the server closes each connection after three messages.
smtp-source -s 5 -m 200 -f s@sluice.test -t r@closer.test \
    "127.0.0.1:$smtpd_port" 2>>"$tmp/source.err" ||
    not_ok "smtp-source delivers its 200 messages to sluiced"
closer_done() { [ "$(total 31)" -ge 200 ] && [ "$(grep -c 'to=<r@closer.test>.*status=sent' "$d/log")" -ge 200 ]; }
wait_for 120 closer_done || not_ok "200 messages reach closer.test within 120 s"
expect "closer.test: every message received" 200 "$(total 31)"
expect "closer.test: no message received twice" "" \
    "$(cut -d' ' -f2 "$tmp/h31.ids" | sort | uniq -d | head -3)"
echo "# mx.closer.test: $(stat 31 connections) connections"
expect "closer.test: each logged as sent once" 200 \
    "$(grep 'to=<r@closer.test>' "$d/log" | grep -c 'status=sent')"
# strict.test: aiosmtpd, an independently written server, takes the jobs
# that follow each other down one connection, MAIL after the last reply.
smtp-source -s 5 -m 60 -f s@sluice.test -t r@strict.test \
    "127.0.0.1:$smtpd_port" 2>>"$tmp/source.err" ||
    not_ok "smtp-source delivers its 60 messages to sluiced"
strict_done() { [ "$(grep -c 'to=<r@strict.test>.*status=sent' "$d/log")" -ge 60 ]; }
wait_for 60 strict_done || not_ok "60 messages reach aiosmtpd within 60 s"
expect "strict.test: aiosmtpd stored 60 messages, one recipient each" "60 60" \
    "$(ls "$tmp/strict"/*.eml | wc -l) $(cat "$tmp/strict"/*.eml | grep -c '^to: r@strict.test$')"
grep 'to=<r@strict.test>' "$d/log" | grep -q 'conn_use=[2-9]' &&
    ok "strict.test: jobs went down shared connections" ||
    not_ok "strict.test: jobs went down shared connections"
expect "strict.test: nothing deferred" 0 \
    "$(grep 'to=<r@strict.test>' "$d/log" | grep -c 'status=deferred')"
kill "$sluiced_pid"
wait "$sluiced_pid"
grep -q 'panic\|ERROR: AddressSanitizer' "$d/log" &&
    { not_ok "no panic"; grep 'panic\|Sanitizer' "$d/log" | head -5 | sed 's/^/#   /'; } ||
    ok "no panic"
tap_done
