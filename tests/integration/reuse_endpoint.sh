#!/bin/sh
# reuse_endpoint.sh BUILD - connections found by their server's address
# under the Postfix scheduler, as the reference's SMTP client does with its
# endpoint label (issue 19: "a provider hosting 10,000 domains is one set
# of hosts, not 10,000 strangers"). dnsmasq gives a.test and b.test one
# exchanger, a counting receiver; a message to a.test leaves its connection
# cached (smtp_connection_cache_destinations), and the next message, to
# b.test, takes it: one connection, the second delivery logged conn_use=2.
# The same with aiosmtpd, a strict peer, as the exchanger of c.test and
# d.test: it takes the second transaction on the first one's connection.
# A domain at a TLS level that checks names (verify) does not take a
# connection made under another policy. f.test's first exchanger refuses
# the connection: the address left is logged as the reference's client
# logs it ("connect to HOST[ADDR]:PORT: Connection refused"), and the
# second delivers. A transaction aiosmtpd greylists whole ends with RSET,
# and the next message takes its connection. Bounded (about 3 s). Output
# is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need dnsmasq-base command -v dnsmasq
need python3 command -v python3
need python3-aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'

. tests/integration/lib/daemon_lib.sh

port=$(free_port)
strict_port=$(free_port)
dns_port=$(free_port)
dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= \
    --port="$dns_port" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local=/test/ \
    --mx-host=a.test,mx.shared.test,10 --mx-host=b.test,mx.shared.test,10 \
    --mx-host=c.test,mx.shared.test,10 --mx-host=d.test,mx.shared.test,10 \
    --mx-host=e.test,mx.shared.test,10 \
    --mx-host=f.test,mx1.f.test,10 --mx-host=f.test,mx.shared.test,20 \
    --host-record=mx1.f.test,127.0.0.2 \
    --host-record=mx.shared.test,127.0.0.1 \
    2>"$tmp/dnsmasq.log" &
pids="$pids $!"
start_count_sink shared "$port" || { not_ok "the receiver starts"; tap_done; }
mkdir -p "$tmp/strict"
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/strict" \
    "$strict_port" 2>"$tmp/strict.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/strict/ready" || not_ok "aiosmtpd listens"

cat >"$tmp/transport" <<EOF
a.test smtp:a.test:$port
b.test smtp:b.test:$port
c.test smtp:c.test:$strict_port
d.test smtp:d.test:$strict_port
e.test verified:e.test:$port
f.test smtp:f.test:$port
EOF
d=$tmp/run
sluiced_start "$d" "dns_servers = 127.0.0.1:$dns_port
transports = smtp:smtp, verified:smtp
verified_tls_security_level = verify
smtp_connection_cache_destinations = a.test:$port, c.test:$strict_port, b.test:$port" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }
s() { "$build/sluice" -c "$d/sluice.conf" "$@"; }
stat() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp/shared.stats"; }
sent() { [ "$(grep -c 'status=sent' "$d/log")" -ge "$1" ]; }

printf 'Subject: one\n\nbody\n' | s sendmail -f s@sluice.test u@a.test
wait_for 10 sent 1 || not_ok "a.test is delivered"
printf 'Subject: two\n\nbody\n' | s sendmail -f s@sluice.test u@b.test
wait_for 10 sent 2 || not_ok "b.test is delivered"
expect "two messages on one connection" "2 1" "$(stat messages) $(stat connections)"
grep -q 'to=<u@b.test>, relay=mx.shared.test\[127.0.0.1\]:[0-9]*, conn_use=2,.*status=sent' "$d/log" &&
    ok "b.test's delivery took a.test's connection (conn_use=2)" ||
    { not_ok "b.test's delivery took a.test's connection (conn_use=2)"; grep 'to=<u@b.test>' "$d/log" | sed 's/^/#   /'; }

printf 'Subject: three\n\nbody\n' | s sendmail -f s@sluice.test u@c.test
wait_for 10 sent 3 || not_ok "c.test is delivered"
printf 'Subject: four\n\nbody\n' | s sendmail -f s@sluice.test u@d.test
wait_for 10 sent 4 || not_ok "d.test is delivered"
expect "aiosmtpd stored both messages" 2 "$(ls "$tmp/strict"/*.eml | wc -l)"
grep -q 'to=<u@d.test>, relay=mx.shared.test\[127.0.0.1\]:[0-9]*, conn_use=2,.*status=sent' "$d/log" &&
    ok "aiosmtpd took d.test's message on c.test's connection" ||
    not_ok "aiosmtpd took d.test's message on c.test's connection"

# A transaction in which every recipient is refused sends nothing; the
# reference's client ends it with RSET and keeps the connection. aiosmtpd
# greylists grey*@: the next message to c.test goes down the connection
# the refused one used.
printf 'Subject: grey\n\nbody\n' |
    s sendmail -f s@sluice.test grey1@c.test grey2@c.test
grey_done() { [ "$(grep -c 'to=<grey[12]@c.test>.*status=deferred' "$d/log")" -ge 2 ]; }
wait_for 10 grey_done || not_ok "the greylisted recipients are deferred"
printf 'Subject: after grey\n\nbody\n' | s sendmail -f s@sluice.test v@c.test
v_done() { grep -q 'to=<v@c.test>.*status=sent' "$d/log"; }
wait_for 10 v_done || not_ok "the message after the greylisted one is delivered"
grey_peer=$(sed -n 's/ RCPT-450$//p' "$tmp/strict/events" | sort -u)
expect "aiosmtpd refused both greylisted recipients on one connection, then RSET" \
    "2 $grey_peer RSET" \
    "$(grep -c RCPT-450 "$tmp/strict/events") $(grep -v RCPT-450 "$tmp/strict/events")"
v_peer=$(grep -l '^to: v@c.test' "$tmp/strict"/*.eml | xargs sed -n 's/^peer: //p')
expect "the next message went down the connection the refused one used" \
    "$grey_peer" "$v_peer"
grep -q 'to=<grey1@c.test>.*said: 450 4.7.1' "$d/log" &&
    ok "the refusal's text is logged with the deferral" ||
    { not_ok "the refusal's text is logged with the deferral"; grep 'grey1' "$d/log" | sed 's/^/#   /'; }

# e.test's transport checks the certificate: the cached plaintext
# connection (b.test's) is not its to take; it connects itself (and the
# receiver offers no STARTTLS, so the message is deferred).
printf 'Subject: five\n\nbody\n' | s sendmail -f s@sluice.test u@e.test
e_done() { grep -q 'to=<u@e.test>.*status=' "$d/log"; }
wait_for 10 e_done || not_ok "e.test has an outcome"
grep -q 'to=<u@e.test>.*conn_use=2' "$d/log" &&
    not_ok "a connection under another TLS policy is not taken" ||
    ok "a connection under another TLS policy is not taken"
expect "e.test made a connection of its own" 2 "$(stat connections)"
printf 'Subject: six\n\nbody\n' | s sendmail -f s@sluice.test u@f.test
f_done() { grep -q 'to=<u@f.test>.*status=' "$d/log"; }
wait_for 10 f_done || not_ok "f.test has an outcome"
grep -q "sluice/smtp\[[0-9]*\]: connect to mx1.f.test\[127.0.0.2\]:$port: Connection refused\$" "$d/log" &&
    ok "the exchanger left is logged as the reference logs it" ||
    { not_ok "the exchanger left is logged as the reference logs it"; grep 'f.test' "$d/log" | sed 's/^/#   /'; }
grep -q 'to=<u@f.test>, relay=mx.shared.test\[127.0.0.1\].*status=sent' "$d/log" &&
    ok "f.test is delivered by its second exchanger" ||
    not_ok "f.test is delivered by its second exchanger"
kill "$sluiced_pid"
wait "$sluiced_pid"
grep -q 'panic\|ERROR: AddressSanitizer\|runtime error' "$d/log" &&
    not_ok "no panic" || ok "no panic"
tap_done
