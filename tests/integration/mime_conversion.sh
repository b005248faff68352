#!/bin/sh
# mime_conversion.sh BUILD - a server that does not offer 8BITMIME
# (smtp-sink -8) gets 8-bit MIME as 7-bit, as Postfix sends it: the parts
# declared 8bit quoted-printable, multipart and message/rfc822 7bit, the
# rest as it was; every part decodes to what was sent (Python's email
# package reads both). With disable_mime_output_conversion = yes the
# 8-bit body goes out as it is, and a server that offers 8BITMIME gets
# it as it is, with BODY=8BITMIME. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need postfix command -v smtp-sink
sink=$(command -v smtp-sink)
sink_user_opt=
[ "$(id -u)" = 0 ] && sink_user_opt="-u nobody"
. tests/integration/lib/daemon_lib.sh
chmod 711 "$tmp"

python3 tests/integration/lib/mime_check.py make "$tmp/msg"
start_smtp_sink seven -8 || { not_ok "smtp-sink -8 starts"; tap_done; }
start_smtp_sink eight || { not_ok "smtp-sink starts"; tap_done; }
# shellcheck disable=SC2154
printf 'seven.test relay:[127.0.0.1]:%s\neight.test relay:[127.0.0.1]:%s\n' \
    "$port_seven" "$port_eight" >"$tmp/transport"

# deliver NAME RECIPIENT [PARAMETER LINE]: one message through sluiced.
deliver() {
    d=$tmp/$1
    sluiced_start "$d" "${3:-}" || return 1
    "$build/sluice" -c "$d/sluice.conf" sendmail -f s@sluice.test "$2" <"$tmp/msg"
    wait_for 20 grep -q "status=sent" "$d/log"
    kill "$sluiced_pid"
    wait "$sluiced_pid"
}

deliver conv r@seven.test || not_ok "sluiced runs"
f=$(ls "$tmp/seven"/* 2>/dev/null | head -n 1)
[ -n "$f" ] && ok "delivered to the server without 8BITMIME" ||
    { not_ok "delivered to the server without 8BITMIME"; tail -n 5 "$tmp/conv/log" | sed 's/^/#   /'; tap_done; }
expect "7-bit only, every part decodes to what was sent" ok \
    "$(python3 tests/integration/lib/mime_check.py check "$tmp/msg" "$f")"
expect "8bit parts are quoted-printable" 2 \
    "$(grep -c '^Content-Transfer-Encoding: quoted-printable' "$f")"
expect "multipart and message/rfc822 are 7bit" 2 \
    "$(grep -c '^Content-Transfer-Encoding: 7bit' "$f")"
expect "the base64 part is left alone" 1 \
    "$(grep -c '^Content-Transfer-Encoding: base64' "$f")"
rm -f "$tmp/seven"/*

deliver off r@seven.test "disable_mime_output_conversion = yes" ||
    not_ok "sluiced runs with the conversion off"
f=$(ls "$tmp/seven"/* 2>/dev/null | head -n 1)
expect "conversion off: the 8-bit body as it is" 4 \
    "$(grep -c '^Content-Transfer-Encoding: 8bit' "$f")"

deliver eight r@eight.test || not_ok "sluiced runs"
f=$(ls "$tmp/eight"/* 2>/dev/null | head -n 1)
expect "8BITMIME offered: the body as it is" 4 \
    "$(grep -c '^Content-Transfer-Encoding: 8bit' "$f")"
grep -q 'BODY=8BITMIME' "$f" && ok "8BITMIME offered: sent with BODY=8BITMIME" ||
    not_ok "8BITMIME offered: sent with BODY=8BITMIME"

tap_done
