#!/usr/bin/env python3
"""params_doc.py PARAMS_DEF MANPAGE - the parameters of src/conf/params.def
(the one source of sluice's parameters) against the PARAMETERS section of
doc/sluice.conf.5: every parameter has an entry there with its type, its
default and its override suffix, and every entry is a parameter. Prints one
line per difference; nothing when they agree."""
import re
import sys

TYPES = {'INT': 'integer', 'TIME': 'time', 'BOOL': 'boolean',
         'FEEDBACK': 'feedback', 'CHOICE': 'choice', 'STRING': 'string',
         'LIST': 'list'}


def split_args(text):
    """Top-level comma-separated arguments, string literals joined."""
    args, cur, depth, instr, i = [], '', 0, False, 0
    while i < len(text):
        ch = text[i]
        if instr:
            cur += ch
            if ch == '\\':
                cur += text[i + 1]
                i += 1
            elif ch == '"':
                instr = False
        elif ch == '"':
            instr, cur = True, cur + ch
        elif ch == ',' and depth == 0:
            args.append(cur.strip())
            cur = ''
        else:
            depth += (ch == '(') - (ch == ')')
            cur += ch
        i += 1
    args.append(cur.strip())
    return args


def c_string(arg):
    """The value of adjacent C string literals, or None for NULL."""
    if arg == 'NULL':
        return None
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    return bytes(''.join(parts), 'utf-8').decode('unicode_escape')


def table(path):
    text = re.sub(r'/\*.*?\*/', '', open(path).read(), flags=re.S)
    out = {}
    for m in re.finditer(r'CONF_PARAM\((.*?)\)\s*(?=CONF_PARAM\(|$)', text,
                         re.S):
        args = split_args(m.group(1))
        out[args[0]] = (TYPES[args[1]], c_string(args[2]), c_string(args[3]))
    return out


def roff_text(line):
    """A line's words as a reader sees them: the alternating-font
    requests (.BR, .IB, ...) join their arguments without a space."""
    m = re.match(r'^\.([A-Z]+)\s*', line)
    joiner = ' ' if m is None or len(m.group(1)) == 1 else ''
    line = line[m.end():] if m else line
    line = line.replace('\\-', '-').replace('\\(en', '-').replace('\\&', '')
    line = re.sub(r'\\f[A-Z]', '', line).replace('\\c', '')
    words = re.findall(r'"([^"]*)"|(\S+)', line)
    return joiner.join(a or b for a, b in words)


def entries(path):
    lines = open(path).read().split('\n')
    start = lines.index('.SH PARAMETERS')
    end = next(i for i in range(start + 1, len(lines))
               if lines[i].startswith('.SH '))
    out = {}
    nested = 0  # inside .RS ... .RE: a list within an entry
    for i in range(start, end):
        nested += (lines[i] == '.RS') - (lines[i] == '.RE')
        if nested == 0 and lines[i] == '.TP' and lines[i + 1].startswith('.B '):
            name = lines[i + 1][3:].strip()
            head = []
            for line in lines[i + 2:]:
                if line == '.br':
                    break
                head.append(line)
            out[name] = head
    return out


def check(def_path, man_path):
    params, doc = table(def_path), entries(man_path)
    for name, (kind, default, suffix) in params.items():
        if name not in doc:
            yield '%s: not in the PARAMETERS section of %s' % (name, man_path)
            continue
        head = doc[name]
        words = [roff_text(line) for line in head]
        if not head or not head[0].startswith('.RI ( ' + kind):
            yield '%s: type %s not given as %r' % (name, kind, head[:1])
        default_lines = [w for k, w in enumerate(words)
                         if k > 0 and head[k].startswith('.BR ') and
                         words[k - 1].endswith('default')]
        if default and name != 'myhostname':
            shown = default_lines[0].rstrip(' ;)') if default_lines else None
            if shown != default:
                yield '%s: default %r, the page says %r' % (name, default,
                                                              shown)
        override = [w for line, w in zip(head, words)
                    if line.startswith('.IB transport')]
        if suffix and override != ['transport' + suffix + ')']:
            yield '%s: override %s not given (%r)' % (name, suffix, override)
        if not suffix and override:
            yield '%s: has no override, the page gives %r' % (name, override)
    for name in doc:
        if name not in params:
            yield '%s: in %s but not a parameter' % (name, man_path)


if __name__ == '__main__':
    for problem in check(sys.argv[1], sys.argv[2]):
        print(problem)
