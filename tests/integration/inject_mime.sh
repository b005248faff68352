#!/bin/sh
# inject_mime.sh BUILD - POST /api/inject with a structured content
# (KumoMTA's subject, text_body, html_body, from, reply_to, headers,
# attachments): sluiced builds a MIME message per recipient, delivered to
# aiosmtpd and parsed there by Python's email package with policy.strict
# and with every defect counted (inject_mime_check.py): the tree
# (multipart/mixed, related, alternative), RFC 2047 subject and names,
# RFC 2231 file names, variables per recipient and global (escaped in
# the HTML), attachments byte for byte, CRLF and lines within 998.
# Hostile requests (wrong types, unknown fields, huge fields, bad base64,
# CR or LF in a subject, a name, a header name or value, a content type)
# get 400 with the reason and store nothing. Bounded in time (about 5 s),
# stops only the processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3-aiosmtpd /usr/bin/python3 -c 'import aiosmtpd'

aio_port=$(free_port)
http_port=$(free_port)
/usr/bin/python3 tests/integration/lib/aiosmtpd_receiver.py "$tmp/aio" \
    "$aio_port" 2>"$tmp/aio.log" &
pids="$pids $!"
wait_for 10 test -e "$tmp/aio/ready" || { not_ok "aiosmtpd starts"; tap_done; }
echo "ok.test relay:[127.0.0.1]:$aio_port" >"$tmp/transport"
printf 'tok-0123456789abcdef-secret\n' >"$tmp/token"
sluiced_start "$tmp" "http_listen = 127.0.0.1:$http_port
http_token_file = $tmp/token" ||
    { not_ok "sluiced -f starts"; sed 's/^/#   /' "$tmp/log"; tap_done; }

# inject FILE: POST the JSON in FILE; "STATUS BODY"
inject() {
    /usr/bin/python3 - "$http_port" "$1" <<'PYEOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
c.request("POST", "/api/inject", open(sys.argv[2], "rb").read(),
          {"Authorization": "Bearer tok-0123456789abcdef-secret",
           "Content-Type": "application/json"})
r = c.getresponse()
print(r.status, r.read().decode("utf-8").strip())
PYEOF
}

# request NAME PYTHON: $tmp/NAME.json from a Python expression over base,
# a good request (variables: d, c for its content)
request() {
    /usr/bin/python3 - "$tmp/$1.json" "$2" <<'PYEOF'
import json, sys
d = {"envelope_sender": "bounces@host.test",
     "substitutions": {"campaign": "November", "greeting": "Hello"},
     "recipients": [
         {"email": "ann@ok.test", "name": "Ann M\u00fcller",
          "substitutions": {"greeting": "Hi"}},
         {"email": "bob@ok.test", "name": "Bob <&> O'Neil"}],
     "content": {
         "subject": "Gr\u00fc\u00dfe, {{ name }}: {{ greeting }}",
         "from": {"email": "news@host.test", "name": "Nachrichten \u00dc"},
         "reply_to": {"email": "help@host.test"},
         "headers": {"X-Campaign": "{{ campaign }} for {{ email }}"},
         "text_body": "Hello {{ name }},\nthis line is long: " + "x" * 200 +
                      "\nbye\n",
         "html_body": "<p>Hello {{name}}</p><img src=\"cid:pixel\">",
         "attachments": [
             {"data": "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7",
              "base64": True, "content_type": "image/gif",
              "file_name": "pixel.gif", "content_id": "pixel"},
             {"data": "na\u00efve data\n", "content_type":
              "text/plain; charset=utf-8",
              "file_name": "r\u00e9sum\u00e9 \u00e9t\u00e9.txt"}]}}
c = d["content"]
exec(sys.argv[2])
open(sys.argv[1], "w").write(json.dumps(d))
PYEOF
}

request good 'pass'
out=$(inject "$tmp/good.json")
case $out in
"200 {\"queue_ids\": [\""*\"", \""*\""], \"recipients\": 2}") ok "structured content: 200, a message per recipient" ;;
*) not_ok "structured content: 200, a message per recipient"; echo "#   $out" ;;
esac
two() { [ "$(ls "$tmp"/aio/*.eml 2>/dev/null | wc -l)" -ge 2 ]; }
wait_for 10 two && ok "both delivered to aiosmtpd" ||
    { not_ok "both delivered to aiosmtpd"; sed 's/^/#   /' "$tmp/log"; }

/usr/bin/python3 tests/integration/lib/inject_mime_check.py "$tmp"/aio/*.eml \
    >"$tmp/check" 2>&1
gif=$(printf 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7' |
    base64 -d | sha256sum | cut -c1-12)
txt=$(printf 'na\303\257ve data\n' | sha256sum | cut -c1-12)
long=$(head -c 200 /dev/zero | tr '\0' x)
tree='multipart/mixed(multipart/related(multipart/alternative(text/plain,text/html),image/gif),text/plain)'
atts="image/gif:pixel.gif:$gif:<pixel> text/plain:résumé été.txt:$txt:None"
expect "Ann's message: tree, RFC 2047 subject and names, variables, attachments, no defect" \
    "ann@ok.test | $tree | Grüße, Ann Müller: Hi | Nachrichten Ü <news@host.test> | Ann Müller <ann@ok.test> | help@host.test | November for ann@ok.test | Hello Ann Müller,\\nthis line is long: $long\\nbye\\n | <p>Hello Ann Müller</p><img src=\"cid:pixel\">\\n | $atts | ok" \
    "$(sed -n 1p "$tmp/check")"
expect "Bob's: a quoted display name, the global variable, HTML escaped" \
    "bob@ok.test | $tree | Grüße, Bob <&> O'Neil: Hello | Nachrichten Ü <news@host.test> | \"Bob <&> O'Neil\" <bob@ok.test> | help@host.test | November for bob@ok.test | Hello Bob <&> O'Neil,\\nthis line is long: $long\\nbye\\n | <p>Hello Bob &lt;&amp;&gt; O&#x27;Neil</p><img src=\"cid:pixel\">\\n | $atts | ok" \
    "$(sed -n 2p "$tmp/check")"

# A text alone: one text/plain part, 7bit; Cyrillic goes base64.
request plain 'd["recipients"] = d["recipients"][:1]; d["content"] = {"text_body": "short\nlines\n", "subject": "x " * 60}'
request cyr 'd["recipients"] = d["recipients"][1:]; d["content"] = {"html_body": "\u041f\u0440\u0438\u0432\u0435\u0442 " * 30}'
rm -f "$tmp"/aio/*.eml
expect "a text alone: 200" 200 "$(inject "$tmp/plain.json" | cut -d' ' -f1)"
expect "an HTML text alone: 200" 200 "$(inject "$tmp/cyr.json" | cut -d' ' -f1)"
wait_for 10 two
/usr/bin/python3 tests/integration/lib/inject_mime_check.py "$tmp"/aio/*.eml |
    cut -d'|' -f1,2,3,11 >"$tmp/check2"
expect "single parts, a folded long subject, no defect" \
    "ann@ok.test | text/plain | $(printf 'x %.0s' $(seq 60)) | ok
bob@ok.test | text/html | None | ok" "$(cat "$tmp/check2")"
grep -l -a 'Content-Transfer-Encoding: 7bit' "$tmp"/aio/*.eml | grep -q . &&
    grep -l -a 'Content-Transfer-Encoding: base64' "$tmp"/aio/*.eml | grep -q . &&
    ok "7bit for short ASCII lines, base64 for Cyrillic" ||
    not_ok "7bit for short ASCII lines, base64 for Cyrillic"

# Hostile requests: 400, the field named, nothing stored.
refuse() { # refuse NAME PYTHON REASON
    request "$1" "$2"
    expect "refused: $1" "400 {\"error\": \"$3\"}" "$(inject "$tmp/$1.json")"
}
refuse unknown 'c["bcc"] = "x@ok.test"' 'unknown field \"bcc\" in content'
refuse nobody 'del c["text_body"]; del c["html_body"]' \
    'content: text_body or html_body (strings) must be given'
refuse subject_type 'c["subject"] = 5' \
    'content: subject must be a string of one line of at most 998 bytes'
refuse subject_crlf 'c["subject"] = "hi\r\nBcc: x@evil.test"' \
    'content: subject must be a string of one line of at most 998 bytes'
refuse subject_huge 'c["subject"] = "y" * 5000' \
    'content: subject must be a string of one line of at most 998 bytes'
refuse subject_expanded 'd["substitutions"]["campaign"] = "z" * 990; c["subject"] = "{{ campaign }} {{ campaign }}"' \
    'Subject is longer than 998 bytes once its variables are expanded'
refuse from_name_lf 'c["from"]["name"] = "A\nBcc: x@evil.test"' \
    'content: from.name must be a string of one line of at most 200 bytes'
refuse from_email 'c["from"] = {"email": "a@b.test>, x@evil.test"}' \
    'content: from.email must be an address'
refuse from_extra 'c["from"]["x"] = 1' 'unknown field \"x\" in from'
refuse rcpt_name 'd["recipients"][0]["name"] = "A\r\nBcc: x@evil.test"' \
    'recipient 1: name must be a string of one line of at most 200 bytes'
refuse header_value 'c["headers"]["X-A"] = "v\r\nBcc: x@evil.test"' \
    'content: header \"X-A\" must be a string of one line of at most 998 bytes'
refuse header_name 'c["headers"] = {"X-A\r\nBcc": "v"}' \
    'content: header \"X-A\\x0d\\x0aBcc\" is not a field name sluice takes (From, To, Subject, Reply-To, MIME-Version and Content-* are set by their fields)'
refuse header_ours 'c["headers"] = {"content-type": "text/html"}' \
    'content: header \"content-type\" is not a field name sluice takes (From, To, Subject, Reply-To, MIME-Version and Content-* are set by their fields)'
refuse substitution_lf 'd["substitutions"]["greeting"] = "a\nBcc: x@evil.test"' \
    'substitution \"greeting\" must be a string of one line'
refuse bad_base64 'c["attachments"][0]["data"] = "R0lGOD!!"' \
    'content: attachment 1: data is not base64'
refuse att_type 'c["attachments"][1]["content_type"] = "text/plain\r\nBcc: x@evil.test"' \
    'content: attachment 2: content_type must be a MIME type such as image/png (not multipart or message)'
refuse att_multipart 'c["attachments"][1]["content_type"] = "multipart/mixed; boundary=x"' \
    'content: attachment 2: content_type must be a MIME type such as image/png (not multipart or message)'
refuse att_file 'c["attachments"][1]["file_name"] = "a\r\nb.txt"' \
    'content: attachment 2: file_name must be a string of one line of at most 200 bytes'
refuse att_cid 'c["attachments"][0]["content_id"] = "a> <b"' \
    'content: attachment 1: content_id must be letters, digits and RFC 5322 atext, with one \"@\" at most'
refuse att_bool 'c["attachments"][0]["base64"] = "yes"' \
    'content: attachment 1: data (a string) is needed, base64 is true or false'
refuse atts_type 'c["attachments"] = {}' \
    'content: attachments must be an array of at most 100'
refuse text_type 'c["text_body"] = ["a"]' \
    'content: text_body or html_body (strings) must be given'
refuse missing_var 'c["text_body"] = "{{ nothing }}"' \
    'no substitution for {{ nothing }}'
expect "nothing refused was stored" 0 \
    "$(grep -c 'http=127.0.0.1' "$tmp/log" | awk '{print $1 - 4}')"
kill -0 "$sluiced_pid" 2>/dev/null && ok "the daemon survived every request" ||
    not_ok "the daemon survived every request"
tap_done
