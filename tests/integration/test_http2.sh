#!/usr/bin/env bash
# HTTP/2 from the client (issue 4, in progress; on by default, off with listen.http2: false): ALPN h2 through the
# explicit proxy, each stream judged on its own (an allowed and a denied stream on one connection), uploads with and without content-length, a
# 1 MiB download, 60 parallel streams, the audit line's http_version "2", a secret injected and scrubbed over h2, and
# the attacks, with a raw h2 client (h2client.py): CR/LF/NUL, connection-specific fields, Upgrade: h2c, uppercase
# names, a space in :path, content-length vs DATA, :authority vs host vs SNI (421), rapid reset (GOAWAY
# ENHANCE_YOUR_CALM, no upstream fan-out), CONTINUATION flood, HPACK bomb, SETTINGS and PING floods.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
nginx_start
# an echo upstream (other.example.test) for secrets over h2; the value is random per run and never printed
export SLUICE_IT_H2TOK="h2v_$(head -c 64 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 32)"
TOK_PH="sluice_ph_h2$ID$(head -c 64 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 20)"
EP=$(freeport)
spawn "$T/echo.log" env ECHO_MASK_TOK="$SLUICE_IT_H2TOK" ECHO_MASK_PH="$TOK_PH" \
  "$PY" "$HERE/echo_upstream.py" --listen "$UPADDR:$EP:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$T/echo.jsonl"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$EP '" || die "echo upstream did not start: $(tail -n 3 "$T/echo.log")"
policy_base 'allow: { method: [GET, POST], path: "/ok/**" }' 'allow: { method: GET, path: "/big" }' <<YAML | gw_conf
  other.example.test:
    allow_private: true
    ports: [$EP]
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
# ---------------------------------------------------------------- a secret over h2: injected, scrubbed, audited
pcurl --http2 -s -D "$T/h2inj.hdr" -o "$T/h2inj.body" -H "Authorization: Bearer $TOK_PH" "https://other.example.test:$EP/e/h2-inj"
check_eq "secret over h2: the upstream received the real value" '"Bearer {{TOK}}"' \
  "$(jq -c 'select(.ev=="head" and .path=="/e/h2-inj") | .auth' "$T/echo.jsonl" | tail -n 1)"
check "  the echoed body is scrubbed back to the placeholder" grep -qF "auth=[Bearer $TOK_PH]" "$T/h2inj.body"
check "  the echoed header too (x-echo-auth)" grep -qiF "x-echo-auth: Bearer $TOK_PH" "$T/h2inj.hdr"
check "  audit: http_version 2, secret tok at header:authorization, scrubbed" audit_wait \
  '.path=="/e/h2-inj" and .http_version=="2" and any(.secrets[]?; .name=="tok") and any(.scrubbed[]?; .=="tok")'
r=$(pcurl --http2 -s -o /dev/null -w '%{http_code}' -H "X-Note: $TOK_PH" "https://other.example.test:$EP/e/h2-ex")
check_eq "  the placeholder in an unbound header over h2: 403" 403 "$r"
check_eq "  and nothing reached the upstream" "" "$(jq -c 'select(.path=="/e/h2-ex")' "$T/echo.jsonl")"

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

# listen.http2: false offers only http/1.1
GW_HTTP2=false
policy_base </dev/null | gw_conf
gw_start
check_eq "listen.http2: false: curl --http2 gets HTTP/1.1" "1.1 200" \
  "$(pcurl --http2 -w '%{http_version} %{http_code}' -o /dev/null https://api.example.test/ok/off)"
gw_stop
finish
