#!/bin/sh
# http.sh BUILD - sluiced's HTTP listener (http_listen): GET /metrics in
# Prometheus' text format, read by prometheus_client's parser and checked
# against the format's rules it is lenient about (HELP and TYPE once per
# family before its samples, histogram buckets cumulative and ending in
# +Inf = _count) and against the run (3 delivered to a sink, 2 deferred to
# a closed port, 1 bounced by the error transport); GET /api/status, the
# JSON of sluice status; 405 for other methods, 404 for other paths;
# hostile clients (garbage, huge headers, a body, a silent connection,
# an abrupt close) cost only their connection; a bad http_listen stops
# sluiced at start. Bounded in time (about 15 s), stops only the
# processes it started. Output is TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 command -v python3
need postfix test -x "$sink"
need python3-prometheus-client /usr/bin/python3 -c 'import prometheus_client.parser'

dead_port=$(free_port)
http_port=$(free_port)
chmod 711 "$tmp"
start_smtp_sink sink || { not_ok "the sink starts"; tap_done; }
sink_port=$port_sink
q=$tmp/q
conf=$tmp/sluice.conf
cat >"$tmp/transport" <<EOF
ok.test relay:[127.0.0.1]:$sink_port
dead.test relay:[127.0.0.1]:$dead_port
gone.test error:5.1.1 no such domain here
EOF
s() { "$build/sluice" -c "$conf" "$@"; }

printf 'tok-0123456789abcdef-secret\n' >"$tmp/token"
chmod 600 "$tmp/token"
sluiced_start "$tmp" "http_listen = 127.0.0.1:$http_port
http_token_file = $tmp/token
minimal_backoff_time = 1h
maximal_backoff_time = 2h" ||
    { not_ok "sluiced -f starts"; sed 's/^/#   /' "$tmp/log"; tap_done; }

for r in a@ok.test b@ok.test c@ok.test d@dead.test e@dead.test; do
    printf 'Subject: m\n\nbody\n' | s sendmail -f s@host.test "$r"
done
printf 'Subject: m\n\nbody\n' | s sendmail -f '' x@gone.test
settled() {
    [ "$(grep -c 'status=sent' "$tmp/log")" = 3 ] &&
        [ "$(grep -c 'to=<[de]@dead.test>.*status=deferred' "$tmp/log")" = 2 ] &&
        [ "$(grep -c 'to=<x@gone.test>.*status=bounced' "$tmp/log")" = 1 ]
}
wait_for 15 settled && ok "three delivered, two deferred, one bounced" ||
    not_ok "three delivered, two deferred, one bounced"

get() { # get METHOD PATH: "STATUS CONTENT-TYPE" and the body into $tmp/body
    python3 - "$http_port" "$1" "$2" "$tmp/body" <<'PYEOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request(sys.argv[2], sys.argv[3])
r = c.getresponse()
open(sys.argv[4], "wb").write(r.read())
print(r.status, r.getheader("Content-Type"))
PYEOF
}
expect "GET /metrics: 200, Prometheus' text format" \
    "200 text/plain; version=0.0.4; charset=utf-8" "$(get GET /metrics)"
cp "$tmp/body" "$tmp/metrics"
check=$(/usr/bin/python3 - "$tmp/metrics" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
problems = []
# The rules the parser does not enforce: HELP and TYPE once per family,
# before its samples; every sample line parses as NAME{LABELS} VALUE.
seen, current = {}, None
for line in text.splitlines():
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        name = line.split()[2]
        kind = line.split()[1]
        if (name, kind) in seen:
            problems.append("twice: " + line)
        seen[(name, kind)] = 1
        current = name
    elif line and not line.startswith("#"):
        base = line.split("{")[0].split(" ")[0]
        if not base.startswith(current or "-"):
            problems.append("sample outside its family: " + line)
        float(line.rsplit(" ", 1)[1])
fam = {f.name: f for f in text_string_to_metric_families(text)}
def value(name, sample, **labels):
    for s in fam[name].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    problems.append("missing %s %s" % (sample, labels))
    return None
out = []
out.append(value("sluice_recipients", "sluice_recipients_total",
                 transport="relay", status="delivered") == 3)
out.append(value("sluice_recipients", "sluice_recipients_total",
                 transport="relay", status="deferred") == 2)
out.append(value("sluice_recipients", "sluice_recipients_total",
                 transport="error", status="bounced") == 1)
# The histogram: cumulative buckets, +Inf equal to _count (3).
buckets = [(s.labels["le"], s.value) for s in
           fam["sluice_delivery_delay_seconds"].samples
           if s.name.endswith("_bucket") and s.labels["transport"] == "relay"]
vals = [v for _, v in buckets]
out.append(buckets[-1][0] == "+Inf" and vals == sorted(vals) and
           vals[-1] == value("sluice_delivery_delay_seconds",
                             "sluice_delivery_delay_seconds_count",
                             transport="relay") == 3)
out.append(value("sluice_messages_received", "sluice_messages_received_total") == 6)
out.append(value("sluice_queue_messages", "sluice_queue_messages",
                 queue="deferred") == 2)
out.append(value("sluice_destinations_dead", "sluice_destinations_dead",
                 transport="relay") >= 0)
out.append(value("sluice_connections_opened", "sluice_connections_opened_total") >= 1)
out.append(value("sluice_core_recipients_limit", "sluice_core_recipients_limit") == 20000)
print(" ".join("ok" if x else "no" for x in out), "|", "; ".join(problems))
PYEOF
)
expect "metrics: outcomes, the histogram, received, queue, connections" \
    "ok ok ok ok ok ok ok ok ok | " "$check"

expect "GET /api/status: 200 JSON" "200 application/json" "$(get GET /api/status)"
python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))
print(st["messages"]["limit"], [t["name"] for t in st["transports"]] != [])' \
    "$tmp/body" >"$tmp/st" 2>&1
expect "/api/status is sluice status --json" "20000 True" "$(cat "$tmp/st")"
expect "HEAD /metrics: 200" "200 text/plain; version=0.0.4; charset=utf-8" \
    "$(get HEAD /metrics)"
expect "POST to /metrics is refused with 405" "405" \
    "$(get POST /metrics | cut -d' ' -f1)"
expect "GET of /api/inject is refused with 405" "405" \
    "$(get GET /api/inject | cut -d' ' -f1)"

# The injection API: a template, two recipients, two messages; the
# answer after the spool commit; then what it refuses.
inject() { # inject TOKEN JSON: "STATUS BODY"
    python3 - "$http_port" "$1" "$2" <<'PYEOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
h = {"Content-Type": "application/json"}
if sys.argv[2]:
    h["Authorization"] = "Bearer " + sys.argv[2]
c.request("POST", "/api/inject", sys.argv[3].encode("utf-8"), h)
r = c.getresponse()
print(r.status, r.read().decode("utf-8").strip())
PYEOF
}
tok=tok-0123456789abcdef-secret
out=$(inject "$tok" '{"envelope_sender": "news@host.test",
  "recipients": [{"email": "ann@ok.test", "substitutions": {"name": "Ann"}},
                 {"email": "bob@ok.test", "substitutions": {"name": "Bob"}}],
  "substitutions": {"month": "November"},
  "content": "From: News <news@host.test>\nSubject: {{ month }} for {{name}}\n\nHello {{ name }}.\n"}')
case $out in
"200 {\"queue_ids\": [\""*\"", \""*\""], \"recipients\": 2}") ok "inject: 200 with two queue ids" ;;
*) not_ok "inject: 200 with two queue ids"; echo "#   $out" ;;
esac
id1=$(printf '%s' "$out" | sed 's/.*"queue_ids": \["\([^"]*\)".*/\1/')
grep -q "$id1: http=127.0.0.1 from=<news@host.test>" "$tmp/log" &&
    ok "inject: logged with the client's address" ||
    not_ok "inject: logged with the client's address"
both_in() {
    grep -q 'to=<ann@ok.test>.*status=sent' "$tmp/log" &&
        grep -q 'to=<bob@ok.test>.*status=sent' "$tmp/log"
}
wait_for 10 both_in && ok "inject: both delivered" || not_ok "inject: both delivered"
expect "inject: each got its own text" "2 1 1" "$(
    grep -l -a 'Subject: November for ' "$tmp"/sink/* | wc -l) $(
    grep -l -a 'Hello Ann\.' "$tmp"/sink/* | wc -l) $(
    grep -l -a 'Hello Bob\.' "$tmp"/sink/* | wc -l)"
expect "inject: no token is 401" 401 "$(inject '' '{}' | cut -d' ' -f1)"
expect "inject: a wrong token is 401" 401 \
    "$(inject tok-0123456789abcdef-secreT '{}' | cut -d' ' -f1)"
expect "inject: bad JSON is 400 with the byte" \
    '400 {"error": "expected a name at byte 1"}' "$(inject "$tok" '{,}')"
expect "inject: an unknown field is 400" \
    '400 {"error": "unknown field \"bcc\" in the request"}' \
    "$(inject "$tok" '{"envelope_sender": "", "bcc": 1}')"
expect "inject: a bad recipient is 400" \
    '400 {"error": "recipient 1: email must be an address"}' \
    "$(inject "$tok" '{"envelope_sender": "", "content": "x", "recipients": [{"email": "not an address"}]}')"
expect "inject: a missing variable is 400" \
    '400 {"error": "no substitution for {{ name }}"}' \
    "$(inject "$tok" '{"envelope_sender": "", "content": "Subject: {{ name }}\n\nx", "recipients": [{"email": "z@ok.test"}]}')"
python3 -c '
import json
print(json.dumps({"envelope_sender": "", "recipients": [{"email": "z@ok.test"}],
                  "content": "Subject: big\n\n" + "x" * 10300000}))' >"$tmp/big.json"
big=$(python3 - "$http_port" "$tok" "$tmp/big.json" <<'PYEOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.request("POST", "/api/inject", open(sys.argv[3], "rb").read(),
          {"Authorization": "Bearer " + sys.argv[2]})
r = c.getresponse()
b = r.read().decode("utf-8")
print(r.status, b[:b.find(" than ") + 5])
PYEOF
)
expect "inject: a message over message_size_limit is 400" \
    '400 {"error": "message too big: more than' "$big"
expect "an unknown path is 404" "404" "$(get GET /nothing | cut -d' ' -f1)"

raw() { # raw DATA: send DATA (Python escapes), print the status line or "closed"
    python3 - "$http_port" "$1" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
try:
    data = s.recv(4096)
    print(data.split(b"\r\n")[0].decode("latin-1") if data else "closed")
except Exception as e:
    print("no reply: %s" % e)
PYEOF
}
expect "garbage: 400" "HTTP/1.1 400 Bad Request" \
    "$(raw 'NONSENSE\r\n\r\n' | sed 's/HTTP\/1.0/HTTP\/1.1/')"
big=$(head -c 20000 /dev/zero | tr '\0' a)
case $(raw "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: $big\r\n\r\n") in
"HTTP/1.1 4"* | closed) ok "headers past 8 KB: refused" ;;
*) not_ok "headers past 8 KB: refused" ;;
esac
case $(raw 'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n') in
"HTTP/1.1 4"* | closed) ok "a body is refused" ;;
*) not_ok "a body is refused" ;;
esac
python3 - "$http_port" <<'PYEOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /met")
time.sleep(12)
PYEOF
slow=$!
pids="$pids $slow"
python3 - "$http_port" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /metrics HTTP/1.1\r\nHo")
s.close()
PYEOF
expect "a silent and an aborted client do not hold others up" "200" \
    "$(get GET /metrics | cut -d' ' -f1)"
kill -0 "$sluiced_pid" 2>/dev/null && ok "the daemon survived every client" ||
    not_ok "the daemon survived every client"
kill "$sluiced_pid"
wait "$sluiced_pid" 2>/dev/null
kill "$slow" 2>/dev/null

# A bad http_listen is refused at start, with the reason.
sed -i "s/^http_listen = .*/http_listen = localhost:80x/" "$conf"
"$build/sluiced" -f -c "$conf" >"$tmp/bad" 2>&1
expect "a bad http_listen stops sluiced" 1 "$?"
grep -q 'http_listen: "localhost:80x" is not IP:PORT or \[IPV6\]:PORT' "$tmp/bad" &&
    ok "... with the reason" || { not_ok "... with the reason"; sed 's/^/#   /' "$tmp/bad"; }
tap_done
