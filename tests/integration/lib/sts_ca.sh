#!/bin/sh
# tests/integration/lib/sts_ca.sh DIR: a throwaway CA and the certificate
# of a test MTA-STS policy server, made with the openssl command (run, not
# sourced; test_sts_fetch calls it). In DIR:
#
#   ca.pem                 the CA's certificate (the sender trusts it)
#   server.pem server.key  the policy server: SANs mta-sts.NAME.test for
#                          each NAME below, EC P-256, signed by the CA
#   other-ca.pem           another CA, which signed nothing of these
#
# Exits non-zero, saying why, when openssl fails.
set -e
dir=$1
[ -n "$dir" ] || { echo "usage: sts_ca.sh DIR" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
q() { openssl "$@" >/dev/null 2>openssl.err || { cat openssl.err >&2; exit 1; }; }

ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
ca_ext() {
    echo "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign"
}
# shellcheck disable=SC2046,SC2086
q req -x509 $ec -keyout ca.key -out ca.pem -days 30 \
    -subj "/CN=sluice MTA-STS test CA" $(ca_ext)
# shellcheck disable=SC2046,SC2086
q req -x509 $ec -keyout other-ca.key -out other-ca.pem -days 30 \
    -subj "/CN=sluice other CA" $(ca_ext)
sans=
for name in ok moved restart expire notfound redirect html big invalid \
    slow shared charset untrusted; do
    sans="$sans${sans:+,}DNS:mta-sts.$name.test"
done
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    "$sans" >server.ext
# shellcheck disable=SC2086
q req $ec -keyout server.key -out server.csr -subj "/CN=mta-sts.ok.test"
q x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile server.ext -out server.pem
rm -f ./*.csr server.ext openssl.err ca.srl ca.key other-ca.key
