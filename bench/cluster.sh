#!/bin/sh
# NAME
#	cluster.sh - three clustered sluiced daemons against one, and what
#	the cluster's bookkeeping costs per delivery
# SYNOPSIS
#	bench/cluster.sh [-l LIMIT] [MESSAGES]
# DESCRIPTION
#	One smtp-sink on 127.0.2.1:2525 and a redis-server on a Unix socket
#	in a scratch directory. MESSAGES (default 6000) single-recipient
#	messages for one domain, relay_destination_concurrency_limit LIMIT
#	(default 20), are drained three ways, each timed from the daemons'
#	start until the sink has counted every message:
#	  alone     one daemon, no cluster (as before issue 22);
#	  one       one daemon in a cluster;
#	  three     three daemons in one cluster, a third of the messages
#	            each, in spools of their own.
#	For the clustered runs it prints Redis's count of EVALs (syncs),
#	their mean time inside Redis (INFO commandstats) and the syncs per
#	delivery; the added latency of a decision that waits for Redis (a
#	new destination's first lease) is one sync: a loopback round trip
#	plus the script's time, measured by redis-cli --latency as well.
#
#	BENCH_BUILD (default build/ beside this script) holds sluice,
#	sluiced and bench/prequeue: run "make && make bench" first. Run by
#	hand as root (smtp-sink needs it), on a quiet machine.
set -eu

NAME=cluster
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

LIMIT=20
KEEP=0
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
while getopts l: opt; do
	case $opt in
	l) LIMIT=$OPTARG ;;
	*) die "usage: cluster.sh [-l LIMIT] [MESSAGES]" ;;
	esac
done
shift $((OPTIND - 1))
N=${1:-6000}
is_count "$N" && is_count "$LIMIT" || die "MESSAGES and LIMIT are counts"
need_root "smtp-sink needs it"
need_tools smtp-sink redis-server redis-cli awk
need_sluice "$BUILD" "set BENCH_BUILD"
[ -x "$BUILD/bench/prequeue" ] || die "no $BUILD/bench/prequeue: run make bench"

make_dir
PIDS=
trap 'stop_all "$PIDS" "$SINK_PIDS"' EXIT INT TERM HUP
need_free 127.0.2.1:2525
smtp_sink 127.0.2.1:2525 "$DIR/sink"
SOCK=$DIR/redis.sock
redis-server --port 0 --unixsocket "$SOCK" --save '' --appendonly no \
	>"$DIR/redis.log" 2>&1 &
PIDS="$PIDS $!"
sleep 1
echo 'd1.bench relay:[127.0.2.1]:2525' >"$DIR/transport"
echo "cluster: $N messages, limit $LIMIT, in $DIR; $(loadavg)"

# run NAME DAEMONS CLUSTER: DAEMONS daemons, N/DAEMONS messages each
run() {
	per=$((N / $2))
	want=$(($(sink_messages "$DIR/sink.count") + per * $2))
	pids=
	redis-cli -s "$SOCK" CONFIG RESETSTAT >/dev/null
	i=1
	while [ "$i" -le "$2" ]; do
		d=$DIR/$1$i
		copy_sluice "$BUILD" "$d"
		cat >"$d/sluice.conf" <<CONF
queue_directory = $d/q
myhostname = sluice.cluster-bench.test
transport_maps = $DIR/transport
smtpd_listen =
relay_destination_concurrency_limit = $LIMIT
relay_initial_destination_concurrency = $LIMIT
cluster_redis_url = $3
cluster_name = $1
CONF
		"$BUILD/bench/prequeue" "$d/q" "$per" 1 1 >/dev/null ||
			die "prequeue failed"
		i=$((i + 1))
	done
	start=$(now)
	i=1
	while [ "$i" -le "$2" ]; do
		start_sluiced "$DIR/$1$i" "$DIR/$1$i/sluice.conf"
		pids="$pids $SLUICED_PID"
		i=$((i + 1))
	done
	until [ "$(sink_messages "$DIR/sink.count")" -ge "$want" ]; do
		sleep 0.02
	done
	secs=$(span "$start" "$(now)" 3)
	for p in $pids; do kill -TERM "$p"; wait "$p" || true; done
	evals=$(redis-cli -s "$SOCK" INFO commandstats |
		awk -F'[=,:]' '/^cmdstat_eval:/ { print $3, $7 }')
	echo "cluster: $1: $2 daemon(s), $((per * $2)) messages in $secs s =" \
		"$(rate $((per * $2)) "$secs") msg/s${evals:+; EVAL calls and usec per call: $evals}"
}
run alone 1 ""
run one 1 "unix://$SOCK"
run three 3 "unix://$SOCK"
# "min max avg samples" in ms, over 2 s
lat=$(timeout -s INT 2 redis-cli -s "$SOCK" --latency --raw 2>/dev/null | tail -1)
echo "cluster: loopback round trip of a Redis command, min/max/avg ms: $lat"
