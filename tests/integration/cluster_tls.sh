#!/bin/sh
# cluster_tls.sh BUILD - a cluster on Redis over TLS (rediss://, decision
# 117): a real redis-server with --tls-port only (--port 0), its
# certificate from a CA made here with openssl, a password for the
# default user and an ACL user, started and stopped by its PID.
#   1. two daemons join over TLS, one as the ACL user with the address
#      checked against the certificate's IP address, one with the default
#      user's password and cluster_redis_tls_server_name; their mail flows
#      under leases that redis-cli --tls sees;
#   2. a suspension on one is in Redis; `sluice resume` on the other,
#      which has not pulled it yet, answers that it resumed it in the
#      cluster (it used to answer "no suspended destination");
#   3. a daemon whose Redis shows a certificate of another CA logs once
#      that it decides alone, with the verification's reason, sends that
#      Redis nothing (no AUTH: its password stays), and delivers; one
#      that reaches the right Redis at an address its certificate does
#      not name refuses it too;
#   4. a daemon whose "Redis" is a hostile TLS peer
#      (lib/tls_hostile.py: a handshake that never ends, a close in the
#      handshake, garbage after it, a close after it) stays up, logs
#      once, and delivers;
#   and sluice config refuses an unreadable cluster_redis_tls_CAfile; no
#   log line shows a password.
# Output is TAP; bounded waits; about 6 s.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need redis-server command -v redis-server
need redis-tools command -v redis-cli
need python3 test -x /usr/bin/python3
need openssl command -v openssl

. tests/integration/lib/daemon_lib.sh

# A CA, Redis's certificate (IP:127.0.0.1 and DNS:redis.test) and one of
# a rogue CA for the same names; EC keys, made in milliseconds.
ca=$tmp/ca
mkdir -p "$ca"
mkcert() { # mkcert NAME ISSUER: NAME.pem and NAME.key signed by ISSUER
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$ca/$1.key" -out "$ca/$1.csr" -subj "/CN=$1" 2>/dev/null &&
        printf 'subjectAltName=IP:127.0.0.1,DNS:redis.test\nextendedKeyUsage=serverAuth\n' \
            >"$ca/$1.ext" &&
        openssl x509 -req -in "$ca/$1.csr" -CA "$ca/$2.pem" -CAkey "$ca/$2.key" \
            -CAcreateserial -days 2 -extfile "$ca/$1.ext" -out "$ca/$1.pem" \
            2>/dev/null
}
mkca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$ca/$1.key" -out "$ca/$1.pem" -days 2 -subj "/CN=$1" \
        -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
}
if mkca testca && mkcert redis testca && mkca rogueca && mkcert rogue rogueca
then
    ok "a test CA and certificates"
else
    not_ok "a test CA and certificates"
    tap_done
fi

# start_redis NAME CERT [OPTION...]: redis-server on TLS alone, its port
# in $port_NAME
start_redis() {
    _name=$1 _cert=$2
    shift 2
    _port=$(free_port)
    redis-server --port 0 --tls-port "$_port" --tls-cert-file "$ca/$_cert.pem" \
        --tls-key-file "$ca/$_cert.key" --tls-ca-cert-file "$ca/testca.pem" \
        --tls-auth-clients no --save '' --appendonly no --daemonize no \
        "$@" >>"$tmp/$_name.log" 2>&1 &
    pids="$pids $!"
    eval "port_$_name=$_port"
    wait_for 10 listening "$_port"
}
start_redis redis redis --requirepass pw \
    --user alice on '>alicepw' '~*' '&*' '+@all' &&
    ok "redis-server listens on TLS alone" ||
    { not_ok "redis-server listens on TLS alone"; tap_done; }
start_redis rogue rogue || not_ok "the rogue redis-server listens"
rc() {
    redis-cli --tls --cacert "$ca/testca.pem" -h 127.0.0.1 -p "$port_redis" \
        -a pw --no-auth-warning "$@" 2>/dev/null
}

# lib/tls_hostile.py with a certificate of the test CA: the client's
# verification passes, what follows does not.
python3 tests/integration/lib/tls_hostile.py "$tmp/hostile.port" \
    "$ca/redis.pem" "$ca/redis.key" "$tmp/hostile.count" \
    2>"$tmp/hostile.err" &
pids="$pids $!"
wait_for 5 test -s "$tmp/hostile.port" || not_ok "tls_hostile.py listens"

lim_port=$(free_port)
start_count_sink lim "$lim_port" --data-delay 0.3 ||
    { not_ok "count_sink.py starts"; tap_done; }
cat >"$tmp/transport" <<EOF
lim.test relay:[127.0.0.1]:$lim_port
susp.test relay:[127.0.0.1]:$lim_port
EOF

# sluice config refuses a CAfile it cannot read.
printf 'queue_directory = %s/x\ncluster_redis_url = rediss://127.0.0.1:%s\ncluster_redis_tls_CAfile = %s/none.pem\n' \
    "$tmp" "$port_redis" "$tmp" >"$tmp/bad.conf"
"$build/sluice" -c "$tmp/bad.conf" config cluster_redis_url >/dev/null \
    2>"$tmp/bad.err"
expect "an unreadable cluster_redis_tls_CAfile is refused (exit 1)" \
    "1 sluice: cluster_redis_tls_CAfile $tmp/none.pem: cannot read: No such file or directory" \
    "$? $(cat "$tmp/bad.err")"

# a and b: lease time 30 s, so that b pulls the cluster's suspensions
# only at its start and every 10 s (part 2); c and d: 1 s, so that alone
# they deliver after one lease time.
conf() { # conf URL LEASE [LINE]
    printf 'cluster_redis_url = %s\ncluster_name = t%s\ncluster_lease_time = %s\ncluster_redis_timeout = 300ms\ncluster_redis_tls_CAfile = %s\nrelay_destination_concurrency_limit = 4\ntransports = smtp:smtp, relay:smtp\n%s\n' \
        "$1" "$$" "$2" "$ca/testca.pem" "${3:-}"
}
url_a="rediss://alice:alicepw@127.0.0.1:$port_redis"
url_b="rediss://:pw@127.0.0.1:$port_redis"
url_c="rediss://:secret@127.0.0.1:$port_rogue"
url_d="rediss://:pw@127.0.0.1:$(cat "$tmp/hostile.port")"
shown() { echo "$1" | sed 's/:[^:@/]*@/:***@/'; } # the logs' form
sluiced_start "$tmp/a" "$(conf "$url_a" 30s)" || not_ok "sluiced a starts"
sluiced_start "$tmp/b" "$(conf "$url_b" 30s \
    "cluster_redis_tls_server_name = redis.test")" || not_ok "sluiced b starts"
sluiced_start "$tmp/c" "$(conf "$url_c" 1s)" || not_ok "sluiced c starts"
sluiced_start "$tmp/d" "$(conf "$url_d" 1s)" || not_ok "sluiced d starts"
pid_d=$sluiced_pid
# e: the right Redis at an address its certificate does not carry
url_e="rediss://:pw@127.0.0.2:$port_redis"
sluiced_start "$tmp/e" "$(conf "$url_e" 1s)" || not_ok "sluiced e starts"

# 1. a and b join over TLS; mail flows under leases Redis holds.
joined() { grep -qF "cluster t$$: joined at $(shown "$2") as" "$tmp/$1/log"; }
if wait_for 5 joined a "$url_a" && wait_for 5 joined b "$url_b" &&
    [ "$(rc ZCARD "sluice:{t$$}:members")" = 2 ]; then
    ok "a (ACL user, IP address) and b (password, servername) join over TLS"
else
    not_ok "a (ACL user, IP address) and b (password, servername) join over TLS"
    tail -3 "$tmp/a/log" "$tmp/b/log" | sed 's/^/#   /'
fi
submit() { # submit DAEMON RCPT
    printf 'Subject: m\n\nbody\n' |
        "$build/sluice" -c "$tmp/$1/sluice.conf" sendmail -f s@sluice.test "$2"
}
for i in 1 2 3; do submit a "u$i@lim.test"; submit b "v$i@lim.test"; done
lease_key="sluice:{t$$}:lease:relay:[127.0.0.1]:$lim_port"
leased() { [ "$(rc ZCARD "$lease_key")" -ge 1 ]; }
wait_for 5 leased && ok "Redis holds the leases of their deliveries" ||
    not_ok "Redis holds the leases of their deliveries"
delivered() { [ "$(counter lim messages)" -ge "$1" ]; }
wait_for 10 delivered 6 && ok "a and b deliver their 6 messages" ||
    not_ok "a and b deliver their 6 messages ($(counter lim messages))"

# 2. Suspended on a, resumed on b before b has pulled it.
"$build/sluice" -c "$tmp/a/sluice.conf" suspend susp.test >/dev/null
in_redis() { [ "$(rc HGET "sluice:{t$$}:suspend" susp.test)" = 0 ]; }
wait_for 5 in_redis && ok "a's suspension is in Redis" ||
    not_ok "a's suspension is in Redis"
out=$("$build/sluice" -c "$tmp/b/sluice.conf" resume susp.test 2>&1)
expect "b resumes it in the cluster (exit 0)" \
    "0 resumed susp.test in cluster t$$" "$? $out"
gone() { [ -z "$(rc HGET "sluice:{t$$}:suspend" susp.test)" ]; }
wait_for 5 gone && ok "the resume deleted it in Redis" ||
    not_ok "the resume deleted it in Redis"

# 3. c: Redis with a rogue CA's certificate.
alone() {
    grep -F "cluster t$$: Redis at $(shown "$2") unavailable" "$tmp/$1/log"
}
wait_for 5 alone c "$url_c" >/dev/null
expect "c refuses the rogue certificate, logged once" \
    "1 warning: cluster t$$: Redis at rediss://:***@127.0.0.1:$port_rogue unavailable (TLS: Redis's certificate (CN=rogue, issuer CN=rogueca) does not verify: unable to get local issuer certificate): deciding alone with 1/1 of each destination's limit" \
    "$(alone c "$url_c" | wc -l) $(alone c "$url_c" | sed 's/^.*]: //')"
submit c w1@lim.test
wait_for 5 delivered 7 && ok "c delivers alone" || not_ok "c delivers alone"
expect "the rogue Redis got no command, no AUTH" "" \
    "$(redis-cli --tls --insecure -h 127.0.0.1 -p "$port_rogue" \
        INFO commandstats 2>/dev/null | grep -E '^cmdstat_(auth|eval)')"

wait_for 5 alone e "$url_e" >/dev/null
expect "e refuses a certificate without its address" \
    "TLS: Redis's certificate (CN=redis) does not name 127.0.0.2" \
    "$(alone e "$url_e" | sed 's/^.*unavailable (//; s/): deciding.*//')"

# 4. d: a hostile TLS peer.
submit d x1@lim.test
four() { [ "$(cat "$tmp/hostile.count")" -ge 4 ]; }
wait_for 10 four || not_ok "d met the four hostile peers"
kill -0 "$pid_d" &&
    ok "d survives a hostile TLS peer ($(cat "$tmp/hostile.count") connections)" ||
    not_ok "d survives a hostile TLS peer"
expect "d logs once that it decides alone" 1 "$(alone d "$url_d" | wc -l)"
wait_for 5 delivered 8 && ok "d delivers alone" || not_ok "d delivers alone"
expect "no log shows a password" "" \
    "$(grep -lE 'alicepw|:pw@|secret' "$tmp"/[abcde]/log)"
[ -n "${CLUSTER_KEEP:-}" ] && cp -r "$tmp" "$CLUSTER_KEEP"
tap_done
