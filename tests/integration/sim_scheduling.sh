#!/bin/sh
# sim_scheduling.sh BUILD - message workloads in the simulator: the seed's
# golden sequences, the headline result (small mail past bulk mail),
# per-domain server overrides, --sequence and --latency output, workload
# errors. Output is TAP.
build=${1:-build}
sim=$build/sluice-sim
. tests/integration/lib/tap.sh

# "the delivery sequence becomes 11112211113311" / "11221111331111".
expect "golden sequence, slot cost 2, no loan" "11112211113311" \
    "$("$sim" --sequence sim/scenarios/golden/1-no-loan.conf)"
expect "golden sequence, slot cost 2, discount 50" "11221111331111" \
    "$("$sim" --sequence sim/scenarios/golden/2-discount.conf)"

# Round-robin (oqmgr) never preempts: the same workload goes FIFO.
{
    cat sim/scenarios/golden/1-no-loan.conf
    echo "smtp_scheduler = round_robin"
    echo "sim_workload = $PWD/sim/scenarios/golden/seed.workload"
} >"$tmp/rr-golden.conf"
expect "round_robin: no preemption, FIFO" "11111111112233" \
    "$("$sim" --sequence "$tmp/rr-golden.conf")"

# Several destinations: one line each, prefixed with the domain.
cat >"$tmp/two.workload" <<EOF
0 a.test:3
0 b.test:2 a.test:1
EOF
cat >"$tmp/two.conf" <<EOF
sim_workload = two.workload
smtp_destination_recipient_limit = 1
smtp_initial_destination_concurrency = 1
smtp_destination_concurrency_limit = 1
smtp_process_limit = 1
EOF
expect "one line per destination, FIFO in each" \
    "a.test: 1112
b.test: 22" "$("$sim" --sequence "$tmp/two.conf")"

# Ten messages or more: numbers separated by spaces.
{
    for i in 1 2 3 4 5 6 7 8 9 10 11; do echo "$i x.test:1"; done
} >"$tmp/many.workload"
cat >"$tmp/many.conf" <<EOF
sim_workload = many.workload
EOF
expect "sequence with numbers above 9 is space-separated" \
    "1 2 3 4 5 6 7 8 9 10 11" "$("$sim" --sequence "$tmp/many.conf")"

# The headline: one 10,000-recipient message, then one-recipient mail for
# the same destination. Preemptive: the small mail's 99th percentile is
# below a fifth of round_robin's median; the bulk message finishes within
# 5 % of its round_robin time.
"$sim" --latency sim/scenarios/headline/*.conf >"$tmp/lat"
if awk -F'\t' '
    $1 == "preemptive" && $2 == "1" { p99 = $6 }
    $1 == "round_robin" && $2 == "1" { rr50 = $4 }
    $1 == "preemptive" && $2 == ">1000" { bp = $7 }
    $1 == "round_robin" && $2 == ">1000" { br = $7 }
    END { exit !(p99 > 0 && rr50 > 0 && p99 < rr50 / 5 && bp < br * 1.05) }' "$tmp/lat"; then
    ok "headline: one-recipient mail slips past the bulk message"
else
    not_ok "headline: one-recipient mail slips past the bulk message"
    sed 's/^/#   /' "$tmp/lat"
fi
head -1 "$tmp/lat" | grep -q "^scenario	size	messages	p50_s	p90_s	p99_s	max_s	mean_s$" &&
    ok "--latency header" || not_ok "--latency header"

# Per-domain overrides: only slow.test has a 421 limiter at 1 connection.
cat >"$tmp/dom.workload" <<EOF
0 slow.test:40 fast.test:40
EOF
cat >"$tmp/dom.conf" <<EOF
sim_workload = dom.workload
smtp_destination_recipient_limit = 1
sim_server_process_limit = 10
sim_domain_slow.test_server_concurrency_limit = 1
sim_recipient_delay_jitter = 0.5s
default_destination_concurrency_failed_cohort_limit = 0
EOF
"$sim" --tsv "$tmp/dom.conf" >"$tmp/dom"
rejected=$(awk -F'\t' 'NR == 2 { print $11 }' "$tmp/dom")
if [ "$rejected" -gt 0 ] 2>/dev/null; then
    ok "per-domain override: slow.test rejects ($rejected recipients)"
else
    not_ok "per-domain override: slow.test rejects (got '$rejected')"
fi
sed 's/^sim_domain_slow.test_server_concurrency_limit = 1$/sim_domain_slow.test_server_concurrency_limit = 0/' \
    "$tmp/dom.conf" >"$tmp/dom0.conf"
rejected=$("$sim" --tsv "$tmp/dom0.conf" | awk -F'\t' 'NR == 2 { print $11 }')
expect "without the override nobody rejects" "0" "$rejected"

# Workload errors name the file and the line.
printf '0 a.test:1\n1 a.test\n' >"$tmp/bad.workload"
printf 'sim_workload = bad.workload\n' >"$tmp/bad.conf"
if "$sim" "$tmp/bad.conf" >/dev/null 2>"$tmp/err"; then
    not_ok "a bad workload line is an error"
else
    expect "a bad workload line is an error naming file and line" \
        "sluice-sim: $tmp/bad.workload, line 2: expected DOMAIN:RECIPIENTS" \
        "$(cat "$tmp/err")"
fi
printf 'sim_workload = missing.workload\n' >"$tmp/missing.conf"
if "$sim" "$tmp/missing.conf" >/dev/null 2>"$tmp/err"; then
    not_ok "a missing workload file is an error"
else
    grep -q "cannot open $tmp/missing.workload" "$tmp/err" &&
        ok "a missing workload file is an error naming it" ||
        not_ok "a missing workload file is an error naming it"
fi

# Issue 16: recipients reach core/ in batches; the TSV says how many it
# held at most, under the seed's bound, and the big message still goes.
cat >"$tmp/mem.conf" <<'EOF'
sim_recipients = 2000
qmgr_message_recipient_limit = 100
default_recipient_limit = 200
default_extra_recipient_limit = 0
EOF
"$sim" --tsv "$tmp/mem.conf" >"$tmp/mem"
expect "the TSV header ends with max_incore_recipients and incore_bound" \
    "max_incore_recipients incore_bound" \
    "$(head -1 "$tmp/mem" | awk -F'\t' '{ print $(NF - 1), $NF }')"
# shellcheck disable=SC2046
set -- $(awk -F'\t' 'NR == 2 { print $13, $(NF - 1), $NF, NF }' "$tmp/mem")
expect "the run has its 2000 recipients" "2000" "$1"
expect "the bound is max(10 x 1 + 200 + 0, 100)" "210" "$3"
if [ "$2" -gt 0 ] && [ "$2" -le "$3" ]; then
    ok "at most $2 recipients in core, within the bound $3"
else
    not_ok "recipients in core within the bound (got $2, bound $3)"
fi
expect "the header and the row have the same columns" \
    "$(head -1 "$tmp/mem" | awk -F'\t' '{ print NF }')" "$4"

tap_done
