#!/usr/bin/env bash
# MCP with the real TypeScript SDK (issue 23, item 5): tests/mcp/sdk_server.mjs (an SDK server, stateless
# streamable HTTP over TLS) answers api.example.test in JSON mode (enableJsonResponse) and other.example.test in
# SSE mode; tests/mcp/sdk_client.mjs (the SDK's client) runs in a network namespace this test makes, its port 443
# redirected to the gateway's transparent listener, and sees a filtered tools/list (the tools no rule allows are
# absent), calls the allowed tool, and is refused the denied one. A raw client (curl) covers the explicit proxy.
# The SDK comes from build/node (scripts/deps.sh test: npm ci --ignore-scripts from tests/mcp/package-lock.json).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
ROOT=$(readlink -f "$HERE/../..")
NODE_DIR=${SLUICE_NODE_DIR:-$ROOT/build/node}
OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

need_tool node nft ip jq
[ -d "$NODE_DIR/node_modules/@modelcontextprotocol/sdk" ] ||
  die "no MCP SDK in $NODE_DIR (run scripts/deps.sh test; tests never install anything themselves)"
# ESM resolves packages from the script's own directory upward: the scripts run from $T beside a link to them
ln -s "$NODE_DIR/node_modules" "$T/node_modules"
cp "$ROOT/tests/mcp/sdk_server.mjs" "$ROOT/tests/mcp/sdk_client.mjs" "$T/"

pki_init
spawn "$T/sdk_server.log" node "$T/sdk_server.mjs" "$UPADDR" 443 "$PKI/srv.pem" "$PKI/srv.key" api.example.test
eventually 10 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "SDK server did not start: $(tail -n 5 "$T/sdk_server.log")"

netns_make m
netns_redirect "443"
# names for the namespace only: `ip netns exec` mounts /etc/netns/NAME/hosts over /etc/hosts
mkdir -p "/etc/netns/$NS"
printf '%s api.example.test other.example.test\n' "$NS_HOST" >"/etc/netns/$NS/hosts"
trap 'rm -rf "/etc/netns/$NS"; cleanup' EXIT

mcp_host() {
  cat <<YAML
  $1:
    allow_private: true
    mcp: { endpoint: /mcp }
    rules:
      - id: lifecycle
        allow: { method: POST, path: /mcp, mcp: { method: [initialize, notifications/initialized, ping, tools/list] } }
      - id: stream
        allow: { method: [GET, DELETE], path: /mcp }
      - id: keep
        allow: { method: POST, path: /mcp, mcp: { tool: "keep_*" } }
      - id: no-drop
        deny: { method: POST, path: /mcp, mcp: { tool: "drop_*" } }
YAML
}
{
  echo "default: deny"
  echo "hosts:"
  mcp_host api.example.test
  mcp_host other.example.test
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
  # TO CHANGE when the request side (proxy/judge/mcp_req) is merged: the denial is then a JSON-RPC error
  # (code -32001, "denied by policy") instead of the HTTP 403 whose JSON body the SDK reports as a transport error
  check_match "SDK $tag: the denied tool is refused (HTTP 403 until the JSON-RPC error answer is merged)" \
    'denied by policy' "$(jq -r '.denied.message // ""' "$T/client-$tag.json")"
  check "audit: SDK $tag: tools/list filtered, 2 removed" audit_wait \
    ".host==\"$host\" and .mcp_method==\"tools/list\" and .removed==2"
done
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
