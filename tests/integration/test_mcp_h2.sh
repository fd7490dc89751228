#!/usr/bin/env bash
# MCP over HTTP/2 (issue 23, items 2 and 5): the response filtering where either side speaks h2.
# h2 client, HTTP/1.1 upstream (mcp_upstream.py): curl --http2 through the explicit proxy POSTs tools/list; each
# answer form gets a host name of its own (h1c-MODE.example.test), so that every request is the first to its host
# and the client really is answered in h2 (the gateway learns a host's HTTP/1.1 and then offers the client
# http/1.1). The JSON answer and the event streams (chunks cutting events, CR line endings, one byte per TLS record)
# are filtered per event (the hidden tools absent, the other events and heartbeats untouched); a 10 MiB event cuts
# the stream (the h2 stream ends early) and is audited.
# h2 upstream (h2_upstream.py, ALPN h2 only): the same answers in DATA frames of 7 bytes and of 1 byte, and the
# 10 MiB event, to an h2 client.
# h2 upstream in front of the real SDK server: nginx with `http2` (ALPN h2) before tests/mcp/sdk_server.mjs in JSON
# mode (h2json.example.test) and SSE mode (h2sse.example.test); nginx logs HTTP/2.0 for what the gateway sent:
# tools/list filtered in both forms, tools/call judged (the allowed tool's result, the denied and the unlisted
# tools answered with the JSON-RPC error -32001 on the stream).
# The client answers a server's request (sampling/createMessage in an event): over h2 (mcp_h2client.py) on another
# stream of the connection while the event stream is still open (h2 and HTTP/1.1 upstreams), over HTTP/1.1 on the
# same keep-alive connection; the same answer twice, an answer to a request never made, an answer on another
# connection are refused (rule mcp); an HTTP/1.1 client gets the server's request event before the stream ends.
# Concurrent list answers on one h2 client connection (h2 and HTTP/1.1 upstreams), their frames interleaved, each
# filtered on its own. A pooled upstream connection that closes unanswered: a tools/call is never sent again (502),
# a GET is, once; an h2 stream refused unprocessed (REFUSED_STREAM) is, once, POST or not. A client that stops
# reading a flood of list events: the gateway's memory stays bounded; once it goes away (also from a stream that
# never ends, and an h2 client that resets that stream) the upstream connection is closed at once and the cut audited.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
. "$(dirname "$(readlink -f "$0")")/mcp_servers.sh"

pki_init
GW_WORKERS=1  # one worker: the h2 session to h2_upstream.py is warm when its REFUSED_STREAM case comes (a fresh session's first stream is not retried)

# the upstreams: mcp_upstream.py (HTTP/1.1, TLS, 443), h2_upstream.py (h2 only), the SDK server behind nginx h2
spawn "$T/up.log" "$PY" "$HERE/mcp_upstream.py" --listen "$UPADDR:443:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" \
  --log "$T/up.jsonl"
HP=$(freeport)
spawn "$T/h2up.log" env PYTHONPATH="$HERE" "$PY" "$HERE/h2_upstream.py" --listen "$UPADDR:$HP" --cert "$PKI/srv.pem" \
  --key "$PKI/srv.key" --log "$T/h2up.jsonl"
SP=$(freeport)
mcp_sdk_server_start "$UPADDR" "$SP" h2json.example.test
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "mcp_upstream did not start: $(tail -n 3 "$T/up.log")"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$HP '" || die "h2 upstream did not start: $(tail -n 3 "$T/h2up.log")"
NGADDR=$(pick_loopback)
mcp_nginx_front ngx "$NGADDR:443 ssl http2" "https://$UPADDR:$SP" 'proxy_set_header Host $host;'

MODES1="json sse ssecr sse1 ssebig"
raw_host() { # NAME [PORT]: a host whose rules are test_mcp_resp.sh's (keep_* allowed, drop_* denied, other_y: no rule)
  cat <<YAML
  $1:
    allow_private: true
${2:+    ports: [$2]
}    mcp: { endpoint: /mcp }
    rules:
      - id: lifecycle
        allow: { method: POST, path: /mcp, mcp: { method: [initialize, tools/list] } }
      - id: keep
        allow: { method: POST, path: /mcp, mcp: { tool: "keep_*" } }
      - id: no-drop
        deny: { method: POST, path: /mcp, mcp: { tool: "drop_*" } }
YAML
}
ans_host() { # NAME [PORT]: raw_host, plus the clients' answers to server requests allowed by path
  raw_host "$@"
  echo "      - id: answers"
  echo "        allow: { method: POST, path: /mcp }"
}
GW_RESOLVE=$(for m in $MODES1; do echo "h1c-$m.example.test: $UPADDR"; done
  echo "h2up.example.test: $UPADDR"; echo "h2ans.example.test: $UPADDR"; echo "h1ans.example.test: $UPADDR"
  echo "h1seq.example.test: $UPADDR"; echo "h1many.example.test: $UPADDR"; echo "flood.example.test: $UPADDR"
  echo "flood2.example.test: $UPADDR"; echo "trickle2.example.test: $UPADDR"; echo "h2json.example.test: $NGADDR"; echo "h2sse.example.test: $NGADDR")
{
  echo "default: deny"
  echo "hosts:"
  for m in $MODES1; do raw_host "h1c-$m.example.test"; done
  raw_host h2up.example.test "$HP"
  raw_host h1many.example.test
  raw_host flood.example.test
  raw_host flood2.example.test
  raw_host trickle2.example.test
  ans_host h2ans.example.test "$HP"
  ans_host h1ans.example.test
  ans_host h1seq.example.test
  echo "      - id: get"
  echo "        allow: { method: GET, path: /mcp }"
  mcp_sdk_host h2json.example.test
  mcp_sdk_host h2sse.example.test
  printf 'sandboxes:\n  local:\n    addresses: [127.0.0.1/32]\n'
} | gw_conf
gw_start

LIST='{"jsonrpc":"2.0","id":41,"method":"tools/list"}'
post() { # URL BODY OUTFILE: an h2 POST; prints "<http code> <http version> <curl exit>"
  local out rc
  out=$(pcurl --http2 --max-time 30 -o "$3" -D "$3.h" -w '%{http_code} %{http_version}' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
    --data-binary "$2" "$1" 2>/dev/null)
  rc=$?
  echo "$out $rc"
}
names() { jq -r '.result.tools[].name' "$1" 2>/dev/null | tr '\n' ' '; }
ev_names() { tr -d '\r' <"$1" | sed -n 's/^data: {/{/p' | jq -r 'select(.result.tools) | .result.tools[].name' 2>/dev/null | tr '\n' ' '; }
stream_checks() { # TAG FILE: the events of mcp_upstream.py's stream, filtered (LF after CR-only endings were turned)
  check_eq "$1: the list event lists only the allowed tools" "keep_a keep_b " "$(ev_names "$2")"
  check_eq "$1: both heartbeats pass" 2 "$(tr -d '\r' <"$2" | grep -c '^: ping')"
  check "$1: the non-JSON event passes as it was" grep -qx 'data: not json at all' <(tr -d '\r' <"$2")
  check "$1: the list event keeps its id line" grep -qx 'id: 7' <(tr -d '\r' <"$2")
  check "$1: the tools/call result passes" grep -qF '"text": "hi"' "$2"
  check "$1: the server's request passes" grep -qF 'sampling/createMessage' "$2"
}
big_checks() { # TAG FILE RESULT
  check_match "$1: a 10 MiB event cuts the h2 stream (head out, the stream ends in an error)" '^200 2 (16|18|56|92)$' "$3"
  check "$1: the heartbeat before it went out" grep -q '^: ping' "$2"
  check_eq "$1: nothing of the big event reached the client" 0 "$(grep -c xxxxxxxx "$2")"
  check_eq "$1: nor the list event after it" 0 "$(grep -c drop_x "$2")"
}

# ---------------------------------------------------------------- h2 client, HTTP/1.1 upstream
for m in $MODES1; do
  f=$T/h1c-$m tag="h2 client, h1 upstream, $m"
  r=$(post "https://h1c-$m.example.test/mcp?m=$m" "$LIST" "$f")
  case $m in
    json)
      check_eq "$tag: 200 over HTTP/2" "200 2 0" "$r"
      check_eq "$tag: only the tools a rule allows" "keep_a keep_b " "$(names "$f")"
      check "$tag: the filtered body's content-length" grep -qiE "^content-length: $(stat -c %s "$f")"$'\r'"?\$" "$f.h";;
    ssebig) big_checks "$tag" "$f" "$r"
      check "audit: $tag: the cut stream is recorded with its reason" audit_wait \
        ".host==\"h1c-ssebig.example.test\" and ((.reason // \"\") | test(\"event over\"))";;
    *)
      check_eq "$tag: 200 over HTTP/2" "200 2 0" "$r"
      [ "$m" = ssecr ] && { tr '\r' '\n' <"$f" >"$f.lf"; mv "$f.lf" "$f"; }
      stream_checks "$tag" "$f";;
  esac
  [ "$m" = ssebig ] || check "audit: $tag: tools/list filtered, 2 removed" audit_wait \
    ".host==\"h1c-$m.example.test\" and .http_version==\"2\" and .mcp_method==\"tools/list\" and .removed==2"
done

# ---------------------------------------------------------------- h2 client, h2 upstream (DATA frames of 7 and 1 bytes)
for m in json sse sse1 ssebig; do
  f=$T/h2up-$m tag="h2 upstream, $m"
  r=$(post "https://h2up.example.test:$HP/mcp?m=$m" "$LIST" "$f")
  case $m in
    json)
      check_eq "$tag: 200 over HTTP/2" "200 2 0" "$r"
      check_eq "$tag: only the tools a rule allows" "keep_a keep_b " "$(names "$f")";;
    ssebig) big_checks "$tag" "$f" "$r"
      check "audit: $tag: the cut stream is recorded with its reason" audit_wait \
        ".host==\"h2up.example.test\" and .path==\"/mcp\" and ((.reason // \"\") | test(\"event over\"))";;
    *)
      check_eq "$tag: 200 over HTTP/2" "200 2 0" "$r"
      stream_checks "$tag" "$f";;
  esac
done
check_eq "h2 upstream: the four answers went to it as h2 requests" 4 \
  "$(jq -s '[.[] | select(.ev == "req" and (.path | startswith("/mcp?m=")))] | length' "$T/h2up.jsonl")"
check "audit: h2 upstream: the lists filtered, 2 removed" audit_wait \
  ".host==\"h2up.example.test\" and .mcp_method==\"tools/list\" and .removed==2"
# concurrent streams on one client connection (and one upstream session), their frames interleaved: each stream's
# events are parsed and filtered on their own
check_eq "h2 upstream: six list answers at once on one connection (7- and 1-byte frames, JSON), each filtered" \
  "$(printf '200 keep_a,keep_b | %.0s' 1 2 3 4 5; echo '200 keep_a,keep_b')" \
  "$($CLEAN timeout 60 "$PY" "$HERE/mcp_h2client.py" "$PP" "$CA/ca.pem" "h2up.example.test:$HP" many \
    "/mcp?m=sse1" "/mcp?m=sse" "/mcp?m=json" "/mcp?m=sse1" "/mcp?m=sse" "/mcp?m=sse1" 2>&1 | tail -n 1)"
check_eq "h2 client, h1 upstream: five list answers at once on one connection (an upstream connection each), each filtered" \
  "$(printf '200 keep_a,keep_b | %.0s' 1 2 3 4; echo '200 keep_a,keep_b')" \
  "$($CLEAN timeout 60 "$PY" "$HERE/mcp_h2client.py" "$PP" "$CA/ca.pem" h1many.example.test many \
    "/mcp?m=sse1" "/mcp?m=sse" "/mcp?m=ssecr" "/mcp?m=jsonch" "/mcp?m=sse1" 2>&1 | tail -n 1)"
# an h2 upstream that refuses a stream unprocessed (REFUSED_STREAM): the POST, its body held, goes again, once
f=$T/h2up-refuse
check_eq "h2 upstream, REFUSED_STREAM: the POST is sent again and answered" "200 2 0" \
  "$(post "https://h2up.example.test:$HP/mcp?m=refuse" "$LIST" "$f")"
check_eq "  its answer filtered" "keep_a keep_b " "$(names "$f")"
check_eq "  the upstream saw it twice (refused, then answered)" 2 \
  "$(jq -s '[.[] | select(.ev == "req" and .path == "/mcp?m=refuse")] | length' "$T/h2up.jsonl")"

# ---------------------------------------------------------------- the client answers a server's request
# On one h2 connection: the server's request arrives in the event stream of a tools/call (stream 1), the answer is
# POSTed on stream 3 while stream 1 is still open and reaches the upstream (whose final result says so); the same
# answer again (stream 5) and an answer to a request never made (stream 7) are refused, rule mcp.
MH2() { $CLEAN timeout 40 "$PY" "$HERE/mcp_h2client.py" "$PP" "$CA/ca.pem" "$@" 2>&1 | tail -n 1; }
check_eq "h2 client, h2 upstream: the answer to the server's request, on another stream of the connection, goes" \
  "ask 200 answer 202 open again 403 mcp unknown 403 mcp final answered" \
  "$(MH2 "h2ans.example.test:$HP" "/mcp?m=ask" "/mcp?m=ack")"
check_eq "h2 client, h1 upstream: likewise" \
  "ask 200 answer 202 open again 403 mcp unknown 403 mcp final answered" \
  "$(MH2 h1ans.example.test "/mcp?m=ask" "/mcp?m=ack")"
check "audit: the correlated answer is allowed by the rule answers" audit_wait \
  '.host=="h2ans.example.test" and .rpc_id=="srv-1" and .verdict=="allow" and .rule=="answers"'
check "audit: the second answer to it is refused, rule mcp" audit_wait \
  '.host=="h2ans.example.test" and .rpc_id=="srv-1" and .verdict=="deny" and .rule=="mcp"'
check "audit: the answer to a request never made is refused, rule mcp" audit_wait \
  '.host=="h2ans.example.test" and .rpc_id=="srv-9" and .verdict=="deny" and .rule=="mcp"'
# an HTTP/1.1 client gets each event as it comes: the server's request at once, the result when the upstream ends
# its 4 s wait for an answer that cannot come on this connection (the stream is never held whole)
t0=$(date +%s%N)
$CLEAN curl -sS -N --max-time 20 -x "http://127.0.0.1:$PP" --cacert "$CA/ca.pem" --http1.1 \
  -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
  --data-binary '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"keep_a","arguments":{}}}' \
  "https://h1seq.example.test/mcp?m=ask" 2>&1 | while IFS= read -r l; do echo "$((($(date +%s%N) - t0) / 1000000)) $l"; done >"$T/ask-h1"
ask_ms=$(sed -n 's/^\([0-9]*\) data: .*"srv-1".*/\1/p' "$T/ask-h1" | head -n 1)
fin_ms=$(sed -n 's/^\([0-9]*\) data: .*"unanswered".*/\1/p' "$T/ask-h1" | head -n 1)
check_match "HTTP/1.1 client: the server's request event arrives before the stream ends (at ${ask_ms:-?} ms, end at ${fin_ms:-?} ms)" \
  '^ok$' "$([ -n "$ask_ms" ] && [ -n "$fin_ms" ] && [ $((fin_ms - ask_ms)) -ge 3000 ] && echo ok)"
# HTTP/1.1 keep-alive (curl --next on one connection): a stream with the server's request, then its answer (202),
# then the same answer again (refused); on a new connection (the same sandbox, host and no session) the answer to a
# new stream's request is taken too: the gateway keeps one table of server requests for all its connections
ANS='{"jsonrpc":"2.0","id":"srv-1","result":{"role":"assistant","model":"test","content":{"type":"text","text":"4"}}}'
U=https://h1seq.example.test/mcp
SEQ=(-x "http://127.0.0.1:$PP" --cacert "$CA/ca.pem" --http1.1 -o /dev/null -w '%{http_code}\n'
  -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream")
out=$($CLEAN curl -sS --max-time 20 "${SEQ[@]}" --data-binary "$LIST" "$U?m=sse" \
  --next "${SEQ[@]}" --data-binary "$ANS" "$U?m=ack" --next "${SEQ[@]}" --data-binary "$ANS" "$U?m=ack" 2>&1 | tr '\n' ' ')
check_eq "HTTP/1.1 keep-alive: the stream (200), the answer (202), the same answer again (refused, 403)" \
  "200 202 403 " "$out"
out=$($CLEAN curl -sS --max-time 20 "${SEQ[@]}" --data-binary "$LIST" "$U?m=sse" 2>&1; \
  $CLEAN curl -sS --max-time 20 "${SEQ[@]}" --data-binary "$ANS" "$U?m=ack" 2>&1)
check_eq "HTTP/1.1: the answer on another connection than the stream's is taken (202)" "200 202" "$(echo $out)"
out=$($CLEAN curl -sS --max-time 20 "${SEQ[@]}" --data-binary "$ANS" "$U?m=ack" 2>&1)
check_eq "HTTP/1.1: ... and the same answer on a third connection is refused (taken once)" "403" "$(echo $out)"
check_eq "the upstream got the h1 answer twice (one per stream that asked)" 2 \
  "$(jq -s '[.[] | select(.mode == "ack" and .id == "srv-1" and .host == "h1seq.example.test")] | length' "$T/up.jsonl")"
# a pooled upstream connection that closes unanswered (mode stale: the server had closed it): a POST (a tools/call,
# its body held and judged) is not sent again, the upstream may have acted on it (RFC 9110, 9.2.2: a proxy MUST
# NOT retry a non-idempotent request); a GET without a body is, once, on a fresh connection
CALL='{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"keep_a","arguments":{}}}'
out=$($CLEAN curl -sS --max-time 20 "${SEQ[@]}" --data-binary "$LIST" "$U?m=json" \
  --next "${SEQ[@]}" --data-binary "$CALL" "$U?m=stale" 2>&1 | tr '\n' ' ')
check_eq "a pooled connection closed under a tools/call: 502" "200 502 " "$out"
check_eq "  the tools/call reached the upstream once: never replayed" 1 \
  "$(jq -s '[.[] | select(.mode == "stale" and .method == "POST")] | length' "$T/up.jsonl")"
out=$($CLEAN curl -sS --max-time 20 "${SEQ[@]}" --data-binary "$LIST" "$U?m=json" \
  --next -x "http://127.0.0.1:$PP" --cacert "$CA/ca.pem" --http1.1 -o /dev/null -w '%{http_code}\n' "$U?m=stale" 2>&1 | tr '\n' ' ')
check_eq "a pooled connection closed under a GET: sent again on a fresh one, answered" "200 200 " "$out"
check_eq "  the upstream saw it on the stale connection, then as a fresh connection's first" "reused fresh" \
  "$(jq -s -r '[.[] | select(.mode == "stale" and .method == "GET") | .nth]
    | if length == 2 and .[0] > 1 and .[1] == 1 then "reused fresh" else tostring end' "$T/up.jsonl")"

# ---------------------------------------------------------------- a client that stops reading a filtered stream
# mcp_upstream.py floods list events (64 MiB at most) as fast as the gateway takes them; the client reads 16 KiB
# (h1) or opens a 16 KiB window (h2) and then nothing for 6 s: the gateway stops reading the upstream, so its
# memory stays bounded (RSS grows by less than 24 MiB, where holding the flood would take 64 MiB and more), and when
# the client goes the exchange ends (the upstream connection is closed, not read to its end for nobody)
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$GWPID/status"; }
for p in h1 h2; do
  [ $p = h1 ] && h=flood.example.test || h=flood2.example.test
  r0=$(rss)
  $CLEAN timeout 30 "$PY" "$HERE/mcp_h2client.py" "$PP" "$CA/ca.pem" "$h" stall $p "/mcp?m=flood" 6 >"$T/stall-$p" 2>&1 &
  spid=$!
  sleep 5
  r1=$(rss)
  wait $spid
  echo "# stall $p: gateway RSS $r0 kB -> $r1 kB; client: $(cat "$T/stall-$p")"
  if grep -qa __asan_init "$SLUICE"; then
    echo "# RSS not judged under ASan: its quarantine keeps what the filter frees"
  else
    check_match "a stalled $p client: the gateway's RSS grew by less than 24 MiB ($(((r1 - r0) / 1024)) MiB)" '^ok$' \
      "$([ $((r1 - r0)) -lt 24576 ] && echo ok)"
  fi
  sent=$(eventually 20 sh -c "jq -e 'select(.ev == \"flood\" and .host == \"$h\")' '$T/up.jsonl'" &&
    jq -r "select(.ev == \"flood\" and .host == \"$h\") | .sent" "$T/up.jsonl")
  check_match "  the upstream could push only ${sent:-?} bytes: the gateway stopped reading, and closed it when the client went" \
    '^ok$' "$([ -n "$sent" ] && [ "$sent" -lt $((24 << 20)) ] && echo ok)"
done
# a stream that does not end (an event every 50 ms for a minute) whose HTTP/1.1 client goes away: the gateway
# closes the upstream connection at once (it read on for nobody until the upstream ended), and audits why
$CLEAN timeout 30 "$PY" "$HERE/mcp_h2client.py" "$PP" "$CA/ca.pem" flood.example.test stall h1 "/mcp?m=trickle" 1 \
  >"$T/stall-trickle" 2>&1
gone=$(date +%s.%N)
check "a client gone from an endless stream: its upstream connection is closed within 3 s" \
  eventually 3 jq -e 'select(.ev == "trickle")' "$T/up.jsonl"
at=$(jq -r 'select(.ev == "trickle" and .host == "flood.example.test") | .at' "$T/up.jsonl" 2>/dev/null)
[ -n "$at" ] && echo "# the endless stream ended $(awk -v a="$at" -v g="$gone" 'BEGIN { d = a - g; printf "%.1f", d < 0 ? 0 : d }') s after the client went"
check "audit: the cut exchange records that the client went away" audit_wait \
  '.host=="flood.example.test" and ((.reason // "") | test("client went away"))'
# the same endless stream to an h2 client (HTTP/1.1 upstream) that resets its stream and keeps the connection
$CLEAN timeout 30 "$PY" "$HERE/mcp_h2client.py" "$PP" "$CA/ca.pem" trickle2.example.test stall h2reset "/mcp?m=trickle" 4 \
  >"$T/stall-trickle2" 2>&1 &
spid=$!
check "an h2 stream reset by its client on an endless stream: its upstream connection is closed within 3 s" \
  eventually 3 jq -e 'select(.ev == "trickle" and .host == "trickle2.example.test")' "$T/up.jsonl"
wait $spid

# ---------------------------------------------------------------- the SDK server behind nginx h2
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":{"message":"hello"}}}' "$1" "$2"; }
answer() { # FILE: the JSON-RPC answer, whether the body is JSON or an event stream
  if grep -q '^data: ' "$1"; then tr -d '\r' <"$1" | sed -n 's/^data: {/{/p' | head -n 1; else cat "$1"; fi
}
for form in json sse; do
  host=h2$form.example.test tag="h2 upstream nginx+SDK $form"
  f=$T/sdk-$form-list
  check_eq "$tag: tools/list 200 over HTTP/2" "200 2 0" "$(post "https://$host/mcp" "$LIST" "$f")"
  [ $form = json ] && ct=application/json || ct=text/event-stream
  check "$tag: answered as $ct" grep -qi "^content-type: $ct" "$f.h"
  check_eq "$tag: tools/list shows only the allowed tool" keep_echo "$(answer "$f" | jq -r '.result.tools[].name' 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
  f=$T/sdk-$form-call
  check_eq "$tag: tools/call keep_echo 200" "200 2 0" "$(post "https://$host/mcp" "$(call 7 keep_echo)" "$f")"
  check_eq "$tag: ... its result" '"echo: hello"' "$(answer "$f" | jq -c '.result.content[0].text' 2>/dev/null)"
  for t in drop_delete other_hidden; do
    f=$T/sdk-$form-$t
    check_eq "$tag: tools/call $t is answered on the stream (200)" "200 2 0" "$(post "https://$host/mcp" "$(call 8 $t)" "$f")"
    check_eq "$tag: ... with the JSON-RPC error -32001 for its id" '[8,-32001]' "$(jq -c '[.id, .error.code]' "$f" 2>/dev/null)"
  done
  check "audit: $tag: tools/list filtered, 2 removed" audit_wait \
    ".host==\"$host\" and .mcp_method==\"tools/list\" and .removed==2"
  check "audit: $tag: drop_delete denied by no-drop" audit_wait \
    ".host==\"$host\" and .tool==\"drop_delete\" and .verdict==\"deny\" and .rule==\"no-drop\""
  check_eq "$tag: nginx saw the gateway's list and allowed call as HTTP/2.0, never the denied ones" 2 \
    "$(grep -c "^$host \"POST /mcp HTTP/2.0\" 200" "$T/ngx/logs/access.log")"
done

finish
