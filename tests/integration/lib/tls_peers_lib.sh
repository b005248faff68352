# tests/integration/lib/tls_peers_lib.sh: certificates and STARTTLS
# receivers for the tests of the SMTP client's TLS; sourced after tap.sh
# and daemon_lib.sh (it uses $tmp, $pids and wait_for), not run.
#
#   tls_cert NAME SANS        $ca/NAME.pem and $ca/NAME.key: a certificate
#                             of the test CA in $ca (lib/tls_ca.sh) for
#                             SANS ("DNS:a.test,IP:127.0.0.1")
#   tls_receiver NAME CERT [MODE [ADDR [PORT]]]
#                             lib/tls_receiver.py in MODE (default good)
#                             with $ca/CERT.pem and .key, storing into
#                             $tmp/NAME/, on ADDR (127.0.0.1) and PORT
#                             (one of its choosing); its port in $port_NAME

tls_cert() {
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$2" >"$ca/$1.ext"
    openssl req -newkey rsa:2048 -nodes -keyout "$ca/$1.key" -out "$ca/$1.csr" \
        -subj "/CN=$1" 2>/dev/null &&
        openssl x509 -req -in "$ca/$1.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
            -CAcreateserial -days 30 -extfile "$ca/$1.ext" -out "$ca/$1.pem" 2>/dev/null
}

tls_receiver() {
    /usr/bin/python3 tests/integration/lib/tls_receiver.py "$tmp/$1" "${3:-good}" \
        "$ca/$2.pem" "$ca/$2.key" ${4:+"$4"} ${5:+"$5"} 2>"$tmp/$1.err" &
    pids="$pids $!"
    wait_for 10 test -f "$tmp/$1/port" || { not_ok "receiver $1 starts"; tap_done; }
    eval "port_$1=\$(cat \"\$tmp/\$1/port\")"
}
