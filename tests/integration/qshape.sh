#!/bin/sh
# qshape.sh BUILD - "sluice qshape" against Postfix's own qshape(1) on the
# same messages: twelve messages of ages from one minute to four days,
# to a dozen recipient domains (one long enough to be cut, one in upper
# case), two of them held, written once into sluice's spool (through
# maildrop files with their arrival times and "sluice import") and once
# as Postfix queue files that qshape reads. Each view must print exactly
# what qshape prints: the default (incoming and active), sender domains
# (-s), linear buckets (-l -b 6 -t 3), a wider screen (-w 100) and the
# hold queue. Also: mailq's listing as sendmail -bp and as "mailq", and
# "sluice delete -". Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
sluice=$build/sluice
. tests/integration/lib/tap.sh

need postfix test -x /usr/sbin/qshape
need postfix postconf -d -h mail_version

q=$tmp/q
pf=$tmp/pf
conf=$tmp/sluice.conf
printf 'queue_directory = %s\nmyhostname = host.test\n' "$q" >"$conf"
s() { "$sluice" -c "$conf" "$@"; }
mkdir -p "$pf/queue"
printf 'queue_directory = %s/queue\ncompatibility_level = 3.6\n' "$pf" \
    >"$pf/main.cf"

s import >/dev/null || not_ok "sluice import makes the spool"
now=$(date +%s)
python3 tests/integration/lib/qshape_queues.py "$q/maildrop" "$pf/queue" \
    "$now" >"$tmp/plan" || not_ok "the two queues are written"
s import >"$tmp/import.out" 2>&1
expect "the maildrop files are imported" 0 $?
# Hold the same messages as in Postfix's hold/: by arrival, oldest first.
s queue --json | python3 -c '
import json, sys
msgs = sorted((json.loads(l) for l in sys.stdin), key=lambda m: -m["arrival_time"])
for m in msgs:
    print(m["queue_id"])' >"$tmp/ids"
paste -d ' ' "$tmp/plan" "$tmp/ids" | awk '$1 == "hold" { print $2 }' |
    s hold - >/dev/null
expect "sluice hold - holds the ids read on stdin" 2 \
    "$(s queue --json | grep -c '"queue_name": "hold"')"

compare() {
    what=$1
    shift
    qshape -c "$pf" "$@" >"$tmp/postfix.out" 2>"$tmp/postfix.err"
    s qshape "$@" >"$tmp/sluice.out" 2>"$tmp/sluice.err"
    if [ -s "$tmp/postfix.out" ] && cmp -s "$tmp/postfix.out" "$tmp/sluice.out"; then
        ok "qshape $what: the same as Postfix's qshape"
    else
        not_ok "qshape $what: the same as Postfix's qshape"
        diff "$tmp/postfix.out" "$tmp/sluice.out" | sed 's/^/#   /'
        sed 's/^/#   postfix: /' "$tmp/postfix.err"
        sed 's/^/#   sluice: /' "$tmp/sluice.err"
    fi
}
compare "(incoming and active)"
compare "-s (sender domains)" -s
compare "-l -b 6 -t 3 (linear buckets)" -l -b 6 -t 3
compare "-w 100" -w 100
compare "hold" hold
compare "incoming hold -b 4" -b 4 incoming hold

out=$(s qshape nosuchqueue 2>&1)
expect "qshape with an unknown queue: usage error" 64 "$(s qshape nosuchqueue >/dev/null 2>&1; echo $?)"
case $out in *'no queue "nosuchqueue"'*) ok "qshape names the unknown queue" ;;
*) not_ok "qshape names the unknown queue" ;; esac

# mailq's listing, as the reference's: heading, "!" for held mail,
# MAILER-DAEMON for the null sender, a total line.
s queue >"$tmp/list"
expect "queue: Postfix's heading" \
    "----Queue ID----- --Size-- ---Arrival Time---- --Sender/Recipient------" \
    "$(head -n 1 "$tmp/list")"
expect "queue: held messages marked !" 2 "$(grep -c '^[0-9A-Z]*! ' "$tmp/list")"
expect "queue: the null sender is MAILER-DAEMON" 2 \
    "$(grep -c ' MAILER-DAEMON$' "$tmp/list")"
expect "queue: the total line" "-- 0 Kbytes in 12 Requests." "$(tail -n 1 "$tmp/list")"
ln -s "$sluice" "$tmp/mailq"
ln -s "$sluice" "$tmp/sendmail"
expect "mailq is sluice queue" "$(cat "$tmp/list")" \
    "$(SLUICE_CONFIG=$conf "$tmp/mailq")"
expect "sendmail -bp is sluice queue" "$(cat "$tmp/list")" \
    "$("$tmp/sendmail" -C "$conf" -bp)"
expect "sluice sendmail -bp is sluice queue" "$(cat "$tmp/list")" \
    "$(s sendmail -bp)"

# postqueue -j's field names.
first=$(s queue --json | head -n 1)
case $first in
'{"queue_name": "'*'", "queue_id": "'*'", "arrival_time": '*', "message_size": '*', "forced_expire": false, "sender": "'*'", "recipients": [{"orig_address": "'*'", "address": "'*'"}'*']}')
    ok "queue --json: postqueue -j's fields" ;;
*) not_ok "queue --json: postqueue -j's fields"; echo "#   $first" ;;
esac

# delete -: ids on stdin, with mailq's marks, blank lines skipped.
grep '^[0-9A-Z]*! ' "$tmp/list" | awk '{ print $1 } END { print "" }' |
    s delete - >"$tmp/del.out"
expect "delete - deletes the ids read (marks taken off)" 2 \
    "$(grep -c ': deleted$' "$tmp/del.out")"
expect "delete -: the rest stays" 10 "$(s queue --json | wc -l)"
expect "delete - with other arguments: usage" 64 \
    "$(s delete - x </dev/null >/dev/null 2>&1; echo $?)"

tap_done
