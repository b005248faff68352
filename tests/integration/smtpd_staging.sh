#!/bin/sh
# smtpd_staging.sh BUILD - large messages at once through the real
# sluiced, with smtpd_staging_threshold (256 KB) and smtpd_memory_limit
# (2 MB) both smaller than the messages (3 MB): eight smtplib clients
# sending together and Postfix's smtp-source (8 sessions, 16 messages)
# are all accepted, with no 452 and no memory warning; swaks, a strict
# real client, sends one more; every message reaches smtp-sink, the
# smtplib and swaks ones byte for byte; the staging directory is empty
# afterwards, and a file left there before the start is removed and
# logged. Then the same load without staging (a threshold above the
# message size) is refused with 452: the limit is real, staging is what
# lets the mail in. Loopback only, bounded in time, stops only the
# processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3 command -v python3
need swaks command -v swaks
need postfix test -x /usr/sbin/smtp-sink
need postfix test -x /usr/sbin/smtp-source

. tests/integration/lib/daemon_lib.sh
clients="python3 tests/integration/lib/staging_clients.py"
chmod 711 "$tmp"
size=3000000

start_smtp_sink out
port=$(free_port)
q=$tmp/q
msgs=$tmp/msgs
mkdir -p "$q/staging" "$msgs"
echo "left by a crash" >"$q/staging/C0FFEE"
conf=$tmp/sluice.conf
write_conf() {
    cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen = 127.0.0.1:$port
mynetworks = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$port_out
message_size_limit = 20000000
smtpd_memory_limit = 2097152
smtpd_staging_threshold = $1
EOF
}

start_daemon() {
    "$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
    daemon=$!
    pids="$pids $daemon"
    wait_for 10 listening "$port"
}
stop_daemon() {
    kill "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
}
accepted() { grep -c ': client=unknown\[' "$tmp/log"; }
delivered() { find "$tmp/out" -type f | wc -l; }
at_least() { [ "$(delivered)" -ge "$1" ]; }
staged() { find "$q/staging" -type f | wc -l; }

write_conf 262144
if start_daemon; then
    ok "sluiced listens on 127.0.0.1:$port"
else
    not_ok "sluiced listens on 127.0.0.1:$port"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi
expect "a staging file left before the start is removed" 0 "$(staged)"
if grep -q "warning: $q/staging: removed 1 staging file left by an earlier run" "$tmp/log"; then
    ok "the removal is logged"
else
    not_ok "the removal is logged"
fi
expect "the staging directory is private (0700)" 700 \
    "$(stat -c %a "$q/staging")"

# Eight clients connect, then all send a 3 MB message at the same moment:
# 24 MB in flight against a 2 MB memory limit.
timeout 120 $clients send 127.0.0.1 "$port" "$msgs" 8 $size >"$tmp/send.out" 2>&1
expect "8 concurrent smtplib clients, 3 MB each: all get 250" 8 \
    "$(grep -c '^c[0-9]* 250 2.0.0 Ok: queued as ' "$tmp/send.out")"
grep -v ' 250 ' "$tmp/send.out" | sed 's/^/#   /'

# smtp-source: 8 sessions, 16 messages of 3 MB.
before=$(accepted)
timeout 120 smtp-source -c -s 8 -m 16 -l $size -f src@client.test \
    -t dst@far.test "127.0.0.1:$port" >"$tmp/source.out" 2>&1
expect "smtp-source -s 8 -m 16 -l $size: exit status" 0 $?
expect "smtp-source: 16 messages accepted" $((before + 16)) "$(accepted)"

# swaks, a strict peer: pipelining off, the message from a file.
$clients make "$msgs" swaks 2500000
timeout 60 swaks --server 127.0.0.1 --port "$port" --from a@client.test \
    --to b@far.test --data "$msgs/swaks.eml" >"$tmp/swaks.out" 2>&1
expect "swaks with a 2.5 MB message: exit status" 0 $?
if grep -q "<-  250 2.0.0 Ok: queued as " "$tmp/swaks.out"; then
    ok "swaks's message gets 250 queued as"
else
    not_ok "swaks's message gets 250 queued as"
    tail -5 "$tmp/swaks.out" | sed 's/^/#   /'
fi

if grep -q "smtpd_memory_limit\|452 4.3.1" "$tmp/log"; then
    not_ok "no message was refused for memory"
    grep "smtpd_memory_limit\|452" "$tmp/log" | head -5 | sed 's/^/#   /'
else
    ok "no message was refused for memory"
fi

total=$((8 + 16 + 1))
if wait_for 90 at_least $total; then
    ok "all $total messages are delivered to smtp-sink"
else
    not_ok "all $total messages are delivered to smtp-sink ($(delivered))"
fi
expect "the smtplib and swaks messages arrive byte for byte" \
    "$(printf 'c%s ok\n' 0 1 2 3 4 5 6 7; echo 'swaks ok')" \
    "$($clients check "$tmp/out" "$msgs" | sort -V)"
# smtp-sink writes LF line ends: a 3,000,000-byte message is 2.9 MB there
big=$(find "$tmp/out" -type f -size +2900000c | wc -l)
expect "the 24 copies of 3 MB messages are whole (over 2,900,000 bytes)" 24 "$big"
[ "$big" = 24 ] || ls -l "$tmp/out" | sed 's/^/#   /' | head -30
expect "the staging directory is empty afterwards" 0 "$(staged)"
stop_daemon

# The same load with staging out of the way: the memory limit refuses.
write_conf 100000000
start_daemon
rm -f "$msgs"/*.eml
timeout 120 $clients send 127.0.0.1 "$port" "$msgs" 4 $size >"$tmp/send2.out" 2>&1
refused=$(grep -c '^c[0-9]* 452 4.3.1 Insufficient system resources' "$tmp/send2.out")
if [ "$refused" -ge 1 ]; then
    ok "without staging, 4 clients of 3 MB meet the 2 MB limit ($refused refused with 452)"
else
    not_ok "without staging, 4 clients of 3 MB meet the 2 MB limit"
    sed 's/^/#   /' "$tmp/send2.out"
fi
expect "without staging nothing is staged" 0 "$(staged)"
stop_daemon

tap_done
