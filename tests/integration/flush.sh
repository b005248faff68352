#!/bin/sh
# flush.sh BUILD - "sluice flush [DOMAIN]" end to end: mail deferred for
# a destination with nothing listening (declared dead) waits for its
# backoff (an hour here); once a receiver listens, a flush for that
# domain makes exactly its deferred messages due, revives the dead
# destination and they are delivered at once, while other mail keeps
# waiting; without a daemon, flush makes deferred mail due in the spool.
# Bounded in time, stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 command -v python3

dead_port=$(free_port)
other_port=$(free_port)
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$tmp/transport" <<EOF
dead.test relay:[127.0.0.1]:$dead_port
other.test relay:[127.0.0.1]:$other_port
EOF
cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen =
myhostname = host.test
transport_maps = $tmp/transport
minimal_backoff_time = 1h
maximal_backoff_time = 2h
EOF
s() { "$build/sluice" -c "$conf" "$@"; }

"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
if wait_for 10 grep -q "started: queue" "$tmp/log"; then
    ok "sluiced -f starts"
else
    not_ok "sluiced -f starts"
    tap_done
fi

# Six messages for dead.test (more than the initial window of five, so
# the destination is declared dead), one for other.test.
i=1
while [ $i -le 6 ]; do
    printf 'Subject: d%d\n\nbody\n' $i |
        s sendmail -f sender@host.test "u$i@dead.test"
    i=$((i + 1))
done
printf 'Subject: o1\n\nbody\n' | s sendmail -f sender@host.test o1@other.test
all_deferred() {
    [ "$(s queue | grep -c '^[0-9A-Z]\{8,\}')" = 7 ] &&
        [ "$(grep -c 'status=deferred' "$tmp/log")" -ge 7 ] &&
        ! s queue | grep -q '^[0-9A-Z]*\*'
}
if wait_for 15 all_deferred; then
    ok "seven messages deferred"
else
    not_ok "seven messages deferred"
    s queue | sed 's/^/#   /'
fi
grep -q "relay:\[127.0.0.1\]:$dead_port: destination dead after" "$tmp/log" &&
    ok "dead.test's destination declared dead" ||
    not_ok "dead.test's destination declared dead"

# A receiver appears; the backoff (an hour) has not passed: only a flush
# brings the mail out now.
python3 "$count_sink" --stats "$tmp/sink.stats" "$dead_port" \
    2>>"$tmp/sink.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/sink.stats"
s flush nowhere.test >"$tmp/flush.out" 2>&1
expect "flush for a domain with no mail: exit 0" 0 $?
expect "flush for a domain with no mail: nothing due" \
    "sluiced: 0 deferred messages for nowhere.test due now" "$(cat "$tmp/flush.out")"
s flush dead.test >"$tmp/flush.out" 2>&1
expect "flush dead.test: exit 0" 0 $?
expect "flush dead.test: its six messages due" \
    "sluiced: 6 deferred messages for dead.test due now" "$(cat "$tmp/flush.out")"
messages() { awk '{for (i = 1; i <= NF; i++) if ($i ~ /^messages=/) print substr($i, 10)}' "$tmp/sink.stats"; }
delivered() { [ "$(messages)" = 6 ]; }
if wait_for 10 delivered; then
    ok "dead.test's six messages delivered after the flush"
else
    not_ok "dead.test's six messages delivered after the flush"
    echo "#   the receiver has $(messages)"
fi
grep -q "relay:\[127.0.0.1\]:$dead_port: destination alive again (flush)" "$tmp/log" &&
    ok "the flush revived the dead destination" ||
    not_ok "the flush revived the dead destination"
grep -q "flush dead.test: 6 deferred messages due now" "$tmp/log" &&
    ok "the daemon logs the flush" || not_ok "the daemon logs the flush"
left() { [ "$(s queue | grep -c '^[0-9A-Z]\{8,\}')" = 1 ]; }
wait_for 10 left && ok "other.test's message still waits" ||
    not_ok "other.test's message still waits"

# Without a daemon the flush is done in the spool.
kill -TERM "$daemon"
wait "$daemon"
# ".domain" takes in its subdomains there too, as in the daemon
s flush .test >"$tmp/flush.out" 2>&1
expect "flush .test without a daemon: exit 0" 0 $?
expect "flush .test without a daemon: other.test's message due" \
    "sluiced is not running: 1 deferred messages for .test made due; they go out when it starts" \
    "$(cat "$tmp/flush.out")"
s flush .other.test.example >"$tmp/flush.out" 2>&1
expect "flush .other.test.example without a daemon: nothing" \
    "sluiced is not running: 0 deferred messages for .other.test.example made due; they go out when it starts" \
    "$(cat "$tmp/flush.out")"
s flush >"$tmp/flush.out" 2>&1
expect "flush without a daemon: exit 0" 0 $?
expect "flush without a daemon: the deferred message due" \
    "sluiced is not running: 1 deferred messages made due; they go out when it starts" \
    "$(cat "$tmp/flush.out")"
s flush a b >"$tmp/flush.out" 2>&1
expect "flush with two domains: usage error" 64 $?
tap_done
