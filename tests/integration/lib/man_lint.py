#!/usr/bin/env python3
"""man_lint.py FILE...: mistakes in man pages that groff does not warn about.

Prints "FILE:LINE: what" for each and exits 1 if there is any:
- a control character (other than tab) anywhere: a "\\f" that a script
  turned into a form feed, say;
- an alternating-font request (.BR, .RB, .IR, .RI, .BI, .IB) with two
  plain words side by side among its arguments: the request joins its
  arguments without spaces, so "no delivery" comes out "nodelivery".
"""

import re
import sys

ALTERNATING = {".BR", ".RB", ".IR", ".RI", ".BI", ".IB"}
WORD = re.compile(r"^[A-Za-z]+$")


def roff_args(text):
    """A request's arguments as roff splits them: at blanks, except
    inside double quotes; each with whether it was quoted."""
    args = []
    i = 0
    while i < len(text):
        if text[i] in " \t":
            i += 1
        elif text[i] == '"':
            j = text.find('"', i + 1)
            j = len(text) if j < 0 else j
            args.append((text[i + 1:j], True))
            i = j + 1
        else:
            j = i
            while j < len(text) and text[j] not in " \t":
                j += 1
            args.append((text[i:j], False))
            i = j
    return args


def lint(path):
    problems = []
    with open(path, "rb") as f:
        data = f.read()
    for n, raw in enumerate(data.split(b"\n"), 1):
        if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", raw):
            problems.append("%s:%d: control character" % (path, n))
            continue
        line = raw.decode("utf-8", "replace")
        parts = line.split(None, 1)
        if not parts or parts[0] not in ALTERNATING or len(parts) < 2:
            continue
        args = roff_args(parts[1])
        for (a, qa), (b, qb) in zip(args, args[1:]):
            if WORD.match(a) and WORD.match(b) and not qa and not qb:
                problems.append("%s:%d: %s joins \"%s\" and \"%s\" without a "
                                "space" % (path, n, parts[0], a, b))
                break
    return problems


def main():
    problems = []
    for path in sys.argv[1:]:
        problems += lint(path)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
