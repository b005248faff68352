#!/bin/sh
# layers.sh - dependencies point one way: every #include "LAYER/..." in
# src/ is allowed by the layer table in doc/architecture.md (its "may
# include" column), and every folder in src/ is in that table. A layer's
# own headers are always allowed. Output is TAP.
. tests/integration/lib/tap.sh

table=doc/architecture.md
# "layer: allowed ..." from the rows "| `layer/` | ... | `a` `b` |"
rules=$(sed -n 's/^| `\([a-z]*\)\/` |.*| \([^|]*\)|$/\1: \2/p' "$table" | tr -d '`')
expect "the layer table has rows" "yes" "$([ -n "$rules" ] && echo yes)"

# The includes in DIR's files of a layer that LAYER may not include.
violations() {
    allowed=$(printf '%s\n' "$rules" | sed -n "s/^$2: //p")
    grep -Hn '^#include "[a-z_]*/' "$1"*.[ch] |
        while IFS= read -r line; do
            dep=$(printf '%s\n' "$line" | sed 's/.*#include "\([a-z_]*\)\/.*/\1/')
            [ "$dep" = "$2" ] && continue
            case " $allowed " in *" $dep "*) ;; *) printf '%s\n' "$line" ;; esac
        done | head -5
}

for dir in src/*/; do
    layer=$(basename "$dir")
    known=$(printf '%s\n' "$rules" | grep -c "^$layer:")
    expect "src/$layer/ is in the layer table" "1" "$known"
    expect "src/$layer/ includes only what the table allows" "" \
        "$(violations "$dir" "$layer")"
done

# The check can fail: a made-up include of a higher layer is caught.
probe=$(mktemp -d)
printf '#include "core/core_impl.h"\n#include "qmgr/qmgr.h"\n' >"$probe/x.c"
expect "core/ including qmgr/ would be caught" "$probe/x.c:2:#include \"qmgr/qmgr.h\"" \
    "$(violations "$probe/" core)"
rm -rf "$probe"
tap_done
