#!/usr/bin/env bash
# Bad input, framing: inside a CONNECT tunnel (TLS) and on the plain-HTTP absolute-form path, every ambiguous or
# malformed framing (CL+TE, duplicate/malformed Content-Length, Transfer-Encoding other than chunked, bad chunk
# sizes, obs-fold, NUL/CR/LF in values, bare LF, space before colon, HTTP versions other than 1.0/1.1) gets its
# exact refusal status with a JSON reason and an audit line, nothing complete reaches the upstream, and after each
# one a normal request from another client still succeeds. A lower-case method is a valid token judged by policy.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
RAW=$(dirname "$(readlink -f "$0")")/rawclient.py
UPLOG=$T/up.jsonl

pki_init
spawn "$T/up.log" "$PY" "$RAW" upstream --listen "$UPADDR:443:tls" --listen "$UPADDR:80" \
  --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$UPLOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "python upstream did not start: $(tail -n 3 "$T/up.log")"
gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
  other.example.test:
    allow_private: true
    rules:
      - allow: { method: GET }
YAML
gw_start

# rc ARGS: rawclient through the explicit proxy (clean env, bounded)
rc() { $CLEAN timeout 30 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 10 "$@"; }
# check_json MSG JQ OUT: the body (OUT minus its status line) is JSON satisfying JQ
check_json() {
  local b; b=$(printf '%s\n' "$3" | sed 1d)
  if printf '%s\n' "$b" | jq -e "$2" >/dev/null 2>&1; then ok "$1"; else bad "$1 (body [$(printf '%s' "$b" | head -c 300)])"; fi
}
up_saw() { grep -F "\"target\": \"$1\"" "$UPLOG" 2>/dev/null; }
alive_check() { # a normal request from another client still succeeds
  check_eq "  and then a normal request from another client succeeds" "up 0" "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
}

# refuse MODE TAG STATUS WHERE HEADERS [BODY]: sends "POST <target> HTTP/1.1\r\nHost: ..\r\n" + HEADERS + "\r\n" +
# BODY (escaped strings) and expects STATUS with a JSON reason, one audit line with that status, and nothing
# reaching the upstream: WHERE=head (not even the head) or body (no complete body).
n=0
refuse() {
  local mode=$1 tag=$2 want=$3 where=$4 hdrs=$5 body=${6:-} path out code before
  n=$((n + 1)); path=/f/$mode-$n
  before=$(audit_n ".status == $want")
  if [ "$mode" = tls ]; then
    out=$(rc --connect api.example.test:443 --send "POST $path HTTP/1.1\r\nHost: api.example.test\r\n$hdrs\r\n$body")
  else
    out=$(rc --send "POST http://api.example.test$path HTTP/1.1\r\nHost: api.example.test\r\n$hdrs\r\n$body")
  fi
  code=$(printf '%s\n' "$out" | head -n 1)
  check_eq "$mode: $tag -> $want" "$want" "$code"
  check_json "  with a JSON body: error \"bad request\" and a reason" '.error == "bad request" and (.reason | length > 0)' "$out"
  check "  and one audit line with status $want" eventually 5 test "$(audit_n ".status == $want")" -eq $((before + 1))
  if [ "$where" = head ]; then
    check_eq "  and the upstream saw nothing of it" "" "$(up_saw "$path")"
  else
    check_nomatch "  and the upstream saw no complete body" '"complete": true' "$(up_saw "$path")"
  fi
  alive_check
}

for mode in tls plain; do
  refuse $mode "Content-Length with Transfer-Encoding" 400 head 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n' '5\r\nhello\r\n0\r\n\r\n'
  refuse $mode "Transfer-Encoding with Content-Length" 400 head 'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n' '5\r\nhello\r\n0\r\n\r\n'
  refuse $mode "duplicate Content-Length, same value" 400 head 'Content-Length: 5\r\nContent-Length: 5\r\n' 'hello'
  refuse $mode "duplicate Content-Length, different values" 400 head 'Content-Length: 5\r\nContent-Length: 6\r\n' 'hello!'
  refuse $mode "Content-Length: 5, 6" 400 head 'Content-Length: 5, 6\r\n' 'hello!'
  refuse $mode "Content-Length: 5, 5" 400 head 'Content-Length: 5, 5\r\n' 'hello'
  refuse $mode "Content-Length: +5" 400 head 'Content-Length: +5\r\n' 'hello'
  refuse $mode "Content-Length: (empty)" 400 head 'Content-Length: \r\n' 'hello'
  refuse $mode "Content-Length: -1" 400 head 'Content-Length: -1\r\n' 'hello'
  refuse $mode "Content-Length: 0x5" 400 head 'Content-Length: 0x5\r\n' 'hello'
  refuse $mode "Content-Length: 5a" 400 head 'Content-Length: 5a\r\n' 'hello'
  refuse $mode "Content-Length: 99999999999999999999" 400 head 'Content-Length: 99999999999999999999\r\n' 'hello'
  refuse $mode "Transfer-Encoding: gzip, chunked" 501 head 'Transfer-Encoding: gzip, chunked\r\n' '5\r\nhello\r\n0\r\n\r\n'
  refuse $mode "Transfer-Encoding: gzip" 501 head 'Transfer-Encoding: gzip\r\n' 'hello'
  refuse $mode "Transfer-Encoding: chunked twice (two fields)" 400 head 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n' '5\r\nhello\r\n0\r\n\r\n'
  # one field listing chunked twice is "a Transfer-Encoding other than chunked": 501 as documented
  refuse $mode "Transfer-Encoding: chunked, chunked" 501 head 'Transfer-Encoding: chunked, chunked\r\n' '5\r\nhello\r\n0\r\n\r\n'
  refuse $mode "chunk size zz" 400 body 'Transfer-Encoding: chunked\r\n' 'zz\r\nhello\r\n0\r\n\r\n'
  refuse $mode "chunk size -1" 400 body 'Transfer-Encoding: chunked\r\n' '-1\r\nhello\r\n0\r\n\r\n'
  refuse $mode "chunk size 0x10" 400 body 'Transfer-Encoding: chunked\r\n' '0x10\r\n0123456789abcdef\r\n0\r\n\r\n'
  refuse $mode "chunk size with a leading space" 400 body 'Transfer-Encoding: chunked\r\n' ' 5\r\nhello\r\n0\r\n\r\n'
  refuse $mode "chunk size overflowing 64 bits (20 hex digits)" 400 body 'Transfer-Encoding: chunked\r\n' '10000000000000000005\r\nhello\r\n0\r\n\r\n'
  refuse $mode "chunk data longer than its size" 400 body 'Transfer-Encoding: chunked\r\n' '3\r\nhello\r\n0\r\n\r\n'
  refuse $mode "chunk size after a valid chunk is bad" 400 body 'Transfer-Encoding: chunked\r\n' '5\r\nhello\r\nzz\r\n0\r\n\r\n'
  refuse $mode "obs-fold" 400 head 'X-A: a\r\n b\r\n'
  refuse $mode "obs-fold with a tab" 400 head 'X-A: a\r\n\tb\r\n'
  refuse $mode "NUL in a header value" 400 head 'X-A: a\x00b\r\n'
  refuse $mode "bare CR in a header value" 400 head 'X-A: a\rb\r\n'
  refuse $mode "bare LF in a header value" 400 head 'X-A: a\nX-B: b\r\n'
  refuse $mode "control byte 0x01 in a header value" 400 head 'X-A: a\x01b\r\n'
  refuse $mode "space before the colon" 400 head 'X-A : b\r\n'
  refuse $mode "header line without a colon" 400 head 'X-A b\r\n'
  refuse $mode "empty header name" 400 head ': b\r\n'
  refuse $mode "second Host header" 400 head 'Host: api.example.test\r\n'
done

# whole-head variants that the helper above cannot express
head_refusal() { # MODE TAG STATUS BYTES (escaped; the whole request)
  local mode=$1 tag=$2 want=$3 bytes=$4 out code before
  before=$(audit_n ".status == $want")
  if [ "$mode" = tls ]; then out=$(rc --connect api.example.test:443 --send "$bytes"); else out=$(rc --send "$bytes"); fi
  code=$(printf '%s\n' "$out" | head -n 1)
  check_eq "$mode: $tag -> $want" "$want" "$code"
  check_json "  with a JSON body: error \"bad request\" and a reason" '.error == "bad request" and (.reason | length > 0)' "$out"
  check "  and one audit line with status $want" eventually 5 test "$(audit_n ".status == $want")" -eq $((before + 1))
  alive_check
}
for mode in tls plain; do
  if [ $mode = tls ]; then tg=/f/v; else tg=http://api.example.test/f/v; fi
  head_refusal $mode "bare LF line endings" 400 "GET $tg-lf HTTP/1.1\nHost: api.example.test\n\n"
  head_refusal $mode "bare LF ending the request line only" 400 "GET $tg-lf2 HTTP/1.1\nHost: api.example.test\r\n\r\n"
  head_refusal $mode "HTTP/2.0 version" 505 "GET $tg-20 HTTP/2.0\r\nHost: api.example.test\r\n\r\n"
  head_refusal $mode "HTTP/1.2 version" 505 "GET $tg-12 HTTP/1.2\r\nHost: api.example.test\r\n\r\n"
  head_refusal $mode "HTTP/3.0 version" 505 "GET $tg-30 HTTP/3.0\r\nHost: api.example.test\r\n\r\n"
  head_refusal $mode "lower-case protocol name (http/1.1)" 400 "GET $tg-lc http/1.1\r\nHost: api.example.test\r\n\r\n"
  head_refusal $mode "two spaces in the request line" 400 "GET  $tg-sp HTTP/1.1\r\nHost: api.example.test\r\n\r\n"
  check_eq "$mode: none of the bad heads reached the upstream" "" "$(grep -F '/f/v-' "$UPLOG" 2>/dev/null)"
done

# a lower-case method is a valid token: not refused as malformed, judged by policy as a method distinct from GET
out=$(rc --connect api.example.test:443 --send 'get /f/lower HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n')
check_eq "tls: lower-case method on a host without rules is forwarded" "200" "$(printf '%s\n' "$out" | head -n 1)"
check_match "  and the upstream saw the method as sent (get)" '"method": "get"' "$(up_saw /f/lower)"
out=$(rc --connect other.example.test:443 --send 'get /f/lower2 HTTP/1.1\r\nHost: other.example.test\r\nConnection: close\r\n\r\n')
check_eq "tls: lower-case 'get' is not GET for a rule allowing GET (403)" "403" "$(printf '%s\n' "$out" | head -n 1)"
check_match "  with the policy's JSON refusal" '"error":"denied by policy"' "$out"
check_eq "  and nothing reached the upstream" "" "$(up_saw /f/lower2)"
out=$(rc --send 'get http://other.example.test/f/lower3 HTTP/1.1\r\nHost: other.example.test\r\nConnection: close\r\n\r\n')
check_eq "plain: lower-case 'get' is not GET for a rule allowing GET (403)" "403" "$(printf '%s\n' "$out" | head -n 1)"

# a valid chunked body and a valid Content-Length body still pass whole (the refusals above are not blanket)
out=$(rc --connect api.example.test:443 --send 'POST /f/good-chunked HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n')
check_eq "tls: a valid chunked body (with an extension) passes" "$(printf '200\nup 11')" "$out"
check_match "  and the upstream read it whole (the last chunk was forwarded)" '"complete": true, "len": 11' "$(up_saw /f/good-chunked)"
out=$(rc --connect api.example.test:443 --send 'POST /f/good-chunked2 HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n' --send '5\r\nhello\r\n' --send '0\r\n\r\n' --delay 0.3)
check_eq "tls: a valid chunked body sent in three writes passes" "$(printf '200\nup 5')" "$out"
out=$(rc --send 'POST http://api.example.test/f/good-chunked3 HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n')
check_eq "plain: a valid chunked body with a trailer passes" "$(printf '200\nup 3')" "$out"
out=$(rc --send 'POST http://api.example.test/f/good-cl HTTP/1.1\r\nHost: api.example.test\r\nContent-Length:  5 \r\nConnection: close\r\n\r\nhello')
check_eq "plain: Content-Length with surrounding spaces passes" "$(printf '200\nup 5')" "$out"

gw_final_checks
finish
