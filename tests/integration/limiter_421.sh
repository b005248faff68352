#!/bin/sh
# limiter_421.sh BUILD - the seed's 421 experiment for real
# (../shared/seeds/postfix-scheduler-readme.txt, "Impact of active server
# concurrency limiter"): a private Postfix smtpd on loopback answers 421
# and hangs up above 5 connections from one client
# (smtpd_client_connection_count_limit = 5, process limit 10), sleeps 1 s
# per recipient and discards the mail. sluiced delivers N single-recipient
# messages to it twice, each time from a fresh queue filled while sluiced
# is stopped: once with concurrency feedback 1/concurrency both ways, once
# with feedback 1 both ways (the seed's rows; client limit 20, initial
# concurrency 5). Every message must reach the receiver, and the share of
# first delivery attempts deferred must be clearly lower with
# 1/concurrency than with 1 (the seed: 16.5 % against 49.7 %).
#
# Needs root and Postfix (skips otherwise). Bounded in time (about 40 s
# for N = 80), stops only what it started: sluiced by its pid, the Postfix
# instance with "postfix -c DIR stop". Output is TAP; the measured
# figures are "# " comment lines. doc/concurrency.md has the results.
#
# Environment, for measuring by hand (the defaults are what CI runs):
#   LIMITER_421_N         messages per run (default 80)
#   LIMITER_421_ROUNDING  concurrency_feedback_rounding (default: sluice's)
#   LIMITER_421_CACHE     smtp_connection_cache_on_demand (default no, as
#                         the seed's "connection caching: no" rows)
#   LIMITER_421_KEEP      a directory to copy the logs to
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

N=${LIMITER_421_N:-80}
ROUNDING=${LIMITER_421_ROUNDING:-}
CACHE=${LIMITER_421_CACHE:-no}
KEEP=${LIMITER_421_KEEP:-}
# Seconds to wait for one run's N messages (about 5 deliveries a second
# get through the limiter).
RUN_TIMEOUT=$((15 + N / 3))
# The assertion: deferred % of first attempts with feedback 1 minus that
# with 1/concurrency, in percentage points, at least this much. The seed's
# theory says 50 - 16.7 = 33; see doc/concurrency.md for the spread.
MARGIN=15

skip() {
    echo "# SKIP limiter_421.sh: $1"
    ok "limiter_421.sh # SKIP $1"
    tap_done
}

PATH=$PATH:/usr/sbin:/sbin
[ "$(id -u)" = 0 ] || skip "not root (a Postfix instance needs it)"
need postfix command -v postfix
need postfix command -v postconf
daemon_dir=$(postconf -dh daemon_directory 2>/dev/null)
need postfix test -x "$daemon_dir/smtpd"
need postfix id postfix
need python3 command -v python3

# free_port, wait_for, listening, $pids and an exit trap that stops them
# and removes $tmp; ours below stops the Postfix instance first.
. tests/integration/lib/daemon_lib.sh

. tests/integration/lib/postfix_lib.sh

pf=$tmp/postfix
cleanup() {
    if [ -n "$KEEP" ]; then
        mkdir -p "$KEEP" && cp "$pf/maillog" "$tmp"/*.log "$KEEP/" 2>/dev/null
    fi
    _pl_cleanup
}
trap cleanup EXIT

# exited PID: our child PID has exited (gone, or a zombie not yet waited
# for, which kill -0 would still find).
exited() {
    [ ! -e "/proc/$1/stat" ] ||
        [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)" = Z ]
}

# The receiver: a private Postfix instance in $tmp/postfix (configuration
# in etc/, queue in queue/, data in data/, its log in maillog), every
# service unchrooted, smtpd on 127.0.0.1:PORT only (Postfix accepts
# addresses of an interface only, and lo has just 127.0.0.1). The limiter
# as in the seed; smtpd_client_event_limit_exceptions empty, because its
# default ($mynetworks) would exempt loopback clients from the limit.
# smtpd_client_restrictions = sleep 1 is evaluated at each RCPT
# (smtpd_delay_reject = yes): 1 s per recipient, whole seconds only.
# Mail for any domain is accepted from loopback and discarded.
start_postfix() {
    postfix_start "$pf" "127.0.0.1:$port inet n - n - 10 smtpd" <<EOF || return 1
myhostname = limiter.sluice-test.test
mynetworks = 127.0.0.0/8
smtpd_client_connection_count_limit = 5
smtpd_client_event_limit_exceptions =
smtpd_client_restrictions = sleep 1
default_transport = discard
local_transport = discard
EOF
    wait_for 10 listening "$port"
}

# Postfix's daemons, running as postfix, reach their files under $tmp.
chmod 711 "$tmp"
port=$(free_port)
if start_postfix; then
    ok "a private Postfix smtpd listens on 127.0.0.1:$port as a 421 limiter"
else
    not_ok "a private Postfix smtpd listens on 127.0.0.1:$port as a 421 limiter"
    sed 's/^/#   /' "$pf/start.out" "$pf/maillog" | tail -20
    tap_done
fi

# stats LOG TAG: one line of figures from a sluiced log about the
# recipients TAG<i>@limit.test and their destination, as name=value pairs:
#   first       recipients with a delivery result (first attempts)
#   first_def   of those, deferred at the first attempt
#   suspended   of those, deferred without a connection (dead destination)
#   attempts    results of all attempts; sent, deferred: of all attempts
#   refused421  attempts deferred by the limiter's 421
#   dead        times the destination was declared dead
#   win_avg, win_sd
#               the window in effect as each delivery ended, before its
#               own feedback (followed through the feedback debug lines
#               "window A -> B:"; it starts at initial concurrency 5)
stats() {
    awk -v rcpt_re=": to=<$2[0-9]+@limit[.]test>" \
        -v window_re="relay:[[]127[.]0[.]0[.]1[]]:$port: window -?[0-9]+ -> -?[0-9]+:" '
    / status=(sent|deferred|bounced) / && match($0, rcpt_re) {
        rcpt = substr($0, RSTART + 6, RLENGTH - 7)
        def = / status=deferred /
        attempts++
        if (/ status=sent /) sent++
        if (def) deferred++
        if (def && / 421 /) refused++
        if (!(rcpt in seen)) {
            seen[rcpt] = 1
            first++
            if (def) first_def++
            if (def && /delivery temporarily suspended/) suspended++
        }
        if (w > 0) { ws += w; wss += w * w; wn++ }
        next
    }
    match($0, window_re) {
        split(substr($0, RSTART, RLENGTH), a, " ")
        w = a[5] + 0
        next
    }
    /destination dead after/ { dead++ }
    BEGIN { w = 5 }
    END {
        avg = wn ? ws / wn : 0
        var = wn ? wss / wn - avg * avg : 0
        printf "first=%d first_def=%d suspended=%d attempts=%d sent=%d", \
            first, first_def, suspended, attempts, sent
        printf " deferred=%d refused421=%d dead=%d", deferred, refused, dead
        printf " win_avg=%.2f win_sd=%.2f\n", avg, (var > 0 ? sqrt(var) : 0)
    }' "$1"
}

# field NAME LINE: the value of NAME=... in a stats line.
field() {
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# percent PART WHOLE: PART/WHOLE in percent, one decimal.
percent() {
    awk -v p="$1" -v w="$2" 'BEGIN { printf "%.1f", (w > 0 ? 100 * p / w : 0) }'
}

# received TAG: distinct recipients TAG<i>@limit.test that the receiver
# discarded (accepted, queued and "delivered").
received() {
    grep "postfix/discard\[[0-9]*\]: [0-9A-Za-z]*: to=<$1[0-9]*@limit.test>, .* status=sent " \
        "$pf/maillog" | sed 's/.*: to=<\([^>]*\)>.*/\1/' | sort -u | wc -l
}

all_received() { [ "$(received "$1")" -ge "$N" ]; }

# run TAG FEEDBACK: N messages to TAG1@limit.test ... TAGN@limit.test,
# stored with sluiced stopped, then delivered by a fresh sluiced with
# FEEDBACK as both positive and negative feedback. Sets $pct (deferred
# % of first attempts) and $line (the stats).
run() {
    tag=$1
    fb=$2
    d=$tmp/$tag
    mkdir "$d"
    conf=$d/sluice.conf
    log=$tmp/$tag.log
    echo "limit.test relay:[127.0.0.1]:$port" >"$d/transport"
    cat >"$conf" <<EOF
queue_directory = $d/q
smtpd_listen =
myhostname = client.sluice-test.test
transport_maps = $d/transport
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
default_destination_concurrency_limit = 20
initial_destination_concurrency = 5
default_destination_concurrency_positive_feedback = $fb
default_destination_concurrency_negative_feedback = $fb
smtp_connection_cache_on_demand = $CACHE
destination_concurrency_feedback_debug = yes
EOF
    [ -n "$ROUNDING" ] &&
        echo "concurrency_feedback_rounding = $ROUNDING" >>"$conf"
    "$build/sluice" -c "$conf" import >/dev/null # the spool, for sendmail
    i=1
    while [ $i -le "$N" ]; do
        printf 'Subject: %s %d\n\nbody\n' "$tag" $i |
            "$build/sluice" -c "$conf" sendmail -f sender@client.sluice-test.test \
                "$tag$i@limit.test" || break
        i=$((i + 1))
    done
    expect "$tag: $N messages stored with sluiced stopped" \
        "-- $N Requests." \
        "$("$build/sluice" -c "$conf" queue | tail -1 | sed 's/.* in /-- /')"

    t0=$(date +%s)
    : >"$log"
    "$build/sluiced" -f -c "$conf" 2>>"$log" &
    daemon=$!
    pids="$pids $daemon"
    done_all() {
        [ "$(grep -c ': removed$' "$log")" -ge "$N" ] &&
            "$build/sluice" -c "$conf" queue | grep -q "Mail queue is empty"
    }
    if wait_for "$RUN_TIMEOUT" done_all; then
        ok "$tag: sluiced (feedback $fb) delivers all $N and the queue empties"
    else
        not_ok "$tag: sluiced (feedback $fb) delivers all $N and the queue empties"
        echo "#   after $RUN_TIMEOUT s: $(grep -c ': removed$' "$log") removed"
        grep -v -e 'status=' -e ': window ' -e ': removed$' "$log" | tail -5 |
            sed 's/^/#   /'
        tail -5 "$log" | sed 's/^/#   /'
    fi
    t1=$(date +%s)
    kill -TERM "$daemon" 2>/dev/null
    # A sluiced that does not stop must not hang the suite.
    wait_for 15 exited "$daemon" || kill -KILL "$daemon" 2>/dev/null
    wait "$daemon"
    expect "$tag: sluiced stops on SIGTERM, exit status 0" 0 $?
    pids=

    line=$(stats "$log" "$tag")
    expect "$tag: $N recipients logged status=sent, no bounce" \
        "$N $N 0" \
        "$(field first "$line") $(field sent "$line") $(grep -c ' status=bounced ' "$log")"
    wait_for 10 all_received "$tag"
    expect "$tag: the receiver discarded each of the $N recipients" \
        "$N" "$(received "$tag")"
    refused=$(field refused421 "$line")
    if [ "$refused" -gt 0 ]; then
        ok "$tag: the limiter answered 421"
    else
        not_ok "$tag: the limiter answered 421"
    fi
    first=$(field first "$line")
    first_def=$(field first_def "$line")
    pct=$(percent "$first_def" "$first")
    echo "# $tag: feedback $fb, rounding ${ROUNDING:-default}, caching $CACHE:" \
        "first attempts $first, deferred $first_def = $pct %" \
        "($(field suspended "$line") suspended)"
    echo "# $tag: all attempts $(field attempts "$line"):" \
        "$(field sent "$line") sent, $(field deferred "$line") deferred" \
        "($refused by 421) = $(percent "$(field deferred "$line")" \
            "$(field attempts "$line")") %; destination dead" \
        "$(field dead "$line") times"
    echo "# $tag: window as deliveries end: average $(field win_avg "$line")," \
        "stddev $(field win_sd "$line"); $((t1 - t0)) s"
}

start=$(date +%s)
run invn 1/concurrency
pct_invn=$pct
run one 1
pct_one=$pct

echo "# deferred % of first attempts: 1/concurrency $pct_invn, 1 $pct_one" \
    "(the seed: 16.5 and 49.7; theory 1/6 and 1/2)"
what="deferred % of first attempts: 1/concurrency ($pct_invn) at least $MARGIN points below 1 ($pct_one)"
if awk -v a="$pct_invn" -v b="$pct_one" -v m="$MARGIN" 'BEGIN { exit !(a + m <= b) }'; then
    ok "$what"
else
    not_ok "$what"
fi
limited=$(grep -c 'too many connections\|Connection concurrency limit exceeded' "$pf/maillog")
echo "# the receiver logged $limited connection limit events; runs took $(($(date +%s) - start)) s"
tap_done
