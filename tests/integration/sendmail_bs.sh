#!/bin/sh
# sendmail_bs.sh BUILD - "sendmail -bs": SMTP on standard input and output
# (Postfix's stand-alone SMTP mode), with swaks as the strict client
# (--pipe runs the command and speaks SMTP to it), and with input from a
# file: every accepted message is in the queue, each 250 names its queue
# id, the server's checks apply. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
sluice=$build/sluice
. tests/integration/lib/tap.sh

need swaks swaks --version

q=$tmp/q
conf=$tmp/sluice.conf
printf 'queue_directory = %s\nmyhostname = host.test\nmessage_size_limit = 2000\n' \
    "$q" >"$conf"
s() { "$sluice" -c "$conf" "$@"; }
s import >/dev/null

timeout 30 swaks --pipe "$sluice -c $conf sendmail -bs" \
    --from alice@a.test --to bob@b.test --body "through swaks" \
    >"$tmp/swaks.out" 2>&1
expect "swaks --pipe: the session succeeds" 0 $?
id=$(sed -n 's/.*250 2.0.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' "$tmp/swaks.out")
[ -n "$id" ] && ok "the 250 names the queue id" ||
    { not_ok "the 250 names the queue id"; sed 's/^/#   /' "$tmp/swaks.out"; }
s show --body "$id" >"$tmp/show.out" 2>&1
grep -q "^sender: <alice@a.test>" "$tmp/show.out" &&
    grep -q "^recipient: <bob@b.test> pending" "$tmp/show.out" &&
    grep -q "through swaks" "$tmp/show.out" &&
    ok "the message is in the queue, as sent" ||
    { not_ok "the message is in the queue, as sent"; sed 's/^/#   /' "$tmp/show.out"; }
grep -q "^<-  220 host.test ESMTP" "$tmp/swaks.out" &&
    grep -q "^<-  250-PIPELINING" "$tmp/swaks.out" &&
    ok "greeting and EHLO as sluiced's SMTP server" ||
    not_ok "greeting and EHLO as sluiced's SMTP server"

# Pipelined from a file, two transactions, a refusal between them, and
# no QUIT: the end of input ends the session.
{
    printf 'EHLO me.test\r\n'
    printf 'RCPT TO:<x@b.test>\r\n'
    printf 'MAIL FROM:<c@a.test>\r\nRCPT TO:<d@b.test>\r\nDATA\r\n'
    printf 'Subject: one\r\n\r\nfirst\r\n.\r\n'
    printf 'MAIL FROM:<e@a.test>\r\nRCPT TO:<f@b.test>\r\nDATA\r\n'
    printf 'Subject: two\r\n\r\nsecond\r\n.\r\n'
} >"$tmp/in"
timeout 30 "$sluice" -c "$conf" sendmail -bs <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
expect "input from a file, no QUIT: exit 0" 0 $?
expect "RCPT before MAIL: 503" 1 "$(grep -c '^503 5.5.1' "$tmp/out")"
expect "two messages queued" 2 "$(grep -c '^250 2.0.0 Ok: queued as ' "$tmp/out")"
expect "the queue holds the three" 3 "$(s queue --json | wc -l)"

# The server's limits: message_size_limit 2000.
{
    printf 'EHLO me.test\r\nMAIL FROM:<g@a.test>\r\nRCPT TO:<h@b.test>\r\nDATA\r\n'
    printf 'Subject: big\r\n\r\n'
    i=0
    while [ $i -lt 60 ]; do
        printf '%s\r\n' "0123456789012345678901234567890123456789012345678901234567890123456789"
        i=$((i + 1))
    done
    printf '.\r\nQUIT\r\n'
} >"$tmp/big"
timeout 30 "$sluice" -c "$conf" sendmail -bs <"$tmp/big" >"$tmp/out" 2>&1
expect "too big for message_size_limit: 552" 1 "$(grep -c '^552 5.3.4' "$tmp/out")"
expect "and the session ends with QUIT" 1 "$(grep -c '^221 ' "$tmp/out")"
expect "nothing more in the queue" 3 "$(s queue --json | wc -l)"

# The daemon's TLS certificate is not sendmail's: -bs offers no STARTTLS,
# and a certificate the caller cannot read does not stop it.
printf 'queue_directory = %s\nmyhostname = host.test\nsmtpd_tls_cert_file = %s/none.pem\n' \
    "$q" "$tmp" >"$tmp/tls.conf"
printf 'EHLO me.test\r\nQUIT\r\n' |
    timeout 30 "$sluice" -c "$tmp/tls.conf" sendmail -bs >"$tmp/out" 2>&1
expect "with smtpd_tls_cert_file set: the session works" 1 \
    "$(grep -c '^221 ' "$tmp/out")"
expect "and offers no STARTTLS" 0 "$(grep -c STARTTLS "$tmp/out")"

# Nor are its AUTH files: with AUTH on and a passwd-file and login map
# sendmail cannot read, -bs works and offers no AUTH.
printf 'queue_directory = %s\nmyhostname = host.test\nsmtpd_sasl_auth_enable = yes\nsmtpd_sasl_path = %s/no-passwd\nsmtpd_sender_login_maps = %s/no-maps\nsmtpd_sender_restrictions = reject_sender_login_mismatch\n' \
    "$q" "$tmp" "$tmp" >"$tmp/auth.conf"
printf 'EHLO me.test\r\nQUIT\r\n' |
    timeout 30 "$sluice" -c "$tmp/auth.conf" sendmail -bs >"$tmp/out" 2>&1
expect "with AUTH on: the session works" 1 "$(grep -c '^221 ' "$tmp/out")"
expect "and offers no AUTH" 0 "$(grep -c AUTH "$tmp/out")"

tap_done
