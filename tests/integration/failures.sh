#!/bin/sh
# failures.sh BUILD - what sluiced does when delivery fails, end to end on
# loopback against real receivers:
#   1. a 5xx for every RCPT (smtp-sink -f RCPT): the sender gets one
#      RFC 3464 notice per message, from the null sender, listing every
#      failed recipient with the server's reply; RET=HDRS returns headers;
#   2. no notice for a null-sender message, against NOTIFY=NEVER, or for
#      a notice that itself fails;
#   3. a 4xx for every RCPT past delay_warning_time: one delay notice per
#      message however many retries, none with NOTIFY=FAILURE;
#   4. NOTIFY=SUCCESS: a success notice for a local (discard) delivery,
#      none for a relay to a server that offers DSN (it reports itself);
#   5. a destination where every connection is refused at the greeting
#      (count_sink.py --greeting 421) is declared dead after a few
#      connections, the rest of its mail is deferred without connecting,
#      and all of it is delivered once the site comes back.
# Notices are parsed with Python's email package (lib/dsn_summary.py).
# Bounded in time, stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need postfix test -x "$sink"
need python3 command -v python3
dsn_summary=$(pwd)/tests/integration/lib/dsn_summary.py

# reply_to_rcpt PORT: the server's reply to a RCPT, as one line.
reply_to_rcpt() {
    python3 -c 'import smtplib, sys
s = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), "probe.test")
s.ehlo("probe.test")
s.mail("probe@probe.test")
code, text = s.rcpt("probe@probe.test")
print(code, text.decode())
s.quit()' "$1"
}

# The sinks run as postfix and write their dumps below $tmp.
chmod 711 "$tmp"
start_smtp_sink home || { not_ok "smtp-sink (home.test) starts"; tap_done; }
start_smtp_sink bad -f RCPT || { not_ok "smtp-sink -f RCPT starts"; tap_done; }
start_smtp_sink later -r RCPT || { not_ok "smtp-sink -r RCPT starts"; tap_done; }
start_smtp_sink dsn || { not_ok "smtp-sink (dsn.test) starts"; tap_done; }

# What the sinks say, from the horse's mouth: the notices must quote it.
bad_reply=$(reply_to_rcpt "$port_bad")
later_reply=$(reply_to_rcpt "$port_later")
echo "# smtp-sink -f RCPT: $bad_reply; -r RCPT: $later_reply"
bad_status=$(echo "$bad_reply" | awk '{ print $2 }')
later_status=$(echo "$later_reply" | awk '{ print $2 }')
case "$bad_status $later_status" in
5.*.*\ 4.*.*) ok "the sinks refuse RCPT with 5xx and 4xx replies" ;;
*) not_ok "the sinks refuse RCPT with 5xx and 4xx replies" ;;
esac
dsn_offered=$(python3 -c 'import smtplib, sys
s = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), "probe.test")
s.ehlo("probe.test")
print("yes" if s.has_extn("dsn") else "no")
s.quit()' "$port_dsn")
expect "smtp-sink offers DSN in its EHLO reply" yes "$dsn_offered"

q=$tmp/q
conf=$tmp/sluice.conf
cat >"$tmp/transport" <<EOF
home.test relay:[127.0.0.1]:$port_home
bad.test relay:[127.0.0.1]:$port_bad
later.test relay:[127.0.0.1]:$port_later
dsn.test relay:[127.0.0.1]:$port_dsn
ok.test discard:
EOF
cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen =
myhostname = host.test
transport_maps = $tmp/transport
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
delay_warning_time = 2s
EOF
s() { "$build/sluice" -c "$conf" "$@"; }
expect "delay_warning_time takes seconds" "delay_warning_time = 2s" \
    "$(s config delay_warning_time)"

: >"$tmp/log"
"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 grep -q "started: queue" "$tmp/log"; then
    ok "sluiced -f starts"
else
    not_ok "sluiced -f starts"
    tap_done
fi

# submit SUBJECT SENDMAIL-ARGS...: one message, its subject and body named
# after SUBJECT.
submit() {
    subject=$1
    shift
    printf 'Subject: %s\n\nbody of %s\n' "$subject" "$subject" |
        s sendmail "$@"
}
# id_of SENDER: the queue id of the one message submitted from SENDER
# ("none" if there is none: it matches nothing in the log).
id_of() {
    id=$(sed -n "s/^.* sluice\/pickup\[[0-9]*\]: \([0-9A-Z]*\): uid=[0-9]* from=<$1>\$/\1/p" \
        "$tmp/log")
    echo "${id:-none}"
}
# notices_to ADDR: the dumps at home.test whose envelope recipient is ADDR.
notices_to() { grep -l "^X-Rcpt-Args: <$1>" "$tmp"/home/* 2>/dev/null; }
count_lines() { wc -l | tr -d ' '; }
# logged PATTERN [LOG]: how many lines of the daemon's log match.
logged() { grep -c "$1" "${2:-$tmp/log}"; }

submit fail1 -f fail1@home.test -V envid-fail1 a@bad.test b@bad.test
submit hdrs -f hdrs@home.test -R hdrs c@bad.test
submit mixed -f mixed@home.test d@dsn.test e@bad.test
submit null1 -f '<>' n1@bad.test
submit never1 -f never@home.test -N never n2@bad.test
submit loop1 -f loop@bad.test l1@bad.test
submit delay1 -f delay@home.test w1@later.test
submit nodelay1 -f nodelay@home.test -N failure w2@later.test
submit succ1 -f succ@home.test -N success s1@ok.test
submit succdsn1 -f succdsn@home.test -N success -R hdrs -V envid-succdsn \
    s2@dsn.test

# 1. Failure notices. The five notices expected at home.test arrive
# (fail1, hdrs, mixed, and later succ and delay).
five_notices() { [ "$(find "$tmp/home" -type f | count_lines)" -ge 5 ]; }
if wait_for 20 five_notices; then
    ok "notices arrive at the senders' server"
else
    not_ok "notices arrive at the senders' server"
    tail -20 "$tmp/log" | sed 's/^/#   /'
fi

# check_notice WHAT ADDR EXPECTED: the one notice to ADDR summarised by
# dsn_summary.py, the lines matching the keys of EXPECTED, equal to it.
check_notice() {
    what=$1
    files=$(notices_to "$2")
    expect "$what: one notice to $2" 1 "$(echo "$files" | grep -c .)"
    keys=$(printf '%s\n' "$3" | sed 's/:.*//' | sort -u | paste -sd'|' -)
    got=$(for f in $files; do python3 "$dsn_summary" "$f"; done |
        grep -E "^($keys):")
    if [ "$got" = "$3" ]; then
        ok "$what: the notice says what it should"
    else
        not_ok "$what: the notice says what it should"
        echo "#   expected:"
        printf '%s\n' "$3" | sed 's/^/#     /'
        echo "#   got:"
        printf '%s\n' "$got" | sed 's/^/#     /'
    fi
}

# The delivery-status fields of a recipient refused by bad.test.
bad_rcpt() {
    echo "recipient: Final-Recipient: rfc822; $1 | Action: failed" \
        "| Status: $bad_status | Remote-MTA: dns; 127.0.0.1" \
        "| Diagnostic-Code: smtp; $bad_reply"
}
fail_head="mail_from: <>
subject: Returned mail: could not be delivered
content_type: multipart/report; report-type=delivery-status"

check_notice "5xx for 2 recipients" fail1@home.test "$fail_head
parts: text/plain message/delivery-status message/rfc822
defects: 0
text_recipients: a@bad.test b@bad.test
$(bad_rcpt a@bad.test)
$(bad_rcpt b@bad.test)
returned_subject: fail1
returned_body: body of fail1"

# RFC 3464 section 2.2: per-message-fields = [original-envelope-id]
# reporting-mta [dsn-gateway] [received-from-mta] [arrival-date]
# *(extension-field), in that order.
f=$(notices_to fail1@home.test | head -1)
summary=$(python3 "$dsn_summary" "$f")
field() { echo "$summary" | sed -n "s/^per_message: $1: //p"; }
expect "Reporting-MTA, Original-Envelope-Id; Arrival-Date present" \
    "dns; host.test, envid-fail1; 1" \
    "$(field Reporting-MTA), $(field Original-Envelope-Id);\
 $(field Arrival-Date | grep -c .)"
expect "the per-message fields in RFC 3464 order" "Original-Envelope-Id \
Reporting-MTA Arrival-Date X-Sluice-Queue-ID X-Sluice-Sender" \
    "$(echo "$summary" | sed -n 's/^per_message_order: //p')"

check_notice "RET=HDRS" hdrs@home.test "$fail_head
parts: text/plain message/delivery-status text/rfc822-headers
defects: 0
$(bad_rcpt c@bad.test)
returned_subject: hdrs
returned_body: "

check_notice "one of 2 recipients refused" mixed@home.test "$fail_head
parts: text/plain message/delivery-status message/rfc822
text_recipients: e@bad.test
$(bad_rcpt e@bad.test)
returned_subject: mixed"
expect "the other recipient was delivered" 1 \
    "$(grep -l '^Subject: mixed$' "$tmp"/dsn/* 2>/dev/null | count_lines)"

# 3. The delay notice: once, after delay_warning_time, although the
# message keeps being retried. Wait for two more deferrals after it.
delay_id=$(id_of delay@home.test)
nodelay_id=$(id_of nodelay@home.test)
deferrals_after_notice() {
    awk -v id="$delay_id" '
        index($0, id ": sender delay notification: ") { seen = 1; next }
        seen && index($0, id ": to=<w1@later.test>") && /status=deferred/ { n++ }
        END { print n + 0 }' "$tmp/log"
}
retried() { [ "$(deferrals_after_notice)" -ge 2 ]; }
if wait_for 20 retried; then
    ok "the delayed message is retried after its delay notice"
else
    not_ok "the delayed message is retried after its delay notice"
    grep "$delay_id" "$tmp/log" | sed 's/^/#   /'
fi
expect "one delay notice logged for the message" 1 \
    "$(logged "$delay_id: sender delay notification: ")"
check_notice "4xx past delay_warning_time" delay@home.test "mail_from: <>
subject: Delayed mail: not delivered yet
content_type: multipart/report; report-type=delivery-status
parts: text/plain message/delivery-status text/rfc822-headers
defects: 0
text_recipients: w1@later.test
recipient: Final-Recipient: rfc822; w1@later.test | Action: delayed \
| Status: $later_status | Remote-MTA: dns; 127.0.0.1 \
| Diagnostic-Code: smtp; $later_reply | Will-Retry-Until: arrival+432000s
returned_subject: delay1
returned_body: "
# The oldest deferral of the NOTIFY=FAILURE message (delay= is its age).
oldest=$(grep "$nodelay_id: to=<w2@later.test>, .*status=deferred" "$tmp/log" |
    sed 's/.*, delay=\([0-9.]*\),.*/\1/' | sort -n | tail -1)
if awk -v d="${oldest:-0}" 'BEGIN { exit !(d >= 2) }'; then
    ok "NOTIFY=FAILURE: the message was retried past delay_warning_time"
else
    not_ok "NOTIFY=FAILURE: the message was retried past delay_warning_time"
    echo "#   oldest deferral: delay=$oldest"
fi
expect "NOTIFY=FAILURE: no delay notice" "0 0" \
    "$(logged "$nodelay_id: sender") $(notices_to nodelay@home.test | count_lines)"

# 4. NOTIFY=SUCCESS.
check_notice "NOTIFY=SUCCESS, discarded" succ@home.test "mail_from: <>
subject: Delivery report: message delivered
content_type: multipart/report; report-type=delivery-status
parts: text/plain message/delivery-status text/rfc822-headers
defects: 0
text_recipients: s1@ok.test
recipient: Final-Recipient: rfc822; s1@ok.test | Action: delivered \
| Status: 2.0.0 | Diagnostic-Code: X-Sluice; discarded
returned_subject: succ1
returned_body: "
succdsn_id=$(id_of succdsn@home.test)
expect "NOTIFY=SUCCESS to a DSN server: delivered there" 1 \
    "$(logged "$succdsn_id: to=<s2@dsn.test>, .*status=sent")"
expect "NOTIFY=SUCCESS to a DSN server: no notice from sluice" "0 0" \
    "$(logged "$succdsn_id: sender") $(notices_to succdsn@home.test | count_lines)"
# RFC 3461 section 6.2: relayed to a server that offers DSN, NOTIFY, RET
# and ENVID go with the message.
f=$(grep -l '^Subject: succdsn1$' "$tmp"/dsn/* 2>/dev/null | head -1)
args=$(sed -n 's/^X-Rcpt-Args: //p' "$f" 2>/dev/null)
case "$args" in
"<s2@dsn.test> NOTIFY=SUCCESS"*) ok "NOTIFY=SUCCESS is passed to the next hop" ;;
*)
    not_ok "NOTIFY=SUCCESS is passed to the next hop"
    echo "#   X-Rcpt-Args: $args"
    ;;
esac
args=$(sed -n 's/^X-Mail-Args: //p' "$f" 2>/dev/null)
case "$args" in
"<succdsn@home.test>"*" RET=HDRS"*) ok "RET=HDRS is passed to the next hop" ;;
*) not_ok "RET=HDRS is passed to the next hop" && echo "#   X-Mail-Args: $args" ;;
esac
case "$args" in
"<succdsn@home.test>"*" ENVID=envid-succdsn"*) ok "ENVID is passed to the next hop" ;;
*) not_ok "ENVID is passed to the next hop" && echo "#   X-Mail-Args: $args" ;;
esac

# 2. No notice for a null sender, against NOTIFY=NEVER, for a notice.
# Seconds have passed since they bounced: a notice would be logged.
null_id=$(id_of '')
expect "null sender: the message bounced, no notice" "1 0" \
    "$(logged "$null_id: to=<n1@bad.test>, .*status=bounced")\
 $(logged "$null_id: sender")"
never_id=$(id_of never@home.test)
expect "NOTIFY=NEVER: the message bounced, no notice" "1 0 0" \
    "$(logged "$never_id: to=<n2@bad.test>, .*status=bounced")\
 $(logged "$never_id: sender") $(notices_to never@home.test | count_lines)"
loop_id=$(id_of loop@bad.test)
loop_notice=$(sed -n "s/^.* $loop_id: sender non-delivery notification: //p" \
    "$tmp/log")
if [ -n "$loop_notice" ]; then
    ok "a sender in a failing domain is sent a notice"
else
    not_ok "a sender in a failing domain is sent a notice"
    loop_notice=none
fi
expect "the notice itself bounces, and gets no notice" "1 0" \
    "$(logged "$loop_notice: to=<loop@bad.test>, .*status=bounced")\
 $(logged "$loop_notice: sender")"
expect "the failed notice is removed" 1 "$(logged "$loop_notice: removed\$")"

# Every notice made, and only those: 4 failures (fail1, hdrs, mixed,
# loop), 1 delay, 1 success; 5 at home.test.
expect "notices logged: non-delivery, delay, delivery status" "4 1 1" \
    "$(logged ': sender non-delivery notification: ')\
 $(logged ': sender delay notification: ')\
 $(logged ': sender delivery status notification: ')"
expect "notices received at home.test" 5 \
    "$(find "$tmp/home" -type f | count_lines)"
expect "every notice from the null sender" 5 \
    "$(grep -l '^X-Mail-Args: <>' "$tmp"/home/* 2>/dev/null | count_lines)"

kill -TERM "$daemon"
wait "$daemon"
expect "sluiced stops on SIGTERM, exit status 0" 0 $?

# 5. A dead destination. Twenty messages wait in the spool (stored by
# sendmail while no daemon runs, so that the daemon sees them at once);
# every connection to dead.test gets a 421 greeting. With the default
# failed-cohort limit (1) and initial concurrency (5), a few failed
# connections declare the destination dead and the rest of its mail is
# deferred without connecting; the backoff is long enough (3 s) that the
# count is taken before the first retry.
dead_port=$(free_port)
python3 "$count_sink" --stats "$tmp/dead.stats" \
    --greeting "421 4.3.2 Service not available" "$dead_port" \
    2>>"$tmp/dead.err" &
dead_sink=$!
pids="$pids $dead_sink"
wait_for 10 test -f "$tmp/dead.stats" ||
    { not_ok "count_sink.py --greeting starts"; tap_done; }
# counter STATS KEY: a count_sink.py counter.
counter() {
    tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1
}
q2=$tmp/q2
conf2=$tmp/sluice2.conf
echo "dead.test relay:[127.0.0.1]:$dead_port" >"$tmp/transport2"
cat >"$conf2" <<EOF
queue_directory = $q2
smtpd_listen =
myhostname = host.test
transport_maps = $tmp/transport2
queue_run_delay = 1s
minimal_backoff_time = 3s
maximal_backoff_time = 3s
EOF
s2() { "$build/sluice" -c "$conf2" "$@"; }
s2 import >/dev/null # the spool, for sendmail without a daemon
expect "defaults: failed cohort limit 1, initial concurrency 5" "1 5" \
    "$(s2 config default_destination_concurrency_failed_cohort_limit \
        initial_destination_concurrency | sed 's/.* = //' | paste -sd' ' -)"
msgs=20
i=1
while [ $i -le $msgs ]; do
    printf 'Subject: dead%d\n\nbody\n' $i |
        s2 sendmail -f sender@host.test "u$i@dead.test"
    i=$((i + 1))
done
: >"$tmp/log2"
"$build/sluiced" -f -c "$conf2" 2>>"$tmp/log2" &
daemon=$!
pids="$pids $daemon"
wait_for 10 grep -q "started: queue" "$tmp/log2" || not_ok "sluiced starts again"
all_deferred() {
    [ "$(logged 'to=<u[0-9]*@dead.test>, .*status=deferred' "$tmp/log2")" \
        -ge $msgs ]
}
if wait_for 10 all_deferred; then
    ok "every message to the dead site is deferred"
else
    not_ok "every message to the dead site is deferred"
    tail -5 "$tmp/log2" | sed 's/^/#   /'
fi
conns=$(counter "$tmp/dead.stats" connections)
why="host 127.0.0.1\[127.0.0.1\] refused to talk to me: 421 4.3.2 Service not available"
rcpt="to=<u[0-9]*@dead.test>"
dead_line=$(logged "relay:\[127.0.0.1\]:$dead_port: destination dead after \
.*: $why; retry in 3s" "$tmp/log2")
suspended=$(logged "$rcpt, relay=none, .*dsn=4.4.1, status=deferred \
(delivery temporarily suspended: $why)\$" "$tmp/log2")
refused=$(logged "$rcpt, relay=127.0.0.1\[127.0.0.1\]:$dead_port, \
.*status=deferred ($why)\$" "$tmp/log2")
echo "# dead site: $conns connections, $refused refused, $suspended suspended"
expect "the destination is declared dead once" 1 "$dead_line"
if [ "$conns" -ge 1 ] && [ "$conns" -le 7 ]; then
    ok "a few connections, not one per message (at most the window 5 + 2)"
else
    not_ok "a few connections, not one per message (at most the window 5 + 2)"
    echo "#   $conns connections for $msgs messages"
fi
expect "one deferral per connection, the others suspended" \
    "$conns $((msgs - conns))" "$refused $suspended"
expect "no delivery, no bounce yet" "0 0" \
    "$(logged 'status=sent' "$tmp/log2") $(logged 'status=bounced' "$tmp/log2")"

# The site comes back: the same port now accepts everything.
kill "$dead_sink"
wait "$dead_sink" 2>/dev/null
echo "# dead site: $(counter "$tmp/dead.stats" connections) connections in all" \
    "while it refused"
python3 "$count_sink" --stats "$tmp/back.stats" --ids "$tmp/back.ids" \
    "$dead_port" 2>>"$tmp/back.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/back.stats" ||
    { not_ok "count_sink.py starts on the same port"; tap_done; }
back_done() {
    [ "$(counter "$tmp/back.stats" messages)" -ge $msgs ] &&
        s2 queue | grep -q "Mail queue is empty"
}
if wait_for 20 back_done; then
    ok "after the backoff every message is delivered, the queue empties"
else
    not_ok "after the backoff every message is delivered, the queue empties"
    sed 's/^/#   /' "$tmp/back.stats"
    tail -5 "$tmp/log2" | sed 's/^/#   /'
fi
alive="relay:\[127.0.0.1\]:$dead_port: destination alive again (backoff timer)"
if grep -q "$alive" "$tmp/log2"; then
    ok "the destination is alive again at the end of its backoff"
else
    not_ok "the destination is alive again at the end of its backoff"
fi
sent='to=<u[0-9]*@dead.test>, .*status=sent'
expect "every recipient logged as sent, once" "$msgs $msgs" \
    "$(logged "$sent" "$tmp/log2") $(grep "$sent" "$tmp/log2" |
        sed 's/.*to=<\([^>]*\)>.*/\1/' | sort -u | count_lines)"
expect "$msgs distinct messages at the receiver, none twice" "$msgs $msgs" \
    "$(counter "$tmp/back.stats" messages) $(cut -d' ' -f2 "$tmp/back.ids" |
        sort -u | count_lines)"

kill -TERM "$daemon"
wait "$daemon"
expect "sluiced stops on SIGTERM, exit status 0" 0 $?
tap_done
