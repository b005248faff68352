#!/bin/sh
# tests/integration/cli_config.sh BUILD: test "sluice config" end to end.
#
# BUILD is the build directory (the program is BUILD/sluice) or the
# program itself. Runs the real program on files in a temporary
# directory and prints TAP: "ok N - what" or "not ok N - what" per
# check, then the plan "1..N". Exits non-zero when a check failed.

LC_ALL=C
export LC_ALL
build=${1:-build}
if [ -f "$build" ] && [ -x "$build" ]; then
    sluice=$build
else
    sluice=$build/sluice
fi
case $sluice in /*) ;; *) sluice=$(pwd)/$sluice ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli_config.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset SLUICE_CONFIG

n=0
failed=0

# check WHAT: the last command's exit status, stdout and stderr were as
# expected ($want_rc, $tmp/want.out, $tmp/want.err).
check() {
    n=$((n + 1))
    if [ "$rc" -eq "$want_rc" ] && cmp -s "$tmp/out" "$tmp/want.out" &&
        cmp -s "$tmp/err" "$tmp/want.err"; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        echo "# exit status $rc, expected $want_rc"
        diff "$tmp/want.out" "$tmp/out" | sed 's/^/# stdout: /'
        diff "$tmp/want.err" "$tmp/err" | sed 's/^/# stderr: /'
        failed=$((failed + 1))
    fi
}

# run ARGS...: run sluice from inside $tmp, capturing everything. The
# machine's own name may be unqualified, and sluice then warns about the
# default myhostname; that warning is dropped here and tested below with
# myhostname set.
run() {
    (cd "$tmp" && "$sluice" "$@") >"$tmp/out" 2>"$tmp/err.all"
    rc=$?
    grep -v '^sluice: warning: myhostname "[^"]*" is not a fully qualified domain name' \
        "$tmp/err.all" >"$tmp/err"
}

expect() { # expect RC: stdout from stdin; stderr empty
    want_rc=$1
    cat >"$tmp/want.out"
    : >"$tmp/want.err"
}

expect_err() { # expect_err RC: stderr from stdin; stdout empty
    want_rc=$1
    cat >"$tmp/want.err"
    : >"$tmp/want.out"
}

cat >"$tmp/main.cf" <<'EOF'
# A test configuration.
default_process_limit = 50
smtp_destination_concurrency_limit = $default_process_limit
relay_destination_recipient_limit=2
default_destination_concurrency_positive_feedback =
    1/concurrency
initial_destination_concurrency = 5
EOF

# 1. -c with a missing file is an error.
run -c "$tmp/none.cf" config
n=$((n + 1))
if [ "$rc" -eq 1 ] && grep -qx "sluice: $tmp/none.cf: No such file or directory" "$tmp/err"; then
    echo "ok $n - -c with a missing file is an error (exit 1)"
else
    echo "not ok $n - -c with a missing file is an error (exit 1): $rc $(cat "$tmp/err")"
    failed=$((failed + 1))
fi

# An empty file: every global parameter at its default, sorted.
: >"$tmp/empty.cf"
run -c "$tmp/empty.cf" config
n=$((n + 1))
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] &&
    [ "$(wc -l <"$tmp/out")" -eq "$(grep -c ' =\( \|$\)' "$tmp/out")" ] &&
    [ "$(wc -l <"$tmp/out")" -ge 36 ] &&
    sort -c "$tmp/out" 2>/dev/null &&
    grep -qx 'default_process_limit = 100' "$tmp/out" &&
    grep -qx 'maximal_queue_lifetime = 5d' "$tmp/out" &&
    grep -qx 'concurrency_feedback_rounding = seed' "$tmp/out" &&
    grep -qx 'initial_destination_concurrency = 5' "$tmp/out"; then
    echo "ok $n - config lists every parameter with its default, sorted"
else
    echo "not ok $n - config lists every parameter with its default, sorted"
    failed=$((failed + 1))
fi

# Without -c or SLUICE_CONFIG, the default file may be missing.
cp "$tmp/out" "$tmp/defaults.out"
run config
n=$((n + 1))
if [ -e /etc/sluice/sluice.conf ]; then
    echo "ok $n - no file means built-in defaults # SKIP /etc/sluice/sluice.conf exists"
elif [ "$rc" -eq 0 ] && cmp -s "$tmp/out" "$tmp/defaults.out"; then
    echo "ok $n - no file means built-in defaults"
else
    echo "not ok $n - no file means built-in defaults (exit $rc)"
    failed=$((failed + 1))
fi

# 2. -n: only non-default settings, overrides included, as written.
run -c "$tmp/main.cf" config -n
expect 0 <<'EOF'
default_destination_concurrency_positive_feedback = 1/concurrency
default_process_limit = 50
relay_destination_recipient_limit = 2
smtp_destination_concurrency_limit = $default_process_limit
EOF
check "config -n prints non-default settings and overrides, unexpanded"

run -c "$tmp/main.cf" config -n -x
expect 0 <<'EOF'
default_destination_concurrency_positive_feedback = 1/concurrency
default_process_limit = 50
relay_destination_recipient_limit = 2
smtp_destination_concurrency_limit = 50
EOF
check "config -n -x expands \$name"

# 3. The full list includes the overrides that are set.
run -c "$tmp/main.cf" config
n=$((n + 1))
if [ "$rc" -eq 0 ] && sort -c "$tmp/out" 2>/dev/null &&
    grep -qx 'smtp_destination_concurrency_limit = $default_process_limit' "$tmp/out" &&
    grep -qx 'relay_destination_recipient_limit = 2' "$tmp/out" &&
    grep -qx 'minimal_backoff_time = 300s' "$tmp/out"; then
    echo "ok $n - config without -n includes set overrides"
else
    echo "not ok $n - config without -n includes set overrides"
    failed=$((failed + 1))
fi

# 4. NAME: globals and overrides, set or not, in the order given.
run config -c "$tmp/main.cf" smtp_destination_concurrency_limit \
    lmtp_destination_concurrency_limit default_process_limit \
    relay_destination_recipient_limit smtp_destination_recipient_limit
expect 0 <<'EOF'
smtp_destination_concurrency_limit = $default_process_limit
lmtp_destination_concurrency_limit = 20
default_process_limit = 50
relay_destination_recipient_limit = 2
smtp_destination_recipient_limit = 50
EOF
check "config NAME prints globals and effective overrides"

run -c "$tmp/main.cf" config -x smtp_destination_concurrency_limit
expect 0 <<'EOF'
smtp_destination_concurrency_limit = 50
EOF
check "config -x NAME expands the override"

# 5. An unknown NAME: a message, the others still printed, exit 1.
run -c "$tmp/main.cf" config default_process_limit nope smtp_maximal_backoff_time queue_run_delay
want_rc=1
printf '%s\n' 'default_process_limit = 50' 'queue_run_delay = 300s' >"$tmp/want.out"
printf '%s\n' 'sluice: config: unknown parameter "nope"' \
    'sluice: config: unknown parameter "smtp_maximal_backoff_time"' >"$tmp/want.err"
check "config with an unknown NAME exits 1 after printing the others"

# 6. SLUICE_CONFIG names the file; -c wins over it.
SLUICE_CONFIG="$tmp/main.cf"
export SLUICE_CONFIG
run config default_process_limit
unset SLUICE_CONFIG
expect 0 <<'EOF'
default_process_limit = 50
EOF
check "SLUICE_CONFIG names the configuration file"

SLUICE_CONFIG="$tmp/main.cf"
export SLUICE_CONFIG
run -c "$tmp/empty.cf" config default_process_limit
unset SLUICE_CONFIG
expect 0 <<'EOF'
default_process_limit = 100
EOF
check "-c wins over SLUICE_CONFIG"

(cd "$tmp" && SLUICE_CONFIG="$tmp/none.cf" "$sluice" config) >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_err 1 <<EOF
sluice: $tmp/none.cf: No such file or directory
EOF
check "a missing SLUICE_CONFIG file is an error"

# config -c wins over the global -c.
run -c "$tmp/none.cf" config -c "$tmp/main.cf" default_process_limit
expect 0 <<'EOF'
default_process_limit = 50
EOF
check "config -c wins over sluice -c"

# 7. Bad files: the message names the file and the line; exit 1.
printf '%s\n' '# bad' 'default_process_limit = 5' '' 'default_process_limit = lots' >"$tmp/bad.cf"
run -c "$tmp/bad.cf" config
expect_err 1 <<EOF
sluice: $tmp/bad.cf, line 4: default_process_limit: bad value "lots": expected an integer between 1 and 100000
EOF
check "a bad value is reported with file and line"

# Issue 14: a Postfix operator's main.cf loads; what sluice does not
# implement gets one warning each, a likely typo the closest known name.
printf '%s\n' 'default_process_limit = 5' 'frobnicate = yes' \
    'smtpd_banner = $myhostname ESMTP' 'maximal_backof_time = 1h' \
    'relay_domains = $mydomain' 'mydomain = example.org' >"$tmp/main2.cf"
run -c "$tmp/main2.cf" config -n -x
want_rc=0
printf '%s\n' 'default_process_limit = 5' 'relay_domains = example.org' \
    >"$tmp/want.out"
cat >"$tmp/want.err" <<EOF
sluice: warning: $tmp/main2.cf, line 2: unknown parameter "frobnicate" ignored
sluice: warning: $tmp/main2.cf, line 3: unknown parameter "smtpd_banner" ignored
sluice: warning: $tmp/main2.cf, line 4: unknown parameter "maximal_backof_time" ignored (did you mean "maximal_backoff_time"?)
EOF
check "unknown parameters in the file are warnings with their line, not errors"

run -c "$tmp/main2.cf" config maximal_backof_time smtp_destination_concurency_limit
want_rc=1
: >"$tmp/want.out"
cat >"$tmp/want.err" <<EOF
sluice: warning: $tmp/main2.cf, line 2: unknown parameter "frobnicate" ignored
sluice: warning: $tmp/main2.cf, line 3: unknown parameter "smtpd_banner" ignored
sluice: warning: $tmp/main2.cf, line 4: unknown parameter "maximal_backof_time" ignored (did you mean "maximal_backoff_time"?)
sluice: config: unknown parameter "maximal_backof_time" (did you mean "maximal_backoff_time"?)
sluice: config: unknown parameter "smtp_destination_concurency_limit" (did you mean "smtp_destination_concurrency_limit"?)
EOF
check "an unknown NAME is reported with the closest known name"

printf '%s\n' 'default_process_limit = 5' 'frob nicate = yes' >"$tmp/bad.cf"
run -c "$tmp/bad.cf" config -n
expect_err 1 <<EOF
sluice: $tmp/bad.cf, line 2: bad parameter name "frob nicate"
EOF
check "a name that cannot be a parameter's is an error"

# Issue 14: sluice config refuses every file sluiced refuses, with the
# daemon's own checks (daemon_config_load()).
bad_config() { # bad_config WHAT LINE EXPECTED-MESSAGE
    printf '%s\n' "$2" >"$tmp/bad.cf"
    run -c "$tmp/bad.cf" config -n
    printf '%s\n' "$3" >"$tmp/want.err"
    : >"$tmp/want.out"
    want_rc=1
    check "$1"
}
bad_config "a transport table that does not load is refused" \
    "transport_maps = $tmp/missing" \
    "sluice: $tmp/missing: No such file or directory"
bad_config "a default_transport that is not declared is refused" \
    "default_transport = nosuch" \
    'sluice: default_transport: "nosuch" is not a declared transport (see transports)'
bad_config "a myhostname that cannot go into EHLO is refused" \
    "myhostname = mail example" \
    'sluice: myhostname: bad value "mail example": EHLO, HELO and LHLO need a domain name or an address literal such as [192.0.2.1]'
bad_config "a per-transport HELO name that cannot go into EHLO is refused" \
    "relay_helo_name = -x-" \
    'sluice: relay_helo_name: bad value "-x-": EHLO, HELO and LHLO need a domain name or an address literal such as [192.0.2.1]'
bad_config "an unknown relay restriction is refused" \
    "smtpd_relay_restrictions = permit_mynetworks, reject_unauth_dest" \
    'sluice: smtpd_relay_restrictions: unknown restriction "reject_unauth_dest" (sluice knows permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination, defer_unauth_destination, permit, reject)'
printf 'alice:{PLAIN}x\nbob:{SSHA}abc\n' >"$tmp/passwd"
printf '%s\n' "smtpd_sasl_auth_enable = yes" "smtpd_tls_auth_only = no" \
    "smtpd_sasl_path = $tmp/passwd" >"$tmp/bad.cf"
run -c "$tmp/bad.cf" config -n
printf '%s\n' "sluice: smtpd_sasl_path: $tmp/passwd, line 2: unknown password scheme {SSHA} (sluice knows PLAIN, CLEAR, CRYPT, SHA512-CRYPT, SHA256-CRYPT, BLF-CRYPT)" >"$tmp/want.err"
: >"$tmp/want.out"
want_rc=1
check "a passwd-file with an unknown scheme is refused with its line"
bad_config "a submission override of another parameter is refused" \
    "smtpd_submission_listen = 127.0.0.1:0
smtpd_submission_options = queue_directory=/tmp" \
    'sluice: smtpd_submission_options: queue_directory cannot be overridden for the submission listener'
bad_config "a bad mynetworks is refused" \
    "mynetworks = 10.0.0.0/33" \
    'sluice: mynetworks: bad network "10.0.0.0/33": prefix longer than 32'
bad_config "a bad smtpd_listen is refused" \
    "smtpd_listen = 127.0.0.1" \
    'sluice: smtpd_listen: "127.0.0.1" is not ADDRESS:PORT or [IPV6-ADDRESS]:PORT'
bad_config "a bad dns_servers is refused" \
    "dns_servers = not-an-address!" \
    'sluice: dns_servers: bad name server list "not-an-address!": Misformatted string'

# Issue 20: the zmailer scheduler's rules file (sluice-rules(5),
# decisions 114 and 116): refused with its file and line, required and
# covering the transport's channel when zmailer is chosen.
printf '%s\n' '*/* idlemax=5m' 'smtp/*' '	maxrings=3 command=smtp' \
    >"$tmp/rules.bad"
bad_config "a scheduler rules file with a mistake is refused with its line" \
    "scheduler_rules = $tmp/rules.bad" \
    "sluice: $tmp/rules.bad, line 2: unknown option \"maxrings=3\""
printf '%s\n' 'smtp/* command="smtp' >"$tmp/rules.quote"
bad_config "a scheduler rule with an unterminated quote is refused" \
    "scheduler_rules = $tmp/rules.quote" \
    "sluice: $tmp/rules.quote, line 1: a double quote that is not closed"
bad_config "zmailer without scheduler_rules is refused" \
    "smtp_delivery_scheduler = zmailer" \
    'sluice: transport smtp: delivery_scheduler = zmailer needs scheduler_rules, the rules file'
printf '%s\n' 'lmtp command=lmtp' >"$tmp/rules.lmtp"
bad_config "zmailer with no rule for the transport's channel is refused" \
    "smtp_delivery_scheduler = zmailer
scheduler_rules = $tmp/rules.lmtp" \
    'sluice: transport smtp: delivery_scheduler = zmailer: no clause with a command in scheduler_rules matches channel smtp'
printf '%s\n' '*/* idlemax=5m maxta=50' 'smtp/*.slow.example maxring=2' \
    '	ageorder command=smtp' 'smtp/* command=smtp' >"$tmp/rules.good"
printf '%s\n' 'myhostname = mail.example.com' \
    'smtp_delivery_scheduler = zmailer' \
    "scheduler_rules = $tmp/rules.good" >"$tmp/zm.cf"
run -c "$tmp/zm.cf" config smtp_delivery_scheduler
echo 'smtp_delivery_scheduler = zmailer' >"$tmp/want.out"
: >"$tmp/want.err"
want_rc=0
check "zmailer with good rules: accepted, without a warning (decision 124)"

# Settings that make no sense together are warnings.
printf '%s\n' 'myhostname = mail.example.com' 'minimal_backoff_time = 2h' \
    'maximal_backoff_time = 1h' 'bounce_queue_lifetime = 6d' \
    'delay_warning_time = 5d' 'queue_minfree = 1000' \
    'qmgr_message_recipient_minimum = 30000' \
    'relay_initial_destination_concurrency = 30' \
    'smtp_connection_cache_time_limit = 400s' >"$tmp/odd.cf"
run -c "$tmp/odd.cf" config -n minimal_backoff_time
want_rc=0
printf '%s\n' 'minimal_backoff_time = 2h' >"$tmp/want.out"
cat >"$tmp/want.err" <<'EOF'
sluice: warning: minimal_backoff_time (2h) is longer than maximal_backoff_time (1h): every retry waits minimal_backoff_time
sluice: warning: bounce_queue_lifetime (6d) is longer than maximal_queue_lifetime (5d)
sluice: warning: delay_warning_time (5d) is not shorter than maximal_queue_lifetime (5d): no delay notice can be sent
sluice: warning: queue_minfree (1000) should be at least 1.5 times message_size_limit (10240000)
sluice: warning: qmgr_message_recipient_minimum (30000) is above qmgr_message_recipient_limit (20000)
sluice: warning: transport smtp: smtp_connection_cache_time_limit is longer than smtp_connection_reuse_time_limit: idle connections are closed when their reuse time is up
sluice: warning: transport relay: relay_initial_destination_concurrency (30) is above default_destination_concurrency_limit (20): the window starts at the limit
sluice: warning: transport relay: smtp_connection_cache_time_limit is longer than smtp_connection_reuse_time_limit: idle connections are closed when their reuse time is up
sluice: warning: transport lmtp: smtp_connection_cache_time_limit is longer than smtp_connection_reuse_time_limit: idle connections are closed when their reuse time is up
sluice: warning: transport discard: smtp_connection_cache_time_limit is longer than smtp_connection_reuse_time_limit: idle connections are closed when their reuse time is up
sluice: warning: transport error: smtp_connection_cache_time_limit is longer than smtp_connection_reuse_time_limit: idle connections are closed when their reuse time is up
EOF
check "settings that make no sense together are warned about"

# Issue 14: an unqualified host name is worth a warning.
printf '%s\n' 'myhostname = mailhost' >"$tmp/host.cf"
(cd "$tmp" && "$sluice" -c "$tmp/host.cf" config myhostname) >"$tmp/out" 2>"$tmp/err"
rc=$?
expect 0 <<'EOF'
myhostname = mailhost
EOF
echo 'sluice: warning: myhostname "mailhost" is not a fully qualified domain name: receivers may refuse it in EHLO; set myhostname' >"$tmp/want.err"
check "an unqualified myhostname is warned about"
printf '%s\n' 'myhostname = mail.example.com' >"$tmp/host.cf"
(cd "$tmp" && "$sluice" -c "$tmp/host.cf" config -x smtp_helo_name) >"$tmp/out" 2>"$tmp/err"
rc=$?
expect 0 <<'EOF'
smtp_helo_name = mail.example.com
EOF
check "a qualified myhostname is not, and is what EHLO sends"

# The default myhostname is this system's name (never empty).
: >"$tmp/empty.cf"
run -c "$tmp/empty.cf" config -x smtp_helo_name
n=$((n + 1))
if [ "$rc" -eq 0 ] && grep -q '^smtp_helo_name = [A-Za-z0-9]' "$tmp/out" &&
    [ "$(sed 's/^smtp_helo_name = //' "$tmp/out")" = "$(hostname -f 2>/dev/null || hostname)" ]; then
    echo "ok $n - the default myhostname is the system's name"
else
    echo "not ok $n - the default myhostname is the system's name: $(cat "$tmp/out") vs $(hostname -f 2>/dev/null || hostname)"
    failed=$((failed + 1))
fi

printf '%s\n' 'minimal_backoff_time = $maximal_backoff_time' \
    'maximal_backoff_time = $minimal_backoff_time' >"$tmp/bad.cf"
run -c "$tmp/bad.cf" config
expect_err 1 <<EOF
sluice: $tmp/bad.cf, line 2: maximal_backoff_time: bad value "\$minimal_backoff_time": \$name expansion loop: minimal_backoff_time -> maximal_backoff_time -> minimal_backoff_time
EOF
check "a \$name loop is an error, not a hang"

head -c 20000 /dev/urandom 2>/dev/null | tr -d '\000' >"$tmp/junk.cf"
run -c "$tmp/junk.cf" config
n=$((n + 1))
if [ "$rc" -eq 1 ] && grep -q "^sluice: $tmp/junk.cf" "$tmp/err"; then
    echo "ok $n - binary junk is an error, not a crash"
else
    echo "not ok $n - binary junk is an error, not a crash (exit $rc)"
    failed=$((failed + 1))
fi

# 8. Usage errors exit 64 with a usage line.
run config -q
expect_err 64 <<'EOF'
sluice: config: unknown option -q
usage: sluice config [-c FILE] [-n] [-x] [NAME...]
EOF
check "config with an unknown option is a usage error"

run frobnicate
n=$((n + 1))
if [ "$rc" -eq 64 ] && [ ! -s "$tmp/out" ] &&
    grep -qx 'sluice: unknown command "frobnicate"' "$tmp/err" &&
    grep -q '^usage: sluice ' "$tmp/err"; then
    echo "ok $n - an unknown command is a usage error"
else
    echo "not ok $n - an unknown command is a usage error (exit $rc)"
    failed=$((failed + 1))
fi

run
n=$((n + 1))
if [ "$rc" -eq 64 ] && grep -q '^usage: sluice ' "$tmp/err"; then
    echo "ok $n - no command is a usage error"
else
    echo "not ok $n - no command is a usage error (exit $rc)"
    failed=$((failed + 1))
fi

run -c
n=$((n + 1))
if [ "$rc" -eq 64 ] && grep -qx 'sluice: option -c needs an argument' "$tmp/err"; then
    echo "ok $n - -c without a file is a usage error"
else
    echo "not ok $n - -c without a file is a usage error (exit $rc)"
    failed=$((failed + 1))
fi

# 9. help and version.
run help config
expect 0 <<'EOF'
usage: sluice config [-c FILE] [-n] [-x] [NAME...]
print parameter settings
EOF
check "help COMMAND prints its usage"

run help
n=$((n + 1))
if [ "$rc" -eq 0 ] && grep -q '^  config ' "$tmp/out" &&
    grep -q '^  version ' "$tmp/out"; then
    echo "ok $n - help lists the commands"
else
    echo "not ok $n - help lists the commands"
    failed=$((failed + 1))
fi

run version
n=$((n + 1))
if [ "$rc" -eq 0 ] && grep -qx 'sluice [0-9][0-9.]*' "$tmp/out"; then
    echo "ok $n - version prints the version"
else
    echo "not ok $n - version prints the version"
    failed=$((failed + 1))
fi

echo "1..$n"
[ "$failed" -eq 0 ]
