#!/bin/sh
# agent.sh BUILD - external agents (the agent transport type, the hungry
# protocol, sluice-agent(7), decisions 129 to 133) with the shipped
# examples/agents/maildir: "sluice config" refuses an agent transport
# without a rule that gives it a program, naming the file and line; mail
# arrives in the maildir once per recipient with its content, written by
# agent_user; one agent process serves messages one after another (the
# pids in the maildir's file names, the log's "agent started" and
# conn_use); an idle agent ends after the rule's idlemax and is reaped.
# Bounded in time, stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 test -x /usr/bin/python3
chmod 711 "$tmp"
maildir=$(pwd)/examples/agents/maildir
mkdir -m 777 "$tmp/mail"
printf 'a.test mdir:\n' >"$tmp/transport"

# An agent transport with no program in the rules: refused with reasons.
cat >"$tmp/c.conf" <<_CONF
queue_directory = $tmp/c/q
transport_maps = $tmp/transport
transports = smtp:smtp, mdir:agent
_CONF
"$build/sluice" -c "$tmp/c.conf" config >"$tmp/c.out" 2>&1
expect "sluice config refuses an agent transport without scheduler_rules" 1 $?
grep -q -F 'transport mdir: type agent needs scheduler_rules' "$tmp/c.out" &&
    ok "... and says what it needs" || not_ok "... and says what it needs"
printf '%s\n' '# built-in' 'mdir/*  command=smtp' >"$tmp/rules.bad"
echo "scheduler_rules = $tmp/rules.bad" >>"$tmp/c.conf"
"$build/sluice" -c "$tmp/c.conf" config >"$tmp/c.out" 2>&1
expect "sluice config refuses a rule whose command is built in" 1 $?
grep -q -F "transport mdir: type agent: $tmp/rules.bad, line 2: the command is a built-in agent" \
    "$tmp/c.out" && ok "... naming the file and the line" ||
    not_ok "... naming the file and the line"

printf 'mdir/*  idlemax=2s\n\tcommand="%s %s/mail"\n' "$maildir" "$tmp" \
    >"$tmp/rules"

# Under the zmailer scheduler an agent transport is accepted (decision 116's
# check), and run by its threads (below).
printf '%s\n' "scheduler_rules = $tmp/rules" "mdir_delivery_scheduler = zmailer" \
    >>"$tmp/c.conf"
sed -i "/rules.bad/d" "$tmp/c.conf"
"$build/sluice" -c "$tmp/c.conf" config >/dev/null 2>"$tmp/c.err"
expect "sluice config takes an agent transport under zmailer" 0 $?
grep -q -F 'delivery_scheduler = zmailer' "$tmp/c.err" &&
    not_ok "... with no warning about its scheduler" ||
    ok "... with no warning about its scheduler"
# agent_user is never root nor mail_owner's uid (decision 134).
for bad in "daemon daemon" "root daemon"; do
    set -- $bad
    printf 'agent_user = %s\nmail_owner = %s\n' "$1" "$2" >"$tmp/c2.conf"
    cat "$tmp/c.conf" "$tmp/c2.conf" >"$tmp/c3.conf"
    "$build/sluice" -c "$tmp/c3.conf" config >"$tmp/c.out" 2>&1
    expect "sluice config refuses agent_user $1 with mail_owner $2" 1 $?
    [ "$1" = daemon ] && { grep -q -F 'agent_user daemon has the uid of mail_owner daemon (1): an agent could read and change the queue' \
        "$tmp/c.out" && ok "... saying why" || not_ok "... saying why"; }
done
grep -q -F 'agent_user root: an agent never runs as root' "$tmp/c.out" &&
    ok "... saying why" || not_ok "... saying why"
if sluiced_start "$tmp/d" "transports = smtp:smtp, mdir:agent
scheduler_rules = $tmp/rules"; then
    ok "sluiced starts with an agent transport"
else
    not_ok "sluiced starts with an agent transport"
    cat "$tmp/d/log"
    tap_done
fi
s() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
sent() { [ "$(grep -c 'status=sent' "$tmp/d/log")" -ge "$1" ]; }

printf 'Subject: one\n\n.leading dot\n8-bit: \303\274\nend\n' |
    s sendmail -f sender@sluice.test x@a.test 'y+tag@a.test' z@a.test
wait_for 5 sent 3 && ok "three recipients delivered" ||
    not_ok "three recipients delivered"
for r in x@a.test y+tag@a.test z@a.test; do
    expect "one copy for $r" 1 \
        "$(grep -l -x -F "Delivered-To: $r" "$tmp"/mail/new/* | wc -l)"
done
f=$(grep -l -x -F 'Delivered-To: z@a.test' "$tmp"/mail/new/* | head -1)
grep -q -x -F '.leading dot' "$f" &&
    grep -q -x "$(printf '8-bit: \303\274')" "$f" &&
    grep -q -x -F 'Return-Path: <sender@sluice.test>' "$f" &&
    ok "the content arrived as sent" || not_ok "the content arrived as sent"
if grep -q "$(printf '\r')" "$f"; then
    not_ok "LF line ends in the maildir file"
else
    ok "LF line ends in the maildir file"
fi
expect "the agent wrote as agent_user nobody" nobody "$(stat -c %U "$f")"

for i in 2 3 4; do
    printf 'Subject: m%s\n\nbody %s\n' $i $i |
        s sendmail -f s@sluice.test "w$i@a.test"
    wait_for 5 sent $((i + 2)) || break
done
expect "six recipients delivered" 6 "$(grep -c 'status=sent' "$tmp/d/log")"
expect "one agent started for all four messages" 1 \
    "$(grep -c 'mdir\[[0-9]*\]: agent started: pid' "$tmp/d/log")"
expect "one process wrote every file" 1 \
    "$(ls "$tmp/mail/new" | sed 's/.*P\([0-9]*\)Q.*/\1/' | sort -u | wc -l)"
grep -q 'to=<w4@a.test>, relay=mdir, conn_use=4,' "$tmp/d/log" &&
    ok "the fourth job says conn_use=4" ||
    not_ok "the fourth job says conn_use=4"
pid=$(sed -n 's/.*agent started: pid \([0-9]*\):.*/\1/p' "$tmp/d/log" |
    head -1)

wait_for 5 grep -q "agent pid $pid ended after idlemax" "$tmp/d/log" &&
    ok "the idle agent ends after idlemax" ||
    not_ok "the idle agent ends after idlemax"
wait_for 3 sh -c "! test -e /proc/$pid" &&
    ok "and is reaped (no zombie)" || not_ok "and is reaped (no zombie)"
grep -q "agent pid $pid killed by signal 15" "$tmp/d/log" &&
    ok "its end is logged" || not_ok "its end is logged"

kill "$sluiced_pid"
wait "$sluiced_pid"

# Under zmailer: the thread (mdir, a.test) is fed its vertices down one
# agent, which its ring's idle pool keeps between them.
mkdir -m 777 "$tmp/mail/z"
printf 'mdir/*  idlemax=30s\n\tcommand="%s %s/mail/z"\n' "$maildir" "$tmp" \
    >"$tmp/rules.z"
if sluiced_start "$tmp/z" "transports = smtp:smtp, mdir:agent
mdir_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules.z"; then
    for i in 1 2 3; do
        printf 'Subject: z%s\n\nbody\n' $i |
            "$build/sluice" -c "$tmp/z/sluice.conf" sendmail -f s@sluice.test "z$i@a.test"
    done
    zsent() { [ "$(grep -c 'status=sent' "$tmp/z/log")" -ge 3 ]; }
    wait_for 5 zsent && ok "zmailer: three messages through the agent" ||
        { not_ok "zmailer: three messages through the agent"; tail -5 "$tmp/z/log" | sed 's/^/#   /'; }
    expect "zmailer: one copy each" 3 "$(ls "$tmp/mail/z/new" | wc -l)"
    expect "zmailer: one agent started" 1 \
        "$(grep -c 'mdir\[[0-9]*\]: agent started: pid' "$tmp/z/log")"
    "$build/sluice" -c "$tmp/z/sluice.conf" status | grep -q 'in 1 rings, 1 agents (0 running, 1 idle)' &&
        ok "zmailer: sluice status shows the idle agent of the ring" ||
        { not_ok "zmailer: sluice status shows the idle agent of the ring"; "$build/sluice" -c "$tmp/z/sluice.conf" status | grep zmailer | sed 's/^/#   /'; }
    zpid=$(sed -n 's/.*agent started: pid \([0-9]*\):.*/\1/p' "$tmp/z/log" | head -1)
    kill "$sluiced_pid"
    wait "$sluiced_pid"
    wait_for 3 sh -c "! test -e /proc/$zpid" &&
        ok "zmailer: the agent ends with sluiced" ||
        not_ok "zmailer: the agent ends with sluiced"
else
    not_ok "sluiced starts an agent transport under zmailer"
    sed 's/^/#   /' "$tmp/z/log"
fi

# The same program once per message, as pipe(8) runs it.
printf 'Subject: x\n\nbody\n' | "$maildir" -f s@x.test "$tmp/m2" p@x.test q@x.test
expect "one shot: exit 0" 0 $?
expect "one shot: a copy per recipient" 2 "$(ls "$tmp/m2/new" | wc -l)"
"$maildir" -f s@x.test >/dev/null 2>&1
expect "one shot without a maildir: exit 64 (EX_USAGE)" 64 $?
tap_done
