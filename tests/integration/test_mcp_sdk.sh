#!/usr/bin/env bash
# MCP with the real TypeScript SDK (issue 23, item 5): tests/mcp/sdk_server.mjs (an SDK server, stateless
# streamable HTTP over TLS) answers api.example.test in JSON mode (enableJsonResponse) and other.example.test in
# SSE mode; tests/mcp/sdk_client.mjs (the SDK's client) runs in a network namespace this test makes, its port 443
# redirected to the gateway's transparent listener, and sees a filtered tools/list (the tools no rule allows are
# absent), calls the allowed tool, and is refused the denied one. @modelcontextprotocol/server-everything (a real
# server with sessions and the GET stream) runs inside the namespace, listening on every interface there, behind
# nginx on loopback (TLS, proxy_buffering off): the same client, through the gateway, sees only its echo tool.
# A raw client (curl) covers the explicit proxy.
# The SDK comes from build/node (scripts/deps.sh test: npm ci --ignore-scripts from tests/mcp/package-lock.json).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
. "$(dirname "$(readlink -f "$0")")/mcp_servers.sh"

need_tool nft ip

pki_init
mcp_sdk_server_start "$UPADDR" 443 api.example.test

netns_make m
netns_redirect "443"
# names for the namespace only: `ip netns exec` mounts /etc/netns/NAME/hosts over /etc/hosts
mkdir -p "/etc/netns/$NS"
printf '%s api.example.test other.example.test mcp.example.test\n' "$NS_HOST" >"/etc/netns/$NS/hosts"
trap 'rm -rf "/etc/netns/$NS"; cleanup' EXIT

# server-everything in the namespace (it listens on every interface: there, only the namespace's own), nginx in
# front of it on a second loopback address (mcp.example.test), TLS, unbuffered so that its events flow
mcp_everything_start

{
  echo "default: deny"
  echo "hosts:"
  mcp_sdk_host api.example.test
  mcp_sdk_host other.example.test
  mcp_everything_host
  # server-everything's sampling tool (listed only to a client with the sampling capability) and the answers to
  # the server's sampling/createMessage, judged as answers to that method
  cat <<YAML
      - id: sampling-call
        allow: { method: POST, path: /mcp, mcp: { tool: trigger-sampling-request } }
      - id: sampling-answers
        allow: { method: POST, path: /mcp, mcp: { method: [sampling/createMessage] } }
YAML
  printf 'sandboxes:\n  local:\n    addresses: [127.0.0.1/32, %s/32]\n' "$NS_ADDR"
} | gw_conf
gw_start

for host in api.example.test other.example.test; do
  [ "$host" = api.example.test ] && tag=json || tag=sse
  out=$(ns_exec NODE_EXTRA_CA_CERTS="$CA/ca.pem" timeout 60 node "$T/sdk_client.mjs" "https://$host/mcp" 2>"$T/client-$tag.err")
  echo "$out" >"$T/client-$tag.json"
  check_eq "SDK $tag: the client ran" 0 "$(jq -e . "$T/client-$tag.json" >/dev/null 2>&1; echo $?)"
  check_eq "SDK $tag: tools/list shows only the allowed tool" '["keep_echo"]' "$(jq -c .tools "$T/client-$tag.json")"
  check_eq "SDK $tag: the allowed tool is called" '"echo: hello"' "$(jq -c .echo "$T/client-$tag.json")"
  check_eq "SDK $tag: the denied tool never ran" null "$(jq -c .denied_ok "$T/client-$tag.json")"
  # the denial is a JSON-RPC error (HTTP 200), which the SDK raises as an McpError the agent can read
  check_eq "SDK $tag: the denied tool is answered with the JSON-RPC error -32001" -32001 \
    "$(jq -r '.denied.code // ""' "$T/client-$tag.json")"
  check_match "SDK $tag: ... whose message says the policy denied it" \
    'denied by policy' "$(jq -r '.denied.message // ""' "$T/client-$tag.json")"
  check "audit: SDK $tag: tools/list filtered, 2 removed" audit_wait \
    ".host==\"$host\" and .mcp_method==\"tools/list\" and .removed==2"
done
# server-everything: its own list, read in the namespace directly, against what the client sees through the gateway
direct=$(mcp_everything_ntools)
check_match "server-everything lists many tools directly ($direct)" '^[0-9]+$' "$direct"
[ "${direct:-0}" -gt 2 ] && ok "server-everything: more than two tools without the gateway" || bad "server-everything: $direct tools directly"
out=$(ns_exec NODE_EXTRA_CA_CERTS="$CA/ca.pem" timeout 60 node "$T/sdk_client.mjs" https://mcp.example.test/mcp echo get-env \
  2>"$T/client-everything.err")
echo "$out" >"$T/client-everything.json"
check_eq "server-everything: tools/list through the gateway shows only echo" '["echo"]' \
  "$(jq -c .tools "$T/client-everything.json" 2>/dev/null)"
check_eq "server-everything: echo is called" '"Echo: hello"' "$(jq -c .echo "$T/client-everything.json" 2>/dev/null)"
check_eq "server-everything: get-env never ran" null "$(jq -c .denied_ok "$T/client-everything.json" 2>/dev/null)"
check "audit: server-everything's list filtered" audit_wait \
  ".host==\"mcp.example.test\" and .mcp_method==\"tools/list\" and .removed == $((direct - 1))"

# sampling: the server's request on the call's stream, the SDK's answer POSTed on another connection
cp "$ROOT/tests/mcp/sdk_sampling.mjs" "$T/"
out=$(ns_exec NODE_EXTRA_CA_CERTS="$CA/ca.pem" timeout 60 node "$T/sdk_sampling.mjs" https://mcp.example.test/mcp \
  2>"$T/client-sampling.err")
echo "$out" >"$T/client-sampling.json"
check_eq "server-everything sampling: the SDK answered one sampling request, no error" '1 null' \
  "$(jq -r '"\(.sampled) \(.error)"' "$T/client-sampling.json" 2>/dev/null)"
check_match "server-everything sampling: the tool's result carries the client's sampled text" 'sampled-ok' \
  "$(jq -r '.text // ""' "$T/client-sampling.json" 2>/dev/null)"
check "audit: the answer was judged as an answer to sampling/createMessage (rule sampling-answers)" audit_wait \
  '.type=="request" and .mcp_answers=="sampling/createMessage" and .verdict=="allow" and .rule=="sampling-answers"'
call_conn=$(audit_get '.type=="request" and .tool=="trigger-sampling-request"' | head -n 1 | jq -r .conn)
ans_conn=$(audit_get '.type=="request" and .mcp_answers=="sampling/createMessage"' | head -n 1 | jq -r .conn)
if [ -n "$call_conn" ] && [ -n "$ans_conn" ] && [ "$call_conn" != "$ans_conn" ]; then
  ok "sampling: the answer came on another connection ($ans_conn) than the call's ($call_conn)"
else
  bad "sampling: the call's and the answer's connections: '$call_conn' '$ans_conn'"
fi

check "audit: the SDK client's requests came through the transparent listener from the namespace" \
  audit_wait ".client==\"$NS_ADDR\" and .host==\"other.example.test\""

# the explicit proxy, a raw client: the SDK server's SSE answer through CONNECT
LIST='{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
for host in api.example.test other.example.test; do
  pcurl -o "$T/raw-$host" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-06-18' --data-binary "$LIST" "https://$host/mcp" 2>/dev/null
  check_eq "explicit proxy $host: only the allowed tool" keep_echo \
    "$(sed -n 's/^data: //; /^{/p' "$T/raw-$host" | jq -r '.result.tools[].name' 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
done

finish
