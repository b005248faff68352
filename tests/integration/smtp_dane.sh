#!/bin/sh
# smtp_dane.sh BUILD - DANE (RFC 7672) end to end: zones signed in the
# test and served by unbound, a validating unbound as sluiced's resolver
# (dns_servers), and lib/tls_receiver.py presenting certificates of the
# test CA. Per destination, at the levels dane and dane-only:
#
#   dane.test      signed; TLSA 3 1 1 of the server's key (DANE-EE)
#   ta.test        signed; TLSA 2 0 1 of the CA (DANE-TA), the server's
#                  certificate names mx.ta.test (RFC 7672, 3.2.2)
#   wrong.test     signed; TLSA 3 1 1 of another key: nothing is sent
#   none.test      signed; no TLSA (a validated denial): dane is may,
#                  dane-only defers
#   insecure.test  not signed (domain-insecure); TLSA present but not
#                  validated: dane is may, dane-only defers
#
# Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need unbound command -v unbound
need ldns-signzone command -v ldns-signzone
need openssl command -v openssl
. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/dnssec_lib.sh

ca=$tmp/ca
sh tests/integration/lib/tls_ca.sh "$ca" || { not_ok "certificates"; tap_done; }
# the certificate of mx.ta.test, signed by the test CA, with the CA in
# the chain the server sends (DANE-TA needs it, RFC 7671 5.2.2)
printf 'subjectAltName=DNS:mx.ta.test\nextendedKeyUsage=serverAuth\n' >"$ca/ta.ext"
openssl req -newkey rsa:2048 -nodes -keyout "$ca/ta.key" -out "$ca/ta.csr" \
    -subj "/CN=mx.ta.test" 2>/dev/null &&
    openssl x509 -req -in "$ca/ta.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
        -CAcreateserial -days 30 -extfile "$ca/ta.ext" -out "$ca/ta.pem" 2>/dev/null ||
    { not_ok "the certificate of mx.ta.test"; tap_done; }
cat "$ca/server.pem" "$ca/ca.pem" >"$ca/server-chain.pem"
cat "$ca/ta.pem" "$ca/ca.pem" >"$ca/ta-chain.pem"
cp "$ca/server.key" "$ca/server-chain.key"
cp "$ca/ta.key" "$ca/ta-chain.key"

# receiver NAME CERT: lib/tls_receiver.py, its port in $port_NAME.
receiver() {
    /usr/bin/python3 tests/integration/lib/tls_receiver.py "$tmp/$1" good \
        "$ca/$2.pem" "$ca/$2.key" 2>"$tmp/$1.err" &
    pids="$pids $!"
    wait_for 10 test -f "$tmp/$1/port" || { not_ok "receiver $1 starts"; tap_done; }
    eval "port_$1=\$(cat \"\$tmp/\$1/port\")"
}
receiver main server-chain
receiver ta ta-chain

ee=$(dnssec_tlsa_rdata "$ca/server.pem")
other=$(dnssec_tlsa_rdata "$ca/other.pem")
ta=$(dnssec_tlsa_rdata "$ca/ca.pem" 2 0 1)
# zone NAME MODE PORT TLSA: MX mx.NAME, its address 127.0.0.1, and TLSA
# (empty: none) for _PORT._tcp.mx.NAME.
zone() {
    dnssec_zone "$1" "$2"
    dnssec_record "$1" "@ 300 IN MX 10 mx"
    dnssec_record "$1" "mx 300 IN A 127.0.0.1"
    [ -z "$4" ] || dnssec_record "$1" "_$3._tcp.mx 300 IN TLSA $4"
}
zone dane.test secure "$port_main" "$ee"
zone ta.test secure "$port_ta" "$ta"
zone wrong.test secure "$port_main" "$other"
zone none.test secure "$port_main" ""
zone insecure.test insecure "$port_main" "$ee"
dnssec_start || { not_ok "unbound starts"; sed 's/^/#   /' "$dnssec_dir/why"; tap_done; }
ok "a validating unbound serves the signed zones"

expect "the resolver validates dane.test's TLSA (dnsq)" "secure=1" \
    "$("$build/tools/dnsq" -s "$dnssec_servers" tlsa mx.dane.test "$port_main" |
        grep -o 'secure=1' | head -n 1)"

: >"$tmp/transport"
for l in dane daneonly; do
    for z in dane ta wrong none insecure; do
        [ "$z" = ta ] && p=$port_ta || p=$port_main
        printf '%s-%s.test %s:%s.test:%s\n' "$l" "$z" "$l" "$z" "$p" >>"$tmp/transport"
    done
done
d=$tmp/sluice
sluiced_start "$d" "transports = smtp:smtp, relay:smtp, dane:smtp, daneonly:smtp
dns_servers = $dnssec_servers
dane_tls_security_level = dane
daneonly_tls_security_level = dane-only
smtp_connection_cache_on_demand = no" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }
n=0
for l in dane daneonly; do
    for z in dane ta wrong none insecure; do
        printf 'Subject: %s %s\n\nDANE\n' "$l" "$z" |
            "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test \
                "r@$l-$z.test"
        n=$((n + 1))
    done
done
wait_for 60 sh -c "[ \$(grep -c 'status=\\(sent\\|deferred\\)' $d/log) -ge $n ]" ||
    not_ok "every case has an outcome within 60 s"

# check LEVEL ZONE WANT [TEXT]: WANT is "sent WORD" or "deferred".
check() {
    line=$(grep "to=<r@$1-$2.test>" "$d/log" | tail -n 1)
    case $3 in
    sent)
        echo "$line" | grep -q "status=sent .* tls=TLSv1.[23]:[^:]*:$4\$" &&
            ok "$1 x $2: sent in TLS, $4" ||
            { not_ok "$1 x $2: sent in TLS, $4"; echo "#   $line"; }
        ;;
    deferred)
        echo "$line" | grep -q "dsn=4.7.5, status=deferred .*$4" &&
            ok "$1 x $2: deferred, \"$4\"" ||
            { not_ok "$1 x $2: deferred, \"$4\""; echo "#   $line"; }
        ;;
    esac
}
check dane dane sent Verified
check dane ta sent Verified
check dane wrong deferred "Server certificate not verified"
check dane none sent Untrusted
check dane insecure sent Untrusted
check daneonly dane sent Verified
check daneonly ta sent Verified
check daneonly wrong deferred "Server certificate not verified"
check daneonly none deferred "has no DNSSEC-validated TLSA records"
check daneonly insecure deferred "has no DNSSEC-validated TLSA records"
expect "the wrong TLSA's message never reached the server" 0 \
    "$(grep -l '^to: r@dane\(only\)\?-wrong.test$' "$tmp"/main/*.eml 2>/dev/null | wc -l)"
grep -q 'Verified TLS connection established to mx.dane.test\[127.0.0.1\]' "$d/log" &&
    ok "logged: Verified TLS connection established to mx.dane.test" ||
    not_ok "logged: Verified TLS connection established to mx.dane.test"
grep -h '^sni: ' "$tmp"/main/*.eml "$tmp"/ta/*.eml 2>/dev/null | sort -u >"$tmp/sni"
grep -q '^sni: mx.dane.test$' "$tmp/sni" && grep -q '^sni: mx.ta.test$' "$tmp/sni" &&
    ok "SNI is the TLSA base domain (RFC 7672, 8.1)" ||
    { not_ok "SNI is the TLSA base domain (RFC 7672, 8.1)"; sed 's/^/#   /' "$tmp/sni"; }
# A second message to dane.test: a new connection, the session resumed,
# and still Verified (the resumed session was DANE-authenticated under
# the same records).
printf 'Subject: again\n\nDANE\n' |
    "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test r2@dane-dane.test
wait_for 20 sh -c "grep -q 'to=<r2@dane-dane.test>.*status=' $d/log"
grep 'to=<r2@dane-dane.test>' "$d/log" | grep -q 'status=sent .*:Verified$' &&
    ok "dane x dane again: sent, Verified" ||
    { not_ok "dane x dane again: sent, Verified"; grep 'to=<r2@dane-dane.test>' "$d/log" | sed 's/^/#   /'; }
expect "dane x dane again: the session was resumed" "resumed: yes" \
    "$(grep -l '^to: r2@dane-dane.test$' "$tmp"/main/*.eml | xargs -r grep -h '^resumed:')"
grep -q "warning: DANE trusts" "$d/log" &&
    not_ok "no warning for a resolver on loopback" ||
    ok "no warning for a resolver on loopback"
kill "$sluiced_pid"
wait "$sluiced_pid"
tap_done
