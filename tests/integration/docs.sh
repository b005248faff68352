#!/bin/sh
# docs.sh - the documents a user reads: every manual page renders with no
# warning from groff or man and none of the mistakes they let through
# (lib/man_lint.py: control characters, words run together by an
# alternating-font request); sluice.conf(5) documents exactly the
# parameters of src/conf/params.def (lib/params_doc.py), and is, with the
# README's parameter table, what "make man" makes of it; no document
# points at a file outside the repository (this project's notes live
# beside it, not in it). Output is TAP.
. tests/integration/lib/tap.sh

need groff-base command -v groff
need man-db command -v man
need python3 command -v python3

for page in doc/*.[1578]; do
    warnings=$( {
        groff -man -Tutf8 -ww -z "$page"
        MANWIDTH=80 man -l --warnings=all "$page" >/dev/null
    } 2>&1 | head -5)
    expect "$page renders without warnings" "" "$warnings"
done
lint=$(python3 tests/integration/lib/man_lint.py doc/*.[1578])
expect "manual pages: no control characters, no words run together" "" "$lint"

# The parameters' documents are made from params.def (make man,
# decision 88): the committed ones are exactly what it makes.
build=${1:-build}
if [ -x "$build/tools/params_man" ]; then
    made=$("$build/tools/params_man" man doc/sluice.conf.5.in 2>&1 |
        diff doc/sluice.conf.5 - | head -5)
    expect "doc/sluice.conf.5 is what make man makes of params.def" "" "$made"
    made=$("$build/tools/params_man" readme README.md 2>&1 |
        diff README.md - | head -5)
    expect "README.md's parameter table is what make man makes" "" "$made"
    printf '%s\n' '.TH X 5' '@PARAM no_such_parameter' >"$tmp/bad.5.in"
    bad=$("$build/tools/params_man" man "$tmp/bad.5.in" 2>&1 >/dev/null |
        grep -c -e 'no_such_parameter is not a parameter' \
            -e 'mail_owner: 0 @PARAM lines')
    expect "a template naming a stranger, or missing a parameter, is refused" \
        2 "$bad"
else
    not_ok "$build/tools/params_man is built (make)"
fi

# The parameters: src/conf/params.def is their one source (the parser and
# "sluice config" read it); sluice.conf(5) must document each one with its
# type, default and override, and nothing else as a parameter.
params=$(python3 tests/integration/lib/params_doc.py src/conf/params.def \
    doc/sluice.conf.5 | head -5)
expect "sluice.conf(5) documents exactly the parameters of params.def" "" \
    "$params"
printf '%s\n' '.SH PARAMETERS' '.TP' '.B no_such_parameter' \
    '.RI ( integer ,' 'default' '.BR 1 )' '.br' 'x' '.SH FILES' >"${TMPDIR:-/tmp}/params_doc.$$"
stray=$(python3 tests/integration/lib/params_doc.py src/conf/params.def \
    "${TMPDIR:-/tmp}/params_doc.$$" | grep -c 'no_such_parameter: in')
rm -f "${TMPDIR:-/tmp}/params_doc.$$"
expect "an entry that is not a parameter would be caught" "1" "$stray"

# Tracked documents, not tests/ and .ci/ (which run beside ../shared).
outside=$(git ls-files 2>/dev/null | grep -v -e '^tests/' -e '^\.ci/' \
    -e '\.png$' | xargs grep -n -I -E '\.\./shared|seeds/|(DESIGN|STYLE|TESTING-PEERS)\.md|postfix-reference-notes' 2>/dev/null | head -5)
expect "no document points outside the repository (../shared)" "" "$outside"
tap_done
