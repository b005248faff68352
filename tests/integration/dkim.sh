#!/bin/sh
# dkim.sh BUILD - DKIM signing at acceptance through the real sluiced,
# checked by an independent verifier, dkimpy (python3-dkim), with the
# public keys published in a test DNS zone served by dnsmasq: mail from
# an SMTP client in dkim_internal_hosts, signed with rsa-sha256 and with
# ed25519-sha256 (RFC 8463) by From: domain from OpenDKIM-style tables,
# or with both (dkim_multiple_signatures),
# is delivered to aiosmtpd (a strict receiver that stores what it gets)
# and verifies; it still verifies after the refolding and white space
# changes a relay may make (relaxed/relaxed), and fails when its body
# is changed or a From: is added (From is oversigned); a message larger
# than smtpd_staging_threshold, hashed from its staging file, verifies;
# "sluice sendmail" through the daemon, and through the maildrop
# while the daemon is down (imported by the daemon or by "sluice
# import"), is signed; mail from a client
# outside dkim_internal_hosts, or whose From: has no entry, is not; a
# broken KeyTable refuses the configuration with its file and line, and
# a reload with one keeps the running tables; after a reload to
# simple/simple, mail verifies as delivered and no longer after the
# refolding. Loopback only, bounded in time, stops only the processes
# it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3-dkim /usr/bin/python3 -c 'import dkim, dns.resolver'
need python3-aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'
need dnsmasq-base command -v dnsmasq
need openssl command -v openssl

. tests/integration/lib/daemon_lib.sh
check="/usr/bin/python3 tests/integration/lib/dkim_check.py"
chmod 711 "$tmp"

# Keys, as an operator makes them: openssl genpkey, PEM PKCS#8.
openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:2048 \
    -out "$tmp/rsa.pem" 2>/dev/null
openssl genpkey -algorithm ed25519 -out "$tmp/ed.pem" 2>/dev/null
openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:768 \
    -out "$tmp/small.pem" 2>/dev/null
# p= is the SubjectPublicKeyInfo for RSA, the bare 32 bytes for Ed25519.
rsa_p=$(openssl pkey -in "$tmp/rsa.pem" -pubout -outform DER | base64 -w0)
ed_p=$(openssl pkey -in "$tmp/ed.pem" -pubout -outform DER | tail -c 32 |
    base64 -w0)
# TXT strings are at most 255 bytes: the RSA record goes in two.
rsa_1=$(printf %s "$rsa_p" | cut -c1-200)
rsa_2=$(printf %s "$rsa_p" | cut -c201-)

dns_port=$(free_port)
dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= \
    --port="$dns_port" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local=/test/ \
    --txt-record="sel._domainkey.example.test,v=DKIM1; k=rsa; p=$rsa_1,$rsa_2" \
    --txt-record="ed._domainkey.ed.example.test,v=DKIM1; k=ed25519; p=$ed_p" \
    --txt-record="sel._domainkey.dual.example.test,v=DKIM1; k=rsa; p=$rsa_1,$rsa_2" \
    --txt-record="ed._domainkey.dual.example.test,v=DKIM1; k=ed25519; p=$ed_p" \
    2>"$tmp/dnsmasq.log" &
pids="$pids $!"
published() {
    [ -n "$(dig +short -p "$dns_port" @127.0.0.1 TXT \
        ed._domainkey.ed.example.test 2>/dev/null)" ]
}
wait_for 10 published && ok "dnsmasq publishes the public keys" ||
    not_ok "dnsmasq publishes the public keys"

out=$tmp/out
out_port=$(free_port)
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$out" \
    "$out_port" 2>"$tmp/aiosmtpd.log" &
pids="$pids $!"
wait_for 10 test -f "$out/ready"

cat >"$tmp/KeyTable" <<EOF2
# OpenDKIM KeyTable
rsa   example.test:sel:$tmp/rsa.pem
ed    ed.example.test:ed:$tmp/ed.pem
drsa  dual.example.test:sel:$tmp/rsa.pem
ded   dual.example.test:ed:$tmp/ed.pem
EOF2
cat >"$tmp/SigningTable" <<EOF2
*@ed.example.test   ed
*@example.test      rsa
*@dual.example.test drsa
*@dual.example.test ded
EOF2
port=$(free_port)
http_port=$(free_port)
printf 'dkim-test-token-0123456789\n' >"$tmp/token"
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$conf" <<EOF2
queue_directory = $q
http_listen = 127.0.0.1:$http_port
http_token_file = $tmp/token
smtpd_listen = 127.0.0.1:$port
mynetworks = 127.0.0.0/8
dkim_internal_hosts = 127.0.0.1/32
myhostname = mx.test
relayhost = [127.0.0.1]:$out_port
smtpd_staging_threshold = 65536
dkim_signing_table = refile:$tmp/SigningTable
dkim_key_table = $tmp/KeyTable
dkim_multiple_signatures = yes
EOF2
"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 listening "$port"; then
    ok "sluiced starts with the tables and keys"
else
    not_ok "sluiced starts with the tables and keys"
    sed 's/^/#   /' "$tmp/log"
    tap_done
fi

sent=0
# send SOURCE FROM SUBJECT [SIZE]: one message; waits for its delivery
# and sets $file to it.
send() {
    sent=$((sent + 1))
    $check send 127.0.0.1 "$port" "$1" "$2" rcpt@far.test "$3" ${4:-0} \
        >>"$tmp/send.out" 2>&1
    file=$out/$(printf %04d $sent).eml
    wait_for 30 test -f "$file" || not_ok "message $sent ($3) delivered"
}
verify() { $check verify "$file" "$dns_port" "$@" 2>&1 | tail -1; }

send 127.0.0.1 joe@example.test rsa
expect "rsa-sha256: dkimpy verifies the delivered message" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify)"
expect "rsa-sha256: refolded, white space changed: still verifies" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify refold)"
expect "rsa-sha256: a body changed fails" \
    "fail a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify body)"
expect "rsa-sha256: a From: added fails (oversigned)" \
    "fail a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify from)"
expect "the signature is the first field" "DKIM-Signature: v=1; a=rsa-sha256;" \
    "$(sed -n '/^$/{n;p;q}' "$file" | cut -c1-34)"
long=$(awk 'NR > 1 && length($0) > 79' "$file" | head -1)
expect "no line of the header section over 78 characters" "" "$long"
id1=$(sed -n 's/.*sluice) with ESMTP id \([0-9A-Z]*\).*/\1/p' "$file" | head -1)
if grep -q ": $id1: DKIM-Signature field added (s=sel, d=example.test)" "$tmp/log"; then
    ok "the signing is logged as OpenDKIM logs it"
else
    not_ok "the signing is logged as OpenDKIM logs it"
    grep DKIM "$tmp/log" | sed 's/^/#   /'
fi

send 127.0.0.1 ann@ed.example.test ed25519
expect "ed25519-sha256: dkimpy verifies the delivered message" \
    "pass a=ed25519-sha256 c=relaxed/relaxed d=ed.example.test s=ed" "$(verify)"
expect "ed25519-sha256: refolded, white space changed: still verifies" \
    "pass a=ed25519-sha256 c=relaxed/relaxed d=ed.example.test s=ed" "$(verify refold)"
expect "ed25519-sha256: a body changed fails" \
    "fail a=ed25519-sha256 c=relaxed/relaxed d=ed.example.test s=ed" "$(verify body)"

# dkim_multiple_signatures: an RSA and an Ed25519 signature, each
# verified on its own.
send 127.0.0.1 dee@dual.example.test dual
expect "two signatures: the first, rsa-sha256, verifies" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=dual.example.test s=sel" \
    "$(verify refold 0)"
expect "two signatures: the second, ed25519-sha256, verifies" \
    "pass a=ed25519-sha256 c=relaxed/relaxed d=dual.example.test s=ed" \
    "$(verify refold 1)"
expect "two signatures: both are logged" 2 \
    "$(grep -c "DKIM-Signature field added (s=[a-z]*, d=dual.example.test)" "$tmp/log")"

# 600 KB, past the 64 KB threshold: staged, hashed from the file.
send 127.0.0.1 big@example.test staged 600000
expect "a staged message (600 KB) verifies" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify)"
expect "a staged message: refolded, still verifies" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify refold)"
expect "the staging directory is empty afterwards" 0 \
    "$(find "$q/staging" -type f | wc -l)"

send 127.0.0.9 joe@example.test outside
expect "a client outside dkim_internal_hosts: not signed" 0 \
    "$(grep -ci '^DKIM-Signature:' "$file")"

send 127.0.0.1 joe@other.test nomatch
expect "a From: without an entry: not signed" 0 \
    "$(grep -ci '^DKIM-Signature:' "$file")"
if grep -q "no DKIM signature: no signing table match for 'joe@other.test'" "$tmp/log"; then
    ok "the unsigned message is logged with the reason"
else
    not_ok "the unsigned message is logged with the reason"
fi

# A local submission, through the daemon's socket.
sent=$((sent + 1))
printf 'From: Local <local@example.test>\nTo: rcpt@far.test\nSubject: local\n\nfrom  sendmail\n' |
    "$build/sluice" -c "$conf" sendmail -f local@example.test rcpt@far.test
expect "sluice sendmail: exit status" 0 $?
file=$out/$(printf %04d $sent).eml
wait_for 30 test -f "$file"
expect "sluice sendmail: the message is signed and verifies" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify)"

# A message from the injection API is local mail: signed.
sent=$((sent + 1))
python3 - "$http_port" <<'PYEOF' >"$tmp/inject.out" 2>&1
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
c.request("POST", "/api/inject", json.dumps({
    "envelope_sender": "api@example.test",
    "recipients": [{"email": "rcpt@far.test"}],
    "content": "From: API <api@example.test>\nTo: rcpt@far.test\n"
               "Subject: injected\n\nfrom  the API\n"}),
    {"Authorization": "Bearer dkim-test-token-0123456789"})
print(c.getresponse().status)
PYEOF
expect "inject: accepted" 200 "$(cat "$tmp/inject.out")"
file=$out/$(printf %04d $sent).eml
wait_for 30 test -f "$file"
expect "inject: the message is signed and verifies" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify)"

# A broken KeyTable: refused with the file and the line, at start (the
# same check as "sluice config") and at reload, where the tables stay.
cp "$tmp/KeyTable" "$tmp/KeyTable.good"
printf 'rsa example.test:sel:%s\nsmall example.test:s:%s\n' "$tmp/rsa.pem" \
    "$tmp/small.pem" >"$tmp/KeyTable"
"$build/sluiced" -f -c "$conf" >"$tmp/bad.log" 2>&1
expect "a 768-bit RSA key: sluiced refuses to start" 1 $?
expect "... with the file and the line" \
    "$tmp/KeyTable, line 2: $tmp/small.pem: RSA key of 768 bits, fewer than 1024 (RFC 8301)" \
    "$(sed -n 's/.*fatal: //p' "$tmp/bad.log")"
kill -HUP "$daemon"
wait_for 10 grep -q "reload failed" "$tmp/log"
expect "at reload: refused, the running configuration stays" 1 \
    "$(grep -c "reload failed, the running configuration stays: $tmp/KeyTable, line 2: " "$tmp/log")"
send 127.0.0.1 joe@example.test after-reload
expect "after the refused reload, mail is still signed" \
    "pass a=rsa-sha256 c=relaxed/relaxed d=example.test s=sel" "$(verify)"

# simple/simple, by a reload that also takes the mended KeyTable: the
# message verifies as it is, and the refolding that relaxed survives
# breaks it (so the check above is one that can fail).
cp "$tmp/KeyTable.good" "$tmp/KeyTable"
echo "dkim_canonicalization = simple/simple" >>"$conf"
kill -HUP "$daemon"
wait_for 10 grep -q "reloaded: " "$tmp/log"
send 127.0.0.1 ann@ed.example.test simple
expect "simple/simple: dkimpy verifies the message as delivered" \
    "pass a=ed25519-sha256 c=simple/simple d=ed.example.test s=ed" "$(verify)"
expect "simple/simple: refolded, it fails" \
    "fail a=ed25519-sha256 c=simple/simple d=ed.example.test s=ed" \
    "$(verify refold)"

# With the daemon down: the spool owner's sendmail, which would store
# straight into the spool, leaves signed mail in the maildrop too, and
# "sluice import" signs what it imports; an ordinary user's message
# waits in the maildrop and the daemon signs it when it imports it.
kill "$daemon"
wait "$daemon" 2>/dev/null
drop() {
    _subject=$1
    shift
    printf 'From: <drop@ed.example.test>\nSubject: %s\n\nbody\n' "$_subject" |
        "$@" "$build/sluice" -c "$conf" sendmail -f drop@ed.example.test \
            rcpt@far.test
}
by_subject() { grep -l "^Subject: $1" "$out"/*.eml 2>/dev/null | head -1 | grep .; }
drop drop-owner env
expect "daemon down, the owner's sendmail: the message is in the maildrop" \
    1 "$(find "$q/maildrop" -type f | wc -l)"
expect "sluice import moves it into the spool" \
    "imported 1, malformed 0 (moved to maildrop-bad), failed 0, stale temporary files 0" \
    "$("$build/sluice" -c "$conf" import 2>&1)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    drop drop-user setpriv --reuid=65534 --regid=65534 --clear-groups
    expect "daemon down, an ordinary user's sendmail: in the maildrop" 1 \
        "$(find "$q/maildrop" -type f | wc -l)"
else
    ok "an ordinary user's sendmail # SKIP needs root and setpriv"
fi
"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
wait_for 30 by_subject drop-owner >/dev/null
file=$(by_subject drop-owner)
expect "signed by sluice import: dkimpy verifies it" \
    "pass a=ed25519-sha256 c=simple/simple d=ed.example.test s=ed" \
    "$(verify)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    wait_for 30 by_subject drop-user >/dev/null
    file=$(by_subject drop-user)
    expect "signed by the daemon's maildrop import: dkimpy verifies it" \
        "pass a=ed25519-sha256 c=simple/simple d=ed.example.test s=ed" \
        "$(verify)"
fi
kill "$daemon"
wait "$daemon" 2>/dev/null

expect "no sanitizer report from sluiced (with make asan's build)" 0 \
    "$(grep -c 'Sanitizer' "$tmp/log")"
grep -v '^250 ' "$tmp/send.out" | sed 's/^/#   /'
tap_done
