# tests/integration/lib/daemon_lib.sh: what the scripts that run sluiced
# against local receivers share; sourced after tap.sh, not run.
#
#   pids="$pids $!"               a process to stop at exit (by its PID;
#                                 the exit trap also removes $tmp)
#   free_port                     a free loopback TCP port
#   wait_for SECONDS COMMAND...   until COMMAND succeeds, at most SECONDS
#   listening PORT                something accepts on 127.0.0.1:PORT
#   start_smtp_sink NAME [OPT...] Postfix's smtp-sink on a free port,
#                                 dumping each message to $tmp/NAME/, its
#                                 port in $port_NAME (needs $sink, and
#                                 $tmp traversable: chmod 711 "$tmp")
#   start_count_sink NAME "PORTS" [OPT...]
#                                 lib/count_sink.py on PORTS, counting into
#                                 $tmp/NAME.stats (present once it listens),
#                                 Message-IDs in $tmp/NAME.ids
#   counter NAME KEY [PORT]       a count_sink counter, of PORT or of the
#                                 first port
#   sluiced_start DIR [LINE]      sluiced -f on a queue in DIR/q, with
#                                 transport_maps $tmp/transport, no SMTP
#                                 server and LINE (a parameter) added to
#                                 DIR/sluice.conf (and mail_owner = root,
#                                 so that a user sluice on the machine
#                                 changes nothing); logs to DIR/log, its
#                                 pid in $sluiced_pid; fails unless it
#                                 starts within 10 s; $sluiced_wrap, if
#                                 set, is a command that runs it
# Names used inside start with _dl_, so that a caller's variables (say
# $limit) are never overwritten.

sink=/usr/sbin/smtp-sink
sink_user_opt=
[ "$(id -u)" = 0 ] && sink_user_opt="-u postfix"
count_sink=$(pwd)/tests/integration/lib/count_sink.py

pids=
_dl_cleanup() {
    for _dl_p in $pids; do kill "$_dl_p" 2>/dev/null; done
    for _dl_p in $pids; do wait "$_dl_p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap _dl_cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for() {
    _dl_limit=$(($1 * 10))
    shift
    _dl_i=0
    until "$@"; do
        _dl_i=$((_dl_i + 1))
        [ $_dl_i -gt $_dl_limit ] && return 1
        sleep 0.1
    done
}

listening() {
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),1)" 2>/dev/null
}

start_smtp_sink() {
    _dl_name=$1
    shift
    _dl_port=$(free_port)
    mkdir -p "$tmp/$_dl_name"
    chmod 777 "$tmp/$_dl_name"
    # shellcheck disable=SC2086
    "$sink" $sink_user_opt -d "$tmp/$_dl_name/%M." "$@" "127.0.0.1:$_dl_port" \
        64 2>/dev/null &
    pids="$pids $!"
    eval "port_$_dl_name=$_dl_port"
    wait_for 10 listening "$_dl_port"
}

start_count_sink() {
    _dl_name=$1
    _dl_ports=$2
    shift 2
    # shellcheck disable=SC2086
    python3 "$count_sink" --stats "$tmp/$_dl_name.stats" \
        --ids "$tmp/$_dl_name.ids" "$@" $_dl_ports 2>>"$tmp/$_dl_name.err" &
    pids="$pids $!"
    wait_for 10 test -f "$tmp/$_dl_name.stats"
}

counter() {
    awk -v p="port=$3" -v k="$2=" '!done && ($1 == p || p == "port=") {
        for (i = 2; i <= NF; i++)
            if (index($i, k) == 1)
                print substr($i, length(k) + 1)
        done = 1
    }' "$tmp/$1.stats"
}

sluiced_start() {
    mkdir -p "$1"
    cat >"$1/sluice.conf" <<_DL_CONF
queue_directory = $1/q
myhostname = sluice.test
smtpd_listen =
transport_maps = $tmp/transport
mail_owner = root
${2:-}
_DL_CONF
    # shellcheck disable=SC2086
    $sluiced_wrap "$build/sluiced" -f -c "$1/sluice.conf" >"$1/log" 2>&1 &
    sluiced_pid=$!
    pids="$pids $sluiced_pid"
    wait_for 10 grep -q "started: queue" "$1/log"
}
