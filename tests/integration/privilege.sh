#!/bin/sh
# privilege.sh BUILD - sluiced started as root runs as mail_owner
# (decision 89): a system user made for the test (removed at the end);
# the daemon's real, effective, saved and file-system uid and gid are
# that user's, with no capability left once started, the spool is the
# user's (a root-owned queue handed over, a symbolic link in it changed,
# not followed; started with only the capabilities that the systemd unit
# leaves it), an SMTP listener on port 25 (below 1024: bound before the
# last capability goes) takes mail that reaches an smtp-sink, "sluice
# status" answers on the control socket, the HTTP listener on port 80
# serves /metrics, a reload works without root.
# An ordinary user (nobody) submits with "sluice sendmail" through the
# daemon and, with the daemon stopped, through the maildrop (decision
# 90), which the next start imports and delivers. A mail_owner that
# does not exist refuses the start with a clear message. About 2 s;
# stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need passwd command -v useradd
need util-linux command -v runuser
need postfix test -x "$sink"
need swaks command -v swaks
[ "$(id -u)" = 0 ] || { not_ok "runs as root (it starts sluiced as root)"; tap_done; }

owner=sluicet$$
useradd --system --user-group --no-create-home --shell /usr/sbin/nologin \
    "$owner" || { not_ok "useradd $owner"; tap_done; }
trap '_dl_cleanup; userdel "$owner" 2>/dev/null' EXIT
uid=$(id -u "$owner")
gid=$(id -g "$owner")
chmod 755 "$tmp" # the owner and nobody reach the queue and the config

start_smtp_sink sink || { not_ok "smtp-sink starts"; tap_done; }
echo "drop.test relay:[127.0.0.1]:$port_sink" >"$tmp/transport"
# Port 25 on an address of 127/8 no other test uses.
smtp_addr=127.77.$(($$ % 250 + 1)).1
d=$tmp/d
conf=$d/sluice.conf
s() { "$build/sluice" -c "$conf" "$@"; }
delivered() { ls "$tmp/sink" | wc -l; }
delivered_at_least() { [ "$(delivered)" -ge "$1" ]; }

# A queue that a daemon running as root made, with a symbolic link that
# the hand-over must change, not follow.
mkdir -p "$d/q"
echo x >"$d/q/left-by-root"
echo secret >"$tmp/victim"
ln -s "$tmp/victim" "$d/q/link"
# With no capability but those the systemd unit leaves it.
sluiced_wrap="setpriv --bounding-set -all,+net_bind_service,+setuid,+setgid,+chown --no-new-privs"
sluiced_start "$d" "mail_owner = $owner
smtpd_listen = $smtp_addr:25
http_listen = $smtp_addr:80
maillog_file = $d/maillog" ||
    { not_ok "sluiced starts as root with mail_owner = $owner"; cat "$d/log"; tap_done; }
status_field() { awk -v k="$1:" '$1 == k { print $2, $3, $4, $5 }' \
    "/proc/$sluiced_pid/status"; }
expect "every uid of the daemon is mail_owner's" "$uid $uid $uid $uid" \
    "$(status_field Uid)"
expect "every gid of the daemon is mail_owner's" "$gid $gid $gid $gid" \
    "$(status_field Gid)"
expect "no supplementary group but mail_owner's" "$gid" \
    "$(awk '$1 == "Groups:" { print $2 $3 }' "/proc/$sluiced_pid/status")"
expect "no capability is left once started" "0000000000000000" \
    "$(awk '$1 == "CapEff:" || $1 == "CapPrm:" { print $2 }' \
        "/proc/$sluiced_pid/status" | sort -u)"
grep -q "running as mail_owner $owner (uid $uid, gid $gid)" "$d/log" &&
    ok "the drop is logged" || not_ok "the drop is logged"
expect "the queue directory, spool and maildrop are mail_owner's" "" \
    "$(find "$d/q" ! -user "$owner" -print | head -3)"
expect "... a symbolic link in it changed, not followed" root \
    "$(stat -c %U "$tmp/victim")"
expect "maillog_file was made for mail_owner" "$owner" \
    "$(stat -c %U "$d/maillog")"

swaks --server "$smtp_addr:25" --from a@client.test --to u1@drop.test \
    --header 'Subject: over smtp' >/dev/null 2>&1 &&
    ok "the SMTP server on port 25 takes mail" ||
    not_ok "the SMTP server on port 25 takes mail"
printf 'Subject: as root\n\nbody\n' | s sendmail -f r@client.test u2@drop.test
printf 'Subject: as nobody\n\nbody\n' | runuser -u nobody -- \
    "$build/sluice" -c "$conf" sendmail -f n@client.test u3@drop.test
expect "an ordinary user submits through the daemon" 0 $?
wait_for 10 delivered_at_least 3
expect "all three messages reach the smtp-sink" 3 "$(delivered)"
s status >/dev/null 2>&1
expect "sluice status answers on the control socket" 0 $?
python3 -c "import urllib.request as u; print(u.urlopen('http://$smtp_addr:80/metrics', timeout=5).status)" >"$tmp/http.out" 2>&1
expect "the HTTP listener on port 80 answers /metrics" 200 "$(cat "$tmp/http.out")"
grep -q "uid=65534 from=<n@client.test>" "$d/maillog" &&
    ok "maillog_file is written by mail_owner, the submitter's uid in it" ||
    not_ok "maillog_file is written by mail_owner, the submitter's uid in it"

kill -HUP "$sluiced_pid"
wait_for 10 grep -q "reloaded: $conf" "$d/log" &&
    ok "a reload needs no root" || not_ok "a reload needs no root"

kill "$sluiced_pid"
wait_for 15 sh -c "! kill -0 $sluiced_pid 2>/dev/null"
printf 'Subject: dropped\n\nbody\n' | runuser -u nobody -- \
    "$build/sluice" -c "$conf" sendmail -f n@client.test u4@drop.test
expect "with no daemon, an ordinary user's sendmail succeeds" 0 $?
expect "... leaving one file in the maildrop" 1 \
    "$(find "$d/q/maildrop" -type f ! -name '.*' | wc -l)"
expect "... owned by that user" nobody \
    "$(find "$d/q/maildrop" -type f -exec stat -c %U {} \;)"
mv "$d/log" "$d/log.1"
sluiced_start "$d" "mail_owner = $owner
smtpd_listen = $smtp_addr:25" ||
    { not_ok "sluiced starts again"; tap_done; }
wait_for 10 delivered_at_least 4
expect "the next start imports the maildrop and delivers it" 4 "$(delivered)"
grep -q "sluice/pickup\[[0-9]*\]: [0-9A-Z]*: uid=65534 from=<n@client.test>" \
    "$d/log" && ok "... logged by pickup with the user's uid" ||
    { not_ok "... logged by pickup with the user's uid"; grep pickup "$d/log"; }
kill "$sluiced_pid"
wait_for 15 sh -c "! kill -0 $sluiced_pid 2>/dev/null"

# A mail_owner that does not exist: no start, a clear reason.
mkdir -p "$tmp/e"
cat >"$tmp/e/sluice.conf" <<EOF
queue_directory = $tmp/e/q
smtpd_listen =
mail_owner = nosuchuser$$
EOF
timeout 10 "$build/sluiced" -f -c "$tmp/e/sluice.conf" >"$tmp/e/log" 2>&1
expect "a missing mail_owner refuses the start (exit 1)" 1 $?
grep -q "fatal: mail_owner nosuchuser$$: no such user; create it (useradd --system .* nosuchuser$$) or set mail_owner = root" \
    "$tmp/e/log" && ok "... saying which user and what to do" ||
    { not_ok "... saying which user and what to do"; cat "$tmp/e/log"; }
test -e "$tmp/e/q"
expect "... creating nothing" 1 $?
tap_done
