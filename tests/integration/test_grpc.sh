#!/usr/bin/env bash
# gRPC through the gateway (issue 4, item 4), with Debian's python3-grpcio on both sides (grpc_peer.py; raw-byte
# messages, no protoc). The server is TLS on $UPADDR:$GP (the test PKI's srv cert); the client dials
# "api.example.test:$GP" trusting only the gateway's CA, through the explicit proxy (channel arg grpc.http_proxy), and
# sends metadata x-api-key: <placeholder> of a secret bound to api.example.test at header:x-api-key.
# First, the same client straight to the server (no gateway): the harness itself works, so later failures are the
# gateway's. Then through the gateway: a unary call (the server got the real value, the client sees only the
# placeholder), a server-streaming call of 50 messages in order with trailing metadata x-done: yes, Echo (the value in
# the reply payload and in the x-echo trailer both come back as the placeholder), a method denied by policy (answered
# as gRPC, issue 24: PERMISSION_DENIED with the rule and reason in the details), the placeholder sent to a host the
# secret is not bound to (refused the same way, the server never sees it, audited as exfiltration_attempt), and a
# rate limit (RESOURCE_EXHAUSTED with the retry time); the audit lines carry http_version "2". At the end, no file
# of the run holds the real value. The value is random per run and never printed: client output is masked ({{TOK}}).
# The value (38 bytes) and the placeholder (40) differ in length on purpose: a gRPC message carries a 5-byte length
# prefix, so scrubbing the value out of a reply payload has to re-frame the message, not just replace bytes.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
PEER=$HERE/grpc_peer.py GLOG=$T/grpc.jsonl

"$PY" -c 'import grpc' >/dev/null 2>&1 || die "python3-grpcio is missing (scripts/deps.sh test installs it)"

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
SLUICE_IT_GRPCTOK="grpcv_$(rnd 32)"
export SLUICE_IT_GRPCTOK
[ ${#SLUICE_IT_GRPCTOK} -eq 38 ] || die "setup: the secret's value was not made"
TOK_PH="sluice_ph_grpc$ID$(rnd 20)"
# every client output goes through mask: the real value is shown as {{TOK}}, never printed
mask() { sed "s/$SLUICE_IT_GRPCTOK/{{TOK}}/g"; }

pki_init
GP=$(freeport)
spawn "$T/grpc-server.log" env GRPC_MASK_TOK="$SLUICE_IT_GRPCTOK" GRPC_MASK_PH="$TOK_PH" \
  "$PY" "$PEER" server "$UPADDR" "$GP" "$PKI/srv.pem" "$PKI/srv.key" "$GLOG"
wait_listen "$GP" 10 || die "gRPC server did not start: $(tail -n 3 "$T/grpc-server.log")"

NC=0
# gc HOST CALL ARGS...: one call through the gateway; gd CALL ARGS...: straight to the server (no gateway)
gc() {
  local h=$1; shift; NC=$((NC + 1))
  $CLEAN timeout 40 "$PY" "$PEER" client "$h:$GP" "$CA/ca.pem" "$@" --proxy "http://127.0.0.1:$PP" \
    2>"$T/client.$NC.err" | mask
}
gd() {
  NC=$((NC + 1))
  $CLEAN timeout 40 "$PY" "$PEER" client "$UPADDR:$GP" "$UPCA" "$@" --name api.example.test 2>"$T/client.$NC.err" | mask
}
# seen METHOD MSG: what the server logged for that call ("key=..." with the value masked), empty if it never came
seen() { jq -r --arg m "$1" --arg g "$2" 'select(.method==$m and .msg==$g) | "key=\(.key)"' "$GLOG" 2>/dev/null; }

# ---------------------------------------------------------------- the harness alone, no gateway
check_eq "direct (no gateway): unary" "status OK
reply key=[$TOK_PH] msg=[direct-unary]" "$(gd unary direct-unary --key "$TOK_PH")"
check_eq "direct (no gateway): server streaming, 5 messages and the trailer" "status OK
items 5 in-order
trailer x-done=yes" "$(gd stream 5)"
check_eq "direct (no gateway): Echo, reply and trailer" "status OK
reply echo=[$TOK_PH]
trailer x-echo=$TOK_PH" "$(gd echo direct-echo --key "$TOK_PH")"
check_eq "direct: the server logged the unary call (placeholder masked as {{PH}})" "key={{PH}}" "$(seen Unary direct-unary)"

# ---------------------------------------------------------------- the gateway
# shellcheck disable=SC2034  # read by gw_conf (lib.sh)
GW_RESOLVE="limited.example.test: $UPADDR"
gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
    ports: [$GP]
    rules:
      - deny: { method: POST, path: "/sluice.Test/Denied", id: grpc-denied }
      - allow: { method: POST, path: "/sluice.Test/**", id: grpc-ok }
  other.example.test:
    allow_private: true
    ports: [$GP]
    rules:
      - allow: { method: POST, path: "/sluice.Test/**", id: grpc-other }
  limited.example.test:
    allow_private: true
    ports: [$GP]
    rules:
      - allow: { method: POST, path: "/sluice.Test/**", id: grpc-limited, limit: { rate: 1/hour, per: global, name: "grpc-$ID" } }
secrets:
  tok:
    source: env:SLUICE_IT_GRPCTOK
    placeholder: "$TOK_PH"
    hosts: [api.example.test]
    inject: [header:x-api-key]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
YAML
gw_start

# unary: the server gets the real value; the reply (which quotes it) comes back with the placeholder
out=$(gc api.example.test unary hello-unary --key "$TOK_PH")
check_eq "unary through the gateway: OK, reply with the placeholder (scrubbed)" "status OK
reply key=[$TOK_PH] msg=[hello-unary]" "$out"
check_eq "  the server received the real value in x-api-key" "key={{TOK}}" "$(seen Unary hello-unary)"
check "  audit: POST /sluice.Test/Unary, http_version 2, 200, secret tok at header:x-api-key" audit_wait \
  '.path=="/sluice.Test/Unary" and .method=="POST" and .http_version=="2" and .status==200
   and any(.secrets[]?; .name=="tok" and ((.place // "") | ascii_downcase)=="header:x-api-key")'

# server streaming: 50 messages in order, then trailing metadata
out=$(gc api.example.test stream 50 --key "$TOK_PH")
check_eq "server streaming through the gateway: 50 messages in order, trailer x-done: yes" "status OK
items 50 in-order
trailer x-done=yes" "$out"
check_eq "  the server received the real value" "key={{TOK}}" "$(seen Stream 50)"
check "  audit: POST /sluice.Test/Stream, http_version 2, 200" audit_wait \
  '.path=="/sluice.Test/Stream" and .http_version=="2" and .status==200'

# Echo: the value is in the reply payload and in a trailer; both must come back as the placeholder
out=$(gc api.example.test echo gw-echo --key "$TOK_PH")
check_eq "Echo through the gateway: payload and x-echo trailer carry the placeholder" "status OK
reply echo=[$TOK_PH]
trailer x-echo=$TOK_PH" "$out"
check_nomatch "  the client never sees the real value" '\{\{TOK\}\}' "$out"
check_eq "  the server received the real value" "key={{TOK}}" "$(seen Echo gw-echo)"
check "  audit: POST /sluice.Test/Echo, http_version 2, 200, tok scrubbed" audit_wait \
  '.path=="/sluice.Test/Echo" and .http_version=="2" and .status==200 and any(.scrubbed[]?; .=="tok")'

# a method denied by policy: answered as gRPC (issue 24), trailers-only with grpc-status 7 PERMISSION_DENIED and
# the rule and reason in grpc-message (percent-encoded; the client decodes it), not an HTTP 403 the client can
# only report as "Received http2 header with status: 403"
out=$(gc api.example.test denied --key "$TOK_PH")
check_eq "a method denied by policy: PERMISSION_DENIED, the rule and the reason in the details" "status PERMISSION_DENIED
details denied by policy: rule grpc-denied: denied by rule" "$out"
check_eq "  the server never saw it" "" "$(jq -c 'select(.method=="Denied")' "$GLOG" 2>/dev/null)"
check "  audit: POST /sluice.Test/Denied, http_version 2, 403, rule grpc-denied" audit_wait \
  '.path=="/sluice.Test/Denied" and .http_version=="2" and .status==403 and .rule=="grpc-denied"'

# the placeholder toward a host the secret is not bound to: refused (PERMISSION_DENIED, saying why), never forwarded
out=$(gc other.example.test unary unbound-host --key "$TOK_PH")
check_eq "the placeholder toward other.example.test (not bound): PERMISSION_DENIED, rule secrets and why" "status PERMISSION_DENIED
details exfiltration attempt: rule secrets: placeholder of secret 'tok' in header:x-api-key: the host is not bound to the secret" "$out"
check_eq "  the server never saw that call" "" "$(seen Unary unbound-host)"
check "  audit: exfiltration_attempt, secret tok, host other.example.test" audit_wait \
  '.type=="exfiltration_attempt" and .secret=="tok" and .host=="other.example.test"'

# a rate limit: the first call passes, the second is RESOURCE_EXHAUSTED (not an HTTP 429) with the limit and when it
# resets in the details
check_eq "under a 1/hour limit: the first call is OK" "status OK
reply key=[] msg=[lim1]" "$(gc limited.example.test unary lim1)"
out=$(gc limited.example.test unary lim2)
check_match "  the second: RESOURCE_EXHAUSTED, the rule, the limit and its retry time in the details" \
  "^status RESOURCE_EXHAUSTED
details rate limited: rule grpc-limited: rate limit limit:grpc-$ID \\(1/hour, global\\) is exhausted: resets in [0-9]+ s" "$out"
check_eq "  the server never saw the second" "" "$(seen Unary lim2)"
check "  audit: 429, rule grpc-limited, http_version 2" audit_wait \
  '.host=="limited.example.test" and .http_version=="2" and .status==429 and .rule=="grpc-limited"'

# the gateway is still fine for a plain call afterwards
check_eq "a unary call without the secret still works after the refusals" "status OK
reply key=[] msg=[after]" "$(gc api.example.test unary after)"

gw_stop
check_eq "the gateway stopped cleanly" 0 "$GW_RC"
hits=""
for f in "$T"/* "$GWLOG"; do [ -f "$f" ] && grep -qF -- "$SLUICE_IT_GRPCTOK" "$f" && hits="$hits $(basename "$f")"; done
check_eq "no file of the run holds the real value" "" "$hits"
finish
