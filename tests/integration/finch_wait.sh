#!/bin/sh
# finch_wait.sh - the wait of Finch's delivery scheduler in the daemon
# (issue 19): "If there are no active connections then this job must wait
# to be rescheduled when a worker becomes free". smtp_process_limit = 1
# allows one connection for the transport and, with
# smtp_connection_backlog_threshold = 2, two jobs in flight; a.test,
# c.test and e.test are three hosts (ports of one counting receiver that
# holds each end-of-data reply 0.4 s). A job for c.test that comes while
# a.test's connection carries a job has no connection to ride and may
# open none: it waits, and goes when a.test's connection is idle (closed
# for it). Nothing lost, nothing doubled, and the receiver never sees the
# client hold more than one connection at once. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need postfix test -x /usr/sbin/smtp-source

. tests/integration/lib/daemon_lib.sh

pa=$(free_port)
pc=$(free_port)
pe=$(free_port)
smtpd_port=$(free_port)
python3 "$count_sink" --stats "$tmp/sink.stats" --ids "$tmp/sink.ids" \
    --data-delay 0.4 "$pa" "$pc" "$pe" 2>"$tmp/sink.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/sink.stats" || not_ok "the receiver listens"
stat() { sed -n "s/^port=$1 .* $2=\([0-9]*\).*/\1/p" "$tmp/sink.stats"; }

cat >"$tmp/transport" <<EOT
a.test smtp:[127.0.0.1]:$pa
c.test smtp:[127.0.0.1]:$pc
e.test smtp:[127.0.0.1]:$pe
EOT
d=$tmp/run
sluiced_start "$d" "smtpd_listen = 127.0.0.1:$smtpd_port
smtp_delivery_scheduler = finch
smtp_process_limit = 1
smtp_connection_backlog_threshold = 2
queue_run_delay = 1s" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }
sent() { grep "to=<r@$1>" "$d/log" | grep -c 'status=sent'; }

# One message for a.test; while its end of data waits, one for c.test.
smtp-source -m 1 -f s@sluice.test -t r@a.test "127.0.0.1:$smtpd_port" ||
    not_ok "smtp-source submits the a.test message"
a_busy() { [ "$(stat "$pa" busy)" = 1 ]; }
wait_for 5 a_busy || not_ok "a.test's transaction is under way"
smtp-source -m 1 -f s@sluice.test -t r@c.test "127.0.0.1:$smtpd_port" ||
    not_ok "smtp-source submits the c.test message"
two_sent() { [ "$(sent a.test)" -ge 1 ] && [ "$(sent c.test)" -ge 1 ]; }
wait_for 10 two_sent || not_ok "both are delivered within 10 s"
expect "the waiting job went after the one holding the connection" \
    "$pa $pc" "$(cut -d' ' -f1 "$tmp/sink.ids" | tr '\n' ' ' | sed 's/ $//')"
expect "c.test: nothing deferred while it waited" 0 \
    "$(grep 'to=<r@c.test>' "$d/log" | grep -c 'status=deferred')"

# A burst for the three hosts at once: jobs wait their turn at the one
# connection, each is delivered once.
for dom in a.test c.test e.test; do
    smtp-source -s 2 -m 2 -f s@sluice.test -t "r@$dom" \
        "127.0.0.1:$smtpd_port" 2>>"$tmp/source.err" &
    pids="$pids $!"
    eval "src_$(echo "$dom" | cut -c1)=\$!"
done
# shellcheck disable=SC2154
for p in $src_a $src_c $src_e; do
    wait "$p" || not_ok "smtp-source submits its messages"
done
all_sent() { [ "$(sent a.test)" -ge 3 ] && [ "$(sent c.test)" -ge 3 ] && [ "$(sent e.test)" -ge 2 ]; }
wait_for 20 all_sent || not_ok "the burst is delivered within 20 s"
expect "every message received once" "8 8" \
    "$(wc -l <"$tmp/sink.ids") $(cut -d' ' -f2 "$tmp/sink.ids" | sort -u | wc -l)"
expect "per host: a.test 3, c.test 3, e.test 2" "3 3 2" \
    "$(stat "$pa" messages) $(stat "$pc" messages) $(stat "$pe" messages)"
expect "nothing deferred" 0 "$(grep -c 'status=deferred' "$d/log")"
expect "never more than one connection at once (smtp_process_limit)" 1 \
    "$(stat "$pa" max_open_all)"
kill "$sluiced_pid"
wait "$sluiced_pid"
grep -q 'panic\|ERROR: AddressSanitizer' "$d/log" &&
    { not_ok "no panic"; grep 'panic\|Sanitizer' "$d/log" | head -5 | sed 's/^/#   /'; } ||
    ok "no panic"
tap_done
