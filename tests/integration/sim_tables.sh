#!/bin/sh
# sim_tables.sh BUILD - the simulator reproduces the seed's three tables.
#
# Runs build/sluice-sim on sim/scenarios/ and checks the results against
# ../shared/seeds/postfix-scheduler-readme.txt ("Results for delivery to
# concurrency-limited servers"). Output is TAP.
build=${1:-build}
sim=$build/sluice-sim
. tests/integration/lib/tap.sh

# check DESCRIPTION AWK-CONDITION FILE [SEED-VALUES]: every row must pass.
# In the condition, s[i] is the i-th of SEED-VALUES for row i and abs()
# is there; an awk error fails the check.
check() {
    desc=$1
    cond=$2
    file=$3
    if bad=$(awk -F'\t' -v seeds="${4:-}" "
        function abs(x) { return x < 0 ? -x : x }
        BEGIN { split(seeds, s, \" \") }
        NR > 1 && !($cond) { print \$1, \"deferred\", \$6, \"concurrency\", \$7 }
        END { if (NR < 2) print \"no rows\" }" "$file") && [ -z "$bad" ]; then
        ok "$desc"
    else
        not_ok "$desc"
        echo "$bad" | sed 's/^/#   /'
    fi
}

# check_spread WHAT FILE: "the effect of feedback is negligible when
# concurrency is limited due to congestion": deferred % differs by less
# than 1.5 points between the rows (feedback styles, caching).
check_spread() {
    spread=$(awk -F'\t' 'NR > 1 { if (min == "" || $6 < min) min = $6; if ($6 > max) max = $6 }
        END { print (NR < 2 ? 99 : max - min) }' "$2")
    if awk -v s="$spread" 'BEGIN { exit !(s < 1.5) }'; then
        ok "$1: feedback style changes deferred % by less than 1.5 points ($spread)"
    else
        not_ok "$1: feedback style changes deferred % by less than 1.5 points ($spread)"
    fi
}

# Table 3, "Impact of active server concurrency limiter": deferred within
# 2 points of 16.5, 16.5, 24.5, 24.3, 49.7, 49.7 and concurrency within
# 0.3 of 5.17, 5.17, 5.28, 5.28, 5.63, 5.68.
"$sim" --tsv sim/scenarios/limiter-421/*.conf >"$tmp/421" || not_ok "sluice-sim limiter-421 runs"
check "421 limiter: deferred % within 2 points of the seed's" \
    'abs($6 - s[NR - 1]) <= 2' "$tmp/421" "16.5 16.5 24.5 24.3 49.7 49.7"
check "421 limiter: concurrency within 0.3 of the seed's" \
    'abs($7 - s[NR - 1]) <= 0.3' "$tmp/421" "5.17 5.17 5.28 5.28 5.63 5.68"
rows=$(awk 'END { print NR - 1 }' "$tmp/421")
[ "$rows" -eq 6 ] && ok "421 limiter: six rows" || not_ok "421 limiter: six rows (got $rows)"

# concurrency_feedback_rounding = postfix3 against the same limiter: the
# reference notes measured Postfix 3.7 deferring 34.5 % with feedback 1.
"$sim" --tsv sim/scenarios/limiter-421-postfix3/5-one-nocache.conf >"$tmp/p3"
check "postfix3 rounding, feedback 1: deferred within 2 points of Postfix 3.7's 34.5 %" \
    'abs($6 - 34.5) <= 2' "$tmp/p3"

# -c FILE (or SLUICE_CONFIG) is read before each scenario.
echo "concurrency_feedback_rounding = postfix3" >"$tmp/base.conf"
"$sim" --tsv -c "$tmp/base.conf" sim/scenarios/limiter-421/5-one-nocache.conf >"$tmp/base"
SLUICE_CONFIG=$tmp/base.conf "$sim" --tsv sim/scenarios/limiter-421/5-one-nocache.conf >"$tmp/env"
if cmp -s "$tmp/base" "$tmp/p3" && cmp -s "$tmp/env" "$tmp/p3"; then
    ok "-c FILE and SLUICE_CONFIG are read before the scenario"
else
    not_ok "-c FILE and SLUICE_CONFIG are read before the scenario"
fi
if "$sim" -c "$tmp/missing.conf" sim/scenarios/limiter-421/1-invN-nocache.conf >/dev/null 2>"$tmp/err"; then
    not_ok "a missing -c file is an error"
else
    grep -q "missing.conf" "$tmp/err" && ok "a missing -c file is an error naming it" ||
        not_ok "a missing -c file is an error naming it"
fi

# "The theoretical defer rate is 1/(1+roundup(1/feedback))": also for
# server limits other than 5 (3 and 10), within 2.5 points.
for lim in 3 10; do
    for f in sim/scenarios/limiter-421/*nocache.conf; do
        {
            cat "$f"
            echo "sim_server_concurrency_limit = $lim"
            echo "smtp_initial_destination_concurrency = $lim"
            echo "sim_server_process_limit = $((lim * 2))"
            echo "sim_server_backlog = $((lim * 2))"
        } >"$tmp/limit$lim-$(basename "$f")"
    done
    "$sim" --tsv "$tmp"/limit$lim-*.conf >"$tmp/l$lim"
    check "421 limiter at server limit $lim: deferred within 2.5 points of 1/(1+roundup(1/feedback))" \
        'abs($6 - $16) <= 2.5' "$tmp/l$lim"
done

# Table 1, "Impact of the 30s SMTP connect timeout": feedback makes little
# difference (the seed: 9.9 to 10.8 %), concurrency stays near 20 (19.3
# to 19.6), all deferrals are connect timeouts.
"$sim" --tsv sim/scenarios/connect-timeout/*.conf >"$tmp/ct"
check "connect timeout: average concurrency >= 19" '$7 >= 19' "$tmp/ct"
check "connect timeout: deferred between 3 and 20 %" '$6 >= 3 && $6 <= 20' "$tmp/ct"
check "connect timeout: every deferral timed out in connect" \
    '$9 > 0 && $10 == 0 && $11 == 0 && $12 == 0' "$tmp/ct"
check_spread "connect timeout" "$tmp/ct"

# Table 2, "Impact of the 300s SMTP greeting timeout": 1.16 to 1.39 %
# deferred, concurrency 19.8 to 20, deferrals are greeting timeouts.
"$sim" --tsv sim/scenarios/greeting-timeout/*.conf >"$tmp/gt"
check "greeting timeout: average concurrency >= 19" '$7 >= 19' "$tmp/gt"
check "greeting timeout: deferred between 0.1 and 5 %" '$6 >= 0.1 && $6 <= 5' "$tmp/gt"
check "greeting timeout: deferrals are greeting timeouts" \
    '$10 > 0 && $11 == 0 && $12 == 0' "$tmp/gt"
check_spread "greeting timeout" "$tmp/gt"

# "Limitations of less-than-1 per delivery feedback": with 1 of 4 servers
# behind a load balancer failing, 1/N feedback stalls while a fixed 1/4
# keeps climbing.
"$sim" --tsv sim/scenarios/load-balancer/*.conf >"$tmp/lb"
if awk -F'\t' 'NR == 2 { a = $7 } NR == 3 { b = $7 } END { exit !(b >= 1.5 * a && b >= 15) }' "$tmp/lb"; then
    ok "load balancer: fixed 1/4 feedback reaches 1.5x the concurrency of 1/N"
else
    not_ok "load balancer: fixed 1/4 feedback reaches 1.5x the concurrency of 1/N"
    cut -f1,7 "$tmp/lb" | sed 's/^/#   /'
fi

# The same scenario and seed give the same run, to the event.
"$sim" --tsv sim/scenarios/limiter-421/3-invsqrtN-nocache.conf >"$tmp/a"
"$sim" --tsv sim/scenarios/limiter-421/3-invsqrtN-nocache.conf >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" && ok "deterministic: same seed, same result" ||
    not_ok "deterministic: same seed, same result"
{
    cat sim/scenarios/limiter-421/3-invsqrtN-nocache.conf
    echo "sim_seed = 7"
} >"$tmp/seed7.conf"
"$sim" --tsv "$tmp/seed7.conf" >"$tmp/c"
! cmp -s "$tmp/a" "$tmp/c" &&
    ok "another seed, another run" || not_ok "another seed, another run"

tap_done
