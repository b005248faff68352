#!/bin/sh
# NAME
#	list.sh - a 200,000-recipient list plus 20,000 single messages,
#	delivered by a private Postfix and by sluiced to the same local
#	smtp-sinks: drain time, peak memory, single-message latency
# SYNOPSIS
#	bench/list.sh [-l LIST_RCPTS] [-n SINGLES] [-L LIST_DOMAINS]
#		[-S SINGLE_DOMAINS] [-p PORT] [-s SESSIONS] [-t TIMEOUT]
#		[-o both|postfix|sluice] [-k]
# DESCRIPTION
#	Issue 16: a big mailing list must not hold up small mail, and must
#	not need memory in proportion to its size. The workload, the same
#	for both sides: one message (a 2 KB body) to LIST_RCPTS (default
#	200000) recipients r1@l1.bench, r2@l2.bench, ... spread evenly over
#	LIST_DOMAINS (default 10) domains l1.bench ... lL.bench, then
#	SINGLES (default 20000) messages of one recipient and a 2 KB body
#	each, spread evenly over SINGLE_DOMAINS (default 10) domains
#	s1.bench ... sS.bench. Each domain has its own smtp-sink: the list
#	domains on 127.0.3.I:PORT (I = 1 ... L), the single domains on
#	127.0.3.(100+I):PORT; PORT defaults to 2525. Everything runs on
#	loopback, in a fresh directory from mktemp -d under $TMPDIR
#	(default /tmp; the postfix user must reach it), removed at the end.
#
#	Both sides get the mail the same way, over SMTP, as fast as it
#	goes, and deliver while it comes (nothing is held): first the list,
#	in one SMTP transaction (a python3 client: EHLO, MAIL, the
#	LIST_RCPTS RCPT TOs pipelined 1000 at a time, DATA), then, as soon
#	as the list is accepted, the singles: one smtp-source per single
#	domain, all at once, SESSIONS (default 20) sessions in all (at
#	least one per domain), so that the singles arrive while the list
#	is being delivered.
#
#	Postfix runs first, as a private instance (smtpd on
#	127.0.3.254:PORT, mynetworks 127.0.0.0/8, transport_maps to the
#	sinks with smtp:[address]:port, no DNS, unchrooted), at Postfix's
#	defaults except smtpd_recipient_limit = LIST_RCPTS (default 1000),
#	so that the list goes in one transaction, and message_size_limit
#	and mailbox_size_limit = 100 bytes per list recipient, at least
#	51200000: Postfix counts the queue file, its envelope records
#	included, against message_size_limit, and refuses a list of
#	200,000 with "552 5.3.4 Error: message file too big" at the
#	default (10240000); sluice counts the content only. The scheduler
#	(default_recipient_limit, qmgr_message_recipient_limit,
#	default_recipient_refill_limit and _delay, concurrency 20 and 50
#	recipients per delivery) stays at its defaults. It is stopped (its
#	processes gone) before sluice starts.
#
#	Then sluiced -f, with its built-in defaults except queue_directory,
#	myhostname, transport_maps (relay:[address]:port, no DNS),
#	smtpd_listen = 127.0.3.253:PORT and smtpd_recipient_limit =
#	LIST_RCPTS (default 1000, as Postfix's). The list is injected over
#	SMTP into sluiced's own server, the same client as for Postfix.
#	sluiced is stopped with SIGTERM at the end and must exit 0.
#
#	Measured on each side:
#	  drain: from the start of the list's injection to the last
#	    delivery (the last "status=sent" line of the side's log, timed
#	    as a tail -F reader sees it); also when the list's last
#	    recipient and the last single were delivered, and how long the
#	    two injections took.
#	  single-message latency: the "delay=" fields (arrival in the
#	    queue to the end of the delivery, as each side logs it) of the
#	    "to=<...@sN.bench>, ... status=sent" lines: median, 90th and
#	    99th percentile (nearest rank), maximum; and the same for the
#	    singles logged before the list's last recipient, while the
#	    list was being delivered (how much the list held them up).
#	  memory: Postfix: the VmHWM of the qmgr process (its own peak,
#	    read from /proc at the end), the largest VmHWM of each other
#	    kind of process still alive at the end (smtpd and cleanup,
#	    which took the list; processes that exited earlier are not
#	    counted), and, sampled every 0.2 s, the sum of VmRSS and the
#	    sum of Pss (/proc/PID/smaps_rollup: shared pages divided among
#	    their users) over master and all its children. sluiced (one
#	    process): its VmHWM at the end, and the largest RssAnon and
#	    RssFile sampled every 0.2 s (the file-backed part is mostly
#	    the spool's memory map, as in drain.sh).
#
#	Each side is checked against the sinks, which dump every
#	transaction (smtp-sink -D, one file per sink): during the side's
#	run, the list sinks must have received each of the LIST_RCPTS
#	addresses exactly once, each at its own domain's sink, and the
#	single sinks each single's address exactly once, in exactly
#	SINGLES messages; the side's log must say LIST_RCPTS + SINGLES
#	recipients sent. Otherwise the run fails.
#
#	Printed: one result line per side, and with both sides the line
#	"ratio: sluice/postfix = X (drain time), Y (median single
#	latency)": below 1, sluice is the faster.
#
#	-l LIST_RCPTS	(or BENCH_LIST) recipients of the list
#	-n SINGLES	(or BENCH_SINGLES) single-recipient messages
#	-L DOMAINS	list domains, at most 100
#	-S DOMAINS	single domains, at most 100
#	-p PORT		(or BENCH_PORT) the sinks' and both smtpds' port
#	-s SESSIONS	(or BENCH_SESSIONS) smtp-source sessions in all
#	-t TIMEOUT	(or BENCH_TIMEOUT) seconds for a whole side, default
#			600 + (LIST_RCPTS + SINGLES) / 100. A side also fails
#			when nothing is delivered for 120 s, and the list's
#			SMTP client gives up after 120 s without an answer.
#	-o WHICH, --only WHICH
#			(or BENCH_ONLY) run "postfix", "sluice" or "both"
#	-k		keep the directory (its path is printed)
#
#	The sluice programs are copied at the start from BENCH_BUILD
#	(default build/ beside this script's directory): run make first.
#	Run by hand, as root (smtp-sink and Postfix need it), with Postfix,
#	smtp-sink, smtp-source and python3 installed; not from make check.
# EXIT STATUS
#	0 when every side run delivered everything exactly once; 1 with a
#	message on stderr when a tool is missing, an address is taken, a
#	side does not start, an injection fails, a side stalls or times
#	out, or a check fails.
set -eu

NAME=list
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

LIST=${BENCH_LIST:-200000}
SINGLES=${BENCH_SINGLES:-20000}
LDOMAINS=10
SDOMAINS=10
PORT=${BENCH_PORT:-2525}
SESSIONS=${BENCH_SESSIONS:-20}
TIMEOUT=${BENCH_TIMEOUT:-}
ONLY=${BENCH_ONLY:-both}
BUILD=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
KEEP=0
# Seconds without a delivery after which a side fails.
STALL=120

# 127.0.3.0/24: clear of the test suite (127.0.0.x), postfix_deliver.sh
# (127.0.1.x) and smtpd_accept.sh and drain.sh (127.0.2.x).
NET=127.0.3
POSTFIX_SMTPD=$NET.254
SLUICE_SMTPD=$NET.253

TAIL_PID=
AWK_PID=
SRC_PIDS=
# Each side's drain time and median single latency, for the ratios.
POSTFIX_DRAIN=
POSTFIX_MEDIAN=
SLUICE_DRAIN=
SLUICE_MEDIAN=

usage() {
	die "usage: list.sh [-l LIST_RCPTS] [-n SINGLES] [-L LIST_DOMAINS] [-S SINGLE_DOMAINS] [-p PORT] [-s SESSIONS] [-t TIMEOUT] [-o|--only both|postfix|sluice] [-k]"
}

check_tools() {
	need_root "smtp-sink and a Postfix instance need it"
	set -- smtp-sink smtp-source python3 ss awk grep sort date mkfifo tail
	[ "$ONLY" = sluice ] || set -- "$@" postfix postmap ps
	need_tools "$@"
	[ "$ONLY" = postfix ] || need_sluice "$BUILD" "set BENCH_BUILD"
}

# sink_addr KIND I: the address of list sink I (KIND l) or single
# sink I (KIND s).
sink_addr() {
	if [ "$1" = l ]; then echo "$NET.$2"; else echo "$NET.$((100 + $2))"; fi
}

# each_domain: "KIND I ADDR" for every sink, list domains first.
each_domain() {
	i=1
	while [ "$i" -le "$LDOMAINS" ]; do
		echo "l $i $(sink_addr l "$i")"
		i=$((i + 1))
	done
	i=1
	while [ "$i" -le "$SDOMAINS" ]; do
		echo "s $i $(sink_addr s "$i")"
		i=$((i + 1))
	done
}

check_free() {
	set --
	for a in $(each_domain | awk -v p="$PORT" '{ print $3 ":" p }'); do
		set -- "$@" "$a"
	done
	[ "$ONLY" = sluice ] || set -- "$@" "$POSTFIX_SMTPD:$PORT"
	[ "$ONLY" = postfix ] || set -- "$@" "$SLUICE_SMTPD:$PORT"
	need_free "$@"
}

# start_sinks: one smtp-sink per domain, counting messages into
# sinks/KIND I.count and dumping every transaction (envelope and
# content) into sinks/KIND I.dump, for the exactly-once check.
start_sinks() {
	mkdir "$DIR/sinks"
	chown postfix "$DIR/sinks"
	each_domain >"$DIR/domains"
	while read -r kind i addr; do
		smtp-sink -u postfix -D "$DIR/sinks/$kind$i.dump" -c "$addr:$PORT" 256 \
			>"$DIR/sinks/$kind$i.count" 2>"$DIR/sinks/$kind$i.err" &
		SINK_PIDS="$SINK_PIDS $!"
	done <"$DIR/domains"
	sleep 1
	for pid in $SINK_PIDS; do
		kill -0 "$pid" 2>/dev/null || die "a smtp-sink exited: $(cat "$DIR"/sinks/*.err)"
	done
	while read -r _ _ addr; do
		listens "$addr:$PORT" || die "no smtp-sink listens on $addr:$PORT"
	done <"$DIR/domains"
}

# sink_sizes: "FILE BYTES" for every dump, where a side's run starts.
sink_sizes() {
	while read -r kind i _; do
		f=$DIR/sinks/$kind$i.dump
		n=0
		[ -f "$f" ] && n=$(wc -c <"$f")
		echo "$f $n"
	done <"$DIR/domains"
}

# check_sinks SIZES: what the sinks received since SIZES (sink_sizes at
# the start of the side's run): every list address r<k>@l<d>.bench
# (k = 1 ... LIST, d = (k - 1) mod L + 1) exactly once, at sink l<d>;
# every single address <k>u@s<i>.bench (k = 1 ... the count of domain
# i, from smtp-source -N) exactly once, at sink s<i>, one recipient per
# message. Prints "ok" or what is wrong.
check_sinks() {
	while read -r f n; do
		k=${f##*/}
		echo "#sink ${k%.dump}"
		[ -f "$f" ] || continue
		tail -c +$((n + 1)) "$f" | grep -e '^X-Rcpt-Args: ' -e '^X-Client-Addr: ' || true
	done <"$1" | awk -v list="$LIST" -v ld="$LDOMAINS" -v singles="$SINGLES" -v sd="$SDOMAINS" '
		function bad(what) { if (nbad++ < 5) print what }
		/^#sink / { sink = $2; next }
		/^X-Client-Addr: / { if (sink ~ /^s/) smsg++; next }
		{
			a = $2
			if (!match(a, /^<[^@]+@[a-z]+[0-9]+\.bench>$/)) { bad("bad address " a " at " sink); next }
			a = substr(a, 2, length(a) - 2)
			split(a, p, "@")
			dom = p[2]; sub(/\.bench$/, "", dom)
			if (dom != sink) bad(a " at sink " sink)
			if (seen[a]++) { dup++; bad(a " twice") ; next }
			if (dom ~ /^l/) {
				k = substr(p[1], 2) + 0
				if (p[1] != "r" k || k < 1 || k > list || dom != "l" ((k - 1) % ld + 1))
					bad("unexpected list address " a)
				else nl++
			} else {
				k = p[1]; sub(/u$/, "", k); k += 0
				i = substr(dom, 2) + 0
				m = int(singles / sd) + (i <= singles % sd)
				if (p[1] != k "u" || k < 1 || k > m) bad("unexpected single address " a)
				else ns++
			}
		}
		END {
			if (nl != list) bad("list: " nl + 0 " of " list " addresses received")
			if (ns != singles) bad("singles: " ns + 0 " of " singles " addresses received")
			if (smsg != singles) bad("singles: " smsg + 0 " messages for " singles)
			if (dup) bad(dup " duplicates")
			if (!nbad) print "ok"
		}'
}

# write_list_client: the list's SMTP client, in python3 (smtp-source
# spreads a transaction's recipients over one domain only). Arguments:
# HOST PORT RCPTS DOMAINS BYTES. Pipelines the RCPT TOs 1000 at a time
# and requires 250 for each; prints the final answer.
write_list_client() {
	cat >"$DIR/list_client.py" <<'EOF'
import socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
rcpts, domains, size = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t0 = time.time()
s = socket.create_connection((host, port), timeout=120)
f = s.makefile("rb")

def reply():
    lines = []
    while True:
        line = f.readline()
        if not line:
            sys.exit("list: connection closed by %s:%d" % (host, port))
        lines.append(line.decode("ascii", "replace").rstrip("\r\n"))
        if line[3:4] != b"-":
            return int(lines[-1][:3]), lines

def expect(code, what):
    c, lines = reply()
    if c != code:
        sys.exit("list: %s: %s" % (what, " / ".join(lines)))
    return lines

expect(220, "greeting")
s.sendall(b"EHLO list.sluice-bench.test\r\n")
if not any(l[4:].upper().startswith("PIPELINING") for l in expect(250, "EHLO")):
    sys.exit("list: no PIPELINING")
s.sendall(b"MAIL FROM:<list@sluice-bench.test>\r\n")
expect(250, "MAIL")
for first in range(1, rcpts + 1, 1000):
    last = min(rcpts, first + 999)
    s.sendall(b"".join(b"RCPT TO:<r%d@l%d.bench>\r\n" % (k, (k - 1) % domains + 1)
                       for k in range(first, last + 1)))
    for k in range(first, last + 1):
        expect(250, "RCPT r%d" % k)
s.sendall(b"DATA\r\n")
expect(354, "DATA")
head = ("From: <list@sluice-bench.test>\r\nTo: <list@sluice-bench.test>\r\n"
        "Subject: the list\r\nDate: %s\r\nMessage-Id: <list.%d@sluice-bench.test>\r\n\r\n"
        % (time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()), int(t0)))
body = head.encode()
n = 1
while len(body) < size:
    body += (b"%d" % n + b"X" * 77)[:78] + b"\r\n"
    n += 1
s.sendall(body + b".\r\n")
done = expect(250, "end of DATA")
s.sendall(b"QUIT\r\n")
reply()
print("list: %d recipients in %.3f s: %s" % (rcpts, time.time() - t0, done[-1]))
EOF
}

# inject_list HOST: the list into the smtpd at HOST:PORT.
inject_list() {
	python3 "$DIR/list_client.py" "$1" "$PORT" "$LIST" "$LDOMAINS" 2048 \
		>>"$DIR/$SIDE.inject" 2>&1 || die "$SIDE: the list's injection failed: $(tail -n 3 "$DIR/$SIDE.inject")"
}

# start_singles HOST: one smtp-source per single domain, all at once in
# the background (SRC_PIDS), SINGLES/S messages each (the first SINGLES
# mod S domains one more), with -N so that recipients are 1u@sI.bench,
# 2u@sI.bench, ...
start_singles() {
	per=$((SINGLES / SDOMAINS))
	extra=$((SINGLES % SDOMAINS))
	sess=$((SESSIONS / SDOMAINS))
	[ "$sess" -ge 1 ] || sess=1
	SRC_PIDS=
	i=1
	while [ "$i" -le "$SDOMAINS" ]; do
		m=$per
		[ "$i" -le "$extra" ] && m=$((m + 1))
		if [ "$m" -gt 0 ]; then
			s=$sess
			[ "$s" -gt "$m" ] && s=$m
			smtp-source -s "$s" -m "$m" -l 2048 -N -f bench@sluice-bench.test \
				-t "u@s$i.bench" "$1:$PORT" >"$DIR/$SIDE.source$i" 2>&1 &
			SRC_PIDS="$SRC_PIDS $!"
		fi
		i=$((i + 1))
	done
}

# watch_log LOG: follow LOG and keep in $DIR/$SIDE.progress the line
# "LISTSENT SINGLESENT LISTDONE SINGLESDONE": the status=sent lines so
# far for list and single recipients, and the wall-clock times at
# which each reached its total (0 until then); rewritten every 500
# lines and at those two moments. One reader per side, joined to tail
# by a fifo so that both pids are known.
watch_log() {
	rm -f "$DIR/log.fifo"
	mkfifo "$DIR/log.fifo"
	tail -n +1 -F "$1" >"$DIR/log.fifo" 2>/dev/null &
	TAIL_PID=$!
	echo "0 0 0 0" >"$DIR/$SIDE.progress"
	# mawk reads a pipe in blocks unless interactive.
	interactive=
	awk -W version 2>/dev/null | grep -q mawk && interactive="-W interactive"
	# shellcheck disable=SC2086 # $interactive is two words or none
	awk $interactive -v list="$LIST" -v singles="$SINGLES" -v out="$DIR/$SIDE.progress" '
		function now(  t) { "date +%s.%N" | getline t; close("date +%s.%N"); return t }
		function put() {
			printf "%d %d %s %s\n", nl, ns, (tl == "" ? 0 : tl), (ts == "" ? 0 : ts) > (out ".new")
			close(out ".new")
			system("mv -f " out ".new " out)
		}
		/ status=sent / {
			if (!match($0, /to=<[^>]*@[ls][0-9]+\.bench>/)) next
			d = substr($0, RSTART, RLENGTH)
			sub(/.*@/, "", d)
			if (d ~ /^l/) { if (++nl == list) { tl = now(); put() } }
			else if (++ns == singles) { ts = now(); put() }
			if ((nl + ns) % 500 == 0) put()
			if (tl && ts) exit
		}' <"$DIR/log.fifo" &
	AWK_PID=$!
}

stop_watch() {
	kill "$AWK_PID" "$TAIL_PID" 2>/dev/null || true
	wait "$AWK_PID" 2>/dev/null || true
	wait "$TAIL_PID" 2>/dev/null || true
	AWK_PID=
	TAIL_PID=
}

# sample_postfix: "PROCS RSS PSS" (kB) of master and its children now;
# the largest seen of each kept in $DIR/postfix.mem, with the count of
# processes at the largest RSS.
sample_postfix() {
	[ -s "$DIR/queue/pid/master.pid" ] || return 0
	master=$(tr -d ' ' <"$DIR/queue/pid/master.pid")
	# shellcheck disable=SC2046 # the pids, one word each
	awk -v mem="$DIR/postfix.mem" '
		BEGIN {
			if ((getline line < mem) > 0) split(line, best, " ")
			close(mem)
			for (i = 1; i < ARGC; i++) {
				p = ARGV[i]; r = 0; s = 0
				f = "/proc/" p "/status"
				while ((getline l < f) > 0) if (l ~ /^VmRSS:/) { split(l, x, " "); r = x[2] }
				close(f)
				f = "/proc/" p "/smaps_rollup"
				while ((getline l < f) > 0) if (l ~ /^Pss:/) { split(l, x, " "); s = x[2] }
				close(f)
				if (r > 0) { n++; rss += r; pss += s }
			}
			if (rss > best[2]) { best[1] = n; best[2] = rss }
			if (pss > best[3]) best[3] = pss
			print best[1] + 0, best[2] + 0, best[3] + 0 > mem
			exit
		}' "$master" $(ps -o pid= --ppid "$master")
}

# postfix_peaks: "qmgr VmHWM" and the largest VmHWM of each other kind
# of process (by /proc/PID/comm) alive now, in MB.
postfix_peaks() {
	master=$(tr -d ' ' <"$DIR/queue/pid/master.pid")
	# shellcheck disable=SC2046
	for p in "$master" $(ps -o pid= --ppid "$master"); do
		c=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		h=$(awk '/^VmHWM/ { print $2 }' "/proc/$p/status" 2>/dev/null) || continue
		echo "$c ${h:-0}"
	done | awk '
		{ if ($2 > m[$1]) m[$1] = $2; n[$1]++ }
		END {
			printf "qmgr VmHWM %.1f MB; others (largest VmHWM of those alive at the end):", m["qmgr"] / 1024
			for (c in m) if (c != "qmgr") printf " %s %.1f (%d)", c, m[c] / 1024, n[c]
			printf "\n"
		}'
}

# sample_sluiced: the largest RssAnon and RssFile so far into
# $DIR/sluice.mem.
sample_sluiced() {
	awk -v mem="$DIR/sluice.mem" '
		BEGIN { if ((getline line < mem) > 0) split(line, best, " "); close(mem) }
		/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
		END {
			if (a > best[1]) best[1] = a
			if (f > best[2]) best[2] = f
			print best[1] + 0, best[2] + 0 > mem
		}' "/proc/$SLUICED_PID/status" 2>/dev/null || true
}

# run_side INJECT_ADDR SAMPLER LOG: the list, then the singles, into the
# smtpd at INJECT_ADDR; sample memory with SAMPLER every 0.2 s until the
# log says everything was sent; check the sinks. Sets T0, LIST_IN,
# SINGLES_IN (injection times), LIST_DONE, SINGLES_DONE, DRAIN (seconds
# from T0).
run_side() {
	sink_sizes >"$DIR/$SIDE.sizes"
	watch_log "$3"
	T0=$(now)
	inject_list "$1"
	t_list=$(now)
	LIST_IN=$(span "$T0" "$t_list")
	start_singles "$1"

	deadline=$(($(date +%s) + TIMEOUT))
	last_n=-1
	last_change=$(date +%s)
	singles_end=
	while :; do
		$2
		read -r nl ns tl ts <"$DIR/$SIDE.progress"
		if [ -z "$singles_end" ]; then
			alive=0
			for pid in $SRC_PIDS; do
				kill -0 "$pid" 2>/dev/null && alive=1
			done
			if [ "$alive" -eq 0 ]; then
				singles_end=$(now)
				for pid in $SRC_PIDS; do
					wait "$pid" || die "$SIDE: an smtp-source failed: $(cat "$DIR/$SIDE".source*)"
				done
				SRC_PIDS=
			fi
		fi
		[ "$tl" != 0 ] && [ "$ts" != 0 ] && break
		t=$(date +%s)
		n=$((nl + ns))
		if [ "$n" -ne "$last_n" ]; then
			last_n=$n
			last_change=$t
		fi
		[ "$t" -lt "$deadline" ] ||
			die "$SIDE: $nl of $LIST list recipients and $ns of $SINGLES singles delivered after $TIMEOUT s (see $3)"
		[ $((t - last_change)) -lt "$STALL" ] ||
			die "$SIDE: nothing delivered for $STALL s; $nl of $LIST list recipients and $ns of $SINGLES singles (see $3)"
		sleep 0.2
	done
	$2
	[ -n "$singles_end" ] || die "$SIDE: everything delivered but an smtp-source still runs"
	stop_watch
	SINGLES_IN=$(span "$t_list" "$singles_end")
	LIST_DONE=$(span "$T0" "$tl")
	SINGLES_DONE=$(span "$T0" "$ts")
	last=$tl
	awk -v a="$tl" -v b="$ts" 'BEGIN { exit !(b > a) }' && last=$ts
	DRAIN=$(span "$T0" "$last")

	# The sinks count and dump before they answer, the log line comes
	# after: they have it all by now, but allow them a moment.
	t=0
	while :; do
		result=$(check_sinks "$DIR/$SIDE.sizes")
		[ "$result" = ok ] && break
		t=$((t + 1))
		[ "$t" -lt 10 ] || die "$SIDE: the sinks disagree: $result"
		sleep 1
	done
}

# latency LOG [DURING]: "median P90 P99 max COUNT" of the singles'
# delay= in LOG; with DURING, of those logged before the list's last
# recipient (while the list was being delivered).
latency() {
	upto=0
	if [ -n "${2:-}" ]; then
		upto=$(grep -n ' status=sent ' "$1" | grep '@l[0-9]*\.bench>' |
			tail -n 1 | cut -d: -f1)
	fi
	awk -v upto="${upto:-0}" '
		upto > 0 && NR >= upto { exit }
		/ status=sent / && /@s[0-9]+\.bench>/ {
			if (match($0, /, delay=[0-9.]+,/)) print substr($0, RSTART + 8, RLENGTH - 9)
		}' "$1" | sort -n |
		awk '
			{ v[++n] = $1 }
			function at(p,  i) { i = int(p * n); if (i < p * n) i++; if (i < 1) i = 1; return v[i] }
			END { if (n) printf "%s %s %s %s %d\n", at(0.5), at(0.9), at(0.99), v[n], n; else print "- - - - 0" }'
}

# counts LOG: "SENT DEFERRED BOUNCED" recipient lines in LOG.
counts() {
	echo "$(status_count sent "$1") $(status_count deferred "$1") $(status_count bounced "$1")"
}

write_postfix_config() {
	# About 50 bytes of queue file per recipient; 100 to spare.
	size=$((LIST * 100))
	[ "$size" -ge 51200000 ] || size=51200000
	postfix_config "$DIR" "$POSTFIX_SMTPD:$PORT inet n - n - - smtpd" <<EOF
mynetworks = 127.0.0.0/8
transport_maps = hash:$DIR/etc/transport
smtp_dns_support_level = disabled
# The list in one transaction; every other limit at its default.
smtpd_recipient_limit = $LIST
# Postfix counts the queue file, envelope included, against this limit:
# a 200,000-recipient list is "552 5.3.4 Error: message file too big"
# at the default (10240000), a 2 KB body or not.
message_size_limit = $size
mailbox_size_limit = $size
EOF
	while read -r kind i addr; do
		printf '%s%s.bench\tsmtp:[%s]:%s\n' "$kind" "$i" "$addr" "$PORT"
	done <"$DIR/domains" | postfix_map transport
}

run_postfix() {
	SIDE=postfix
	write_postfix_config
	postfix_start
	: >"$DIR/postfix.mem"
	run_side "$POSTFIX_SMTPD" sample_postfix "$DIR/maillog"
	peaks=$(postfix_peaks)
	postfix_stop
	in_use "$DIR/queue" && die "Postfix processes still in $DIR after the stop"

	read -r sent deferred bounced <<EOF
$(counts "$DIR/maillog")
EOF
	[ "$sent" -eq $((LIST + SINGLES)) ] ||
		die "postfix: the maillog says $sent sent, for $((LIST + SINGLES)) recipients"
	read -r med p90 p99 max n <<EOF
$(latency "$DIR/maillog")
EOF
	read -r dmed dp90 _ dmax dn <<EOF
$(latency "$DIR/maillog" during)
EOF
	read -r procs rss pss <"$DIR/postfix.mem"
	POSTFIX_DRAIN=$DRAIN
	POSTFIX_MEDIAN=$med
	echo "postfix: injection: list $LIST_IN s, singles $SINGLES_IN s after it;" \
		"delivered: list at $LIST_DONE s, singles at $SINGLES_DONE s; $sent sent," \
		"$deferred deferred, $bounced bounced; the sinks agree"
	echo "postfix: $peaks"
	echo "postfix: drain $DRAIN s; single latency median $med s, p90 $p90 s," \
		"p99 $p99 s, max $max s ($n); memory: qmgr VmHWM" \
		"$(echo "$peaks" | awk '{ print $3 }') MB, all processes sampled: RSS" \
		"$((rss / 1024)) MB ($procs processes), PSS $((pss / 1024)) MB"
	echo "postfix: while the list was delivered, $dn singles delivered:" \
		"latency median $dmed s, p90 $dp90 s, max $dmax s"
}

write_sluice_config() {
	copy_sluice "$BUILD" "$DIR/sluice"
	while read -r kind i addr; do
		printf '%s%s.bench relay:[%s]:%s\n' "$kind" "$i" "$addr" "$PORT"
	done <"$DIR/domains" >"$DIR/sluice/transport"
	cat >"$DIR/sluice/sluice.conf" <<EOF
queue_directory = $DIR/sluice/queue
myhostname = sluice.sluice-bench.test
transport_maps = $DIR/sluice/transport
smtpd_listen = $SLUICE_SMTPD:$PORT
smtpd_recipient_limit = $LIST
EOF
}

run_sluice() {
	SIDE=sluice
	write_sluice_config
	log=$DIR/sluice/sluiced.log
	start_sluiced "$DIR/sluice" "$DIR/sluice/sluice.conf"
	t=0
	until listens "$SLUICE_SMTPD:$PORT"; do
		kill -0 "$SLUICED_PID" 2>/dev/null || die "sluiced exited: $(tail -n 3 "$log")"
		t=$((t + 1))
		[ "$t" -lt 50 ] || die "sluiced does not listen on $SLUICE_SMTPD:$PORT"
		sleep 0.1
	done
	echo "0 0" >"$DIR/sluice.mem"
	run_side "$SLUICE_SMTPD" sample_sluiced "$log"
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$SLUICED_PID/status")
	stop_sluiced "$DIR/sluice"

	read -r sent deferred bounced <<EOF
$(counts "$log")
EOF
	[ "$sent" -eq $((LIST + SINGLES)) ] ||
		die "sluice: the log says $sent sent, for $((LIST + SINGLES)) recipients"
	others=$(grep -c -v -e ' status=sent ' -e ': removed$' -e ': started: ' \
		-e ': stopping on signal 15: ' -e ': stopped: ' -e ': client=' \
		-e ': connect from ' -e ': disconnect from ' "$log" || true)
	read -r med p90 p99 max n <<EOF
$(latency "$log")
EOF
	read -r dmed dp90 _ dmax dn <<EOF
$(latency "$log" during)
EOF
	read -r anon file <"$DIR/sluice.mem"
	SLUICE_DRAIN=$DRAIN
	SLUICE_MEDIAN=$med
	echo "sluice: injection: list $LIST_IN s, singles $SINGLES_IN s after it;" \
		"delivered: list at $LIST_DONE s, singles at $SINGLES_DONE s; $sent sent," \
		"$deferred deferred, $bounced bounced; the sinks agree; $others other log lines"
	if [ "$others" -ne 0 ]; then
		grep -v -e ' status=sent ' -e ': removed$' -e ': started: ' \
			-e ': stopping on signal 15: ' -e ': stopped: ' -e ': client=' \
			-e ': connect from ' -e ': disconnect from ' "$log" |
			head -n 5 | sed 's/^/sluice:   /'
	fi
	echo "sluice: drain $DRAIN s; single latency median $med s, p90 $p90 s," \
		"p99 $p99 s, max $max s ($n); memory: VmHWM $((hwm / 1024)) MB," \
		"sampled RssAnon $((anon / 1024)) MB, RssFile $((file / 1024)) MB"
	echo "sluice: while the list was delivered, $dn singles delivered:" \
		"latency median $dmed s, p90 $dp90 s, max $dmax s"
}

for arg; do
	shift
	case $arg in
	--only) set -- "$@" -o ;;
	--only=*) set -- "$@" -o "${arg#--only=}" ;;
	*) set -- "$@" "$arg" ;;
	esac
done
while getopts l:n:L:S:p:s:t:o:k opt; do
	case $opt in
	l) LIST=$OPTARG ;;
	n) SINGLES=$OPTARG ;;
	L) LDOMAINS=$OPTARG ;;
	S) SDOMAINS=$OPTARG ;;
	p) PORT=$OPTARG ;;
	s) SESSIONS=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	o) ONLY=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for v in "$LIST" "$SINGLES" "$LDOMAINS" "$SDOMAINS" "$PORT" "$SESSIONS"; do
	is_count "$v" || usage
done
case $ONLY in both | postfix | sluice) ;; *) usage ;; esac
if [ "$LDOMAINS" -gt 100 ] || [ "$SDOMAINS" -gt 100 ]; then
	die "at most 100 list and 100 single domains"
fi
[ -n "$TIMEOUT" ] || TIMEOUT=$((600 + (LIST + SINGLES) / 100))
is_count "$TIMEOUT" || usage

check_tools
check_free
trap 'stop_all "$SLUICED_PID $SRC_PIDS" "$SINK_PIDS $TAIL_PID $AWK_PID"' EXIT
trap 'die interrupted' INT TERM HUP
make_dir
echo "list: a list of $LIST recipients over $LDOMAINS domains, then $SINGLES single" \
	"messages over $SDOMAINS domains ($SESSIONS sessions), in $DIR; $(loadavg)"
start_sinks
write_list_client
[ "$ONLY" = sluice ] || run_postfix
[ "$ONLY" = postfix ] || run_sluice
if [ "$ONLY" = both ]; then
	echo "ratio: sluice/postfix = $(ratio "$SLUICE_DRAIN" "$POSTFIX_DRAIN") (drain time)," \
		"$(ratio "$SLUICE_MEDIAN" "$POSTFIX_MEDIAN") (median single latency)"
fi
