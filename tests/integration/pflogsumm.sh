#!/bin/sh
# pflogsumm.sh BUILD - sluiced's log read by Postfix's own log summarizer:
# a run with a known outcome (4 messages received over SMTP and 2 from
# sluice sendmail; 4 recipients delivered to a sink, 2 messages deferred
# at a port where nothing listens, 1 bounced by the error transport)
# logs through maillog_file, and pflogsumm (Debian's, --syslog-name=sluice)
# reports exactly those counts. The -f log on standard error has the
# same form. Bounded in time (about 10 s), stops only what it started.
# Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need pflogsumm command -v pflogsumm
need swaks command -v swaks
need python3 command -v python3

sink_port=$(free_port)
dead_port=$(free_port)
smtp_port=$(free_port)
start_count_sink sink "$sink_port" || { not_ok "the sink starts"; tap_done; }
cat >"$tmp/transport" <<EOF
ok.test relay:[127.0.0.1]:$sink_port
dead.test relay:[127.0.0.1]:$dead_port
gone.test error:5.1.1 no such domain here
EOF
sluiced_start "$tmp" "smtpd_listen = 127.0.0.1:$smtp_port
maillog_file = $tmp/maillog
minimal_backoff_time = 1h
maximal_backoff_time = 2h" || { not_ok "sluiced starts"; tap_done; }
conf=$tmp/sluice.conf

# Received: 4 over SMTP (one with two recipients), 2 from sendmail.
smtp() { # smtp FROM TO...
    from=$1
    shift
    to=$(printf '%s,' "$@")
    swaks --server 127.0.0.1:"$smtp_port" --from "$from" --to "${to%,}" \
        --helo client.test --silent 2 >>"$tmp/swaks.out" 2>&1
}
smtp s@host.test a@ok.test b@ok.test
smtp s@host.test c@ok.test
smtp s@host.test d@dead.test
smtp '<>' x@gone.test
printf 'Subject: s1\n\nbody\n' | "$build/sluice" -c "$conf" sendmail \
    -f s@host.test e@ok.test
printf 'Subject: s2\n\nbody\n' | "$build/sluice" -c "$conf" sendmail \
    -f s@host.test f@dead.test
settled() {
    [ "$(grep -c 'status=sent' "$tmp/maillog")" = 4 ] &&
        [ "$(grep -c 'status=deferred' "$tmp/maillog")" = 2 ] &&
        [ "$(grep -c 'status=bounced' "$tmp/maillog")" = 1 ]
}
if wait_for 15 settled; then
    ok "the run: 4 sent, 2 deferred, 1 bounced"
else
    not_ok "the run: 4 sent, 2 deferred, 1 bounced"
    sed 's/^/#   /' "$tmp/maillog"
fi

summary() { # summary FILE: "received delivered deferred bounced"
    pflogsumm --syslog-name=sluice "$1" 2>"$tmp/pflogsumm.err" |
        awk '$2 == "received" && !r { r = $1 }
             $2 == "delivered" && !d { d = $1 }
             $2 == "deferred" && !f { f = $1 }
             $2 == "bounced" && !b { b = $1 }
             END { print r + 0, d + 0, f + 0, b + 0 }'
}
expect "pflogsumm over maillog_file: received, delivered, deferred, bounced" \
    "6 4 2 1" "$(summary "$tmp/maillog")"
# The -f log is the same, among the daemon's own lines.
expect "pflogsumm over the -f log" "6 4 2 1" "$(summary "$tmp/log")"
line=$(grep ' sluice/smtpd\[' "$tmp/maillog" | grep -m1 ': client=')
case $line in
20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9].[0-9][0-9][0-9][+-][0-9][0-9]:[0-9][0-9]\ *\ sluice/smtpd\[[0-9]*\]:\ [0-9A-Z]*:\ client=*)
    ok "a line has an RFC 3339 time with its offset, the host, sluice/smtpd[PID]" ;;
*) not_ok "a line has an RFC 3339 time with its offset, the host, sluice/smtpd[PID]"
   echo "#   $line" ;;
esac
grep -q ' sluice/qmgr\[[0-9]*\]: [0-9A-Z]*: from=<s@host.test>, size=[0-9]*, nrcpt=2 (queue active)$' \
    "$tmp/maillog" && ok "qmgr: from=, size=, nrcpt= (queue active)" ||
    not_ok "qmgr: from=, size=, nrcpt= (queue active)"
grep -q ' sluice/relay\[[0-9]*\]: [0-9A-Z]*: to=<a@ok.test>, relay=127.0.0.1\[127.0.0.1\]:[0-9]*, .*status=sent' \
    "$tmp/maillog" && ok "a delivery is its transport's line" ||
    not_ok "a delivery is its transport's line"
grep -q ' sluice/pickup\[[0-9]*\]: [0-9A-Z]*: uid=[0-9]* from=<s@host.test>' \
    "$tmp/maillog" && ok "sendmail's message is pickup's line" ||
    not_ok "sendmail's message is pickup's line"
ids=$(grep -c ' sluice/cleanup\[[0-9]*\]: [0-9A-Z]*: message-id=<[^>]*@[^>]*>$' "$tmp/maillog")
expect "cleanup: message-id= for every message received" 6 "$ids"
tap_done
