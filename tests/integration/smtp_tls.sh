#!/bin/sh
# smtp_tls.sh BUILD - the SMTP client's TLS security levels (TLS_README,
# "Client TLS security levels") as a table: every level against receivers
# that offer STARTTLS with a good certificate, do not offer it, show a
# certificate from an untrusted CA, show one for another name, or break
# the handshake. One sluiced delivers one message per (level, receiver)
# through a transport per level; the log and what each receiver stored
# say what happened. Then a handshake that never ends, smtp_tls_policy_maps (a per-next-hop policy in
# the reference's syntax), a cached TLS connection reused, a session
# resumed, and Postfix's own smtpd with TLS as the strict peer. Output is
# TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need openssl command -v openssl
. tests/integration/lib/daemon_lib.sh

sh tests/integration/lib/tls_ca.sh "$tmp/ca" || { not_ok "certificates"; tap_done; }

# receiver NAME MODE CERT: lib/tls_receiver.py, its port in $port_NAME.
receiver() {
    /usr/bin/python3 tests/integration/lib/tls_receiver.py "$tmp/$1" "$2" \
        "$tmp/ca/$3.pem" "$tmp/ca/$3.key" 2>"$tmp/$1.err" &
    pids="$pids $!"
    wait_for 10 test -f "$tmp/$1/port" || { not_ok "receiver $1 starts"; tap_done; }
    eval "port_$1=\$(cat \"\$tmp/\$1/port\")"
}

receiver good good server
receiver none none server
receiver untrusted good untrusted
receiver wrongname good wrongname
receiver broken broken server

levels="none may encrypt dane dane-only verify secure"
peers="good none untrusted wrongname broken"

# The expected outcome of each case: "tls" (sent in TLS), "plain" (sent
# in plaintext), or the dsn of the deferral.
want() {
    case "$1:$2" in
    none:*) echo plain ;;
    may:none | dane:none | may:broken | dane:broken) echo plain ;;
    may:* | dane:*) echo tls ;;
    encrypt:none) echo 4.7.4 ;;
    encrypt:broken) echo 4.7.5 ;;
    encrypt:*) echo tls ;;
    dane-only:*) echo 4.7.5 ;;
    verify:good | secure:good) echo tls ;;
    *:none) echo 4.7.4 ;;
    *) echo 4.7.5 ;;
    esac
}

transports="smtp:smtp, relay:smtp, lmtp:lmtp, discard:discard, error:error"
extra=
: >"$tmp/transport"
for l in $levels; do
    t=t_$(echo "$l" | tr -d -)
    transports="$transports, $t:smtp"
    extra="$extra
${t}_tls_security_level = $l"
    for p in $peers; do
        eval "port=\$port_$p"
        printf '%s-%s.test %s:[127.0.0.1]:%s\n' "$l" "$p" "$t" "$port" \
            >>"$tmp/transport"
    done
done

d=$tmp/levels
sluiced_start "$d" "transports = $transports
smtp_tls_CAfile = $tmp/ca/ca.pem
smtp_connection_cache_on_demand = no
t_verify_tls_verify_cert_match = localhost
t_secure_tls_secure_cert_match = localhost
$extra" || { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }

n=0
for l in $levels; do
    for p in $peers; do
        printf 'Subject: %s %s\n\nlevel %s, peer %s\n' "$l" "$p" "$l" "$p" |
            "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test \
                "r@$l-$p.test"
        n=$((n + 1))
    done
done
wait_for 60 sh -c "[ \$(grep -c 'status=\\(sent\\|deferred\\)' $d/log) -ge $n ]" ||
    not_ok "every case has an outcome within 60 s"

# stored DIR RCPT: "tls" or "plain" when DIR holds a message for RCPT.
stored() {
    f=$(grep -l "^to: $2\$" "$tmp/$1"/*.eml 2>/dev/null | head -n 1)
    [ -n "$f" ] || { echo none; return; }
    sed -n 's/^tls: yes$/tls/p; s/^tls: no$/plain/p' "$f" | head -n 1
}

for l in $levels; do
    for p in $peers; do
        rcpt=r@$l-$p.test
        w=$(want "$l" "$p")
        line=$(grep "to=<$rcpt>" "$d/log" | tail -n 1)
        case $w in
        tls | plain)
            got=$(stored "$p" "$rcpt")
            if [ "$got" = "$w" ] && echo "$line" | grep -q 'status=sent'; then
                ok "$l x $p: sent in $w"
            else
                not_ok "$l x $p: sent in $w (stored: $got)"
                echo "#   $line"
            fi
            ;;
        *)
            got=$(stored "$p" "$rcpt")
            if [ "$got" = none ] &&
                echo "$line" | grep -q "dsn=$w, status=deferred"; then
                ok "$l x $p: deferred $w, nothing sent"
            else
                not_ok "$l x $p: deferred $w, nothing sent (stored: $got)"
                echo "#   $line"
            fi
            ;;
        esac
    done
done

# The reasons, in the reference's words.
reason() {
    grep "to=<r@$1-$2.test>" "$d/log" | grep -q "$3" &&
        ok "$1 x $2: \"$3\"" || not_ok "$1 x $2: \"$3\""
}
reason encrypt none "TLS is required, but was not offered by host"
reason verify untrusted "Server certificate not trusted"
reason verify wrongname "Server certificate not verified"
reason secure wrongname "Server certificate not verified"
reason encrypt broken "Cannot start TLS: handshake failure"
reason dane-only good "has no DNSSEC-validated TLSA records"

# The log lines of the handshakes, in the reference's words.
loglines() {
    grep -q "$1 TLS connection established to 127.0.0.1\\[127.0.0.1\\]:$2: TLSv1.[23] with cipher" "$d/log" &&
        ok "logged: $1 TLS connection established ($3)" ||
        not_ok "logged: $1 TLS connection established ($3)"
}
loglines Verified "$port_good" "verify, good certificate"
loglines Trusted "$port_good" "may, good certificate"
loglines Untrusted "$port_untrusted" "may, untrusted CA"
# The delivery lines say the TLS: protocol, cipher and worth.
grep 'to=<r@verify-good.test>' "$d/log" | grep -q 'status=sent (.*) tls=TLSv1.3:TLS_[A-Z0-9_]*:Verified$' &&
    ok "verify x good: the delivery line has tls=TLSv1.3:CIPHER:Verified" ||
    not_ok "verify x good: the delivery line has tls=TLSv1.3:CIPHER:Verified"
grep 'to=<r@may-untrusted.test>' "$d/log" | grep -q ' tls=TLSv1.3:.*:Untrusted$' &&
    ok "may x untrusted: tls=...:Untrusted" || not_ok "may x untrusted: tls=...:Untrusted"
grep 'to=<r@may-none.test>' "$d/log" | grep -q ' tls=' &&
    not_ok "may x none: no tls= in plaintext" || ok "may x none: no tls= in plaintext"
# may x broken: a handshake that fails is retried once in plaintext
expect "may x broken: two connections, the second in plaintext" "plain" \
    "$(sort -u "$tmp/broken/sessions" | tr '\n' ' ' | sed 's/ $//')"
# SNI: the server's name (hostname) unless an address literal
expect "no SNI for an address literal" 0 \
    "$(grep -h '^sni: .' "$tmp"/*/0*.eml | wc -l)"
kill "$sluiced_pid"
wait "$sluiced_pid"

# smtp_tls_policy_maps: per next hop, overriding the transport's level.
cat >"$tmp/policy" <<EOF
# the reference's syntax: a level, then attributes
[127.0.0.1]:$port_good      secure match=localhost:.localhost protocols=>=TLSv1.2
[127.0.0.1]:$port_wrongname secure match=localhost ciphers=high
EOF
: >"$tmp/transport"
for p in good wrongname; do
    eval "port=\$port_$p"
    printf 'policy-%s.test relay:[127.0.0.1]:%s\n' "$p" "$port" >>"$tmp/transport"
done
d=$tmp/policy_run
sluiced_start "$d" "smtp_tls_security_level = none
smtp_tls_CAfile = $tmp/ca/ca.pem
smtp_tls_policy_maps = texthash:$tmp/policy
smtp_connection_cache_destinations = [127.0.0.1]:$port_good" ||
    { not_ok "sluiced starts with a policy table"; sed 's/^/#   /' "$d/log"; tap_done; }
for i in 1 2; do
    printf 'Subject: policy %s\n\npolicy\n' "$i" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test \
            r$i@policy-good.test r$i@policy-wrongname.test
    wait_for 30 sh -c "[ \$(grep -c 'status=\\(sent\\|deferred\\)' $d/log) -ge $((2 * i)) ]"
done
expect "policy secure: both messages to the good server sent in TLS" "tls tls" \
    "$(echo $(stored good r1@policy-good.test) $(stored good r2@policy-good.test))"
grep 'to=<r1@policy-wrongname.test>' "$d/log" | grep -q 'dsn=4.7.5, status=deferred.*Server certificate not verified' &&
    ok "policy secure: the wrong name is deferred, not verified" ||
    not_ok "policy secure: the wrong name is deferred, not verified"
expect "the second message went on the cached TLS connection" 1 \
    "$(grep -c "Verified TLS connection established to 127.0.0.1\\[127.0.0.1\\]:$port_good" "$d/log")"
grep 'to=<r2@policy-good.test>' "$d/log" | grep -q 'conn_use=2' &&
    ok "logged with conn_use=2" || not_ok "logged with conn_use=2"
kill "$sluiced_pid"
wait "$sluiced_pid"

# A bad policy table stops sluiced with the file and the line.
printf '[127.0.0.1]:25 fingerprint match=AB:CD\n' >"$tmp/badpolicy"
"$build/sluice" -c /dev/null config >/dev/null 2>&1
out=$(printf 'smtp_tls_policy_maps = %s\nqueue_directory = %s\n' \
    "$tmp/badpolicy" "$tmp/badq" >"$tmp/bad.conf"
    "$build/sluiced" -f -c "$tmp/bad.conf" 2>&1)
echo "$out" | grep -q "$tmp/badpolicy, line 1: TLS security level fingerprint is not supported" &&
    ok "a bad policy table is refused with its file and line" ||
    { not_ok "a bad policy table is refused with its file and line"; echo "#   $out"; }

# A server that answers STARTTLS and then never finishes the handshake
# (hostile or broken): the handshake has smtp_helo_timeout. At encrypt
# the delivery is deferred with the reason, at may it is retried in
# plaintext on a new connection, and nothing else waits for it.
receiver stall stall server
: >"$tmp/transport"
printf 'stall-enc.test t_encrypt:[127.0.0.1]:%s\nstall-may.test t_may:[127.0.0.1]:%s\n' \
    "$port_stall" "$port_stall" >"$tmp/transport"
d=$tmp/stall_run
sluiced_start "$d" "transports = smtp:smtp, relay:smtp, t_encrypt:smtp, t_may:smtp
t_encrypt_tls_security_level = encrypt
t_may_tls_security_level = may
smtp_helo_timeout = 2s" ||
    { not_ok "sluiced starts for the stalled handshake"; tap_done; }
for r in r@stall-enc.test r@stall-may.test; do
    printf 'Subject: stall\n\nstall\n' |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test "$r"
done
wait_for 30 sh -c "[ \$(grep -c 'status=\\(sent\\|deferred\\)' $d/log) -ge 2 ]" ||
    not_ok "the stalled handshakes end within 30 s"
grep 'to=<r@stall-enc.test>' "$d/log" | grep -q 'dsn=4.7.5, status=deferred (Cannot start TLS: handshake failure with host 127.0.0.1\[127.0.0.1\]: timed out)' &&
    ok "encrypt x stalled handshake: deferred, timed out" ||
    { not_ok "encrypt x stalled handshake: deferred, timed out"; grep 'stall-enc' "$d/log" | sed 's/^/#   /'; }
expect "may x stalled handshake: sent in plaintext on a new connection" plain \
    "$(stored stall r@stall-may.test)"
kill "$sluiced_pid"
wait "$sluiced_pid"

# Session resumption: connections not cached, the second session resumes;
# then ten deliveries at once all resume (each resumes its own copy of
# the session: OpenSSL 3 lets a TLS 1.3 session be resumed once).
: >"$tmp/transport"
printf 'resume.test relay:[127.0.0.1]:%s\n' "$port_good" >"$tmp/transport"
rm -f "$tmp/good"/*.eml
d=$tmp/resume
sluiced_start "$d" "smtp_tls_CAfile = $tmp/ca/ca.pem
smtp_connection_cache_on_demand = no
initial_destination_concurrency = 10" ||
    { not_ok "sluiced starts for resumption"; tap_done; }
for i in 1 2; do
    printf 'Subject: resume %s\n\nresume\n' "$i" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test r$i@resume.test
    wait_for 20 sh -c "grep -q 'to=<r$i@resume.test>.*status=sent' $d/log"
done
resumed() {
    sed -n 's/^resumed: //p' "$(grep -l "^to: $1\$" "$tmp/good"/*.eml)"
}
expect "the first session is new, the second resumed" "no yes" \
    "$(echo $(resumed r1@resume.test) $(resumed r2@resume.test))"
# ten more in quick succession, up to ten deliveries at once
for i in 3 4 5 6 7 8 9 10 11 12; do
    printf 'Subject: resume %s\n\nresume\n' "$i" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test \
            r$i@resume.test
done
wait_for 20 sh -c "[ \$(grep -c 'to=<r[0-9]*@resume.test>.*status=sent' $d/log) -ge 12 ]"
all=
for i in 3 4 5 6 7 8 9 10 11 12; do all="$all $(resumed r$i@resume.test)"; done
expect "ten deliveries at once each resume a session" \
    " yes yes yes yes yes yes yes yes yes yes" "$all"
# A success notice (NOTIFY=SUCCESS, the receiver offers no DSN) says the
# delivery went over TLS: X-Sluice-TLS in the delivery-status part and a
# line in the text (issue 17: "TLS details in ... DSNs").
printf 'notify.test relay:[127.0.0.1]:%s\n' "$port_good" >>"$tmp/transport"
kill -HUP "$sluiced_pid"
wait_for 10 grep -q "reloaded" "$d/log"
printf 'Subject: notify\n\nnotify\n' |
    "$build/sluice" -c "$d/sluice.conf" sendmail -N success -f s@notify.test \
        r13@resume.test
wait_for 20 sh -c "grep -l '^to: s@notify.test\$' $tmp/good/*.eml >/dev/null 2>&1"
notice=$(grep -l '^to: s@notify.test$' "$tmp/good"/*.eml 2>/dev/null | head -n 1)
if [ -n "$notice" ] &&
    grep -q '^X-Sluice-TLS: TLSv1.3:TLS_[A-Z0-9_]*:Trusted' "$notice" &&
    grep -q '^    (over TLSv1.3, TLS_[A-Z0-9_]*, certificate Trusted)' "$notice"; then
    ok "the success notice tells the delivery's TLS"
else
    not_ok "the success notice tells the delivery's TLS"
    [ -n "$notice" ] && grep -i 'tls\|Final-Recipient\|Action' "$notice" | tr -d '\r' | sed 's/^/#   /'
fi
kill "$sluiced_pid"
wait "$sluiced_pid"

tap_done
