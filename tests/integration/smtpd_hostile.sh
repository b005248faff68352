#!/bin/sh
# smtpd_hostile.sh BUILD - sluice's SMTP server under hostile clients, on
# real sockets: clients in mynetworks are exempt from the connection count
# limit (smtpd_client_event_limit_exceptions = $mynetworks) and others are
# not; SMTP smuggling with bare LFs is answered 521 by default and, from a
# client in smtpd_forbid_bare_newline_exclusions (normalize), ends no
# data: one message is stored, with the smuggled commands as its text; a
# NUL is refused with 554 5.6.0; then a slowloris attack from 20 addresses (127.0.0.10 to .29, not
# in mynetworks), each holding as many sessions as the per-client limit
# allows (25: 500 in all, the server's whole session limit) and trickling
# a byte every 3 s, reconnecting whenever the server closes one, while a
# client from 127.0.0.1 must still get its message accepted within 20 s.
# The default timeouts are kept (smtpd_timeout 300s, per-record
# deadlines, smtpd_stress_timeout 10s): only the stress deadline can make
# room. Bounded: at most 501 sockets of the attacker and the client at
# once, 3000 connections, 60 s. Stops only the processes it started.
# Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3 command -v python3

. tests/integration/lib/daemon_lib.sh
clients="python3 tests/integration/lib/smtp_clients.py"
slowloris="python3 tests/integration/lib/slowloris.py"

port=$(free_port)
cat >"$tmp/sluice.conf" <<EOF
queue_directory = $tmp/q
smtpd_listen = 127.0.0.1:$port
mynetworks = 127.0.0.1/32
relay_domains = relay.test
smtpd_forbid_bare_newline_exclusions = 127.0.0.2/32
myhostname = mx.test
relayhost = [127.0.0.1]:$(free_port)
smtpd_client_connection_count_limit = 25
EOF
"$build/sluiced" -f -c "$tmp/sluice.conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 listening "$port"; then
    ok "sluiced listens on 127.0.0.1:$port"
else
    not_ok "sluiced listens on 127.0.0.1:$port"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi

# Count the greetings and refusals that N sessions from SOURCE get.
greetings() {
    python3 - "$port" "$1" "$2" <<'EOF'
import socket, sys
port, source, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
socks, got = [], {}
for i in range(n):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    socks.append(s)
for s in socks:
    try:
        line = s.recv(512).decode()[:3]
    except OSError:
        line = "none"
    got[line] = got.get(line, 0) + 1
    s.close()
print(" ".join("%s=%d" % kv for kv in sorted(got.items())))
EOF
}
expect "30 sessions from 127.0.0.1 (mynetworks, exempt): all greeted" \
    "220=30" "$(greetings 127.0.0.1 30)"
expect "30 sessions from 127.0.0.30 (not exempt): 25 greeted, 5 turned away" \
    "220=25 421=5" "$(greetings 127.0.0.30 30)"
if grep -q "warning: connection count limit 25 exceeded by unknown\[127.0.0.30\], turned away" "$tmp/log" &&
    ! grep -q "exceeded by unknown\[127.0.0.1\]" "$tmp/log"; then
    ok "only the client outside the exceptions was turned away"
else
    not_ok "only the client outside the exceptions was turned away"
fi

# SMTP smuggling, by default and in normalize mode; a NUL.
accepted() { grep -c ': client=unknown\[' "$tmp/log"; }
smuggle="HELO c\r\nMAIL FROM:<a@client.test>\r\nRCPT TO:<x@relay.test>\r\nDATA\r\nhi\n.\nMAIL FROM:<evil@client.test>\r\nRCPT TO:<victim@relay.test>\r\nDATA\r\nforged\r\n.\r\nQUIT\r\n"
expect "<LF>.<LF> from 127.0.0.1 (default, disconnect): 521, closed" \
    "$(printf '220 mx.test ESMTP sluice\n250 mx.test\n250 2.1.0 Ok\n250 2.1.5 Ok\n354 End data with <CR><LF>.<CR><LF>\n521 5.5.2 mx.test Error: bare <LF> received\n[closed]')" \
    "$($clients raw 127.0.0.1 "$port" "$smuggle")"
out=$($clients raw 127.0.0.1 "$port" "$smuggle" --source 127.0.0.2)
id=$(echo "$out" | sed -n 's/.*queued as \([0-9A-Z]*\).*/\1/p')
expect "<LF>.<LF> from 127.0.0.2 (normalize): no end, one message" \
    "$(printf '220 mx.test ESMTP sluice\n250 mx.test\n250 2.1.0 Ok\n250 2.1.5 Ok\n354 End data with <CR><LF>.<CR><LF>\n250 2.0.0 Ok: queued as ID\n221 2.0.0 Bye\n[closed]')" \
    "$(echo "$out" | sed 's/queued as .*/queued as ID/')"
expect "one message stored, none smuggled" 1 "$(accepted)"
"$build/sluice" -c "$tmp/sluice.conf" show --body "$id" >"$tmp/show" 2>&1
if tr -d '\r' <"$tmp/show" | grep -A5 '^hi$' | tr '\n' '|' |
    grep -q '^hi|MAIL FROM:<evil@client.test>|RCPT TO:<victim@relay.test>|DATA|forged|'; then
    ok "the smuggled commands are the message's text, the lone . dropped"
else
    not_ok "the smuggled commands are the message's text, the lone . dropped"
    sed 's/^/#   /' "$tmp/show"
fi
expect "a NUL in the header: 554 5.6.0, nothing stored" \
    "$(printf '220 mx.test ESMTP sluice\n250 mx.test\n250 2.1.0 Ok\n250 2.1.5 Ok\n354 End data with <CR><LF>.<CR><LF>\n554 5.6.0 Error: NUL character in message header\n221 2.0.0 Bye\n[closed]')" \
    "$($clients raw 127.0.0.1 "$port" "HELO c\r\nMAIL FROM:<a@client.test>\r\nRCPT TO:<x@relay.test>\r\nDATA\r\nSubject: a\x00b\r\n\r\nx\r\n.\r\nQUIT\r\n")"
expect "still one message stored" 1 "$(accepted)"

# The attack: 20 addresses, 25 trickling sessions each.
$slowloris 127.0.0.1 "$port" 127.0.0.10 20 25 --gap 3 --seconds 60 \
    --connects 3000 --ready "$tmp/ready" --stats "$tmp/stats" \
    2>"$tmp/slowloris.err" &
attacker=$!
pids="$pids $attacker"
if wait_for 20 test -s "$tmp/ready"; then
    ok "the attacker holds $(cat "$tmp/ready") sessions"
else
    not_ok "the attacker holds its sessions"
    sed 's/^/#   /' "$tmp/slowloris.err"
fi
start=$(date +%s)
out=$($clients send 127.0.0.1 "$port" a@client.test b@far.test \
    --subject "past slowloris" --timeout 25 2>&1 | tail -1)
took=$(($(date +%s) - start))
case $out in
"250 2.0.0 Ok: queued as "*)
    if [ "$took" -le 20 ]; then
        ok "a client from 127.0.0.1 got its message accepted in ${took} s"
    else
        not_ok "a client from 127.0.0.1 got its message accepted in ${took} s (more than 20)"
    fi
    ;;
*) not_ok "a client from 127.0.0.1 got its message accepted: $out (${took} s)" ;;
esac
kill "$attacker"
wait "$attacker" 2>/dev/null
echo "# attacker: $(cat "$tmp/stats" 2>/dev/null)"
timeouts=$(sed -n 's/.*timeouts=\([0-9]*\).*/\1/p' "$tmp/stats" 2>/dev/null)
if [ "${timeouts:-0}" -gt 0 ]; then
    ok "trickling sessions were cut with 421 4.4.2 ($timeouts)"
else
    not_ok "trickling sessions were cut with 421 4.4.2"
fi
if grep -q "warning: 400 SMTP sessions, near the limit of 500: stress: deadlines per command and content line, of smtpd_stress_timeout (10000 ms)" "$tmp/log"; then
    ok "stress is logged at 400 sessions"
else
    not_ok "stress is logged at 400 sessions"
    grep stress "$tmp/log" | head -3 | sed 's/^/#   /'
fi
if grep -q "timeout after CONNECT from unknown\[127\.0\.0\.[12][0-9]\]" "$tmp/log"; then
    ok "the timeouts are logged"
else
    not_ok "the timeouts are logged"
fi
if wait_for 10 grep -q "stress over: 299 SMTP sessions" "$tmp/log"; then
    ok "stress is over once the attacker is gone"
else
    not_ok "stress is over once the attacker is gone"
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
