#!/bin/sh
# verify.sh BUILD - address verification (issue 19, "Verification as a
# pseudo-message"; decisions 96 to 99) against aiosmtpd, a strict peer
# that accepts good* and refuses bad* with 550 and records every
# command: sluice verify and reject_unverified_recipient probe with
# MAIL, RCPT and QUIT, never DATA; deliverable, undeliverable (the
# remote's reply quoted as the reference does) and, for a dead port,
# undetermined (450), and once core/ has found it dead, probes to it are
# not made; the cache answers a second RCPT without a probe;
# the error and discard transports answer without one; 200 made-up
# recipients from 50 clients at once put no more connections on the
# receiver than address_verify_concurrency_limit and are refused past
# address_verify_pending_request_limit; a client that hangs up while
# its RCPT waits costs nothing. Bounded in time; stops only what it
# started.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3-aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'
need swaks command -v swaks

. tests/integration/lib/daemon_lib.sh
chmod 711 "$tmp"

rx_port=$(free_port)
dead_port=$(free_port)
smtpd_port=$(free_port)
/usr/bin/python3 tests/integration/lib/verify_receiver.py "$tmp/rx" \
    "$rx_port" 0.2 2>"$tmp/rx.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/rx/ready" && ok "the receiver listens" ||
    not_ok "the receiver listens"

cat >"$tmp/transport" <<EOF
verify.test smtp:[127.0.0.1]:$rx_port
dead.test smtp:[127.0.0.1]:$dead_port
gone.test error:5.1.2 gone.test: no such domain here
sink.test discard:
EOF
mkdir -p "$tmp/d"
cat >"$tmp/d/sluice.conf" <<EOF
queue_directory = $tmp/d/q
myhostname = sluice.test
smtpd_listen = 127.0.0.1:$smtpd_port
mynetworks = 127.0.0.0/8
transport_maps = $tmp/transport
mail_owner = root
smtpd_recipient_restrictions = reject_unverified_recipient
unverified_recipient_reject_code = 550
address_verify_poll_count = 1
address_verify_poll_delay = 1s
address_verify_concurrency_limit = 3
address_verify_pending_request_limit = 20
EOF
"$build/sluiced" -f -c "$tmp/d/sluice.conf" >"$tmp/d/log" 2>&1 &
sluiced_pid=$!
pids="$pids $sluiced_pid"
wait_for 10 grep -qs "started: queue" "$tmp/d/log" && ok "sluiced starts" ||
    not_ok "sluiced starts"
sluice() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
rcpts() { grep -c '^RCPT' "$tmp/rx/commands" 2>/dev/null || echo 0; }

# sluice verify: one line per address, the exit status the worst.
out=$(sluice verify good@verify.test bad@verify.test 2>&1)
rc=$?
expect "sluice verify: one undeliverable address exits 2" 2 "$rc"
expect "good@verify.test is deliverable, the RCPT reply quoted" \
    "good@verify.test: deliverable (dsn=2.0.0): 250 OK" \
    "$(echo "$out" | sed -n 1p)"
expect "bad@verify.test is undeliverable, the remote's reply quoted" \
    "bad@verify.test: undeliverable (dsn=5.1.1): host 127.0.0.1[127.0.0.1] said: 550 5.1.1 <bad@verify.test>: Recipient address rejected: User unknown (in reply to RCPT TO command)" \
    "$(echo "$out" | sed -n 2p)"
expect "the probes said MAIL, RCPT and QUIT, never DATA" \
    "MAIL QUIT RCPT" \
    "$(awk '{print $1}' "$tmp/rx/commands" | sort -u | tr '\n' ' ' |
        sed 's/ $//')"
grep -q '^MAIL FROM:<double-bounce@sluice.test>' "$tmp/rx/commands" &&
    ok "the probe's sender is address_verify_sender@myhostname" ||
    not_ok "the probe's sender is address_verify_sender@myhostname"
grep -q 'sluice/smtp\[[0-9]*\]: verify: to=<good@verify.test>, relay=127.0.0.1\[127.0.0.1\]:'"$rx_port"', delay=.*, dsn=2.0.0, status=deliverable (250 OK)' "$tmp/d/log" &&
    ok "the probe's log line says status=deliverable" ||
    not_ok "the probe's log line says status=deliverable"
grep -q ' verify: to=<bad@verify.test>, .* dsn=5.1.1, status=undeliverable (host ' "$tmp/d/log" &&
    ok "the probe's log line says status=undeliverable" ||
    not_ok "the probe's log line says status=undeliverable"

# The cache: asked again, no probe.
before=$(rcpts)
out=$(sluice verify good@verify.test)
expect "sluice verify again: deliverable from the cache, exit 0" \
    "good@verify.test: deliverable (dsn=2.0.0, cached): 250 OK 0" "$out $?"
expect "and no second probe" "$before" "$(rcpts)"
out=$(sluice verify --cached never@verify.test)
expect "--cached sends no probe: undetermined, exit 3" \
    "never@verify.test: undetermined (dsn=4.1.1): no answer in the address verification cache 3" \
    "$out $?"
expect "still no probe" "$before" "$(rcpts)"

# Routes that answer by themselves.
out=$(sluice verify x@gone.test y@sink.test)
expect "the error transport: undeliverable with its text; discard: deliverable" \
    "x@gone.test: undeliverable (dsn=5.1.2): gone.test: no such domain here|y@sink.test: deliverable (dsn=2.0.0): discarded" \
    "$(echo "$out" | tr '\n' '|' | sed 's/|$//')"
expect "without a probe" "$before" "$(rcpts)"

# The SMTP server's reject_unverified_recipient.
rcpt_reply() {
    swaks --server 127.0.0.1:"$smtpd_port" --from a@client.test --to "$1" \
        --helo client.test --quit-after RCPT 2>&1 |
        awk '/RCPT TO/ { getline; sub(/^<[-*~ ]* /, ""); print; exit }'
}
expect "RCPT of a deliverable address: 250" "250 2.1.5 Ok" \
    "$(rcpt_reply good2@verify.test)"
expect "RCPT of an undeliverable one: 550 after the probe, quoting the remote" \
    "550 5.1.1 <bad2@verify.test>: Recipient address rejected: undeliverable address: host 127.0.0.1[127.0.0.1] said: 550 5.1.1 <bad2@verify.test>: Recipient address rejected: User unknown (in reply to RCPT TO command)" \
    "$(rcpt_reply bad2@verify.test)"
expect "RCPT for a dead port: 450, the connection's failure quoted" \
    "450 4.1.1 <x@dead.test>: Recipient address rejected: unverified address: connect to 127.0.0.1[127.0.0.1]:$dead_port: Connection refused" \
    "$(rcpt_reply x@dead.test)"
sluice verify y1@dead.test y2@dead.test y3@dead.test y4@dead.test \
    y5@dead.test >/dev/null
out=$(sluice verify y@dead.test)
expect "core/ found dead.test dead after a failed cohort of probes: the next is not made" \
    "y@dead.test: undetermined (dsn=4.4.1): delivery temporarily suspended: connect to 127.0.0.1[127.0.0.1]:$dead_port: Connection refused 3" \
    "$out $?"
grep -q "NOQUEUE: reject: RCPT from .*: 550 5.1.1 <bad2@verify.test>: Recipient address rejected: undeliverable address: " "$tmp/d/log" &&
    ok "the refusal is logged as NOQUEUE: reject" ||
    not_ok "the refusal is logged as NOQUEUE: reject"
before=$(rcpts)
expect "a second RCPT of good2: 250 again" "250 2.1.5 Ok" \
    "$(rcpt_reply good2@verify.test)"
expect "from the cache: no second probe" "$before" "$(rcpts)"
grep -q '^DATA' "$tmp/rx/commands" && not_ok "never DATA" || ok "never DATA"

# Hostile: 200 made-up recipients from 50 clients at once.
start=$(date +%s)
out=$(/usr/bin/python3 tests/integration/lib/verify_clients.py flood \
    127.0.0.1 "$smtpd_port" 50 4 verify.test)
echo "# flood: $out in $(($(date +%s) - start)) s"
max=$(sed 's/.*max=\([0-9]*\).*/\1/' "$tmp/rx/stats")
echo "# receiver: $(cat "$tmp/rx/stats"), RCPTs seen $(rcpts)"
[ "$max" -le 3 ] && ok "the receiver never had more than 3 connections (address_verify_concurrency_limit)" ||
    not_ok "the receiver never had more than 3 connections (address_verify_concurrency_limit): $max"
total=$(echo "$out" | awk '{ s = 0; for (i = 1; i <= 4; i++) { split($i, kv, "="); s += kv[2] } print s }')
expect "every RCPT got an answer" 200 "$total"
busy=$(echo "$out" | sed 's/.*busy=\([0-9]*\).*/\1/')
[ "$busy" -gt 0 ] && ok "past the pending limit: 450 at once, no probe ($busy)" ||
    not_ok "past the pending limit: 450 at once, no probe ($busy)"
[ "$(rcpts)" -lt 200 ] && ok "fewer probes than recipients asked ($(rcpts))" ||
    not_ok "fewer probes than recipients asked ($(rcpts))"
grep -q 'warning: address verification: 20 requests waiting (address_verify_pending_request_limit): not probing <' "$tmp/d/log" &&
    ok "the limit is logged" || not_ok "the limit is logged"

# A client that hangs up while its RCPT waits.
/usr/bin/python3 tests/integration/lib/verify_clients.py hangup \
    127.0.0.1 "$smtpd_port" slow-hangup@verify.test
wait_for 5 grep -q 'verify: to=<slow-hangup@verify.test>, .*status=deliverable' "$tmp/d/log" &&
    ok "its probe goes on for the cache" || not_ok "its probe goes on for the cache"
expect "and sluiced serves on" "250 2.1.5 Ok" "$(rcpt_reply slow-hangup@verify.test)"
# reject_unverified_sender, after a reload.
echo "smtpd_sender_restrictions = reject_unverified_sender" >>"$tmp/d/sluice.conf"
kill -HUP "$sluiced_pid"
sender_reply() {
    swaks --server 127.0.0.1:"$smtpd_port" --from "$1" --to good@verify.test \
        --helo client.test --quit-after RCPT 2>&1 |
        awk '/RCPT TO/ { getline; sub(/^<[-*~ ]* /, ""); print; exit }'
}
tries=0
until [ "$(sender_reply bad3@verify.test | cut -c1-3)" = 450 ] ||
    [ $tries -ge 20 ]; do
    tries=$((tries + 1))
    sleep 0.25
done
expect "reject_unverified_sender: an undeliverable sender, 450 X.1.7" \
    "450 4.1.7 <bad3@verify.test>: Sender address rejected: undeliverable address: host 127.0.0.1[127.0.0.1] said: 550 5.1.1 <bad3@verify.test>: Recipient address rejected: User unknown (in reply to RCPT TO command)" \
    "$(sender_reply bad3@verify.test)"
expect "reject_unverified_sender: a deliverable sender passes" "250 2.1.5 Ok" \
    "$(sender_reply good3@verify.test)"

# The control socket's verify verb, spoken to directly: bad requests and
# a client that leaves before its answer.
control() {
    /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode("latin-1") + b"\n")
if sys.argv[3] == "leave":
    s.close()
    sys.exit(0)
s.settimeout(10)
out = b""
while True:
    d = s.recv(4096)
    if not d:
        break
    out += d
sys.stdout.write(out.decode("latin-1"))' "$tmp/d/q/private/control" "$1" "${2:-read}"
}
expect "verify without an address: refused" "error no address to verify" \
    "$(control verify)"
expect "verify of a malformed address: refused, quoted" \
    'error malformed address "a\x01b@x"' "$(control "$(printf 'verify a\001b@x')")"
many=$(seq 65 | sed 's/^/a/; s/$/@x.test/' | tr '\n' ' ')
expect "verify of 65 addresses: refused" "error more than 64 addresses" \
    "$(control "verify $many")"
expect "verify --wait out of bounds: refused" \
    "error --wait: not milliseconds from 0 to 3600000" \
    "$(control "verify --wait -1 a@x.test")"
control "verify --wait 5000 slow-leaver@verify.test" leave
wait_for 5 grep -q 'verify: to=<slow-leaver@verify.test>, ' "$tmp/d/log" &&
    ok "a control client that leaves: the probe goes on" ||
    not_ok "a control client that leaves: the probe goes on"
kill -0 "$sluiced_pid" 2>/dev/null && ok "sluiced is alive" || not_ok "sluiced is alive"
kill "$sluiced_pid"
wait_for 10 sh -c "! kill -0 $sluiced_pid 2>/dev/null" &&
    ok "sluiced stops" || not_ok "sluiced stops"
grep -E 'ERROR|AddressSanitizer|runtime error' "$tmp/d/log" && not_ok "no sanitizer report" ||
    ok "no sanitizer report"
tap_done
