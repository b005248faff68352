# dovecot_auth.sh: a private Dovecot auth service on a Unix socket, for
# SMTP AUTH tests (sluice's dovecot back end, Postfix smtpd's SASL).
#
#	dovecot_auth_start DIR PASSWD_FILE
#
# starts `dovecot -F` with only its auth service, whose passdb is
# PASSWD_FILE (Dovecot's passwd-file format, user:{SCHEME}secret) and
# whose client socket is DIR/auth-client (mode 0666). Sets
# dovecot_auth_socket and dovecot_auth_pid (also added to $pids, which
# the caller's cleanup kills) and returns non-zero, with Dovecot's
# messages on stderr, if the socket does not appear in 10 s. Needs root
# (Dovecot drops to its own users) and the caller's wait_for.
dovecot_auth_start() {
    local dir=$1 passwd=$2
    mkdir -p "$dir/run" "$dir/state"
    chmod 755 "$dir"
    cat >"$dir/dovecot.conf" <<DVEOF
base_dir = $dir/run
state_dir = $dir/state
log_path = $dir/log
protocols = none
ssl = no
auth_mechanisms = plain login
disable_plaintext_auth = no
first_valid_uid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $passwd
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=$dir/home
}
service auth {
  unix_listener auth-client {
    path = $dir/auth-client
    mode = 0666
  }
}
DVEOF
    dovecot -c "$dir/dovecot.conf" -F 2>"$dir/err" &
    dovecot_auth_pid=$!
    pids="${pids:-} $dovecot_auth_pid"
    dovecot_auth_socket=$dir/auth-client
    wait_for 10 test -S "$dovecot_auth_socket" || {
        sed 's/^/#   /' "$dir/err" "$dir/log" >&2 2>/dev/null
        return 1
    }
}
