#!/bin/sh
# receivers.sh BUILD - sluiced with its default configuration (no
# myhostname, no smtp_helo_name: only the spool, a transport table and no
# SMTP server are set) delivers to three independently written, strict
# receivers: Postfix's smtpd (a private instance that requires a HELO and
# rejects invalid HELO names), aiosmtpd and Dovecot's LMTP server. Each
# answers 501 to an empty EHLO/LHLO, which is what sluice sent by default
# before issue 14; smtp-sink accepts anything, so only peers like these
# tell. Then default_transport = error:5.1.2 TEXT bounces what the table
# does not route, with that text, in the log and in the notice.
# Needs root (Postfix and Dovecot instances). Bounded in time, stops only
# the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

[ "$(id -u)" = 0 ] || {
    ok "receivers.sh # SKIP not root (Postfix and Dovecot instances need it)"
    tap_done
}
PATH=$PATH:/usr/sbin:/sbin
need postfix command -v postfix
daemon_dir=$(postconf -dh daemon_directory 2>/dev/null)
need postfix test -x "$daemon_dir/smtpd"
need python3-aiosmtpd /usr/bin/python3 -c "import aiosmtpd.controller"
need dovecot-core command -v dovecot
need dovecot-lmtpd test -x /usr/lib/dovecot/lmtp
need python3 command -v python3

. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/postfix_lib.sh
chmod 711 "$tmp"

# Postfix smtpd: mail for pf.test is local, and discarded.
pf_port=$(free_port)
postfix_start "$tmp/pf" "127.0.0.1:$pf_port inet n - n - 10 smtpd" <<EOF ||
myhostname = postfix.test
mydestination = pf.test
local_transport = discard:delivered
smtpd_helo_required = yes
smtpd_helo_restrictions = reject_invalid_helo_hostname
strict_rfc821_envelopes = yes
EOF
    { not_ok "Postfix starts"; sed 's/^/#   /' "$tmp/pf/start.out"; tap_done; }
wait_for 10 listening "$pf_port" || { not_ok "Postfix smtpd listens"; tap_done; }

# aiosmtpd: records each message with the HELO name it was given.
aio_port=$(free_port)
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/aio" \
    "$aio_port" 2>"$tmp/aio.err" &
pids="$pids $!"
wait_for 10 test -f "$tmp/aio/ready" || { not_ok "aiosmtpd starts"; tap_done; }

# Dovecot LMTP: delivers to maildirs under $tmp/dovecot/mail.
lmtp_port=$(free_port)
dv=$tmp/dovecot
mkdir -p "$dv/run" "$dv/state" "$dv/mail"
chown nobody:nogroup "$dv/mail"
chmod 755 "$dv"
cat >"$dv/dovecot.conf" <<EOF
base_dir = $dv/run
state_dir = $dv/state
log_path = $dv/log
protocols = lmtp
ssl = no
listen = 127.0.0.1
first_valid_uid = 1
mail_uid = nobody
mail_gid = nogroup
mail_location = maildir:$dv/mail/%n
passdb {
  driver = static
  args = nopassword=y
}
userdb {
  driver = static
  args = home=$dv/mail/%n
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = $lmtp_port
  }
}
EOF
dovecot -c "$dv/dovecot.conf" -F 2>"$dv/err" &
pids="$pids $!"
wait_for 10 listening "$lmtp_port" || {
    not_ok "Dovecot LMTP listens"
    sed 's/^/#   /' "$dv/err" "$dv/log" 2>/dev/null
    tap_done
}

# Each of them refuses an empty name: the bug this script guards against.
empty_helo() { # empty_helo PORT VERB: the reply to "VERB " after the greeting
    python3 - "$1" "$2" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
f = s.makefile("rb")
f.readline()
s.sendall(sys.argv[2].encode() + b" \r\n")
print(f.readline().decode()[:3])
PYEOF
}
expect "Postfix smtpd answers 501 to an empty EHLO" 501 "$(empty_helo "$pf_port" EHLO)"
expect "aiosmtpd answers 501 to an empty EHLO" 501 "$(empty_helo "$aio_port" EHLO)"
expect "Dovecot answers 501 to an empty LHLO" 501 "$(empty_helo "$lmtp_port" LHLO)"

# sluiced with the defaults: nothing about names is configured.
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$tmp/transport" <<EOF
pf.test smtp:[127.0.0.1]:$pf_port
aio.test smtp:[127.0.0.1]:$aio_port
lmtp.test lmtp:[127.0.0.1]:$lmtp_port
EOF
cat >"$conf" <<EOF
queue_directory = $q
smtpd_listen =
transport_maps = $tmp/transport
EOF
s() { "$build/sluice" -c "$conf" "$@"; }
"$build/sluiced" -f -c "$conf" 2>>"$tmp/log" &
daemon=$!
pids="$pids $daemon"
wait_for 10 grep -q "started: queue" "$tmp/log" || { not_ok "sluiced starts"; tap_done; }
helo=$(s config -x smtp_helo_name 2>/dev/null | sed 's/^smtp_helo_name = //')
[ -n "$helo" ] && ok "the default HELO name is not empty ($helo)" ||
    not_ok "the default HELO name is not empty"
case $helo in
*.*) ;;
*) grep -q "warning: myhostname \"$helo\" is not a fully qualified domain name" "$tmp/log" &&
    ok "an unqualified host name is warned about at start" ||
    not_ok "an unqualified host name is warned about at start" ;;
esac

for i in 1 2 3; do
    printf 'Subject: default %d\n\nbody %d\n' $i $i |
        s sendmail -f sender@aio.test "alice@pf.test" "bob@aio.test" "carol@lmtp.test"
done
pf_sent() { [ "$(grep -c 'to=<alice@pf.test>.*status=sent' "$tmp/pf/maillog")" -ge 3 ]; }
aio_got() { [ "$(find "$tmp/aio" -name '*.eml' | wc -l)" -ge 3 ]; }
lmtp_got() { [ "$(find "$dv/mail/carol/new" -type f 2>/dev/null | wc -l)" -ge 3 ]; }
wait_for 30 pf_sent && ok "Postfix smtpd took all 3 messages" || {
    not_ok "Postfix smtpd took all 3 messages"
    tail -5 "$tmp/pf/maillog" | sed 's/^/#   /'
}
wait_for 30 aio_got && ok "aiosmtpd took all 3 messages" || {
    not_ok "aiosmtpd took all 3 messages"
    sed 's/^/#   /' "$tmp/aio.err"
}
wait_for 30 lmtp_got && ok "Dovecot LMTP stored all 3 messages" || {
    not_ok "Dovecot LMTP stored all 3 messages"
    tail -5 "$dv/log" | sed 's/^/#   /'
}
expect "aiosmtpd was greeted with the default name" "helo: $helo" \
    "$(head -1 "$tmp/aio/0001.eml" 2>/dev/null)"
expect "no delivery was deferred" 0 "$(grep -c 'status=deferred' "$tmp/log")"

# default_transport = error:TEXT bounces what the table does not route.
echo "default_transport = error:5.1.2 no route to that domain here" >>"$conf"
s reload >/dev/null 2>&1
wait_for 10 grep -q "reloaded: $conf" "$tmp/log" || not_ok "the reload is taken"
printf 'Subject: nowhere\n\nbody\n' | s sendmail -f sender@aio.test dave@elsewhere.test
bounced() { grep -q 'to=<dave@elsewhere.test>, relay=none, .*dsn=5.1.2, status=bounced (no route to that domain here)' "$tmp/log"; }
wait_for 10 bounced && ok "default_transport error:5.1.2 TEXT bounces with that text" ||
    {
        not_ok "default_transport error:5.1.2 TEXT bounces with that text"
        grep 'dave@' "$tmp/log" | sed 's/^/#   /'
    }
notice() { grep -l '^Status: 5.1.2' "$tmp/aio"/*.eml >/dev/null 2>&1; }
wait_for 20 notice && ok "the sender's notice says 5.1.2" || not_ok "the sender's notice says 5.1.2"
grep -q 'no route to that domain here' $(grep -l '^Status: 5.1.2' "$tmp/aio"/*.eml 2>/dev/null) /dev/null &&
    ok "the sender's notice gives the text" || not_ok "the sender's notice gives the text"

kill -TERM "$daemon"
wait "$daemon"
expect "sluiced stops cleanly" 0 $?
tap_done
