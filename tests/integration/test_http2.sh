#!/usr/bin/env bash
# HTTP/2 from the client (issue 4, in progress; on by default, off with listen.http2: false): ALPN h2 through the
# explicit proxy, each stream judged on its own (an allowed and a denied stream on one connection), uploads with and without content-length, a
# 1 MiB download, 60 parallel streams, the audit line's http_version "2", a secret injected and scrubbed over h2, and
# trailers both ways (trailer_upstream.py: exact trailer bytes; to h2 and HTTP/1.1 clients, scrubbed when a secret
# was injected, malformed ones never passed on; an h2 client's request trailers reach the upstream), and
# the attacks, with a raw h2 client (h2client.py): CR/LF/NUL, connection-specific fields, Upgrade: h2c, uppercase
# names, a space in :path, content-length vs DATA, :authority vs host vs SNI (421), rapid reset (GOAWAY
# ENHANCE_YOUR_CALM, no upstream fan-out), CONTINUATION flood, HPACK bomb, SETTINGS and PING floods; and per-stream flow
# control (one stream stalled at its window beside others that complete; the zero-window stall is in test_h2_flow.sh,
# with short limits).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
NGINX_H2=1 nginx_start  # api.example.test speaks h2: h2 clients stay h2 end to end
# an echo upstream (other.example.test) for secrets over h2; the value is random per run and never printed
export SLUICE_IT_H2TOK="h2v_$(head -c 64 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 32)"
TOK_PH="sluice_ph_h2$ID$(head -c 64 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 20)"
EP=$(freeport) EP2=$(freeport)
spawn "$T/echo.log" env ECHO_MASK_TOK="$SLUICE_IT_H2TOK" ECHO_MASK_PH="$TOK_PH" \
  "$PY" "$HERE/echo_upstream.py" --listen "$UPADDR:$EP:tls" --listen "$UPADDR:$EP2:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$T/echo.jsonl"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$EP '" || die "echo upstream did not start: $(tail -n 3 "$T/echo.log")"
# a chunked upstream with exact trailers, that also logs the request's trailers
TRP=$(freeport)
spawn "$T/trl.log" env ECHO_MASK_TOK="$SLUICE_IT_H2TOK" \
  "$PY" "$HERE/trailer_upstream.py" --listen "$UPADDR:$TRP:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$T/trl.jsonl"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$TRP '" || die "trailer upstream did not start: $(tail -n 3 "$T/trl.log")"
# a WebSocket echo upstream (HTTP/1.1 upgrade) for WebSocket over HTTP/2
WSP=$(freeport)
spawn "$T/wsup.log" env ECHO_MASK_TOK="$SLUICE_IT_H2TOK" ECHO_MASK_PH="$TOK_PH" \
  "$PY" "$HERE/ws_upstream.py" --listen "$UPADDR:$WSP:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$T/wsup.jsonl"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$WSP '" || die "ws upstream did not start: $(tail -n 3 "$T/wsup.log")"
policy_base 'allow: { method: [GET, POST], path: "/ok/**" }' 'allow: { method: GET, path: "/big" }' <<YAML | gw_conf
  other.example.test:
    allow_private: true
    ports: [$EP, $EP2, $TRP, $WSP]
    rules:
      - allow: { method: [GET, POST, PUT] }
secrets:
  tok:
    source: env:SLUICE_IT_H2TOK
    placeholder: "$TOK_PH"
    hosts: [other.example.test]
    inject: [header:Authorization]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
YAML
gw_start
sha() { sha256sum "$1" | cut -d' ' -f1; }

out=$(pcurl --http2 -w '%{http_version} %{http_code}\n' -o /dev/null https://api.example.test/ok/h2a)
check_eq "curl --http2: ALPN h2 toward the gateway, 200" "2 200" "$out"
check "audit: http_version 2" audit_wait '.path=="/ok/h2a" and .http_version=="2" and .status==200'
out=$(pcurl --http1.1 -w '%{http_version} %{http_code}\n' -o /dev/null https://api.example.test/ok/h11)
check_eq "curl --http1.1: still HTTP/1.1" "1.1 200" "$out"

# two streams on one connection: one allowed, one denied by policy (403 on its stream only)
out=$(pcurl --http2 -w '%{http_code} %{num_connects}\n' -o /dev/null -o /dev/null \
  https://api.example.test/ok/s1 https://api.example.test/denied/s2)
check_eq "two streams on one connection: 200 and 403" "200 1
403 0" "$out"
check "audit: the denied stream is its own request line" audit_wait '.path=="/denied/s2" and .status==403 and .http_version=="2"'
body=$(pcurl --http2 -s https://api.example.test/denied/s3)
check "a denied stream's body is the JSON refusal" sh -c "printf '%s' '$body' | jq -e '.error==\"denied by policy\"'"

# uploads to an upstream that reads them (the echo): with content-length, and without (chunked toward it)
head -c 300000 /dev/urandom >"$T/up"
pcurl --http2 -s -o /dev/null --data-binary "@$T/up" -H 'Content-Type: application/octet-stream' \
  "https://other.example.test:$EP/e/h2-up-cl"
check_eq "POST 300000 bytes over h2 with content-length: the upstream got them all" '300000 true' \
  "$(jq -r 'select(.ev=="done" and .target=="/e/h2-up-cl") | "\(.body_len) \(.complete)"' "$T/echo.jsonl")"
cat "$T/up" | pcurl --http2 -s -o /dev/null -T - -X POST "https://other.example.test:$EP/e/h2-up-nocl"
check_eq "POST over h2 without content-length (chunked toward the upstream): all 300000 bytes" '300000 true' \
  "$(jq -r 'select(.ev=="done" and .target=="/e/h2-up-nocl") | "\(.body_len) \(.complete)"' "$T/echo.jsonl")"

# a 1 MiB download, byte for byte
pcurl --http2 -s -o "$T/big.h2" https://api.example.test/big
check_eq "1 MiB over h2: byte-identical" "$(sha "$WWW/big")" "$(sha "$T/big.h2")"

# many streams at once
out=$(pcurl --http2 --parallel --parallel-max 50 -s -w '%{http_code}\n' \
  $(for i in $(seq 1 60); do printf -- '-o /dev/null https://api.example.test/ok/p%s ' "$i"; done) | sort | uniq -c | tr -s ' ')
check_eq "60 parallel streams: all 200" " 60 200" "$out"
# small POSTs that nginx answers before reading them: the small rest is let in, never a RST_STREAM curl calls an error
out=$(for i in $(seq 1 20); do pcurl --http2 -s -o /dev/null -w '%{http_code}\n' -X POST -d a=b \
  "https://api.example.test/ok/race$i"; done | sort | uniq -c | tr -s ' ')
check_eq "20 small POSTs answered early: all 200 for curl (no error 92)" " 20 200" "$out"
# per-stream flow control toward the client (h2client.py flow): stream A (/big) is never given more window than the
# initial 65535 while the connection's window is wide open; B, C, D (/ok/) on the same connection complete
# promptly anyway and A does not move; then A's window opens and A completes byte for byte
H2F() { $CLEAN timeout 60 /usr/bin/python3 "$HERE/h2client.py" "$PP" "$CA/ca.pem" api.example.test flow "$@" 2>&1 | tail -n 1; }
r=$(H2F /big /ok/fb /ok/fc /ok/fd)
check_match "flow control: A stalls at exactly its window, B C D complete, A resumes and completes" \
  '^A 200 stalled 65535 \| B 200 C 200 D 200 in [0-9.]+ \| A\+ 65535 after [0-9.]+ \| A done 1048576 [0-9a-f]{64}$' "$r"
s=$(printf '%s' "$r" | sed -n 's/.* D 200 in \([0-9.]*\) |.*/\1/p')
check "  B, C and D completed in under 3 s while A was stalled (got ${s:-?} s)" \
  awk -v s="$s" 'BEGIN { exit !(s != "" && s + 0 < 3) }'
check_eq "  A's body is byte-identical (sha256)" "$(sha "$WWW/big")" "${r##* }"

# ---------------------------------------------------------------- a secret over h2: injected, scrubbed, audited
# (a port not contacted before: the gateway answers h2 until it learns the host speaks HTTP/1.1 only)
pcurl --http2 -s -D "$T/h2inj.hdr" -o "$T/h2inj.body" -H "Authorization: Bearer $TOK_PH" "https://other.example.test:$EP2/e/h2-inj"
check_eq "secret over h2: the upstream received the real value" '"Bearer {{TOK}}"' \
  "$(jq -c 'select(.ev=="head" and .path=="/e/h2-inj") | .auth' "$T/echo.jsonl" | tail -n 1)"
check "  the echoed body is scrubbed back to the placeholder" grep -qF "auth=[Bearer $TOK_PH]" "$T/h2inj.body"
check "  the echoed header too (x-echo-auth)" grep -qiF "x-echo-auth: Bearer $TOK_PH" "$T/h2inj.hdr"
check "  audit: http_version 2, secret tok at header:authorization, scrubbed" audit_wait \
  '.path=="/e/h2-inj" and .http_version=="2" and any(.secrets[]?; .name=="tok") and any(.scrubbed[]?; .=="tok")'
r=$(pcurl --http2 -s -o /dev/null -w '%{http_code}' -H "X-Note: $TOK_PH" "https://other.example.test:$EP/e/h2-ex")
check_eq "  the placeholder in an unbound header over h2: 403" 403 "$r"
check_eq "  and nothing reached the upstream" "" "$(jq -c 'select(.path=="/e/h2-ex")' "$T/echo.jsonl")"

# ---------------------------------------------------------------- trailers (trailer_upstream.py)
TRL="other.example.test:$TRP"
H2T() { $CLEAN timeout 40 /usr/bin/python3 "$HERE/h2client.py" "$PP" "$CA/ca.pem" "$TRL" "$@" 2>&1 | tail -n 1; }
check_eq "trailers: an h2 client gets the response's trailers as a trailing HEADERS" \
  "status 200 body 12 trailers x-t=tval;x-sum=42" "$(H2T trailers /t/plain)"
check_eq "  none sent: none received" "status 200 body 12 trailers -" "$(H2T trailers /t/none)"
pcurl --http1.1 --raw -o "$T/tr11" "https://$TRL/t/plain"
printf '6\r\nhello \r\n6\r\nworld\n\r\n0\r\nX-T: tval\r\nX-Sum: 42\r\n\r\n' >"$T/tr11.exp"
check "trailers: an HTTP/1.1 client gets them after the last chunk, byte for byte" cmp "$T/tr11" "$T/tr11.exp"
out=$(pcurl --http1.0 -i "https://$TRL/t/plain" | tr -d '\r')
check_match "trailers: an HTTP/1.0 client gets the body until close" 'hello world$' "$out"
check_nomatch "  and no trailers (nothing can carry them)" 'tval|X-Sum' "$out"
# a secret injected: the upstream echoes it in a trailer, which comes back as the placeholder
check_eq "trailers, secret injected, h2 client: the echo in a trailer is scrubbed to the placeholder" \
  "status 200 body 12 trailers x-t=tval;x-echo-auth=Bearer $TOK_PH" \
  "$(H2T trailers /t/auth "[[\"authorization\", \"Bearer $TOK_PH\"]]")"
pcurl --http1.1 --raw -o "$T/tr11s" -H "Authorization: Bearer $TOK_PH" "https://$TRL/t/auth"
printf '0\r\nX-T: tval\r\nX-Echo-Auth: Bearer %s\r\n\r\n' "$TOK_PH" >"$T/tr11s.exp"
check_eq "trailers, secret injected, HTTP/1.1 client: the last chunk's trailers are scrubbed" \
  "$(cat "$T/tr11s.exp")" "$(tail -c "$(wc -c <"$T/tr11s.exp")" "$T/tr11s")"
check_eq "  (the upstream did receive the real value, both times)" '"Bearer {{TOK}}" "Bearer {{TOK}}"' \
  "$(jq -c 'select(.path=="/t/auth") | .auth' "$T/trl.jsonl" | tr '\n' ' ' | sed 's/ $//')"
check "  audit: scrubbed" audit_wait '.path=="/t/auth" and any(.scrubbed[]?; .=="tok")'
check_eq "  audit: two scrubbed /t/auth lines" 2 \
  "$(audit_view | jq -c 'select(.type=="request" and .path=="/t/auth" and any(.scrubbed[]?; .=="tok"))' | wc -l)"
# malformed trailers from the upstream: the response fails, nothing passes on
check_eq "malformed upstream trailer (a space in the name), h2 client: the stream is reset (INTERNAL_ERROR)" \
  "reset 2" "$(H2T trailers /t/bad)"
check_eq "  obs-fold in a trailer, h2 client: reset" "reset 2" "$(H2T trailers /t/fold)"
rc=0; pcurl --http1.1 --raw -o "$T/tr11b" "https://$TRL/t/bad" 2>/dev/null || rc=$?
check_match "  HTTP/1.1 client: the body is cut (curl fails)" '^(18|56|92)$' "$rc"
check_eq "  and no trailer section or last chunk reached it" "" "$(grep -a -e 'bad name' -e '^0' "$T/tr11b" | tr -d '\r')"
# an h2 client's request trailers, with secrets declared: the body is held and sent with a length (dropped)
check_eq "request trailers while secrets are declared (body held, sent with a length): dropped" \
  "status 200 body 12 trailers x-req-trailers=none" "$(H2T post_trailers /t/req '[["x-r", "one"]]')"

# ---------------------------------------------------------------- WebSocket over HTTP/2 (RFC 8441 extended CONNECT)
H2W() { $CLEAN timeout 40 /usr/bin/python3 "$HERE/h2client.py" "$PP" "$CA/ca.pem" "$1" ws "${@:2}" 2>&1 | tail -n 1; }
WSA="other.example.test:$WSP"
check_eq "WebSocket over h2: 200, echo of two text frames, END_STREAM ends it" \
  "status 200~text hello~text again~end" "$(H2W "$WSA" /ws-h2 hello again)"
check_eq "  the upstream got an HTTP/1.1 upgrade (Upgrade: websocket)" websocket \
  "$(jq -r 'select(.ev=="head" and .path=="/ws-h2") | .upgrade' "$T/wsup.jsonl")"
check_eq "WebSocket over h2, secret injected into the upgrade: the echoed value comes back as the placeholder" \
  "status 200~text auth=[Bearer $TOK_PH]~end" "$(H2W "$WSA" /ws-auth-h2 -H "authorization: Bearer $TOK_PH" auth)"
check_eq "  the upstream received the real value" '"Bearer {{TOK}}"' \
  "$(jq -c 'select(.ev=="head" and .path=="/ws-auth-h2") | .auth' "$T/wsup.jsonl")"
check_match "WebSocket over h2: a placeholder in a client frame closes it (close 1008)" '^status 200~close 1008~(end|reset [0-9]+)$' \
  "$(H2W "$WSA" /ws-h2-ex "my token is $TOK_PH, use it")"
check "  audit: exfiltration_attempt at place websocket" audit_wait \
  '.path=="/ws-h2-ex" and .type=="exfiltration_attempt" and .secret=="tok" and .place=="websocket"'
check_eq "  the upstream never received it" 0 "$(grep -c '{{PH}}' "$T/wsup.jsonl")"
check_eq "WebSocket over h2 denied by policy: 403 on the stream" "status 403" "$(H2W api.example.test /denied/ws hello)"
check_eq "WebSocket over h2, the upstream answers 200 instead of 101: 502" "status 502" \
  "$(H2W api.example.test /ok/ws hello)"
check_eq "WebSocket over h2, a 101 whose Sec-WebSocket-Accept does not answer our key: 502" "status 502" \
  "$(H2W "$TRL" /t/ws-bad hello)"

# ---------------------------------------------------------------- attacks (h2client.py: raw frames, unvalidated fields)
H2C() { $CLEAN timeout 40 /usr/bin/python3 "$HERE/h2client.py" "$PP" "$CA/ca.pem" api.example.test "$@" 2>&1 | tail -n 1; }
check_eq "h2client: a plain GET works" "status 200" "$(H2C get /ok/h2c)"
nginx_seen() { grep -c "$1" "$NGXLOG" 2>/dev/null || true; }
smuggle() {
  local what=$1 path=$2 fields=$3 r
  r=$(H2C headers "$path" "$fields")
  check_match "smuggling: $what: refused (PROTOCOL_ERROR reset or 400)" '^(reset 1|status 400|goaway 1)$' "$r"
  check_eq "  never written out as HTTP/1.1 (the upstream saw no $path)" 0 "$(nginx_seen "$path")"
}
smuggle "CR LF in a value" /ok/sm-crlf '[["x-a", "1\r\nx-injected: 1"]]'
smuggle "LF in a value" /ok/sm-lf '[["x-a", "1\nGET /x HTTP/1.1"]]'
smuggle "NUL in a value" /ok/sm-nul '[["x-a", "1\u0000z"]]'
smuggle "transfer-encoding" /ok/sm-te '[["transfer-encoding", "chunked"]]'
smuggle "connection" /ok/sm-conn '[["connection", "keep-alive"]]'
smuggle "Upgrade: h2c" /ok/sm-h2c '[["upgrade", "h2c"]]'
smuggle "an uppercase name" /ok/sm-upper '[["X-Upper", "1"]]'
r=$(H2C headers "/ok/sm space" '[]')
check_match "smuggling: a space in :path: refused" '^(reset 1|status 400)$' "$r"
r=$(H2C clmismatch /ok/sm-cl)
check_match "smuggling: content-length 10 with 5 bytes of DATA: refused" '^(reset 1|status 400|goaway 1)$' "$r"
check_eq "  the upstream saw no complete request for it" 0 "$(nginx_seen /ok/sm-cl)"
check_eq "an upstream that answers before reading the body: the answer, then RST_STREAM NO_ERROR (stop sending)" \
  "status 200 then reset 0" "$(H2C early /ok/early)"
check_eq ":authority and host that disagree: 421" "status 421" "$(H2C authority api.example.test other.example.test)"
check_eq ":authority that differs from the SNI: 421" "status 421" "$(H2C authority other.example.test -)"
r=$(H2C rapid_reset /ok/rr 3000)
check_match "rapid reset: 3000 HEADERS+RST_STREAM end in a GOAWAY (ENHANCE_YOUR_CALM 11)" '^goaway 11 ' "$r"
sleep 1
check_match "  no upstream request per reset stream (nginx saw few or none of them)" '^[0-9]{1,2}$' "$(nginx_seen /ok/rr)"
check_match "CONTINUATION flood: the connection ends (GOAWAY) or the stream is refused" '^(goaway [0-9]+|closed|reset [0-9]+)$' \
  "$(H2C continuation 2000)"
check_match "HPACK bomb (3 KB field referenced 5000 times): refused, bounded" '^(reset [0-9]+|goaway [0-9]+|closed)$' \
  "$(H2C hpack_bomb 5000)"
check_match "SETTINGS flood (20000, unread): the gateway ends the connection" '^(goaway [0-9]+|closed)$' \
  "$(H2C settings_flood 20000)"
check_match "PING flood (20000, unread): the gateway ends the connection" '^(goaway [0-9]+|closed)$' \
  "$(H2C ping_flood 20000)"
check_eq "after all that, a new h2 connection still works" "status 200" "$(H2C get /ok/after)"

gw_stop
check_eq "the gateway stopped cleanly" 0 "$GW_RC"
hits=""
for f in "$T"/* "$GWLOG"; do [ -f "$f" ] && grep -qF -- "$SLUICE_IT_H2TOK" "$f" && hits="$hits $(basename "$f")"; done
check_eq "no file of the run holds the real value" "" "$hits"

# request trailers need a policy without secrets (with secrets, request bodies are held and sent with a length)
policy_base </dev/null <<YAML | gw_conf
  other.example.test:
    allow_private: true
    ports: [$TRP]
    rules:
      - allow: { method: [GET, POST] }
YAML
gw_start
check_eq "request trailers of an h2 client reach the upstream (and its echo comes back as a trailer)" \
  "status 200 body 12 trailers x-req-trailers=x-r: one; x-s: two" \
  "$(H2T post_trailers /t/req '[["x-r", "one"], ["x-s", "two"]]')"
check_eq "  the upstream read them as the chunked body's trailer section" '3 ["x-r: one","x-s: two"]' \
  "$(jq -c 'select(.path=="/t/req") | "\(.body_len) \(.trailers)"' "$T/trl.jsonl" | tail -n 1 | jq -r .)"
check_eq "request trailers after a content-length body: dropped (HTTP/1.1 cannot carry them)" \
  "status 200 body 12 trailers x-req-trailers=none" "$(H2T post_trailers /t/req '[["x-r", "one"]]' cl)"
check_eq "request trailers with CR LF in a value: RST_STREAM PROTOCOL_ERROR" "reset 1" \
  "$(H2T post_trailers /t/rq-crlf '[["x-r", "1\r\nx-injected: 1"]]')"
check_eq "request trailers with content-length: reset" "reset 1" "$(H2T post_trailers /t/rq-cl '[["content-length", "3"]]')"
check_eq "request trailers with a pseudo-header: reset" "reset 1" "$(H2T post_trailers /t/rq-ps '[[":path", "/x"]]')"
check_eq "request trailers with an uppercase name: reset" "reset 1" "$(H2T post_trailers /t/rq-up '[["X-R", "1"]]')"
sleep 0.5
check_eq "  the upstream completed none of those requests" "" \
  "$(jq -c 'select(.path | startswith("/t/rq-"))' "$T/trl.jsonl")"
gw_stop
check_eq "the gateway stopped cleanly (request trailers)" 0 "$GW_RC"

# listen.http2: false offers only http/1.1
GW_HTTP2=false
policy_base </dev/null | gw_conf
gw_start
check_eq "listen.http2: false: curl --http2 gets HTTP/1.1" "1.1 200" \
  "$(pcurl --http2 -w '%{http_version} %{http_code}' -o /dev/null https://api.example.test/ok/off)"
gw_stop
finish
