#!/usr/bin/env bash
# Bad input, volume: limits.conns_per_client: 5 -> the 6th concurrent connection from one client address gets a 429
# JSON naming the limit on the explicit listener (closed on the transparent one), while another client address is
# still served, and the slots come back when the connections close; limits.header_count: 20 -> 20 header fields
# pass, 21 get a 431 naming the limit. After each refusal a normal request still succeeds; the gateway stays up.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
RAW=$(dirname "$(readlink -f "$0")")/rawclient.py

pki_init
nginx_start
netns_make c
netns_redirect
GW_EXTRA="limits: { conns_per_client: 5, header_count: 20 }"
gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
YAML
gw_start

rc() { $CLEAN timeout 40 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 15 "$@"; }
GET='GET /ok/x HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n'
check_json() {
  local b; b=$(printf '%s\n' "$3" | sed 1d)
  if printf '%s\n' "$b" | jq -e "$2" >/dev/null 2>&1; then ok "$1"; else bad "$1 (body [$(printf '%s' "$b" | head -c 300)])"; fi
}
alive_check() {
  check_eq "  and then a normal request succeeds" hello "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
}

# conns_per_client, explicit listener
for round in 1 2; do
  out=$(rc --hold 5 --connect api.example.test:443 --send "$GET")
  check_eq "round $round: with 5 tunnels open from 127.0.0.1, a 6th connection gets 429" 429 "$(printf '%s\n' "$out" | head -n 1)"
  check_json "  with a JSON body naming limits.conns_per_client" \
    '.error == "too many connections" and ((.rule + " " + .reason) | contains("limits.conns_per_client"))' "$out"
  out=$(rc --hold 5 --hold-source 127.0.0.1 --source 127.0.0.2 --connect api.example.test:443 --send "$GET")
  check_eq "round $round: meanwhile another client (127.0.0.2) is served" "$(printf '200\nhello')" "$out"
  alive_check
done
check "the refusals have audit lines naming the limit" audit_wait '.rule == "limits.conns_per_client" and .status == 429'
out=$(rc --hold 4 --connect api.example.test:443 --send "$GET")
check_eq "with 4 open, the 5th connection is still served (exact limit; refused ones took no slot)" "$(printf '200\nhello')" "$out"

# conns_per_client, transparent listener: the 6th is closed (no HTTP can be spoken before TLS)
nsrc() { ns_exec timeout 40 "$PY" "$RAW" --direct "$NS_HOST:443" --tls --sni api.example.test --cafile "$CA/ca.pem" --timeout 15 "$@"; }
out=$(nsrc --hold 5 --send "$GET" 2>/dev/null); rc=$?
check_eq "transparent: with 5 open from the sandbox, the 6th connection is closed at the handshake" "000 3" "$out $rc"
check "  with an audit line naming the limit" audit_wait '.rule == "limits.conns_per_client" and .sandbox == "'"$NS_ADDR"'"'
check_eq "  while the explicit client is still served" hello "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
check_eq "transparent: once they closed, the sandbox is served again" "$(printf '200\nhello')" "$(nsrc --send "$GET")"

# header_count: 20
hdrs() { local i s=''; for i in $(seq 1 "$1"); do s="${s}X-H$i: v\\r\\n"; done; printf '%s' "$s"; }
for mode in tls plain; do
  if [ $mode = tls ]; then tg=/ok/hc conn=(--connect api.example.test:443); else tg=http://api.example.test/ok/hc conn=(); fi
  out=$(rc "${conn[@]}" --send "GET $tg HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n$(hdrs 18)\r\n")
  check_eq "$mode: 20 header fields (the limit) are accepted" "$(printf '200\nhello')" "$out"
  out=$(rc "${conn[@]}" --send "GET $tg HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n$(hdrs 19)\r\n")
  check_eq "$mode: 21 header fields -> 431" 431 "$(printf '%s\n' "$out" | head -n 1)"
  check_json "  with a JSON body naming limits.header_count" '(.rule + " " + .reason) | contains("limits.header_count")' "$out"
  check "  and an audit line with status 431" audit_wait '.status == 431'
  alive_check
done

gw_final_checks
finish
