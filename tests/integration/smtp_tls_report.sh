#!/bin/sh
# smtp_tls_report.sh BUILD - SMTP TLS reporting (RFC 8460) end to end.
# unbound on loopback serves the zones (dnssec_lib.sh), lib/sts_peer.py
# the MTA-STS policies on 127.0.0.1:443 and takes the https: reports
# POSTed to https://rpt.reports.test/tlsrpt (its address from unbound,
# through sluiced's resolver), lib/tls_receiver.py plays the MX
# hosts and the mailbox of the mailto: reports (rpt@reports.test):
#
#   sts.test     MTA-STS enforce, the MX's certificate names it: a
#                successful session; rua=mailto:...,https://...
#   stsbad.test  MTA-STS enforce, a certificate of the test CA for another
#                name: a failure, certificate-host-mismatch
#   dane.test    DNSSEC-signed, a DANE-EE TLSA record that matches: a
#                successful session of policy-type tlsa
#   wrong.test   signed, a TLSA record of another key: a failure,
#                tlsa-invalid
#   nostarttls.test  MTA-STS enforce, the MX offers no STARTTLS: a
#                failure, starttls-not-supported
#   testing.test MTA-STS testing, a certificate for another name: sent,
#                and a failure, certificate-host-mismatch (what enforce
#                would have refused)
#   nofetch.test a _mta-sts TXT record, but no policy to fetch (404):
#                sent without MTA-STS, and a failure of the policy,
#                sts-policy-fetch-error; the session, made without a
#                policy, a success of no-policy-found
#   nopolicy.test  no MTA-STS, no DANE, only _smtp._tls: a TLS session at
#                may, a success of policy-type no-policy-found
#   expired.test only _smtp._tls; verify (a transport's level), the MX's
#                certificate of the test CA has expired: deferred, the
#                reason says so, and a no-policy-found failure,
#                certificate-expired
#   relayed.test only _smtp._tls; the transport table sends its mail to
#                nopolicy.test's MX host (not its own MX): sent over TLS,
#                counted for neither domain (nopolicy.test's count
#                stays 1), no report
#   moved.test   MTA-STS enforce, under Finch's delivery scheduler: its
#                primary MX (127.0.0.2) offers no STARTTLS, so the job
#                goes to the secondary (the right one): sent, and the
#                attempt it left is a failure, starttls-not-supported,
#                and logged as the reference logs a host it skips
#
# Failure details of the client's failures carry sending-mta-ip.
#
# Section 4.1: reports cover "a 24-hour period"; here
# smtp_tls_report_period is 20 s. The mail goes at the start of a period,
# sluiced is stopped and started again before the period ends (the
# counts must come back from the spool), and the reports that arrive are
# checked by lib/tlsrpt_check.py: the message's MIME structure (section
# 5.3), the gzip'd JSON and its counts (section 4), the POST's
# Content-Type and that it carries the same JSON (section 5.4). Needs
# root (port 443). Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

skip() {
    echo "# SKIP smtp_tls_report.sh: $1"
    ok "smtp_tls_report.sh # SKIP $1"
    tap_done
}
[ "$(id -u)" = 0 ] || skip "not root (the policy server listens on port 443)"
need unbound command -v unbound
need ldns-signzone command -v ldns-signzone
need openssl command -v openssl
. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/dnssec_lib.sh
. tests/integration/lib/tls_peers_lib.sh
listening 443 && skip "something listens on 127.0.0.1:443 already"

ca=$tmp/ca
sh tests/integration/lib/tls_ca.sh "$ca" || { not_ok "certificates"; tap_done; }
tls_cert policy "DNS:mta-sts.sts.test,DNS:mta-sts.stsbad.test,DNS:mta-sts.nostarttls.test,DNS:mta-sts.testing.test,DNS:mta-sts.nofetch.test,DNS:mta-sts.moved.test,DNS:rpt.reports.test" &&
    tls_cert mx "DNS:mx.sts.test,DNS:mx.reports.test,DNS:mx.moved.test" &&
    tls_cert elsewhere "DNS:mx.elsewhere.test" ||
    { not_ok "the test's certificates"; tap_done; }
cat "$ca/server.pem" "$ca/ca.pem" >"$ca/server-chain.pem"
cp "$ca/server.key" "$ca/server-chain.key"

www=$tmp/www
mkdir -p "$www/www"
cp "$ca/policy.pem" "$www/server.pem"
cp "$ca/policy.key" "$www/server.key"
for z in sts stsbad nostarttls testing; do
    mode=enforce
    [ "$z" = testing ] && mode=testing
    printf '200 text/plain\nversion: STSv1\r\nmode: %s\r\nmx: mx.%s.test\r\nmax_age: 86400\r\n' \
        "$mode" "$z" >"$www/www/mta-sts.$z.test"
done
printf '200 text/plain\nversion: STSv1\r\nmode: enforce\r\nmx: *.moved.test\r\nmax_age: 86400\r\n' \
    >"$www/www/mta-sts.moved.test"
/usr/bin/python3 tests/integration/lib/sts_peer.py "$www" 443 2>"$tmp/www.err" &
pids="$pids $!"
wait_for 10 test -f "$www/port" || { not_ok "the policy server starts"; cat "$tmp/www.err"; tap_done; }

tls_receiver right mx
tls_receiver wrong elsewhere
tls_receiver dane server-chain
tls_receiver rpt mx
tls_receiver plain mx none
tls_receiver expired expired
tls_receiver movedplain mx none 127.0.0.2 "$port_right"

rua_mail="mailto:rpt@reports.test"
rua_both="$rua_mail,https://rpt.reports.test/tlsrpt"
zone() {
    dnssec_zone "$1" "$2"
    dnssec_record "$1" "@ 300 IN MX 10 mx"
    dnssec_record "$1" "mx 300 IN A 127.0.0.1"
    [ -z "$3" ] || dnssec_record "$1" "_smtp._tls 300 IN TXT \"v=TLSRPTv1; rua=$3\""
}
zone sts.test insecure "$rua_both"
zone stsbad.test insecure "$rua_mail"
zone nostarttls.test insecure "$rua_mail"
zone testing.test insecure "$rua_mail"
zone nofetch.test insecure "$rua_mail"
zone nopolicy.test insecure "$rua_mail"
zone expired.test insecure "$rua_mail"
zone relayed.test insecure "$rua_mail"
zone moved.test insecure "$rua_mail"
dnssec_record moved.test "@ 300 IN MX 5 mx1"
dnssec_record moved.test "mx1 300 IN A 127.0.0.2"
for z in sts stsbad nostarttls testing nofetch moved; do
    dnssec_record "$z.test" "mta-sts 300 IN A 127.0.0.1"
    dnssec_record "$z.test" "_mta-sts 300 IN TXT \"v=STSv1; id=20261127\""
done
zone dane.test secure "$rua_mail"
dnssec_record dane.test "_$port_dane._tcp.mx 300 IN TLSA $(dnssec_tlsa_rdata "$ca/server.pem")"
zone wrong.test secure "$rua_mail"
dnssec_record wrong.test "_$port_dane._tcp.mx 300 IN TLSA $(dnssec_tlsa_rdata "$ca/other.pem")"
zone reports.test insecure ""
dnssec_record reports.test "rpt 300 IN A 127.0.0.1"
dnssec_start || { not_ok "unbound starts"; sed 's/^/#   /' "$dnssec_dir/why"; tap_done; }

cat >"$tmp/transport" <<EOF
sts.test relay:sts.test:$port_right
stsbad.test relay:stsbad.test:$port_wrong
dane.test dane:dane.test:$port_dane
wrong.test dane:wrong.test:$port_dane
reports.test relay:reports.test:$port_rpt
nostarttls.test relay:nostarttls.test:$port_plain
testing.test relay:testing.test:$port_wrong
nofetch.test relay:nofetch.test:$port_right
nopolicy.test relay:nopolicy.test:$port_right
expired.test verify:expired.test:$port_expired
relayed.test relay:nopolicy.test:$port_right
moved.test spread:moved.test:$port_right
EOF
d=$tmp/sluice
conf="transports = smtp:smtp, relay:smtp, dane:smtp, verify:smtp, spread:smtp
spread_delivery_scheduler = finch
dns_servers = $dnssec_servers
dane_tls_security_level = dane
verify_tls_security_level = verify
smtp_tls_CAfile = $ca/ca.pem
smtp_mta_sts_CAfile = $ca/ca.pem
smtp_tls_report_CAfile = $ca/ca.pem
smtp_tls_report_period = 20s
smtp_tls_report_organization = Sluice-Test
smtp_connection_cache_on_demand = no"

# Start at the beginning of a period, so that the first run ends
# within it.
wait_for 25 sh -c '[ $(( $(date +%s) % 20 )) -lt 2 ]'
sluiced_start "$d" "$conf" || { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }
all="sts stsbad dane wrong nostarttls testing nofetch nopolicy expired relayed moved"
for z in $all; do
    printf 'Subject: %s\n\nTLS reporting\n' "$z" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test "r@$z.test"
done
wait_for 20 sh -c "[ \$(grep -c 'status=\\(sent\\|deferred\\)' $d/log) -ge 11 ]" ||
    not_ok "every domain has an outcome within 20 s"
line() { grep "to=<$1>" "$d/log" | tail -n 1; }
line r@sts.test | grep -q 'status=sent .*:Verified$' &&
    line r@dane.test | grep -q 'status=sent .*:Verified$' &&
    line r@stsbad.test | grep -q 'status=deferred' &&
    line r@wrong.test | grep -q 'status=deferred' &&
    line r@nostarttls.test | grep -q 'status=deferred' &&
    line r@testing.test | grep -q 'status=sent' &&
    line r@nofetch.test | grep -q 'status=sent' &&
    line r@nopolicy.test | grep -q 'status=sent' &&
    line r@relayed.test | grep -q 'status=sent .*tls=' &&
    line r@moved.test | grep -q 'relay=mx.moved.test\[127.0.0.1\].*status=sent .*:Verified$' &&
    line r@expired.test | grep -q 'status=deferred (Server certificate not trusted (certificate has expired))' &&
    ok "the deliveries succeed or fail as their policies say" ||
    { not_ok "the deliveries succeed or fail as their policies say"; grep 'status=' "$d/log" | sed 's/^/#   /'; }
kill "$sluiced_pid"
wait "$sluiced_pid"
expect "no report before the period ends" "" "$(grep 'tlsrpt: .*report' "$d/log")"
grep -q 'sluice/spread\[[0-9]*\]: [0-9A-Z]*: TLS is required, but was not offered by host mx1.moved.test\[127.0.0.2\]$' "$d/log" &&
    ok "moved.test: the host the job left is logged as the reference logs it" ||
    { not_ok "moved.test: the host the job left is logged as the reference logs it"; grep 'moved.test' "$d/log" | sed 's/^/#   /'; }

# The counts come back from the spool; the period ends; reports go.
: >"$d/log2"
"$build/sluiced" -f -c "$d/sluice.conf" >"$d/log2" 2>&1 &
sluiced_pid=$!
pids="$pids $sluiced_pid"
wait_for 10 grep -q "started: queue" "$d/log2" || not_ok "sluiced restarts"
wait_for 60 sh -c "[ \$(ls $tmp/rpt/*.eml 2>/dev/null | wc -l) -ge 10 ] && ls $www/posts/*.body >/dev/null 2>&1" ||
    { not_ok "ten report messages and a POST arrive within 60 s"; sed 's/^/#   /' "$d/log2"; }
sleep 1
/usr/bin/python3 tests/integration/lib/tlsrpt_check.py "$tmp/rpt" "$www/posts" >"$tmp/check" 2>&1
expect "every report message has section 5.3's form" 10 "$(grep -c '^mail: ok$' "$tmp/check")"
expect "the POST has section 5.4's form and the message's JSON" 1 "$(grep -c '^post: ok$' "$tmp/check")"
expect "sts.test: one successful session under its sts policy" \
    "sts.test sts success=1 failure=0 results=" "$(grep '^sts.test ' "$tmp/check")"
expect "stsbad.test: one failure, certificate-host-mismatch" \
    "stsbad.test sts success=0 failure=1 results=certificate-host-mismatch" \
    "$(grep '^stsbad.test ' "$tmp/check")"
expect "dane.test: one successful session under its tlsa policy" \
    "dane.test tlsa success=1 failure=0 results=" "$(grep '^dane.test ' "$tmp/check")"
expect "wrong.test: one failure, tlsa-invalid" \
    "wrong.test tlsa success=0 failure=1 results=tlsa-invalid" \
    "$(grep '^wrong.test ' "$tmp/check")"
expect "nostarttls.test: one failure, starttls-not-supported" \
    "nostarttls.test sts success=0 failure=1 results=starttls-not-supported" \
    "$(grep '^nostarttls.test ' "$tmp/check")"
expect "testing.test: what enforce would refuse, certificate-host-mismatch" \
    "testing.test sts success=0 failure=1 results=certificate-host-mismatch" \
    "$(grep '^testing.test ' "$tmp/check")"
expect "nofetch.test: the policy could not be had, sts-policy-fetch-error; the session made without it, no-policy-found" \
    "nofetch.test no-policy-found success=1 failure=0 results=
nofetch.test sts success=0 failure=1 results=sts-policy-fetch-error" \
    "$(grep '^nofetch.test ' "$tmp/check")"
expect "nopolicy.test: a TLS session, a success of no-policy-found" \
    "nopolicy.test no-policy-found success=1 failure=0 results=" \
    "$(grep '^nopolicy.test ' "$tmp/check")"
expect "expired.test: one failure of no-policy-found, certificate-expired" \
    "expired.test no-policy-found success=0 failure=1 results=certificate-expired" \
    "$(grep '^expired.test ' "$tmp/check")"
expect "moved.test: the attempt left for another host, a failure; the session there, a success" \
    "moved.test sts success=1 failure=1 results=starttls-not-supported" \
    "$(grep '^moved.test ' "$tmp/check")"
expect "the client's failures tell sending-mta-ip" \
    "sending-mta-ip expired.test 127.0.0.1
sending-mta-ip moved.test 127.0.0.1
sending-mta-ip nostarttls.test 127.0.0.1
sending-mta-ip stsbad.test 127.0.0.1
sending-mta-ip wrong.test 127.0.0.1" "$(grep '^sending-mta-ip ' "$tmp/check")"
expect "nothing else" "" "$(grep -v '^\(mail: ok\|post: ok\|sending-mta-ip \|sts.test \|stsbad.test \|dane.test \|wrong.test \|nostarttls.test \|testing.test \|nofetch.test \|nopolicy.test \|expired.test \|moved.test \)' "$tmp/check")"
expect "relayed.test: mail through another domain's MX is neither's to hear of" "" \
    "$(grep 'tlsrpt: relayed.test' "$d/log2")"
grep -q 'tlsrpt: sts.test: report .* to https://rpt.reports.test/tlsrpt: posted (HTTP 200)' "$d/log2" &&
    ok "the log says the POST was taken" || not_ok "the log says the POST was taken"
expect "the report messages came from the null sender" 10 \
    "$(grep -l '^from: $' "$tmp"/rpt/*.eml | wc -l)"
kill "$sluiced_pid"
wait "$sluiced_pid"
tap_done
