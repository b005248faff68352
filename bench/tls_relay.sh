#!/bin/sh
# NAME
#	tls_relay.sh - sluiced and a private Postfix relaying with TLS on
#	both sides, and their TLS handshakes per second with and without
#	session resumption, to the same local TLS sinks
# SYNOPSIS
#	bench/tls_relay.sh [-n MESSAGES] [-H HANDSHAKES] [-d DOMAINS]
#		[-s SESSIONS] [-c PER_CONNECTION] [-p PORT] [-t TIMEOUT]
#		[-o both|postfix|sluice] [-R] [-k]
# DESCRIPTION
#	Issue 17's benchmark. Everything on loopback (127.0.4.0/24), in a
#	fresh directory from mktemp -d under $TMPDIR (default /tmp),
#	removed at the end. A throwaway CA (ECDSA P-256) is made there,
#	with one certificate for the sinks and one for both relays' SMTP
#	servers.
#
#	The sinks: one build/bench/tls_sink per domain (127.0.4.I:PORT),
#	started once for both sides: they offer STARTTLS, resume sessions
#	by ticket, and count connections, messages, handshakes, handshakes
#	where the client offered a session, and resumed handshakes. They
#	run with -P (mail in plaintext too, for the baseline); each
#	measurement checks from the counters that every one of its
#	connections made a TLS handshake (none, for the baseline).
#
#	Both sides have TLS on both sides: their SMTP server offers
#	STARTTLS with the relay certificate, and their SMTP client uses
#	smtp_tls_security_level = encrypt (the domains dI.bench and rI.bench),
#	smtp_tls_CAfile = the CA, and a session cache (Postfix:
#	smtp_tls_session_cache_database = btree:DATA/smtp_scache through
#	tlsmgr; sluice: its in-memory cache, on by default). Everything
#	else is each side's default (concurrency 20 per destination,
#	connection cache on demand; Postfix's smtp_tls_connection_reuse =
#	no, see -R). Postfix runs first, and is stopped before sluice
#	starts.
#
#	1. Relay: build/bench/tls_source (smtp-source has no TLS) submits
#	MESSAGES (default 10000) messages of 2 KB, one recipient each,
#	spread over DOMAINS (default 5) domains, over SESSIONS (default 20)
#	sessions, each connection doing STARTTLS (resuming the session's
#	previous TLS session) and carrying PER_CONNECTION (default 10)
#	messages, into the side's smtpd, which delivers while it accepts.
#	Timed from the start of the submission until the sinks have
#	counted every message: the relay rate. The submission's own time
#	is printed too. Then the same without TLS anywhere, the baseline:
#	tls_source -P (no STARTTLS) to pI.bench, which both sides deliver
#	at smtp_tls_security_level = none (Postfix: a transport with
#	-o smtp_tls_security_level=none; sluice: transport smtp at none,
#	transport relay, which the TLS domains use, at encrypt).
#
#	2. Handshakes: HANDSHAKES (default 3000) messages queued first,
#	then delivered with the connection cache off (each message its own
#	connection and handshake), once with TLS session resumption and
#	once without. Timed from the release (Postfix: postsuper -H ALL
#	and postqueue -f of messages held by a second smtpd; sluice: the
#	start of sluiced on a spool filled by build/bench/prequeue) until
#	the sinks have counted every message; handshakes/s is the sinks'
#	handshake count over that time. Postfix: a transport with
#	-o smtp_connection_cache_on_demand=no, and for no resumption the
#	instance restarted without smtp_tls_session_cache_database (the
#	cache is tlsmgr's: a transport's -o does not turn it off); its
#	cache is warm from the relay run. sluice: sluiced restarted with
#	smtp_connection_cache_on_demand = no, and
#	smtp_tls_session_cache_timeout = 0 for no resumption; its cache is
#	in memory and starts empty.
#
#	With both sides, the last lines are the ratios sluice/postfix of
#	each measurement, then, for each side, its TLS relay rate over its
#	plaintext one.
#
#	-n MESSAGES	(or BENCH_MESSAGES) messages relayed
#	-H HANDSHAKES	(or BENCH_HANDSHAKES) messages of each handshake run
#	-d DOMAINS	(or BENCH_DOMAINS) domains and sinks, at most 100
#	-s SESSIONS	(or BENCH_SESSIONS) tls_source sessions
#	-c PER_CONNECTION
#			(or BENCH_PER_CONNECTION) messages per tls_source
#			connection
#	-p PORT		(or BENCH_PORT, default 2525)
#	-t TIMEOUT	(or BENCH_TIMEOUT) seconds for each measurement;
#			default 120 + MESSAGES/20. A measurement also fails
#			after 60 s without a delivery.
#	-o WHICH, --only WHICH
#			(or BENCH_ONLY) "postfix", "sluice" or "both"
#	-R		(or BENCH_TLS_REUSE=1) Postfix with
#			smtp_tls_connection_reuse = yes (through tlsproxy):
#			by default, Postfix does not reuse TLS connections,
#			whatever its connection cache says
#	-k		keep the directory
#
#	The sluice programs are copied from BENCH_BUILD (default build/);
#	run make and make bench first. As root (Postfix needs it), by hand,
#	not from make check. Compare the two sides within one run.
# EXIT STATUS
#	0 when every measurement delivered every message over TLS; 1 with
#	a message on stderr otherwise.
set -eu

NAME=tls_relay
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MESSAGES=${BENCH_MESSAGES:-10000}
HANDSHAKES=${BENCH_HANDSHAKES:-3000}
DOMAINS=${BENCH_DOMAINS:-5}
SESSIONS=${BENCH_SESSIONS:-20}
PER_CONNECTION=${BENCH_PER_CONNECTION:-10}
PORT=${BENCH_PORT:-2525}
TIMEOUT=${BENCH_TIMEOUT:-}
ONLY=${BENCH_ONLY:-both}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
KEEP=0
TLS_REUSE=${BENCH_TLS_REUSE:-0}

# Sinks 127.0.4.1 ... 127.0.4.D; Postfix's smtpd .254 (TLS, relays at
# once) and .253 (TLS, puts every message on hold); sluiced's .252.
NET=127.0.4
POSTFIX_ADDR=$NET.254
POSTFIX_HOLD_ADDR=$NET.253
SLUICE_ADDR=$NET.252
STALL=60

SOURCE_PID=
# "SIDE MEASUREMENT RATE" lines, for the ratios.
RESULTS=

usage() {
	die "usage: tls_relay.sh [-n MESSAGES] [-H HANDSHAKES] [-d DOMAINS] [-s SESSIONS] [-c PER_CONNECTION] [-p PORT] [-t TIMEOUT] [-o|--only both|postfix|sluice] [-R] [-k]"
}

check_tools() {
	need_root "a Postfix instance needs it"
	set -- openssl ss awk date timeout
	[ "$ONLY" = sluice ] || set -- "$@" postfix postmap postsuper postqueue
	need_tools "$@"
	[ "$ONLY" = postfix ] || need_sluice "$BUILD" "set BENCH_BUILD"
	for prog in tls_sink tls_source prequeue; do
		[ -x "$BUILD/bench/$prog" ] || die "$BUILD/bench/$prog not found: run make bench"
	done
}

check_free() {
	set --
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		set -- "$@" "$NET.$i:$PORT"
		i=$((i + 1))
	done
	need_free "$@" "$POSTFIX_ADDR:$PORT" "$POSTFIX_HOLD_ADDR:$PORT" "$SLUICE_ADDR:$PORT"
}

# make_ca: the CA, the sinks' certificate (every sink address) and the
# relays' (both smtpds), ECDSA P-256, in $DIR/tls.
make_ca() {
	T=$DIR/tls
	mkdir "$T"
	q() { openssl "$@" >/dev/null 2>"$T/openssl.err" || die "openssl $1: $(cat "$T/openssl.err")"; }
	ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
	# shellcheck disable=SC2086 # $ec is several words
	q req -x509 $ec -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
		-subj "/CN=tls_relay bench CA" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign"
	sans="DNS:sink.bench"
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		sans="$sans,IP:$NET.$i"
		i=$((i + 1))
	done
	for name in sink relay; do
		[ "$name" = relay ] && sans="DNS:relay.sluice-bench.test,IP:$POSTFIX_ADDR,IP:$POSTFIX_HOLD_ADDR,IP:$SLUICE_ADDR"
		printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$sans" >"$T/$name.ext"
		# shellcheck disable=SC2086
		q req $ec -keyout "$T/$name.key" -out "$T/$name.csr" -subj "/CN=$name.sluice-bench.test"
		q x509 -req -in "$T/$name.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
			-CAcreateserial -days 2 -extfile "$T/$name.ext" -out "$T/$name.pem"
	done
	# smtpd reads its key as root, before it drops privileges.
	chmod 600 "$T"/*.key
	chmod 755 "$T"
}

start_sinks() {
	mkdir "$DIR/sinks"
	cp "$BUILD/bench/tls_sink" "$BUILD/bench/tls_source" "$BUILD/bench/prequeue" "$DIR/"
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		"$DIR/tls_sink" -P -i 20 "$NET.$i:$PORT" "$DIR/tls/sink.pem" "$DIR/tls/sink.key" \
			"$DIR/sinks/$i.count" 2>"$DIR/sinks/$i.err" &
		SINK_PIDS="$SINK_PIDS $!"
		i=$((i + 1))
	done
	t=0
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		until listens "$NET.$i:$PORT"; do
			t=$((t + 1))
			[ "$t" -le 50 ] || die "tls_sink $NET.$i:$PORT does not listen: $(cat "$DIR/sinks/$i.err")"
			sleep 0.1
		done
		i=$((i + 1))
	done
}

# sinks FIELD: the sum of FIELD (mesg, sess, tls, offered, resumed,
# tlserr) over the sinks' counter files.
sinks() {
	awk -v f="$1" '{ for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) s += substr($i, length(f) + 2) }
		END { print s + 0 }' "$DIR"/sinks/*.count
}

# snapshot: "mesg sess tls offered resumed tlserr" now.
snapshot() {
	echo "$(sinks mesg) $(sinks sess) $(sinks tls) $(sinks offered) $(sinks resumed) $(sinks tlserr)"
}

# wait_sunk WANT WHAT: until the sinks count WANT messages; fails after
# TIMEOUT seconds, or STALL without progress.
wait_sunk() {
	deadline=$(($(date +%s) + TIMEOUT))
	last_n=-1
	last_change=$(date +%s)
	while :; do
		n=$(sinks mesg)
		[ "$n" -ge "$1" ] && break
		t=$(date +%s)
		if [ "$n" -ne "$last_n" ]; then
			last_n=$n
			last_change=$t
		fi
		[ "$t" -lt "$deadline" ] || die "$2: the sinks have $n of $1 messages after $TIMEOUT s (see $DIR)"
		[ $((t - last_change)) -lt "$STALL" ] ||
			die "$2: no delivery for $STALL s, the sinks have $n of $1 messages (see $DIR)"
		sleep 0.02
	done
}

# source_run ADDR COUNT PREFIX PER_CONNECTION LOG [-P]: tls_source in
# the background (so that the trap can stop it), waited for.
source_run() {
	# shellcheck disable=SC2086 # ${6:-} is -P or nothing
	timeout "$TIMEOUT" "$DIR/tls_source" -s "$SESSIONS" -m "$2" -d "$DOMAINS" -r "$3" \
		-k "$4" ${6:-} "$1:$PORT" >"$5" 2>&1 &
	SOURCE_PID=$!
	status=0
	wait "$SOURCE_PID" || status=$?
	SOURCE_PID=
	[ "$status" -eq 0 ] || die "tls_source into $1 failed (status $status): $(tail -n 3 "$5")"
}

# relay SIDE ADDR WHAT: measurement 1, WHAT "relay" (TLS in and out,
# to dI.bench) or "plaintext relay" (no STARTTLS, to pI.bench).
relay() {
	before=$(snapshot)
	set -- "$1" "$2" "$3" "${before%% *}"
	log=$DIR/source.$1.$(echo "$3" | tr ' ' _).log
	start=$(now)
	if [ "$3" = relay ]; then
		source_run "$2" "$MESSAGES" d "$PER_CONNECTION" "$log"
	else
		source_run "$2" "$MESSAGES" p "$PER_CONNECTION" "$log" -P
	fi
	injected=$(now)
	wait_sunk $(($4 + MESSAGES)) "$1 $3"
	end=$(now)
	report "$1" "$3" "$before" "$MESSAGES" "$(span "$start" "$end")"
	echo "$1: $3: the submission (tls_source) took $(span "$start" "$injected") s;" \
		"$(sed 's/^tls_source: [0-9]* messages in [0-9.]* s = [0-9]* msg\/s; //' "$log") inbound"
}

# report SIDE WHAT BEFORE MESSAGES SECONDS: the sinks' counts since
# BEFORE, checked, and the rates.
report() {
	# shellcheck disable=SC2086 # the snapshots are split into fields
	set -- "$1" "$2" "$3" "$4" "$5" $3
	after=$(snapshot)
	# shellcheck disable=SC2086
	set -- "$@" $after
	# $6..$11 before, $12..$17 after: mesg sess tls offered resumed tlserr
	mesg=$((${12} - $6))
	sess=$((${13} - $7))
	tls=$((${14} - $8))
	off=$((${15} - $9))
	res=$((${16} - ${10}))
	err=$((${17} - ${11}))
	[ "$mesg" -eq "$4" ] || die "$1 $2: the sinks counted $mesg messages for $4"
	[ "$err" -eq 0 ] || die "$1 $2: $err failed handshakes at the sinks: $(cat "$DIR"/sinks/*.err)"
	# Every connection made its handshake, or none did.
	if [ "$2" = "plaintext relay" ]; then
		[ "$tls" -eq 0 ] || die "$1 $2: $tls TLS handshakes at the sinks, for none expected"
	else
		[ "$tls" -eq "$sess" ] || die "$1 $2: $sess connections at the sinks, $tls with TLS"
	fi
	if [ "$2" = relay ] || [ "$2" = "plaintext relay" ]; then
		r=$(rate "$4" "$5" 1)
		printf '%s: %s: %d messages in %s s = %s msg/s; at the sinks: %d connections, %d handshakes, %d offered a session, %d resumed\n' \
			"$1" "$2" "$4" "$5" "$(rate "$4" "$5")" "$sess" "$tls" "$off" "$res"
	else
		r=$(rate "$tls" "$5" 1)
		printf '%s: handshakes, %s: %d messages in %s s: %d connections, %d handshakes (%d offered a session, %d resumed) = %s handshakes/s\n' \
			"$1" "$2" "$4" "$5" "$sess" "$tls" "$off" "$res" "$(rate "$tls" "$5")"
	fi
	RESULTS="$RESULTS
$1 $(echo "$2" | tr ' ' _) $r"
}

# result SIDE WHAT: the rate report recorded.
result() {
	printf '%s\n' "$RESULTS" | awk -v s="$1" -v w="$(echo "$2" | tr ' ' _)" '$1 == s && $2 == w { print $3 }'
}

# write_postfix_config: smtpd with STARTTLS on two addresses (the second
# holds every message, for the handshake runs), the client at encrypt
# with the session cache, the domains to the sinks: dI.bench through
# smtp (connection cache on demand), pI.bench through "plain" (no TLS),
# rI.bench through "hs" (no connection cache). The session cache is
# tlsmgr's, which a transport's -o cannot turn off: the run without
# resumption restarts the instance without it.
write_postfix_config() {
	P=$DIR/postfix
	postfix_config "$P" "$POSTFIX_ADDR:$PORT inet n - n - - smtpd" <<EOF
mynetworks = 127.0.0.0/8
transport_maps = hash:$P/etc/transport
smtp_dns_support_level = disabled
queue_run_delay = 1s
minimal_backoff_time = 2s
maximal_backoff_time = 4s
smtpd_tls_cert_file = $DIR/tls/relay.pem
smtpd_tls_key_file = $DIR/tls/relay.key
smtpd_tls_security_level = may
smtp_tls_security_level = encrypt
smtp_tls_CAfile = $DIR/tls/ca.pem
smtp_tls_session_cache_database = btree:$P/data/smtp_scache
EOF
	cat >>"$P/etc/master.cf" <<EOF
$POSTFIX_HOLD_ADDR:$PORT inet n - n - - smtpd -o smtpd_client_restrictions=check_client_access,static:HOLD
plain     unix  - - n -  - smtp -o smtp_tls_security_level=none
hs        unix  - - n -  - smtp -o smtp_connection_cache_on_demand=no
EOF
	if [ "$TLS_REUSE" -eq 1 ]; then
		echo 'tlsproxy  unix  - - n -  0 tlsproxy' >>"$P/etc/master.cf"
		postconf -c "$P/etc" -e smtp_tls_connection_reuse=yes
	fi
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		printf 'd%s.bench\tsmtp:[%s.%s]:%s\n' "$i" "$NET" "$i" "$PORT"
		printf 'p%s.bench\tplain:[%s.%s]:%s\n' "$i" "$NET" "$i" "$PORT"
		printf 'r%s.bench\ths:[%s.%s]:%s\n' "$i" "$NET" "$i" "$PORT"
		i=$((i + 1))
	done | postfix_map transport
}

postfix_held() {
	find "$DIR/postfix/queue/hold" -type f | wc -l
}

# postfix_up: started, both smtpd addresses listening.
postfix_up() {
	postfix_start
	t=0
	until listens "$POSTFIX_HOLD_ADDR:$PORT"; do
		t=$((t + 1))
		[ "$t" -le 50 ] || die "Postfix does not listen on $POSTFIX_HOLD_ADDR:$PORT"
		sleep 0.1
	done
}

# postfix_handshakes WHAT: measurement 2 for Postfix: HANDSHAKES
# messages to rI.bench held, then released. Without resumption, the
# instance is restarted without smtp_tls_session_cache_database between
# the two.
postfix_handshakes() {
	source_run "$POSTFIX_HOLD_ADDR" "$HANDSHAKES" r 100 "$DIR/source.postfix.$(echo "$1" | tr ' ' _).log"
	held=$(postfix_held)
	[ "$held" -eq "$HANDSHAKES" ] || die "postfix: $held of $HANDSHAKES messages on hold"
	if [ "$1" = "no resumption" ]; then
		postfix_stop
		postconf -c "$DIR/postfix/etc" -X smtp_tls_session_cache_database
		postfix_up
	fi
	before=$(snapshot)
	start=$(now)
	postsuper -c "$DIR/postfix/etc" -H ALL 2>>"$DIR/postfix/start.log" || die "postsuper -H failed"
	postqueue -c "$DIR/postfix/etc" -f || die "postqueue -f failed"
	wait_sunk $((${before%% *} + HANDSHAKES)) "postfix handshakes $1"
	report postfix "$1" "$before" "$HANDSHAKES" "$(span "$start" "$(now)")"
}

run_postfix() {
	write_postfix_config
	postfix_up
	relay postfix "$POSTFIX_ADDR" relay
	relay postfix "$POSTFIX_ADDR" "plaintext relay"
	postfix_handshakes resumption
	postfix_handshakes "no resumption"
	P=$DIR/postfix/maillog
	# postlogd writes a moment late
	sleep 1
	want=$((2 * MESSAGES + 2 * HANDSHAKES))
	echo "postfix: maillog: $(status_count sent "$P") sent (of $want)," \
		"$(status_count deferred "$P") deferred, $(status_count bounced "$P") bounced," \
		"$(grep -c -e 'warning:' -e 'fatal:' -e 'error:' "$P" || true) warnings or errors"
	grep -e 'warning:' -e 'fatal:' -e 'error:' "$P" |
		sed 's/^.* postfix\/\([a-z-]*\)\[[0-9]*\]: /\1: /' | awk '!seen[$0]++' |
		head -n 5 | sed 's/^/postfix: /' || true
	postfix_stop
	in_use "$DIR/postfix" && die "Postfix processes still in $DIR/postfix after the stop"
	return 0
}

# write_sluice_config FILE LISTEN EXTRA...: the built-in defaults except
# the spool, the name, the SMTP server (LISTEN, with the relay
# certificate), the client at encrypt with the CA for transport relay
# (dI.bench), none for transport smtp (pI.bench, the plaintext
# baseline), and where each domain goes; then the EXTRA lines.
write_sluice_config() {
	f=$1
	listen=$2
	shift 2
	{
		cat <<EOF
queue_directory = $DIR/sluice/queue
myhostname = sluice.sluice-bench.test
transport_maps = $DIR/sluice/transport
smtpd_listen = $listen
mynetworks = 127.0.0.0/8
smtpd_tls_cert_file = $DIR/tls/relay.pem
smtpd_tls_key_file = $DIR/tls/relay.key
smtp_tls_security_level = none
relay_tls_security_level = encrypt
smtp_tls_CAfile = $DIR/tls/ca.pem
EOF
		for line; do
			printf '%s\n' "$line"
		done
	} >"$f"
}

# sluiced_stop_keep: sluiced stopped (it must exit 0), its log added to
# all.log.
sluiced_stop_keep() {
	stop_sluiced "$DIR/sluice"
	cat "$DIR/sluice/sluiced.log" >>"$DIR/sluice/all.log"
}

# sluice_handshakes WHAT CONF: measurement 2 for sluice: the spool
# filled by prequeue with sluiced stopped, then sluiced started.
sluice_handshakes() {
	"$DIR/prequeue" "$DIR/sluice/queue" "$HANDSHAKES" "$DOMAINS" >"$DIR/sluice/prequeue.log" 2>&1 ||
		die "prequeue failed: $(cat "$DIR/sluice/prequeue.log")"
	before=$(snapshot)
	start=$(now)
	start_sluiced "$DIR/sluice" "$2"
	wait_sunk $((${before%% *} + HANDSHAKES)) "sluice handshakes $1"
	end=$(now)
	sluiced_stop_keep
	report sluice "$1" "$before" "$HANDSHAKES" "$(span "$start" "$end")"
}

run_sluice() {
	S=$DIR/sluice
	copy_sluice "$BUILD" "$S"
	: >"$S/all.log"
	i=1
	while [ "$i" -le "$DOMAINS" ]; do
		printf 'd%s.bench relay:[%s.%s]:%s\n' "$i" "$NET" "$i" "$PORT"
		printf 'p%s.bench smtp:[%s.%s]:%s\n' "$i" "$NET" "$i" "$PORT"
		i=$((i + 1))
	done >"$S/transport"
	write_sluice_config "$S/relay.conf" "$SLUICE_ADDR:$PORT"
	write_sluice_config "$S/resume.conf" "" "smtp_connection_cache_on_demand = no"
	write_sluice_config "$S/noresume.conf" "" "smtp_connection_cache_on_demand = no" \
		"smtp_tls_session_cache_timeout = 0"

	start_sluiced "$S" "$S/relay.conf"
	t=0
	until listens "$SLUICE_ADDR:$PORT"; do
		kill -0 "$SLUICED_PID" 2>/dev/null || die "sluiced exited: $(tail -n 5 "$S/sluiced.log")"
		t=$((t + 1))
		[ "$t" -le 50 ] || die "sluiced does not listen on $SLUICE_ADDR:$PORT"
		sleep 0.1
	done
	relay sluice "$SLUICE_ADDR" relay
	relay sluice "$SLUICE_ADDR" "plaintext relay"
	# the queue empties a moment after the last delivery
	t=0
	until [ "$("$S/bin/sluice" -c "$S/relay.conf" queue 2>/dev/null | queue_requests)" -eq 0 ]; do
		t=$((t + 1))
		[ "$t" -le 100 ] || die "sluice: the queue is not empty after the relay runs"
		sleep 0.1
	done
	sluiced_stop_keep
	sluice_handshakes resumption "$S/resume.conf"
	sluice_handshakes "no resumption" "$S/noresume.conf"
	L=$S/all.log
	want=$((2 * MESSAGES + 2 * HANDSHAKES))
	echo "sluice: sluiced's logs: $(status_count sent "$L") sent (of $want)," \
		"$(status_count deferred "$L") deferred, $(status_count bounced "$L") bounced," \
		"$(grep -c -e 'warning' -e 'error' -e 'panic' "$L" || true) warnings or errors"
	grep -e 'warning' -e 'error' -e 'panic' "$L" | head -n 5 | sed 's/^/sluice: /' || true
}

for arg; do
	shift
	case $arg in
	--only) set -- "$@" -o ;;
	--only=*) set -- "$@" -o "${arg#--only=}" ;;
	*) set -- "$@" "$arg" ;;
	esac
done
while getopts n:H:d:s:c:p:t:o:Rk opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	H) HANDSHAKES=$OPTARG ;;
	d) DOMAINS=$OPTARG ;;
	s) SESSIONS=$OPTARG ;;
	c) PER_CONNECTION=$OPTARG ;;
	p) PORT=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	o) ONLY=$OPTARG ;;
	R) TLS_REUSE=1 ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for v in "$MESSAGES" "$HANDSHAKES" "$DOMAINS" "$SESSIONS" "$PER_CONNECTION" "$PORT"; do
	is_count "$v" || usage
done
[ "$DOMAINS" -le 100 ] || usage
case $ONLY in both | postfix | sluice) ;; *) usage ;; esac
[ -n "$TIMEOUT" ] || TIMEOUT=$((120 + MESSAGES / 20))
is_count "$TIMEOUT" || usage
[ -d "$BUILD" ] || die "no build directory $BUILD"
BUILD=$(cd "$BUILD" && pwd)

check_tools
check_free
trap 'stop_all "$SOURCE_PID $SLUICED_PID" "$SINK_PIDS"' EXIT
trap 'die interrupted' INT TERM HUP
make_dir
echo "tls_relay: $MESSAGES messages relayed, $HANDSHAKES per handshake run, $DOMAINS domains," \
	"$SESSIONS sessions of $PER_CONNECTION messages a connection; in $DIR; $(loadavg)"
[ "$TLS_REUSE" -eq 0 ] || echo "tls_relay: Postfix with smtp_tls_connection_reuse = yes"
make_ca
start_sinks
[ "$ONLY" = sluice ] || run_postfix
[ "$ONLY" = postfix ] || run_sluice
if [ "$ONLY" = both ]; then
	for what in relay "plaintext relay" resumption "no resumption"; do
		echo "ratio: sluice/postfix = $(ratio "$(result sluice "$what")" "$(result postfix "$what")") ($what)"
	done
fi
echo "tls_relay: the sinks in all: $(sinks sess) connections ($(sinks quit) ended with QUIT)," \
	"$(sinks mesg) messages, $(sinks tls) handshakes, $(sinks resumed) resumed, $(sinks tlserr) failed"
for side in postfix sluice; do
	[ -n "$(result "$side" relay)" ] || continue
	echo "$side: relay with TLS at $(ratio "$(result "$side" relay)" "$(result "$side" "plaintext relay")") of the plaintext rate"
done
echo "tls_relay: done; $(loadavg)"
