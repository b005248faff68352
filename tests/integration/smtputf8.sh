#!/bin/sh
# smtputf8.sh BUILD - SMTPUTF8 (RFC 6531, issue 21) against strict peers.
# In: Python's smtplib sends with mail_options=['SMTPUTF8'] and UTF-8
# addresses; a raw client gets 553 5.6.7 for a UTF-8 address without
# SMTPUTF8; with smtputf8_enable = no (a reload) EHLO no longer offers it
# and MAIL ... SMTPUTF8 is 555. Out: aiosmtpd with SMTPUTF8 and Postfix
# smtpd with smtputf8_enable = yes get the message with SMTPUTF8 on MAIL;
# aiosmtpd without it and Postfix smtpd with smtputf8_enable = no cost
# the UTF-8 recipients a bounce, dsn 5.6.7, while a message that asked
# for SMTPUTF8 but is all ASCII reaches them without it (the reference's
# rule), and the bounce notice to the UTF-8 sender keeps the request;
# sendmail marks a message with a UTF-8 recipient itself. Bounded
# in time; stops only what it started.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

need python3-aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'
need postfix test -x /usr/sbin/postfix

. tests/integration/lib/daemon_lib.sh
. tests/integration/lib/postfix_lib.sh
chmod 711 "$tmp"

port_u=$(free_port)
port_a=$(free_port)
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/u" \
    "$port_u" smtputf8 2>"$tmp/u.err" &
pids="$pids $!"
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/a" \
    "$port_a" 2>"$tmp/a.err" &
pids="$pids $!"
port_py=$(free_port)
port_pn=$(free_port)
postfix_start "$tmp/pf" \
    "127.0.0.1:$port_py inet n - n - 10 smtpd -o smtputf8_enable=yes
127.0.0.1:$port_pn inet n - n - 10 smtpd -o smtputf8_enable=no" <<EOF ||
myhostname = postfix.test
mydestination =
mynetworks = 127.0.0.0/8
relay_domains = py.test pn.test
relay_transport = discard:relayed
default_transport = discard:relayed
smtputf8_enable = yes
EOF
    { not_ok "Postfix starts"; sed 's/^/#   /' "$tmp/pf/start.out"; tap_done; }
if wait_for 10 test -f "$tmp/u/ready" && wait_for 10 test -f "$tmp/a/ready" &&
    wait_for 10 listening "$port_py" && wait_for 10 listening "$port_pn"; then
    ok "aiosmtpd and Postfix smtpd listen, with and without SMTPUTF8"
else
    not_ok "aiosmtpd and Postfix smtpd listen, with and without SMTPUTF8"
    tap_done
fi

cat >"$tmp/transport" <<EOF
u.test relay:[127.0.0.1]:$port_u
a.test relay:[127.0.0.1]:$port_a
py.test relay:[127.0.0.1]:$port_py
pn.test relay:[127.0.0.1]:$port_pn
b.test relay:[127.0.0.1]:$port_a
EOF
port=$(free_port)
d=$tmp/s
mkdir -p "$d"
cat >"$d/sluice.conf" <<EOF
queue_directory = $d/q
myhostname = sluice.test
smtpd_listen = 127.0.0.1:$port
smtpd_peername_lookup = no
mynetworks = 127.0.0.0/8
transport_maps = $tmp/transport
EOF
"$build/sluiced" -f -c "$d/sluice.conf" >"$d/log" 2>&1 &
daemon=$!
pids="$pids $daemon"
wait_for 10 listening "$port" && ok "sluiced listens" ||
    { not_ok "sluiced listens"; sed 's/^/#   /' "$d/log"; tap_done; }

# smtplib: SMTPUTF8 declared, a UTF-8 sender and recipients.
out=$(timeout 20 /usr/bin/python3 - "$port" <<'PYEOF' 2>&1
import smtplib, sys
from email.message import EmailMessage
m = EmailMessage()
m["From"] = "élève@b.test"
m["To"] = "jörg@u.test"
m["Subject"] = "grüße"
m.set_content("hallo\n")
s = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), local_hostname="c.test",
                 timeout=10)
s.ehlo()
print("offered" if s.has_extn("smtputf8") else "not offered")
s.send_message(m, from_addr="élève@b.test",
               to_addrs=["jörg@u.test", "jörg@a.test", "jörg@py.test",
                         "jörg@pn.test"],
               mail_options=["SMTPUTF8"])
s.quit()
print("sent")
PYEOF
)
expect "smtplib: SMTPUTF8 offered, the message taken" "offered
sent" "$out"

wait_for 20 sh -c "[ \$(grep -c 'status=' '$d/log') -ge 4 ]"
grep -qF "to=<jörg@u.test>, relay=127.0.0.1[127.0.0.1]:$port_u" "$d/log" &&
    grep -F "to=<jörg@u.test>" "$d/log" | grep -q "status=sent" &&
    ok "aiosmtpd with SMTPUTF8: delivered" ||
    not_ok "aiosmtpd with SMTPUTF8: delivered"
f=$(ls "$tmp/u"/*.eml 2>/dev/null | head -n 1)
expect "aiosmtpd with SMTPUTF8: the envelope and the MAIL parameter" \
    "from: élève@b.test
to: jörg@u.test
yes" "$(sed -n 2,3p "$f" 2>/dev/null; grep -q '^options: .*SMTPUTF8' "$f" 2>/dev/null && echo yes)"
grep -q "^Subject: grüße" "$f" 2>/dev/null &&
    ok "aiosmtpd with SMTPUTF8: the UTF-8 header as sent" ||
    not_ok "aiosmtpd with SMTPUTF8: the UTF-8 header as sent"
grep -q "with UTF8SMTP id" "$f" 2>/dev/null &&
    ok "Received: says UTF8SMTP (RFC 6531 3.7.3)" ||
    not_ok "Received: says UTF8SMTP (RFC 6531 3.7.3)"
grep -F "to=<jörg@py.test>" "$d/log" | grep -q "status=sent" &&
    ok "Postfix smtpd with smtputf8_enable = yes: delivered" ||
    not_ok "Postfix smtpd with smtputf8_enable = yes: delivered"
grep -q "jörg@py.test" "$tmp/pf/maillog" &&
    ok "Postfix smtpd logged the UTF-8 recipient" ||
    not_ok "Postfix smtpd logged the UTF-8 recipient"
for dest in "a.test:$port_a" "pn.test:$port_pn"; do
    dom=${dest%%:*}
    p=${dest#*:}
    grep -qF "to=<jörg@$dom>, relay=127.0.0.1[127.0.0.1]:$p, delay=" "$d/log" &&
        grep -F "to=<jörg@$dom>" "$d/log" | grep -qF "dsn=5.6.7, status=bounced (SMTPUTF8 is required, but was not offered by host 127.0.0.1[127.0.0.1])" &&
        ok "$dom without SMTPUTF8: bounced, 5.6.7" ||
        { not_ok "$dom without SMTPUTF8: bounced, 5.6.7"; grep -F "jörg@$dom" "$d/log" | sed 's/^/#   /'; }
done
# The notices to élève@b.test keep the request: bounced there too.
wait_for 20 sh -c "grep -F 'to=<élève@b.test>' '$d/log' | grep -q status=" &&
    grep -F "to=<élève@b.test>" "$d/log" | grep -qF "dsn=5.6.7, status=bounced (SMTPUTF8 is required" &&
    ok "the bounce notice keeps SMTPUTF8: 5.6.7 where it is not offered" ||
    { not_ok "the bounce notice keeps SMTPUTF8: 5.6.7 where it is not offered"; grep -F "élève@b.test" "$d/log" | sed 's/^/#   /'; }
expect "nothing reached aiosmtpd without SMTPUTF8" 0 \
    "$(ls "$tmp/a"/*.eml 2>/dev/null | wc -l)"

# SMTPUTF8 asked for, every address and header ASCII: no need for it.
out=$(timeout 20 /usr/bin/python3 - "$port" <<'PYEOF' 2>&1
import smtplib, sys
s = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), local_hostname="c.test",
                 timeout=10)
s.sendmail("s@b.test", ["r@a.test", "r@pn.test"],
           b"Subject: ascii\r\n\r\nplain\r\n", mail_options=["SMTPUTF8"])
s.quit()
print("sent")
PYEOF
)
expect "smtplib: an ASCII message with SMTPUTF8 taken" sent "$out"
wait_for 20 sh -c "grep -F 'to=<r@pn.test>' '$d/log' | grep -q status=sent" &&
    ok "ASCII with SMTPUTF8: Postfix without it gets it" ||
    not_ok "ASCII with SMTPUTF8: Postfix without it gets it"
wait_for 20 sh -c "ls '$tmp/a'/*.eml >/dev/null 2>&1"
f=$(ls "$tmp/a"/*.eml 2>/dev/null | head -n 1)
if [ -n "$f" ] && ! grep -q '^options: .*SMTPUTF8' "$f"; then
    ok "ASCII with SMTPUTF8: aiosmtpd without it gets it, no SMTPUTF8 on MAIL"
else
    not_ok "ASCII with SMTPUTF8: aiosmtpd without it gets it, no SMTPUTF8 on MAIL"
fi

# A strict client's mistakes: UTF-8 without SMTPUTF8; a bad UTF-8 line.
talk() {
    printf "$1" | timeout 10 /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.stdin.buffer.read()); s.shutdown(socket.SHUT_WR)
sys.stdout.write(s.makefile("rb").read().decode("utf-8", "replace"))' "$port" |
        tr -d '\r'
}
out=$(talk 'EHLO c.test\r\nMAIL FROM:<\303\251@b.test>\r\nMAIL FROM:<s@b.test>\r\nRCPT TO:<j\303\266rg@u.test>\r\nRSET\r\nMAIL FROM:<caf\351@b.test> SMTPUTF8\r\nQUIT\r\n' |
    grep -v '^250-\|^220 ')
expect "553 5.6.7 for UTF-8 without SMTPUTF8, 500 for bad UTF-8" \
    "250 CHUNKING
553 5.6.7 Must declare SMTPUTF8 to send unicode address
250 2.1.0 Ok
553 5.6.7 Must declare SMTPUTF8 to send unicode address
250 2.0.0 Ok
500 5.5.2 Error: bad UTF-8 syntax
221 2.0.0 Bye" "$out"

# sendmail: a UTF-8 recipient makes the message ask for SMTPUTF8.
printf 'Subject: local\n\nhi\n' |
    "$build/sluice" -c "$d/sluice.conf" sendmail -f s@b.test 'zoë@u.test'
wait_for 20 sh -c "grep -F 'to=<zoë@u.test>' '$d/log' | grep -q status=sent" &&
    ok "sendmail with a UTF-8 recipient: delivered with SMTPUTF8" ||
    not_ok "sendmail with a UTF-8 recipient: delivered with SMTPUTF8"
f=$(grep -l '^to: zoë@u.test' "$tmp/u"/*.eml 2>/dev/null | head -n 1)
grep -q '^options: .*SMTPUTF8' "$f" 2>/dev/null &&
    ok "sendmail's message went out with SMTPUTF8 on MAIL" ||
    not_ok "sendmail's message went out with SMTPUTF8 on MAIL"

# smtputf8_enable = no, by reload: not offered, 555 when declared.
echo "smtputf8_enable = no" >>"$d/sluice.conf"
kill -HUP "$daemon"
wait_for 10 grep -q "reloaded: " "$d/log" || not_ok "sluiced reloads"
out=$(talk 'EHLO c.test\r\nMAIL FROM:<s@b.test> SMTPUTF8\r\nQUIT\r\n')
case $out in
*SMTPUTF8*250\ CHUNKING*) not_ok "smtputf8_enable = no: not offered" ;;
*) ok "smtputf8_enable = no: not offered" ;;
esac
case $out in
*"555 5.5.4 Unsupported parameter SMTPUTF8"*) ok "smtputf8_enable = no: MAIL ... SMTPUTF8 is 555" ;;
*) not_ok "smtputf8_enable = no: MAIL ... SMTPUTF8 is 555"; echo "$out" | sed 's/^/#   /' ;;
esac
tap_done
