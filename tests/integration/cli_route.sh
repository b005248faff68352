#!/bin/sh
# tests/integration/cli_route.sh BUILD: test "sluice route" end to end.
#
# BUILD is the build directory (the program is BUILD/sluice). Runs the
# real program on a configuration and a transport table in a temporary
# directory and prints TAP (see lib/tap.sh).

LC_ALL=C
export LC_ALL
build=${1:-build}
sluice=$build/sluice
case $sluice in /*) ;; *) sluice=$(pwd)/$sluice ;; esac

. "$(dirname "$0")/lib/tap.sh"

# run ARGS...: run sluice, capturing stdout, stderr and the status.
run() {
    "$sluice" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

# check WHAT RC: the last run exited RC, stdout as in $tmp/want.out and
# stderr as in $tmp/want.err.
check() {
    if [ "$rc" -eq "$2" ] && cmp -s "$tmp/out" "$tmp/want.out" &&
        cmp -s "$tmp/err" "$tmp/want.err"; then
        ok "$1"
    else
        not_ok "$1"
        echo "# exit status $rc, expected $2"
        diff "$tmp/want.out" "$tmp/out" | sed 's/^/# stdout: /'
        diff "$tmp/want.err" "$tmp/err" | sed 's/^/# stderr: /'
    fi
}

cat >"$tmp/transport" <<'EOF'
# Routing for the tests.
example.com      relay:[10.0.0.1]:2525
.example.com     smtp:mx.example.net
Store.Example    lmtp:[store.example]:24
gone.example     error:5.1.1 this domain is gone
void.example     discard:
direct.example   :
EOF
cat >"$tmp/main.cf" <<EOF
transport_maps = $tmp/transport
relayhost = [smarthost.example]:587
EOF

# 1. Every kind of result, in the order given.
run -c "$tmp/main.cf" route user@example.com User@A.B.Example.COM \
    x@store.example y@gone.example z@void.example w@direct.example \
    v@elsewhere.org 'u@[192.0.2.1]' 't@[IPv6:2001:DB8::1]' '"a b"@example.com'
cat >"$tmp/want.out" <<'EOF'
user@example.com relay [10.0.0.1]:2525 relay:[10.0.0.1]:2525
User@A.B.Example.COM smtp mx.example.net smtp:mx.example.net
x@store.example lmtp store.example:24 lmtp:store.example:24
y@gone.example error "5.1.1 this domain is gone" "error:5.1.1 this domain is gone"
z@void.example discard "" discard:
w@direct.example smtp direct.example smtp:direct.example
v@elsewhere.org smtp [smarthost.example]:587 smtp:[smarthost.example]:587
u@[192.0.2.1] smtp [smarthost.example]:587 smtp:[smarthost.example]:587
t@[IPv6:2001:DB8::1] smtp [smarthost.example]:587 smtp:[smarthost.example]:587
"\"a b\"@example.com" relay [10.0.0.1]:2525 relay:[10.0.0.1]:2525
EOF
: >"$tmp/want.err"
check "route prints transport, next hop and queue key per address" 0

# 2. Without a relay host, the recipient's domain; literals go direct.
printf 'transport_maps = %s/transport\n' "$tmp" >"$tmp/norelay.cf"
run -c "$tmp/main.cf" route -c "$tmp/norelay.cf" v@Elsewhere.ORG \
    'u@[192.0.2.1]' 't@[IPv6:2001:DB8::1]'
cat >"$tmp/want.out" <<'EOF'
v@Elsewhere.ORG smtp elsewhere.org smtp:elsewhere.org
u@[192.0.2.1] smtp [192.0.2.1] smtp:[192.0.2.1]
t@[IPv6:2001:DB8::1] smtp [2001:db8::1] smtp:[2001:db8::1]
EOF
check "route -c wins over sluice -c; default route to the domain" 0

# 3. Built-in defaults, no file at all (SLUICE_CONFIG names an empty one).
: >"$tmp/empty.cf"
SLUICE_CONFIG=$tmp/empty.cf "$sluice" route someone@Example.NET \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "someone@Example.NET smtp example.net smtp:example.net" >"$tmp/want.out"
check "route with the built-in defaults" 0

# 4. A bad address: a message, the other addresses still printed, exit 1.
run -c "$tmp/main.cf" route postmaster user@example.com '' 'a@[1.2.3]'
echo "user@example.com relay [10.0.0.1]:2525 relay:[10.0.0.1]:2525" \
    >"$tmp/want.out"
cat >"$tmp/want.err" <<'EOF'
sluice: route: bad address "postmaster": no @domain
sluice: route: the null address has no route
sluice: route: bad address "a@[1.2.3]": bad address literal: expected [IPv4] or [IPv6:address]
EOF
check "a bad address is reported, the others printed, exit 1" 1

# 5. Without an address, route only checks the table.
run -c "$tmp/main.cf" route
: >"$tmp/want.out"
: >"$tmp/want.err"
check "route without an address checks the table and prints nothing" 0

# 6. A bad table: file and line, nothing printed, exit 1.
cp "$tmp/transport" "$tmp/bad"
printf 'example.org rleay:[10.0.0.2]\n' >>"$tmp/bad"
printf 'transport_maps = %s/bad\n' "$tmp" >"$tmp/bad.cf"
run -c "$tmp/bad.cf" route user@example.com
: >"$tmp/want.out"
echo "sluice: route: $tmp/bad, line 8: unknown transport \"rleay\"" \
    >"$tmp/want.err"
check "a bad table line names the file and the line" 1

printf 'example.com relay:[10.0.0.1]:2525\nEXAMPLE.com smtp:\n' >"$tmp/bad"
run -c "$tmp/bad.cf" route
echo "sluice: route: $tmp/bad, line 2: duplicate pattern \"example.com\" (first on line 1)" \
    >"$tmp/want.err"
check "a duplicate pattern names both lines" 1

printf 'transport_maps = %s/none\n' "$tmp" >"$tmp/none.cf"
run -c "$tmp/none.cf" route user@example.com
echo "sluice: route: $tmp/none: No such file or directory" >"$tmp/want.err"
check "a missing table is an error" 1

printf 'transports = smtp:smtp, relay:pigeon\n' >"$tmp/types.cf"
run -c "$tmp/types.cf" route user@example.com
echo 'sluice: route: transports: bad entry "relay:pigeon": unknown type: expected smtp, lmtp, discard, error or agent' \
    >"$tmp/want.err"
check "an unknown transport type is an error" 1

printf 'relayhost = 10.0.0.1\n' >"$tmp/relay.cf"
run -c "$tmp/relay.cf" route user@example.com
echo 'sluice: route: relayhost: bad value "10.0.0.1": an IP address needs brackets: [10.0.0.1]' \
    >"$tmp/want.err"
check "a bad relayhost is an error" 1

head -c 20000 /dev/urandom 2>/dev/null >"$tmp/bad"
run -c "$tmp/bad.cf" route user@example.com
if [ "$rc" -eq 1 ] && [ ! -s "$tmp/out" ] &&
    grep -q "^sluice: route: $tmp/bad" "$tmp/err"; then
    ok "a binary junk table is an error, not a crash"
else
    not_ok "a binary junk table is an error, not a crash (exit $rc)"
fi

# 7. A bad configuration file is reported as "sluice config" does.
printf 'relayhost = [a]\nmaximal_backoff_time = soon\n' >"$tmp/conf.cf"
run -c "$tmp/conf.cf" route user@example.com
echo "sluice: $tmp/conf.cf, line 2: maximal_backoff_time: bad value \"soon\": expected a time like 300s, 5m, 1h" \
    >"$tmp/want.err"
check "a bad configuration file is an error" 1

# 8. Usage and help.
run route -x
: >"$tmp/want.out"
printf '%s\n' 'sluice: route: unknown option -x' \
    'usage: sluice route [-c FILE] [ADDRESS...]' >"$tmp/want.err"
check "route with an unknown option is a usage error" 64

run help route
printf '%s\n' 'usage: sluice route [-c FILE] [ADDRESS...]' \
    'show the transport, next hop and queue of addresses' >"$tmp/want.out"
: >"$tmp/want.err"
check "help route prints its usage" 0

tap_done
