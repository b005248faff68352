#!/bin/sh
# zmailer_rules.sh BUILD - the zmailer scheduler's rules file
# (scheduler_rules, sluice-rules(5), decisions 114 and 116) in the
# daemon: a file with a mistake stops the start with its file and line;
# with good rules a transport under zmailer is accepted and delivers (to
# Postfix's smtp-sink) through its threads, without decision 116's old
# warning; a rules
# file broken afterwards is refused by "sluice reload" and by SIGHUP, and
# the running configuration stays and delivers. Bounded in time, stops
# only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need smtp-sink test -x "$sink"
need python3 command -v python3
chmod 711 "$tmp"

start_smtp_sink d1 || not_ok "smtp-sink listens"
start_smtp_sink l1 -L || not_ok "smtp-sink -L listens"
printf 'zm.test relay:[127.0.0.1]:%s\nlm.test lmtp:[127.0.0.1]:%s\n' \
    "$port_d1" "$port_l1" >"$tmp/transport"

# A start with a broken rules file: refused, naming the file and line.
printf '%s\n' '*/* idlemax=5m' 'relay/*' '	command="smtp' >"$tmp/rules"
mkdir -p "$tmp/bad"
cat >"$tmp/bad/sluice.conf" <<EOF
queue_directory = $tmp/bad/q
myhostname = sluice.test
smtpd_listen =
mail_owner = root
transport_maps = $tmp/transport
relay_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules
EOF
timeout 10 "$build/sluiced" -f -c "$tmp/bad/sluice.conf" >"$tmp/bad/log" 2>&1
expect "sluiced refuses to start with a broken rules file" 1 $?
grep -q -F "fatal: $tmp/rules, line 2: a double quote that is not closed" \
    "$tmp/bad/log" && ok "the refusal names the file and the clause's line" ||
    not_ok "the refusal names the file and the clause's line"

# Good rules: the daemon starts and delivers through zmailer's threads.
printf 'held.test hold:[127.0.0.1]:%s\n' "$port_d1" >>"$tmp/transport"
printf '%s\n' '*/* idlemax=5m' 'relay/*' '	command="smtp"' \
    'lmtp/127.0.0.1 command=lmtp' 'hold/* queueonly command=smtp' \
    >"$tmp/rules"
printf 'nr.test lmtp:[127.0.0.3]:%s\n' "$port_l1" >>"$tmp/transport"
zm_conf="transports = smtp:smtp, relay:smtp, lmtp:lmtp, hold:smtp
relay_delivery_scheduler = zmailer
lmtp_delivery_scheduler = zmailer
hold_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules"
if sluiced_start "$tmp/d" "$zm_conf"; then
    ok "sluiced starts with relay under zmailer and good rules"
else
    not_ok "sluiced starts with relay under zmailer and good rules"
    tap_done
fi
# decision 116's warning is gone: zmailer's threads deliver (decision 124)
expect "the start no longer says relay delivers as under postfix" 0 \
    "$(grep -c -F 'delivers as under the postfix scheduler' "$tmp/d/log")"
s() { "$build/sluice" -c "$tmp/d/sluice.conf" "$@"; }
printf 'Subject: zm-1\n\nbody\n' | s sendmail -f sender@sluice.test a@zm.test
wait_for 10 grep -q 'to=<a@zm.test>.*status=sent' "$tmp/d/log" &&
    ok "a message to a zmailer transport is delivered" ||
    not_ok "a message to a zmailer transport is delivered"

# LMTP is a built-in agent too: its thread's mail down one connection,
# kept in the ring's idle pool for the next (conn_use counts them).
for i in 1 2 3; do
    printf 'Subject: lm-%s\n\nbody\n' "$i" |
        s sendmail -f sender@sluice.test "l$i@lm.test"
done
lmtp_sent() { test "$(grep -c 'to=<l.@lm.test>.*status=sent' "$tmp/d/log")" -ge 3; }
wait_for 10 lmtp_sent && ok "three messages delivered over LMTP under zmailer" ||
    not_ok "three messages delivered over LMTP under zmailer"
grep 'to=<l3@lm.test>' "$tmp/d/log" | grep -q 'conn_use=3' &&
    ok "LMTP: the third down the agent's one connection (conn_use=3)" ||
    not_ok "LMTP: the third down the agent's one connection (conn_use=3)"

# A recipient that no clause with a command matches: deferred, warned.
printf 'Subject: nr\n\nbody\n' | s sendmail -f sender@sluice.test x@nr.test
wait_for 10 grep -q 'to=<x@nr.test>.*status=deferred (no scheduler rule for lmtp/127.0.0.3)' \
    "$tmp/d/log" && ok "no rule for its channel and host: deferred" ||
    not_ok "no rule for its channel and host: deferred"
grep -q -F 'warning: ' "$tmp/d/log" &&
    grep -F 'warning: ' "$tmp/d/log" | grep -q -F ': no scheduler rule for lmtp/127.0.0.3' &&
    ok "... with a warning" || not_ok "... with a warning"

# The rules file broken under the running daemon: refused, kept.
printf '%s\n' '*/* idlemax=5m' 'relay/* maxchannel=3 command=smtp' \
    'lmtp/* command=lmtp' 'hold/* queueonly command=smtp' >"$tmp/rules"
s reload >"$tmp/reload.out" 2>&1
expect "sluice reload with a broken rules file exits 1" 1 $?
grep -q -F "$tmp/rules, line 2: maxchannel is a ZMailer keyword that sluice does not implement" \
    "$tmp/reload.out" && ok "sluice reload says which line, and why" ||
    not_ok "sluice reload says which line, and why"
kill -HUP "$sluiced_pid"
wait_for 10 grep -q -F "reload failed, the running configuration stays: $tmp/rules, line 2: maxchannel" \
    "$tmp/d/log" && ok "SIGHUP with the broken file: the running configuration stays" ||
    not_ok "SIGHUP with the broken file: the running configuration stays"
printf 'Subject: zm-2\n\nbody\n' | s sendmail -f sender@sluice.test b@zm.test
wait_for 10 grep -q 'to=<b@zm.test>.*status=sent' "$tmp/d/log" &&
    ok "after the refused reload the daemon still delivers" ||
    not_ok "after the refused reload the daemon still delivers"
kill -0 "$sluiced_pid" 2>/dev/null && ok "sluiced is still running" ||
    not_ok "sluiced is still running"

# Mail held by a queueonly rule survives a restart, and a flush to a
# daemon that has not scheduled any zmailer mail yet releases it.
printf '%s\n' '*/* idlemax=5m' 'relay/* command=smtp' 'lmtp/* command=lmtp' \
    'hold/* queueonly command=smtp' >"$tmp/rules"
printf 'Subject: held\n\nbody\n' | s sendmail -f sender@sluice.test h@held.test
wait_for 10 grep -q 'to=<h@held.test>.*status=deferred (queueonly: held until ETRN or sluice flush for 127.0.0.1)' \
    "$tmp/d/log" && ok "queueonly: held at arrival" ||
    not_ok "queueonly: held at arrival"
kill -TERM "$sluiced_pid"
gone() { ! kill -0 "$sluiced_pid" 2>/dev/null; }
wait_for 10 gone || not_ok "sluiced stops"
sluiced_start "$tmp/d" "$zm_conf" || not_ok "sluiced starts again"
s flush held.test >/dev/null
wait_for 10 grep -q 'to=<h@held.test>.*status=sent' "$tmp/d/log" &&
    ok "after a restart, sluice flush held.test delivers it" ||
    not_ok "after a restart, sluice flush held.test delivers it"
tap_done
