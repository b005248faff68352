#!/bin/sh
# smtpd_submission.sh BUILD - the submission listener (issue 18):
# smtpd_submission_listen beside smtpd_listen (AUTH in TLS only) and
# smtpd_tls_wrapper_listen (implicit TLS, 465 style: AUTH at once), AUTH
# offered and required on submission, the default override smtpd_tls_security_level=encrypt (530
# before STARTTLS), MAIL before AUTH refused with 530 5.7.0, swaks and
# smtplib submitting after STARTTLS and AUTH; smtpd_submission_options
# as master.cf's -o (a braced value with commas) changed by a reload;
# a bad override refused at reload with the running one kept. Bounded
# in time; stops only what it started.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need swaks command -v swaks
need libnet-ssleay-perl perl -MNet::SSLeay -e 1
need python3 test -x /usr/bin/python3
need postfix test -x /usr/sbin/smtp-sink

. tests/integration/lib/daemon_lib.sh
clients="/usr/bin/python3 tests/integration/lib/auth_clients.py"
chmod 711 "$tmp"
certs=$tmp/certs
if ! sh tests/integration/lib/tls_ca.sh "$certs" 2>"$tmp/ca.err"; then
    not_ok "tls_ca.sh makes the test CA and certificates"
    sed 's/^/#   /' "$tmp/ca.err"
    tap_done
fi
ca=$certs/ca.pem
echo "alice:{PLAIN}wonderland" >"$tmp/passwd"

start_smtp_sink out
port=$(free_port)
sport=$(free_port)
wport=$(free_port)
conf=$tmp/sluice.conf
write_conf() { # $1: smtpd_submission_options
    cat >"$conf" <<EOC
queue_directory = $tmp/q
smtpd_listen = 127.0.0.1:$port
smtpd_submission_listen = 127.0.0.1:$sport
smtpd_tls_wrapper_listen = 127.0.0.1:$wport
smtpd_sasl_auth_enable = yes
mynetworks = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$port_out
smtpd_tls_cert_file = $certs/server.pem
smtpd_tls_key_file = $certs/server.key
smtpd_sasl_path = $tmp/passwd
smtpd_sasl_failure_delay = 0
EOC
    [ -n "$1" ] && echo "smtpd_submission_options = $1" >>"$conf"
}
write_conf ""
"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 listening "$port" && wait_for 10 listening "$sport"; then
    ok "sluiced listens on $port and for submission on $sport"
else
    not_ok "sluiced listens on $port and for submission on $sport"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi
reload() {
    _rl_n=$(grep -c "reloaded: \|reload failed" "$tmp/log")
    kill -HUP "$daemon"
    wait_for 10 sh -c "[ \$(grep -c 'reloaded: \|reload failed' '$tmp/log') -gt $_rl_n ]"
}
# the replies to $2 (commands, CRLF each) on port $1, from 127.0.0.2
talk() {
    printf "$2" | timeout 10 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5,
                             source_address=("127.0.0.2", 0))
s.sendall(sys.stdin.buffer.read()); s.shutdown(socket.SHUT_WR)
sys.stdout.write(s.makefile("rb").read().decode())' "$1" | tr -d '\r'
}

out=$(talk "$port" 'EHLO c.test\r\nQUIT\r\n')
expect "smtpd_listen offers no AUTH in clear text (smtpd_tls_auth_only)" 0 \
    "$(echo "$out" | grep -c AUTH)"
# implicit TLS (465 style, smtpd_tls_wrapper_listen): AUTH at once
swaks --server 127.0.0.1 --port "$wport" --local-interface 127.0.0.2 \
    --tlsc --tls-verify --tls-ca-path "$ca" --auth LOGIN --auth-user alice \
    --auth-password wonderland --from alice@c.test --to r@far.test \
    --h-Subject "swaks implicit" >"$tmp/swaks465.out" 2>&1
expect "implicit TLS: swaks --tlsc logs in and relays" "0 1" \
    "$? $(grep -c '^<~  250 2.0.0 Ok: queued' "$tmp/swaks465.out")"
out=$(talk "$sport" 'EHLO c.test\r\nMAIL FROM:<a@c.test>\r\nQUIT\r\n')
expect "submission: STARTTLS offered, AUTH not before it" "1 0" \
    "$(echo "$out" | grep -c '^250-STARTTLS$') $(echo "$out" | grep -c AUTH)"
expect "submission: MAIL before STARTTLS is 530 (encrypt, the default override)" 1 \
    "$(echo "$out" | grep -c '^530 5.7.0 Must issue a STARTTLS command first$')"

# after STARTTLS: AUTH offered, MAIL refused until AUTH
printf 'EHLO c.test\r\nMAIL FROM:<a@c.test>\r\nAUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\nMAIL FROM:<a@c.test>\r\nQUIT\r\n' >"$tmp/in"
(sleep 0.5; cat "$tmp/in"; sleep 1) | timeout 15 openssl s_client -starttls smtp \
    -connect "127.0.0.1:$sport" -CAfile "$ca" -quiet >"$tmp/s_client.out" 2>&1
tr -d '\r' <"$tmp/s_client.out" >"$tmp/s.out"
expect "submission in TLS: AUTH offered, MAIL before it 530, after it 250" \
    "1 1 1 1" \
    "$(grep -c '^250-AUTH PLAIN LOGIN$' "$tmp/s.out") $(grep -c '^530 5.7.0 Authentication required$' "$tmp/s.out") $(grep -c '^235 2.7.0' "$tmp/s.out") $(grep -c '^250 2.1.0 Ok$' "$tmp/s.out")"

swaks --server 127.0.0.1 --port "$sport" --local-interface 127.0.0.2 \
    --tls --tls-verify --tls-ca-path "$ca" --auth PLAIN --auth-user alice \
    --auth-password wonderland --from alice@c.test --to r@far.test \
    --h-Subject "swaks submission" >"$tmp/swaks.out" 2>&1
expect "swaks submits with STARTTLS and AUTH" "0 1" \
    "$? $(grep -c '^<~  250 2.0.0 Ok: queued' "$tmp/swaks.out")"
expect "smtplib submits with STARTTLS and AUTH LOGIN" "auth=235 send=queued" \
    "$($clients send "$sport" "$ca" LOGIN tls alice wonderland py-sub)"
expect "smtplib without AUTH: refused at MAIL" "auth=none send=530" \
    "$($clients send "$sport" "$ca" PLAIN tls - - py-sub-none)"

# -o overrides, braced as in master.cf, at a reload
write_conf "smtpd_tls_security_level=may smtpd_tls_auth_only=no { smtpd_relay_restrictions = permit_sasl_authenticated, reject }"
reload
out=$(talk "$sport" 'EHLO c.test\r\nAUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\nMAIL FROM:<a@c.test>\r\nRCPT TO:<r@far.test>\r\nQUIT\r\n')
expect "after the reload: AUTH in clear text and relaying on submission" \
    "1 1 1" \
    "$(echo "$out" | grep -c '^250-AUTH PLAIN LOGIN$') $(echo "$out" | grep -c '^235 ') $(echo "$out" | grep -c '^250 2.1.5 Ok$')"
out=$(talk "$port" 'EHLO c.test\r\nAUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\nQUIT\r\n')
expect "smtpd_listen still wants TLS for AUTH (the overrides are submission's)" 1 \
    "$(echo "$out" | grep -c '^504 5.5.4 Encryption required for requested authentication mechanism$')"
write_conf "smtpd_relay_restrictions=permit_sasl"
reload
expect "a bad override is refused at reload" 1 \
    "$(grep -c 'reload failed, the running configuration stays: submission listener: smtpd_relay_restrictions: unknown restriction "permit_sasl"' "$tmp/log")"
out=$(talk "$sport" 'EHLO c.test\r\nAUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\nQUIT\r\n')
expect "and the running one stays" 1 "$(echo "$out" | grep -c '^235 ')"
tap_done
