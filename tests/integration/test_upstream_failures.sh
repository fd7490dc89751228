#!/usr/bin/env bash
# Bad input from the upstream side: a self-signed, a wrong-name and an expired certificate (each 502 with
# "upstream certificate rejected: <openssl text>", nothing sent to it), an upstream closing mid-body (the client
# sees a truncated transfer, curl exit 18, and the audit line records it), connection refused (502), and an upstream
# that accepts TCP but never answers the TLS handshake (504 after limits.upstream_connect). After each failure a
# normal request from another client still succeeds, and the gateway stays up.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
RAW=$(dirname "$(readlink -f "$0")")/rawclient.py
PCURL_OPTS=--http1.1  # a truncated body is curl exit 18 in HTTP/1.1 (an h2 stream reset is exit 92)

pki_init
nginx_start

# (a) self-signed for the right name; (b) signed by the trusted root for another name; (c) expired, right name
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj "/CN=www.example.test" \
  -addext "subjectAltName=DNS:www.example.test" -keyout "$PKI/self.key" -out "$PKI/self.pem" >/dev/null 2>&1 \
  || die "pki: self-signed"
pki_server wrong "DNS:wrong.example.org"
mkdir -p "$PKI/expca"
: >"$PKI/expca/index.txt"
echo 1000 >"$PKI/expca/serial"
cat >"$PKI/expca/ca.cnf" <<CNF
[ ca ]
default_ca = d
[ d ]
dir = $PKI/expca
database = \$dir/index.txt
new_certs_dir = \$dir
serial = \$dir/serial
default_md = sha256
policy = p
unique_subject = no
[ p ]
commonName = supplied
CNF
printf 'subjectAltName=DNS:www.example.test\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$PKI/exp.ext"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=www.example.test" \
  -keyout "$PKI/exp.key" -out "$PKI/exp.csr" >/dev/null 2>&1 || die "pki: expired csr"
openssl ca -batch -config "$PKI/expca/ca.cnf" -cert "$PKI/root.pem" -keyfile "$PKI/root.key" -in "$PKI/exp.csr" \
  -out "$PKI/exp.pem" -startdate 20200101000000Z -enddate 20200102000000Z -extfile "$PKI/exp.ext" -notext \
  >"$PKI/expca/out" 2>&1 || die "pki: expired cert: $(tail -n 3 "$PKI/expca/out")"
check_eq "the expired test certificate is issued by the test root" "$(openssl x509 -in "$UPCA" -noout -subject | sed 's/^subject/issuer/')" \
  "$(openssl x509 -in "$PKI/exp.pem" -noout -issuer)"
check_match "and its only fault is its age" 'error 10 at 0 depth lookup: certificate has expired' \
  "$(openssl verify -CAfile "$UPCA" "$PKI/exp.pem" 2>&1)"

P_SELF=$(freeport) P_WRONG=$(freeport) P_EXP=$(freeport) P_GOOD=$(freeport) P_REFUSED=$(freeport) P_STALL=$(freeport)
up() { # NAME PORT CERT KEY [--stall]
  local n=$1 p=$2 c=$3 k=$4
  if [ "${5:-}" = --stall ]; then
    spawn "$T/up-$n.log" "$PY" "$RAW" upstream --stall "$UPADDR:$p" --log "$T/up-$n.jsonl"
  else
    spawn "$T/up-$n.log" "$PY" "$RAW" upstream --listen "$UPADDR:$p:tls" --cert "$c" --key "$k" --log "$T/up-$n.jsonl"
  fi
  eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$p '" || die "upstream $n did not start: $(tail -n 3 "$T/up-$n.log")"
}
up self "$P_SELF" "$PKI/self.pem" "$PKI/self.key"
up wrong "$P_WRONG" "$PKI/wrong.pem" "$PKI/wrong.key"
up exp "$P_EXP" "$PKI/exp.pem" "$PKI/exp.key"
up good "$P_GOOD" "$PKI/srv.pem" "$PKI/srv.key"
up stall "$P_STALL" - - --stall

GW_EXTRA="limits: { upstream_connect: 2s }"
gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
  www.example.test:
    allow_private: true
    ports: [$P_SELF, $P_WRONG, $P_EXP, $P_GOOD, $P_REFUSED, $P_STALL]
YAML
gw_start

alive_check() {
  check_eq "  and then a normal request from another client succeeds" hello "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
}
# fails NAME PORT STATUS REASON_ERE: GET /t-NAME through the gateway answers STATUS, JSON error "upstream failed" with a
# reason matching REASON_ERE; one audit line for the request with that status; nothing reached the upstream
fails() {
  local n=$1 p=$2 want=$3 re=$4 code body
  code=$(pcurl -o "$T/body-$n" -w '%{http_code}' "https://www.example.test:$p/t-$n")
  body=$(cat "$T/body-$n" 2>/dev/null)
  check_eq "$n: answered $want" "$want" "$code"
  check "  with a JSON body: error \"upstream failed\"" jq -e '.error == "upstream failed"' "$T/body-$n"
  check_match "  and a reason matching /$re/" "$re" "$(jq -r .reason "$T/body-$n" 2>/dev/null)"
  check "  and an audit line for /t-$n with status $want" audit_wait ".path == \"/t-$n\" and .status == $want and .verdict == \"allow\""
  check_eq "  and no request reached that upstream" "" "$(cat "$T/up-$n.jsonl" 2>/dev/null)"
  alive_check
}

check_eq "the good upstream on the same host answers" "up 0" "$(pcurl "https://www.example.test:$P_GOOD/t-good")"
fails self "$P_SELF" 502 '^upstream certificate rejected: .*self[- ]signed certificate'
fails wrong "$P_WRONG" 502 '^upstream certificate rejected: .*(hostname mismatch|does not match)'
fails exp "$P_EXP" 502 '^upstream certificate rejected: .*certificate has expired'
fails refused "$P_REFUSED" 502 '[Cc]onnection refused|refused'
fails stall "$P_STALL" 504 'limits\.upstream_connect'

# (d) an upstream that closes mid-body: Content-Length 100000, 10 bytes, close
# (the race between relaying the last bytes and the upstream's close is retried a few times on purpose)
got=
for i in 1 2 3 4 5; do
  rm -f "$T/mid.body"
  pcurl -o "$T/mid.body" "https://www.example.test:$P_GOOD/close-mid" 2>/dev/null; rc=$?
  got="$got $rc:$(cat "$T/mid.body" 2>/dev/null)"
done
check_eq "close-mid (5 tries): the client sees a truncated transfer (curl exit 18) with the 10 bytes sent" \
  " 18:0123456789 18:0123456789 18:0123456789 18:0123456789 18:0123456789" "$got"
check "  and the audit line records the early close" \
  audit_wait '.path == "/close-mid" and .status == 200 and .bytes_down == 10 and (.reason // "" | test("closed"))'
alive_check
out=$($CLEAN timeout 30 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 10 --end \
  --connect "www.example.test:$P_GOOD" --send "GET /close-mid HTTP/1.1\r\nHost: www.example.test:$P_GOOD\r\n\r\n")
check_eq "close-mid: the gateway closes the client connection after the 10 bytes (no keep-alive on a broken body)" \
  "$(printf '200\n0123456789\nend: eof')" "$out"

# (e) slow peers, memory bounded: an upload toward an upstream that stopped reading, and a 256 MiB answer the client
# reads at 1 KiB/s. The gateway stops reading the fast side at its buffer bounds, so its RSS barely moves.
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$GWPID/status"; }
RSS_MAX=32; ldd "$SLUICE" 2>/dev/null | grep -q libasan && RSS_MAX=128
rss0=$(rss)
head -c $((256 << 20)) /dev/zero | pcurl -o /dev/null --max-time 6 -T - "https://www.example.test:$P_GOOD/stall-body" \
  >/dev/null 2>&1 &
up_pid=$!
pcurl -o /dev/null --max-time 6 --limit-rate 1k "https://www.example.test:$P_GOOD/flood" >/dev/null 2>&1 &
down_pid=$!
sleep 4
rss1=$(rss)
wait "$up_pid" "$down_pid"
check "slow upload and unread download at once: the gateway's RSS grew by less than $RSS_MAX MiB (${rss0} kB -> ${rss1} kB)" \
  test "$((rss1 - rss0))" -lt $((RSS_MAX * 1024))
check "  the upload stalled rather than being buffered whole: the upstream's log has its head, no body" \
  sh -c "grep -q '\"target\": *\"/stall-body\"' '$T/up-good.jsonl' && ! grep -q '\"ev\": *\"body\".*stall-body' '$T/up-good.jsonl'"
alive_check

gw_final_checks
finish
