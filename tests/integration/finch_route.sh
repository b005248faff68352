#!/bin/sh
# finch_route.sh BUILD - Finch's routing workers (issue 19,
# ../shared/seeds/finch-mta-scheduling.txt): "There are two important
# parts of an MTA that need a concurrent scheduler: routing (where you want
# concurrent DNS/LDAP/etc. lookups) and delivery". Under the finch
# scheduler a recipient's next hop is looked up before core/ schedules it:
# a message to a good domain, a domain whose name servers fail and a
# domain that does not exist is delivered, deferred and returned, each
# recipient once, the two failures without a delivery. Then the routing
# workers' own scheduler, next_router_job(): with router_worker_limit 3,
# max_message_concurrency 2 and scale_max_concurrency 0, a message to ten
# domains whose name server never answers (dnsmasq forwards hole.test to
# a socket that swallows every question) takes two workers, not three,
# and a second message gets the third ("A possible compromise is to use
# a FCFS scheduler up to some maximum concurrency per message"); sluice
# status shows 3 of 3 under way and 8 waiting. The daemon then stops with
# lookups still under way. Bounded in time (about 10 s). Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need dnsmasq-base command -v dnsmasq
need python3 command -v python3

. tests/integration/lib/daemon_lib.sh

port=$(free_port)
dns_port=$(free_port)
hole_port=$(free_port)
fail_port=$(free_port)
# Name servers that read every question and answer none (hole), or
# answer each with SERVFAIL, the question echoed (fail).
dns_peer() {
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
while True:
    q, peer = s.recvfrom(4096)
    if sys.argv[2] == "fail" and len(q) >= 12:
        flags = bytes([0x80 | (q[2] & 0x79), 0x82])  # QR, RD kept; RCODE 2
        s.sendto(q[:2] + flags + q[4:6] + bytes(6) + q[12:], peer)
' "$1" "$2" &
    pids="$pids $!"
}
dns_peer "$hole_port" hole
dns_peer "$fail_port" fail
dnsmasq --keep-in-foreground --conf-file=/dev/null --pid-file= \
    --port="$dns_port" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local=/test/ \
    --server="/hole.test/127.0.0.1#$hole_port" \
    --server="/fail.test/127.0.0.1#$fail_port" \
    --mx-host=good.test,mx.good.test,10 \
    --host-record=mx.good.test,127.0.0.1 \
    2>"$tmp/dnsmasq.log" &
pids="$pids $!"
start_count_sink good "$port" || { not_ok "the receiver starts"; tap_done; }

cat >"$tmp/transport" <<EOF
good.test smtp:good.test:$port
EOF
d=$tmp/run
sluiced_start "$d" "dns_servers = 127.0.0.1:$dns_port
smtp_delivery_scheduler = finch
router_worker_limit = 3
max_message_concurrency = 2
scale_max_concurrency = 0
minimal_backoff_time = 300s
maximal_backoff_time = 300s" ||
    { not_ok "sluiced starts"; sed 's/^/#   /' "$d/log"; tap_done; }
s() { "$build/sluice" -c "$d/sluice.conf" "$@"; }

printf 'Subject: three\n\nbody\n' |
    s sendmail -f s@sluice.test a@good.test b@fail.test c@nx.test
three_done() {
    [ "$(grep -c 'to=<[abc]@[a-z]*.test>.*status=' "$d/log")" -ge 3 ]
}
wait_for 10 three_done || not_ok "the three recipients have their outcomes"
grep -q 'to=<a@good.test>, relay=mx.good.test.*status=sent' "$d/log" &&
    ok "the good domain is delivered" || not_ok "the good domain is delivered"
grep -q 'to=<b@fail.test>, relay=none.*dsn=4.*status=deferred' "$d/log" &&
    ok "the failing name servers' domain is deferred, relay=none" ||
    not_ok "the failing name servers' domain is deferred, relay=none"
grep -q 'to=<c@nx.test>, relay=none.*dsn=5.*status=bounced' "$d/log" &&
    ok "the domain that does not exist is returned, relay=none" ||
    not_ok "the domain that does not exist is returned, relay=none"
expect "each recipient has one outcome" "1 1 1" \
    "$(for r in a@good b@fail c@nx; do grep -c "to=<$r.test>.*status=" "$d/log"; done | tr '\n' ' ' | sed 's/ $//')"
# A delivery that failed would have left fail.test's queue with its
# failure on record; routed first, no queue was ever made for either.
expect "no destination queue for the domains that did not resolve" "" \
    "$(s status --json | python3 -c '
import json, sys
for t in json.load(sys.stdin)["transports"]:
    for q in t["destinations"]:
        if q["name"] in ("fail.test", "nx.test"):
            print(q["name"])')"
expect "one message reached the receiver" 1 \
    "$(sed -n 's/.* messages=\([0-9]*\).*/\1/p' "$tmp/good.stats")"

# Ten domains that never resolve, in one message; then one more message.
rcpts=
for i in 1 2 3 4 5 6 7 8 9 10; do rcpts="$rcpts u@d$i.hole.test"; done
# shellcheck disable=SC2086
printf 'Subject: big\n\nbody\n' | s sendmail -f s@sluice.test $rcpts
printf 'Subject: small\n\nbody\n' | s sendmail -f s@sluice.test u@e.hole.test
routing() {
    s status --json | python3 -c '
import json, sys
r = json.load(sys.stdin)["routing"]
print(r["busy"], r["limit"], r["waiting"])'
}
routed() { [ "$(routing)" = "3 3 8" ]; }
wait_for 5 routed
expect "next_router_job: two workers for the big envelope, one for the next" \
    "3 3 8" "$(routing)"
s status | grep -q '^routing jobs: 3 of 3 under way, 8 waiting$' &&
    ok "sluice status shows the routing jobs" ||
    not_ok "sluice status shows the routing jobs"
kill "$sluiced_pid"
wait "$sluiced_pid"
grep -q 'panic\|ERROR: AddressSanitizer\|runtime error' "$d/log" &&
    { not_ok "stops cleanly with lookups under way"; grep 'panic\|Sanitizer\|runtime error' "$d/log" | head -5 | sed 's/^/#   /'; } ||
    ok "stops cleanly with lookups under way"
tap_done
