#!/bin/sh
# NAME
#	sendmail_inject.sh - how fast "sluice sendmail" and Postfix's
#	sendmail accept mail, one process per message
# SYNOPSIS
#	bench/sendmail_inject.sh [-n MESSAGES] [-p PARALLEL] [-k]
# DESCRIPTION
#	MESSAGES (default 2000) small messages, each with one recipient and
#	a 2 KB body (the shape of bench/postfix_deliver.sh's), are submitted
#	with one sendmail process per message, first one after the other
#	(xargs -P 1), then PARALLEL (default 8) at a time (xargs -P
#	PARALLEL), by the same driver for every side:
#
#	    seq MESSAGES | xargs -n 1 -P P sh SCRIPT
#
#	where SCRIPT is "printf MESSAGE | COMMAND -i -f SENDER RECIPIENT",
#	only COMMAND changing. A figure is the wall-clock time from the
#	start of xargs to the exit of the last sendmail process: every
#	sendmail exits only once its message is durable. The sides, in
#	this order, each serial first, then parallel:
#
#	baseline	COMMAND is /bin/true, then "sluice route RECIPIENT":
#			what starting the processes costs (the shell, the
#			pipeline, an exec; then sluice's own start-up:
#			dynamic linking, reading the configuration), so
#			that the reader can subtract it.
#	sluice daemon	"sluice sendmail" with sluiced running
#			(default_transport = discard): each sendmail hands
#			its message over QUEUE_DIRECTORY/public/submit and
#			the daemon answers once the message is in a group
#			commit. Also printed: the time until sluiced has
#			logged a "removed" line for each. The run fails
#			unless sluiced logged a "uid=0 from=" line (a
#			message taken on the socket) for each.
#	sluice alone	"sluice sendmail" with no daemon (a queue directory
#			of its own, where no sluiced ever ran): each one
#			opens the spool and commits its message alone.
#			"sluice queue" must list every message after.
#	postfix		Postfix's own sendmail (postconf's sendmail_path,
#			with -C DIR), into a private instance whose mail
#			is discarded. sendmail runs postdrop, which writes
#			and fsyncs a file in maildrop/; pickup hands it to
#			cleanup, which writes and fsyncs the queue file.
#			Also printed: the time until maildrop/ is empty
#			(pickup removes a file only after cleanup has made
#			the queue file durable: every message is then in
#			Postfix's real queue) and until the maillog has a
#			"removed" line for each (discarded).
#
#	Postfix starts only after sluiced has stopped, and runs last: in
#	trials, a sluice run right after Postfix's (two files written and
#	removed per message) came out up to 10% slower. Before each run,
#	sync(1) writes back what the earlier ones left dirty.
#
#	The last lines are the ratios of the acceptance rates, sluice
#	(daemon) over Postfix, serial and parallel: against Postfix's
#	sendmail exits, and against its messages being in its queue.
#
#	Everything runs in a fresh directory from mktemp -d under $TMPDIR
#	(default /tmp; the postfix user must be able to reach it, and
#	every fsync of both sides goes to its filesystem), removed at the
#	end. Postfix runs as a private instance there (its own main.cf,
#	master.cf, queue and maillog, inet_interfaces = 127.0.0.1 but no
#	inet service); nothing listens on the network.
#
#	-n MESSAGES	(or BENCH_MESSAGES) messages per run
#	-p PARALLEL	(or BENCH_PARALLEL) sendmail processes at a time in
#			the parallel runs; 1 skips them
#	-k		keep the directory (its path is printed)
#
#	The sluice programs are copied at the start from BENCH_BUILD
#	(default build/ next to this script's directory): run make first.
#
#	Run it by hand, as root (a Postfix instance needs it), on a quiet
#	machine; not from make check. Figures vary between runs: compare
#	the sides of one run.
# EXIT STATUS
#	0 when every side accepted every message; 1 with a message on
#	stderr when a tool is missing, a sendmail fails, the instance or
#	sluiced does not start, or a message is missing.
set -eu

NAME=sendmail_inject
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MESSAGES=${BENCH_MESSAGES:-2000}
PARALLEL=${BENCH_PARALLEL:-8}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
KEEP=0

SENDER=bench@sluice-bench.test
# Waiting for the queues to drain fails after this many seconds without
# progress.
STALL=60

usage() {
	die "usage: sendmail_inject.sh [-n MESSAGES] [-p PARALLEL] [-k]"
}

check_tools() {
	need_root "a Postfix instance needs it"
	need_tools postfix postconf seq xargs awk grep date
	POSTFIX_SENDMAIL=$(postconf -d -h sendmail_path)
	[ -x "$POSTFIX_SENDMAIL" ] || die "Postfix's sendmail ($POSTFIX_SENDMAIL) not found"
	need_sluice "$BUILD" "set BENCH_BUILD"
}

# write_message_scripts: one driver script per command, all sending the
# same message shape: From, To, Date, Message-Id and Subject headers and
# a body of 26 numbered lines of 78 characters (about 2 KB), to
# uK@discard.bench for message K.
# shellcheck disable=SC2016 # "$1" is for the driver scripts to expand
write_message_scripts() {
	body=$(awk 'BEGIN {
		x = sprintf("%77s", ""); gsub(/ /, "X", x)
		for (i = 1; i <= 26; i++) print substr(i x, 1, 78) }')
	date=$(date -R)
	S=$DIR/sluice
	script true /bin/true
	script route "$S/bin/sluice" -c "$S/daemon.conf" route '"u$1@discard.bench"' '>/dev/null'
	script postfix "$POSTFIX_SENDMAIL" -C "$DIR/postfix/etc" -i -f "$SENDER" '"u$1@discard.bench"'
	script daemon "$S/bin/sluice" -c "$S/daemon.conf" sendmail -i -f "$SENDER" '"u$1@discard.bench"'
	script alone "$S/bin/sluice" -c "$S/alone.conf" sendmail -i -f "$SENDER" '"u$1@discard.bench"'
}

# script NAME COMMAND...: $DIR/send.NAME, which pipes message $1 into
# COMMAND (its words as given: quote what the script must expand).
script() {
	name=$1
	shift
	{
		echo '#!/bin/sh'
		echo "body='$body'"
		printf '%s\n' "printf 'From: <$SENDER>\\nTo: <u%s@discard.bench>\\nDate: $date\\nMessage-Id: <%s.$name@sluice-bench.test>\\nSubject: bench %s\\n\\n%s\\n' \"\$1\" \"\$1\" \"\$1\" \"\$body\" |"
		echo "	$*"
	} >"$DIR/send.$name"
}

# submit NAME P: run MESSAGES times send.NAME, P at a time; fail if one
# of them fails. Sets START and END (now() values) around it. The sync
# first writes back what earlier runs left dirty, so that it does not
# land in this run's fsyncs.
submit() {
	sync
	START=$(now)
	seq "$MESSAGES" | xargs -n 1 -P "$2" sh "$DIR/send.$1" 2>>"$DIR/$1.err" ||
		die "$1 -P $2: a command failed: $(tail -n 5 "$DIR/$1.err")"
	END=$(now)
}

# record SIDE P SECONDS LABEL: keep and print a figure.
record() {
	eval "R_$1_$2=\"$3 $(rate "$MESSAGES" "$3")\""
	printf '%-44s -P %-2s %8.3f s = %6s msg/s\n' "$4" "$2" "$3" "$(rate "$MESSAGES" "$3")"
}

# parallelisms: 1, and PARALLEL unless it is 1.
parallelisms() {
	if [ "$PARALLEL" -eq 1 ]; then echo 1; else echo "1 $PARALLEL"; fi
}

run_baselines() {
	for p in $(parallelisms); do
		submit true "$p"
		record true "$p" "$(span "$START" "$END")" "baseline: /bin/true"
	done
	for p in $(parallelisms); do
		submit route "$p"
		record route "$p" "$(span "$START" "$END")" "baseline: sluice route"
	done
}

# write_postfix_config: the private instance: configuration in etc/,
# queue in queue/, data in data/, its log in maillog. Every message is
# discarded (it is for no local domain, and every transport is
# discard); no inet service. Everything else at Postfix's defaults.
write_postfix_config() {
	postfix_config "$DIR/postfix" <<EOF
default_transport = discard
local_transport = discard
relay_transport = discard
EOF
}

# maildrop_count: files waiting in the instance's maildrop.
maildrop_count() {
	find "$DIR/postfix/queue/maildrop" -type f | wc -l
}

# removed_count LOG: "ID: removed" lines in LOG (Postfix's maillog and
# sluiced's log both end them so).
removed_count() {
	grep -c ': removed$' "$1" || true
}

# wait_until WHAT COMMAND...: poll COMMAND every 10 ms until it succeeds;
# fail after STALL seconds. Sets AT (a now() value).
wait_until() {
	what=$1
	shift
	give_up=$(($(date +%s) + STALL))
	until "$@"; do
		[ "$(date +%s)" -lt "$give_up" ] || die "$what: not after $STALL s (see $DIR)"
		sleep 0.01
	done
	AT=$(now)
}

postfix_in_queue() {
	[ "$(maildrop_count)" -eq 0 ]
}

postfix_removed() {
	[ "$(removed_count "$DIR/postfix/maillog")" -ge "$WANT" ]
}

run_postfix() {
	write_postfix_config
	postfix_start
	for p in $(parallelisms); do
		WANT=$(($(removed_count "$DIR/postfix/maillog") + MESSAGES))
		submit postfix "$p"
		record postfix "$p" "$(span "$START" "$END")" "postfix: sendmail exits (maildrop)"
		# Once every sendmail has exited, every message is in maildrop/
		# or past it: an empty maildrop means all are queued.
		wait_until "postfix: maildrop empty" postfix_in_queue
		record postfixq "$p" "$(span "$START" "$AT")" "postfix: in its queue (maildrop empty)"
		wait_until "postfix: every message removed" postfix_removed
		record postfixd "$p" "$(span "$START" "$AT")" "postfix: discarded (maillog: removed)"
	done
	n=$(status_count sent "$DIR/postfix/maillog")
	[ "$n" -eq $((MESSAGES * $(parallelisms | wc -w))) ] ||
		die "postfix logged $n messages sent (see $DIR/postfix/maillog)"
	others=$(grep -c -e 'warning:' -e 'fatal:' -e 'error:' "$DIR/postfix/maillog" || true)
	[ "$others" -eq 0 ] || echo "postfix: $others warnings or errors in its maillog, the first: $(grep -m 1 -e 'warning:' -e 'fatal:' -e 'error:' "$DIR/postfix/maillog")"
	postfix_stop
	in_use "$DIR" && die "Postfix processes still in $DIR after the stop"
	return 0
}

# write_sluice_config: two configurations, with the built-in defaults
# except the queue directory (one for the daemon, one for sendmail
# alone), the name, and discard for every message.
write_sluice_config() {
	S=$DIR/sluice
	copy_sluice "$BUILD" "$S"
	for which in daemon alone; do
		cat >"$S/$which.conf" <<EOF
queue_directory = $S/queue-$which
myhostname = sluice.sluice-bench.test
default_transport = discard
smtpd_listen =
EOF
	done
	# sendmail stores without a daemon only into a spool that exists
	mkdir -p "$S/queue-alone"
}

sluice_taken() {
	[ "$(grep -c ': uid=0 from=<' "$DIR/sluice/sluiced.log" || true)" -ge "$WANT" ]
}

sluice_removed() {
	[ "$(removed_count "$DIR/sluice/sluiced.log")" -ge "$WANT" ]
}

sluice_started() {
	grep -q ': started: ' "$DIR/sluice/sluiced.log" && [ -S "$DIR/sluice/queue-daemon/public/submit" ]
}

run_sluice_daemon() {
	S=$DIR/sluice
	log=$S/sluiced.log
	start_sluiced "$S" "$S/daemon.conf"
	wait_until "sluiced: started" sluice_started
	for p in $(parallelisms); do
		WANT=$(($(removed_count "$log") + MESSAGES))
		submit daemon "$p"
		record daemon "$p" "$(span "$START" "$END")" "sluice: sendmail exits (sluiced running)"
		# Every sendmail had its "ok": the daemon logged each already.
		sluice_taken || die "sluiced logged $(grep -c ': uid=0 from=<' "$log") messages taken," \
			"not $WANT: some sendmail did not go through the socket? (see $log)"
		wait_until "sluiced: every message removed" sluice_removed
		record daemond "$p" "$(span "$START" "$AT")" "sluice: discarded (sluiced: removed)"
	done
	stop_sluiced "$S"
	sent=$(status_count sent "$log")
	[ "$sent" -eq "$WANT" ] || die "sluiced logged $sent messages sent, not $WANT (see $log)"
	others=$(grep -c -v -e ' status=sent ' -e ': removed$' -e ': started: queue ' -e ': uid=0 from=<' \
		-e ': stopping on signal 15: ' -e ': stopped: ' "$log" || true)
	[ "$others" -eq 0 ] || echo "sluice: $others other lines in sluiced's log, the first: $(grep -v -e ' status=sent ' -e ': removed$' -e ': started: queue ' -e ': uid=0 from=<' \
		-e ': stopping on signal 15: ' -e ': stopped: ' "$log" | head -n 1)"
	return 0
}

# queued_count: the requests "sluice queue" lists in the daemon-less
# queue ("-- N Kbytes in N Requests."), or 0 for "Mail queue is empty".
queued_count() {
	"$DIR/sluice/bin/sluice" -c "$DIR/sluice/alone.conf" queue | queue_requests
}

run_sluice_alone() {
	want=0
	for p in $(parallelisms); do
		want=$((want + MESSAGES))
		submit alone "$p"
		record alone "$p" "$(span "$START" "$END")" "sluice: sendmail exits (no daemon)"
		queued=$(queued_count)
		[ "$queued" -eq "$want" ] || die "sluice queue lists $queued messages, not $want"
	done
	[ ! -S "$DIR/sluice/queue-alone/public/submit" ] || die "a submission socket in the daemon-less queue"
}

# side_ratio SIDE_A SIDE_B P: rate of A over rate of B.
side_ratio() {
	a=
	b=
	eval "a=\$R_$1_$3 b=\$R_$2_$3"
	ratio "${a#* }" "${b#* }"
}

while getopts n:p:k opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	p) PARALLEL=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
is_count "$MESSAGES" || usage
is_count "$PARALLEL" || usage

check_tools
# On every exit, stop only what this script started: sluiced (by its
# pid) and the instance (by its configuration directory).
trap 'stop_all "$SLUICED_PID" ""' EXIT
trap 'die interrupted' INT TERM HUP
make_dir
echo "sendmail_inject: $MESSAGES messages, -P 1 and -P $PARALLEL, in $DIR; $(loadavg)"

write_sluice_config
write_message_scripts
run_baselines
run_sluice_daemon
run_sluice_alone
run_postfix

echo "sendmail_inject: done; $(loadavg)"
for p in $(parallelisms); do
	echo "ratio -P $p: sluice (daemon) / postfix = $(side_ratio daemon postfix "$p") (sendmail exits)," \
		"$(side_ratio daemon postfixq "$p") (against Postfix's maildrop empty)"
done
