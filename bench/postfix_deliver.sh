#!/bin/sh
# NAME
#	postfix_deliver.sh - how fast sluiced and a private Postfix deliver
#	the issue 5 workload to the same local smtp-sinks
# SYNOPSIS
#	bench/postfix_deliver.sh [-n MESSAGES] [-d DOMAINS] [-p PORT]
#		[-s SESSIONS] [-t TIMEOUT] [-o both|postfix|sluice] [-k]
#	bench/postfix_deliver.sh ... --only postfix|sluice
# DESCRIPTION
#	The workload: MESSAGES (default 20000) messages of one recipient and
#	a 2 KB body each, spread evenly over DOMAINS (default 100) domains
#	d1.bench ... dD.bench, each served by its own smtp-sink on
#	127.0.1.i:PORT (default 2525). Everything runs on loopback, in a
#	fresh directory from mktemp -d under $TMPDIR (default /tmp; the
#	postfix user must be able to reach it, and the fsyncs of both
#	Postfix and sluice go to its filesystem), removed at the end.
#
#	The sinks are started once and serve both runs: first Postfix,
#	which is stopped (and its processes gone) before sluiced starts,
#	then sluice. Each run checks that the sinks' message counters grew
#	by exactly MESSAGES during it.
#
#	Postfix runs as a private instance in that directory (its own
#	main.cf, master.cf, queue and maillog), with Postfix's defaults
#	except what a private, DNS-less instance on loopback needs.
#
#	Injection and delivery are measured separately, because the
#	comparison is about delivery. The messages are injected with
#	smtp-source into the instance's smtpd, which puts every one on hold
#	(check_client_access static:HOLD): cleanup has made it durable, as
#	for any accepted message, but the queue manager does not see it.
#	Then "postsuper -H ALL" releases them all into the deferred queue
#	and "postqueue -f" has qmgr take them at once. (Leaving qmgr out of
#	master.cf during the injection would be simpler, but then cleanup
#	takes a second per message.) The delivery time runs from the first
#	to the last "status=sent" line of the instance's maillog, timed as
#	the lines are written (the log itself has whole seconds only); the
#	time from the release to the last delivery is printed too, and the
#	sinks' own message counters are checked against MESSAGES.
#
#	sluice runs with its built-in defaults except queue_directory,
#	myhostname, transport_maps (each domain to its sink through the
#	relay transport, [address]:port, so no DNS) and smtpd_listen
#	(empty: no SMTP server, which this benchmark does not use). With sluiced not
#	running, every message is stored with one "sluice sendmail" per
#	message (the same 2 KB body shape, one recipient, the domains taken
#	in turn), and "sluice queue" must list MESSAGES requests. Then
#	"sluiced -f" starts and delivers them all. The delivery time runs
#	from the first to the last "status=sent" line, from the millisecond
#	timestamps of sluiced's own log; the time from starting sluiced to
#	the last "removed" line (the queue empty) is printed too, "sluice
#	queue" must then say the queue is empty, and sluiced is stopped
#	with SIGTERM and must exit with status 0.
#
#	With both runs, the last line is the ratio of the delivery rates,
#	sluice over Postfix.
#
#	-n MESSAGES	(or BENCH_MESSAGES) messages to deliver
#	-d DOMAINS	(or BENCH_DOMAINS) domains, at most 250
#	-p PORT		(or BENCH_PORT) the sinks' and smtpd's port
#	-s SESSIONS	(or BENCH_SESSIONS, default 20) smtp-source sessions
#			per domain for the Postfix injection
#	-t TIMEOUT	(or BENCH_TIMEOUT) seconds to wait for all deliveries,
#			for each side; default 120 + MESSAGES/20. A run also
#			fails when no message is delivered for 60 seconds.
#	-o WHICH, --only WHICH
#			(or BENCH_ONLY) run "postfix", "sluice" or "both"
#			(the default)
#	-k		keep the directory (its path is printed)
#
#	The sluice programs are copied at the start of the sluice run from
#	BENCH_BUILD (default build/ next to this script's directory): run
#	make first. Pointing BENCH_BUILD at a build of a clean checkout
#	measures a commit rather than a work tree.
#
#	Run it by hand, as root (smtp-sink and Postfix need it), on a quiet
#	machine; not from make check. Figures vary between runs: compare
#	sluice and Postfix in one run.
# EXIT STATUS
#	0 when every message was delivered by each side run; 1 with a
#	message on stderr when a tool is missing, an address is taken, an
#	instance or sluiced does not start or not every message is
#	delivered in time.
set -eu

MESSAGES=${BENCH_MESSAGES:-20000}
DOMAINS=${BENCH_DOMAINS:-100}
PORT=${BENCH_PORT:-2525}
SESSIONS=${BENCH_SESSIONS:-20}
TIMEOUT=${BENCH_TIMEOUT:-}
ONLY=${BENCH_ONLY:-both}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
KEEP=0

# The sinks are 127.0.1.1 ... 127.0.1.D and Postfix's smtpd is
# 127.0.1.254, all on PORT: 127.0.1.0/24 keeps clear of the 127.0.0.x
# addresses the test suite uses.
SINK_NET=127.0.1
SMTPD_ADDR=$SINK_NET.254

DIR=
SINK_PIDS=
TAIL_PID=
AWK_PID=
POSTFIX_UP=0
SLUICED_PID=
# The two sides' delivery rates (messages over seconds, unrounded), for
# the ratio.
POSTFIX_RATE=
SLUICE_RATE=

die() {
	echo "postfix_deliver: $*" >&2
	exit 1
}

usage() {
	die "usage: postfix_deliver.sh [-n MESSAGES] [-d DOMAINS] [-p PORT] [-s SESSIONS] [-t TIMEOUT] [-o|--only both|postfix|sluice] [-k]"
}

is_count() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	*) [ "$1" -gt 0 ] ;;
	esac
}

# now: seconds since the epoch with nanoseconds, for wall-clock spans.
now() {
	date +%s.%N
}

# since START: seconds from START (a now() value) to now, 0.1 s precision.
since() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}

check_tools() {
	[ "$(id -u)" -eq 0 ] || die "run as root: smtp-sink and a Postfix instance need it"
	tools="smtp-sink ss awk grep date"
	[ "$ONLY" = sluice ] || tools="$tools postfix postmap postsuper postqueue smtp-source mkfifo tail"
	for tool in $tools; do
		command -v "$tool" >/dev/null 2>&1 ||
			die "$tool not found (bash .ci/install-deps installs Postfix)"
	done
	id postfix >/dev/null 2>&1 || die "no postfix user"
	if [ "$ONLY" != postfix ]; then
		for prog in sluice sluiced; do
			[ -x "$BUILD/$prog" ] || die "$BUILD/$prog not found: run make (or set BENCH_BUILD)"
		done
	fi
}

# check_free: fail before starting anything if one of our addresses is
# already listening (a sink of an earlier run, the system Postfix, ...).
check_free() {
	listening=$(ss -Hltn | awk '{ print $4 }')
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		taken "$SINK_NET.$i:$PORT" && die "$SINK_NET.$i:$PORT is in use"
		i=$((i + 1))
	done
	if [ "$ONLY" != sluice ]; then
		taken "$SMTPD_ADDR:$PORT" && die "$SMTPD_ADDR:$PORT is in use"
	fi
	return 0
}

taken() {
	printf '%s\n' "$listening" |
		grep -qx -e "$1" -e "0\.0\.0\.0:$PORT" -e "\*:$PORT" -e "\[::\]:$PORT"
}

# start_sinks: one smtp-sink per domain, each counting messages (-c) into
# its own file, with a backlog of 256 so that Postfix's up to 20
# connections per destination are never refused by the kernel.
start_sinks() {
	mkdir "$DIR/sinks"
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		smtp-sink -u postfix -c "$SINK_NET.$i:$PORT" 256 \
			>"$DIR/sinks/$i.count" 2>"$DIR/sinks/$i.err" &
		SINK_PIDS="$SINK_PIDS $!"
		i=$((i + 1))
	done
	# A sink that cannot bind exits at once; give them a moment, then
	# check that every one is still there and listening.
	sleep 1
	for pid in $SINK_PIDS; do
		kill -0 "$pid" 2>/dev/null || die "a smtp-sink exited: $(cat "$DIR"/sinks/*.err)"
	done
	up=$(ss -Hltn | awk -v net="$SINK_NET" -v port="$PORT" -v smtpd="$SMTPD_ADDR" '
		{ n = split($4, a, ":") }
		a[1] != smtpd && index(a[1], net ".") == 1 && a[n] == port { c++ }
		END { print c + 0 }')
	[ "$up" -ge "$DOMAINS" ] || die "only $up of $DOMAINS smtp-sinks listen"
}

# sink_messages: the sum of the sinks' "mesg=" counters. smtp-sink -c
# rewrites its counters after a carriage return, so the last record of
# each file is the current one.
sink_messages() {
	awk -v RS='\r' '
		{ for (f = 1; f <= NF; f++) if ($f ~ /^mesg=/) last[FILENAME] = substr($f, 6) }
		END { s = 0; for (k in last) s += last[k]; print s }' "$DIR"/sinks/*.count
}

# write_config: the private instance: configuration in etc/, queue in
# queue/, data in data/, its log in maillog (separate directories, so
# that "postfix check" does not find the postfix-owned queue inside the
# root-owned configuration directory). Defaults except for what running
# as a second instance, unchrooted, without DNS and syslog needs, the
# hold for the injection, and shorter retry times so that a deferral
# would be retried within a run. Concurrency, connection caching and
# process limits stay default: the Postfix a site gets out of the box.
write_config() {
	mkdir "$DIR/etc" "$DIR/queue" "$DIR/data"
	chown postfix:postfix "$DIR/data"
	: >"$DIR/maillog"
	chown postfix:postfix "$DIR/maillog"

	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		printf 'd%s.bench\tsmtp:[%s.%s]:%s\n' "$i" "$SINK_NET" "$i" "$PORT"
		i=$((i + 1))
	done >"$DIR/etc/transport"

	cat >"$DIR/etc/main.cf" <<EOF
# compatibility_level as in Debian's own main.cf: today's defaults, and
# no "using backwards-compatible default setting" noise in the log.
compatibility_level = 3.6
mail_owner = postfix
myhostname = postfix.sluice-bench.test
queue_directory = $DIR/queue
data_directory = $DIR/data
# Postfix accepts only addresses configured on an interface, and lo has
# just 127.0.0.1; master.cf gives smtpd its own address anyway.
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
# Every accepted message goes to the hold queue, for the release.
smtpd_client_restrictions = check_client_access static:HOLD
# No local deliveries are expected; no system alias database to need.
alias_maps =
alias_database =
transport_maps = hash:$DIR/etc/transport
smtp_dns_support_level = disabled
queue_run_delay = 1s
minimal_backoff_time = 2s
maximal_backoff_time = 4s
maillog_file = $DIR/maillog
maillog_file_prefixes = $DIR
EOF
	# The services, all unchrooted (the queue is not laid out for
	# chroot), smtpd on its own address and port.
	cat >"$DIR/etc/master.cf" <<EOF
$SMTPD_ADDR:$PORT inet n - n - - smtpd
pickup    unix  n - n 60 1 pickup
cleanup   unix  n - n -  0 cleanup
qmgr      unix  n - n 300 1 qmgr
tlsmgr    unix  - - n 1000? 1 tlsmgr
rewrite   unix  - - n -  - trivial-rewrite
bounce    unix  - - n -  0 bounce
defer     unix  - - n -  0 bounce
trace     unix  - - n -  0 bounce
verify    unix  - - n -  1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n -  - proxymap
proxywrite unix - - n -  1 proxymap
smtp      unix  - - n -  - smtp
relay     unix  - - n -  - smtp
showq     unix  n - n -  - showq
error     unix  - - n -  - error
retry     unix  - - n -  - error
discard   unix  - - n -  - discard
local     unix  - n n -  - local
virtual   unix  - n n -  - virtual
lmtp      unix  - - n -  - lmtp
anvil     unix  - - n -  1 anvil
scache    unix  - - n -  1 scache
postlog   unix-dgram n - n - 1 postlogd
EOF
	postmap -c "$DIR/etc" "hash:$DIR/etc/transport"
}

# watch_log: follow the maillog and write to $DIR/delivered the number
# of "status=sent" lines so far, and at the last one "done FIRST LAST":
# the wall-clock times of the first and the last. One reader for the
# run, so that the benchmark does not grep a growing log over and over;
# tail and awk are joined by a fifo so that both pids are known.
watch_log() {
	mkfifo "$DIR/log.fifo"
	tail -n +1 -F "$DIR/maillog" >"$DIR/log.fifo" 2>/dev/null &
	TAIL_PID=$!
	# mawk (Debian's awk) reads a pipe in blocks unless interactive:
	# the last lines would wait for more input that never comes.
	interactive=
	awk -W version 2>/dev/null | grep -q mawk && interactive="-W interactive"
	# shellcheck disable=SC2086 # $interactive is two words or none
	awk $interactive -v want="$MESSAGES" -v out="$DIR/delivered" '
		function now(  t) { "date +%s.%N" | getline t; close("date +%s.%N"); return t }
		/ status=sent / {
			n++
			if (n == 1) first = now()
			if (n >= want) { printf "done %s %s\n", first, now() > out; close(out); exit }
			if (n % 100 == 0) { print n > out; close(out) }
		}' <"$DIR/log.fifo" &
	AWK_PID=$!
}

# delivered: the count watch_log wrote last.
delivered() {
	n=0
	[ -s "$DIR/delivered" ] && read -r n _ <"$DIR/delivered"
	[ "$n" = "done" ] && n=$MESSAGES
	echo "$n"
}

# log_count STATUS: the maillog's "status=STATUS" lines.
log_count() {
	grep -c " status=$1 " "$DIR/maillog" || true
}

# rate N SECONDS: messages per second, rounded.
rate() {
	awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "?" }'
}

# inject: N messages, N/D per domain (the first N mod D domains get one
# more), each with one recipient (-N makes them 1u@dI.bench, 2u@... so
# no two are alike) and a 2 KB body, through smtpd, in D runs of
# smtp-source with SESSIONS sessions each.
inject() {
	per=$((MESSAGES / DOMAINS))
	extra=$((MESSAGES % DOMAINS))
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		m=$per
		[ "$i" -le "$extra" ] && m=$((m + 1))
		if [ "$m" -gt 0 ]; then
			s=$SESSIONS
			[ "$s" -gt "$m" ] && s=$m
			smtp-source -s "$s" -m "$m" -l 2048 -N \
				-f bench@sluice-bench.test -t "u@d$i.bench" \
				"$SMTPD_ADDR:$PORT" >>"$DIR/inject.log" 2>&1 ||
				die "smtp-source to d$i.bench failed: $(tail -n 5 "$DIR/inject.log")"
		fi
		i=$((i + 1))
	done
}

# held_count: messages in the instance's hold queue.
held_count() {
	find "$DIR/queue/hold" -type f | wc -l
}

# run_postfix: start the instance, inject on hold, release, and wait
# for every message to be delivered.
run_postfix() {
	write_config
	postfix -c "$DIR/etc" start >"$DIR/postfix-start.log" 2>&1 ||
		die "the Postfix instance did not start: $(cat "$DIR/postfix-start.log")"
	POSTFIX_UP=1
	# master writes its pid file once it is listening; wait for it.
	t=0
	until [ -s "$DIR/queue/pid/master.pid" ]; do
		t=$((t + 1))
		[ "$t" -le 50 ] || die "the Postfix instance did not start (no master.pid)"
		sleep 0.1
	done

	sunk0=$(sink_messages)
	start=$(now)
	inject
	inject_s=$(since "$start")
	# smtpd answered 250 only after cleanup made each message durable;
	# the count is a check that none was lost or went elsewhere.
	held=$(held_count)
	[ "$held" -eq "$MESSAGES" ] ||
		die "$held of $MESSAGES messages on hold after the injection (see $DIR/maillog)"
	echo "postfix: $MESSAGES messages injected with smtp-source in $inject_s s" \
		"= $(rate "$MESSAGES" "$inject_s") msg/s"

	watch_log
	release=$(now)
	postsuper -c "$DIR/etc" -H ALL 2>>"$DIR/postfix-start.log" ||
		die "postsuper -H failed: $(tail -n 5 "$DIR/postfix-start.log")"
	postqueue -c "$DIR/etc" -f || die "postqueue -f failed"

	deadline=$(($(date +%s) + TIMEOUT))
	last_n=0
	last_change=$(date +%s)
	while :; do
		n=$(delivered)
		[ "$n" -ge "$MESSAGES" ] && break
		kill -0 "$AWK_PID" 2>/dev/null || die "the maillog reader exited"
		t=$(date +%s)
		if [ "$n" -ne "$last_n" ]; then
			last_n=$n
			last_change=$t
		fi
		[ "$t" -lt "$deadline" ] ||
			die "about $n of $MESSAGES delivered after $TIMEOUT s (see $DIR/maillog)"
		[ $((t - last_change)) -lt 60 ] ||
			die "no delivery for 60 s, about $n of $MESSAGES delivered (see $DIR/maillog)"
		sleep 0.5
	done
	read -r _ first last <"$DIR/delivered"
	span=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.1f", b - a }')
	wall=$(awk -v a="$release" -v b="$last" 'BEGIN { printf "%.1f", b - a }')
	wait "$AWK_PID" || true
	AWK_PID=
	kill "$TAIL_PID" 2>/dev/null || true
	wait "$TAIL_PID" 2>/dev/null || true
	TAIL_PID=

	sent=$(log_count sent)
	deferred=$(log_count deferred)
	bounced=$(log_count bounced)
	sunk=$(($(sink_messages) - sunk0))
	POSTFIX_RATE=$(awk -v n="$MESSAGES" -v a="$first" -v b="$last" 'BEGIN { if (b > a) printf "%.3f", n / (b - a) }')
	echo "postfix: $MESSAGES messages to $DOMAINS domains delivered in $span s" \
		"= $(rate "$MESSAGES" "$span") msg/s (first to last delivery)"
	echo "postfix: release to last delivery $wall s = $(rate "$MESSAGES" "$wall") msg/s;" \
		"$sent sent, $deferred deferred, $bounced bounced; the sinks counted $sunk"
	if [ "$sunk" -ne "$MESSAGES" ] || [ "$sent" -ne "$MESSAGES" ]; then
		die "the sinks counted $sunk messages and Postfix logged $sent as sent, for $MESSAGES"
	fi
	# Out of the way of the sluice run: its processes gone, its sink
	# connections closed.
	stop_postfix
	in_use "$DIR" && die "Postfix processes still in $DIR after the stop"
	return 0
}

# stop_postfix: stop the instance (by its config directory) and wait up
# to 10 s for every process working in the instance's directory to exit
# (master's children notice it is gone and exit within seconds).
stop_postfix() {
	[ "$POSTFIX_UP" -eq 1 ] || return 0
	POSTFIX_UP=0
	postfix -c "$DIR/etc" stop >/dev/null 2>&1 || true
	t=0
	while [ "$t" -lt 100 ] && in_use "$DIR"; do
		t=$((t + 1))
		sleep 0.1
	done
}

# sluice: the sluice command with the benchmark's configuration.
sluice() {
	"$DIR/sluice/bin/sluice" -c "$DIR/sluice/sluice.conf" "$@"
}

# write_sluice_config: the built-in defaults (concurrency 20 per
# destination, at most 100 deliveries per transport, connection cache on
# demand, 20000 messages in memory) except the spool, the name and where
# each domain goes: relay:[address]:port, no DNS.
write_sluice_config() {
	mkdir "$DIR/sluice" "$DIR/sluice/bin"
	# A copy of the programs, so that a rebuild of $BUILD during the run
	# (make replaces the files) cannot break or change it.
	cp "$BUILD/sluice" "$BUILD/sluiced" "$DIR/sluice/bin/" ||
		die "cannot copy the sluice programs from $BUILD"
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		printf 'd%s.bench relay:[%s.%s]:%s\n' "$i" "$SINK_NET" "$i" "$PORT"
		i=$((i + 1))
	done >"$DIR/sluice/transport"
	cat >"$DIR/sluice/sluice.conf" <<EOF
queue_directory = $DIR/sluice/queue
myhostname = sluice.sluice-bench.test
transport_maps = $DIR/sluice/transport
smtpd_listen =
EOF
}

# sluice_inject: MESSAGES messages with sluiced not running, one "sluice
# sendmail" each, which stores the message durably before it exits. The
# same shape as smtp-source's: From, To, Date and Message-Id headers and
# a body of 26 numbered lines of 78 characters (about 2 KB); one
# recipient, NuN@dI.bench as with smtp-source -N, the same count per
# domain (the first MESSAGES mod DOMAINS domains get one more), the
# domains taken in turn rather than one after the other (the order in
# which Postfix's release takes them is its queue's, hashed by queue id,
# not the injection's).
sluice_inject() {
	body=$(awk 'BEGIN {
		x = sprintf("%77s", ""); gsub(/ /, "X", x)
		for (i = 1; i <= 26; i++) print substr(i x, 1, 78) }')
	date=$(date -R)
	per=$((MESSAGES / DOMAINS))
	extra=$((MESSAGES % DOMAINS))
	k=1
	n=0
	while [ "$n" -lt "$MESSAGES" ]; do
		i=1
		while [ "$i" -le "$DOMAINS" ] && [ "$n" -lt "$MESSAGES" ]; do
			m=$per
			[ "$i" -le "$extra" ] && m=$((m + 1))
			if [ "$k" -le "$m" ]; then
				rcpt="${k}u@d$i.bench"
				printf 'From: <bench@sluice-bench.test>\nTo: <%s>\nDate: %s\nMessage-Id: <%s.%s@sluice-bench.test>\n\n%s\n' \
					"$rcpt" "$date" "$k" "$i" "$body" |
					sluice sendmail -f bench@sluice-bench.test "$rcpt" 2>>"$DIR/sluice/inject.log" ||
					die "sluice sendmail for $rcpt failed: $(tail -n 5 "$DIR/sluice/inject.log")"
				n=$((n + 1))
			fi
			i=$((i + 1))
		done
		k=$((k + 1))
	done
}

# queued_count: the requests "sluice queue" lists ("-- N Kbytes in N
# Requests."), or 0 for "Mail queue is empty".
queued_count() {
	sluice queue | awk '
		/Mail queue is empty/ { print 0; found = 1; exit }
		/^-- .* in [0-9]+ Request/ { for (f = 1; f < NF; f++) if ($f == "in") { print $(f + 1); found = 1; exit } }
		END { if (!found) print -1 }'
}

# stamp LINE: the epoch time, with milliseconds, of a sluiced log line
# (its first field is the local time, 2026-11-22T02:11:52.798).
stamp() {
	t=${1%% *}
	date -d "${t%%T*} ${t#*T}" +%s.%3N
}

# run_sluice: store every message with sluiced stopped, start sluiced,
# wait until it logged every message removed, check, stop it.
run_sluice() {
	write_sluice_config
	log=$DIR/sluice/sluiced.log
	sunk0=$(sink_messages)

	start=$(now)
	sluice_inject
	inject_s=$(since "$start")
	queued=$(queued_count)
	[ "$queued" -eq "$MESSAGES" ] ||
		die "sluice queue lists $queued of $MESSAGES messages after the injection"
	echo "sluice: $MESSAGES messages injected with sluice sendmail (one process each," \
		"one after the other) in $inject_s s = $(rate "$MESSAGES" "$inject_s") msg/s"

	: >"$log"
	started=$(now)
	"$DIR/sluice/bin/sluiced" -f -c "$DIR/sluice/sluice.conf" 2>"$log" &
	SLUICED_PID=$!

	deadline=$(($(date +%s) + TIMEOUT))
	last_n=0
	last_change=$(date +%s)
	while :; do
		n=$(grep -c ': removed$' "$log" || true)
		[ "$n" -ge "$MESSAGES" ] && break
		kill -0 "$SLUICED_PID" 2>/dev/null ||
			die "sluiced exited: $(tail -n 5 "$log")"
		t=$(date +%s)
		if [ "$n" -ne "$last_n" ]; then
			last_n=$n
			last_change=$t
		fi
		[ "$t" -lt "$deadline" ] ||
			die "$n of $MESSAGES messages removed after $TIMEOUT s (see $log)"
		[ $((t - last_change)) -lt 60 ] ||
			die "no message removed for 60 s, $n of $MESSAGES (see $log)"
		sleep 0.5
	done
	queued=$(queued_count)
	[ "$queued" -eq 0 ] || die "sluice queue lists $queued messages after the last removal"

	sent=$(grep -c ' status=sent ' "$log" || true)
	deferred=$(grep -c ' status=deferred ' "$log" || true)
	bounced=$(grep -c ' status=bounced ' "$log" || true)
	sunk=$(($(sink_messages) - sunk0))
	first=$(stamp "$(grep -m 1 ' status=sent ' "$log")")
	last=$(stamp "$(grep ' status=sent ' "$log" | tail -n 1)")
	empty=$(stamp "$(grep ': removed$' "$log" | tail -n 1)")
	up=$(stamp "$(grep -m 1 ': started: ' "$log")")
	span=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.3f", b - a }')
	wall=$(awk -v a="$started" -v b="$empty" 'BEGIN { printf "%.3f", b - a }')
	boot=$(awk -v a="$started" -v b="$up" 'BEGIN { printf "%.3f", b - a }')
	SLUICE_RATE=$(awk -v n="$MESSAGES" -v s="$span" 'BEGIN { if (s > 0) printf "%.3f", n / s }')

	# Stop it as an operator would, and check that it drained cleanly.
	kill -TERM "$SLUICED_PID"
	status=0
	wait "$SLUICED_PID" || status=$?
	SLUICED_PID=
	[ "$status" -eq 0 ] || die "sluiced exited with status $status after SIGTERM: $(tail -n 3 "$log")"
	others=$(grep -c -v -e ' status=sent ' -e ': removed$' -e ': started: queue ' \
		-e ': stopping on signal 15: ' -e ': stopped: ' "$log" || true)

	echo "sluice: $MESSAGES messages to $DOMAINS domains delivered in $span s" \
		"= $(rate "$MESSAGES" "$span") msg/s (first to last delivery)"
	echo "sluice: start to queue empty $wall s = $(rate "$MESSAGES" "$wall") msg/s" \
		"(started: logged after $boot s); $sent sent, $deferred deferred, $bounced bounced;" \
		"the sinks counted $sunk; $others other log lines"
	echo "sluice: $(grep ': stopped: ' "$log" | sed 's/.*: stopped: /stopped: /')"
	if [ "$sunk" -ne "$MESSAGES" ] || [ "$sent" -ne "$MESSAGES" ]; then
		die "the sinks counted $sunk messages and sluiced logged $sent as sent, for $MESSAGES (see $log)"
	fi
	if [ "$others" -ne 0 ]; then
		echo "sluice: other log lines (the first 10):"
		grep -v -e ' status=sent ' -e ': removed$' -e ': started: queue ' \
			-e ': stopping on signal 15: ' -e ': stopped: ' "$log" | head -n 10
	fi
	return 0
}

# stop_all: on every exit. Only what this script started: the instance
# (by its config directory) and the sinks (by their pids).
stop_all() {
	status=$?
	trap - EXIT INT TERM HUP
	if [ -n "$SLUICED_PID" ]; then
		kill -TERM "$SLUICED_PID" 2>/dev/null || true
		wait "$SLUICED_PID" 2>/dev/null || true
		SLUICED_PID=
	fi
	if [ "$POSTFIX_UP" -eq 1 ]; then
		stop_postfix
		in_use "$DIR" && echo "postfix_deliver: Postfix processes still in $DIR" >&2
	fi
	for pid in $SINK_PIDS $TAIL_PID $AWK_PID; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $SINK_PIDS $TAIL_PID $AWK_PID; do
		wait "$pid" 2>/dev/null || true
	done
	if [ -n "$DIR" ]; then
		if [ "$KEEP" -eq 1 ] || in_use "$DIR"; then
			echo "postfix_deliver: kept $DIR" >&2
		else
			rm -rf "$DIR"
		fi
	fi
	exit "$status"
}

# in_use DIR: whether a process has its working directory under DIR
# (Postfix's daemons run in their queue directory).
in_use() {
	for cwd in /proc/[0-9]*/cwd; do
		case $(readlink "$cwd" 2>/dev/null) in
		"$1" | "$1"/*) return 0 ;;
		esac
	done
	return 1
}

# --only WHICH (or --only=WHICH) is -o WHICH; getopts has no long options.
for arg; do
	shift
	case $arg in
	--only) set -- "$@" -o ;;
	--only=*) set -- "$@" -o "${arg#--only=}" ;;
	*) set -- "$@" "$arg" ;;
	esac
done
while getopts n:d:p:s:t:o:k opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	d) DOMAINS=$OPTARG ;;
	p) PORT=$OPTARG ;;
	s) SESSIONS=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	o) ONLY=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for v in "$MESSAGES" "$DOMAINS" "$PORT" "$SESSIONS"; do
	is_count "$v" || usage
done
case $ONLY in both | postfix | sluice) ;; *) usage ;; esac
[ "$DOMAINS" -le 250 ] || die "at most 250 domains (127.0.1.1 ... 127.0.1.250)"
[ -n "$TIMEOUT" ] || TIMEOUT=$((120 + MESSAGES / 20))
is_count "$TIMEOUT" || usage

check_tools
check_free
trap stop_all EXIT
trap 'die interrupted' INT TERM HUP
DIR=$(mktemp -d "${TMPDIR:-/tmp}/postfix_deliver.XXXXXX")
# The Postfix daemons, running as postfix, open paths under DIR.
chmod 755 "$DIR"
echo "postfix_deliver: $MESSAGES messages, $DOMAINS domains, in $DIR; $(uptime | sed 's/.*load/load/')"

start_sinks
[ "$ONLY" = sluice ] || run_postfix
[ "$ONLY" = postfix ] || run_sluice
if [ "$ONLY" = both ]; then
	awk -v s="$SLUICE_RATE" -v p="$POSTFIX_RATE" 'BEGIN {
		if (p > 0) printf "ratio: sluice/postfix = %.2f (delivery rate)\n", s / p
		else print "ratio: sluice/postfix = ? (delivery rate)" }'
fi
