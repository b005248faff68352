#!/bin/sh
# smtp_tls_postfix.sh BUILD - the SMTP client's STARTTLS against Postfix's
# own smtpd with TLS (a strict peer: it speaks RFC 3207 as the reference
# does, and logs what it saw). At the level may sluiced delivers in TLS
# and logs "Trusted TLS connection established to ..."; Postfix logs
# "Anonymous TLS connection established from ..." (no client
# certificate) and receives the message. At verify with the certificate's
# name, the same; at verify against a server whose certificate names
# another host, nothing is sent and Postfix never sees a MAIL FROM. With
# smtpd_tls_security_level = encrypt on Postfix (it refuses MAIL before
# STARTTLS), sluiced at none is refused with Postfix's "530 5.7.0 Must
# issue a STARTTLS command first", which shows the peer enforces it.
# A Postfix that asks for a client certificate (smtpd_tls_ask_ccert) gets
# sluice's (smtp_tls_cert_file) and logs it as Trusted. Then Postfix's
# smtp client relays to sluice's SMTP server with STARTTLS.
# Needs root and Postfix (skips otherwise). Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

skip() {
    echo "# SKIP smtp_tls_postfix.sh: $1"
    ok "smtp_tls_postfix.sh # SKIP $1"
    tap_done
}
PATH=$PATH:/usr/sbin:/sbin
[ "$(id -u)" = 0 ] || skip "not root (a Postfix instance needs it)"
need postfix command -v postfix
need openssl command -v openssl
. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/postfix_lib.sh
chmod 711 "$tmp"

sh tests/integration/lib/tls_ca.sh "$tmp/ca" || { not_ok "certificates"; tap_done; }
# sluice's client certificate (extendedKeyUsage clientAuth)
printf 'extendedKeyUsage=clientAuth\n' >"$tmp/ca/client.ext"
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/ca/client.key" \
    -out "$tmp/ca/client.csr" -subj "/CN=sluice.test" 2>/dev/null &&
    openssl x509 -req -in "$tmp/ca/client.csr" -CA "$tmp/ca/ca.pem" \
        -CAkey "$tmp/ca/ca.key" -CAcreateserial -days 30 \
        -extfile "$tmp/ca/client.ext" -out "$tmp/ca/client.pem" 2>/dev/null ||
    { not_ok "the client certificate"; tap_done; }
chmod 755 "$tmp/ca"
chmod 644 "$tmp/ca"/*

# pf NAME LEVEL CERT [LINES]: a Postfix smtpd at smtpd_tls_security_level
# LEVEL with certificate CERT (of tls_ca.sh) and main.cf LINES, its port
# in $port_NAME.
pf() {
    eval "port_$1=\$(free_port)"
    eval "_p=\$port_$1"
    postfix_start "$tmp/$1" "127.0.0.1:$_p inet n - n - 10 smtpd" <<EOF ||
myhostname = postfix.test
mydestination = pf.test, may.test, verify.test, wrong.test, enc.test, ccert.test
local_transport = discard:delivered
smtpd_tls_cert_file = $tmp/ca/$3.pem
smtpd_tls_key_file = $tmp/ca/$3.key
smtpd_tls_security_level = $2
smtpd_tls_loglevel = 1
smtpd_helo_required = yes
strict_rfc821_envelopes = yes
${4:-}
EOF
        { not_ok "Postfix $1 starts"; sed 's/^/#   /' "$tmp/$1/start.out"; tap_done; }
    wait_for 10 listening "$_p" || { not_ok "Postfix $1 listens"; tap_done; }
}

pf may may server
pf wrong may wrongname
pf enc encrypt server
pf ccert may server "smtpd_tls_ask_ccert = yes
smtpd_tls_CAfile = $tmp/ca/ca.pem"

cat >"$tmp/transport" <<EOF
may.test relay:[127.0.0.1]:$port_may
verify.test verified:[127.0.0.1]:$port_may
wrong.test verified:[127.0.0.1]:$port_wrong
enc.test plain:[127.0.0.1]:$port_enc
ccert.test relay:[127.0.0.1]:$port_ccert
EOF
d=$tmp/sluice
sluiced_start "$d" "transports = smtp:smtp, relay:smtp, verified:smtp, plain:smtp
smtp_tls_CAfile = $tmp/ca/ca.pem
smtp_tls_cert_file = $tmp/ca/client.pem
smtp_tls_key_file = $tmp/ca/client.key
verified_tls_security_level = verify
verified_tls_verify_cert_match = localhost
plain_tls_security_level = none" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }

for r in a@may.test b@verify.test c@wrong.test e@enc.test f@ccert.test; do
    printf 'Subject: tls\n\nto %s\n' "$r" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test "$r"
done
# Each of the five has its outcome (a count of outcome lines would also
# count the notice that e@enc.test's bounce sends).
all_five() {
    for r in a@may.test b@verify.test c@wrong.test e@enc.test f@ccert.test; do
        grep -q "to=<$r>.*status=" "$d/log" || return 1
    done
}
wait_for 30 all_five || not_ok "five outcomes within 30 s"

outcome() {
    grep "to=<$1>" "$d/log" | tail -n 1
}
outcome a@may.test | grep -q 'status=sent (250 2.0.0 Ok: queued as' &&
    ok "may: Postfix accepts the message" || { not_ok "may: Postfix accepts the message"; outcome a@may.test | sed 's/^/#   /'; }
grep -q "Trusted TLS connection established to 127.0.0.1\\[127.0.0.1\\]:$port_may: TLSv1.3 with cipher" "$d/log" &&
    ok "may: sluiced logs a Trusted TLS connection" ||
    not_ok "may: sluiced logs a Trusted TLS connection"
grep -q "Anonymous TLS connection established from .*TLSv1.3 with cipher" "$tmp/may/maillog" &&
    ok "Postfix logs the TLS connection from sluiced" ||
    { not_ok "Postfix logs the TLS connection from sluiced"; tail -n 5 "$tmp/may/maillog" | sed 's/^/#   /'; }
outcome b@verify.test | grep -q 'status=sent' &&
    ok "verify: sent to the certificate that names localhost" ||
    { not_ok "verify: sent to the certificate that names localhost"; outcome b@verify.test | sed 's/^/#   /'; }
grep -q "Verified TLS connection established to 127.0.0.1\\[127.0.0.1\\]:$port_may" "$d/log" &&
    ok "verify: logged Verified" || not_ok "verify: logged Verified"
outcome c@wrong.test | grep -q 'dsn=4.7.5, status=deferred .*Server certificate not verified' &&
    ok "verify: a certificate for another name defers" ||
    { not_ok "verify: a certificate for another name defers"; outcome c@wrong.test | sed 's/^/#   /'; }
grep -q 'from=<s@sluice.test>' "$tmp/wrong/maillog" &&
    not_ok "verify: Postfix never got the MAIL FROM" ||
    ok "verify: Postfix never got the MAIL FROM"
outcome e@enc.test | grep -q 'Must issue a STARTTLS command first' &&
    ok "Postfix at encrypt refuses sluiced at none: 530 5.7.0" ||
    { not_ok "Postfix at encrypt refuses sluiced at none: 530 5.7.0"; outcome e@enc.test | sed 's/^/#   /'; }

# smtp_tls_cert_file: a server that asks for a client certificate gets
# ours, and Postfix verifies it against the test CA.
outcome f@ccert.test | grep -q 'status=sent' &&
    ok "client certificate: sent" || { not_ok "client certificate: sent"; outcome f@ccert.test | sed 's/^/#   /'; }
grep -q "Trusted TLS connection established from localhost\[127.0.0.1\]" "$tmp/ccert/maillog" &&
    ok "Postfix verified sluice's client certificate (Trusted, not Anonymous)" ||
    { not_ok "Postfix verified sluice's client certificate (Trusted, not Anonymous)"; grep TLS "$tmp/ccert/maillog" | sed 's/^/#   /'; }
kill "$sluiced_pid"
wait "$sluiced_pid"

# The other way round: Postfix's smtp client relays to sluice's SMTP
# server with STARTTLS (smtp_tls_security_level = encrypt, the test CA
# trusted), and each side logs the session as the reference does.
in_port=$(free_port)
d=$tmp/sluice_in
: >"$tmp/transport"
sluiced_start "$d" "smtpd_listen = 127.0.0.1:$in_port
smtpd_tls_cert_file = $tmp/ca/server.pem
smtpd_tls_key_file = $tmp/ca/server.key
default_transport = discard" ||
    { not_ok "sluiced starts with a TLS server"; sed 's/^/#   /' "$d/log"; tap_done; }
relay_port=$(free_port)
postfix_start "$tmp/relay" "127.0.0.1:$relay_port inet n - n - 10 smtpd" <<EOF ||
myhostname = relay.postfix.test
mydestination =
relayhost = [127.0.0.1]:$in_port
smtp_tls_security_level = encrypt
smtp_tls_CAfile = $tmp/ca/ca.pem
smtp_tls_loglevel = 1
EOF
    { not_ok "the relaying Postfix starts"; sed 's/^/#   /' "$tmp/relay/start.out"; tap_done; }
wait_for 10 listening "$relay_port" || { not_ok "the relaying Postfix listens"; tap_done; }
swaks --server 127.0.0.1 --port "$relay_port" --from a@client.test \
    --to z@far.test --helo client.test >"$tmp/swaks_relay.out" 2>&1 ||
    { not_ok "swaks hands a message to Postfix"; sed 's/^/#   /' "$tmp/swaks_relay.out"; }
wait_for 30 grep -q 'status=sent' "$tmp/relay/maillog"
grep -q "Trusted TLS connection established to 127.0.0.1\\[127.0.0.1\\]:$in_port: TLSv1.3" "$tmp/relay/maillog" &&
    ok "Postfix's smtp client: Trusted TLS connection established to sluice" ||
    { not_ok "Postfix's smtp client: Trusted TLS connection established to sluice"; grep -i 'tls\|status=' "$tmp/relay/maillog" | sed 's/^/#   /'; }
grep -q "relay=127.0.0.1\\[127.0.0.1\\]:$in_port, .*status=sent (250 " "$tmp/relay/maillog" &&
    ok "Postfix relayed the message to sluice in TLS" ||
    not_ok "Postfix relayed the message to sluice in TLS"
grep -q "Anonymous TLS connection established from .*TLSv1.3 with cipher" "$d/log" &&
    ok "sluice's SMTP server logs the session from Postfix" ||
    { not_ok "sluice's SMTP server logs the session from Postfix"; tail -n 5 "$d/log" | sed 's/^/#   /'; }
wait_for 10 grep -q 'to=<z@far.test>.*status=sent' "$d/log" &&
    ok "sluice took the message (and discarded it)" ||
    not_ok "sluice took the message (and discarded it)"
kill "$sluiced_pid"
wait "$sluiced_pid"
tap_done
