#!/bin/sh
# agent_spawner.sh BUILD - external agents under a sluiced that gave up
# root (decision 134): started as root with mail_owner and agent_user two
# users of their own, sluiced runs as mail_owner and its agent spawner
# stays root; the shipped maildir agent writes its files as agent_user,
# /proc shows every uid of an agent to be agent_user's and its parent the
# spawner; an agent cannot read the spool. An agent killed with SIGKILL
# in the middle of a job and one that hangs past agent_time_limit: their
# recipients are deferred, then delivered exactly once. The spawner
# killed with SIGKILL: logged, its agents die with it and are reaped,
# agent mail is deferred (never lost) until sluiced restarts, and is then
# delivered once. A stop leaves no agent and no spawner. sluice status
# and /metrics count each transport's agents. A spawner without CAP_KILL
# refuses to start agents. Bounded in time,
# stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 test -x /usr/bin/python3
need passwd command -v useradd
[ "$(id -u)" = 0 ] || { not_ok "runs as root (it starts sluiced as root)"; tap_done; }

owner=slo$$
agent=sla$$
for u in $owner $agent; do
    useradd --system --user-group --no-create-home \
        --shell /usr/sbin/nologin "$u" || { not_ok "useradd $u"; tap_done; }
done
# userdel refuses a user with a process left: a few tries, bounded.
users_del() {
    for u in $owner $agent; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            userdel "$u" 2>/dev/null && break
            getent passwd "$u" >/dev/null || break
            sleep 0.3
        done
    done
}
trap '_dl_cleanup; users_del' EXIT
owner_uid=$(id -u "$owner")
agent_uid=$(id -u "$agent")
chmod 755 "$tmp"
mkdir -m 700 "$tmp/mail" "$tmp/w"
chown "$agent" "$tmp/mail" "$tmp/w"
q=$tmp/d/q

# The probe (lib/test_agent.py): who it is, whether it can read the
# spool, the hungry protocol; w/mode.HOST "hang" makes it stop at its job
# (its pid in w/busy.HOST), "good" delivers.
probe=$(pwd)/tests/integration/lib/test_agent.py
{
    printf 'mdir/*  command="%s %s/mail"\n' "$(pwd)/examples/agents/maildir" "$tmp"
    printf 'probe/*  command="%s %s/w $host %s"\n' "$probe" "$tmp" "$q"
} >"$tmp/rules"
printf '%s\n' 'a.test mdir:' 'kill.test probe:' 'hang.test probe:' \
    'good.test probe:' >"$tmp/transport"
for h in kill hang good; do echo good >"$tmp/w/mode.$h.test"; done
chown "$agent" "$tmp"/w/*

http_port=$(free_port)
# With no capability but those the systemd unit leaves it (the spawner
# signals agents of another uid: CAP_KILL).
sluiced_wrap="setpriv --bounding-set -all,+net_bind_service,+setuid,+setgid,+chown,+kill --no-new-privs"
params="http_listen = 127.0.0.1:$http_port
mail_owner = $owner
agent_user = $agent
transports = smtp:smtp, mdir:agent, probe:agent
scheduler_rules = $tmp/rules
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 1s
probe_agent_time_limit = 1s
agent_restart_delay = 1s"
sluiced_start "$tmp/d" "$params" && ok "sluiced starts as root" ||
    { not_ok "sluiced starts as root"; cat "$tmp/d/log"; tap_done; }
log=$tmp/d/log
s() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
sent() { [ "$(grep -c "to=<$1>, .*status=sent" "$log")" -ge 1 ]; }
uids() { awk '$1 == "Uid:" { print $2, $3, $4, $5 }' "/proc/$1/status"; }
spawner=$(ps -o pid= --ppid "$sluiced_pid" | tr -d ' ')
expect "sluiced's child is the spawner" sluice-spawner \
    "$(cat "/proc/$spawner/comm" 2>/dev/null)"
expect "sluiced runs as mail_owner" \
    "$owner_uid $owner_uid $owner_uid $owner_uid" "$(uids "$sluiced_pid")"
expect "the spawner stays root" "0 0 0 0" "$(uids "$spawner")"
grep -q -F 'warning' "$log" && not_ok "no warning at the start" ||
    ok "no warning at the start"

printf 'Subject: m\n\nbody\n' | s sendmail -f s@sluice.test m@a.test g1@good.test
wait_for 5 sent m@a.test && wait_for 5 sent g1@good.test &&
    ok "mail through both agents" || { not_ok "mail through both agents"; cat "$log"; }
f=$(ls "$tmp/mail/new" | head -1)
expect "the maildir file belongs to agent_user" "$agent" \
    "$(stat -c %U "$tmp/mail/new/$f")"
apid=$(sed -n 's/.*mdir\[[0-9]*\]: agent started: pid \([0-9]*\):.*/\1/p' "$log")
expect "the agent's every uid is agent_user's" \
    "$agent_uid $agent_uid $agent_uid $agent_uid" "$(uids "$apid")"
expect "the agent's parent is the spawner" "$spawner" \
    "$(awk '$1 == "PPid:" { print $2 }' "/proc/$apid/status")"
expect "the probe runs as agent_user and cannot read the spool" \
    "$agent_uid refused refused" "$(cat "$tmp/w/probe.good.test")"

# SIGKILL in the middle of a job, and a hang past agent_time_limit.
echo hang >"$tmp/w/mode.kill.test"
echo hang >"$tmp/w/mode.hang.test"
printf 'Subject: k\n\nbody\n' | s sendmail -f s@sluice.test k1@kill.test
printf 'Subject: h\n\nbody\n' | s sendmail -f s@sluice.test h1@hang.test
wait_for 5 test -s "$tmp/w/busy.kill.test" &&
    kill -KILL "$(cat "$tmp/w/busy.kill.test")"
failed() { grep -q "agent pid [0-9]* failed while delivering: $2" "$log" &&
    echo good >"$tmp/w/mode.$1.test"; }
wait_for 5 failed kill 'killed by signal 9' &&
    ok "the killed agent's failure is logged" ||
    not_ok "the killed agent's failure is logged"
wait_for 5 failed hang 'still at its job after the time limit' &&
    ok "the hanging agent is killed after agent_time_limit" ||
    not_ok "the hanging agent is killed after agent_time_limit"
wait_for 6 sent k1@kill.test && wait_for 6 sent h1@hang.test &&
    ok "both delivered after recovery" || not_ok "both delivered after recovery"
grep -q 'to=<k1@kill.test>, .*status=deferred' "$log" &&
    grep -q 'to=<h1@hang.test>, .*status=deferred' "$log" &&
    ok "... after a deferral" || not_ok "... after a deferral"

# The agents' figures: sluice status (text, JSON) and /metrics.
wait_for 3 sh -c "ps -o pid= --ppid $spawner | wc -l | grep -q -x 4"
s status >"$tmp/st.txt"
grep -q -x -F '  agents: 0 running, 1 idle, 1 started, 0 failed' "$tmp/st.txt" &&
    ok "sluice status: the agents of mdir" ||
    { not_ok "sluice status: the agents of mdir"; cat "$tmp/st.txt"; }
s status --json | /usr/bin/python3 -c '
import json, sys
t = {x["name"]: x["agents"] for x in json.load(sys.stdin)["transports"]}
print(t["probe"], t["mdir"])' >"$tmp/st.json"
expect "sluice status --json: the agents of probe" \
    "{'running': 0, 'idle': 3, 'started': 5, 'failed': 2} {'running': 0, 'idle': 1, 'started': 1, 'failed': 0}" \
    "$(cat "$tmp/st.json")"
/usr/bin/python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:$http_port/metrics').read().decode())" |
    grep -E '^sluice_agents.*transport="probe"' >"$tmp/metrics"
expect "/metrics: the agents of probe" 'sluice_agents{transport="probe",state="running"} 0
sluice_agents{transport="probe",state="idle"} 3
sluice_agents_started_total{transport="probe"} 5
sluice_agents_failed_total{transport="probe"} 2' "$(cat "$tmp/metrics")"

# The spawner killed: logged, its agents gone and reaped, mail deferred.
agents=$(ps -o pid= --ppid "$spawner")
kill -KILL "$spawner"
wait_for 3 grep -q "agent spawner pid $spawner ended (killed by signal 9): its agents are killed; agent deliveries are deferred until sluiced restarts" "$log" &&
    ok "the spawner's death is logged" || not_ok "the spawner's death is logged"
gone() { for p in "$@"; do [ -e "/proc/$p" ] && return 1; done; return 0; }
# shellcheck disable=SC2086
wait_for 3 gone $agents $spawner &&
    ok "its agents died with it and were reaped" ||
    not_ok "its agents died with it and were reaped"
printf 'Subject: s\n\nbody\n' | s sendmail -f s@sluice.test s1@good.test
wait_for 5 grep -q 'to=<s1@good.test>, .*status=deferred.*the agent spawner is gone' "$log" &&
    ok "agent mail is deferred, saying why" ||
    not_ok "agent mail is deferred, saying why"

stopped() { ! kill -0 "$sluiced_pid" 2>/dev/null; }
kill -TERM "$sluiced_pid"
wait_for 12 stopped && ok "sluiced stops" || not_ok "sluiced stops"
wait "$sluiced_pid"
expect "... cleanly" 0 $?
mv "$log" "$tmp/log1"
sluiced_start "$tmp/d" "$params" || { not_ok "sluiced starts again"; tap_done; }
spawner=$(ps -o pid= --ppid "$sluiced_pid" | tr -d ' ')
wait_for 6 sent s1@good.test && ok "after a restart the mail is delivered" ||
    not_ok "after a restart the mail is delivered"
agents=$(ps -o pid= --ppid "$spawner")
expect "every recipient delivered exactly once by the agents" \
    "good.test g1@good.test
good.test s1@good.test
hang.test h1@hang.test
kill.test k1@kill.test" "$(sort "$tmp/w/delivered")"
for r in m@a.test g1@good.test k1@kill.test h1@hang.test s1@good.test; do
    cat "$tmp/log1" "$log" | grep -c "to=<$r>, .*status=sent"
done | sort -u | grep -q -x 1 && ok "each sent once in the log" ||
    not_ok "each sent once in the log"
kill -TERM "$sluiced_pid"
wait_for 12 stopped
wait "$sluiced_pid"
expect "a stop exits 0" 0 $?
# shellcheck disable=SC2086
gone $agents $spawner && ok "no agent and no spawner left after the stop" ||
    not_ok "no agent and no spawner left after the stop"

# Without CAP_KILL the spawner could not stop its agents: it refuses.
mv "$log" "$tmp/log2"
sluiced_wrap="setpriv --bounding-set -all,+net_bind_service,+setuid,+setgid,+chown --no-new-privs"
sluiced_start "$tmp/d" "$params" || { not_ok "sluiced starts"; tap_done; }
printf 'Subject: c\n\nbody\n' | s sendmail -f s@sluice.test c1@good.test
wait_for 5 grep -q 'to=<c1@good.test>, .*status=deferred (the agent spawner has no CAP_KILL' "$log" &&
    ok "without CAP_KILL agent mail is deferred, saying why" ||
    not_ok "without CAP_KILL agent mail is deferred, saying why"
kill -TERM "$sluiced_pid"
wait_for 12 stopped
tap_done
