#!/bin/sh
# smtpd_auth.sh BUILD - SMTP AUTH in the SMTP server (issue 18) against
# real clients and a real Dovecot. Tables of mechanism (PLAIN, LOGIN) x
# (TLS, no TLS) x (good, bad, missing credentials) with swaks and with
# Python's smtplib, from 127.0.0.2 (outside mynetworks) to a domain
# that only a logged-in client may relay to; the passwd-file back end
# with hashes made by Dovecot's doveadm pw (SHA512-CRYPT, SHA256-CRYPT,
# BLF-CRYPT); Received: with "(Authenticated sender: ...)" and ESMTPSA,
# the client= log line with sasl_method and sasl_username; AUTH without
# TLS once smtpd_tls_auth_only = no; hostile clients (bad base64, huge
# lines, closing mid-AUTH, silent at a 334); a password guesser from
# four addresses while a user logs in (latency printed); a reload with
# a bad passwd-file refused; the dovecot back end against Dovecot's
# auth service (good, bad, the service stopped: 454, started again:
# logged in again). Bounded in time; stops only what it started.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need swaks command -v swaks
need libnet-ssleay-perl perl -MNet::SSLeay -e 1
need python3 test -x /usr/bin/python3
need postfix test -x /usr/sbin/smtp-sink
need dovecot-core command -v doveadm

. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/dovecot_auth.sh
clients="/usr/bin/python3 tests/integration/lib/auth_clients.py"
chmod 711 "$tmp"

certs=$tmp/certs
if ! sh tests/integration/lib/tls_ca.sh "$certs" 2>"$tmp/ca.err"; then
    not_ok "tls_ca.sh makes the test CA and certificates"
    sed 's/^/#   /' "$tmp/ca.err"
    tap_done
fi
ca=$certs/ca.pem

# alice in the clear, the others hashed by Dovecot's own doveadm pw
{
    echo "alice:{PLAIN}wonderland"
    echo "bob:$(doveadm pw -s SHA512-CRYPT -p builder)"
    echo "carol:$(doveadm pw -s BLF-CRYPT -p secret)"
    echo "dave:$(doveadm pw -s SHA256-CRYPT -p hunter2)"
} >"$tmp/passwd"
expect "doveadm pw made the hashes" 3 "$(grep -c '{[A-Z0-9]*-CRYPT}\$' "$tmp/passwd")"

start_smtp_sink out
port=$(free_port)
conf=$tmp/sluice.conf
write_conf() { # $1: smtpd_tls_auth_only; $2: smtpd_sasl_type; $3: path
    cat >"$conf" <<EOC
queue_directory = $tmp/q
smtpd_listen = 127.0.0.1:$port
mynetworks = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$port_out
smtpd_tls_cert_file = $certs/server.pem
smtpd_tls_key_file = $certs/server.key
smtpd_sasl_auth_enable = yes
smtpd_tls_auth_only = $1
smtpd_sasl_type = $2
smtpd_sasl_path = $3
smtpd_sasl_authenticated_header = yes
smtpd_sasl_failure_delay = 100ms
smtpd_sasl_failure_delay_limit = 400ms
smtpd_sasl_service_timeout = 20s
smtpd_timeout = 3s
smtpd_hard_error_limit = 10
EOC
}
write_conf yes passwd-file "$tmp/passwd"
"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 listening "$port"; then
    ok "sluiced listens with AUTH on $port"
else
    not_ok "sluiced listens with AUTH on $port"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi
reload() {
    _rl_n=$(grep -c "reloaded: \|reload failed" "$tmp/log")
    kill -HUP "$daemon"
    wait_for 10 sh -c "[ \$(grep -c 'reloaded: \|reload failed' '$tmp/log') -gt $_rl_n ]"
}
delivered() { grep -l "^Subject: $1\$" "$tmp"/out/* 2>/dev/null | head -1; }

# swaks: exit 0 and "queued", or the code that stopped it
swaks_try() { # MECH tls|plain USER PASSWORD SUBJECT
    _o=$tmp/swaks.$5
    _tls=
    [ "$2" = tls ] && _tls="--tls --tls-verify --tls-ca-path $ca"
    _auth=
    [ "$3" != - ] && _auth="--auth $1 --auth-user $3 --auth-password $4"
    # shellcheck disable=SC2086
    timeout 40 swaks --server 127.0.0.1 --port "$port" --local-interface \
        "${src:-127.0.0.2}" --helo client.test $_tls $_auth --from a@client.test \
        --to r@far.test --h-Subject "$5" >"$_o" 2>&1
    if grep -q '^<[-~]  250 2.0.0 Ok: queued' "$_o"; then
        echo queued
    elif grep -q 'Host did not advertise authentication' "$_o"; then
        echo not-offered
    else
        sed -n 's/^<[~*]\* *\([0-9][0-9][0-9]\) .*/\1/p' "$_o" | head -1
        grep -q '^<[~*]\*' "$_o" || tail -4 "$_o" | sed 's/^/#   /' >&2
    fi
}

# The table, passwd-file back end, smtpd_tls_auth_only = yes.
for mech in PLAIN LOGIN; do
    for tls in tls plain; do
        good=queued
        [ $tls = plain ] && good=not-offered
        expect "swaks $mech $tls good credentials: $good" $good \
            "$(swaks_try $mech $tls bob builder "sw-$mech-$tls-good")"
        bad=535
        [ $tls = plain ] && bad=not-offered
        expect "swaks $mech $tls bad credentials: $bad" $bad \
            "$(swaks_try $mech $tls bob wrong "sw-$mech-$tls-bad")"
        expect "swaks $mech $tls no credentials: relay denied (554)" 554 \
            "$(swaks_try $mech $tls - - "sw-$mech-$tls-none")"
        r=$($clients send "$port" "$ca" $mech $tls carol secret "py-$mech-$tls-good")
        [ $tls = tls ] && want="auth=235 send=queued" ||
            want="auth=not-offered send=554"
        expect "smtplib $mech $tls good credentials: $want" "$want" "$r"
        r=$($clients send "$port" "$ca" $mech $tls carol wrong "py-$mech-$tls-bad")
        [ $tls = tls ] && want="auth=535 send=554" ||
            want="auth=not-offered send=554"
        expect "smtplib $mech $tls bad credentials: $want" "$want" "$r"
        expect "smtplib $mech $tls no credentials: 554" "auth=none send=554" \
            "$($clients send "$port" "$ca" $mech $tls - - "py-$mech-$tls-none")"
    done
done
expect "dave's SHA256-CRYPT and alice's PLAIN log in too" "auth=235 send=queued auth=235 send=queued" \
    "$($clients send "$port" "$ca" PLAIN tls dave hunter2 d | tr '\n' ' ')$($clients send "$port" "$ca" LOGIN tls alice wonderland a)"
wait_for 15 sh -c "[ -n \"\$(grep -l '^Subject: py-LOGIN-tls-good' $tmp/out/* 2>/dev/null)\" ]"
m=$(delivered py-LOGIN-tls-good)
expect "Received: names the login and says ESMTPSA" 2 \
    "$(grep -c -e '^	(Authenticated sender: carol)' -e '^	by mx.test (sluice) with ESMTPSA id ' "$m" 2>/dev/null)"
expect "the client= line has sasl_method and sasl_username" 1 \
    "$(grep -c ': client=unknown\[127.0.0.2\], sasl_method=LOGIN, sasl_username=carol$' "$tmp/log")"
expect "a failed login is logged as Postfix does" 1 \
    "$(grep -c 'warning: unknown\[127.0.0.2\]: SASL PLAIN authentication failed: authentication failure, sasl_username=bob$' "$tmp/log")"
out=$(printf 'EHLO c.test\r\nAUTH PLAIN AGJvYgBidWlsZGVy\r\nQUIT\r\n' |
    timeout 10 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.stdin.buffer.read()); s.shutdown(socket.SHUT_WR)
print(s.makefile("rb").read().decode())' "$port" | grep -c '^504 5.5.4 Encryption required for requested authentication mechanism')
expect "AUTH in clear text with smtpd_tls_auth_only: 504 5.5.4" 1 "$out"

# smtpd_tls_auth_only = no: AUTH in clear text too.
write_conf no passwd-file "$tmp/passwd"
reload
expect "smtpd_tls_auth_only = no: swaks PLAIN without TLS" queued \
    "$(swaks_try PLAIN plain alice wonderland sw-plain-noauthonly)"
expect "smtpd_tls_auth_only = no: smtplib LOGIN without TLS" \
    "auth=235 send=queued" \
    "$($clients send "$port" "$ca" LOGIN plain bob builder py-plain-noauthonly)"

# Hostile clients cost their own session only.
$clients hostile "$port" >"$tmp/hostile.out" 2>&1
expect "hostile clients: each answered, and a good login after" \
    "garbage: 501 5.5.2 Cannot decode response
garbage response: 334 VXNlcm5hbWU6 / 501 5.5.2 Cannot decode response
huge AUTH: 500 5.5.2 Error: line too long
huge response: 334  / 500 5.5.6 Authentication Exchange line is too long
alive: 250 2.0.0 Ok
after: 235 2.7.0 Authentication successful" "$(cat "$tmp/hostile.out")"
expect "a client silent at the 334 is cut at smtpd_timeout" \
    "334: 334 VXNlcm5hbWU6
then: 421 4.4.2 mx.test Error: timeout exceeded after 3 s" \
    "$(timeout 20 $clients silent "$port" 2>&1)"

# A password guesser from four addresses, sixteen sessions each; a user
# logs in meanwhile.
r=$(timeout 60 $clients brute "$port" 5 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5 16 bob builder 2>&1)
echo "# brute force: $r"
attempts=$(echo "$r" | sed -n 's/.*attempts=\([0-9]*\).*/\1/p')
legit=$(echo "$r" | sed -n 's/.* legit=\([0-9]*\/[0-9]*\).*/\1/p')
max=$(echo "$r" | sed -n 's/.*max_ms=\([0-9]*\).*/\1/p')
if [ "${attempts:-0}" -ge 300 ]; then
    ok "the guesser made $attempts wrong attempts"
else
    not_ok "the guesser made $attempts wrong attempts (300 or more wanted)"
fi
case $legit in
"${legit%/*}/${legit%/*}") ok "the user logged in every time meanwhile ($legit)" ;;
*) not_ok "the user logged in every time meanwhile ($legit)" ;;
esac
if [ "${max:-99999}" -lt 1000 ]; then
    ok "the user's login took at most ${max} ms under the attack"
else
    not_ok "the user's login took at most ${max} ms under the attack (< 1000 wanted)"
fi
expect "guessers were dropped at smtpd_hard_error_limit" yes \
    "$([ "$(grep -c 'too many errors after AUTH from unknown\[127.0.0.[2-5]\]' "$tmp/log")" -ge 4 ] && echo yes)"

# A reload with a bad passwd-file is refused; the users stay.
cp "$tmp/passwd" "$tmp/passwd.bad"
echo "eve:{SSHA}abcdef" >>"$tmp/passwd.bad"
write_conf no passwd-file "$tmp/passwd.bad"
reload
expect "the bad passwd-file is refused with its file and line" 1 \
    "$(grep -c "reload failed, the running configuration stays: smtpd_sasl_path: $tmp/passwd.bad, line 5: unknown password scheme {SSHA}" "$tmp/log")"
expect "the users in use stay" "auth=235 send=queued" \
    "$($clients send "$port" "$ca" PLAIN plain alice wonderland after-bad)"

# The dovecot back end against Dovecot's auth service. Dovecot delays a
# failure (auth_failure_delay, 2 s) and then every attempt from that
# address (its auth penalty, up to 15 s): each client here has an
# address of its own.
if dovecot_auth_start "$tmp/dovecot" "$tmp/passwd" 2>"$tmp/dovecot.err"; then
    ok "Dovecot's auth service is up"
else
    not_ok "Dovecot's auth service is up"
    sed 's/^/#   /' "$tmp/dovecot.err"
    tap_done
fi
write_conf yes dovecot "$dovecot_auth_socket"
reload
for mech in PLAIN LOGIN; do
    expect "dovecot: swaks $mech good credentials" queued \
        "$(swaks_try $mech tls bob builder "dv-$mech-good")"
    expect "dovecot: swaks $mech bad credentials: 535" 535 \
        "$(swaks_try $mech tls bob wrong "dv-$mech-bad")"
    grep 'Temporary\|auth service' "$tmp/log" | tail -2 | sed 's/^/#   /'
    expect "dovecot: smtplib $mech good credentials" "auth=235 send=queued" \
        "$($clients send "$port" "$ca" $mech tls carol secret "dvpy-$mech")"
done
# Dovecot's auth process outlives its master while it has clients: both
# are stopped (the children of the master this script started).
kids=$(ps -o pid= --ppid "$dovecot_auth_pid" 2>/dev/null)
# shellcheck disable=SC2086
kill "$dovecot_auth_pid" $kids 2>/dev/null
wait "$dovecot_auth_pid" 2>/dev/null
wait_for 10 sh -c "! test -S '$dovecot_auth_socket'"
expect "dovecot stopped: 454 4.7.0 Temporary authentication failure" \
    "auth=454 send=554" \
    "$(SOURCE=127.0.5.1 $clients send "$port" "$ca" PLAIN tls bob builder dv-down)"
dovecot_auth_start "$tmp/dovecot" "$tmp/passwd" 2>>"$tmp/dovecot.err"
expect "dovecot started again: logged in again" "auth=235 send=queued" \
    "$(SOURCE=127.0.5.2 $clients send "$port" "$ca" PLAIN tls bob builder dv-up)"
expect "the daemon is still there" 0 "$(kill -0 "$daemon"; echo $?)"
tap_done
