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
#	-q		(or BENCH_PREQUEUE=1) fill sluice's spool with
#			build/bench/prequeue (the group commit, 256 messages
#			in flight: 100,000 in seconds) instead of one "sluice
#			sendmail" per message; the same message count per
#			domain, the same 2 KB body size, one recipient each.
#			For drains of 50,000 and more, where sendmail takes
#			minutes (issue 16); run "make bench" first.
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

NAME=postfix_deliver
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MESSAGES=${BENCH_MESSAGES:-20000}
DOMAINS=${BENCH_DOMAINS:-100}
PORT=${BENCH_PORT:-2525}
SESSIONS=${BENCH_SESSIONS:-20}
TIMEOUT=${BENCH_TIMEOUT:-}
ONLY=${BENCH_ONLY:-both}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
KEEP=0
PREQUEUE=${BENCH_PREQUEUE:-0}

# The sinks are 127.0.1.1 ... 127.0.1.D and Postfix's smtpd is
# 127.0.1.254, all on PORT: 127.0.1.0/24 keeps clear of the 127.0.0.x
# addresses the test suite uses.
SINK_NET=127.0.1
SMTPD_ADDR=$SINK_NET.254

TAIL_PID=
AWK_PID=
# The two sides' delivery rates (messages over seconds, unrounded), for
# the ratio.
POSTFIX_RATE=
SLUICE_RATE=

usage() {
	die "usage: postfix_deliver.sh [-n MESSAGES] [-d DOMAINS] [-p PORT] [-s SESSIONS] [-t TIMEOUT] [-o|--only both|postfix|sluice] [-q] [-k]"
}

check_tools() {
	need_root "smtp-sink and a Postfix instance need it"
	set -- smtp-sink ss awk grep date
	[ "$ONLY" = sluice ] || set -- "$@" postfix postmap postsuper postqueue smtp-source mkfifo tail
	need_tools "$@"
	[ "$ONLY" = postfix ] || need_sluice "$BUILD" "set BENCH_BUILD"
}

# check_free: fail before starting anything if one of our addresses is
# already listening (a sink of an earlier run, the system Postfix, ...).
check_free() {
	set --
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		set -- "$@" "$SINK_NET.$i:$PORT"
		i=$((i + 1))
	done
	[ "$ONLY" = sluice ] || set -- "$@" "$SMTPD_ADDR:$PORT"
	need_free "$@"
}

# start_sinks: one smtp-sink per domain, each counting messages (-c) into
# its own file, with a backlog of 256 so that Postfix's up to 20
# connections per destination are never refused by the kernel.
start_sinks() {
	mkdir "$DIR/sinks"
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		smtp_sink "$SINK_NET.$i:$PORT" "$DIR/sinks/$i"
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

# sinks_messages: the sum of the sinks' "mesg=" counters.
sinks_messages() {
	sink_messages "$DIR"/sinks/*.count
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
	# smtpd on its own address and port, its process limit the default.
	postfix_config "$DIR" "$SMTPD_ADDR:$PORT inet n - n - - smtpd" <<EOF
mynetworks = 127.0.0.0/8
# Every accepted message goes to the hold queue, for the release.
smtpd_client_restrictions = check_client_access static:HOLD
transport_maps = hash:$DIR/etc/transport
smtp_dns_support_level = disabled
queue_run_delay = 1s
minimal_backoff_time = 2s
maximal_backoff_time = 4s
EOF
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		printf 'd%s.bench\tsmtp:[%s.%s]:%s\n' "$i" "$SINK_NET" "$i" "$PORT"
		i=$((i + 1))
	done | postfix_map transport
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
	status_count "$1" "$DIR/maillog"
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
	postfix_start

	sunk0=$(sinks_messages)
	start=$(now)
	inject
	inject_s=$(span "$start" "$(now)" 1)
	# smtpd answered 250 only after cleanup made each message durable;
	# the count is a check that none was lost or went elsewhere.
	held=$(held_count)
	[ "$held" -eq "$MESSAGES" ] ||
		die "$held of $MESSAGES messages on hold after the injection (see $DIR/maillog)"
	echo "postfix: $MESSAGES messages injected with smtp-source in $inject_s s" \
		"= $(rate "$MESSAGES" "$inject_s") msg/s"

	watch_log
	release=$(now)
	postsuper -c "$DIR/etc" -H ALL 2>>"$DIR/start.log" ||
		die "postsuper -H failed: $(tail -n 5 "$DIR/start.log")"
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
	span=$(span "$first" "$last" 1)
	wall=$(span "$release" "$last" 1)
	wait "$AWK_PID" || true
	AWK_PID=
	kill "$TAIL_PID" 2>/dev/null || true
	wait "$TAIL_PID" 2>/dev/null || true
	TAIL_PID=

	sent=$(log_count sent)
	deferred=$(log_count deferred)
	bounced=$(log_count bounced)
	sunk=$(($(sinks_messages) - sunk0))
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
	postfix_stop
	in_use "$DIR" && die "Postfix processes still in $DIR after the stop"
	return 0
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
	copy_sluice "$BUILD" "$DIR/sluice"
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
	# sendmail stores without a daemon only into a spool that exists
	mkdir -p "$DIR/sluice/queue"
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
	sluice queue | queue_requests
}

# stamp LINE: the epoch time, with milliseconds, of a sluiced log line
# (its first field is the time, 2026-11-22T02:11:52.798+00:00).
stamp() {
	t=${1%% *}
	date -d "${t%%T*} ${t#*T}" +%s.%3N
}

# run_sluice: store every message with sluiced stopped, start sluiced,
# wait until it logged every message removed, check, stop it.
run_sluice() {
	write_sluice_config
	log=$DIR/sluice/sluiced.log
	sunk0=$(sinks_messages)

	start=$(now)
	how="with sluice sendmail (one process each, one after the other)"
	if [ "$PREQUEUE" = 1 ]; then
		"$BUILD/bench/prequeue" "$DIR/sluice/queue" "$MESSAGES" "$DOMAINS" \
			>>"$DIR/sluice/inject.log" 2>&1 ||
			die "prequeue failed: $(tail -n 5 "$DIR/sluice/inject.log")"
		how="with bench/prequeue (the group commit)"
	else
		sluice_inject
	fi
	inject_s=$(span "$start" "$(now)" 1)
	queued=$(queued_count)
	[ "$queued" -eq "$MESSAGES" ] ||
		die "sluice queue lists $queued of $MESSAGES messages after the injection"
	echo "sluice: $MESSAGES messages injected $how in $inject_s s =" \
		"$(rate "$MESSAGES" "$inject_s") msg/s"

	started=$(now)
	start_sluiced "$DIR/sluice" "$DIR/sluice/sluice.conf"

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

	sent=$(status_count sent "$log")
	deferred=$(status_count deferred "$log")
	bounced=$(status_count bounced "$log")
	sunk=$(($(sinks_messages) - sunk0))
	first=$(stamp "$(grep -m 1 ' status=sent ' "$log")")
	last=$(stamp "$(grep ' status=sent ' "$log" | tail -n 1)")
	empty=$(stamp "$(grep ': removed$' "$log" | tail -n 1)")
	up=$(stamp "$(grep -m 1 ': started: ' "$log")")
	span=$(span "$first" "$last")
	wall=$(span "$started" "$empty")
	boot=$(span "$started" "$up")
	SLUICE_RATE=$(rate "$MESSAGES" "$span" 3)

	# Stop it as an operator would, and check that it drained cleanly.
	stop_sluiced "$DIR/sluice"
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

# --only WHICH (or --only=WHICH) is -o WHICH; getopts has no long options.
for arg; do
	shift
	case $arg in
	--only) set -- "$@" -o ;;
	--only=*) set -- "$@" -o "${arg#--only=}" ;;
	*) set -- "$@" "$arg" ;;
	esac
done
while getopts n:d:p:s:t:o:kq opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	d) DOMAINS=$OPTARG ;;
	p) PORT=$OPTARG ;;
	s) SESSIONS=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	o) ONLY=$OPTARG ;;
	k) KEEP=1 ;;
	q) PREQUEUE=1 ;;
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
# On every exit, stop only what this script started: sluiced, the
# instance (by its config directory), the sinks and the log reader.
trap 'stop_all "$SLUICED_PID" "$SINK_PIDS $TAIL_PID $AWK_PID"' EXIT
trap 'die interrupted' INT TERM HUP
make_dir
echo "postfix_deliver: $MESSAGES messages, $DOMAINS domains, in $DIR; $(loadavg)"

start_sinks
[ "$ONLY" = sluice ] || run_postfix
[ "$ONLY" = postfix ] || run_sluice
if [ "$ONLY" = both ]; then
	echo "ratio: sluice/postfix = $(ratio "$SLUICE_RATE" "$POSTFIX_RATE") (delivery rate)"
fi
