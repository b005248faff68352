#!/bin/sh
# NAME
#	agent.sh - a persistent external agent (sluice's agent transport)
#	against one process per message (Postfix's pipe(8)), the same
#	program: messages per second
# SYNOPSIS
#	bench/agent.sh [-n MESSAGES] [-p PORT] [-k]
# DESCRIPTION
#	The workload: MESSAGES (default 2000) messages of one recipient
#	(NuN@d.bench) and a 2 KB body each, delivered into a maildir by
#	examples/agents/maildir, the same Python program on both sides:
#
#	  Postfix runs it once per message through pipe(8), in its one-shot
#	  mode ("mdir unix - n n - - pipe user=nobody argv=maildir -f
#	  ${sender} DIR ${recipient}"), as a private instance in a fresh
#	  directory (bench/lib.sh's postfix_config: Postfix's defaults but
#	  what a private DNS-less instance on loopback needs; concurrency
#	  20 per destination, the default). The messages are injected with
#	  smtp-source into its smtpd on 127.0.1.254:PORT (default 2525)
#	  and held (check_client_access static:HOLD), then released at once
#	  (postsuper -H ALL, postqueue -f).
#
#	  sluiced runs it as a persistent agent: "mdir:agent", the rule
#	  "mdir/* command=\"maildir DIR\"", agent_user nobody, everything
#	  else at sluice's defaults (concurrency 20 per destination too).
#	  The messages are stored with sluiced stopped (one "sluice
#	  sendmail" each), then sluiced starts.
#
#	Each side's time runs from the release (postqueue -f; starting
#	sluiced) to the moment its log holds MESSAGES "status=sent" lines,
#	polled every 0.1 s; each checks that the maildir holds MESSAGES
#	files. The last line is the ratio of the rates, sluice over
#	Postfix. Run it by hand, as root, on a quiet machine, not from
#	make check; compare within one run.
#
#	-n MESSAGES	(or BENCH_MESSAGES) messages to deliver
#	-p PORT		(or BENCH_PORT) Postfix's smtpd's port
#	-k		keep the directory (its path is printed)
#
#	The sluice programs are copied from BENCH_BUILD (default build/):
#	run make first.
# EXIT STATUS
#	0 when both sides delivered every message; 1 with a message on
#	stderr otherwise.
set -eu

NAME=agent
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MESSAGES=${BENCH_MESSAGES:-2000}
PORT=${BENCH_PORT:-2525}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
MAILDIR_AGENT=$(cd "$(dirname "$0")/.." && pwd)/examples/agents/maildir
SMTPD_ADDR=127.0.1.254
KEEP=0
POSTFIX_RATE=
SLUICE_RATE=

usage() {
	die "usage: agent.sh [-n MESSAGES] [-p PORT] [-k]"
}

# until_sent LOG START: poll LOG until it holds MESSAGES status=sent
# lines (at most 600 s); the seconds from START (a now() value).
until_sent() {
	deadline=$(($(date +%s) + 600))
	while [ "$(status_count sent "$1")" -lt "$MESSAGES" ]; do
		[ "$(date +%s)" -lt "$deadline" ] ||
			die "$(status_count sent "$1") of $MESSAGES sent after 600 s (see $1)"
		sleep 0.1
	done
	span "$2" "$(now)" 2
}

# files DIR: the messages in the maildir DIR.
files() {
	find "$1/new" -type f | wc -l
}

run_postfix() {
	mkdir -m 777 "$DIR/pmail"
	postfix_config "$DIR/postfix" "$SMTPD_ADDR:$PORT inet n - n - - smtpd" <<EOF
mynetworks = 127.0.0.0/8
smtpd_client_restrictions = check_client_access static:HOLD
transport_maps = hash:$DIR/postfix/etc/transport
smtp_dns_support_level = disabled
mdir_destination_recipient_limit = 1
EOF
	# shellcheck disable=SC2016 # ${sender}, ${recipient}: pipe(8)'s
	printf 'mdir unix - n n - - pipe user=nobody argv=%s -f ${sender} %s ${recipient}\n' \
		"$MAILDIR_AGENT" "$DIR/pmail" >>"$DIR/postfix/etc/master.cf"
	printf 'd.bench\tmdir:\n' | postfix_map transport
	postfix_start
	smtp-source -s 20 -m "$MESSAGES" -l 2048 -N -f bench@sluice-bench.test \
		-t u@d.bench "$SMTPD_ADDR:$PORT" >"$DIR/inject.log" 2>&1 ||
		die "smtp-source failed: $(tail -n 5 "$DIR/inject.log")"
	start=$(now)
	postsuper -c "$DIR/postfix/etc" -H ALL 2>>"$DIR/postfix/start.log" ||
		die "postsuper -H failed"
	postqueue -c "$DIR/postfix/etc" -f || die "postqueue -f failed"
	secs=$(until_sent "$DIR/postfix/maillog" "$start")
	got=$(files "$DIR/pmail")
	[ "$got" -eq "$MESSAGES" ] || die "postfix: $got files for $MESSAGES messages"
	POSTFIX_RATE=$(awk -v n="$MESSAGES" -v s="$secs" 'BEGIN { printf "%.3f", n / s }')
	echo "postfix pipe(8), one process per message: $MESSAGES messages in $secs s" \
		"= $(rate "$MESSAGES" "$secs") msg/s"
	postfix_stop
}

run_sluice() {
	copy_sluice "$BUILD" "$DIR/sluice"
	mkdir -m 777 "$DIR/smail"
	printf 'd.bench mdir:\n' >"$DIR/sluice/transport"
	printf 'mdir/*  command="%s %s"\n' "$MAILDIR_AGENT" "$DIR/smail" \
		>"$DIR/sluice/rules"
	cat >"$DIR/sluice/sluice.conf" <<EOF
queue_directory = $DIR/sluice/queue
myhostname = sluice.sluice-bench.test
transport_maps = $DIR/sluice/transport
transports = smtp:smtp, mdir:agent
scheduler_rules = $DIR/sluice/rules
mail_owner = root
smtpd_listen =
EOF
	mkdir -p "$DIR/sluice/queue"
	body=$(awk 'BEGIN { x = sprintf("%77s", ""); gsub(/ /, "X", x)
		for (i = 1; i <= 26; i++) print substr(i x, 1, 78) }')
	i=1
	while [ "$i" -le "$MESSAGES" ]; do
		printf 'From: <bench@sluice-bench.test>\nTo: <%su@d.bench>\n\n%s\n' \
			"$i" "$body" | "$DIR/sluice/bin/sluice" -c "$DIR/sluice/sluice.conf" \
			sendmail -f bench@sluice-bench.test "${i}u@d.bench" ||
			die "sluice sendmail failed"
		i=$((i + 1))
	done
	start=$(now)
	start_sluiced "$DIR/sluice" "$DIR/sluice/sluice.conf"
	secs=$(until_sent "$DIR/sluice/sluiced.log" "$start")
	got=$(files "$DIR/smail")
	[ "$got" -eq "$MESSAGES" ] || die "sluice: $got files for $MESSAGES messages"
	agents=$(grep -c 'agent started: pid' "$DIR/sluice/sluiced.log" || true)
	SLUICE_RATE=$(awk -v n="$MESSAGES" -v s="$secs" 'BEGIN { printf "%.3f", n / s }')
	echo "sluice agent, persistent ($agents processes): $MESSAGES messages in $secs s" \
		"= $(rate "$MESSAGES" "$secs") msg/s"
	stop_sluiced "$DIR/sluice"
}

while getopts n:p:k opt; do
	case $opt in
	n) MESSAGES=$OPTARG ;;
	p) PORT=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
is_count "$MESSAGES" && is_count "$PORT" || usage
need_root "Postfix's pipe(8) and agent_user need it"
need_tools postfix postmap postsuper postqueue smtp-source awk python3
need_sluice "$BUILD" "set BENCH_BUILD"
need_free "$SMTPD_ADDR:$PORT"
trap 'stop_all "$SLUICED_PID" ""' EXIT
trap 'die interrupted' INT TERM HUP
make_dir
echo "agent: $MESSAGES messages into a maildir, in $DIR; $(loadavg)"
run_postfix
run_sluice
echo "ratio: sluice/postfix = $(ratio "$SLUICE_RATE" "$POSTFIX_RATE") (delivery rate)"
