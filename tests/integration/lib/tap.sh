# tests/integration/lib/tap.sh: TAP helpers for the integration scripts,
# sourced, not run (tests/run.sh runs tests/integration/*.sh only).
#
#   . tests/integration/lib/tap.sh   sets $tmp (removed at exit), unsets
#                                    SLUICE_CONFIG, counts from 1
#   ok WHAT / not_ok WHAT            one result line
#   expect WHAT EXPECTED ACTUAL      ok if equal, else both as comments
#   tap_done                         the plan line; exits 1 if any failed
#   need PACKAGE COMMAND...          the test's peer comes from Debian
#                                    package PACKAGE: unless COMMAND
#                                    succeeds, one failure naming the
#                                    package, and the script ends

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset SLUICE_CONFIG
n=0
failed=0

ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

not_ok() {
    n=$((n + 1))
    failed=1
    echo "not ok $n - $1"
}

expect() {
    if [ "$2" = "$3" ]; then
        ok "$1"
    else
        not_ok "$1"
        echo "#   expected: $2"
        echo "#   got:      $3"
    fi
}

tap_done() {
    echo "1..$n"
    exit $failed
}

# A missing peer is a failure, never a silent skip: a fresh machine must
# show what .ci/install-deps did not install.
need() {
    _need_pkg=$1
    shift
    if ! "$@" >/dev/null 2>&1; then
        not_ok "missing test peer: install the Debian package $_need_pkg (bash .ci/install-deps); '$*' failed"
        tap_done
    fi
}
