#!/bin/sh
# tests/integration/lib/tls_ca.sh DIR: a throwaway CA and server
# certificates for the TLS tests, made with the openssl command (run,
# not sourced; the unit tests call it too). In DIR:
#
#   ca.pem                the CA's certificate (clients trust it)
#   server.pem server.key  localhost, SAN DNS:localhost and IP:127.0.0.1,
#                          RSA 2048, signed by the CA
#   other.pem other.key    the same names, another key (a reload's new
#                          certificate: its fingerprint differs)
#   chain.pem              server.key, server.pem and ca.pem in one file
#                          (the smtpd_tls_chain_files form)
#   wrong.key              a key that matches neither certificate
#   garbage.pem            not PEM at all
#   wrongname.pem .key     signed by the CA for DNS:wrong.test only
#   untrusted.pem .key     localhost, signed by another CA (rogue.pem),
#                          which nobody trusts
#   expired.pem .key       localhost, signed by the CA, valid in January
#                          2020 only (server.key's copy; OpenSSL 3.0's
#                          x509 has no -not_before, so "openssl ca")
#
# Exits non-zero, saying why, when openssl fails.
set -e
dir=$1
[ -n "$dir" ] || { echo "usage: tls_ca.sh DIR" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
q() { openssl "$@" >/dev/null 2>openssl.err || { cat openssl.err >&2; exit 1; }; }

q req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 \
    -subj "/CN=sluice test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >server.ext
for name in server other; do
    q req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" \
        -subj "/CN=localhost"
    q x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -days 30 -extfile server.ext -out "$name.pem"
done
printf 'subjectAltName=DNS:wrong.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >wrong.ext
q req -newkey rsa:2048 -nodes -keyout wrongname.key -out wrongname.csr \
    -subj "/CN=wrong.test"
q x509 -req -in wrongname.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile wrong.ext -out wrongname.pem
q req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.pem -days 30 \
    -subj "/CN=rogue CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
q req -newkey rsa:2048 -nodes -keyout untrusted.key -out untrusted.csr \
    -subj "/CN=localhost"
q x509 -req -in untrusted.csr -CA rogue.pem -CAkey rogue.key \
    -CAcreateserial -days 30 -extfile server.ext -out untrusted.pem
q req -new -key server.key -out expired.csr -subj "/CN=localhost"
mkdir -p expired.db
: >expired.db/index.txt
echo 01 >expired.db/serial
printf '[ca]\ndefault_ca = test\n[test]\ndatabase = expired.db/index.txt\nnew_certs_dir = expired.db\nserial = expired.db/serial\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n' >expired.cnf
q ca -batch -config expired.cnf -cert ca.pem -keyfile ca.key -in expired.csr \
    -startdate 20200101000000Z -enddate 20200201000000Z -extfile server.ext \
    -notext -out expired.pem
cp server.key expired.key
q genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out wrong.key
cat server.key server.pem ca.pem >chain.pem
echo "this is not a certificate" >garbage.pem
rm -rf ./*.csr server.ext wrong.ext openssl.err ca.srl rogue.srl expired.cnf \
    expired.db
