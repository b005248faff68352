#!/bin/sh
# expiry.sh BUILD - mail past maximal_queue_lifetime is returned to its
# sender in every state: a deferred message (its destination refuses) at
# the end of a pass, a held one and a deferred one not yet due by the
# sweep at each queue run; the sender gets one failure notice per message
# (Status 4.4.7) unless it asked for none (NOTIFY=NEVER); nothing stays.
# Shortened times: a 4 s lifetime, 1 s queue runs, 3 s backoff (so that
# the sweep, not a retry, finds the deferred ones too old). Bounded, loopback
# only, stops only what it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 command -v python3

# Notices to senders at home.test reach a counting receiver.
home_port=$(free_port)
python3 "$count_sink" --stats "$tmp/home.stats" --ids "$tmp/home.ids" \
    "$home_port" 2>>"$tmp/home.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/home.stats" || { not_ok "count_sink.py starts"; tap_done; }
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$tmp/transport" <<EOF
home.test relay:[127.0.0.1]:$home_port
far.test relay:[127.0.0.1]:$(free_port)
EOF
cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen =
myhostname = host.test
transport_maps = $tmp/transport
maximal_queue_lifetime = 4s
queue_run_delay = 1s
minimal_backoff_time = 3s
maximal_backoff_time = 3s
EOF
s() { "$build/sluice" -c "$conf" "$@"; }

"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
wait_for 10 grep -q "started: queue" "$tmp/log" && ok "sluiced -f starts" ||
    { not_ok "sluiced -f starts"; tap_done; }

# Three messages to a destination that refuses; one of them will be held,
# one asks for no notice.
printf 'Subject: e1\n\nbody\n' | s sendmail -f a@home.test x1@far.test
printf 'Subject: e2\n\nbody\n' | s sendmail -f b@home.test x2@far.test
printf 'Subject: e3\n\nbody\n' | s sendmail -N never -f c@home.test x3@far.test
# Hold b@'s message once its first attempt has failed (it then waits 3 s).
id2() {
    s queue --json | sed -n 's/^{"queue_name": "deferred", "queue_id": "\([0-9A-Z]*\)".*"sender": "b@home.test".*/\1/p'
}
wait_for 10 sh -c "$build/sluice -c $conf queue --json | grep -q '\"deferred\".*\"sender\": \"b@home.test\"'"
s hold "$(id2)" >/dev/null 2>&1
expect "one message held" 1 "$(s queue --json | grep -c '"hold".*"sender": "b@home.test"')"

empty() { s queue | grep -q "Mail queue is empty"; }
if wait_for 20 empty; then
    ok "every message expired and removed"
else
    not_ok "every message expired and removed"
    s queue | sed 's/^/#   /'
fi
expect "three expiries logged" 3 \
    "$(grep -c ': from=<[abc]@home.test>, status=expired, returned to sender$' "$tmp/log")"
grep -q 'to=<x2@far.test>, relay=none, .*dsn=4.4.7, status=bounced (message expired: ' "$tmp/log" &&
    ok "the held message's recipient returned (4.4.7)" ||
    not_ok "the held message's recipient returned (4.4.7)"
notices() { awk '{for (i = 1; i <= NF; i++) if ($i ~ /^messages=/) print substr($i, 10)}' "$tmp/home.stats"; }
wait_for 10 sh -c "[ \"\$(awk '{for (i = 1; i <= NF; i++) if (\$i ~ /^messages=/) print substr(\$i, 10)}' '$tmp/home.stats')\" -ge 2 ]"
expect "two notices (NOTIFY=NEVER gets none)" 2 "$(notices)"
expect "notices logged for a@ and b@ only" 2 \
    "$(grep -c ': sender non-delivery notification: ' "$tmp/log")"
kill -TERM "$daemon"
wait "$daemon"
expect "sluiced stops, exit 0" 0 $?
tap_done
