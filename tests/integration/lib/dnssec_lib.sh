# tests/integration/lib/dnssec_lib.sh: a real validating resolver on
# loopback for the DNSSEC and DANE tests (../shared/TESTING-PEERS.md);
# sourced after tap.sh and daemon_lib.sh (it uses $tmp, $pids, free_port
# and wait_for), not run.
#
#   dnssec_zone NAME MODE         a zone NAME (a name under .test) served
#                                 by the test's authoritative server.
#                                 MODE secure: signed, its key a trust
#                                 anchor of the resolver (answers come
#                                 with AD); insecure: not signed, and
#                                 domain-insecure in the resolver (no
#                                 AD); bogus: signed with signatures
#                                 that expired in 2020, its key a trust
#                                 anchor (the resolver answers SERVFAIL)
#   dnssec_record NAME LINE       add a record, in zone file form, to
#                                 zone NAME: "mx 300 IN A 127.0.0.1",
#                                 "@ 300 IN MX 10 mx",
#                                 "_25._tcp.mx 300 IN TLSA 3 1 1 ABCD..."
#                                 (owners relative to the zone, or
#                                 absolute with a final dot). The SOA and
#                                 NS records are added by dnssec_start
#   dnssec_tlsa_rdata CERT [USAGE SELECTOR MTYPE]
#                                 prints the TLSA data "3 1 1 <hex>" for
#                                 the PEM certificate CERT (default 3 1 1:
#                                 DANE-EE, the SubjectPublicKeyInfo,
#                                 SHA-256; selector 0 is the whole
#                                 certificate, mtype 0 the data itself, 2
#                                 SHA-512), with the openssl command
#   dnssec_start                  signs the secure and bogus zones
#                                 (ldns-keygen, ldns-signzone), starts
#                                 unbound as the authoritative server of
#                                 every zone (auth-zone) and a second
#                                 unbound as the validating resolver that
#                                 reaches them through stub zones; sets
#                                 $dnssec_servers ("127.0.0.1:PORT", the
#                                 form of dns_servers) and $dnssec_port;
#                                 $dnssec_auth_servers is the
#                                 authoritative server (it sets no AD).
#                                 Fails (status 1, the reason in
#                                 $tmp/dnssec/why) unless the resolver
#                                 answers within 10 s
#   dnssec_stop                   stops both servers by their PIDs (the
#                                 exit trap of daemon_lib.sh does it too)
#
# For a DANE test, say:
#
#   . tests/integration/lib/dnssec_lib.sh
#   dnssec_zone dane.test secure
#   dnssec_record dane.test "@ 300 IN MX 10 mx"
#   dnssec_record dane.test "mx 300 IN A 127.0.0.1"
#   rdata=$(dnssec_tlsa_rdata "$certs/server.pem")
#   dnssec_record dane.test "_$port._tcp.mx 300 IN TLSA $rdata"
#   dnssec_start || { sed 's/^/#   /' "$dnssec_dir/why"; ... }
#   ... dns_servers = $dnssec_servers in sluice.conf
#
# Zones are made once, before dnssec_start; to change one, add records
# and call dnssec_stop and dnssec_start again (the keys are new each
# time). BUILD/tools/dnsq -s "$dnssec_servers" tlsa mx.dane.test 25
# shows what sluice's resolver makes of it.
#
# Everything lives in $tmp/dnssec; both servers run as the current user,
# in the foreground (by PID), without chroot, remote control, syslog or
# any file of /etc/unbound (no root key, no automatic trust anchor), on
# 127.0.0.1 only; names outside the test zones are refused, so nothing
# is ever asked of a server elsewhere. Names are lower case. Zones are kept in the order made.
# Names used inside start with _ds_.

dnssec_dir=$tmp/dnssec
dnssec_zones=
dnssec_servers=
dnssec_port=
dnssec_auth_servers=
_ds_pids=

dnssec_zone() {
    mkdir -p "$dnssec_dir/zones"
    : >"$dnssec_dir/zones/$1.records"
    echo "$2" >"$dnssec_dir/zones/$1.mode"
    dnssec_zones="$dnssec_zones $1"
}

dnssec_record() {
    echo "$2" >>"$dnssec_dir/zones/$1.records"
}

dnssec_tlsa_rdata() {
    _ds_u=${2:-3}
    _ds_s=${3:-1}
    _ds_m=${4:-1}
    if [ "$_ds_s" = 0 ]; then
        openssl x509 -in "$1" -outform DER
    else
        openssl x509 -in "$1" -noout -pubkey | openssl pkey -pubin -outform DER
    fi >"$dnssec_dir.der" || return 1
    case $_ds_m in
    0) _ds_hex=$(od -An -v -tx1 "$dnssec_dir.der" | tr -d ' \n') ;;
    1) _ds_hex=$(openssl dgst -sha256 -r "$dnssec_dir.der" | cut -d' ' -f1) ;;
    2) _ds_hex=$(openssl dgst -sha512 -r "$dnssec_dir.der" | cut -d' ' -f1) ;;
    *) return 1 ;;
    esac
    rm -f "$dnssec_dir.der"
    echo "$_ds_u $_ds_s $_ds_m $_ds_hex"
}

# _ds_sign ZONE MODE: ZONE's file, signed unless insecure, into auth/.
_ds_sign() {
    _ds_z=$1
    _ds_in=$dnssec_dir/zones/$_ds_z.zone
    {
        echo "\$ORIGIN $_ds_z."
        echo "\$TTL 300"
        echo "@ 300 IN SOA ns.$_ds_z. hostmaster.$_ds_z. 1 1200 120 604800 60"
        echo "@ 300 IN NS ns.$_ds_z."
        echo "ns 300 IN A 127.0.0.1"
        cat "$dnssec_dir/zones/$_ds_z.records"
    } >"$_ds_in"
    if [ "$2" = insecure ]; then
        cp "$_ds_in" "$dnssec_dir/auth/$_ds_z.zone"
        return 0
    fi
    (
        cd "$dnssec_dir/keys" &&
            _ds_key=$(ldns-keygen -a ECDSAP256SHA256 -k "$_ds_z") &&
            if [ "$2" = bogus ]; then
                ldns-signzone -i 20200101000000 -e 20200201000000 \
                    -f "$dnssec_dir/auth/$_ds_z.zone" "$_ds_in" "$_ds_key"
            else
                ldns-signzone -f "$dnssec_dir/auth/$_ds_z.zone" "$_ds_in" \
                    "$_ds_key"
            fi &&
            cat "$_ds_key.ds" >>"$dnssec_dir/anchors" &&
            _ds_generic_tlsa "$dnssec_dir/auth/$_ds_z.zone"
    )
}

# ldns-signzone writes a TLSA record with less than its three fields
# ("TLSA 3 1") in a form unbound does not read back: rewrite those in
# the generic form of RFC 3597 ("TYPE52 \# 2 0301"), the same data.
_ds_generic_tlsa() {
    awk '$4 == "TLSA" && NF < 7 {
        hex = ""
        for (i = 5; i <= NF; i++) hex = hex sprintf("%02x", $i)
        print $1 "\t" $2 "\t" $3 "\tTYPE52\t\\# " (NF - 4) " " hex
        next
    } { print }' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

# _ds_conf NAME PORT: the common head of an unbound configuration.
_ds_conf() {
    cat <<_DS_EOF
server:
    interface: 127.0.0.1
    port: $2
    do-ip6: no
    do-daemonize: no
    username: ""
    chroot: ""
    directory: "$dnssec_dir"
    pidfile: "$dnssec_dir/$1.pid"
    logfile: "$dnssec_dir/$1.log"
    use-syslog: no
    verbosity: 1
    num-threads: 1
    so-reuseport: no
    access-control: 127.0.0.0/8 allow
    do-not-query-localhost: no
    local-zone: "." refuse
remote-control:
    control-enable: no
_DS_EOF
}

_ds_answers() {
    dig +time=1 +tries=1 @127.0.0.1 -p "$1" "$2" SOA 2>/dev/null |
        grep -q 'status: '
}

dnssec_start() {
    rm -rf "$dnssec_dir/auth" "$dnssec_dir/keys" "$dnssec_dir/anchors"
    mkdir -p "$dnssec_dir/auth" "$dnssec_dir/keys"
    : >"$dnssec_dir/anchors"
    : >"$dnssec_dir/why"
    for _ds_z in $dnssec_zones; do
        if ! _ds_sign "$_ds_z" "$(cat "$dnssec_dir/zones/$_ds_z.mode")" \
            >>"$dnssec_dir/why" 2>&1; then
            echo "cannot sign zone $_ds_z" >>"$dnssec_dir/why"
            return 1
        fi
    done
    _ds_aport=$(free_port)
    dnssec_port=$(free_port)
    dnssec_servers=127.0.0.1:$dnssec_port
    dnssec_auth_servers=127.0.0.1:$_ds_aport
    {
        _ds_conf auth "$_ds_aport"
        for _ds_z in $dnssec_zones; do
            printf 'server:\n    local-zone: "%s." transparent\n' "$_ds_z"
            printf 'auth-zone:\n    name: "%s."\n' "$_ds_z"
            printf '    zonefile: "%s/auth/%s.zone"\n' "$dnssec_dir" "$_ds_z"
            printf '    for-downstream: yes\n    for-upstream: no\n'
        done
    } >"$dnssec_dir/auth.conf"
    {
        _ds_conf resolver "$dnssec_port"
        cat <<_DS_EOF
server:
    module-config: "validator iterator"
    val-permissive-mode: no
    trust-anchor-file: "$dnssec_dir/anchors"
    harden-dnssec-stripped: yes
    qname-minimisation: no
    val-log-level: 2
_DS_EOF
        for _ds_z in $dnssec_zones; do
            printf '    local-zone: "%s." transparent\n' "$_ds_z"
            [ "$(cat "$dnssec_dir/zones/$_ds_z.mode")" = insecure ] &&
                printf '    domain-insecure: "%s."\n' "$_ds_z"
        done
        for _ds_z in $dnssec_zones; do
            printf 'stub-zone:\n    name: "%s."\n' "$_ds_z"
            printf '    stub-addr: 127.0.0.1@%s\n' "$_ds_aport"
        done
    } >"$dnssec_dir/resolver.conf"
    for _ds_n in auth resolver; do
        if ! unbound-checkconf "$dnssec_dir/$_ds_n.conf" \
            >>"$dnssec_dir/why" 2>&1; then
            echo "unbound-checkconf refuses $_ds_n.conf" >>"$dnssec_dir/why"
            return 1
        fi
        unbound -d -c "$dnssec_dir/$_ds_n.conf" \
            >>"$dnssec_dir/$_ds_n.out" 2>&1 &
        _ds_pids="$_ds_pids $!"
        pids="$pids $!"
    done
    _ds_first=${dnssec_zones# }
    _ds_first=${_ds_first%% *}
    if ! wait_for 10 _ds_answers "$_ds_aport" "$_ds_first" ||
        ! wait_for 10 _ds_answers "$dnssec_port" "$_ds_first"; then
        echo "unbound does not answer for $_ds_first" >>"$dnssec_dir/why"
        cat "$dnssec_dir"/*.out "$dnssec_dir"/*.log >>"$dnssec_dir/why" \
            2>/dev/null
        return 1
    fi
    return 0
}

dnssec_stop() {
    for _ds_p in $_ds_pids; do kill "$_ds_p" 2>/dev/null; done
    for _ds_p in $_ds_pids; do wait "$_ds_p" 2>/dev/null; done
    _ds_pids=
}
