#!/usr/bin/env bash
# MCP responses: hidden tools stay hidden (issue 23, item 2) against mcp_upstream.py, over HTTP/1.1 and HTTP/2
# through the explicit proxy. A tools/list result in an application/json answer (Content-Length, chunked) and in
# the events of a text/event-stream answer (LF, CR-only line endings, one byte per TLS record, chunks cutting
# events anywhere) lists only the tools a rule could allow; the other events and the heartbeats pass byte for
# byte; a result whose id matches no request is filtered all the same; 10,000 tools are filtered; a 9 MiB JSON
# answer is refused (502) and audited; a 10 MiB event
# cuts the stream and is audited; the host's bound secret is still scrubbed from a filtered list; the response
# record says how many entries were removed. A JSON-RPC error with id null (not a message the strict reader takes)
# passes; a list result with a duplicate key is refused (502) in a body and cuts a stream; a "tools" key written
# with a \\u escape is filtered too. Secret values are random per run and never printed.
# The client's answers to the server's requests in those streams (sampling/createMessage, elicitation/create),
# POSTed on new connections: judged as answers to those methods (a rule allows sampling's, none elicitation's:
# 403), each taken once, never by another sandbox (127.0.0.3) nor under another Mcp-Session-Id; the audit names
# the answered method (mcp_answers).
# HTTP/2: the upstream speaks HTTP/1.1 only, and once the gateway knows that it offers the client http/1.1 for
# the host, so the "h2" pass runs its first request (json) over HTTP/2 and the rest over HTTP/1.1.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
ULOG=$T/up.jsonl OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

export MCPV="mcpv_$(head -c 64 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 28)"
PH="sluice_ph_mcp_$ID"

pki_init
spawn "$T/up.log" env STORED="$MCPV" "$PY" "$HERE/mcp_upstream.py" --listen "$UPADDR:443:tls" \
  --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$ULOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "upstream did not start: $(tail -n 3 "$T/up.log")"

cat <<YAML | gw_conf
default: deny
hosts:
  api.example.test:
    allow_private: true
    mcp: { endpoint: /mcp }
    rules:
      - id: lifecycle
        allow: { method: POST, path: /mcp, mcp: { method: [initialize, tools/list] } }
      - id: keep
        allow: { method: POST, path: /mcp, mcp: { tool: "keep_*" } }
      - id: no-drop
        deny: { method: POST, path: /mcp, mcp: { tool: "drop_*" } }
      - id: sampling
        allow: { method: POST, path: /mcp, mcp: { method: [sampling/createMessage] } }
secrets:
  v:
    source: env:MCPV
    placeholder: "$PH"
    hosts: [api.example.test]
    inject: [header:X-Key]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
  other:
    addresses: [127.0.0.3/32]
YAML
gw_start

LIST='{"jsonrpc":"2.0","id":41,"method":"tools/list"}'
N=0
post() { # VERSION MODE OUTFILE: POSTs tools/list to /mcp?m=MODE, prints "<http code> <exit>"
  local rc code
  code=$(pcurl --http"$1" -o "$3" -D "$3.h" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' --data-binary "$LIST" "https://api.example.test/mcp?m=$2" 2>/dev/null)
  rc=$?
  echo "$code $rc"
}
names() { jq -r '.result.tools[].name' "$1" 2>/dev/null | tr '\n' ' '; }
ev_names() { sed -n 's/^data: {/{/p' "$1" | tr -d '\r' | jq -r 'select(.result.tools) | .result.tools[].name' 2>/dev/null | tr '\n' ' '; }
no_value() { if grep -qF "$MCPV" "$2"; then bad "$1"; else ok "$1"; fi; }

for V in 1.1 2; do
  tag="h$V"
  for mode in json jsonch noid esc; do
    N=$((N + 1)); f=$T/r$N
    check_eq "$tag $mode: 200" "200 0" "$(post "$V" "$mode" "$f")"
    check_eq "$tag $mode: only the tools a rule allows are listed" "keep_a keep_b " "$(names "$f")"
    no_value "$tag $mode: the bound secret's value is not in the filtered list" "$f"
    check "$tag $mode: ... its placeholder is" grep -qF "$PH" "$f"
    check "$tag $mode: a Content-Length, the filtered body's" \
      grep -qiE "^content-length: $(stat -c %s "$f")"$'\r'"?\$" "$f.h"
  done
  check "audit: $tag the response records tools/list and 2 removed" audit_wait \
    ".path==\"/mcp\" and .mcp_method==\"tools/list\" and .removed==2"

  N=$((N + 1)); f=$T/r$N
  check_eq "$tag big: 10,000 tools: 200" "200 0" "$(post "$V" big "$f")"
  check_eq "$tag big: the 5,000 allowed remain" 5000 "$(jq '.result.tools | length' "$f")"
  check_eq "$tag big: none denied" 0 "$(jq '[.result.tools[].name | select(startswith("drop_"))] | length' "$f")"
  check "audit: $tag 5000 removed" audit_wait ".removed==5000"

  for mode in sse ssecr sse1; do
    N=$((N + 1)); f=$T/r$N
    check_eq "$tag $mode: 200" "200 0" "$(post "$V" "$mode" "$f")"
    if [ "$mode" = ssecr ]; then tr '\r' '\n' <"$f" >"$f.lf"; else tr -d '\r' <"$f" >"$f.lf"; fi
    check_eq "$tag $mode: the list event lists only the allowed tools" "keep_a keep_b " "$(ev_names "$f.lf")"
    check_eq "$tag $mode: both heartbeats pass" 2 "$(grep -c '^: ping' "$f.lf")"
    check "$tag $mode: the non-JSON event passes as it was" grep -qx 'data: not json at all' "$f.lf"
    check "$tag $mode: the list event keeps its id and event lines" grep -qx 'id: 7' "$f.lf"
    check "$tag $mode: the tools/call result passes" grep -qF '"text": "hi"' "$f.lf"
    check "$tag $mode: the server's request passes" grep -qF 'sampling/createMessage' "$f.lf"
    no_value "$tag $mode: the bound secret's value is not in the stream" "$f"
    check "$tag $mode: ... its placeholder is" grep -qF "$PH" "$f"
    if [ "$mode" = ssecr ]; then
      check_eq "$tag ssecr: CR line endings are kept (no LF in the body)" 0 "$(tr -cd '\n' <"$f" | wc -c)"
    fi
  done

  N=$((N + 1)); f=$T/r$N
  check_eq "$tag jsonbig: a JSON answer over 8 MiB is refused (502)" "502 0" "$(post "$V" jsonbig "$f")"
  check_eq "$tag jsonbig: ... no tool name reaches the client" 0 "$(cat "$f" 2>/dev/null | grep -c drop_x)"
  check "audit: $tag the refused answer is recorded with its reason" audit_wait \
    "((.reason // \"\") | test(\"MCP answer over\"))"
  N=$((N + 1)); f=$T/r$N
  check_eq "$tag err405: a JSON-RPC error with id null passes with its status" "405 0" "$(post "$V" err405 "$f")"
  check "$tag err405: ... and its body" grep -qF 'Method not allowed.' "$f"
  N=$((N + 1)); f=$T/r$N
  check_eq "$tag dup: a list result with a duplicate key is refused (502)" "502 0" "$(post "$V" dup "$f")"
  check_eq "$tag dup: ... no tool name reaches the client" 0 "$(cat "$f" 2>/dev/null | grep -c drop_x)"
  N=$((N + 1)); f=$T/r$N
  out=$(post "$V" ssedup "$f")
  check_match "$tag ssedup: an event with a duplicate key cuts the stream" '^200 (18|56|92|16)$' "$out"
  check_eq "$tag ssedup: ... its tool never reaches the client" 0 "$(cat "$f" 2>/dev/null | grep -c drop_x)"

  N=$((N + 1)); f=$T/r$N
  out=$(post "$V" ssebig "$f")
  check_match "$tag ssebig: a 10 MiB event cuts the stream (head out, transfer cut)" '^200 (18|56|92|16)$' "$out"
  check "$tag ssebig: the heartbeat before it went out" grep -q '^: ping' "$f"
  check_eq "$tag ssebig: nothing of the big event reached the client" 0 "$(grep -c xxxxxxxx "$f")"
  check "audit: $tag the cut stream is recorded with its reason" audit_wait \
    "((.reason // \"\") | test(\"event over\"))"
done

# ---------------------------------------------------------------- the client's answers to the server's requests
# The streams above carried sampling/createMessage "srv-1" and elicitation/create "srv-2"; each curl below is a new
# connection (the streams' were others).
ans() { # ID MARK [CURL_ARGS...]: POSTs the client's answer to server request ID; prints the HTTP status
  local id=$1 mark=$2; shift 2
  pcurl --http1.1 -o "$T/ans.body" -w '%{http_code}' -H 'Content-Type: application/json' "$@" --data-binary \
    "{\"jsonrpc\":\"2.0\",\"id\":\"$id\",\"result\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"ok\"}}}" \
    "https://api.example.test/mcp?m=json&a=$mark" 2>/dev/null
}
up_got() { grep -qF "\"id\": \"$1\"" "$ULOG" && echo yes || echo no; }
check_eq "answers: another sandbox cannot answer the server's request: 403 (rule mcp), nothing upstream" "403 mcp no" \
  "$(ans srv-1 other --interface 127.0.0.3) $(jq -r .rule "$T/ans.body") $(up_got srv-1)"
check_eq "answers: nor the same sandbox under another Mcp-Session-Id" "403 mcp" \
  "$(ans srv-2 sess -H 'Mcp-Session-Id: s-other') $(jq -r .rule "$T/ans.body")"
check_eq "answers: the answer to sampling/createMessage on a new connection: allowed by rule sampling, upstream" \
  "200 yes" "$(ans srv-1 ok) $(up_got srv-1)"
check_eq "answers: taken once: the same answer again is refused (403, rule mcp)" "403 mcp" \
  "$(ans srv-1 again) $(jq -r .rule "$T/ans.body")"
check_eq "answers: the answer to elicitation/create: correlated, no rule allows it: 403 (rule default), not upstream" \
  "403 default no" "$(ans srv-2 deny) $(jq -r .rule "$T/ans.body") $(up_got srv-2)"
check "audit: the allowed answer's record names the method it answers" audit_wait \
  '.type=="request" and .mcp_answers=="sampling/createMessage" and .verdict=="allow" and .rule=="sampling" and .rpc_id=="srv-1"'
check "audit: ... and the denied one's" audit_wait \
  '.type=="request" and .mcp_answers=="elicitation/create" and .verdict=="deny" and .rule=="default"'

finish
