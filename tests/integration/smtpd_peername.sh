#!/bin/sh
# smtpd_peername.sh BUILD - client host names as Postfix's smtpd finds
# them (issue 21): dnsmasq serves PTR and A records for 127.0.0.x; a
# client from 127.0.0.2, whose PTR name's A record is its address, is
# good.peer.test[127.0.0.2] in "connect from", "client=", "disconnect
# from" and the Received: header; one from 127.0.0.3, whose PTR name
# points elsewhere, and one from 127.0.0.4, without a PTR record, are
# unknown (the first with Postfix's warning); the submission listener
# looks names up too; a name server that never answers delays the
# greeting by smtpd_peername_lookup_timeout and no more. Bounded in
# time; stops only what it started.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need dnsmasq-base command -v dnsmasq
need bind9-dnsutils command -v dig
need python3 test -x /usr/bin/python3
need postfix test -x /usr/sbin/smtp-sink

. tests/integration/lib/daemon_lib.sh
chmod 711 "$tmp"

dns_port=$(free_port)
dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= \
    --port="$dns_port" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local=/test/ --local=/127.in-addr.arpa/ \
    --host-record=good.peer.test,127.0.0.2 \
    --ptr-record=3.0.0.127.in-addr.arpa,liar.peer.test \
    --host-record=liar.peer.test,127.0.0.33 \
    2>"$tmp/dnsmasq.log" &
pids="$pids $!"
published() {
    [ -n "$(dig +short -p "$dns_port" @127.0.0.1 -x 127.0.0.2 2>/dev/null)" ]
}
wait_for 10 published && ok "dnsmasq serves the PTR records" ||
    not_ok "dnsmasq serves the PTR records"

# A name server that takes questions and never answers.
silent_port=$(free_port)
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
while True:
    s.recvfrom(4096)' "$silent_port" &
pids="$pids $!"

start_smtp_sink out
echo "alice:{PLAIN}wonderland" >"$tmp/passwd"
port=$(free_port)
sport=$(free_port)
start_sluiced() { # $1: directory, $2: name servers
    mkdir -p "$1"
    cat >"$1/sluice.conf" <<EOC
queue_directory = $1/q
smtpd_listen = 127.0.0.1:$port
mynetworks = 127.0.0.0/8
myhostname = mx.test
relayhost = [127.0.0.1]:$port_out
dns_servers = $2
smtpd_peername_lookup_timeout = 1s
smtpd_submission_listen = 127.0.0.1:$sport
smtpd_submission_options = smtpd_tls_security_level=none
smtpd_sasl_auth_enable = yes
smtpd_sasl_path = $tmp/passwd
smtpd_tls_auth_only = no
EOC
    "$build/sluiced" -f -c "$1/sluice.conf" 2>"$1/log" &
    daemon=$!
    pids="$pids $daemon"
    wait_for 10 listening "$port" && wait_for 10 listening "$sport"
}
stop_sluiced() {
    kill "$daemon"
    wait_for 15 sh -c "! kill -0 $daemon 2>/dev/null"
}
# One message from source address $1 to port $2; prints the greeting's
# delay in milliseconds.
send_from() {
    timeout 20 /usr/bin/python3 -c '
import smtplib, sys, time
t0 = time.monotonic()
s = smtplib.SMTP("127.0.0.1", int(sys.argv[2]), local_hostname="c.test",
                 timeout=10, source_address=(sys.argv[1], 0))
print(int((time.monotonic() - t0) * 1000))
s.sendmail("s@x.test", ["r@y.test"], b"Subject: hi\r\n\r\nhello\r\n")
s.quit()' "$1" "$2"
}

if start_sluiced "$tmp/a" "127.0.0.1:$dns_port"; then
    ok "sluiced listens on $port and for submission on $sport"
else
    not_ok "sluiced listens on $port and for submission on $sport"
    sed 's/^/#   /' "$tmp/a/log"
    tap_done
fi
log=$tmp/a/log
for a in 2 3 4; do
    send_from "127.0.0.$a" "$port" >/dev/null ||
        echo "# sending from 127.0.0.$a failed"
done
wait_for 10 sh -c "[ \$(grep -c 'disconnect from' '$log') -ge 3 ]"
for line in "connect from good.peer.test[127.0.0.2]" \
    "client=good.peer.test[127.0.0.2]" \
    "disconnect from good.peer.test[127.0.0.2] ehlo=1 mail=1 rcpt=1 data=1 quit=1 commands=5" \
    "warning: hostname liar.peer.test does not resolve to address 127.0.0.3" \
    "connect from unknown[127.0.0.3]" "client=unknown[127.0.0.3]" \
    "connect from unknown[127.0.0.4]"; do
    grep -qF "$line" "$log" && ok "logged: $line" || not_ok "logged: $line"
done
wait_for 10 sh -c "[ \$(ls '$tmp/out' | wc -l) -ge 3 ]"
received=$(grep -h "^Received: from c.test" "$tmp/out"/* | tr -d '\r' | sort)
expect "Received: names the confirmed client, unknown the others" \
    "Received: from c.test (good.peer.test [127.0.0.2])
Received: from c.test (unknown [127.0.0.3])
Received: from c.test (unknown [127.0.0.4])" "$received"

# The submission listener: the same name, before its greeting.
out=$(printf 'EHLO c.test\r\nQUIT\r\n' | timeout 10 /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5,
                             source_address=("127.0.0.2", 0))
s.sendall(sys.stdin.buffer.read()); s.shutdown(socket.SHUT_WR)
sys.stdout.write(s.makefile("rb").read().decode())' "$sport" | head -1 |
    tr -d '\r')
expect "the submission listener greets" "220 mx.test ESMTP sluice" "$out"
wait_for 5 sh -c "[ \$(grep -cF 'connect from good.peer.test[127.0.0.2]' '$log') -ge 2 ]" &&
    ok "the submission listener names its client" ||
    not_ok "the submission listener names its client"
stop_sluiced

# A name server that never answers: the greeting waits 1 s, no more.
start_sluiced "$tmp/b" "127.0.0.1:$silent_port" ||
    not_ok "sluiced starts with a silent name server"
ms=$(send_from 127.0.0.2 "$port")
if [ -n "$ms" ] && [ "$ms" -ge 900 ] && [ "$ms" -lt 3000 ]; then
    ok "a silent name server delays the greeting by the timeout ($ms ms)"
else
    not_ok "a silent name server delays the greeting by the timeout (${ms:-no greeting} ms)"
fi
wait_for 5 grep -qF "connect from unknown[127.0.0.2]" "$tmp/b/log" &&
    ok "the client is unknown after the timeout" ||
    not_ok "the client is unknown after the timeout"
grep -qF "warning: 127.0.0.2: client name lookup timed out after 1000 ms" \
    "$tmp/b/log" && ok "the timeout is logged" || not_ok "the timeout is logged"
wait_for 10 sh -c "[ \$(ls '$tmp/out' | wc -l) -ge 4 ]" &&
    ok "its message is delivered" || not_ok "its message is delivered"
stop_sluiced
tap_done
