#!/bin/sh
# cli_usage.sh BUILD - the programs' own usage: --help and --version of
# sluice and sluiced exit 0 with their text on standard output; a refused
# option exits 64 with the usage on standard error; the documents mention
# no option the programs refuse. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh

# run PROGRAM ARGS...: exit status in $rc, output in $tmp/out, $tmp/err
run() {
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

version=$(sed -n 's/^#define SLUICE_VERSION "\(.*\)"$/\1/p' src/util/util.h)
[ -n "$version" ] && ok "the version is defined once, in src/util/util.h ($version)" ||
    not_ok "the version is defined once, in src/util/util.h"

for args in "--help" "-c /nonexistent --help"; do
    # shellcheck disable=SC2086
    run "$build/sluice" $args
    expect "sluice $args: exit 0" 0 "$rc"
    expect "sluice $args: usage on stdout" "usage: sluice [-c FILE] COMMAND [ARGS...]" "$(head -1 "$tmp/out")"
    expect "sluice $args: nothing on stderr" "" "$(cat "$tmp/err")"
done
grep -q '^  config ' "$tmp/out" && ok "sluice --help lists the commands" ||
    not_ok "sluice --help lists the commands"

run "$build/sluice" --version
expect "sluice --version: exit 0" 0 "$rc"
expect "sluice --version: the version on stdout" "sluice $version" "$(cat "$tmp/out")"

run "$build/sluiced" --help
expect "sluiced --help: exit 0" 0 "$rc"
expect "sluiced --help: usage on stdout" "usage: sluiced [-f] [-c FILE]" "$(head -1 "$tmp/out")"
grep -q '^  -f ' "$tmp/out" && grep -q '^  -c FILE ' "$tmp/out" &&
    ok "sluiced --help explains -f and -c" || not_ok "sluiced --help explains -f and -c"
expect "sluiced --help: nothing on stderr" "" "$(cat "$tmp/err")"

run "$build/sluiced" --version
expect "sluiced --version: exit 0" 0 "$rc"
expect "sluiced --version: the same version" "sluiced $version" "$(cat "$tmp/out")"

for bad in -v -x --verbose; do
    run "$build/sluiced" $bad
    expect "sluiced $bad: exit 64" 64 "$rc"
    grep -q '^usage: sluiced \[-f\] \[-c FILE\]' "$tmp/err" &&
        ok "sluiced $bad: usage on stderr" || not_ok "sluiced $bad: usage on stderr"
done
run "$build/sluice" --frobnicate
expect "sluice --frobnicate: exit 64" 64 "$rc"

# The documents offer only what the programs take: sluiced takes -f, -c,
# --help and --version.
bad_flags=$(grep -n -o -E 'sluiced (\[?-[a-zA-Z]+\]? ?)+|daemon.s `-[a-z]`' \
    README.md doc/*.md doc/*.[158] bench/README.md 2>/dev/null |
    grep -v -E 'sluiced (\[?-(f|c|-help|-version)\]? ?)+$' | head -5)
expect "no document offers a sluiced option it refuses" "" "$bad_flags"
tap_done
