#!/bin/sh
# NAME
#	smtpd_accept.sh - how fast sluiced and a private Postfix accept mail
#	over SMTP from smtp-source, committing each message to disk first
# SYNOPSIS
#	bench/smtpd_accept.sh [-n MESSAGES] [-s SESSIONS] [-l BYTES]
#		[-r RUNS] [-p PORT] [-t TIMEOUT] [-b BUILD]
#		[-o both|postfix|sluice] [-k]
#	bench/smtpd_accept.sh ... --only postfix|sluice
# DESCRIPTION
#	Issue 7: accepted messages per second from smtp-source (SESSIONS,
#	default 20, sessions; MESSAGES, default 20000, messages of BYTES,
#	default 2048, bytes of body, one recipient each) into sluiced and
#	into Postfix from Debian, in one run, on the same machine. Each
#	side, each run, gets the same command, only the address changing:
#
#	    smtp-source -s SESSIONS -m MESSAGES -l BYTES \
#		-f sender@bench.test -t rcpt@sink.bench HOST:PORT
#
#	A figure is MESSAGES over the wall-clock time from the start of
#	smtp-source to its exit. smtp-source opens a new connection for
#	every message (no -d, no PIPELINING), sends HELO, MAIL, RCPT, DATA,
#	the message and QUIT, and stops at the first reply that is not the
#	expected one (the run then fails). It exits once every message has
#	had its 250 to the final dot, and each side answers that only with
#	the message on disk:
#
#	postfix	smtpd hands the message to cleanup, which writes the queue
#		file and fsyncs it before it answers smtpd; smtpd then
#		answers the dot. One fsync (and a file created, renamed,
#		later removed) per message, by up to 100 cleanup processes
#		(the default process limit) in parallel.
#	sluice	sluiced's SMTP server stores the message in its LMDB spool
#		and answers the dot once the message's group commit is on
#		disk: LMDB synchronous commits (no MDB_NOSYNC or
#		MDB_NOMETASYNC: an fdatasync of the data file, then the
#		meta page written with O_DSYNC), one commit shared by every
#		message that arrived while the previous commit was being
#		written, from all sessions.
#
#	Neither side is told to save fsyncs: these are their defaults.
#
#	Both sides also deliver what they accept, as they would in
#	production, while accepting: their recipient domain sink.bench is
#	routed (transport_maps) to one smtp-sink on 127.0.2.1:PORT, shared
#	by the two. So a figure is acceptance with the delivery of the
#	same mail competing for the machine. After each run the script
#	waits until the sink has counted every message of the run and the
#	side's queue is empty (not timed, printed), then checks that the
#	sink's counter grew by exactly MESSAGES: nothing accepted was lost.
#
#	Postfix runs as a private instance in the run directory (its own
#	main.cf, master.cf, queue and maillog; smtpd on 127.0.2.2:PORT),
#	with Postfix's defaults except what a private, DNS-less instance on
#	loopback needs: mynetworks = 127.0.0.0/8 (so that it relays to
#	sink.bench), transport_maps, no DNS for smtp, every service
#	unchrooted, shorter retry times. sluiced runs with its built-in
#	defaults except queue_directory, myhostname, smtpd_listen
#	(127.0.2.3:PORT), mynetworks (127.0.0.0/8) and transport_maps
#	(sink.bench smtp:[127.0.2.1]:PORT).
#
#	Both are started once and stay up for all runs; the side not being
#	measured is idle. Each of the RUNS (default 3) runs first a
#	baseline, "sink": the same smtp-source straight into the smtp-sink,
#	which stores nothing: the most smtp-source can send on this machine,
#	a ceiling for both sides (smtp-source and the server share the
#	CPUs). Then both sides, one after the other, Postfix first in odd
#	runs and sluice first in even ones, so that neither side always
#	runs right after the other's file churn. Before each measurement
#	sync(1) writes back what earlier runs left dirty, so that it does
#	not land in this run's fsyncs. Printed: each run's rates and the
#	ratio sluice/postfix, then the medians of the rates and of the
#	ratios; before them, the sink's total message count, both sides'
#	delivery counts, Postfix's first warnings and any line of sluiced's
#	log other than those every message and session makes.
#
#	Everything runs on loopback, in 127.0.2.0/24 (clear of the test
#	suite's 127.0.0.x and postfix_deliver.sh's 127.0.1.x), in a fresh
#	directory from mktemp -d under $TMPDIR (default /tmp; the postfix
#	user must be able to reach it, and every fsync of both sides goes to
#	its filesystem, whose type is printed), removed at the end.
#
#	-n MESSAGES	(or BENCH_MESSAGES) messages per run and side
#	-s SESSIONS	(or BENCH_SESSIONS) smtp-source sessions in parallel
#	-l BYTES	(or BENCH_LENGTH) smtp-source's -l: the body length
#	-r RUNS		(or BENCH_RUNS) runs of each side
#	-p PORT		(or BENCH_PORT, default 2525) the port of the sink and
#			of both SMTP servers
#	-t TIMEOUT	(or BENCH_TIMEOUT) seconds for one smtp-source, and
#			again for the deliveries after it; default 120 +
#			MESSAGES/20. Waiting for the deliveries also fails
#			after 60 seconds without one.
#	-b BUILD	(or BENCH_BUILD) where sluice and sluiced are; default
#			build/ next to this script's directory
#	-o WHICH, --only WHICH
#			(or BENCH_ONLY) run "postfix", "sluice" or "both"
#			(the default)
#	-k		keep the directory (its path is printed)
#
#	The sluice programs are copied from BUILD at the start, so that a
#	rebuild during the run does not disturb it: run make first.
#	Pointing BUILD at a build of a clean checkout measures a commit
#	rather than a work tree.
#
#	Run it by hand, as root (smtp-sink and Postfix need it), on a quiet
#	machine; not from make check. Figures vary between runs: compare
#	sluice and Postfix in one run.
# EXIT STATUS
#	0 when every run of each side accepted every message and the sink
#	got them all; 1 with a message on stderr when a tool is missing, an
#	address is taken, the instance or sluiced does not start,
#	smtp-source fails or times out, or a message does not reach the
#	sink in time.
set -eu

NAME=smtpd_accept
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MESSAGES=${BENCH_MESSAGES:-20000}
SESSIONS=${BENCH_SESSIONS:-20}
LENGTH=${BENCH_LENGTH:-2048}
RUNS=${BENCH_RUNS:-3}
PORT=${BENCH_PORT:-2525}
TIMEOUT=${BENCH_TIMEOUT:-}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
ONLY=${BENCH_ONLY:-both}
KEEP=0

NET=127.0.2
SINK_ADDR=$NET.1
POSTFIX_ADDR=$NET.2
SLUICE_ADDR=$NET.3
DOMAIN=sink.bench
SENDER=sender@bench.test
RCPT=rcpt@$DOMAIN
# Waiting for deliveries fails after this many seconds without progress.
STALL=60

SOURCE_PID=
# Each run's rates, "RUN RATE" lines, in $DIR/rates.SIDE.

usage() {
	die "usage: smtpd_accept.sh [-n MESSAGES] [-s SESSIONS] [-l BYTES] [-r RUNS] [-p PORT] [-t TIMEOUT] [-b BUILD] [-o|--only both|postfix|sluice] [-k]"
}

# sides: the sides to run, in the order of run $1 (odd: Postfix first).
sides() {
	case $ONLY in
	both) if [ $(($1 % 2)) -eq 1 ]; then echo postfix sluice; else echo sluice postfix; fi ;;
	*) echo "$ONLY" ;;
	esac
}

check_tools() {
	need_root "smtp-sink and a Postfix instance need it"
	set -- smtp-sink smtp-source ss awk grep sort date timeout sync df
	[ "$ONLY" = sluice ] || set -- "$@" postfix postmap
	need_tools "$@"
	[ "$ONLY" = postfix ] || need_sluice "$BUILD" "use -b BUILD"
}

# check_free: fail before starting anything if one of our addresses is
# already listening (a sink of an earlier run, the system Postfix, ...).
check_free() {
	need_free "$SINK_ADDR:$PORT" "$POSTFIX_ADDR:$PORT" "$SLUICE_ADDR:$PORT"
}

# start_sink: the one smtp-sink both sides deliver to, counting messages
# (-c) into sink.count, with a backlog of 256 so that up to 20
# connections of each side are never refused by the kernel.
start_sink() {
	smtp_sink "$SINK_ADDR:$PORT" "$DIR/sink"
	pid=$!
	t=0
	until listens "$SINK_ADDR:$PORT"; do
		kill -0 "$pid" 2>/dev/null || die "smtp-sink exited: $(cat "$DIR/sink.err")"
		t=$((t + 1))
		[ "$t" -le 50 ] || die "smtp-sink does not listen on $SINK_ADDR:$PORT"
		sleep 0.1
	done
}

# sink_count: the sink's "mesg=" counter.
sink_count() {
	sink_messages "$DIR/sink.count"
}

# write_postfix_config: the private instance: configuration in
# postfix/etc, queue in postfix/queue, data in postfix/data, its log in
# postfix/maillog (separate directories, so that "postfix check" does
# not find the postfix-owned queue inside the root-owned configuration
# directory). Defaults except what a second instance, unchrooted,
# without DNS and syslog, relaying for loopback clients needs, and
# shorter retry times so that a deferral would be retried within a run.
# Process limits, concurrency and connection caching stay default: the
# Postfix a site gets out of the box.
write_postfix_config() {
	P=$DIR/postfix
	# smtpd on its own address and port, its process limit the default.
	postfix_config "$P" "$POSTFIX_ADDR:$PORT inet n - n - - smtpd" <<EOF
# smtp-source connects from 127.0.0.1: relaying to $DOMAIN is allowed
# by the default smtpd_relay_restrictions (permit_mynetworks).
mynetworks = 127.0.0.0/8
transport_maps = hash:$P/etc/transport
smtp_dns_support_level = disabled
queue_run_delay = 1s
minimal_backoff_time = 2s
maximal_backoff_time = 4s
EOF
	printf '%s\tsmtp:[%s]:%s\n' "$DOMAIN" "$SINK_ADDR" "$PORT" | postfix_map transport
}

# start_postfix: the instance, listening.
start_postfix() {
	write_postfix_config
	postfix_start
}

# postfix_queued: messages anywhere in the instance's queue.
postfix_queued() {
	find "$DIR/postfix/queue/maildrop" "$DIR/postfix/queue/incoming" \
		"$DIR/postfix/queue/active" "$DIR/postfix/queue/deferred" \
		"$DIR/postfix/queue/hold" -type f 2>/dev/null | wc -l
}

# sluice: the sluice command with the benchmark's configuration.
sluice() {
	"$DIR/sluice/bin/sluice" -c "$DIR/sluice/sluice.conf" "$@"
}

# write_sluice_config: the built-in defaults (concurrency 20 per
# destination, at most 100 deliveries per transport, connection cache
# on demand) except the spool, the name, the SMTP listener, the clients
# it relays for, and where sink.bench goes: smtp:[address]:port, no DNS.
write_sluice_config() {
	S=$DIR/sluice
	copy_sluice "$BUILD" "$S"
	printf '%s smtp:[%s]:%s\n' "$DOMAIN" "$SINK_ADDR" "$PORT" >"$S/transport"
	cat >"$S/sluice.conf" <<EOF
queue_directory = $S/queue
myhostname = sluice.sluice-bench.test
smtpd_listen = $SLUICE_ADDR:$PORT
mynetworks = 127.0.0.0/8
transport_maps = $S/transport
EOF
}

start_sluice() {
	write_sluice_config
	start_sluiced "$DIR/sluice" "$DIR/sluice/sluice.conf"
	t=0
	until listens "$SLUICE_ADDR:$PORT"; do
		kill -0 "$SLUICED_PID" 2>/dev/null ||
			die "sluiced exited: $(tail -n 5 "$DIR/sluice/sluiced.log")"
		t=$((t + 1))
		[ "$t" -le 50 ] || die "sluiced does not listen on $SLUICE_ADDR:$PORT: $(tail -n 5 "$DIR/sluice/sluiced.log")"
		sleep 0.1
	done
}

# sluice_queued: the requests "sluice queue" lists ("-- N Kbytes in N
# Requests."), 0 for "Mail queue is empty", -1 for anything else.
sluice_queued() {
	sluice queue 2>/dev/null | queue_requests
}

# queued SIDE: messages in SIDE's queue.
queued() {
	case $1 in
	postfix) postfix_queued ;;
	sluice) sluice_queued ;;
	sink) echo 0 ;;
	esac
}

# server SIDE: the address of SIDE's SMTP server.
server() {
	case $1 in
	postfix) echo "$POSTFIX_ADDR" ;;
	sluice) echo "$SLUICE_ADDR" ;;
	sink) echo "$SINK_ADDR" ;;
	esac
}

# wait_delivered SIDE WANT: wait until the sink has counted WANT
# messages and SIDE's queue is empty; fail after TIMEOUT seconds, or
# STALL seconds without a delivery.
wait_delivered() {
	deadline=$(($(date +%s) + TIMEOUT))
	last_n=-1
	last_change=$(date +%s)
	while :; do
		n=$(sink_count)
		[ "$n" -ge "$2" ] && [ "$(queued "$1")" -eq 0 ] && break
		t=$(date +%s)
		if [ "$n" -ne "$last_n" ]; then
			last_n=$n
			last_change=$t
		fi
		[ "$t" -lt "$deadline" ] ||
			die "$1: the sink has $n of $2 messages after $TIMEOUT s; $(queued "$1") queued (see $DIR)"
		[ $((t - last_change)) -lt "$STALL" ] ||
			die "$1: no delivery for $STALL s, the sink has $n of $2 messages; $(queued "$1") queued (see $DIR)"
		sleep 0.05
	done
}

# measure RUN SIDE: one timed smtp-source into SIDE (postfix, sluice, or
# sink for the baseline: straight into the smtp-sink), then wait for its
# deliveries and check the sink's count. Appends "RUN RATE" to
# $DIR/rates.SIDE.
measure() {
	run=$1
	side=$2
	addr=$(server "$side")
	sunk0=$(sink_count)
	log=$DIR/source.$side.$run.log
	sync
	start=$(now)
	# In the background, so that a signal to the script is handled at
	# once (the trap stops it) rather than after smtp-source exits.
	timeout "$TIMEOUT" smtp-source -s "$SESSIONS" -m "$MESSAGES" -l "$LENGTH" \
		-f "$SENDER" -t "$RCPT" "$addr:$PORT" >"$log" 2>&1 &
	SOURCE_PID=$!
	status=0
	wait "$SOURCE_PID" || status=$?
	end=$(now)
	SOURCE_PID=
	[ "$status" -eq 0 ] ||
		die "run $run, $side: smtp-source failed or timed out (status $status): $(tail -n 5 "$log")"
	s=$(span "$start" "$end")
	r=$(rate "$MESSAGES" "$s" 3)
	echo "$run $r" >>"$DIR/rates.$side"
	# smtp-source is silent when all goes well.
	if [ -s "$log" ]; then
		echo "run $run $side: smtp-source said: $(head -n 3 "$log")"
	fi

	wait_delivered "$side" $((sunk0 + MESSAGES))
	done_s=$(span "$start" "$(now)")
	sunk=$(($(sink_count) - sunk0))
	[ "$sunk" -eq "$MESSAGES" ] ||
		die "run $run, $side: the sink counted $sunk messages for $MESSAGES accepted"
	printf 'run %s %-8s %6d messages accepted in %8.3f s = %6s msg/s; all at the sink after %.3f s\n' \
		"$run" "$side:" "$MESSAGES" "$s" "$(rate "$MESSAGES" "$s")" "$done_s"
}

# rate_of SIDE RUN: the rate recorded for SIDE in RUN.
rate_of() {
	awk -v r="$2" '$1 == r { print $2 }' "$DIR/rates.$1"
}

# median: the median of the numbers on stdin, one a line.
median() {
	sort -n | awk '{ v[NR] = $1 }
		END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; print m }'
}

# report: the counts both sides logged, as a check (Postfix writes its
# maillog through postlogd, a moment late: give it a second).
report() {
	echo "smtpd_accept: the sink counted $(sink_count) messages in all"
	if [ "$ONLY" != sluice ]; then
		P=$DIR/postfix/maillog
		want=$((RUNS * MESSAGES))
		t=0
		while [ "$t" -lt 20 ] && [ "$(status_count sent "$P")" -lt "$want" ]; do
			t=$((t + 1))
			sleep 0.1
		done
		echo "postfix: maillog: $(status_count sent "$P") sent," \
			"$(status_count deferred "$P") deferred," \
			"$(status_count bounced "$P") bounced," \
			"$(grep -c -e 'warning:' -e 'fatal:' -e 'error:' "$P" || true) warnings or errors"
		# The first few, without the time and pid (qmgr's "mail for
		# ... is using up N of N active queue entries" is expected:
		# Postfix accepts faster than it delivers to one destination).
		grep -e 'warning:' -e 'fatal:' -e 'error:' "$P" |
			sed 's/^.* postfix\/\([a-z-]*\)\[[0-9]*\]: /\1: /' | awk '!seen[$0]++' |
			head -n 5 | sed 's/^/postfix: /' || true
	fi
	if [ "$ONLY" != postfix ]; then
		L=$DIR/sluice/sluiced.log
		echo "sluice: sluiced's log: $(status_count sent "$L") sent," \
			"$(status_count deferred "$L") deferred," \
			"$(status_count bounced "$L") bounced," \
			"$(sluice_others | wc -l) other lines"
		sluice_others | head -n 5 | sed 's/^/sluice: other: /'
	fi
}

# sluice_others: the lines of sluiced's log other than those every
# message and session makes (connect, client=, disconnect, sent,
# removed) and the start and stop.
sluice_others() {
	grep -v -e ': connect from ' -e ': client=' -e ': disconnect from ' \
		-e ' status=sent ' -e ': removed$' -e ': started: queue ' \
		-e ': stopping on signal 15: ' -e ': stopped: ' "$DIR/sluice/sluiced.log" || true
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
while getopts n:s:l:r:p:t:b:o:k opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	s) SESSIONS=$OPTARG ;;
	l) LENGTH=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	p) PORT=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	o) ONLY=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for v in "$MESSAGES" "$SESSIONS" "$LENGTH" "$RUNS" "$PORT"; do
	is_count "$v" || usage
done
case $ONLY in both | postfix | sluice) ;; *) usage ;; esac
[ -n "$TIMEOUT" ] || TIMEOUT=$((120 + MESSAGES / 20))
is_count "$TIMEOUT" || usage
# An absolute path, for the messages.
[ -d "$BUILD" ] || die "no build directory $BUILD"
BUILD=$(cd "$BUILD" && pwd)

check_tools
check_free
# On every exit, stop only what this script started: smtp-source (timeout
# passes the signal on to it) and sluiced, one after the other, the
# instance (by its configuration directory), then the sink.
trap 'stop_all "$SOURCE_PID $SLUICED_PID" "$SINK_PIDS"' EXIT
trap 'die interrupted' INT TERM HUP
make_dir
echo "smtpd_accept: $RUNS runs of $MESSAGES messages, $SESSIONS sessions, $LENGTH bytes," \
	"in $DIR ($(df -PT "$DIR" | awk 'NR == 2 { print $2 }')); $(loadavg)"
echo "smtpd_accept: each run: smtp-source -s $SESSIONS -m $MESSAGES -l $LENGTH" \
	"-f $SENDER -t $RCPT {$POSTFIX_ADDR (postfix), $SLUICE_ADDR (sluice)}:$PORT"
echo "smtpd_accept: fsync: postfix: cleanup fsyncs each queue file before smtpd's 250;" \
	"sluice: LMDB synchronous commit, one per group commit, before the 250"

start_sink
[ "$ONLY" = sluice ] || start_postfix
[ "$ONLY" = postfix ] || start_sluice

run=1
while [ "$run" -le "$RUNS" ]; do
	for side in sink $(sides "$run"); do
		measure "$run" "$side"
	done
	if [ "$ONLY" = both ]; then
		echo "run $run ratio:   sluice/postfix = $(ratio "$(rate_of sluice "$run")" "$(rate_of postfix "$run")")"
		echo "$run $(ratio "$(rate_of sluice "$run")" "$(rate_of postfix "$run")")" >>"$DIR/ratios"
	fi
	run=$((run + 1))
done

stop_sluiced "$DIR/sluice"
postfix_stop
report
for side in sink postfix sluice; do
	[ -s "$DIR/rates.$side" ] || continue
	echo "median $side: $(awk '{ print $2 }' "$DIR/rates.$side" | median | awk '{ printf "%.0f", $1 }') msg/s over $RUNS runs"
done
if [ "$ONLY" = both ]; then
	echo "median ratio: sluice/postfix = $(awk '{ print $2 }' "$DIR/ratios" | median | awk '{ printf "%.2f", $1 }')" \
		"(of the $RUNS runs' ratios)"
fi
echo "smtpd_accept: done; $(loadavg)"
