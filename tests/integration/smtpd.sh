#!/bin/sh
# smtpd.sh BUILD - sluice's SMTP server against real clients, end to end:
# swaks with PIPELINING, Python's smtplib (EHLO keywords, DSN parameters,
# relay control from a client bound to 127.0.0.9 with mynetworks =
# 127.0.0.1/32), raw sessions for the conformance replies (503, 501, 500,
# 502, 452, 552), a bare LF in DATA, BDAT chunks pipelined and ETRN;
# Postfix's smtp-source (20 sessions) and Postfix's own SMTP client
# relaying through sluice; every accepted message reaches smtp-sink. A
# daemon whose spool is full answers 452 4.3.1, to the message and to the
# next MAIL; one whose incoming queue outgrows the active limit slows
# acceptance (in_flow_delay).
# Then a burst from several clients is cut by SIGKILL of sluiced: after a
# restart every message that got its 250 is delivered. Bounded in time,
# stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3 command -v python3
need swaks command -v swaks
need libio-socket-inet6-perl perl -MIO::Socket::INET6 -e 1
need postfix test -x /usr/sbin/smtp-sink

. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/postfix_lib.sh
clients="python3 tests/integration/lib/smtp_clients.py"
chmod 711 "$tmp"

start_smtp_sink out
port=$(free_port)
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen = 127.0.0.1:$port, [::1]:$port
mynetworks = 127.0.0.1/32
relay_domains = relay.test
myhostname = mx.test
relayhost = [127.0.0.1]:$port_out
message_size_limit = 100000
smtpd_recipient_limit = 3
EOF

start_daemon() {
    "$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
    daemon=$!
    pids="$pids $daemon"
    wait_for 10 listening "$port"
}
if start_daemon; then
    ok "sluiced listens on 127.0.0.1:$port"
else
    not_ok "sluiced listens on 127.0.0.1:$port"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi
# the count of "client=" lines: messages accepted over SMTP
accepted() { grep -c ': client=unknown\[' "$tmp/log"; }
# messages smtp-sink saved; at_least N: it saved N or more
delivered() { find "$tmp/out" -type f | wc -l; }
at_least() { [ "$(delivered)" -ge "$1" ]; }

# swaks, pipelining, over IPv4 and IPv6.
swaks --server 127.0.0.1 --port "$port" --pipeline --from a@client.test \
    --to someone@far.test --h-Subject "swaks v4" >"$tmp/swaks.out" 2>&1
expect "swaks --pipeline: exit status" 0 $?
if grep -q "PIPELINING" "$tmp/swaks.out" &&
    grep -q "<-  250 2.0.0 Ok: queued as " "$tmp/swaks.out"; then
    ok "swaks pipelines MAIL, RCPT, DATA and gets 250 queued as"
else
    not_ok "swaks pipelines MAIL, RCPT, DATA and gets 250 queued as"
    sed 's/^/#   /' "$tmp/swaks.out"
fi
swaks --server ::1 --port "$port" --from a@client.test --to x@relay.test \
    --quit-after RCPT >"$tmp/swaks6.out" 2>&1
expect "swaks over IPv6 ::1: exit status" 0 $?

# smtplib: what EHLO announces; a message with DSN parameters.
expect "smtplib sees the EHLO keywords" \
    "8bitmime chunking dsn enhancedstatuscodes etrn pipelining size 100000 smtputf8" \
    "$($clients features 127.0.0.1 "$port" | tr '\n' ' ' | sed 's/ $//')"
out=$($clients send 127.0.0.1 "$port" a@client.test b@far.test \
    --subject smtplib --mail-opt RET=HDRS --mail-opt ENVID=e1 \
    --rcpt-opt NOTIFY=FAILURE)
case $out in
"250 2.0.0 Ok: queued as "*) ok "smtplib sends with RET, ENVID and NOTIFY" ;;
*) not_ok "smtplib sends with RET, ENVID and NOTIFY: $out" ;;
esac

# Relay control: 127.0.0.9 is not in mynetworks (127.0.0.1/32).
expect "relay denied from 127.0.0.9 to a domain not in relay_domains" \
    "554 5.7.1 <b@far.test>: Relay access denied" \
    "$($clients send 127.0.0.1 "$port" a@client.test b@far.test --source 127.0.0.9)"
out=$($clients send 127.0.0.1 "$port" a@client.test b@relay.test \
    --source 127.0.0.9 --subject relayed)
case $out in
"250 2.0.0 Ok: queued as "*) ok "127.0.0.9 may send to relay_domains" ;;
*) not_ok "127.0.0.9 may send to relay_domains: $out" ;;
esac
if grep -q "NOQUEUE: reject: RCPT from unknown\[127.0.0.9\]: 554 5.7.1 <b@far.test>: Relay access denied; from=<a@client.test> to=<b@far.test> proto=ESMTP helo=<client.test>" "$tmp/log"; then
    ok "the relay refusal is logged"
else
    not_ok "the relay refusal is logged"
fi

# Conformance, one pipelined session (RFC 5321 4.3.2, RFC 1870).
big=$(python3 -c 'print("x" * 999 + "\\r\\n", end="")')
big100=""
i=0
while [ $i -lt 101 ]; do big100="$big100$big"; i=$((i + 1)); done
$clients raw 127.0.0.1 "$port" "MAIL FROM:<a@client.test>\r\nHELO c\r\nRCPT TO:<x@far.test>\r\nDATA\r\nFROB\r\nEXPN x\r\nMAIL FROM:a@client.test\r\nMAIL FROM:<a@client.test> SIZE=100001\r\nMAIL FROM:<a@client.test>\r\nRCPT TO:<1@far.test>\r\nRCPT TO:<2@far.test>\r\nRCPT TO:<3@far.test>\r\nRCPT TO:<4@far.test>\r\nDATA\r\n${big100}.\r\nQUIT\r\n" >"$tmp/conf.out"
cat >"$tmp/conf.want" <<EOF
220 mx.test ESMTP sluice
503 5.5.1 Error: send HELO/EHLO first
250 mx.test
503 5.5.1 Error: need MAIL command
503 5.5.1 Error: need MAIL command
500 5.5.2 Error: command not recognized
502 5.5.1 Error: command not implemented
501 5.5.4 Syntax: MAIL FROM:<address>
552 5.3.4 Message size exceeds fixed limit
250 2.1.0 Ok
250 2.1.5 Ok
250 2.1.5 Ok
250 2.1.5 Ok
452 4.5.3 Error: too many recipients
354 End data with <CR><LF>.<CR><LF>
552 5.3.4 Message size exceeds fixed limit
221 2.0.0 Bye
[closed]
EOF
if cmp -s "$tmp/conf.want" "$tmp/conf.out"; then
    ok "503, 501, 500, 502, 452 and 552 where RFC 5321 and RFC 1870 say"
else
    not_ok "503, 501, 500, 502, 452 and 552 where RFC 5321 and RFC 1870 say"
    diff "$tmp/conf.want" "$tmp/conf.out" | sed 's/^/#   /'
fi

# SMTP smuggling: a bare LF before ".\r\n" is refused, nothing is stored.
before=$(accepted)
expect "a bare LF in DATA: 521 and the connection closed" \
    "$(printf '220 mx.test ESMTP sluice\n250 mx.test\n250 2.1.0 Ok\n250 2.1.5 Ok\n354 End data with <CR><LF>.<CR><LF>\n521 5.5.2 mx.test Error: bare <LF> received\n[closed]')" \
    "$($clients raw 127.0.0.1 "$port" "HELO c\r\nMAIL FROM:<a@client.test>\r\nRCPT TO:<x@far.test>\r\nDATA\r\nhi\n.\r\nMAIL FROM:<evil@client.test>\r\nRCPT TO:<victim@far.test>\r\nDATA\r\nforged\r\n.\r\nQUIT\r\n")"
expect "nothing of the smuggling session was stored" "$before" "$(accepted)"

# RFC 3030: BDAT chunks, sent without waiting.
out=$($clients raw 127.0.0.1 "$port" "EHLO c\r\nMAIL FROM:<a@client.test>\r\nRCPT TO:<c@far.test>\r\nBDAT 24\r\nSubject: chunked\r\n\r\none BDAT 5\r\ntwo\r\nBDAT 7 LAST\r\nthree\r\nQUIT\r\n" |
    grep -v '^250-\|^250 CHUNKING$' | sed 's/queued as .*/queued as ID/')
expect "BDAT pipelined: each chunk answered, the message queued" \
    "$(printf '220 mx.test ESMTP sluice\n250 2.1.0 Ok\n250 2.1.5 Ok\n250 2.0.0 Ok: 24 bytes\n250 2.0.0 Ok: 29 bytes\n250 2.0.0 Ok: queued as ID\n221 2.0.0 Bye\n[closed]')" \
    "$out"

# RFC 1985: ETRN.
expect "ETRN for a relay domain is answered with its count" \
    "$(printf '220 mx.test ESMTP sluice\n250 mx.test\n251 2.0.0 OK, no messages waiting for node relay.test\n221 2.0.0 Bye\n[closed]')" \
    "$($clients raw 127.0.0.1 "$port" "HELO c\r\nETRN relay.test\r\nQUIT\r\n")"
if wait_for 5 grep -q "flush relay.test: 0 deferred messages due now" "$tmp/log"; then
    ok "ETRN flushes through the queue manager"
else
    not_ok "ETRN flushes through the queue manager"
fi

# So far: swaks 1, smtplib 2, BDAT 1 accepted; all reach smtp-sink.
expect "every message accepted so far was stored" 4 "$(accepted)"
if wait_for 10 at_least 4; then
    ok "and delivered to smtp-sink"
else
    not_ok "and delivered to smtp-sink ($(delivered))"
fi
f=$(grep -l "Subject: chunked" "$tmp/out"/* 2>/dev/null | head -1)
if [ -n "$f" ] && grep -q "^one two\$" "$f" && grep -q "^three\$" "$f" &&
    grep -q "by mx.test (sluice) with ESMTP id" "$f"; then
    ok "the BDAT message arrives whole, with sluice's Received: header"
else
    not_ok "the BDAT message arrives whole, with sluice's Received: header"
fi

# smtp-source: 20 sessions, 2 KB messages.
before=$(accepted)
smtp-source -s 20 -m 400 -l 2048 -f src@client.test -t dst@far.test \
    "127.0.0.1:$port" >"$tmp/source.out" 2>&1
expect "smtp-source -s 20 -m 400: exit status" 0 $?
expect "smtp-source: 400 messages accepted" $((before + 400)) "$(accepted)"
if wait_for 20 at_least 404; then
    ok "smtp-source's 400 messages are delivered"
else
    not_ok "smtp-source's 400 messages are delivered ($(delivered))"
fi

# Postfix's own SMTP client relaying through sluice.
pf=$tmp/postfix
pf_port=$(free_port)
if postfix_start "$pf" "127.0.0.1:$pf_port inet n - n - 10 smtpd" <<EOF; then
myhostname = postfix.client.test
mynetworks = 127.0.0.0/8
relayhost = [127.0.0.1]:$port
smtp_dns_support_level = disabled
EOF
    wait_for 10 listening "$pf_port"
    ok "a private Postfix instance relays to sluice"
    smtp-source -s 2 -m 10 -l 1024 -f pf@client.test -t viapf@far.test \
        "127.0.0.1:$pf_port" >/dev/null 2>&1
    pf_sent() {
        [ "$(grep -c "relay=127.0.0.1\[127.0.0.1\]:$port, .*status=sent (250 2.0.0 Ok: queued as" "$pf/maillog")" = 10 ]
    }
    if wait_for 20 pf_sent; then
        ok "Postfix's smtp client delivered 10 messages to sluice"
    else
        not_ok "Postfix's smtp client delivered 10 messages to sluice"
        grep "status=" "$pf/maillog" | tail -3 | sed 's/^/#   /'
    fi
    via_pf() { [ "$(grep -l 'viapf@far.test' "$tmp/out"/* | wc -l)" = 10 ]; }
    if wait_for 20 via_pf; then
        ok "and sluice delivered them on to smtp-sink"
    else
        not_ok "and sluice delivered them on to smtp-sink"
    fi
    postfix_stop "$pf"
else
    not_ok "a private Postfix instance relays to sluice"
    sed 's/^/#   /' "$pf/start.out" | tail -5
fi

# A full spool: a second daemon whose map may not grow past 1 MB, its
# mail held for a destination that never answers. Messages of 200 KB go
# in until one does not fit: that one gets 452 4.3.1, and so does the
# next MAIL (the server stops taking mail for SMTPD_STORE_LATCH s).
port2=$(free_port)
cat >"$tmp/full.conf" <<EOF
queue_directory = $tmp/q-full
smtpd_listen = 127.0.0.1:$port2
mynetworks = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$(free_port)
queue_map_size = 1048576
queue_map_size_limit = 1048576
EOF
"$build/sluiced" -f -c "$tmp/full.conf" 2>>"$tmp/full.log" &
full=$!
pids="$pids $full"
wait_for 10 listening "$port2"
python3 -c 'print("HELO c\\r\\nMAIL FROM:<a@client.test>\\r\\nRCPT TO:<b@far.test>\\r\\nDATA\\r\\n" + ("y" * 998 + "\\r\\n") * 200 + ".\\r\\nMAIL FROM:<a@client.test>\\r\\nQUIT\\r\\n", end="")' >"$tmp/big.txt"
i=0
out=
while [ $i -lt 10 ]; do
    out=$($clients raw 127.0.0.1 "$port2" "@$tmp/big.txt" | tail -4 | head -2)
    case $out in *"452 4.3.1"*) break ;; esac
    i=$((i + 1))
done
expect "a full spool: 452 4.3.1 to the message, then to the next MAIL" \
    "$(printf '452 4.3.1 Insufficient system storage: spool full: the map reached queue_map_size_limit (1048576 bytes)\n452 4.3.1 Insufficient system storage: spool full: the map reached queue_map_size_limit (1048576 bytes)')" \
    "$out"
kill "$full"
wait "$full" 2>/dev/null

# in_flow_delay: with more messages in the incoming queue than the queue
# manager may hold (qmgr_message_active_limit = 2, a receiver that takes
# a second per message), each MAIL waits in_flow_delay; all still arrive.
start_smtp_sink slow -w 1
port3=$(free_port)
cat >"$tmp/flow.conf" <<EOF
queue_directory = $tmp/q-flow
smtpd_listen = 127.0.0.1:$port3
mynetworks = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$port_slow
qmgr_message_active_limit = 2
in_flow_delay = 1s
EOF
"$build/sluiced" -f -c "$tmp/flow.conf" 2>>"$tmp/flow.log" &
flow=$!
pids="$pids $flow"
wait_for 10 listening "$port3"
smtp-source -s 2 -m 12 -l 512 -f a@client.test -t b@far.test \
    "127.0.0.1:$port3" >/dev/null 2>&1
expect "in_flow_delay: smtp-source's 12 messages are all accepted" 12 \
    "$(grep -c ': client=unknown' "$tmp/flow.log")"
if grep -q "sluice/smtpd\[[0-9]*\]: warning: [0-9]* messages in the incoming queue, more than qmgr_message_active_limit (2): each new message waits in_flow_delay (1000 ms)$" "$tmp/flow.log"; then
    ok "in_flow_delay: acceptance slowed, with one warning"
else
    not_ok "in_flow_delay: acceptance slowed, with one warning"
    grep warning "$tmp/flow.log" | sed 's/^/#   /'
fi
kill "$flow"
wait "$flow" 2>/dev/null

# SIGKILL during a burst from 4 clients; then restart: every message
# that got its 250 is delivered.
$clients burst 127.0.0.1 "$port" 4 "$tmp/acked" --max 3000 >"$tmp/burst.out" &
burst=$!
wait_for 10 test -s "$tmp/acked"
sleep 0.5
kill -KILL "$daemon"
wait "$burst"
wait "$daemon" 2>/dev/null
acked=$(wc -l <"$tmp/acked")
if [ "$acked" -gt 0 ] && [ "$acked" -lt 12000 ]; then
    ok "the burst was cut by SIGKILL after $acked acknowledged messages"
else
    not_ok "the burst was cut by SIGKILL ($acked acknowledged)"
fi
start_daemon
all_sent() {
    grep -o '^[^ ]* [^ ]* [^ ]* [0-9A-Z]*: to=<r[0-9]*\.[0-9]*@far.test>.*status=sent' "$tmp/log" |
        awk '{ sub(":", "", $4); print $4 }' | sort -u >"$tmp/sent"
    [ -z "$(sort -u "$tmp/acked" | comm -23 - "$tmp/sent")" ]
}
if wait_for 60 all_sent; then
    ok "after the restart, all $acked acknowledged messages are delivered"
else
    not_ok "after the restart, all acknowledged messages are delivered"
    echo "#   missing: $(sort -u "$tmp/acked" | comm -23 - "$tmp/sent" | wc -l)"
fi

kill "$daemon"
wait "$daemon" 2>/dev/null
if grep -q "panic\|AddressSanitizer\|runtime error" "$tmp/log"; then
    not_ok "no sanitizer report or panic in the log"
    grep "panic\|AddressSanitizer\|runtime error" "$tmp/log" | head -5 | sed 's/^/#   /'
else
    ok "no sanitizer report or panic in the log"
fi
tap_done
