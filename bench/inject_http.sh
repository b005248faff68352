#!/bin/sh
# NAME
#	inject_http.sh - ingress into one sluiced: the HTTP injection API
#	against SMTP
# SYNOPSIS
#	bench/inject_http.sh [-n MESSAGES] [-c CLIENTS] [-l BYTES] [-r RUNS]
#	    [-b BUILD] [-k]
# DESCRIPTION
#	One sluiced (built-in defaults but the spool, the SMTP listener on
#	127.0.9.3:2525, http_listen on 127.0.9.3:8025 with a token, and
#	sink.bench routed to one smtp-sink on 127.0.9.1:2525) takes
#	MESSAGES messages (default 20000) of BYTES (2048) bytes, one
#	recipient each, from CLIENTS (20) clients at once, each waiting
#	for its answer before the next message, both ways in turn:
#
#	smtp	smtp-source -s CLIENTS -m MESSAGES -l BYTES into the SMTP
#		server: 250 after the group commit.
#	http	bench/inject_load.py client: CLIENTS processes, each with
#		one keep-alive connection, POST /api/inject, one message
#		per request (an RFC 5322 content of BYTES bytes): 200
#		after the group commit.
#
#	The rate is MESSAGES over the time from the first message to the
#	last answer; after each run the script waits until the sink has
#	them all (and fails if it does not within TIMEOUT). Before the
#	runs, each client alone against a server that stores nothing
#	(smtp-source into the smtp-sink; inject_load.py against its own
#	trivial asyncio server, "inject_load.py server", two processes)
#	shows how fast the
#	clients can go on this machine: when a client alone is not well
#	above sluiced's rate, the client is the limit, and the table says
#	so. Printed: one table, a line per run and way, then the medians
#	and the ratio http/smtp.
#
#	Everything runs on loopback (127.0.9.0/24) in a fresh directory
#	from mktemp -d under $TMPDIR, removed at the end.
#
#	-n MESSAGES	(or BENCH_MESSAGES) messages per run and way
#	-c CLIENTS	(or BENCH_CLIENTS) clients in parallel
#	-l BYTES	(or BENCH_LENGTH) message body length
#	-r RUNS		(or BENCH_RUNS, default 3) runs of each way
#	-b BUILD	(or BENCH_BUILD) where sluice and sluiced are
#	-k		keep the directory
#
#	Run it by hand, as root (smtp-sink needs it); not from make check.
# EXIT STATUS
#	0 when every message of every run was accepted and delivered; 1
#	with a message on stderr otherwise.
set -eu

NAME=inject_http
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MESSAGES=${BENCH_MESSAGES:-20000}
CLIENTS=${BENCH_CLIENTS:-20}
LENGTH=${BENCH_LENGTH:-2048}
RUNS=${BENCH_RUNS:-3}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
KEEP=0
NET=127.0.9
SINK=$NET.1:2525
SMTPD=$NET.3:2525
HTTP=$NET.3:8025
TOY=$NET.4:8026
TOKEN=bench-0123456789abcdef
LOAD=$(cd "$(dirname "$0")" && pwd)/inject_load.py
TOY_PID=
CLIENT_PID=

usage() {
	die "usage: inject_http.sh [-n MESSAGES] [-c CLIENTS] [-l BYTES] [-r RUNS] [-b BUILD] [-k]"
}

while getopts n:c:l:r:b:k opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	c) CLIENTS=$OPTARG ;;
	l) LENGTH=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
for v in "$MESSAGES" "$CLIENTS" "$LENGTH" "$RUNS"; do
	is_count "$v" || usage
done
TIMEOUT=$((120 + MESSAGES / 20))

need_root "smtp-sink needs it"
need_tools smtp-sink smtp-source python3 ss awk timeout
need_sluice "$BUILD" "use -b BUILD"
need_free "$SINK" "$SMTPD" "$HTTP" "$TOY"
trap 'stop_all "$CLIENT_PID $SLUICED_PID $TOY_PID" "$SINK_PIDS"' EXIT
trap 'die interrupted' INT TERM HUP
make_dir

wait_listen() {
	t=0
	until listens "$1"; do
		t=$((t + 1))
		[ "$t" -le 50 ] || die "nothing listens on $1"
		sleep 0.1
	done
}

# wait_sink WANT: until the sink has counted WANT messages.
wait_sink() {
	deadline=$(($(date +%s) + TIMEOUT))
	until [ "$(sink_messages "$DIR/sink.count")" -ge "$1" ]; do
		[ "$(date +%s)" -lt "$deadline" ] ||
			die "the sink has $(sink_messages "$DIR/sink.count") of $1 messages after $TIMEOUT s"
		sleep 0.05
	done
}

# timed WAY ADDR: one run of WAY (smtp, http) into ADDR; prints seconds.
timed() {
	start=$(now)
	case $1 in
	smtp)
		timeout "$TIMEOUT" smtp-source -s "$CLIENTS" -m "$MESSAGES" \
			-l "$LENGTH" -f sender@bench.test -t rcpt@sink.bench "$2" \
			>"$DIR/client.log" 2>&1 &
		;;
	http)
		timeout "$TIMEOUT" python3 "$LOAD" client "${2%:*}" "${2##*:}" \
			"$TOKEN" "$MESSAGES" "$CLIENTS" "$LENGTH" \
			>"$DIR/client.log" 2>&1 &
		;;
	esac
	CLIENT_PID=$!
	wait "$CLIENT_PID" || die "$1 client into $2 failed: $(tail -n 3 "$DIR/client.log")"
	CLIENT_PID=
	# inject_load.py times its requests itself, without its start-up.
	case $1 in
	smtp) span "$start" "$(now)" ;;
	http) awk '/ ok in / { print $4 }' "$DIR/client.log" ;;
	esac
}

row() { # row WHAT SECONDS
	printf '%-26s %8d %7d %9.3f %8s\n' "$1" "$MESSAGES" "$CLIENTS" "$2" \
		"$(rate "$MESSAGES" "$2")"
	echo "$1 $(rate "$MESSAGES" "$2" 3)" >>"$DIR/rates"
}

smtp_sink "$SINK" "$DIR/sink"
wait_listen "$SINK"
S=$DIR/sluice
copy_sluice "$BUILD" "$S"
echo "$TOKEN" >"$S/token"
echo "sink.bench smtp:[$NET.1]:2525" >"$S/transport"
cat >"$S/sluice.conf" <<EOF
queue_directory = $S/queue
myhostname = sluice.sluice-bench.test
smtpd_listen = $SMTPD
http_listen = $HTTP
http_token_file = $S/token
mynetworks = 127.0.0.0/8
transport_maps = $S/transport
EOF
start_sluiced "$S" "$S/sluice.conf"
wait_listen "$SMTPD"
wait_listen "$HTTP"
python3 "$LOAD" server "${TOY%:*}" "${TOY##*:}" 2>"$DIR/toy.log" &
TOY_PID=$!
wait_listen "$TOY"

echo "inject_http: $RUNS runs of $MESSAGES messages of $LENGTH bytes, $CLIENTS clients," \
	"in $DIR ($(df -PT "$DIR" | awk 'NR == 2 { print $2 }')); $(loadavg)"
printf '%-26s %8s %7s %9s %8s\n' way messages clients seconds msg/s
want=0
row "smtp client alone (sink)" "$(timed smtp "$SINK")"
want=$((want + MESSAGES))
wait_sink "$want"
row "http client alone (toy)" "$(timed http "$TOY")"
run=1
while [ "$run" -le "$RUNS" ]; do
	for way in smtp http; do
		sync
		if [ "$way" = smtp ]; then
			s=$(timed smtp "$SMTPD")
		else
			s=$(timed http "$HTTP")
		fi
		row "run $run $way into sluiced" "$s"
		want=$((want + MESSAGES))
		wait_sink "$want"
	done
	run=$((run + 1))
done
stop_sluiced "$S"
med() {
	grep " $1 into sluiced " "$DIR/rates" | awk '{ print $NF }' | sort -n |
		awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f", m }'
}
printf '%-26s %8s %7s %9s %8s\n' "median smtp" "" "" "" "$(med smtp)"
printf '%-26s %8s %7s %9s %8s\n' "median http" "" "" "" "$(med http)"
echo "ratio http/smtp = $(ratio "$(med http)" "$(med smtp)")"
echo "sluiced's log: $(status_count sent "$S/sluiced.log") sent," \
	"$(grep -c -e 'warning:' -e 'fatal:' "$S/sluiced.log" || true) warnings; $(loadavg)"
