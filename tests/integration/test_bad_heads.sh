#!/usr/bin/env bash
# Bad input, oversized heads: a 1 MiB header line and 10,000 headers (431), a request line over limits.request_line
# (414), on the TLS (CONNECT) and plain absolute-form paths, each with a JSON reason naming the limit and an audit
# line, nothing reaching the upstream; heads exactly at limits.header_bytes / limits.request_line pass and one byte
# more is refused; an upstream answering with a 1 MiB response header gives the client a 502. After each bad input
# a normal request from another client still succeeds, and the gateway stays up.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
RAW=$(dirname "$(readlink -f "$0")")/rawclient.py
UPLOG=$T/up.jsonl
PYP=8443   # python upstream (www.example.test) for exact-size heads and a misbehaving response

pki_init
nginx_start
spawn "$T/up.log" "$PY" "$RAW" upstream --listen "$UPADDR:$PYP:tls" --listen "$UPADDR:8080" \
  --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$UPLOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$PYP '" || die "python upstream did not start: $(tail -n 3 "$T/up.log")"
policy() {
  cat <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
  www.example.test:
    allow_private: true
    ports: [$PYP, 8080]
YAML
}
# short body/head timeouts: a gateway that stalls on a big head shows it as 504/408 within the client's deadline
GW_EXTRA="limits: { body: 5s, request_head: 5s }"
policy | gw_conf
gw_start

rc() { $CLEAN timeout 40 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 15 "$@"; }
check_json() {
  local b; b=$(printf '%s\n' "$3" | sed 1d)
  if printf '%s\n' "$b" | jq -e "$2" >/dev/null 2>&1; then ok "$1"; else bad "$1 (body [$(printf '%s' "$b" | head -c 300)])"; fi
}
alive_check() {
  check_eq "  and then a normal request from another client succeeds" hello "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
}
# mk FILE PYEXPR: writes the bytes of a python expression (b'...') to FILE
mk() { "$PY" -c "import sys; sys.stdout.buffer.write($2)" >"$1"; }

# refuse MODE TAG STATUS LIMIT FILE MARK: the request in FILE gets STATUS, a JSON reason naming LIMIT, one audit line
# with that status; MARK (a path) never reaches nginx
refuse() {
  local mode=$1 tag=$2 want=$3 limit=$4 file=$5 mark=$6 out before
  before=$(audit_n ".status == $want")
  if [ "$mode" = tls ]; then out=$(rc --connect api.example.test:443 --send "@$file"); else out=$(rc --send "@$file"); fi
  check_eq "$mode: $tag -> $want" "$want" "$(printf '%s\n' "$out" | head -n 1)"
  check_json "  with a JSON body: error \"bad request\"" '.error == "bad request"' "$out"
  check_json "  and the rule or reason naming $limit" "(.rule + \" \" + .reason) | contains(\"$limit\")" "$out"
  check "  and one audit line with status $want" eventually 5 test "$(audit_n ".status == $want")" -eq $((before + 1))
  check_eq "  and nothing reached the upstream" "" "$(grep -F "$mark" "$NGXLOG" 2>/dev/null)"
  alive_check
}

for mode in tls plain; do
  if [ $mode = tls ]; then tg=/hb/$mode; else tg=http://api.example.test/hb/$mode; fi
  mk "$T/big-$mode" "b'GET $tg-1m HTTP/1.1\r\nHost: api.example.test\r\nX-Big: ' + b'a' * (1 << 20) + b'\r\n\r\n'"
  refuse $mode "a 1 MiB header line" 431 limits.header_bytes "$T/big-$mode" /hb/$mode-1m
  mk "$T/many-$mode" "b'GET $tg-10k HTTP/1.1\r\nHost: api.example.test\r\n' + b''.join(b'X-H%d: v\r\n' % i for i in range(10000)) + b'\r\n'"
  refuse $mode "10,000 header fields" 431 limits.header_count "$T/many-$mode" /hb/$mode-10k
  mk "$T/manybig-$mode" "b'GET $tg-99 HTTP/1.1\r\nHost: api.example.test\r\n' + b''.join(b'X-H%d: %s\r\n' % (i, b'v' * 400) for i in range(99)) + b'\r\n'"
  refuse $mode "99 header fields of 400 bytes (under the count, over the bytes)" 431 limits.header_bytes "$T/manybig-$mode" /hb/$mode-99
  mk "$T/line-$mode" "b'GET $tg-rl/' + b'a' * 8300 + b' HTTP/1.1\r\nHost: api.example.test\r\n\r\n'"
  refuse $mode "a request line over 8 KiB" 414 limits.request_line "$T/line-$mode" /hb/$mode-rl
done

# response side: an upstream that answers with a 1 MiB header line
before=$(audit_n '.status == 502')
out=$(rc --connect "www.example.test:$PYP" --send "GET /bighead HTTP/1.1\r\nHost: www.example.test:$PYP\r\n\r\n")
check_eq "tls: an upstream response with a 1 MiB header -> 502" 502 "$(printf '%s\n' "$out" | head -n 1)"
check_json "  with a JSON body: error \"upstream failed\" and a reason" '.error == "upstream failed" and (.reason | length > 0)' "$out"
check "  and one audit line with status 502" eventually 5 test "$(audit_n '.status == 502')" -eq $((before + 1))
check_nomatch "  and none of the upstream's header reached the client" 'aaaaaaaa' "$out"
alive_check
out=$(rc --send "GET http://www.example.test:8080/bighead HTTP/1.1\r\nHost: www.example.test:8080\r\n\r\n")
check_eq "plain: an upstream response with a 1 MiB header -> 502" 502 "$(printf '%s\n' "$out" | head -n 1)"
alive_check
check "the gateway is still alive after the default-limit inputs" kill -0 "$GWPID"

# exact boundaries: restart with small limits
gw_stop
check_eq "the gateway stopped cleanly for the restart" 0 "$GW_RC"
check_nomatch "  and its log has no sanitizer report" 'Sanitizer|runtime error' "$(cat "$GWLOG")"
GW_EXTRA="limits: { header_bytes: 4096, request_line: 1024, body: 5s, request_head: 5s }"
policy | gw_conf
gw_start
# a head of exactly SIZE bytes (request line + headers + final CRLF) for TARGET
head_of() { # FILE SIZE TARGET HOST
  mk "$1" "(lambda p: p + b'X-Pad: ' + b'p' * ($2 - len(p) - 11) + b'\r\n\r\n')(b'GET $3 HTTP/1.1\r\nHost: $4\r\nConnection: close\r\n')"
}
line_of() { # FILE LINELEN PATHPREFIX HOST: a request line of exactly LINELEN bytes (without CRLF)
  mk "$1" "(lambda a, b: a + b'x' * ($2 - len(a) - len(b)) + b + b'\r\nHost: $4\r\nConnection: close\r\n\r\n')(b'GET $3', b' HTTP/1.1')"
}
for mode in tls plain; do
  if [ $mode = tls ]; then
    H=www.example.test:$PYP tg=/ex/$mode; conn=(--connect "$H")
  else
    H=www.example.test:8080 tg=http://www.example.test:8080/ex/$mode; conn=()
  fi
  head_of "$T/h4096" 4096 "$tg-4096" "$H"
  check_eq "$mode: the test head is 4096 bytes" 4096 "$(stat -c %s "$T/h4096")"
  check_eq "$mode: a head of exactly limits.header_bytes (4096) is accepted" "$(printf '200\nup 0')" "$(rc "${conn[@]}" --send "@$T/h4096")"
  check_match "  and reached the upstream" "/ex/$mode-4096" "$(cat "$UPLOG")"
  head_of "$T/h4097" 4097 "$tg-4097" "$H"
  out=$(rc "${conn[@]}" --send "@$T/h4097")
  check_eq "$mode: one byte more (4097) -> 431" 431 "$(printf '%s\n' "$out" | head -n 1)"
  check_json "  with the rule or reason naming limits.header_bytes" '(.rule + " " + .reason) | contains("limits.header_bytes")' "$out"
  check_nomatch "  and did not reach the upstream" "/ex/$mode-4097" "$(cat "$UPLOG")"
  alive_check
  line_of "$T/l1024" 1024 "$tg-1024/" "$H"
  check_eq "$mode: the test request line is 1024 bytes" 1024 "$(head -n 1 "$T/l1024" | tr -d '\r' | wc -c | awk '{print $1 - 1}')"
  check_eq "$mode: a request line of exactly limits.request_line (1024) is accepted" "$(printf '200\nup 0')" "$(rc "${conn[@]}" --send "@$T/l1024")"
  line_of "$T/l1025" 1025 "$tg-1025/" "$H"
  out=$(rc "${conn[@]}" --send "@$T/l1025")
  check_eq "$mode: one byte more (1025) -> 414" 414 "$(printf '%s\n' "$out" | head -n 1)"
  check_json "  with the rule or reason naming limits.request_line" '(.rule + " " + .reason) | contains("limits.request_line")' "$out"
  check_nomatch "  and did not reach the upstream" "/ex/$mode-1025" "$(cat "$UPLOG")"
  alive_check
done

check "the gateway is still alive after the small-limit inputs" kill -0 "$GWPID"

# a large configured limit (128 KiB, above the 64 KiB read watermark) is honoured exactly too
gw_stop
check_eq "the gateway stopped cleanly for the second restart" 0 "$GW_RC"
check_nomatch "  and its log has no sanitizer report" 'Sanitizer|runtime error' "$(cat "$GWLOG")"
GW_EXTRA="limits: { header_bytes: 131072, body: 5s, request_head: 5s }"
policy | gw_conf
gw_start
mk "$T/big-large" "b'GET /hb/large-1m HTTP/1.1\r\nHost: api.example.test\r\nX-Big: ' + b'a' * (1 << 20) + b'\r\n\r\n'"
refuse tls "header_bytes 131072: a 1 MiB header line" 431 limits.header_bytes "$T/big-large" /hb/large-1m
H=www.example.test:$PYP
head_of "$T/h131072" 131072 /ex/large-131072 "$H"
out=$(rc --connect "$H" --send "@$T/h131072")
check_eq "tls: a head of exactly limits.header_bytes (131072) is accepted" "$(printf '200\nup 0')" "${out:0:100}"
head_of "$T/h131073" 131073 /ex/large-131073 "$H"
check_eq "tls: one byte more (131073) -> 431" 431 "$(rc --connect "$H" --send "@$T/h131073" | head -n 1)"
alive_check

gw_final_checks
finish
