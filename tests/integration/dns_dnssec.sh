#!/bin/sh
# dns_dnssec.sh BUILD - sluice's resolver (src/dns/) against a real
# validating resolver: unbound on loopback validating zones signed in
# the test with ldns-signzone (lib/dnssec_lib.sh), asked through
# BUILD/tools/dnsq (dns_lookup_mx, _host, _tlsa, _txt; one process per
# question, or a few in a row on one resolver for the cache).
#
# RFC 4035, 3.2.3: a validating resolver sets AD only when "all the
# RRsets in the Answer and Authority sections" are authentic, and RFC
# 6840, 5.7 lets it do so only when the query carried AD or DO (which
# sluice's do). So: a signed zone (dane.test) gives secure = 1 with the
# TLSA records exactly as served, a CNAME chain within it too; a
# validated NXDOMAIN or no-data answer for TLSA is DNS_OK without
# records and secure (RFC 7672, 2.2: "no TLSA records"); an unsigned
# zone the resolver knows to be insecure (insecure.test) gives secure =
# 0; a zone whose signatures expired (bogus.test) is SERVFAIL, so
# DNS_TEMPFAIL; an exchanger in the unsigned zone of an MX in the signed
# one is insecure while the MX result stays secure; the authoritative
# server asked directly sets no AD (it validates nothing), so secure =
# 0. Bounded in time; stops only the servers it started, by PID.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need unbound command -v unbound
need ldnsutils command -v ldns-signzone
need bind9-dnsutils command -v dig
need openssl command -v openssl
need python3 command -v python3

. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/dnssec_lib.sh

dnsq=$build/tools/dnsq
if [ ! -x "$dnsq" ]; then
    not_ok "$dnsq is built (make)"
    tap_done
fi

# A certificate to publish, as the DANE tests will.
if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/mx.key" -out "$tmp/mx.pem" -days 30 -subj "/CN=mx.dane.test" \
    2>"$tmp/openssl.err" >/dev/null; then
    not_ok "openssl makes a certificate"
    sed 's/^/#   /' "$tmp/openssl.err"
    tap_done
fi
tlsa_eeh=$(dnssec_tlsa_rdata "$tmp/mx.pem")
tlsa_full=$(dnssec_tlsa_rdata "$tmp/mx.pem" 3 0 0)
spki=$(openssl x509 -in "$tmp/mx.pem" -noout -pubkey |
    openssl pkey -pubin -outform DER | openssl dgst -sha256 -r | cut -d' ' -f1)
expect "dnssec_tlsa_rdata gives 3 1 1 and the SPKI's SHA-256" "3 1 1 $spki" \
    "$tlsa_eeh"
lower() { tr 'A-F' 'a-f'; }

dnssec_zone dane.test secure
dnssec_record dane.test "@ 300 IN MX 10 mx"
dnssec_record dane.test "@ 300 IN MX 20 mx.insecure.test."
dnssec_record dane.test "mx 300 IN A 127.0.0.41"
dnssec_record dane.test "mx 300 IN AAAA fd00::41"
dnssec_record dane.test "_25._tcp.mx 300 IN TLSA $tlsa_eeh"
dnssec_record dane.test "_25._tcp.mx 300 IN TLSA $tlsa_full"
# RFC 3597 form: data of 2 bytes, short of the three fields: skipped.
dnssec_record dane.test "_25._tcp.mx 300 IN TYPE52 \\# 2 0301"
dnssec_record dane.test "_465._tcp.mx 300 IN TXT \"not a TLSA record\""
dnssec_record dane.test "alias 300 IN CNAME mx"
dnssec_record dane.test "_25._tcp.alias 300 IN CNAME _25._tcp.mx"
dnssec_record dane.test "implicit 300 IN A 127.0.0.42"
dnssec_record dane.test "_mta-sts 300 IN TXT \"v=STSv1; \" \"id=20261127\""
dnssec_record dane.test "_smtp._tls 300 IN TXT \"v=TLSRPTv1; rua=mailto:tlsrpt@dane.test\""
dnssec_zone insecure.test insecure
dnssec_record insecure.test "@ 300 IN MX 10 mx"
dnssec_record insecure.test "mx 300 IN A 127.0.0.43"
dnssec_record insecure.test "_25._tcp.mx 300 IN TLSA $tlsa_eeh"
dnssec_zone bogus.test bogus
dnssec_record bogus.test "@ 300 IN MX 10 mx"
dnssec_record bogus.test "mx 300 IN A 127.0.0.44"
dnssec_record bogus.test "_25._tcp.mx 300 IN TLSA $tlsa_eeh"
dnssec_record bogus.test "_mta-sts 300 IN TXT \"v=STSv1; id=1\""

t0=$(date +%s)
if dnssec_start; then
    ok "unbound validates the test zones on $dnssec_servers ($(($(date +%s) - t0)) s)"
else
    not_ok "unbound validates the test zones"
    sed 's/^/#   /' "$dnssec_dir/why"
    tap_done
fi

q() { "$dnsq" -s "$dnssec_servers" "$@" 2>&1; }

# 1. A signed zone: MX, its exchangers, each answer secure.
expect "secure MX: the result and the signed exchanger are secure, the one in the unsigned zone is not" \
    "status=ok secure=1 implicit_mx=0 name=dane.test
host 10 mx.dane.test secure=1 127.0.0.41 fd00::41
host 20 mx.insecure.test secure=0 127.0.0.43" "$(q mx dane.test)"
expect "secure host: A and AAAA (no data for neither) validated" \
    "status=ok secure=1 implicit_mx=0 name=mx.dane.test
host 0 mx.dane.test secure=1 127.0.0.41 fd00::41" "$(q host mx.dane.test)"
expect "secure implicit MX: the no-data MX answer and the A and AAAA answers" \
    "status=ok secure=1 implicit_mx=1 name=implicit.dane.test
host 0 implicit.dane.test secure=1 127.0.0.42" "$(q mx implicit.dane.test)"

# 2. TLSA records, exactly as served; the short one skipped.
full_hex=$(echo "$tlsa_full" | cut -d' ' -f4 | lower)
want_tlsa="tlsa 3 1 1 $spki
tlsa 3 0 0 $full_hex"
got=$(q tlsa mx.dane.test 25)
expect "TLSA _25._tcp.mx.dane.test: secure, two records" \
    "status=ok secure=1 n=2 name=_25._tcp.mx.dane.test" \
    "$(echo "$got" | head -1)"
expect "TLSA records parsed exactly (usage, selector, matching type, data)" \
    "$(echo "$want_tlsa" | sort)" "$(echo "$got" | sed 1d | sort)"
got=$(q tlsa alias.dane.test 25)
expect "TLSA through a signed CNAME: secure, the target's records" \
    "status=ok secure=1 n=2 name=_25._tcp.alias.dane.test
$(echo "$want_tlsa" | sort)" \
    "$(echo "$got" | head -1; echo "$got" | sed 1d | sort)"
expect "host through a signed CNAME: secure" \
    "status=ok secure=1 implicit_mx=0 name=alias.dane.test
host 0 alias.dane.test secure=1 127.0.0.41 fd00::41" "$(q host alias.dane.test)"

# 3. Denial of existence, validated: "no TLSA records", secure.
expect "secure NXDOMAIN for TLSA: DNS_OK, no records, secure" \
    "status=ok secure=1 n=0 name=_25._tcp.nothere.dane.test" \
    "$(q tlsa nothere.dane.test 25)"
expect "secure no data for TLSA (_465._tcp.mx has a TXT record only): DNS_OK, no records, secure" \
    "status=ok secure=1 n=0 name=_465._tcp.mx.dane.test" \
    "$(q tlsa mx.dane.test 465)"

# 4. TXT for MTA-STS and TLS-RPT: the character-strings joined.
expect "TXT _mta-sts: the strings joined, secure" \
    "status=ok secure=1 n=1 name=_mta-sts.dane.test
txt v=STSv1; id=20261127" "$(q txt _mta-sts.dane.test)"
expect "TXT _smtp._tls: secure" \
    "status=ok secure=1 n=1 name=_smtp._tls.dane.test
txt v=TLSRPTv1; rua=mailto:tlsrpt@dane.test" "$(q txt _smtp._tls.dane.test)"
expect "TXT missing: a permanent failure, the denial secure" \
    "status=permfail secure=1 dsn=5.4.4 why=Host or domain name not found. Name service error for name=_mta-sts.mx.dane.test type=TXT: Host not found" \
    "$(q txt _mta-sts.mx.dane.test)"

# 5. The cache keeps the flag: the second lookup asks nothing.
expect "secure TLSA from the cache: secure again, no new query" \
    "status=ok secure=1 n=2 name=_25._tcp.mx.dane.test
status=ok secure=1 n=2 name=_25._tcp.mx.dane.test
queries=1 cache_hits=1" "$(q -r 2 tlsa mx.dane.test 25 | grep -v '^tlsa')"
expect "secure MX from the cache: secure again, no new query" \
    "status=ok secure=1 implicit_mx=0 name=dane.test
status=ok secure=1 implicit_mx=0 name=dane.test
queries=5 cache_hits=5" "$(q -r 2 mx dane.test | grep -v '^host')"

# 6. An unsigned zone the resolver knows to be insecure: no AD.
expect "insecure MX: secure = 0" \
    "status=ok secure=0 implicit_mx=0 name=insecure.test
host 10 mx.insecure.test secure=0 127.0.0.43" "$(q mx insecure.test)"
expect "insecure TLSA: the record, secure = 0 (DANE must not use it)" \
    "status=ok secure=0 n=1 name=_25._tcp.mx.insecure.test
tlsa $spki" "$(q tlsa mx.insecure.test 25 | sed 's/^tlsa 3 1 1 /tlsa /')"
expect "insecure NXDOMAIN for TLSA: DNS_OK, no records, secure = 0" \
    "status=ok secure=0 n=0 name=_25._tcp.nothere.insecure.test" \
    "$(q tlsa nothere.insecure.test 25)"

# 7. Bogus: expired signatures; the validator answers SERVFAIL.
expect "bogus MX: DNS_TEMPFAIL" \
    "status=tempfail secure=0 dsn=4.4.3 why=Host or domain name not found. Name service error for name=bogus.test type=MX: Host not found, try again" \
    "$(q mx bogus.test)"
expect "bogus TLSA: DNS_TEMPFAIL" \
    "status=tempfail secure=0 dsn=4.4.3 why=Host or domain name not found. Name service error for name=_25._tcp.mx.bogus.test type=TLSA: Host not found, try again" \
    "$(q tlsa mx.bogus.test 25)"
expect "bogus NXDOMAIN for TLSA: DNS_TEMPFAIL, not a denial" \
    "status=tempfail secure=0 dsn=4.4.3" \
    "$(q tlsa nothere.bogus.test 25 | sed 's/ why=.*//')"
expect "bogus TXT: DNS_TEMPFAIL" "status=tempfail secure=0 dsn=4.4.3" \
    "$(q txt _mta-sts.bogus.test | sed 's/ why=.*//')"
expect "bogus host: DNS_TEMPFAIL" "status=tempfail secure=0 dsn=4.4.3" \
    "$(q host mx.bogus.test | sed 's/ why=.*//')"

# 8. Only a validator's word counts: the authoritative server sets no AD.
expect "the authoritative server's signed answers: secure = 0" \
    "status=ok secure=0 n=2 name=_25._tcp.mx.dane.test" \
    "$("$dnsq" -s "$dnssec_auth_servers" tlsa mx.dane.test 25 | head -1)"
expect "dns_servers_loopback: the test's resolver is on loopback" \
    "loopback=1" "$(q loopback)"
expect "dns_servers_loopback: a remote server is not" "loopback=0" \
    "$("$dnsq" -s "$dnssec_servers,192.0.2.1" loopback)"

dnssec_stop
tap_done
