#!/bin/sh
# NAME
#	postfix_deliver.sh - how fast a private Postfix delivers the issue 5
#	workload to local smtp-sinks
# SYNOPSIS
#	bench/postfix_deliver.sh [-n MESSAGES] [-d DOMAINS] [-p PORT]
#		[-s SESSIONS] [-t TIMEOUT] [-k]
# DESCRIPTION
#	The workload: MESSAGES (default 20000) messages of one recipient and
#	a 2 KB body each, spread evenly over DOMAINS (default 100) domains
#	d1.bench ... dD.bench, each served by its own smtp-sink on
#	127.0.1.i:PORT (default 2525). Everything runs on loopback, in a
#	fresh directory from mktemp -d under $TMPDIR (default /tmp; the
#	postfix user must be able to reach it, and Postfix's fsyncs go to
#	its filesystem), removed at the end.
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
#	-n MESSAGES	(or BENCH_MESSAGES) messages to deliver
#	-d DOMAINS	(or BENCH_DOMAINS) domains, at most 250
#	-p PORT		(or BENCH_PORT) the sinks' and smtpd's port
#	-s SESSIONS	(or BENCH_SESSIONS, default 20) smtp-source sessions
#			per domain for the injection
#	-t TIMEOUT	(or BENCH_TIMEOUT) seconds to wait for all deliveries;
#			default 120 + MESSAGES/20. The run also fails when no
#			message is delivered for 60 seconds.
#	-k		keep the directory (its path is printed)
#
#	Run it by hand, as root (smtp-sink and Postfix need it), on a quiet
#	machine; not from make check. Figures vary between runs: compare
#	sluice and Postfix in one run.
# EXIT STATUS
#	0 when every message was delivered; 1 with a message on stderr when
#	a tool is missing, an address is taken, the instance does not start
#	or not every message is delivered in time.
set -eu

MESSAGES=${BENCH_MESSAGES:-20000}
DOMAINS=${BENCH_DOMAINS:-100}
PORT=${BENCH_PORT:-2525}
SESSIONS=${BENCH_SESSIONS:-20}
TIMEOUT=${BENCH_TIMEOUT:-}
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

die() {
	echo "postfix_deliver: $*" >&2
	exit 1
}

usage() {
	die "usage: postfix_deliver.sh [-n MESSAGES] [-d DOMAINS] [-p PORT] [-s SESSIONS] [-t TIMEOUT] [-k]"
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
	for tool in postfix postmap postsuper postqueue smtp-sink smtp-source ss awk mkfifo tail; do
		command -v "$tool" >/dev/null 2>&1 ||
			die "$tool not found (bash .ci/install-deps installs Postfix)"
	done
	id postfix >/dev/null 2>&1 || die "no postfix user"
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
	taken "$SMTPD_ADDR:$PORT" && die "$SMTPD_ADDR:$PORT is in use"
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
	sunk=$(sink_messages)
	echo "postfix: $MESSAGES messages to $DOMAINS domains delivered in $span s" \
		"= $(rate "$MESSAGES" "$span") msg/s (first to last delivery)"
	echo "postfix: release to last delivery $wall s = $(rate "$MESSAGES" "$wall") msg/s;" \
		"$sent sent, $deferred deferred, $bounced bounced; the sinks counted $sunk"
	if [ "$sunk" -ne "$MESSAGES" ] || [ "$sent" -ne "$MESSAGES" ]; then
		die "the sinks counted $sunk messages and Postfix logged $sent as sent, for $MESSAGES"
	fi
}

# run_sluice goes here: the same workload through sluiced to the same
# sinks (and the ratio to Postfix printed after both), once the daemon
# exists. It is not written yet, so nothing here pretends to run it.

# stop_all: on every exit. Only what this script started: the instance
# (by its config directory) and the sinks (by their pids).
stop_all() {
	status=$?
	trap - EXIT INT TERM HUP
	if [ "$POSTFIX_UP" -eq 1 ]; then
		postfix -c "$DIR/etc" stop >/dev/null 2>&1 || true
		# master's children notice it is gone and exit within seconds;
		# wait for every process working in the instance's directory
		# before removing it.
		t=0
		while [ "$t" -lt 100 ] && in_use "$DIR"; do
			t=$((t + 1))
			sleep 0.1
		done
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

while getopts n:d:p:s:t:k opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	d) DOMAINS=$OPTARG ;;
	p) PORT=$OPTARG ;;
	s) SESSIONS=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for v in "$MESSAGES" "$DOMAINS" "$PORT" "$SESSIONS"; do
	is_count "$v" || usage
done
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
echo "postfix_deliver: $MESSAGES messages, $DOMAINS domains, in $DIR"

start_sinks
run_postfix
