#!/bin/sh
# line_length.sh BUILD - smtp_line_length_limit against a strict receiver:
# aiosmtpd refuses DATA lines over 998 octets. A message with a line of
# 3,000 characters is delivered with the line broken by CRLF SPACE (as
# Postfix's smtp(8) does), every line on the wire at most 998, the
# content the same once unfolded, and the break logged; with the limit
# set to 0 the same message is refused by the receiver, which shows what
# the folding is for. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3-aiosmtpd /usr/bin/python3 -c "import aiosmtpd.controller"
. tests/integration/lib/daemon_lib.sh

aio_port=$(free_port)
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/aio" \
    "$aio_port" 2>"$tmp/aio.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/aio/ready" || { not_ok "aiosmtpd starts"; tap_done; }

printf 'aio.test relay:[127.0.0.1]:%s\n' "$aio_port" >"$tmp/transport"
long=$(python3 -c 'print("".join(chr(97 + i % 26) for i in range(3000)))')

# run NAME LIMIT: sluiced delivers one message to aiosmtpd with
# smtp_line_length_limit LIMIT, until its queue is empty.
run() {
    d=$tmp/$1
    sluiced_start "$d" "smtp_line_length_limit = $2" || return 1
    printf 'Subject: long line\n\nbefore\n%s\nafter\n' "$long" |
        "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test r@aio.test
    wait_for 20 sh -c "$build/sluice -c $d/sluice.conf queue | grep -q 'Mail queue is empty'"
    kill "$sluiced_pid"
    wait "$sluiced_pid"
}

run fold 998 || not_ok "sluiced runs with the default limit"
msg=$(ls "$tmp/aio"/*.eml 2>/dev/null | head -n 1)
if [ -n "$msg" ]; then
    ok "folded: aiosmtpd accepts the message"
    expect "every line at most 998 characters" 0 \
        "$(tr -d '\r' <"$msg" | awk 'length($0) > 998' | wc -l)"
    expect "the long line unfolds to the original" 1 \
        "$(python3 -c 'import sys; t = open(sys.argv[1], "rb").read().replace(b"\r\n ", b""); print(int(sys.argv[2].encode() + b"\r\n" in t))' "$msg" "$long")"
    expect "broken into 4 lines (998, then 997 after a space, twice)" 3 \
        "$(grep -c '^ ' "$msg")"
else
    not_ok "folded: aiosmtpd accepts the message"
    sed 's/^/#   /' "$tmp/fold/log" | tail -n 5
fi
grep -q ': breaking line > 998 bytes with <CR><LF>SPACE$' "$tmp/fold/log" &&
    ok "the break is logged" || not_ok "the break is logged"
grep -q 'status=sent' "$tmp/fold/log" && ok "logged as sent" ||
    not_ok "logged as sent"

run nofold 0 || not_ok "sluiced runs with no limit"
grep -q 'status=bounced.*[Ll]ine too long' "$tmp/nofold/log" &&
    ok "without folding, the receiver refuses the line" ||
    { not_ok "without folding, the receiver refuses the line"; grep 'to=<r@aio.test>' "$tmp/nofold/log" | sed 's/^/#   /'; }
expect "without folding, nothing more is stored" 1 "$(ls "$tmp/aio"/*.eml | wc -l)"

tap_done
