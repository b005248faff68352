#!/bin/sh
# scripts/demo.sh BUILD - the main job, on loopback: sluiced delivering a
# mixed workload to four local receivers (Postfix's smtp-sink), with counts
# as the queue drains. Everything lives in a temporary directory that is
# removed at the end; only the processes started here are stopped.
#
# The daemon runs with the built-in defaults except for where mail goes:
# queue_directory (the temporary directory) and transport_maps (each demo
# domain to its local receiver), since a demo machine has no real MX, and
# its SMTP server's port (a free one, in case 2525 is taken). The list
# message comes through "sluice sendmail", the single messages over SMTP.
set -eu
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
sink=/usr/sbin/smtp-sink
[ -x "$sink" ] || { echo "demo: $sink not found: run bash .ci/install-deps" >&2; exit 1; }

tmp=$(mktemp -d /tmp/sluice-demo.XXXXXX)
chmod 711 "$tmp"
pids=
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

user_opt=
[ "$(id -u)" = 0 ] && user_opt="-u postfix"
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Run as root on a machine where "make install" made the user sluice,
# sluiced runs as that user (mail_owner): it must reach its queue.
chmod 755 "$tmp"
: >"$tmp/transport"
# Receivers that take a second to accept each message (-w 1), as a busy
# server does, so that the flow can be watched.
for d in 1 2 3 4; do
    port=$(free_port)
    # shellcheck disable=SC2086
    "$sink" $user_opt -w 1 "127.0.0.1:$port" 256 >/dev/null 2>&1 &
    pids="$pids $!"
    echo "d$d.demo relay:[127.0.0.1]:$port" >>"$tmp/transport"
done
smtp_port=$(free_port)
cat >"$tmp/sluice.conf" <<EOF
queue_directory = $tmp/queue
transport_maps = $tmp/transport
smtpd_listen = 127.0.0.1:$smtp_port
EOF
sleep 0.3

"$build/sluiced" -f -c "$tmp/sluice.conf" 2>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
i=0
until grep -q "started: queue" "$tmp/log"; do
    i=$((i + 1))
    [ $i -gt 100 ] && { cat "$tmp/log" >&2; exit 1; }
    sleep 0.1
done
echo "sluiced is running (pid $daemon), spool in $tmp/queue"

s() { "$build/sluice" -c "$tmp/sluice.conf" "$@"; }
start=$(date +%s.%N)

# A mailing list: one message to 2,000 recipients across the four domains.
rcpts=$(awk 'BEGIN { for (i = 1; i <= 2000; i++) printf "user%d@d%d.demo ", i, i % 4 + 1 }')
# shellcheck disable=SC2086
printf 'Subject: the monthly newsletter\n\nNews for everybody.\n' |
    s sendmail -f list@sender.demo $rcpts
# Then 50 single messages (password resets, receipts) to the same domains,
# over SMTP, one session, as an application would send them.
python3 - "$smtp_port" <<'PYEOF'
import smtplib, sys
with smtplib.SMTP("127.0.0.1", int(sys.argv[1])) as smtp:
    for i in range(1, 51):
        rcpt = "customer%d@d%d.demo" % (i, i % 4 + 1)
        smtp.sendmail("shop@sender.demo", [rcpt],
                      "Subject: your receipt %d\r\n\r\nThank you.\r\n" % i)
PYEOF
echo "submitted: 1 list message to 2000 recipients (sluice sendmail),"
echo "           then 50 single messages over SMTP (port $smtp_port)"

sent() { grep -c 'status=sent' "$tmp/log" || true; }
i=0
while :; do
    n=$(sent)
    left=$(s queue | tail -1)
    printf '%5.1fs  recipients delivered: %4d of 2050   queue: %s\n' \
        "$(echo "$(date +%s.%N) - $start" | bc)" "$n" "$left"
    [ "$n" -ge 2050 ] && s queue | grep -q "Mail queue is empty" && break
    i=$((i + 1))
    [ $i -gt 120 ] && { echo "demo: not drained after 60 s" >&2; exit 1; }
    sleep 0.5
done
echo
echo "The last lines of the daemon's log:"
tail -4 "$tmp/log"
small=$(grep 'to=<customer' "$tmp/log" | sed 's/.* delay=\([0-9.]*\),.*/\1/' | sort -n | tail -1)
bulk=$(grep 'to=<user' "$tmp/log" | sed 's/.* delay=\([0-9.]*\),.*/\1/' | sort -n | tail -1)
echo
echo "slowest single message: delay=${small}s; last list recipient: delay=${bulk}s"
kill -TERM "$daemon"
wait "$daemon" || true
grep "stopped:" "$tmp/log"
