#!/bin/sh
# daemon_limits.sh BUILD - sluiced end to end on loopback against a
# counting receiver of our own (tests/integration/lib/count_sink.py):
# the connections open at each destination never exceed its concurrency
# limit (and do exceed one, so the limit is really tested), every message
# arrives exactly once; a server that closes an idle cached connection,
# silently or with a 421, costs no deferral and loses no mail.
# Bounded in time, stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 command -v python3

conc_ports="$(free_port) $(free_port) $(free_port)"
quiet_port=$(free_port)
polite_port=$(free_port)
crossing_port=$(free_port)
start_count_sink conc "$conc_ports" --data-delay 0.3 ||
    { not_ok "count_sink.py starts"; tap_done; }
start_count_sink quiet "$quiet_port" --idle-close 0.5 ||
    { not_ok "count_sink.py --idle-close starts"; tap_done; }
start_count_sink polite "$polite_port" --idle-close 0.5 \
    --idle-reply "421 4.4.2 idle timeout" ||
    { not_ok "count_sink.py --idle-reply starts"; tap_done; }
start_count_sink crossing "$crossing_port" --idle-close 0.5 \
    --idle-crossing "421 4.4.2 idle timeout" ||
    { not_ok "count_sink.py --idle-crossing starts"; tap_done; }

# c0..c2.test each to one port of the conc sink; the relay transport's
# own limit (4) overrides the default (20). Idle connections are kept 3 s,
# longer than the quiet and polite sinks keep them open (0.5 s).
window=4
q=$tmp/q
conf=$tmp/sluice.conf
: >"$tmp/transport"
d=0
for p in $conc_ports; do
    echo "c$d.test relay:[127.0.0.1]:$p" >>"$tmp/transport"
    d=$((d + 1))
done
cat >>"$tmp/transport" <<EOF
quiet.test relay:[127.0.0.1]:$quiet_port
polite.test relay:[127.0.0.1]:$polite_port
crossing.test relay:[127.0.0.1]:$crossing_port
EOF
cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen =
myhostname = host.test
transport_maps = $tmp/transport
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
relay_destination_concurrency_limit = $window
relay_initial_destination_concurrency = 2
smtp_connection_cache_time_limit = 3s
smtp_connection_cache_destinations = [127.0.0.1]:$quiet_port,
    [127.0.0.1]:$polite_port, [127.0.0.1]:$crossing_port
EOF
s() { "$build/sluice" -c "$conf" "$@"; }

"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 grep -q "started: queue" "$tmp/log"; then
    ok "sluiced -f starts and logs to stderr"
else
    not_ok "sluiced -f starts and logs to stderr"
    tap_done
fi

# submit FIRST LAST DOMAIN: messages FIRST..LAST, four submitters at a
# time, message i to u<i>@DOMAIN; DOMAIN is evaluated by sh with $2 = i.
submit() {
    i=$1
    while [ "$i" -le "$2" ]; do
        echo "$i"
        i=$((i + 1))
    done | xargs -P 4 -I '{}' sh -c \
        'printf "Subject: m%s\n\nbody\n" "$2" |
            "$0" -c "$1" sendmail -f sender@host.test "u$2@'"$3"'"' \
        "$build/sluice" "$conf" '{}'
}

queue_empty() { s queue | grep -q "Mail queue is empty"; }

# 1. 450 messages, one recipient each, 150 to each of c0..c2.test; the
# sink holds every end of data 0.3 s, so deliveries overlap and the
# windows grow from 2 towards the limit.
per=150
start=$(date +%s)
# shellcheck disable=SC2016
submit 0 $((3 * per - 1)) 'c$(($2 % 3)).test'
conc_done() {
    for p in $conc_ports; do
        [ "$(counter conc messages "$p")" -ge $per ] || return 1
    done
    queue_empty
}
if wait_for 30 conc_done; then
    ok "450 messages to 3 destinations delivered, the queue empties"
else
    not_ok "450 messages to 3 destinations delivered, the queue empties"
    sed 's/^/#   /' "$tmp/conc.stats"
    tail -20 "$tmp/log" | sed 's/^/#   /'
fi
echo "# part 1 took $(($(date +%s) - start)) s"
sed 's/^/# conc: /' "$tmp/conc.stats"
d=0
for p in $conc_ports; do
    max=$(counter conc max_open "$p")
    what="c$d.test: more than 1, at most $window connections at once"
    if [ "$max" -le $window ] && [ "$max" -gt 1 ]; then
        ok "$what"
    else
        not_ok "$what"
        echo "#   at most $max at once"
    fi
    expect "c$d.test: every message arrives" $per \
        "$(counter conc messages "$p")"
    d=$((d + 1))
done
ids=$(cut -d' ' -f2 "$tmp/conc.ids" | sort | uniq -c)
expect "450 distinct Message-IDs at the sink" $((3 * per)) \
    "$(echo "$ids" | grep -cv ' -$')"
expect "each message exactly once" $((3 * per)) \
    "$(echo "$ids" | awk '$1 == 1' | wc -l)"

# 2. A first batch leaves connections to quiet.test, polite.test and
# crossing.test in sluiced's cache (smtp_connection_cache_destinations:
# kept after every delivery, not only while more mail is coming); the sinks give up on them after 0.5 s
# idle (quiet.test closes silently, polite.test after a 421, crossing.test
# answers the next command with a 421, as if its idle timeout crossed our
# MAIL) while sluiced would keep them 3 s; a second batch must go out on
# new connections without a deferral.
batch=10
idle_names="quiet polite crossing"
idle_done() {
    for name in $idle_names; do
        [ "$(counter $name messages)" -ge "$1" ] || return 1
    done
    queue_empty
}
for name in $idle_names; do
    submit 1 $batch $name.test
done
if wait_for 10 idle_done $batch; then
    ok "first batch to quiet.test, polite.test and crossing.test delivered"
else
    not_ok "first batch to quiet.test, polite.test and crossing.test delivered"
fi
# All cached connections closed by the sinks, well before sluiced's 3 s.
idle_closed() {
    for name in quiet polite; do
        [ "$(counter $name open)" = 0 ] || return 1
    done
    # crossing.test keeps them open until the next command
    [ "$(counter crossing idle_closes)" = "$(counter crossing connections)" ]
}
wait_for 2 idle_closed
for name in $idle_names; do
    conns=$(counter $name connections)
    eval "first_$name=$conns"
    closes=$(counter $name idle_closes)
    if [ "$conns" -gt 0 ] && [ "$closes" = "$conns" ]; then
        ok "$name.test: the sink closed every cached connection"
    else
        not_ok "$name.test: the sink closed every cached connection"
        sed 's/^/#   /' "$tmp/$name.stats"
    fi
done
for name in $idle_names; do
    submit $((batch + 1)) $((2 * batch)) $name.test
done
if wait_for 10 idle_done $((2 * batch)); then
    ok "second batch delivered after the idle close"
else
    not_ok "second batch delivered after the idle close"
fi
for name in $idle_names; do
    sed "s/^/# $name: /" "$tmp/$name.stats"
    expect "$name.test: messages, distinct Message-IDs" \
        "$((2 * batch)) $((2 * batch))" \
        "$(counter $name messages) $(cut -d' ' -f2 "$tmp/$name.ids" |
            grep -v '^-$' | sort -u | wc -l)"
    conns=$(counter $name connections)
    first=$(eval echo \$first_$name)
    if [ "$conns" -gt "$first" ]; then
        ok "$name.test: new connections after the close"
    else
        not_ok "$name.test: new connections after the close"
        echo "#   $first connections before, $conns after"
    fi
    sent="to=<u[0-9]*@$name.test>, relay=.*, status=sent "
    expect "$name.test: every recipient logged as sent" $((2 * batch)) \
        "$(grep -c "$sent" "$tmp/log")"
done
deferred=$(grep -c 'status=deferred' "$tmp/log")
expect "no delivery deferred" 0 "$deferred"
[ "$deferred" = 0 ] || grep 'status=deferred' "$tmp/log" | head -5 |
    sed 's/^/#   /'

kill -TERM "$daemon"
wait "$daemon"
expect "sluiced stops on SIGTERM, exit status 0" 0 $?
tap_done
