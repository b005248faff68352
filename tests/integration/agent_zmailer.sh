#!/bin/sh
# agent_zmailer.sh BUILD - external agents under ZMailer's threads
# (issue 20: "an agent that crashes, hangs, speaks garbage or exits
# mid-job causes those recipients to be deferred (never lost, never
# marked delivered), and the thread restarts with a new agent after a
# backoff"). Transport mdir of the type agent under the zmailer
# scheduler, one thread-ring per host ($host in the command), retries on
# the rule's schedule (interval=1s): one agent is killed with SIGKILL in
# the middle of its job, one writes garbage. Each answers its first
# recipient first; that answer stands, the others are deferred, and the
# thread's next run, with a new agent (the test's file flag switched to
# good), delivers them: every recipient exactly once, by the daemon's log
# and by the agents' own record. A third host, whose agent behaves, gets
# its three messages down one agent. Bounded (about 4 s), stops only what
# it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 test -x /usr/bin/python3
chmod 711 "$tmp"
mkdir -m 777 "$tmp/w"

# The agent (lib/test_agent.py) misbehaves at the second recipient as
# w/mode.HOST says; "good" behaves.
agent=$(pwd)/tests/integration/lib/test_agent.py
printf 'mdir/*  interval=1s idlemax=30s\n\tcommand="%s %s/w $host"\n' \
    "$agent" "$tmp" >"$tmp/rules"
: >"$tmp/transport"
for c in kill garbage good; do
    echo "$c" >"$tmp/w/mode.$c.test"
    printf '%s.test mdir:\n' "$c" >>"$tmp/transport"
done
echo good >"$tmp/w/mode.good.test"
if sluiced_start "$tmp/d" "transports = smtp:smtp, mdir:agent
mdir_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules
queue_run_delay = 1s
agent_restart_delay = 1s"; then
    ok "sluiced starts an agent transport under zmailer"
else
    not_ok "sluiced starts an agent transport under zmailer"
    cat "$tmp/d/log"
    tap_done
fi
s() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
for c in kill garbage; do
    printf 'Subject: %s\n\nbody\n' "$c" |
        s sendmail -f s@sluice.test "r1@$c.test" "r2@$c.test" "r3@$c.test"
done
for i in 1 2 3; do
    printf 'Subject: good %s\n\nbody\n' $i | s sendmail -f s@sluice.test "g$i@good.test"
done

wait_for 5 test -s "$tmp/w/busy.kill.test" &&
    kill -KILL "$(cat "$tmp/w/busy.kill.test")"
failed() { grep -q "agent pid [0-9]* failed while delivering: $2" "$tmp/d/log" &&
    echo good >"$tmp/w/mode.$1.test"; }
wait_for 5 failed kill 'killed by signal 9' &&
    ok "an agent killed with SIGKILL: its failure is logged" ||
    not_ok "an agent killed with SIGKILL: its failure is logged"
wait_for 5 failed garbage 'protocol error' &&
    ok "an agent that writes garbage: a protocol error" ||
    not_ok "an agent that writes garbage: a protocol error"
grep -q 'to=<r2@kill.test>, relay=mdir, .*status=deferred (agent mdir\[[0-9]*\] failed: killed by signal 9)' \
    "$tmp/d/log" && ok "the recipients not answered are deferred, with why" ||
    not_ok "the recipients not answered are deferred, with why"

all_sent() { [ "$(grep -c 'status=sent' "$tmp/d/log")" -ge 9 ]; }
wait_for 8 all_sent && ok "every recipient is delivered after recovery" ||
    { not_ok "every recipient is delivered after recovery"; grep 'status=' "$tmp/d/log" | tail -4 | sed 's/^/#   /'; }
for r in r1@kill.test r2@kill.test r3@kill.test r1@garbage.test \
    r2@garbage.test r3@garbage.test g1@good.test g2@good.test g3@good.test; do
    got=$(grep -c "to=<$r>, .*status=sent" "$tmp/d/log")
    [ "$got" = 1 ] || echo "# $r: $got times sent"
done | grep -q . && not_ok "each recipient sent once in the log" ||
    ok "each recipient sent once in the log"
expect "the agents delivered each recipient once" \
    "$({
        for c in kill garbage; do
            for r in r1 r2 r3; do echo "$c.test $r@$c.test"; done
        done
        for i in 1 2 3; do echo "good.test g$i@good.test"; done
    } | sort)" \
    "$(sort "$tmp/w/delivered")"
grep -q 'to=<r1@kill.test>, relay=mdir, .*status=sent' "$tmp/d/log" &&
    [ "$(grep -c 'to=<r1@kill.test>' "$tmp/d/log")" = 1 ] &&
    ok "the answer given before the kill stands" ||
    not_ok "the answer given before the kill stands"
expect "the good host's three messages went down one agent" 1 \
    "$(grep 'to=<g[123]@good.test>' "$tmp/d/log" | grep -c 'conn_use=3,')"
expect "nothing bounced" 0 "$(grep -c 'status=bounced' "$tmp/d/log")"
kill "$sluiced_pid"
wait "$sluiced_pid"
expect "sluiced stops cleanly" 0 $?
grep -q 'panic\|ERROR: AddressSanitizer\|runtime error' "$tmp/d/log" &&
    not_ok "no panic" || ok "no panic"
tap_done
