#!/bin/sh
# smtpd_tls.sh BUILD - TLS in the SMTP server (issue 17, its inbound
# half) against real clients: openssl s_client -starttls smtp and swaks
# --tls carry a message to smtp-sink, which shows the Received: header
# with Postfix's TLS comment (exactly) or without it; Postfix's
# posttls-finger as a second strict peer; Python's ssl module for the
# STARTTLS command injection (CVE-2011-0411: what is pipelined after
# STARTTLS is thrown away, and the client must EHLO again), STARTTLS in
# TLS and with an argument; implicit TLS on smtpd_tls_wrapper_listen
# (s_client without -starttls) and a plain client there;
# smtpd_tls_security_level = encrypt (530 before STARTTLS, 250 after).
# Hostile clients cost their own session only: one silent after
# STARTTLS (smtpd_starttls_timeout), one sending garbage for a
# ClientHello, while another session gets its mail through; thirty
# handshakes left half done while a good client's message goes in.
# SIGHUP with a new certificate: new sessions get it (fingerprints), a
# session opened before finishes its message; a broken certificate at
# reload is refused and logged, the one in use stays;
# smtpd_tls_chain_files serves its own. smtpd_tls_wrappermode = yes
# turns smtpd_listen to implicit TLS. A missing certificate at start is
# fatal with the reason, and sluice config refuses a key that does not
# match. Bounded in time; stops only what it started.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need openssl command -v openssl
need python3 test -x /usr/bin/python3
need swaks command -v swaks
need libnet-ssleay-perl perl -MNet::SSLeay -e 1
need postfix test -x /usr/sbin/smtp-sink

. tests/integration/lib/daemon_lib.sh
clients="/usr/bin/python3 tests/integration/lib/tls_clients.py"
chmod 711 "$tmp"

certs=$tmp/certs
if ! sh tests/integration/lib/tls_ca.sh "$certs" 2>"$tmp/ca.err"; then
    not_ok "tls_ca.sh makes the test CA and certificates"
    sed 's/^/#   /' "$tmp/ca.err"
    tap_done
fi
ca=$certs/ca.pem
cp "$certs/server.pem" "$certs/live.pem"
cp "$certs/server.key" "$certs/live.key"

start_smtp_sink out
port=$(free_port)
wport=$(free_port)
conf=$tmp/sluice.conf
write_conf() { # $1: smtpd_tls_security_level, $2: _received_header
    cat >"$conf" <<EOC
queue_directory = $tmp/q
smtpd_listen = 127.0.0.1:$port
smtpd_tls_wrapper_listen = 127.0.0.1:$wport
mynetworks = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$port_out
smtpd_tls_cert_file = $certs/live.pem
smtpd_tls_key_file = $certs/live.key
smtpd_tls_security_level = $1
smtpd_tls_received_header = $2
smtpd_starttls_timeout = 2s
EOC
}
write_conf may yes

"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 listening "$port" && wait_for 10 listening "$wport"; then
    ok "sluiced listens for STARTTLS on $port and implicit TLS on $wport"
else
    not_ok "sluiced listens for STARTTLS on $port and implicit TLS on $wport"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi
delivered() { find "$tmp/out" -type f | wc -l; }
at_least() { [ "$(delivered)" -ge "$1" ]; }
# the delivered message whose Subject: is $1
message() { grep -l "^Subject: $1" "$tmp"/out/* 2>/dev/null | head -1; }
# the Received: field sluice added, its lines joined by "|"
received() {
    awk '/^Received: from .* \(unknown \[/{r=1; print; next}
        r && /^[^ \t]/ {exit} r' "$(message "$1")" |
        tr -d '\r' | sed 's/^\t/\\t/' | paste -sd'|'
}
reload() {
    _rl_n=$(grep -c "reloaded: \|reload failed" "$tmp/log")
    kill -HUP "$daemon"
    wait_for 10 sh -c "[ \$(grep -c 'reloaded: \|reload failed' '$tmp/log') -gt $_rl_n ]"
}

# EHLO in clear text offers STARTTLS.
ehlo=$(printf 'EHLO c.test\r\nQUIT\r\n' |
    timeout 10 /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
f = s.makefile("rb"); f.readline()
s.sendall(b"EHLO c.test\r\n")
while True:
    l = f.readline().decode()
    print(l.strip())
    if l[3] == " ": break
' "$port" | grep -c '^250-STARTTLS$')
expect "EHLO in clear text offers STARTTLS" 1 "$ehlo"

# openssl s_client: EHLO, MAIL, RCPT, DATA in TLS, to smtp-sink.
smtp_in() { # the commands of a message whose Subject: is $1
    printf 'EHLO client.test\r\nMAIL FROM:<a@client.test>\r\n'
    printf 'RCPT TO:<one@far.test>\r\nDATA\r\n'
    printf 'Subject: %s\r\n\r\nbody\r\n.\r\n' "$1"
    sleep 1
    printf 'QUIT\r\n'
}
(sleep 0.5; smtp_in "s_client starttls") |
    timeout 15 openssl s_client -starttls smtp -connect "127.0.0.1:$port" \
        -CAfile "$ca" -verify_return_error -verify_hostname localhost \
        -quiet >"$tmp/s_client.out" 2>&1
expect "s_client -starttls smtp: the message is queued" 1 \
    "$(grep -c '^250 2.0.0 Ok: queued as ' "$tmp/s_client.out")"
wait_for 15 at_least 1
date_re='[A-Z][a-z][a-z], [0-9]* [A-Z][a-z][a-z] [0-9]* [0-9:]* [-+][0-9]*'
expect "Received: has Postfix's TLS comment and ESMTPS" \
    "Received: from client.test (unknown [127.0.0.1])|\\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)|\\t key-exchange X25519 server-signature RSA-PSS (2048 bits) server-digest SHA256)|\\t(No client certificate requested)|\\tby mx.test (sluice) with ESMTPS id ID|\\tfor <one@far.test>; DATE" \
    "$(received "s_client starttls" | sed -e 's/ id [0-9A-Z]*$/ id ID/' \
        -e "s/; $date_re\$/; DATE/" -e 's/ id [0-9A-Z]*|/ id ID|/' \
        -e "s/; $date_re/; DATE/")"
expect "the log tells the TLS session as Postfix does" 1 \
    "$(grep -c 'Anonymous TLS connection established from unknown\[127.0.0.1\]: TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits) key-exchange X25519 server-signature RSA-PSS (2048 bits) server-digest SHA256$' "$tmp/log")"
expect "the disconnect line counts starttls and two EHLOs" 1 \
    "$(grep -c 'disconnect from unknown\[127.0.0.1\] ehlo=2 starttls=1 mail=1 rcpt=1 data=1 quit=1 commands=7$' "$tmp/log")"

# swaks --tls: a strict client (Net::SSLeay), the whole message.
swaks --server 127.0.0.1 --port "$port" --tls --tls-verify --tls-ca-path "$ca" \
    --from a@client.test --to two@far.test --h-Subject "swaks tls" \
    >"$tmp/swaks.out" 2>&1
rc=$?
expect "swaks --tls: exit status 0, queued" "0 1" \
    "$rc $(grep -c '<~  250 2.0.0 Ok: queued as ' "$tmp/swaks.out")"
[ "$rc" = 0 ] || sed 's/^/#   /' "$tmp/swaks.out" | tail -15

# Postfix's posttls-finger: a second strict TLS client.
if command -v posttls-finger >/dev/null; then
    mkdir -p "$tmp/pf" && : >"$tmp/pf/main.cf" # it reads one
    MAIL_CONFIG=$tmp/pf timeout 20 posttls-finger -c -l secure -F "$ca" \
        -P /nonexistent "[127.0.0.1]:$port" localhost >"$tmp/finger.out" 2>&1
    expect "posttls-finger: verified TLS to sluice" 1 \
        "$(grep -c 'Verified TLS connection established to 127.0.0.1\[127.0.0.1\]:[0-9]*: TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)' "$tmp/finger.out")"
    grep -q Verified "$tmp/finger.out" || sed 's/^/#   /' "$tmp/finger.out"
else
    not_ok "posttls-finger: install the Debian package postfix"
fi

# CVE-2011-0411: a command in the same write as STARTTLS is not run.
out=$(timeout 20 $clients inject "$port" "$ca" rset 2>&1)
expect "STARTTLS + RSET in one write: 220, then EHLO's own answer" \
    "220 2.0.0 Ready to start TLS
250-mx.test" "$out"
expect "the dropped input is logged as Postfix does" 1 \
    "$(grep -c 'improper command pipelining after STARTTLS from unknown\[127.0.0.1\]: RSET??$' "$tmp/log")"
out=$(timeout 20 $clients inject "$port" "$ca" mail 2>&1)
expect "STARTTLS + MAIL in one write: MAIL in TLS needs a new EHLO" \
    "220 2.0.0 Ready to start TLS
503 5.5.1 Error: send HELO/EHLO first" "$out"
out=$(timeout 20 $clients again "$port" "$ca" 2>&1)
expect "STARTTLS in TLS: 503; with an argument: 501" \
    "503 5.5.1 Error: TLS already active
501 5.5.4 Syntax: STARTTLS" "$out"

# Implicit TLS: s_client without -starttls on the wrapper-mode port.
(sleep 0.5; smtp_in "wrapper mode") |
    timeout 15 openssl s_client -connect "127.0.0.1:$wport" -CAfile "$ca" \
        -verify_return_error -quiet >"$tmp/wrap.out" 2>&1
expect "implicit TLS: the greeting comes in TLS, the message is queued" \
    "1 1" "$(grep -c '^220 mx.test ESMTP sluice' "$tmp/wrap.out") $(grep -c '^250 2.0.0 Ok: queued as ' "$tmp/wrap.out")"
expect "implicit TLS: EHLO offers no STARTTLS" 0 \
    "$(grep -c STARTTLS "$tmp/wrap.out")"
expect "a plain client on the wrapper-mode port gets no SMTP" \
    "closed, no SMTP reply" "$(timeout 20 $clients plain "$wport" 2>&1)"
expect "... and its session ends logged" 1 \
    "$(grep -c 'SSL_accept error from unknown\[127.0.0.1\]: error:' "$tmp/log")"

# Hostile clients cost their own session, nothing else.
$clients held "$port" "$ca" "$tmp/go1" >"$tmp/held1.out" 2>&1 &
held=$!
pids="$pids $held"
wait_for 10 grep -q ready "$tmp/held1.out"
$clients silent "$port" >"$tmp/silent.out" 2>&1 &
silent=$!
pids="$pids $silent"
expect "garbage instead of a ClientHello: that session ends" "closed" \
    "$(timeout 20 $clients garbage "$port" 2>&1)"
wait "$silent"
expect "silent after STARTTLS: closed at smtpd_starttls_timeout (2 s)" \
    "closed after 2 s" "$(cat "$tmp/silent.out")"
expect "... logged as a handshake timeout" 1 \
    "$(grep -c 'SSL_accept error from unknown\[127.0.0.1\]: Connection timed out$' "$tmp/log")"
touch "$tmp/go1"
wait "$held"
expect "a session open meanwhile gets its message through" \
    "ready
250 2.0.0 Ok" "$(cat "$tmp/held1.out")"

# Thirty handshakes that never finish do not hold up a good client.
$clients crowd "$port" 30 >"$tmp/crowd.out" 2>&1 &
crowd=$!
pids="$pids $crowd"
wait_for 20 grep -q open "$tmp/crowd.out"
(sleep 0.5; smtp_in "past the crowd") |
    timeout 15 openssl s_client -starttls smtp -connect "127.0.0.1:$port" \
        -CAfile "$ca" -quiet >"$tmp/crowd_s_client.out" 2>&1
expect "30 stalled handshakes: another client's message is queued" 1 \
    "$(grep -c '^250 2.0.0 Ok: queued as ' "$tmp/crowd_s_client.out")"
wait "$crowd"
expect "... and the 30 end at smtpd_starttls_timeout" "open
30 closed" "$(cat "$tmp/crowd.out")"

# SIGHUP with a new certificate; a session opened before stays.
old=$(timeout 20 $clients fingerprint "$port" "$ca")
$clients held "$port" "$ca" "$tmp/go2" >"$tmp/held2.out" 2>&1 &
held=$!
pids="$pids $held"
wait_for 10 grep -q ready "$tmp/held2.out"
cp "$certs/other.pem" "$certs/live.pem"
cp "$certs/other.key" "$certs/live.key"
reload
new=$(timeout 20 $clients fingerprint "$port" "$ca")
want=$(openssl x509 -in "$certs/other.pem" -outform DER | sha256sum | cut -d' ' -f1)
expect "after SIGHUP new sessions get the new certificate" \
    "$want" "$new"
[ "$old" != "$new" ] && ok "... which differs from the old" ||
    not_ok "... which differs from the old"
touch "$tmp/go2"
wait "$held"
expect "a session opened before the reload finishes its message" \
    "ready
250 2.0.0 Ok" "$(cat "$tmp/held2.out")"

# A broken certificate at reload is refused; the one in use stays.
cp "$certs/garbage.pem" "$certs/live.pem"
reload
expect "a broken certificate at reload: refused and logged" 1 \
    "$(grep -c "reload failed, the running configuration stays: smtpd_tls_cert_file $certs/live.pem: no certificate: " "$tmp/log")"
expect "... and the certificate in use keeps working" "$want" \
    "$(timeout 20 $clients fingerprint "$port" "$ca")"
cp "$certs/other.pem" "$certs/live.pem"

# smtpd_tls_chain_files (key, certificate and CA in one file) wins over
# smtpd_tls_cert_file.
echo "smtpd_tls_chain_files = $certs/chain.pem" >>"$conf"
reload
expect "smtpd_tls_chain_files: its certificate is served" \
    "$(openssl x509 -in "$certs/server.pem" -outform DER | sha256sum | cut -d' ' -f1)" \
    "$(timeout 20 $clients fingerprint "$port" "$ca")"

# Without smtpd_tls_received_header: ESMTPS, no comment.
write_conf may no
reload
(sleep 0.5; smtp_in "no comment") |
    timeout 15 openssl s_client -starttls smtp -connect "127.0.0.1:$port" \
        -CAfile "$ca" -quiet >/dev/null 2>&1
swaks --server 127.0.0.1 --port "$port" --helo client.test \
    --from a@client.test --to three@far.test --h-Subject "clear text" \
    >/dev/null 2>&1
wait_for 15 sh -c "grep -l -q '^Subject: clear text' $tmp/out/* 2>/dev/null && grep -l -q '^Subject: no comment' $tmp/out/* 2>/dev/null"
expect "smtpd_tls_received_header = no: ESMTPS, no TLS comment" \
    "Received: from client.test (unknown [127.0.0.1])|\\tby mx.test (sluice) with ESMTPS id ID" \
    "$(received "no comment" | cut -d'|' -f1-2 | sed 's/ id [0-9A-Z]*$/ id ID/')"
expect "in clear text: ESMTP, no TLS comment" \
    "Received: from client.test (unknown [127.0.0.1])|\\tby mx.test (sluice) with ESMTP id ID" \
    "$(received "clear text" | cut -d'|' -f1-2 | sed 's/ id [0-9A-Z]*$/ id ID/')"

# smtpd_tls_security_level = encrypt.
write_conf encrypt no
reload
out=$(printf 'EHLO c.test\r\nMAIL FROM:<a@client.test>\r\nQUIT\r\n' |
    timeout 10 /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.stdin.buffer.read())
f = s.makefile("rb")
print([l.decode().strip() for l in f][-2])
' "$port")
expect "encrypt: MAIL in clear text is refused" \
    "530 5.7.0 Must issue a STARTTLS command first" "$out"
(sleep 0.5; smtp_in "encrypt") |
    timeout 15 openssl s_client -starttls smtp -connect "127.0.0.1:$port" \
        -CAfile "$ca" -quiet >"$tmp/encrypt.out" 2>&1
expect "encrypt: after STARTTLS the message is queued" 1 \
    "$(grep -c '^250 2.0.0 Ok: queued as ' "$tmp/encrypt.out")"

# A certificate that cannot be read at start: sluiced does not start.
sed "s|^smtpd_tls_cert_file = .*|smtpd_tls_cert_file = $tmp/none.pem|" \
    "$conf" | sed "s|^smtpd_listen = .*|smtpd_listen = 127.0.0.1:$(free_port)|" |
    sed "s|^smtpd_tls_wrapper_listen = .*|smtpd_tls_wrapper_listen =|" |
    sed "s|^queue_directory = .*|queue_directory = $tmp/q2|" >"$tmp/bad.conf"
timeout 20 "$build/sluiced" -f -c "$tmp/bad.conf" >"$tmp/bad.out" 2>&1
rc=$?
expect "a missing certificate at start: exit status non-zero, the reason" \
    "yes 1" "$([ $rc -ne 0 ] && echo yes) $(grep -c "smtpd_tls_cert_file $tmp/none.pem: cannot read: No such file or directory" "$tmp/bad.out")"
[ "$rc" -ne 0 ] || sed 's/^/#   /' "$tmp/bad.out"

# smtpd_tls_wrappermode = yes: smtpd_listen speaks TLS from the first
# byte (a second daemon, on its own spool and port).
port2=$(free_port)
sed -e "s|^smtpd_listen = .*|smtpd_listen = 127.0.0.1:$port2|" \
    -e "s|^smtpd_tls_wrapper_listen = .*|smtpd_tls_wrappermode = yes|" \
    -e "s|^queue_directory = .*|queue_directory = $tmp/q3|" \
    "$conf" >"$tmp/wrapper.conf"
"$build/sluiced" -f -c "$tmp/wrapper.conf" 2>>"$tmp/log2" &
daemon2=$!
pids="$pids $daemon2"
wait_for 10 listening "$port2"
(sleep 0.5; printf 'EHLO client.test\r\n'; sleep 0.5; printf 'QUIT\r\n') |
    timeout 15 openssl s_client -connect "127.0.0.1:$port2" -CAfile "$ca" \
        -verify_return_error -quiet >"$tmp/wrap2.out" 2>&1
expect "smtpd_tls_wrappermode = yes: the greeting comes in TLS" 1 \
    "$(grep -c '^220 mx.test ESMTP sluice' "$tmp/wrap2.out")"
kill "$daemon2"
wait "$daemon2"

# sluice config checks the files as sluiced would.
sed -e "s|^smtpd_tls_cert_file = .*|smtpd_tls_cert_file = $certs/server.pem|" \
    -e "s|^smtpd_tls_key_file = .*|smtpd_tls_key_file = $certs/wrong.key|" \
    "$conf" >"$tmp/mismatch.conf"
"$build/sluice" -c "$tmp/mismatch.conf" config smtpd_tls_key_file \
    >/dev/null 2>"$tmp/mismatch.err"
expect "sluice config: a key that does not match is refused (exit 1)" \
    "1 sluice: smtpd_tls_key_file $certs/wrong.key: does not match the certificate in $certs/server.pem" \
    "$? $(cat "$tmp/mismatch.err")"

kill "$daemon"
wait "$daemon"
expect "sluiced stops cleanly" 0 $?
tap_done
