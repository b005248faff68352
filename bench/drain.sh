#!/bin/sh
# NAME
#	drain.sh - how long sluiced takes to drain N pre-queued messages,
#	and its peak memory, for several N
# SYNOPSIS
#	bench/drain.sh [-d DOMAINS] [-r RCPTS] [-p PORT] [-s SCHEDULER] [SIZE...]
# DESCRIPTION
#	For each SIZE (default 10000 50000 100000): a fresh spool filled by
#	build/bench/prequeue with SIZE single-recipient (or RCPTS-recipient)
#	2 KB messages for DOMAINS domains (default 1), one smtp-sink per
#	domain on 127.0.2.I:PORT (default 2525), then sluiced -f with its
#	defaults (transport_maps to the sinks, no DNS, no SMTP listener),
#	timed from its start until the sinks have counted every message;
#	with -s zmailer (or finch) the relay transport takes that delivery
#	scheduler (zmailer with the rules "relay/* command=smtp");
#	then it is stopped. Prints, per size: the drain time, messages per
#	second, microseconds per message, and sluiced's peak resident
#	memory (VmHWM, which counts the pages of the spool's memory map it
#	has read) with the largest anonymous part seen (RssAnon, sampled
#	every 50 ms: the daemon's own memory); at the end the per-message time at the largest
#	size over that at the smallest ("growth").
#
#	This is the issue 16 measurement ("6,000 drain at about 9,000
#	msg/s, 40,000 at about 2,600"); the comparison with Postfix on the
#	same workload is not here yet (see doc/performance.md).
#
#	BENCH_BUILD (default build/ beside this script) holds sluice,
#	sluiced and bench/prequeue: run "make && make bench" first. Run by
#	hand as root (smtp-sink needs it), on a quiet machine.
# EXIT STATUS
#	0 when every size drained; 1 with a message otherwise.
set -eu

NAME=drain
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

DOMAINS=1
RCPTS=1
PORT=2525
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
SINK_NET=127.0.2
KEEP=0
SCHED=postfix

while getopts d:r:p:s: opt; do
	case $opt in
	d) DOMAINS=$OPTARG ;;
	r) RCPTS=$OPTARG ;;
	p) PORT=$OPTARG ;;
	s) SCHED=$OPTARG ;;
	*) die "usage: drain.sh [-d DOMAINS] [-r RCPTS] [-p PORT] [-s SCHEDULER] [SIZE...]" ;;
	esac
done
case $SCHED in postfix | finch | zmailer) ;; *) die "no scheduler $SCHED" ;; esac
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- 10000 50000 100000
for n in "$@"; do is_count "$n" || die "not a size: $n"; done
is_count "$DOMAINS" && is_count "$RCPTS" || die "DOMAINS and RCPTS are counts"

need_root "smtp-sink needs it"
need_tools smtp-sink ss awk
need_sluice "$BUILD" "set BENCH_BUILD"
[ -x "$BUILD/bench/prequeue" ] || die "no $BUILD/bench/prequeue: run make bench"

make_dir
trap 'stop_all "$SLUICED_PID" "$SINK_PIDS"' EXIT INT TERM HUP
i=1
addrs=
while [ "$i" -le "$DOMAINS" ]; do
	addrs="$addrs $SINK_NET.$i:$PORT"
	i=$((i + 1))
done
# shellcheck disable=SC2086
need_free $addrs
mkdir "$DIR/sinks"
i=1
while [ "$i" -le "$DOMAINS" ]; do
	smtp_sink "$SINK_NET.$i:$PORT" "$DIR/sinks/$i"
	printf 'd%s.bench relay:[%s.%s]:%s\n' "$i" "$SINK_NET" "$i" "$PORT"
	i=$((i + 1))
done >"$DIR/transport"
sleep 1
copy_sluice "$BUILD" "$DIR/s"
echo 'relay/* command=smtp' >"$DIR/rules"
echo "drain: $DOMAINS domain(s), $RCPTS recipient(s) per message, scheduler $SCHED, in $DIR; $(loadavg)"

first_us=
last_us=
for size in "$@"; do
	q=$DIR/q$size
	cat >"$DIR/s/sluice.conf" <<EOF
queue_directory = $q
myhostname = sluice.drain-bench.test
transport_maps = $DIR/transport
smtpd_listen =
relay_delivery_scheduler = $SCHED
scheduler_rules = $DIR/rules
EOF
	"$BUILD/bench/prequeue" "$q" "$size" "$DOMAINS" "$RCPTS" >/dev/null ||
		die "prequeue of $size failed"
	want=$(($(sink_messages "$DIR"/sinks/*.count) + size))
	start=$(now)
	start_sluiced "$DIR/s" "$DIR/s/sluice.conf"
	anon=0
	file=0
	until [ "$(sink_messages "$DIR"/sinks/*.count)" -ge "$want" ]; do
		kill -0 "$SLUICED_PID" 2>/dev/null ||
			die "sluiced exited: $(tail -n 3 "$DIR/s/sluiced.log")"
		a=$(awk '/^RssAnon/ { print $2 }' "/proc/$SLUICED_PID/status")
		[ "${a:-0}" -gt "$anon" ] && anon=$a
		f=$(awk '/^RssFile/ { print $2 }' "/proc/$SLUICED_PID/status")
		[ "${f:-0}" -gt "$file" ] && file=$f
		sleep 0.05
	done
	secs=$(span "$start" "$(now)" 3)
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$SLUICED_PID/status")
	stop_sluiced "$DIR/s"
	us=$(awk -v s="$secs" -v n="$size" 'BEGIN { printf "%.1f", s * 1e6 / n }')
	[ -n "$first_us" ] || first_us=$us
	last_us=$us
	echo "drain: $size messages in $secs s = $(rate "$size" "$secs") msg/s," \
		"$us us per message, peak resident $((hwm / 1024)) MB" \
		"(sampled: anonymous $((anon / 1024)) MB, file-backed" \
		"$((file / 1024)) MB, mostly the spool's map)"
	rm -rf "$q"
done
echo "drain: growth, per-message time at the largest size over the smallest:" \
	"$(ratio "$last_us" "$first_us")"
