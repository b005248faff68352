#!/bin/sh
# cluster.sh BUILD - three sluiced daemons, each with its own spool, as one
# cluster on a real redis-server (issue 22, doc/cluster.md): a Unix socket
# under $tmp, no TCP port, no persistence, started and stopped by its PID.
# Receivers are count_sink.py with a slow end of data (0.2 s), so that
# deliveries overlap and each receiver's max_open is the most connections
# it saw at once, idle connections included;
# relay_destination_concurrency_limit is 4, the on-demand connection
# cache at its default (the leases cover idle connections too, decision
# 111).
#   1. one daemon alone reaches the limit (4 at once);
#   2. the three together never exceed it, every message once, over
#      cached connections;
#   2a. the same limit against Postfix's smtpd answering 421 above 4
#      connections from one client (skipped without Postfix): 12
#      messages from the three, none refused;
#   3. a host one daemon found dead (a 421 greeting, under Finch) is not
#      tried by another before its retry time, nor before its own next
#      pull: its first sync brings the connection records (decision 121);
#   4. SIGKILL one daemon mid-run: its leases expire, the other two hold
#      the whole limit; restarted, it delivers what it had: nothing lost;
#   5. stop Redis mid-run, start it again: every message delivered exactly
#      once, the fallback and the rejoin logged by each daemon;
#   7. a reload naming another cluster moves a daemon there;
#   6. beside all this, a fourth daemon whose "Redis" is hostile
#      (lib/fake_redis.py) decides alone, says so once, stays up and
#      delivers.
#   3a. a destination one daemon found dead (its 421 greeting, under the
#      Postfix scheduler) is dead for the others until its revival: they
#      defer its mail without a connection; its revival (a flush on the
#      first, the receiver well again) revives it on the others;
#   3b. a rate of 4/s for the cluster (rated_destination_rate = 4/1s):
#      12 messages, 4 from each daemon at once, take 2 s;
#   3b'. a connection rate of 3/s for the cluster
#      (conned_destination_connection_rate = 3/1s): 12 messages, 4 from
#      each daemon at once; the connections opened follow the GCRA (a
#      burst of 3, then one each 333 ms), the messages share them;
#   3c. sluice suspend on one daemon holds the destination on another,
#      sluice resume on a third frees it there;
#   3d. one daemon cut off from Redis (a proxy in its path, stopped)
#      while the others reach it, under Finch: the receiver still sees at
#      most 4, idle workers included (decisions 120, 122);
#   8. a clean stop (SIGTERM) takes a daemon out of the cluster at once:
#      no longer a member, no lease held (decision 136).
# Output is TAP; bounded waits; about 30 s. CLUSTER_KEEP=DIR keeps a copy
# of the scratch directory (logs, counts) in DIR.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need redis-server command -v redis-server
need redis-tools command -v redis-cli
need python3 test -x /usr/bin/python3

. tests/integration/lib/daemon_lib.sh
PATH=$PATH:/usr/sbin:/sbin
have_postfix=
if command -v postfix >/dev/null && id postfix >/dev/null 2>&1 &&
    [ "$(id -u)" = 0 ]; then
    . tests/integration/lib/postfix_lib.sh
    have_postfix=1
fi

sock=$tmp/redis.sock
start_redis() {
    redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 \
        --save '' --appendonly no --daemonize no \
        >>"$tmp/redis.log" 2>&1 &
    redis_pid=$!
    pids="$pids $redis_pid"
    wait_for 10 rc PING
}
rc() { redis-cli -s "$sock" "$@" 2>/dev/null; }

start_redis && ok "redis-server listens on $sock" ||
    { not_ok "redis-server listens on $sock"; tap_done; }

lim_port=$(free_port)
all_port=$(free_port)
kill_port=$(free_port)
down_port=$(free_port)
rate_port=$(free_port)
conn_port=$(free_port)
susp_port=$(free_port)
part_port=$(free_port)
pf_port=$(free_port)
dead_port=$(free_port)
dq_port=$(free_port)
start_count_sink lim \
    "$lim_port $all_port $kill_port $down_port $rate_port $susp_port $conn_port $part_port" \
    --data-delay 0.2 || { not_ok "count_sink.py starts"; tap_done; }
start_count_sink dead "$dead_port" \
    --greeting "421 4.3.2 service not available" ||
    { not_ok "count_sink.py --greeting starts"; tap_done; }

# 2a's receiver: Postfix smtpd as the seed's 421 limiter
# (limiter_421.sh, TESTING-PEERS.md), 4 connections from one client at
# most (every daemon connects from 127.0.0.1), 1 s per recipient, mail
# discarded.
pf=$tmp/postfix
if [ -n "$have_postfix" ]; then
    chmod 711 "$tmp"
    postfix_start "$pf" "127.0.0.1:$pf_port inet n - n - 10 smtpd" <<EOF ||
myhostname = limiter.sluice-test.test
mynetworks = 127.0.0.0/8
smtpd_client_connection_count_limit = 4
smtpd_client_event_limit_exceptions =
smtpd_client_restrictions = sleep 1
default_transport = discard
local_transport = discard
EOF
        have_postfix=
fi

cat >"$tmp/transport" <<EOF
lim.test relay:[127.0.0.1]:$lim_port
all.test relay:[127.0.0.1]:$all_port
kill.test relay:[127.0.0.1]:$kill_port
down.test relay:[127.0.0.1]:$down_port
dead.test smtp:[127.0.0.1]:$dead_port
dq.test deadq:[127.0.0.1]:$dq_port
rate.test rated:[127.0.0.1]:$rate_port
conn.test conned:[127.0.0.1]:$conn_port
susp.test relay:[127.0.0.1]:$susp_port
pf.test relay:[127.0.0.1]:$pf_port
part.test frelay:[127.0.0.1]:$part_port
hostile.test relay:[127.0.0.1]:$susp_port
EOF
conf="cluster_redis_url = unix://$sock
cluster_name = t$$
cluster_lease_time = 1s
cluster_redis_timeout = 300ms
cluster_alone_time = 2s
queue_run_delay = 1s
minimal_backoff_time = 30s
maximal_backoff_time = 60s
relay_destination_concurrency_limit = 4
relay_initial_destination_concurrency = 4
smtp_delivery_scheduler = finch
transports = smtp:smtp, relay:smtp, rated:smtp, conned:smtp, deadq:smtp, frelay:smtp
frelay_delivery_scheduler = finch
frelay_destination_concurrency_limit = 4
frelay_initial_destination_concurrency = 4
frelay_idle_connection_max_age = 10s
frelay_connection_backlog_threshold = 1
deadq_initial_destination_concurrency = 1
rated_destination_rate = 4/1s
conned_destination_connection_rate = 3/1s"

# sluice config (and sluiced) refuse a URL that is not an IP address.
printf 'queue_directory = %s/x\ncluster_redis_url = redis://localhost:6379\n' \
    "$tmp" >"$tmp/bad.conf"
"$build/sluice" -c "$tmp/bad.conf" config cluster_redis_url >/dev/null \
    2>"$tmp/bad.err"
expect "a host name in cluster_redis_url is refused (exit 1)" \
    "1 sluice: cluster_redis_url: the host must be an IP address (a name would be looked up blocking the daemon)" \
    "$? $(cat "$tmp/bad.err")"

# c reaches Redis through lib/unix_proxy.py, which part 3d stops
# (SIGSTOP) to cut c alone off from Redis, and continues.
python3 tests/integration/lib/unix_proxy.py "$tmp/proxy.sock" "$sock" \
    2>"$tmp/proxy.err" &
proxy_pid=$!
pids="$pids $proxy_pid"
wait_for 5 test -S "$tmp/proxy.sock" || not_ok "unix_proxy.py listens"
start() { # start NAME: sluiced in $tmp/NAME, its pid in $pid_NAME
    if [ "$1" = c ]; then
        sluiced_start "$tmp/$1" "$(echo "$conf" |
            sed "s|^cluster_redis_url = .*|cluster_redis_url = unix://$tmp/proxy.sock|")" ||
            return 1
    else
        sluiced_start "$tmp/$1" "$conf" || return 1
    fi
    eval "pid_$1=$sluiced_pid"
}
for d in a b c; do
    start $d || { not_ok "sluiced $d starts"; tap_done; }
done
# h: a daemon whose "Redis" is hostile (lib/fake_redis.py: silence, a
# reply of the wrong shape, an error, a cut reply, 1 MB of garbage, a
# close), running beside the others: it must decide alone, say so once,
# stay up and deliver.
python3 tests/integration/lib/fake_redis.py "$tmp/fake.sock" \
    "$tmp/fake.count" 2>"$tmp/fake.err" &
pids="$pids $!"
wait_for 5 test -S "$tmp/fake.sock" || not_ok "fake_redis.py listens"
sluiced_start "$tmp/h" "$(echo "$conf" |
    sed "s|^cluster_redis_url = .*|cluster_redis_url = unix://$tmp/fake.sock|")" ||
    not_ok "sluiced h starts"
pid_h=$sluiced_pid
joined() { grep -qF "cluster t$$: joined at unix://" "$tmp/$1/log" 2>/dev/null; }
if wait_for 5 joined a && wait_for 5 joined b && wait_for 5 joined c; then
    ok "the three daemons join cluster t$$"
else
    not_ok "the three daemons join cluster t$$"
    tail -5 "$tmp/a/log" | sed 's/^/#   /'
fi

# submit DAEMON DOMAIN FIRST LAST: messages FIRST..LAST to u<i>@DOMAIN,
# eight at a time
submit() {
    i=$3
    while [ "$i" -le "$4" ]; do
        echo "$i"
        i=$((i + 1))
    done | xargs -P 8 -I '{}' sh -c \
        'printf "Message-ID: <%s.%s@t>\nSubject: m\n\nbody\n" "$2" "$3" |
            "$0" -c "$1" sendmail -f s@sluice.test "u$3@$2"' \
        "$build/sluice" "$tmp/$1/sluice.conf" "$2" '{}'
}
# each DOMAIN PER: PER messages to DOMAIN from each of a, b, c at once
each() {
    submit a "$1" 1 "$2" &
    _a=$!
    submit b "$1" $(($2 + 1)) $((2 * $2)) &
    _b=$!
    submit c "$1" $((2 * $2 + 1)) $((3 * $2))
    wait "$_a"
    wait "$_b"
}
# delivered NAME COUNT: the receiver port of NAME took COUNT messages
port_of() { eval "echo \$${1}_port"; }
delivered() { [ "$(counter lim messages "$(port_of "$1")")" -ge "$2" ]; }
max_open() { counter lim max_open "$(port_of "$1")"; }
# once DOMAIN COUNT: COUNT distinct Message-IDs of DOMAIN, each once
once() {
    expect "$1: $2 messages, each exactly once" "$2 $2" \
        "$(grep -F "<$1." "$tmp/lim.ids" | cut -d' ' -f2 | sort | uniq -c |
            awk '{ n++; if ($1 == 1) one++ } END { print n + 0, one + 0 }')"
}

# 1. One daemon alone reaches the limit.
submit a lim.test 1 12
wait_for 15 delivered lim 12 || not_ok "12 messages from a arrive"
expect "one daemon alone reaches the limit of 4" 4 "$(max_open lim)"

# 2. The three together never exceed it.
each all.test 15
wait_for 20 delivered all 45 || not_ok "45 messages from a, b, c arrive"
max=$(max_open all)
if [ "$max" -le 4 ] && [ "$max" -ge 3 ]; then
    ok "three daemons together: at most 4 connections at once ($max)"
else
    not_ok "three daemons together: at most 4 connections at once ($max)"
fi
once all.test 45
conns=$(counter lim connections "$all_port")
[ "$conns" -lt 30 ] && ok "all.test: connections reused ($conns for 45)" ||
    not_ok "all.test: connections reused ($conns for 45)"

# 2a. The same limit against Postfix's smtpd, which answers 421 above 4
# connections from one client: 12 messages, 4 from each daemon at once,
# 1 s each at the receiver, go in the background while parts 3 to 3c
# run, and none is refused.
if [ -n "$have_postfix" ] && wait_for 10 listening "$pf_port"; then
    each pf.test 4 &
    pf_bg=$!
else
    pf_bg=
fi

# 3. A host a found dead is not tried by b before its retry time.
submit a dead.test 1 1
dead_known() { rc HGETALL "sluice:{t$$}:hosts" | grep -qF "127.0.0.1:$dead_port"; }
wait_for 10 dead_known &&
    ok "a publishes the dead host" || not_ok "a publishes the dead host"
# a's failed and closed connection, as connection records (decision 121)
expect "a's connection records of the dead host: a failure, a close" "1 1" \
    "$(rc LRANGE "sluice:{t$$}:recent" 0 -1 | grep -F ":$pid_a F 127.0.0.1:$dead_port " | wc -l) $(rc LRANGE "sluice:{t$$}:recent" 0 -1 | grep -F ":$pid_a C 127.0.0.1:$dead_port " | wc -l)"
# at once, not after b's next pull of the hosts (every lease time / 3):
# b's first sync for its new queue brings a's records before b's first try
submit b dead.test 2 2
wait_for 10 grep -qF "no host of 127.0.0.1 may be tried" \
    "$tmp/b/log" && ok "b defers dead.test without trying the host" ||
    not_ok "b defers dead.test without trying the host"
expect "the dead host saw one connection, a's" 1 \
    "$(counter dead connections "$dead_port")"

# 3a. A destination a found dead (one failed pseudo-cohort at window 1)
# is dead on b until its revival; a's revival revives it on b.
start_count_sink dq "$dq_port" --greeting "421 4.3.2 busy" ||
    not_ok "count_sink.py for dq.test starts"
dq_pid=${pids##* }
submit a dq.test 1 1
dq_key="deadq:[127.0.0.1]:$dq_port"
dq_known() { rc HGET "sluice:{t$$}:dead" "$dq_key" | grep -qF "421 4.3.2 busy"; }
wait_for 10 dq_known && ok "a publishes dq.test dead, with its reason" ||
    not_ok "a publishes dq.test dead, with its reason"
sleep 0.5 # b's next pull (every lease time / 3)
submit b dq.test 2 2 # makes b's queue, dead from the cluster's set
wait_for 5 grep -qF "to=<u2@dq.test>" "$tmp/b/log"
expect "b defers dq.test with a's reason, without a connection" "1 1" \
    "$(grep -F "to=<u2@dq.test>" "$tmp/b/log" |
        grep -cF "delivery temporarily suspended: host 127.0.0.1[127.0.0.1] refused to talk to me: 421 4.3.2 busy") $(counter dq connections)"
kill "$dq_pid"
start_count_sink dq2 "$dq_port" || not_ok "a good receiver for dq.test"
"$build/sluice" -c "$tmp/a/sluice.conf" flush >/dev/null
alive_by_cluster() {
    grep -qF "$dq_key: destination alive again (by the cluster)" "$tmp/$1/log"
}
wait_for 5 alive_by_cluster b && ok "a's revival of dq.test reaches b" ||
    not_ok "a's revival of dq.test reaches b"
submit b dq.test 3 3
wait_for 5 grep -qF "to=<u3@dq.test>" "$tmp/b/log"
expect "b delivers to dq.test again" 1 \
    "$(grep -F "to=<u3@dq.test>" "$tmp/b/log" | grep -cF "status=sent")"

# 3b. A rate of 4 per second for the cluster: 12 messages, 4 from each
# daemon at once, take 2 s (a burst of 4, then one each 250 ms), where
# each daemon alone would send its 4 at once.
each rate.test 4
wait_for 10 delivered rate 12 || not_ok "12 messages to rate.test arrive"
sent_span() {
    grep -h "@rate.test>.*status=sent" "$tmp"/[abc]/log |
        sed 's/^[0-9-]*T\([0-9:.]*\)+.*/\1/' | sort |
        awk -F: '{ t = $1 * 3600 + $2 * 60 + $3; if (NR == 1) f = t; l = t }
            END { printf "%d %.1f\n", NR, l - f }'
}
span=$(sent_span)
if [ "${span%% *}" = 12 ] && awk -v s="${span#* }" 'BEGIN { exit !(s >= 1.6 && s <= 4) }'; then
    ok "rate.test: 12 deliveries at 4/s for the cluster over ${span#* } s"
else
    not_ok "rate.test: 12 deliveries at 4/s for the cluster (got: $span)"
fi

# 3b'. A connection rate of 3 per second for the cluster: the deliveries
# that opened a connection (no conn_use in their line), in time order,
# are each at least (i - 3) / 3 s after the first (less 150 ms for the
# log's own jitter); each daemon alone would open its 4 at once.
each conn.test 4
wait_for 10 delivered conn 12 || not_ok "12 messages to conn.test arrive"
conn_spacing() {
    grep -h "@conn.test>.*status=sent" "$tmp"/[abc]/log | grep -vF conn_use= |
        sed 's/^[0-9-]*T\([0-9:.]*\)+.*/\1/' | sort |
        awk -F: '{ t = $1 * 3600 + $2 * 60 + $3; if (NR == 1) f = t
                   if (t - f < (NR - 3) / 3 - 0.15) bad++ }
            END { printf "%d %d\n", NR, bad + 0 }'
}
spacing=$(conn_spacing)
conns=$(counter lim connections "$conn_port")
if [ "${spacing#* }" = 0 ] && [ "${spacing%% *}" = "$conns" ] &&
    [ "$conns" -ge 3 ] && [ "$conns" -lt 12 ]; then
    ok "conn.test: $conns connections for 12 messages at 3/s for the cluster"
else
    not_ok "conn.test: connections at 3/s (got: opened, too soon: $spacing; receiver: $conns)"
    grep -h "@conn.test>.*status=sent" "$tmp"/[abc]/log | sed 's/^/#   /'
fi

# 3c. sluice suspend on a holds susp.test in b; sluice resume on c frees it.
"$build/sluice" -c "$tmp/a/sluice.conf" suspend susp.test >/dev/null
by_cluster() { grep -qF "cluster t$$: $2 susp.test: by the cluster" "$tmp/$1/log"; }
wait_for 5 by_cluster b suspend &&
    ok "a's suspension of susp.test reaches b" ||
    not_ok "a's suspension of susp.test reaches b"
submit b susp.test 1 1
wait_for 5 grep -qF "to=<u1@susp.test>" "$tmp/b/log"
expect "b defers mail for the suspended destination" 1 \
    "$(grep -F "to=<u1@susp.test>" "$tmp/b/log" |
        grep -cF "delivery temporarily suspended")"
wait_for 5 by_cluster c suspend
"$build/sluice" -c "$tmp/c/sluice.conf" resume susp.test >/dev/null
wait_for 5 by_cluster b resume && ok "c's resume reaches b" ||
    not_ok "c's resume reaches b"
wait_for 10 delivered susp 1 && ok "b delivers susp.test once resumed" ||
    not_ok "b delivers susp.test once resumed"

# 2a, its results: every message sent, none deferred, no 421 logged by
# Postfix.
pf_count() { cat "$tmp"/[abc]/log | grep -F "@pf.test>" | grep -cF "$1"; }
if [ -n "$pf_bg" ]; then
    wait "$pf_bg"
    pf_sent() { [ "$(pf_count status=sent)" -ge 12 ]; }
    wait_for 15 pf_sent
    expect "pf.test via Postfix's 421 limiter: 12 sent, none deferred, no 421" \
        "12 0 0" "$(pf_count status=sent) $(pf_count status=deferred) $(grep -c 'too many connections\|Connection concurrency limit exceeded' "$pf/maillog")"
else
    ok "pf.test via Postfix's 421 limiter # SKIP no Postfix (or not root)"
fi

# 3d. A partition, under Finch: c alone is cut off from Redis (its proxy
# stopped) mid-run, while a and b still reach it. Finch's idle workers
# (kept 10 s) count against the leases as the connections they are
# (decision 122): without that, a daemon whose jobs ended kept its idle
# workers open while the others took the leases. c goes on with its share (1 of
# 4, three members); a and b keep holding that share for c, which they
# see missing, not gone, for cluster_alone_time (decision 120): the
# receiver never sees more than 4 (without that, a and b took all 4
# once c's leases expired, and c its 1: 5).
logged() { grep -cF "$2" "$tmp/$1/log"; }
alone() { [ "$(logged "$1" "cluster t$$: Redis at unix://")" -ge "$2" ]; }
rejoined() { [ "$(logged "$1" "cluster t$$: rejoined")" -ge "$2" ]; }
submit a part.test 1 20 &
_a=$!
submit b part.test 21 40 &
_b=$!
wait "$_a"
wait "$_b"
wait_for 10 delivered part 4
kill -STOP "$proxy_pid"
if wait_for 3 alone c 1; then
    ok "c, cut off from Redis, decides alone"
else
    not_ok "c, cut off from Redis, decides alone"
fi
# c's mail comes after the cut: it waits out c's grace (its leases are
# good in Redis), then goes at c's share while a and b deliver theirs
submit c part.test 41 45
wait_for 15 delivered part 45 || not_ok "45 messages to part.test arrive"
kill -CONT "$proxy_pid"
max=$(max_open part)
[ "$max" -le 4 ] && ok "part.test, c cut off: at most 4 at once ($max)" ||
    not_ok "part.test, c cut off: at most 4 at once ($max)"
wait_for 5 rejoined c 1 && ok "c rejoins when its path heals" ||
    not_ok "c rejoins when its path heals"
once part.test 45

# 4. SIGKILL c mid-run.
each kill.test 20
wait_for 10 delivered kill 6
kill -KILL "$pid_c"
# more for a, so that a and b still want all 4 when c is gone: the
# cluster holds c's share for cluster_alone_time after its heartbeat
# ends, as for a member cut off (decision 120)
submit a kill.test 61 85 &
_a=$!
leases() { rc ZRANGE "sluice:{t$$}:lease:relay:[127.0.0.1]:$kill_port" 0 -1; }
c_gone() {
    l=$(leases)
    ! echo "$l" | grep -qF ":$pid_c:" && [ "$(echo "$l" | grep -c .)" = 4 ]
}
if wait_for 8 c_gone; then
    ok "c's leases expire, a and b hold all 4"
else
    not_ok "c's leases expire, a and b hold all 4"
    leases | sed 's/^/#   /'
fi
wait "$_a"
start c || not_ok "c starts again on its spool"
distinct() { grep -F "<$1." "$tmp/lim.ids" | cut -d' ' -f2 | sort -u | wc -l; }
kill_all() { [ "$(distinct kill.test)" -ge 85 ]; }
wait_for 20 kill_all
expect "kill.test: nothing lost" 85 "$(distinct kill.test)"

# 5. Redis stops mid-run and comes back.
each down.test 15
wait_for 10 delivered down 6
kill "$redis_pid"
if wait_for 5 alone a 1 && wait_for 5 alone b 1 && wait_for 5 alone c 1; then
    ok "each daemon logs that it decides alone"
else
    not_ok "each daemon logs that it decides alone"
fi
expect "logged once by a" 1 "$(grep -cF "cluster t$$: Redis at" "$tmp/a/log")"
start_redis || not_ok "redis-server starts again"
if wait_for 5 rejoined a 1 && wait_for 5 rejoined b 1 && wait_for 5 rejoined c 1
then
    ok "each daemon logs that it rejoined"
else
    not_ok "each daemon logs that it rejoined"
fi
wait_for 20 delivered down 45 || not_ok "45 messages to down.test arrive"
once down.test 45
max=$(max_open down)
[ "$max" -le 4 ] && ok "down.test: at most 4 at once ($max)" ||
    not_ok "down.test: at most 4 at once ($max)"
# h, after the rest: five hostile answers seen, up, alone, delivering.
submit h hostile.test 1 1
fake_done() { [ "$(cat "$tmp/fake.count")" -ge 5 ]; }
wait_for 10 fake_done || not_ok "h connected to the fake 5 times"
kill -0 "$pid_h" && ok "h survives a hostile Redis ($(cat "$tmp/fake.count") connections)" ||
    not_ok "h survives a hostile Redis"
expect "h logs once that it decides alone: no reply in time" 1 \
    "$(grep -cF "cluster t$$: Redis at unix://$tmp/fake.sock unavailable (no reply within 300 ms)" "$tmp/h/log")"
hostile_sent() { grep -qF "<hostile.test." "$tmp/lim.ids"; }
wait_for 5 hostile_sent
expect "h delivers alone" 1 "$(grep -cF "<hostile.test." "$tmp/lim.ids")"
# 7. A reload that names another cluster: a leaves t$$ for t$$b, joins
# it (alone there) and delivers.
sed -i "s/^cluster_name = t$$\$/cluster_name = t$$""b/" "$tmp/a/sluice.conf"
"$build/sluice" -c "$tmp/a/sluice.conf" reload >/dev/null 2>&1
moved() { grep -qF "cluster t$$""b: rejoined at unix://$sock" "$tmp/a/log"; }
if wait_for 5 moved && [ "$(rc ZCARD "sluice:{t$$""b}:members")" = 1 ]; then
    ok "a reload moves a to cluster t$$""b"
else
    not_ok "a reload moves a to cluster t$$""b"
fi
submit a all.test 46 46
wait_for 5 delivered all 46
expect "a delivers in t$$""b" 1 "$(grep -cF "<all.test.46@t>" "$tmp/lim.ids")"
# 8. A clean stop takes b out of the cluster at once (decision 136): its
# last sync gives its leases back and removes it from the members, so c
# need not hold b's share for cluster_alone_time.
b_member=$(rc ZRANGE "sluice:{t$$}:members" 0 -1 | grep ":$pid_b\$")
kill -TERM "$pid_b"
b_stopped() { ! kill -0 "$pid_b" 2>/dev/null; }
wait_for 10 b_stopped || not_ok "b stops on SIGTERM"
if grep -qF "cluster t$$: left, leases given back, as $b_member" "$tmp/b/log" &&
    [ -n "$b_member" ] &&
    ! rc ZRANGE "sluice:{t$$}:members" 0 -1 | grep -qxF "$b_member" &&
    [ -z "$(rc HGET "sluice:{t$$}:seen" "$b_member")" ]; then
    ok "a clean stop leaves the cluster: b is no member, its count gone"
else
    not_ok "a clean stop leaves the cluster: b is no member, its count gone"
    grep -F "cluster t$$" "$tmp/b/log" | tail -3 | sed 's/^/#   /'
fi
b_leases=$(for k in $(rc KEYS "sluice:{t$$}:lease:*"); do rc ZRANGE "$k" 0 -1; done |
    grep -cF "$b_member:")
expect "b holds no lease after its stop" 0 "$b_leases"
[ -n "${CLUSTER_KEEP:-}" ] && cp -r "$tmp" "$CLUSTER_KEEP"
tap_done
