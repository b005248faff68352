#!/bin/sh
# smtp_auth_postfix.sh BUILD - the SMTP client's AUTH against Postfix's
# smtpd with Dovecot SASL as a smarthost: relaying only for
# authenticated clients (smtpd_relay_restrictions =
# permit_sasl_authenticated, reject), AUTH offered only after STARTTLS
# (smtpd_tls_auth_only = yes) except on one port without TLS. One
# Postfix instance, one smtpd service per case (master.cf -o overrides,
# each with its own syslog_name so that its log lines can be told
# apart), the password table keyed by next hop ([127.0.0.1]:PORT):
#
#   PLAIN, TLS, good credentials       sent; Postfix logs sasl_method=PLAIN
#   LOGIN, TLS, good credentials       sent; sasl_method=LOGIN (the
#                                      server offers LOGIN only)
#   PLAIN, TLS, wrong password         deferred 4.7.8 with Postfix's 535
#                                      text, a warning naming the table
#                                      key; never bounced
#   LOGIN, TLS, wrong password         the same
#   no credentials                     no AUTH; Postfix refuses to relay
#                                      (554 5.7.1 Relay access denied):
#                                      bounced, as its code says
#   no TLS (server without TLS, AUTH   deferred 4.7.0, "offered no
#   offered in plaintext), the         compatible authentication
#   default noplaintext                mechanisms"; Postfix counts no
#                                      AUTH command in its disconnect line
#   no TLS, noanonymous only           sent with PLAIN in plaintext
#   sluice at TLS level none, server   deferred 4.7.0 "offered no AUTH"
#   with smtpd_tls_auth_only           (Postfix hides AUTH before TLS)
#
# The password appears neither in sluiced's log nor in "sluice config".
# Needs root, Postfix and Dovecot (skips otherwise). Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

skip() {
    echo "# SKIP smtp_auth_postfix.sh: $1"
    ok "smtp_auth_postfix.sh # SKIP $1"
    tap_done
}
PATH=$PATH:/usr/sbin:/sbin
[ "$(id -u)" = 0 ] || skip "not root (Postfix and Dovecot need it)"
need postfix command -v postfix
need dovecot command -v dovecot
need openssl command -v openssl
. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/postfix_lib.sh
. tests/integration/lib/dovecot_auth.sh
chmod 711 "$tmp"

sh tests/integration/lib/tls_ca.sh "$tmp/ca" || { not_ok "certificates"; tap_done; }
chmod 755 "$tmp/ca"
chmod 644 "$tmp/ca"/*

# Dovecot's users: one, with a password that sluice's table must carry
# as it is (a space and punctuation; passwd-file forbids only ':').
printf 'relay@auth.test:{PLAIN}S3cret pass!\n' >"$tmp/users"
chmod 644 "$tmp/users"
dovecot_auth_start "$tmp/dovecot" "$tmp/users" ||
    { not_ok "Dovecot's auth service starts"; tap_done; }

for s in tls login bad badlogin nocred plain plainok none; do
    eval "port_$s=\$(free_port)"
done
# smtpd services: NAME PORT [-o overrides]
svc() {
    _n=$1 _p=$2
    shift 2
    echo "127.0.0.1:$_p inet n - n - 10 smtpd -o syslog_name=pf-$_n $*"
}
lines="$(svc tls $port_tls)
$(svc login $port_login -o smtpd_sasl_mechanism_filter=login)
$(svc bad $port_bad)
$(svc badlogin $port_badlogin -o smtpd_sasl_mechanism_filter=login)
$(svc nocred $port_nocred)
$(svc plain $port_plain -o smtpd_tls_security_level=none -o smtpd_tls_auth_only=no)
$(svc plainok $port_plainok -o smtpd_tls_security_level=none -o smtpd_tls_auth_only=no)
$(svc none $port_none)"
postfix_start "$tmp/pf" "$lines" <<EOF ||
myhostname = smarthost.test
mydestination =
relay_domains =
default_transport = discard:relayed
relay_transport = discard:relayed
smtpd_tls_cert_file = $tmp/ca/server.pem
smtpd_tls_key_file = $tmp/ca/server.key
smtpd_tls_security_level = may
smtpd_tls_auth_only = yes
smtpd_sasl_auth_enable = yes
smtpd_sasl_type = dovecot
smtpd_sasl_path = $dovecot_auth_socket
smtpd_relay_restrictions = permit_sasl_authenticated, reject
smtpd_recipient_restrictions =
mynetworks =
EOF
    { not_ok "Postfix starts"; sed 's/^/#   /' "$tmp/pf/start.out"; tap_done; }
wait_for 10 listening "$port_none" || { not_ok "Postfix listens"; tap_done; }

cat >"$tmp/transport" <<EOF
tls.test relay:[127.0.0.1]:$port_tls
login.test relay:[127.0.0.1]:$port_login
bad.test relay:[127.0.0.1]:$port_bad
badlogin.test relay:[127.0.0.1]:$port_badlogin
nocred.test relay:[127.0.0.1]:$port_nocred
plain.test relay:[127.0.0.1]:$port_plain
plainok.test plainok:[127.0.0.1]:$port_plainok
none.test none:[127.0.0.1]:$port_none
EOF
good='relay@auth.test:S3cret pass!'
cat >"$tmp/sasl_passwd" <<EOF
# next hop               user:password
[127.0.0.1]:$port_tls     $good
[127.0.0.1]:$port_login   $good
[127.0.0.1]:$port_bad     relay@auth.test:Wr0ng pass
[127.0.0.1]:$port_badlogin relay@auth.test:Wr0ng pass
[127.0.0.1]:$port_plain   $good
[127.0.0.1]:$port_plainok $good
[127.0.0.1]:$port_none    $good
EOF
d=$tmp/sluice
sluiced_start "$d" "transports = smtp:smtp, relay:smtp, plainok:smtp, none:smtp
smtp_tls_CAfile = $tmp/ca/ca.pem
smtp_sasl_auth_enable = yes
smtp_sasl_password_maps = hash:$tmp/sasl_passwd
plainok_sasl_security_options = noanonymous
plainok_tls_security_level = none
none_tls_security_level = none" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }

rcpts="a@tls.test b@login.test c@bad.test d@badlogin.test e@nocred.test
f@plain.test g@plainok.test h@none.test"
for r in $rcpts; do
    printf 'Subject: auth\n\nto %s\n' "$r" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test "$r"
done
for r in $rcpts; do
    wait_for 30 grep -q "to=<$r>.*status=" "$d/log" ||
        { not_ok "an outcome for $r within 30 s"; break; }
done

outcome() {
    grep "to=<$1>" "$d/log" | head -n 1
}
# check NAME RCPT PATTERN: the recipient's first outcome matches
check() {
    outcome "$2" | grep -q -- "$3" && ok "$1" ||
        { not_ok "$1"; grep "$2" "$d/log" | sed 's/^/#   /'; }
}
# pflog SERVICE PATTERN: that smtpd service logged it
pflog() {
    grep "pf-$1/smtpd" "$tmp/pf/maillog" | grep -q -- "$2"
}

check "PLAIN over TLS, good credentials: sent" a@tls.test 'status=sent (250 '
pflog tls 'sasl_method=PLAIN, sasl_username=relay@auth.test' &&
    ok "Postfix logs sasl_method=PLAIN for sluice" ||
    { not_ok "Postfix logs sasl_method=PLAIN for sluice"; grep pf-tls "$tmp/pf/maillog" | sed 's/^/#   /'; }
check "LOGIN over TLS, good credentials: sent" b@login.test 'status=sent (250 '
pflog login 'sasl_method=LOGIN, sasl_username=relay@auth.test' &&
    ok "Postfix logs sasl_method=LOGIN (it offered LOGIN only)" ||
    { not_ok "Postfix logs sasl_method=LOGIN"; grep pf-login "$tmp/pf/maillog" | sed 's/^/#   /'; }

check "PLAIN, wrong password: deferred 4.7.8 with Postfix's 535 text" c@bad.test \
    "dsn=4.7.8, status=deferred (SASL authentication failed; server 127.0.0.1\\[127.0.0.1\\] said: 535 5.7.8 Error: authentication failed"
check "LOGIN, wrong password: deferred 4.7.8 with Postfix's 535 text" d@badlogin.test \
    "dsn=4.7.8, status=deferred (SASL authentication failed; server 127.0.0.1\\[127.0.0.1\\] said: 535 5.7.8"
grep -q "warning: .*: SASL authentication failed; server 127.0.0.1\\[127.0.0.1\\] said: 535 5.7.8 .*(credentials of smtp_sasl_password_maps entry \\[127.0.0.1\\]:$port_bad)" "$d/log" &&
    ok "a warning names the table's entry" ||
    { not_ok "a warning names the table's entry"; grep warning "$d/log" | sed 's/^/#   /'; }
grep -q 'to=<[cd]@bad.*status=bounced' "$d/log" &&
    not_ok "a wrong password never bounces" || ok "a wrong password never bounces"
pflog bad 'authentication failed' && ok "Postfix saw the failed login" ||
    not_ok "Postfix saw the failed login"

check "no credentials: no AUTH, Postfix refuses to relay (bounced, 554 5.7.1)" \
    e@nocred.test 'dsn=5.7.1, status=bounced (host 127.0.0.1\[127.0.0.1\] said: 554 5.7.1 <e@nocred.test>: Recipient address rejected: Access denied (in reply to RCPT TO command))'
pflog nocred 'sasl_method' && not_ok "no credentials: no AUTH sent" ||
    ok "no credentials: no AUTH sent"

check "no TLS, noplaintext: deferred 4.7.0 without AUTH" f@plain.test \
    'dsn=4.7.0, status=deferred (SASL authentication failed: server 127.0.0.1\[127.0.0.1\] offered no compatible authentication mechanisms for this type of connection security)'
pflog plain 'disconnect from .* ehlo=1 commands=1' &&
    ! pflog plain 'auth=' &&
    ok "Postfix counts no AUTH command from sluice without TLS" ||
    { not_ok "Postfix counts no AUTH command from sluice without TLS"; grep pf-plain "$tmp/pf/maillog" | sed 's/^/#   /'; }
check "no TLS, noanonymous only: sent with PLAIN in plaintext" g@plainok.test 'status=sent (250 '
pflog plainok 'sasl_method=PLAIN' && ok "Postfix logs the plaintext PLAIN" ||
    not_ok "Postfix logs the plaintext PLAIN"
check "TLS level none, smtpd_tls_auth_only: deferred, no AUTH offered" h@none.test \
    'dsn=4.7.0, status=deferred (SASL authentication failed: server 127.0.0.1\[127.0.0.1\] offered no AUTH)'

grep -q -e 'S3cret' -e 'Wr0ng' "$d/log" && not_ok "no password in sluiced's log" ||
    ok "no password in sluiced's log"
"$build/sluice" -c "$d/sluice.conf" config >"$tmp/config.out" 2>&1
grep -q "smtp_sasl_password_maps = hash:$tmp/sasl_passwd" "$tmp/config.out" &&
    ! grep -q -e 'S3cret' -e 'Wr0ng' "$tmp/config.out" &&
    ok "sluice config shows the table's path, not its passwords" ||
    { not_ok "sluice config shows the table's path, not its passwords"; grep sasl "$tmp/config.out" | sed 's/^/#   /'; }
kill "$sluiced_pid"
wait "$sluiced_pid"

# What the configuration check refuses: an option word Postfix does not
# have (globally or per transport), a table line that is not
# user:password (named by file, line and key, never the value), a
# missing table.
# refused CONF_LINES PATTERN NAME
refused() {
    printf 'queue_directory = %s/q2\ntransports = smtp:smtp, relay:smtp\n%s\n' \
        "$tmp" "$1" >"$tmp/refused.cf"
    "$build/sluice" -c "$tmp/refused.cf" config >"$tmp/refused.out" 2>&1 &&
        { not_ok "$3 (accepted)"; return; }
    grep -q -- "$2" "$tmp/refused.out" && ! grep -q 'S3cret' "$tmp/refused.out" &&
        ok "$3" || { not_ok "$3"; sed 's/^/#   /' "$tmp/refused.out"; }
}
refused 'smtp_sasl_security_options = noplaintext, bogus' \
    'smtp_sasl_security_options: unknown SASL security option "bogus"' \
    "an unknown security option is refused"
refused 'relay_sasl_tls_security_options = forward_secrecy' \
    'relay_sasl_tls_security_options: unknown SASL security option "forward_secrecy"' \
    "an unknown security option of a transport is refused"
printf '[relay.test]:587 S3cret\n' >"$tmp/bad_passwd"
refused "smtp_sasl_password_maps = $tmp/bad_passwd" \
    "$tmp/bad_passwd, line 1: the value for \"\\[relay.test\\]:587\" is not user:password" \
    "a table line without user:password is refused, its value unsaid"
refused "smtp_sasl_password_maps = $tmp/no_such_passwd" "$tmp/no_such_passwd" \
    "a missing password table is refused"
tap_done
