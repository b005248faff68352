#!/bin/sh
# install.sh BUILD - "make install" into a DESTDIR (decision 91): the
# programs, the sendmail and mailq names, the manual pages, the
# configuration file and the systemd unit, with their modes; a second
# install keeps an edited configuration; the unit passes
# "systemd-analyze verify" with no output at all (it exits 0 on an
# unknown key); the installed sendmail and mailq are sluice's; the
# installed sluiced tells systemd READY=1 on $NOTIFY_SOCKET once it
# takes mail and STOPPING=1 when told to stop. About 3 s; stops only
# the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need systemd command -v systemd-analyze
need python3 command -v python3

root=$tmp/root
# -o: install what BUILD holds, never rebuild it (with other flags).
install_into() {
    make -s install BUILD="$build" DESTDIR="$root" -o "$build/sluice" \
        -o "$build/sluiced" -o "$build/sluice-sim" >"$tmp/make.out" 2>&1
}
install_into
expect "make install DESTDIR=... succeeds" 0 $?

modes() {
    for f in "$@"; do
        printf '%s %s\n' "$(stat -c %a "$root/$f" 2>/dev/null || echo missing)" "$f"
    done
}
expect "programs, pages, configuration, unit and spool, with their modes" \
"755 usr/local/bin/sluice
755 usr/local/bin/sluice-sim
755 usr/local/sbin/sluiced
644 usr/local/share/man/man1/sluice.1
644 usr/local/share/man/man1/sluice-sim.1
644 usr/local/share/man/man5/sluice.conf.5
644 usr/local/share/man/man5/sluice-rules.5
644 usr/local/share/man/man7/sluice-agent.7
644 usr/local/share/man/man8/sluiced.8
755 usr/local/libexec/sluice/maildir
755 usr/local/libexec/sluice/webhook
644 etc/sluice/sluice.conf
644 usr/local/lib/systemd/system/sluice.service
755 var/spool/sluice" "$(modes usr/local/bin/sluice usr/local/bin/sluice-sim \
    usr/local/sbin/sluiced usr/local/share/man/man1/sluice.1 \
    usr/local/share/man/man1/sluice-sim.1 \
    usr/local/share/man/man5/sluice.conf.5 \
    usr/local/share/man/man5/sluice-rules.5 \
    usr/local/share/man/man7/sluice-agent.7 \
    usr/local/share/man/man8/sluiced.8 \
    usr/local/libexec/sluice/maildir usr/local/libexec/sluice/webhook \
    etc/sluice/sluice.conf \
    usr/local/lib/systemd/system/sluice.service var/spool/sluice)"
expect "sendmail and mailq are sluice, under their names" \
    "../bin/sluice sluice" \
    "$(readlink "$root/usr/local/sbin/sendmail") $(readlink "$root/usr/local/bin/mailq")"
grep -q '^mail_owner = sluice$' "$root/etc/sluice/sluice.conf" &&
    ok "the installed configuration names mail_owner" ||
    not_ok "the installed configuration names mail_owner"

echo "queue_directory = $tmp/q" >>"$root/etc/sluice/sluice.conf"
install_into
grep -q "^queue_directory = $tmp/q\$" "$root/etc/sluice/sluice.conf" &&
    ok "a second install keeps the edited configuration" ||
    not_ok "a second install keeps the edited configuration"

unit=$root/usr/local/lib/systemd/system/sluice.service
grep -q '^ExecStart=/usr/local/sbin/sluiced -f$' "$unit" &&
    ok "the unit starts the installed sluiced" ||
    not_ok "the unit starts the installed sluiced"
# verify checks that ExecStart is executable: point it into DESTDIR.
mkdir -p "$tmp/unit"
sed "s|=/usr/local/sbin/|=$root/usr/local/sbin/|" "$unit" >"$tmp/unit/sluice.service"
out=$(timeout 30 systemd-analyze verify --man=no "$tmp/unit/sluice.service" 2>&1)
expect "systemd-analyze verify has nothing to say about the unit" "" "$out"
echo 'BogusKey=1' >>"$tmp/unit/sluice.service"
out=$(timeout 30 systemd-analyze verify --man=no "$tmp/unit/sluice.service" 2>&1)
case $out in *BogusKey*) ok "... and would say it about a bad key" ;;
*) not_ok "... and would say it about a bad key" ;; esac

# The installed programs, on a private configuration.
conf=$tmp/sluice.conf
# Mail waits in the queue (deferred by the error agent), for mailq to see.
printf 'queue_directory = %s/q\nsmtpd_listen =\nmail_owner = root\ndefault_transport = error:4.3.0 held for mailq\n' \
    "$tmp" >"$conf"
python3 - "$tmp/notify" >"$tmp/notify.out" 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(15)
for _ in range(2):
    print(s.recv(4096).decode(), flush=True)
EOF
listener=$!
pids="$pids $listener"
wait_for 10 test -S "$tmp/notify"
NOTIFY_SOCKET=$tmp/notify "$root/usr/local/sbin/sluiced" -f -c "$conf" \
    >"$tmp/log" 2>&1 &
daemon=$!
pids="$pids $daemon"
wait_for 10 grep -q READY=1 "$tmp/notify.out"
expect "READY=1 once sluiced takes mail" "READY=1 started" \
    "$(cat "$tmp/notify.out") $(grep -o 'started' "$tmp/log")"
printf 'Subject: x\n\nbody\n' | SLUICE_CONFIG=$conf \
    "$root/usr/local/sbin/sendmail" -f a@example.test b@example.test
expect "the installed sendmail submits" 0 $?
SLUICE_CONFIG=$conf "$root/usr/local/bin/mailq" >"$tmp/mailq.out" 2>&1
grep -q 'in 1 Request' "$tmp/mailq.out" && ok "the installed mailq lists the queue" ||
    { not_ok "the installed mailq lists the queue"; cat "$tmp/mailq.out"; }
kill "$daemon"
wait_for 15 grep -q STOPPING=1 "$tmp/notify.out"
expect "STOPPING=1 when told to stop" "READY=1
STOPPING=1" "$(cat "$tmp/notify.out")"
tap_done
