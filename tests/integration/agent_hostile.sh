#!/bin/sh
# agent_hostile.sh BUILD - external agents that fail (decision 132): one
# killed with SIGKILL in the middle of a job, one that hangs past
# agent_time_limit, one that writes garbage (and a line on its standard
# error), one that exits in the middle of a job, one that floods its
# output without a newline, one whose answers pass agent_output_limit.
# Each answers its first recipient and then fails; that answer stands,
# the others are deferred, never marked delivered; after the backoff a
# new agent (the test's file flag switched to good) delivers them: every
# recipient is delivered exactly once (the daemon's log and the agent's
# own record agree), and no agent is left running or a zombie (the
# agents are the spawner's children, decision 134). The
# agents' environment is the fixed small set. One agent per host ($host
# in the command), so the cases run side by side. Bounded in time, stops
# only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 test -x /usr/bin/python3
chmod 711 "$tmp"
mkdir -m 777 "$tmp/w"
cases="kill hang garbage exit flood big"

# The agent (lib/test_agent.py) misbehaves from its second recipient on
# as w/mode.HOST says; "good" behaves.
agent=$(pwd)/tests/integration/lib/test_agent.py
printf 'mdir/*  command="%s %s/w $host"\n' "$agent" "$tmp" >"$tmp/rules"
: >"$tmp/transport"
for c in $cases; do
    echo "$c" >"$tmp/w/mode.$c.test"
    printf '%s.test mdir:\n' "$c" >>"$tmp/transport"
done
if sluiced_start "$tmp/d" "transports = smtp:smtp, mdir:agent
scheduler_rules = $tmp/rules
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
mdir_agent_time_limit = 1s
agent_restart_delay = 1s
agent_output_line_limit = 512
agent_output_limit = 1024"; then
    ok "sluiced starts"
else
    not_ok "sluiced starts"
    cat "$tmp/d/log"
    tap_done
fi
for c in $cases; do
    printf 'Subject: %s\n\nbody\n' "$c" |
        "$build/sluice" -c "$tmp/d/sluice.conf" sendmail -f s@sluice.test \
            "r1@$c.test" "r2@$c.test" "r3@$c.test"
done

# The one to kill says where it is; SIGKILL in the middle of its job.
wait_for 5 test -s "$tmp/w/busy.kill.test" &&
    kill -KILL "$(cat "$tmp/w/busy.kill.test")"
failed() { grep -q "agent pid [0-9]* failed while delivering: $2" "$tmp/d/log" &&
    echo good >"$tmp/w/mode.$1.test"; }
wait_for 5 failed kill 'killed by signal 9' &&
    ok "an agent killed with SIGKILL: its failure is logged" ||
    not_ok "an agent killed with SIGKILL: its failure is logged"
wait_for 5 failed hang 'still at its job after the time limit of 1000 ms' &&
    ok "an agent that hangs: killed at agent_time_limit" ||
    not_ok "an agent that hangs: killed at agent_time_limit"
wait_for 5 failed garbage 'protocol error: expected a recipient number: "this is not the protocol"' &&
    ok "an agent that writes garbage: a protocol error" ||
    not_ok "an agent that writes garbage: a protocol error"
grep -q -F 'mdir[' "$tmp/d/log" &&
    grep -q 'agent pid [0-9]*: stderr: garbage coming' "$tmp/d/log" &&
    ok "its standard error is in the log" ||
    not_ok "its standard error is in the log"
wait_for 5 failed exit 'exited with status 3' &&
    ok "an agent that exits in the middle of a job" ||
    not_ok "an agent that exits in the middle of a job"
wait_for 5 failed flood 'a line longer than 512 bytes' &&
    ok "an agent that floods its output hits agent_output_line_limit" ||
    not_ok "an agent that floods its output hits agent_output_line_limit"
wait_for 5 failed big 'more than 1024 bytes of output for one job' &&
    ok "answers past agent_output_limit" ||
    not_ok "answers past agent_output_limit"
grep -q 'to=<r2@kill.test>, relay=mdir, .*status=deferred (agent mdir\[[0-9]*\] failed: killed by signal 9)' \
    "$tmp/d/log" && ok "the recipients not answered are deferred, with why" ||
    not_ok "the recipients not answered are deferred, with why"

all_sent() {
    [ "$(grep -c 'status=sent' "$tmp/d/log")" -ge 18 ]
}
wait_for 8 all_sent && ok "every recipient is delivered after recovery" ||
    not_ok "every recipient is delivered after recovery"
for c in $cases; do
    for r in r1 r2 r3; do
        got=$(grep -c "to=<$r@$c.test>, .*status=sent" "$tmp/d/log")
        [ "$got" = 1 ] || echo "# $r@$c.test: $got times sent"
    done
done | grep -q . && not_ok "each recipient sent once in the log" ||
    ok "each recipient sent once in the log"
grep -c 'status=bounced' "$tmp/d/log" | grep -q -x 0 &&
    ok "nothing bounced" || not_ok "nothing bounced"
# the agents' own record: "big" said ok for r3 and was not believed
expect "the agents delivered each recipient once" \
    "$(for c in kill hang garbage exit flood; do
        for r in r1 r2 r3; do echo "$c.test $r@$c.test"; done
    done | sort)" \
    "$(grep -v '^big' "$tmp/w/delivered" | sort)"
grep -q 'to=<r1@kill.test>, relay=mdir, .*status=sent' "$tmp/d/log" &&
    [ "$(grep -c 'to=<r1@kill.test>' "$tmp/d/log")" = 1 ] &&
    ok "the answer given before the kill stands" ||
    not_ok "the answer given before the kill stands"

expect "the agent's environment is the fixed set" \
    "HOME PATH SLUICE_CHANNEL SLUICE_PROTOCOL" "$(cat "$tmp/w/env.kill.test")"
sleep 0.2
# The agents are the spawner's children, the spawner sluiced's only one
# (decision 134).
spawner=$(ps -o pid= --ppid "$sluiced_pid" | tr -d ' ')
expect "sluiced's one child is the agent spawner" sluice-spawner \
    "$(cat "/proc/$spawner/comm" 2>/dev/null)"
zombies=$(ps -o stat= --ppid "$spawner" | grep -c Z)
expect "no zombie among the spawner's children" 0 "$zombies"
expect "no agent left from the failed ones" 6 \
    "$(ps -o pid= --ppid "$spawner" | wc -l)"
tap_done
