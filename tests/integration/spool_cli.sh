#!/bin/sh
# spool_cli.sh BUILD - sluice sendmail, import, queue, show, delete, hold,
# release and requeue, end to end on a spool in a temporary directory.
# Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
sluice=$build/sluice
. tests/integration/lib/tap.sh

q=$tmp/q
conf=$tmp/sluice.conf
cat >"$conf" <<EOF
queue_directory = $q
myhostname = host.test
EOF
s() { "$sluice" -c "$conf" "$@"; }
msg() { printf 'Subject: test %s\n\nline one\nline two\n' "$1"; }
first_id() { s queue | awk 'NR == 2 { print $1 }'; }

out=$(s queue)
expect "queue before any mail: empty" "Mail queue is empty" "$out"

# Issue 14: with no daemon and no spool, sendmail says so and exits 75
# (EX_TEMPFAIL, as Postfix's sendmail); it never makes the spool.
msg 0 | s sendmail -f alice@a.test bob@b.test 2>"$tmp/err"
expect "no daemon, no spool: sendmail exits 75" 75 $?
expect "no daemon, no spool: sendmail says so" \
    "sendmail: no sluiced is running and there is no spool at $q (No such file or directory): start sluiced, which creates it, or set queue_directory" \
    "$(cat "$tmp/err")"
[ ! -e "$q" ] && ok "no daemon, no spool: nothing was created" ||
    not_ok "no daemon, no spool: nothing was created"
s import >/dev/null
expect "sluice import makes the spool, as its owner" 0 $?

msg 1 | s sendmail -f alice@a.test bob@b.test carol@c.test
expect "sendmail stores a message: exit 0" 0 $?
[ -d "$q/db" ] && [ "$(stat -c %a "$q/db")" = 700 ] &&
    ok "the spool database is the owner's only (mode 700)" ||
    not_ok "the spool database is the owner's only (mode 700)"
[ "$(stat -c %a "$q/maildrop")" = 1733 ] &&
    ok "the maildrop accepts new files from anybody (mode 1733)" ||
    not_ok "the maildrop accepts new files from anybody (mode 1733)"
id=$(first_id)
s queue >"$tmp/q.out"
# Postfix's mailq layout (long queue ids): qshape.sh checks more of it.
if grep -q "^$id  *[0-9][0-9]* [A-Z][a-z][a-z] [A-Z][a-z][a-z] [ 0-9][0-9] [0-9:]* alice@a.test$" "$tmp/q.out" &&
    grep -q "^                                               bob@b.test$" "$tmp/q.out" &&
    grep -q "^                                               carol@c.test$" "$tmp/q.out" &&
    grep -q "^-- 0 Kbytes in 1 Request.$" "$tmp/q.out"; then
    ok "queue lists id, size, arrival, sender, recipients as mailq does"
else
    not_ok "queue lists id, size, arrival, sender, recipients as mailq does"
    sed 's/^/#   /' "$tmp/q.out"
fi
expect "queue id: 14 time-ordered characters" 14 "$(printf %s "$id" | wc -c)"

json=$(s queue --json)
case $json in
"{\"queue_name\": \"incoming\", \"queue_id\": \"$id\", \"arrival_time\": "*", \"message_size\": "*", \"forced_expire\": false, \"sender\": \"alice@a.test\", \"recipients\": [{\"orig_address\": \"bob@b.test\", \"address\": \"bob@b.test\"}, {\"orig_address\": \"carol@c.test\", \"address\": \"carol@c.test\"}]}")
    ok "queue --json: one object per message" ;;
*)
    not_ok "queue --json: one object per message"
    echo "#   $json" ;;
esac

s show "$id" >"$tmp/show.out"
if grep -qx "queue_id: $id" "$tmp/show.out" &&
    grep -qx "sender: <alice@a.test>" "$tmp/show.out" &&
    grep -qx "recipient: <bob@b.test> pending" "$tmp/show.out" &&
    grep -q "^Subject: test 1" "$tmp/show.out" &&
    grep -q "^From: alice@a.test" "$tmp/show.out" &&
    grep -q "^Date: " "$tmp/show.out" &&
    grep -q "^Message-ID: <.*@host.test>" "$tmp/show.out" &&
    ! grep -q "line one" "$tmp/show.out"; then
    ok "show: envelope and headers (From, Date, Message-ID added)"
else
    not_ok "show: envelope and headers (From, Date, Message-ID added)"
    sed 's/^/#   /' "$tmp/show.out"
fi
s show --body "$id" | grep -q "^line two" &&
    ok "show --body: the whole message" || not_ok "show --body: the whole message"
s show --body "$id" | grep -q "$(printf 'line one\r')" &&
    ok "stored with CRLF line ends" || not_ok "stored with CRLF line ends"

# -t: recipients from the headers, Bcc removed; -F names the sender.
printf 'To: Dan <dan@d.test>, eve@e.test\nCc: "F. Last" <frank@f.test>\nBcc: gina@g.test\nSubject: t\n\nbody\n' |
    s sendmail -t -i -f me@m.test -F 'Me Myself'
id2=$(s queue | awk '/^[0-9A-Z]+ / && $NF == "me@m.test" { print $1 }')
s show --body "$id2" >"$tmp/t.out"
if [ -n "$id2" ] && grep -qx "recipient: <dan@d.test> pending" "$tmp/t.out" &&
    grep -qx "recipient: <eve@e.test> pending" "$tmp/t.out" &&
    grep -qx "recipient: <frank@f.test> pending" "$tmp/t.out" &&
    grep -qx "recipient: <gina@g.test> pending" "$tmp/t.out" &&
    ! grep -qi "^Bcc:" "$tmp/t.out" &&
    grep -q "^From: Me Myself <me@m.test>" "$tmp/t.out"; then
    ok "sendmail -t: To, Cc, Bcc recipients; Bcc header removed; -F"
else
    not_ok "sendmail -t: To, Cc, Bcc recipients; Bcc header removed; -F"
    sed 's/^/#   /' "$tmp/t.out"
fi

# A line with a single dot ends input, unless -i.
printf 'Subject: dot\n\nbefore\n.\nafter\n' | s sendmail -f dot@a.test x@y.test
idd=$(s queue | awk '$NF == "dot@a.test" { print $1 }')
s show --body "$idd" | grep -q after && not_ok "a lone dot ends the input" ||
    ok "a lone dot ends the input"

# DSN options reach the envelope.
msg dsn | s sendmail -f dsn@a.test -N success,failure -R hdrs -V ENV42 z@z.test
idn=$(s queue | awk '$NF == "dsn@a.test" { print $1 }')
s show "$idn" >"$tmp/dsn.out"
if grep -qx "envid: ENV42" "$tmp/dsn.out" && grep -qx "ret: hdrs" "$tmp/dsn.out" &&
    grep -qx "recipient: <z@z.test> pending notify=success,failure" "$tmp/dsn.out"; then
    ok "sendmail -N -R -V: DSN envelope fields"
else
    not_ok "sendmail -N -R -V: DSN envelope fields"
    sed 's/^/#   /' "$tmp/dsn.out"
fi

# Exit codes and one-line reasons.
msg x | s sendmail -f a@a.test 2>"$tmp/err"
expect "no recipient: exit 64" 64 $?
expect "no recipient: the reason" "sendmail: no recipient given" "$(cat "$tmp/err")"
msg x | s sendmail -q a@a.test 2>/dev/null
expect "unknown option: exit 64" 64 $?
msg x | s sendmail 'bad address@x' 2>"$tmp/err"
expect "bad recipient: exit 64" 64 $?
printf 'Subject: nul\n\na\000b\n' | s sendmail x@y.test 2>"$tmp/err"
expect "a NUL byte: exit 65" 65 $?
expect "a NUL byte: the reason" "sendmail: message contains a NUL byte" "$(cat "$tmp/err")"
printf 'message_size_limit = 100\n' >>"$conf"
head -c 500 /dev/zero | tr '\0' 'a' | s sendmail x@y.test 2>"$tmp/err"
expect "too big: exit 65" 65 $?
sed -i '/^message_size_limit/d' "$conf"

# Invoked as sendmail.
ln -s "$sluice" "$tmp/sendmail"
msg sm | "$tmp/sendmail" -C "$conf" -f viasym@a.test x@y.test
expect "invoked as sendmail: exit 0" 0 $?
s queue | grep -q " viasym@a.test$" && ok "invoked as sendmail: stored" ||
    not_ok "invoked as sendmail: stored"

count() { s queue | awk '/^[0-9A-Z]+ /' | wc -l; }
before=$(count)

# hold / release / requeue / delete.
out=$(s hold "$id")
expect "hold" "$id: on hold" "$out"
s queue | grep -q "^$id! .* alice@a.test$" && ok "queue shows hold (id marked !)" ||
    not_ok "queue shows hold (id marked !)"
out=$(s hold "$id")
expect "hold twice" "$id: already on hold" "$out"
out=$(s requeue "$id" 2>&1)
expect "requeue held mail: refused with the reason" \
    "sluice: requeue: $id: on hold; release it first" "$out"
out=$(s release "$id")
expect "release" "$id: released" "$out"
s show "$id" | grep -qx "state: incoming" && ok "released to where it was" ||
    not_ok "released to where it was"
out=$(s requeue "$id")
expect "requeue incoming mail" "$id: already due" "$out"
s delete NOSUCHID >"$tmp/out" 2>"$tmp/err"
expect "delete unknown id: exit 0 (nothing to do)" 0 $?
expect "delete unknown id: said on stdout" "NOSUCHID: not in the queue" "$(cat "$tmp/out")"
out=$(s delete "$id")
expect "delete" "$id: deleted" "$out"
expect "one message fewer" $((before - 1)) "$(count)"
s show "$id" 2>/dev/null
expect "show of a deleted message: exit 1" 1 $?
s hold ALL >/dev/null
expect "hold ALL" "$((before - 1))" "$(s queue | grep -c '^[0-9A-Z]*! ')"
s release ALL >/dev/null
expect "release ALL" 0 "$(s queue | grep -c '^[0-9A-Z]*! ')"
s delete 2>/dev/null
expect "delete without id: exit 64" 64 $?

out=$(s recover)
expect "recover: nothing to do on a healthy spool" "active to incoming 0, corrupt 0" "$out"
s recover extra 2>/dev/null
expect "recover with an argument: exit 64" 64 $?

# A user who may not write the spool: the maildrop, then import.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$tmp" "$q"
    msg drop | setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$sluice" -c "$conf" sendmail -f user@u.test dropped@x.test
    expect "non-owner sendmail: exit 0 (maildrop)" 0 $?
    expect "non-owner sendmail: one file in the maildrop" 1 \
        "$(find "$q/maildrop" -type f ! -name '.*' | wc -l)"
    setpriv --reuid=65534 --regid=65534 --clear-groups ls "$q/maildrop" >/dev/null 2>&1 &&
        not_ok "the maildrop cannot be listed by others" ||
        ok "the maildrop cannot be listed by others"
    printf 'junk, not a maildrop file\n' >"$q/maildrop/0123456789abcdef"
    out=$(s import)
    expect "import" "imported 1, malformed 1 (moved to maildrop-bad), failed 0, stale temporary files 0" "$out"
    s queue | grep -q " user@u.test$" && ok "imported message in the queue" ||
        not_ok "imported message in the queue"
    [ -f "$q/maildrop-bad/0123456789abcdef" ] &&
        [ -s "$q/maildrop-bad/0123456789abcdef.reason" ] &&
        ok "malformed maildrop file moved aside with a reason" ||
        not_ok "malformed maildrop file moved aside with a reason"
    expect "maildrop empty after import" 0 "$(find "$q/maildrop" -type f | wc -l)"
else
    ok "non-owner sendmail uses the maildrop # SKIP needs root and setpriv"
fi

# Issue 14: a message that is gone is not an error for delete, hold,
# release and requeue: two of them may race.
id=$(first_id)
s hold "$id" "$id" >"$tmp/out" 2>"$tmp/err"
expect "hold ID ID: exit 0" 0 $?
s delete "$id" "$id" >"$tmp/out" 2>"$tmp/err"
expect "delete ID ID: exit 0" 0 $?
expect "delete ID ID: the second is not in the queue" \
    "$id: deleted|$id: not in the queue" "$(paste -sd'|' "$tmp/out")"
expect "delete ID ID: nothing on stderr" "" "$(cat "$tmp/err")"
for verb in hold release requeue delete; do
    s $verb NOSUCHID123456 >"$tmp/out" 2>&1
    expect "$verb of a message not in the queue: exit 0, said so" \
        "0 NOSUCHID123456: not in the queue" "$? $(cat "$tmp/out")"
done
i=0
while [ $i -lt 500 ]; do
    printf 'Subject: race %d\n\nx\n' $i
    i=$((i + 1))
done | awk '/^Subject/ { n++ } { print > ("'"$tmp"'/race." n) }'
for f in "$tmp"/race.*; do s sendmail -f r@a.test x@y.test <"$f"; done
s delete ALL >"$tmp/race1" 2>&1 &
r1=$!
s delete ALL >"$tmp/race2" 2>&1
rc2=$?
wait $r1
rc1=$?
expect "two delete ALL racing over 500 messages both exit 0" "0 0" "$rc1 $rc2"
expect "after the race the queue is empty" "Mail queue is empty" "$(s queue)"

# A full spool (a fresh one, its map at its limit): temporary failure,
# with the reason, and what was stored is still there.
cat >"$tmp/full.conf" <<EOF
queue_directory = $tmp/q2
queue_map_size = 1048576
queue_map_size_limit = 1048576
message_size_limit = 0
EOF
mkdir "$tmp/q2"
msg small | "$sluice" -c "$tmp/full.conf" sendmail x@y.test
{ printf 'Subject: big\n\n'; head -c 3000000 /dev/zero | tr '\0' 'a'; } |
    "$sluice" -c "$tmp/full.conf" sendmail -i x@y.test 2>"$tmp/err"
expect "spool full: exit 75" 75 $?
expect "spool full: the reason" \
    "sendmail: spool full: the map reached queue_map_size_limit (1048576 bytes)" \
    "$(cat "$tmp/err")"
expect "spool full: the earlier message is still there" 1 \
    "$("$sluice" -c "$tmp/full.conf" queue --json | grep -c '"queue_name": "incoming"')"

# Output that cannot be written is a failure, whatever the command: a
# listing cut short by a full disk must not look complete.
for cmd in "queue" "config" "config -n" "route x@y.test" "--help" "--version"; do
    # shellcheck disable=SC2086
    "$sluice" -c "$tmp/full.conf" $cmd >/dev/full 2>"$tmp/err"
    expect "sluice $cmd >/dev/full: exit 1" 1 $?
    name=${cmd%% *}
    expect "sluice $cmd >/dev/full: says why" \
        "sluice: ${name#--}: write error: No space left on device" \
        "$(tail -1 "$tmp/err")"
done

tap_done
