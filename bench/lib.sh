# shellcheck shell=sh
# bench/lib.sh: what the benchmark scripts (postfix_deliver.sh, drain.sh,
# list.sh, sendmail_inject.sh, smtpd_accept.sh, tls_relay.sh,
# inject_http.sh) share; sourced, not run, after the script has set NAME
# (the word its messages start with) and before it parses its options.
#
#   die MESSAGE...              "NAME: MESSAGE" on stderr, exit 1
#   is_count WORD               WORD is a whole number above 0
#   now                         seconds since the epoch with nanoseconds
#   span A B [DECIMALS]         seconds from A to B (now() values), to
#                               the millisecond (or DECIMALS places)
#   rate N SECONDS [DECIMALS]   N over SECONDS, rounded (or to DECIMALS
#                               places); "?" when SECONDS is not above 0
#   ratio A B                   A over B, two decimals; "?" when B is not
#                               above 0
#   loadavg                     "load average: ..." from uptime
#   need_root WHY               fails unless run as root (WHY: who needs it)
#   need_tools TOOL...          fails unless every TOOL is on PATH and the
#                               postfix user exists
#   need_sluice BUILD HINT      fails unless BUILD has sluice and sluiced
#                               ("run make (or HINT)")
#   need_free ADDR:PORT...      fails if something listens on one of them
#                               already, or on a wildcard address at its
#                               port (a sink of an earlier run, the system
#                               Postfix, ...)
#   listens ADDR:PORT           something listens on ADDR:PORT
#   in_use DIR                  a process has its working directory in DIR
#   make_dir                    DIR: a fresh directory from mktemp -d under
#                               $TMPDIR (default /tmp), searchable by all
#   smtp_sink ADDR:PORT BASE    an smtp-sink in the background, counting
#                               messages into BASE.count, its errors in
#                               BASE.err; its pid added to SINK_PIDS
#   sink_messages FILE...       the sum of the message counters of the
#                               sinks' BASE.count FILEs
#   postfix_config P [SMTPD_LINE]
#                               a private Postfix instance's configuration
#                               in P (configuration in P/etc, queue in
#                               P/queue, data in P/data, its log in
#                               P/maillog); SMTPD_LINE is its smtpd line of
#                               master.cf ("ADDR:PORT inet n - n - -
#                               smtpd"), none without it; the caller's
#                               main.cf lines come on standard input
#   postfix_map NAME            standard input into P/etc/NAME of the
#                               instance, then postmap it (hash:)
#   postfix_start               starts the instance; waits (at most 5 s)
#                               for master's pid file and for SMTPD_LINE's
#                               address to listen
#   postfix_stop                stops it, if started, and waits (at most
#                               10 s) until no process works in P
#   copy_sluice BUILD S         S/bin/sluice and S/bin/sluiced: copies of
#                               BUILD's
#   start_sluiced S CONF        S/bin/sluiced -f -c CONF in the background,
#                               its log in S/sluiced.log, its pid in
#                               SLUICED_PID
#   stop_sluiced S              SIGTERM to SLUICED_PID, if any; fails unless
#                               it exits with status 0
#   queue_requests              the requests of "sluice queue" (its output
#                               on standard input): "-- N Kbytes in N
#                               Requests." gives N, "Mail queue is empty" 0,
#                               anything else -1
#   status_count STATUS LOG     the lines with " status=STATUS " in LOG
#   stop_all FIRST LAST         the exit trap: SIGTERM to each pid of FIRST
#                               in turn (waiting for it), postfix_stop, then
#                               SIGTERM to every pid of LAST; removes DIR
#                               (unless KEEP is 1 or a process works in
#                               it); exits with the script's status. Set as
#                               trap 'stop_all "$A_PID $B_PID" "$PIDS"' EXIT
#                               (single quotes: the pids at the exit)
#
# The script sets NAME and KEEP (1: keep DIR at the exit); DIR, SINK_PIDS,
# SLUICED_PID, POSTFIX_UP and POSTFIX_DIR are set here. Names used inside
# the functions start with _bl_, so that the script's are never
# overwritten.

DIR=
SINK_PIDS=
SLUICED_PID=
# Whether the instance is started, and its directory.
POSTFIX_UP=0
POSTFIX_DIR=
# smtpd's ADDR:PORT, empty without an smtpd line.
_bl_smtpd=

die() {
	echo "$NAME: $*" >&2
	exit 1
}

is_count() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	*) [ "$1" -gt 0 ] ;;
	esac
}

now() {
	date +%s.%N
}

span() {
	awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { printf "%." d "f", b - a }'
}

rate() {
	awk -v n="$1" -v s="$2" -v d="${3:-0}" 'BEGIN { if (s > 0) printf "%." d "f", n / s; else print "?" }'
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'
}

loadavg() {
	uptime | sed 's/.*load/load/'
}

need_root() {
	[ "$(id -u)" -eq 0 ] || die "run as root: $1"
}

need_tools() {
	for _bl_tool; do
		command -v "$_bl_tool" >/dev/null 2>&1 ||
			die "$_bl_tool not found (bash .ci/install-deps installs Postfix)"
	done
	id postfix >/dev/null 2>&1 || die "no postfix user"
}

need_sluice() {
	for _bl_prog in sluice sluiced; do
		[ -x "$1/$_bl_prog" ] || die "$1/$_bl_prog not found: run make (or $2)"
	done
}

need_free() {
	_bl_listening=$(ss -Hltn | awk '{ print $4 }')
	for _bl_addr; do
		_bl_port=${_bl_addr##*:}
		printf '%s\n' "$_bl_listening" |
			grep -qx -e "$_bl_addr" -e "0\.0\.0\.0:$_bl_port" -e "\*:$_bl_port" -e "\[::\]:$_bl_port" &&
			die "$_bl_addr is in use"
	done
	return 0
}

listens() {
	ss -Hltn | awk -v want="$1" '$4 == want { found = 1 } END { exit !found }'
}

# in_use: Postfix's daemons run in their queue directory, and linger a
# moment after the stop.
in_use() {
	for _bl_cwd in /proc/[0-9]*/cwd; do
		case $(readlink "$_bl_cwd" 2>/dev/null) in
		"$1" | "$1"/*) return 0 ;;
		esac
	done
	return 1
}

# make_dir: the Postfix daemons, running as postfix, open paths under DIR.
make_dir() {
	DIR=$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX")
	chmod 755 "$DIR"
}

# smtp_sink: with a backlog of 256, so that the up to 20 connections
# per destination of Postfix and of sluiced are never refused by the
# kernel.
smtp_sink() {
	smtp-sink -u postfix -c "$1" 256 >"$2.count" 2>"$2.err" &
	SINK_PIDS="$SINK_PIDS $!"
}

# sink_messages: smtp-sink -c rewrites its counters after a carriage
# return, so the last record of each file is the current one.
sink_messages() {
	awk -v RS='\r' '
		{ for (f = 1; f <= NF; f++) if ($f ~ /^mesg=/) last[FILENAME] = substr($f, 6) }
		END { s = 0; for (k in last) s += last[k]; print s }' "$@"
}

# postfix_config: separate directories, so that "postfix check" does not
# find the postfix-owned queue inside the root-owned configuration
# directory. main.cf: what a second instance, unchrooted, without syslog
# and with no local deliveries needs, then the caller's lines (what it
# relays, where to, and how); everything else at Postfix's defaults.
postfix_config() {
	POSTFIX_DIR=$1
	_bl_smtpd=${2:-}
	_bl_smtpd=${_bl_smtpd%% *}
	[ -d "$1" ] || mkdir "$1"
	mkdir "$1/etc" "$1/queue" "$1/data"
	chown postfix:postfix "$1/data"
	: >"$1/maillog"
	chown postfix:postfix "$1/maillog"
	{
		cat <<EOF
# compatibility_level as in Debian's own main.cf: today's defaults, and
# no "using backwards-compatible default setting" noise in the log.
compatibility_level = 3.6
mail_owner = postfix
myhostname = postfix.sluice-bench.test
queue_directory = $1/queue
data_directory = $1/data
# Postfix accepts only addresses configured on an interface, and lo has
# just 127.0.0.1; an smtpd line of master.cf gives smtpd its own address.
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
# No local deliveries are expected; no system alias database to need.
alias_maps =
alias_database =
maillog_file = $1/maillog
maillog_file_prefixes = $1
EOF
		cat
	} >"$1/etc/main.cf"
	# The services of Postfix's own master.cf (those not used start no
	# process), all unchrooted (the queue is not laid out for chroot).
	{
		[ -z "${2:-}" ] || printf '%s\n' "$2"
		cat <<EOF
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
	} >"$1/etc/master.cf"
}

postfix_map() {
	cat >"$POSTFIX_DIR/etc/$1"
	postmap -c "$POSTFIX_DIR/etc" "hash:$POSTFIX_DIR/etc/$1"
}

# postfix_start: postfix's words in P/start.log. master writes its pid
# file once its services listen; wait for it, and for smtpd's address.
postfix_start() {
	postfix -c "$POSTFIX_DIR/etc" start >"$POSTFIX_DIR/start.log" 2>&1 ||
		die "the Postfix instance did not start: $(cat "$POSTFIX_DIR/start.log")"
	POSTFIX_UP=1
	_bl_t=0
	until [ -s "$POSTFIX_DIR/queue/pid/master.pid" ] &&
		{ [ -z "$_bl_smtpd" ] || listens "$_bl_smtpd"; }; do
		_bl_t=$((_bl_t + 1))
		if [ "$_bl_t" -gt 50 ]; then
			[ -s "$POSTFIX_DIR/queue/pid/master.pid" ] ||
				die "the Postfix instance did not start (no master.pid)"
			die "the Postfix instance did not start (not listening on $_bl_smtpd)"
		fi
		sleep 0.1
	done
}

# postfix_stop: by its configuration directory; master's children notice
# it is gone and exit within seconds.
postfix_stop() {
	[ "$POSTFIX_UP" -eq 1 ] || return 0
	POSTFIX_UP=0
	postfix -c "$POSTFIX_DIR/etc" stop >/dev/null 2>&1 || true
	_bl_t=0
	while [ "$_bl_t" -lt 100 ] && in_use "$POSTFIX_DIR"; do
		_bl_t=$((_bl_t + 1))
		sleep 0.1
	done
}

# copy_sluice: a copy of the programs, so that a rebuild of BUILD during
# the run (make replaces the files) cannot break or change it.
copy_sluice() {
	mkdir "$2" "$2/bin"
	cp "$1/sluice" "$1/sluiced" "$2/bin/" ||
		die "cannot copy the sluice programs from $1"
}

start_sluiced() {
	: >"$1/sluiced.log"
	"$1/bin/sluiced" -f -c "$2" 2>"$1/sluiced.log" &
	SLUICED_PID=$!
}

# stop_sluiced: as an operator would stop it; it must drain cleanly.
stop_sluiced() {
	[ -n "$SLUICED_PID" ] || return 0
	_bl_pid=$SLUICED_PID
	SLUICED_PID=
	kill -TERM "$_bl_pid" 2>/dev/null || true
	_bl_status=0
	wait "$_bl_pid" || _bl_status=$?
	[ "$_bl_status" -eq 0 ] ||
		die "sluiced exited with status $_bl_status after SIGTERM: $(tail -n 3 "$1/sluiced.log")"
}

queue_requests() {
	awk '
		/Mail queue is empty/ { print 0; found = 1; exit }
		/^-- .* in [0-9]+ Request/ { for (f = 1; f < NF; f++) if ($f == "in") { print $(f + 1); found = 1; exit } }
		END { if (!found) print -1 }'
}

status_count() {
	grep -c " status=$1 " "$2" || true
}

# stop_all: on every exit. Only what the script started, by pid or, for
# the instance, by its configuration directory: each of FIRST in turn
# (SIGTERM, then wait for it), the instance (postfix_stop), then every
# one of LAST at once (SIGTERM, then wait for them). DIR is removed,
# unless KEEP is 1 or a process still works in it (then its path is
# printed). Exits with the script's status.
stop_all() {
	_bl_status=$?
	trap - EXIT INT TERM HUP
	for _bl_pid in $1; do
		kill -TERM "$_bl_pid" 2>/dev/null || true
		wait "$_bl_pid" 2>/dev/null || true
	done
	if [ "$POSTFIX_UP" -eq 1 ]; then
		postfix_stop
		in_use "$POSTFIX_DIR" && echo "$NAME: Postfix processes still in $POSTFIX_DIR" >&2
	fi
	for _bl_pid in $2; do
		kill "$_bl_pid" 2>/dev/null || true
	done
	for _bl_pid in $2; do
		wait "$_bl_pid" 2>/dev/null || true
	done
	if [ -n "$DIR" ]; then
		if [ "$KEEP" -eq 1 ] || in_use "$DIR"; then
			echo "$NAME: kept $DIR" >&2
		else
			rm -rf "$DIR"
		fi
	fi
	exit "$_bl_status"
}
