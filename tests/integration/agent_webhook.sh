#!/bin/sh
# agent_webhook.sh BUILD - examples/agents/webhook as a persistent agent
# against a small HTTP server of the test's own (Python's http.server) on
# loopback: 2xx delivers (the server got the message, its sender and
# recipients), 4xx bounces, 5xx and a refused connection defer; and the
# same program in its one-shot mode (pipe(8)'s) exits as sysexits(3)
# says. Bounded in time, stops only the processes it started. Output is
# TAP.
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
. tests/integration/lib/tap.sh
. tests/integration/lib/daemon_lib.sh

need python3 test -x /usr/bin/python3
chmod 711 "$tmp"
mkdir -m 777 "$tmp/got"
webhook=$(pwd)/examples/agents/webhook
port=$(free_port)
dead=$(free_port)

cat >"$tmp/server.py" <<'_SERVER'
import http.server, os, sys

port, out = int(sys.argv[1]), sys.argv[2]
codes = {"/ok.test": 204, "/gone.test": 404, "/busy.test": 503}


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        name = os.path.join(out, self.path.strip("/") + ".%d" % len(os.listdir(out)))
        with open(name, "wb") as f:
            for h in ("Content-Type", "X-Sluice-Sender", "X-Sluice-Recipients"):
                f.write(("%s: %s\n" % (h, self.headers[h])).encode())
            f.write(b"\n" + body)
        self.send_response(codes.get(self.path, 500))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Hook).serve_forever()
_SERVER
/usr/bin/python3 "$tmp/server.py" "$port" "$tmp/got" 2>"$tmp/server.err" &
pids="$pids $!"
wait_for 5 listening "$port" || not_ok "the HTTP server listens"

printf '%s\n' "hook/down.test command=\"$webhook http://127.0.0.1:$dead/\"" \
    "hook/*  command=\"$webhook http://127.0.0.1:$port/\$host\"" \
    >"$tmp/rules"
: >"$tmp/transport"
for h in ok gone busy down; do
    printf '%s.test hook:\n' "$h" >>"$tmp/transport"
done
if sluiced_start "$tmp/d" "transports = smtp:smtp, hook:agent
scheduler_rules = $tmp/rules"; then
    ok "sluiced starts"
else
    not_ok "sluiced starts"
    cat "$tmp/d/log"
    tap_done
fi
for h in ok gone busy down; do
    printf 'Subject: to %s\n\nhello %s\n' "$h" "$h" |
        "$build/sluice" -c "$tmp/d/sluice.conf" sendmail -f 's@sluice.test' \
            "a@$h.test" "\"b c\"@$h.test"
done
decided() {
    [ "$(grep -c 'status=\(sent\|bounced\|deferred\)' "$tmp/d/log")" -ge 8 ]
}
wait_for 6 decided && ok "every recipient decided" ||
    not_ok "every recipient decided"
grep -q 'to=<a@ok.test>, relay=hook, .*dsn=2.0.0, status=sent (webhook http://127.0.0.1:[0-9]*/ok.test said HTTP 204)' \
    "$tmp/d/log" && ok "2xx: delivered" || not_ok "2xx: delivered"
f=$(ls "$tmp"/got/ok.test.* 2>/dev/null | head -1)
grep -q -x 'X-Sluice-Recipients: a@ok.test "b+20c"@ok.test' "$f" &&
    grep -q -x 'X-Sluice-Sender: s@sluice.test' "$f" &&
    grep -q -x 'Content-Type: message/rfc822' "$f" &&
    grep -q -x 'hello ok' "$f" &&
    ok "the server got the message, its sender and recipients (xtext)" ||
    not_ok "the server got the message, its sender and recipients (xtext)"
expect "one POST per message" 1 "$(ls "$tmp"/got | grep -c '^ok.test')"
grep -q 'to=<a@gone.test>, relay=hook, .*dsn=5.0.0, status=bounced (webhook .* said HTTP 404)' \
    "$tmp/d/log" && ok "4xx: bounced" || not_ok "4xx: bounced"
grep -q 'to=<a@busy.test>, relay=hook, .*dsn=4.0.0, status=deferred (webhook .* said HTTP 503)' \
    "$tmp/d/log" && ok "5xx: deferred" || not_ok "5xx: deferred"
grep -q 'to=<a@down.test>, relay=hook, .*dsn=4.4.1, status=deferred (webhook http://127.0.0.1:[0-9]*/: ' \
    "$tmp/d/log" && ok "connection refused: deferred" ||
    not_ok "connection refused: deferred"

# One shot, as pipe(8) runs it: exit codes of sysexits(3).
printf 'Subject: x\n\nbody\n' |
    "$webhook" -f s@x.test "http://127.0.0.1:$port/ok.test" r@ok.test
expect "one shot, 2xx: exit 0" 0 $?
printf 'Subject: x\n\nbody\n' |
    "$webhook" "http://127.0.0.1:$port/gone.test" r@x.test 2>/dev/null
expect "one shot, 4xx: exit 69 (EX_UNAVAILABLE)" 69 $?
printf 'Subject: x\n\nbody\n' |
    "$webhook" "http://127.0.0.1:$dead/" r@x.test 2>/dev/null
expect "one shot, no server: exit 75 (EX_TEMPFAIL)" 75 $?
tap_done
