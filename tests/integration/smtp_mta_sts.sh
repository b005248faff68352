#!/bin/sh
# smtp_mta_sts.sh BUILD - MTA-STS (RFC 8461) end to end: the _mta-sts TXT
# records and MX records served by unbound on loopback (sluiced's
# dns_servers, which also find mta-sts.DOMAIN), the policies served over
# HTTPS by lib/sts_peer.py on 127.0.0.1:443 with a certificate of the
# test CA, and lib/tls_receiver.py as the MX hosts. Per recipient domain:
#
#   enforce.test     mode enforce, mx: mx.enforce.test; the MX host's
#                    certificate names it: sent, Verified
#   badcert.test     mode enforce; the MX host's certificate names another
#                    host: deferred, nothing sent (section 4.2)
#   notallowed.test  mode enforce, mx: other.notallowed.test; the MX is
#                    mx.notallowed.test: deferred without a connection
#                    (section 5.1)
#   testing.test     mode testing, the certificate of another host: sent,
#                    and the log says what enforce would have refused
#   nopolicy.test    no TXT record: sent as without MTA-STS (may)
#
# then a restart with the policy server stopped: the cached enforce
# policy still holds (section 5.1: policies are cached for max_age and
# survive restarts, in the spool). Needs root (port 443). Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

skip() {
    echo "# SKIP smtp_mta_sts.sh: $1"
    ok "smtp_mta_sts.sh # SKIP $1"
    tap_done
}
[ "$(id -u)" = 0 ] || skip "not root (the policy server listens on port 443)"
need unbound command -v unbound
need openssl command -v openssl
. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/dnssec_lib.sh
listening 443 && skip "something listens on 127.0.0.1:443 already"

ca=$tmp/ca
sh tests/integration/lib/tls_ca.sh "$ca" || { not_ok "certificates"; tap_done; }
# cert NAME SANS: a certificate of the test CA for SANS (DNS names)
cert() {
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$2" >"$ca/$1.ext"
    openssl req -newkey rsa:2048 -nodes -keyout "$ca/$1.key" -out "$ca/$1.csr" \
        -subj "/CN=$1" 2>/dev/null &&
        openssl x509 -req -in "$ca/$1.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
            -CAcreateserial -days 30 -extfile "$ca/$1.ext" -out "$ca/$1.pem" 2>/dev/null
}
domains="enforce badcert notallowed testing nopolicy"
sans=
for z in $domains; do sans="$sans${sans:+,}DNS:mta-sts.$z.test"; done
cert policy "$sans" && cert mx "DNS:mx.enforce.test,DNS:mx.notallowed.test" &&
    cert elsewhere "DNS:mx.elsewhere.test" ||
    { not_ok "the test's certificates"; tap_done; }

# The policy server.
www=$tmp/www
mkdir -p "$www/www"
cp "$ca/policy.pem" "$www/server.pem"
cp "$ca/policy.key" "$www/server.key"
policy() {
    printf '200 text/plain\nversion: STSv1\r\nmode: %s\r\nmx: %s\r\nmax_age: 86400\r\n' \
        "$2" "$3" >"$www/www/mta-sts.$1.test"
}
policy enforce enforce mx.enforce.test
policy badcert enforce mx.badcert.test
policy notallowed enforce other.notallowed.test
policy testing testing mx.testing.test
start_www() {
    rm -f "$www/port"
    /usr/bin/python3 tests/integration/lib/sts_peer.py "$www" 443 2>"$tmp/www.err" &
    www_pid=$!
    pids="$pids $www_pid"
    wait_for 10 test -f "$www/port" || { not_ok "the policy server starts"; cat "$tmp/www.err"; tap_done; }
}
start_www

# The MX hosts: one with the right name, one with another.
receiver() {
    /usr/bin/python3 tests/integration/lib/tls_receiver.py "$tmp/$1" good \
        "$ca/$2.pem" "$ca/$2.key" 2>"$tmp/$1.err" &
    pids="$pids $!"
    wait_for 10 test -f "$tmp/$1/port" || { not_ok "receiver $1 starts"; tap_done; }
    eval "port_$1=\$(cat \"\$tmp/\$1/port\")"
}
receiver right mx
receiver wrong elsewhere

# DNS: MX, the MX host's address, _mta-sts TXT, the policy host.
for z in $domains; do
    dnssec_zone "$z.test" insecure
    dnssec_record "$z.test" "@ 300 IN MX 10 mx"
    dnssec_record "$z.test" "mx 300 IN A 127.0.0.1"
    dnssec_record "$z.test" "mta-sts 300 IN A 127.0.0.1"
    [ "$z" = nopolicy ] ||
        dnssec_record "$z.test" "_mta-sts 300 IN TXT \"v=STSv1; id=20261127\""
done
dnssec_start || { not_ok "unbound starts"; sed 's/^/#   /' "$dnssec_dir/why"; tap_done; }

: >"$tmp/transport"
for z in $domains; do
    case $z in badcert | testing) p=$port_wrong ;; *) p=$port_right ;; esac
    printf '%s.test relay:%s.test:%s\n' "$z" "$z" "$p" >>"$tmp/transport"
done
d=$tmp/sluice
conf="dns_servers = $dnssec_servers
smtp_tls_CAfile = $ca/ca.pem
smtp_mta_sts_CAfile = $ca/ca.pem
smtp_connection_cache_on_demand = no"
sluiced_start "$d" "$conf" || { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }
for z in $domains; do
    printf 'Subject: %s\n\nMTA-STS\n' "$z" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test "r@$z.test"
done
wait_for 60 sh -c "[ \$(grep -c 'status=\\(sent\\|deferred\\)' $d/log) -ge 5 ]" ||
    not_ok "every domain has an outcome within 60 s"

line() { grep "to=<$1>" "$d/log" | tail -n 1; }
stored() { grep -l "^to: $2\$" "$tmp/$1"/*.eml 2>/dev/null | wc -l; }
line r@enforce.test | grep -q 'status=sent .* tls=TLSv1.[23]:[^:]*:Verified$' &&
    ok "enforce: sent, the certificate verified for mx.enforce.test" ||
    { not_ok "enforce: sent, the certificate verified for mx.enforce.test"; line r@enforce.test | sed 's/^/#   /'; }
line r@badcert.test | grep -q 'dsn=4.7.5, status=deferred (Server certificate not verified' &&
    ok "enforce: a certificate for another name defers" ||
    { not_ok "enforce: a certificate for another name defers"; line r@badcert.test | sed 's/^/#   /'; }
expect "enforce: nothing reached the server with the wrong certificate" 0 \
    "$(stored wrong r@badcert.test)"
line r@notallowed.test | grep -q 'relay=none, .*dsn=4.7.5, status=deferred (MTA-STS policy of notallowed.test allows none of its MX hosts' &&
    ok "enforce: an MX host outside the policy's mx is not used" ||
    { not_ok "enforce: an MX host outside the policy's mx is not used"; line r@notallowed.test | sed 's/^/#   /'; }
line r@testing.test | grep -q 'status=sent' &&
    ok "testing: sent all the same" ||
    { not_ok "testing: sent all the same"; line r@testing.test | sed 's/^/#   /'; }
grep -q 'testing.test: MTA-STS policy in testing mode would refuse mx.testing.test: the certificate does not verify for the MX host' "$d/log" &&
    ok "testing: the log says what enforce would refuse" ||
    not_ok "testing: the log says what enforce would refuse"
line r@nopolicy.test | grep -q 'status=sent .*:Trusted$' &&
    ok "no policy: sent at may (Trusted, no name checked)" ||
    { not_ok "no policy: sent at may (Trusted, no name checked)"; line r@nopolicy.test | sed 's/^/#   /'; }
expect "one policy fetch per domain that has one" 4 \
    "$(sort -u "$www/requests" | wc -l)"
kill "$sluiced_pid"
wait "$sluiced_pid"

# Restart without the policy server: the enforce policy is in the spool.
kill "$www_pid"
wait "$www_pid" 2>/dev/null
: >"$www/requests"
"$build/sluiced" -f -c "$d/sluice.conf" >"$d/log2" 2>&1 &
sluiced_pid=$!
pids="$pids $sluiced_pid"
wait_for 10 grep -q "started: queue" "$d/log2" || not_ok "sluiced restarts"
printf 'Subject: again\n\nMTA-STS\n' |
    "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test r2@notallowed.test
wait_for 30 sh -c "grep -q 'to=<r2@notallowed.test>.*status=' $d/log2"
grep 'to=<r2@notallowed.test>' "$d/log2" | grep -q 'status=deferred (MTA-STS policy of notallowed.test allows none' &&
    ok "after a restart, the cached policy still holds without a fetch" ||
    { not_ok "after a restart, the cached policy still holds without a fetch"; grep 'r2@notallowed' "$d/log2" | sed 's/^/#   /'; }
expect "no fetch after the restart" 0 "$(wc -l <"$www/requests")"
kill "$sluiced_pid"
wait "$sluiced_pid"
tap_done
