#!/bin/sh
# tests/run.sh BUILD: run every test of sluice and count the results.
#
# Unit tests are the cmocka programs BUILD/tests/test_*; integration tests
# are the scripts tests/integration/*.sh, run with BUILD as their argument.
# Both speak TAP ("ok N - name" / "not ok N - name"); a program that exits
# non-zero without reporting a failure counts as one failure more, so a
# crash is never mistaken for success. Each program's line gives its
# time in seconds. The last line is "N passed, N failed". SKIP, a list
# of test names (integration scripts without .sh, or test programs), is
# not run; each is named with "skipped".
build=${1:-build}
SKIP=${SKIP:-}
export CMOCKA_MESSAGE_OUTPUT=TAP
pass=0
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run_one() {
    name=$1
    shift
    for s in $SKIP; do
        if [ "$s" = "$name" ]; then
            echo "== $name: skipped (SKIP)"
            return
        fi
    done
    t0=$(date +%s)
    "$@" >"$out" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    p=$(grep -c '^ok ' "$out")
    f=$(grep -c '^not ok ' "$out")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "not ok - $name exited with status $rc" >>"$out"
    fi
    if [ "$f" -ne 0 ] || [ "$p" -eq 0 ]; then
        [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1 &&
            echo "not ok - $name reported no test" >>"$out"
        echo "== $name: $p passed, $f failed (${secs}s)"
        sed 's/^/    /' "$out"
    else
        echo "== $name: $p passed (${secs}s)"
    fi
    pass=$((pass + p))
    fail=$((fail + f))
}

for t in "$build"/tests/test_*; do
    case "$t" in *.d) continue ;; esac
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/integration/*.sh; do
    [ -f "$t" ] || continue
    run_one "$(basename "$t" .sh)" sh "$t" "$build"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
