# tests/integration/lib/postfix_lib.sh: a private Postfix instance as a
# test peer, for the scripts that need Postfix itself (smtpd as a 421
# limiter, the smtp client relaying through sluice); sourced after
# tap.sh and daemon_lib.sh, not run.
#
#   postfix_start DIR SMTPD_LINE   an instance in DIR (configuration in
#                                  etc/, queue in queue/, data in data/,
#                                  its log in maillog), every service
#                                  unchrooted; SMTPD_LINE is its smtpd
#                                  line of master.cf ("127.0.0.1:PORT inet
#                                  n - n - 10 smtpd"); main.cf lines of
#                                  the caller's come on standard input.
#                                  Returns non-zero if it did not start
#                                  (postfix's words in DIR/start.out).
#   postfix_stop DIR               stops it, and waits (at most 10 s) until
#                                  no process works in DIR any more
#
# $tmp must be traversable by the postfix user (chmod 711 "$tmp"). The
# exit trap of daemon_lib.sh stops every instance started here.

_pl_dirs=

# _pl_in_use DIR: a process works in DIR (Postfix's daemons run in their
# queue directory and linger a moment after the stop).
_pl_in_use() {
    for _pl_cwd in /proc/[0-9]*/cwd; do
        case $(readlink "$_pl_cwd" 2>/dev/null) in
        "$1" | "$1"/*) return 0 ;;
        esac
    done
    return 1
}

postfix_start() {
    _pl_dir=$1
    mkdir "$_pl_dir" "$_pl_dir/etc" "$_pl_dir/queue" "$_pl_dir/data" || return 1
    chown postfix:postfix "$_pl_dir/data"
    : >"$_pl_dir/maillog"
    chown postfix:postfix "$_pl_dir/maillog"
    {
        cat <<PFEOF
compatibility_level = 3.6
mail_owner = postfix
queue_directory = $_pl_dir/queue
data_directory = $_pl_dir/data
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
local_recipient_maps =
alias_maps =
alias_database =
maillog_file = $_pl_dir/maillog
maillog_file_prefixes = $_pl_dir
PFEOF
        cat
    } >"$_pl_dir/etc/main.cf"
    cat >"$_pl_dir/etc/master.cf" <<PFEOF
$2
pickup    unix  n - n 60 1 pickup
cleanup   unix  n - n -  0 cleanup
qmgr      unix  n - n 300 1 qmgr
rewrite   unix  - - n -  - trivial-rewrite
bounce    unix  - - n -  0 bounce
defer     unix  - - n -  0 bounce
trace     unix  - - n -  0 bounce
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n -  - proxymap
showq     unix  n - n -  - showq
error     unix  - - n -  - error
retry     unix  - - n -  - error
discard   unix  - - n -  - discard
smtp      unix  - - n -  - smtp
relay     unix  - - n -  - smtp
anvil     unix  - - n -  1 anvil
scache    unix  - - n -  1 scache
tlsmgr    unix  - - n 1000? 1 tlsmgr
postlog   unix-dgram n - n - 1 postlogd
PFEOF
    postfix -c "$_pl_dir/etc" start >"$_pl_dir/start.out" 2>&1 || return 1
    _pl_dirs="$_pl_dirs $_pl_dir"
}

postfix_stop() {
    postfix -c "$1/etc" stop >/dev/null 2>&1
    _pl_i=0
    while [ $_pl_i -lt 100 ] && _pl_in_use "$1"; do
        _pl_i=$((_pl_i + 1))
        sleep 0.1
    done
}

_pl_cleanup() {
    for _pl_p in $pids; do kill "$_pl_p" 2>/dev/null; done
    for _pl_p in $pids; do wait "$_pl_p" 2>/dev/null; done
    pids=
    for _pl_d in $_pl_dirs; do postfix_stop "$_pl_d"; done
    _dl_cleanup
}
trap _pl_cleanup EXIT
