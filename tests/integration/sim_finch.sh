#!/bin/sh
# sim_finch.sh BUILD - Finch's delivery scheduler in the simulator
# (sim/scenarios/finch/, ../shared/seeds/finch-mta-scheduling.txt): the
# same core/ choices the daemon makes, against modelled MX hosts. The
# seed gives no figures for delivery, so its claims are checked within
# the bounds issue 19 states: four MX hosts of equal preference each get
# 15 to 35 % ("spreading our load onto a part of the destination
# cluster"); a dead host is connected to no more often than its retry
# time allows ("For broken destinations it records when we should next
# bother to try"); secondary MX hosts take mail only when no primary can
# ("none of the job's primary destinations are currently working. So we
# repeat the whole process ... using the secondary destination list");
# connections carry many jobs. Output is TAP.
build=${1:-build}
sim=$build/sluice-sim
. tests/integration/lib/tap.sh
dir=sim/scenarios/finch

"$sim" --hosts "$dir"/*.conf >"$tmp/hosts" || not_ok "sluice-sim --hosts runs"
"$sim" --tsv "$dir"/*.conf >"$tmp/table" || not_ok "sluice-sim --tsv runs"
expect "--hosts header" \
    "scenario	host	pref	kind	delivered	share_pct	connections	jobs_per_connection	after_failure	retry_gap_s" \
    "$(head -1 "$tmp/hosts")"

# rows SCENARIO AWK-CONDITION: the hosts of the scenario that fail it.
# Columns: 1 scenario, 2 host, 3 pref, 4 kind, 5 delivered, 6 share,
# 7 connections, 8 jobs per connection, 9 after failure, 10 retry gap.
rows() {
    awk -F'\t' -v sc="$1" "NR > 1 && \$1 == sc && !($2) { print \$2, \$6, \$7, \$9, \$10 }
        END { }" "$tmp/hosts"
}
# check DESCRIPTION SCENARIO AWK-CONDITION: every host of it passes.
check() {
    bad=$(rows "$2" "$3")
    if [ -z "$bad" ] && grep -q "^$2	" "$tmp/hosts"; then
        ok "$1"
    else
        not_ok "$1"
        echo "$bad" | sed 's/^/#   /'
    fi
}
col() { awk -F'\t' -v sc="$1" -v c="$2" 'NR > 1 && $1 == sc { print $c }' "$tmp/table"; }

check "1-spread: four equal hosts, each 15 to 35 % of the mail" 1-spread \
    '$6 >= 15 && $6 <= 35'
check "1-spread: connections carry many jobs (over 10 each)" 1-spread '$8 > 10'
expect "1-spread: nothing deferred" 0.00 "$(col 1-spread 6)"

dur=$(col 2-dead 17)
check "2-dead: the dead host delivers nothing and is tried again, never before its retry time (30 s)" 2-dead \
    '$4 != "dead" || ($5 == 0 && $9 >= 1 && $10 >= 30.0)'
check "2-dead: retries of the dead host within the run's length over the retry time ($dur s / 30 s)" 2-dead \
    "\$4 != \"dead\" || \$9 <= int($dur / 30)"
check "2-dead: the three working hosts share the mail, each 15 to 50 %" 2-dead \
    '$4 == "dead" || ($6 >= 15 && $6 <= 50)'
expect "2-dead: nothing deferred" 0.00 "$(col 2-dead 6)"

check "3-slow: the slow host takes less than any other" 3-slow \
    '$4 != "slow" || $6 < 15'
check "3-slow: the others take the rest, each 25 to 40 %" 3-slow \
    '$4 == "slow" || ($6 >= 25 && $6 <= 40)'

check "4-secondary: secondaries unused while the primaries work" 4-secondary \
    '$3 == 10 || ($5 == 0 && $7 == 0)'
check "4-secondary: the two primaries each 35 to 65 %" 4-secondary \
    '$3 == 20 || ($6 >= 35 && $6 <= 65)'

check "5-primaries-dead: the secondaries take the mail, the primaries retried no sooner than 30 s" 5-primaries-dead \
    '($3 == 20 && $5 > 0) || ($3 == 10 && $5 == 0 && $10 >= 30.0)'
if awk -F'\t' 'NR > 1 && $1 == "5-primaries-dead" { exit !($6 <= 1.0) }' "$tmp/table"; then
    ok "5-primaries-dead: at most 1 % deferred (jobs that met both primaries before either was known dead)"
else
    not_ok "5-primaries-dead: at most 1 % deferred"
fi

# The default table is followed by the hosts' report; the same seed gives
# the same run.
"$sim" "$dir/1-spread.conf" >"$tmp/out1"
"$sim" "$dir/1-spread.conf" >"$tmp/out2"
grep -q '^1-spread  *mx4.d1.sim  *10  *ok ' "$tmp/out1" &&
    ok "the table is followed by the hosts' report" ||
    not_ok "the table is followed by the hosts' report"
cmp -s "$tmp/out1" "$tmp/out2" && ok "the same seed gives the same run" ||
    not_ok "the same seed gives the same run"

# Under the Postfix scheduler there is no host report.
expect "no hosts without finch" 1 \
    "$("$sim" --hosts sim/scenarios/limiter-421/1-invN-nocache.conf | wc -l)"

# The MX keys per destination: d2.sim has three hosts, one dead.
cat >"$tmp/dom.conf" <<EOT
smtp_delivery_scheduler = finch
sim_recipients = 100
sim_destinations = 2
smtp_destination_recipient_limit = 1
sim_domain_d2.sim_mx_hosts = 3
sim_domain_d2.sim_mx_dead_hosts = 1
EOT
expect "sim_domain_DOMAIN_mx_hosts and _mx_dead_hosts" \
    "mx1.d1.sim ok 100
mx1.d2.sim dead 0
mx2.d2.sim ok
mx3.d2.sim ok" \
    "$("$sim" --hosts "$tmp/dom.conf" | awk -F'\t' 'NR > 1 { print $2, $4, ($4 == "ok" && $2 ~ /d2/) ? "" : $5 }' | sed 's/ $//')"

# A scenario with more dead and slow hosts than hosts is refused.
cat >"$tmp/bad.conf" <<EOT
smtp_delivery_scheduler = finch
sim_mx_hosts = 2
sim_mx_dead_hosts = 2
sim_mx_slow_hosts = 1
EOT
"$sim" "$tmp/bad.conf" >/dev/null 2>"$tmp/err"
expect "more dead and slow hosts than hosts: exit 1" 1 $?
grep -qF 'bad: d1.sim: sim_mx_dead_hosts and sim_mx_slow_hosts (3) are more than the MX hosts (2)' "$tmp/err" &&
    ok "... with a message naming the keys" || { not_ok "... with a message naming the keys"; sed 's/^/#   /' "$tmp/err"; }
tap_done
