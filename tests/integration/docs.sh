#!/bin/sh
# docs.sh - the documents a user reads: every manual page renders with no
# warning from groff or man and none of the mistakes they let through
# (lib/man_lint.py: control characters, words run together by an
# alternating-font request); no document points at a file outside the
# repository (this project's notes live beside it, not in it). Output is
# TAP.
. tests/integration/lib/tap.sh

need groff-base command -v groff
need man-db command -v man
need python3 command -v python3

for page in doc/*.[158]; do
    warnings=$( {
        groff -man -Tutf8 -ww -z "$page"
        MANWIDTH=80 man -l --warnings=all "$page" >/dev/null
    } 2>&1 | head -5)
    expect "$page renders without warnings" "" "$warnings"
done
lint=$(python3 tests/integration/lib/man_lint.py doc/*.[158])
expect "manual pages: no control characters, no words run together" "" "$lint"

# Tracked documents, not tests/ and .ci/ (which run beside ../shared).
outside=$(git ls-files 2>/dev/null | grep -v -e '^tests/' -e '^\.ci/' \
    -e '\.png$' | xargs grep -n -I -E '\.\./shared|seeds/|(DESIGN|STYLE|TESTING-PEERS)\.md|postfix-reference-notes' 2>/dev/null | head -5)
expect "no document points outside the repository (../shared)" "" "$outside"
tap_done
