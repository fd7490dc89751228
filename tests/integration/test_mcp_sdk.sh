#!/usr/bin/env bash
# MCP with the real TypeScript SDK (issue 23, item 5): tests/mcp/sdk_server.mjs (an SDK server, stateless
# streamable HTTP over TLS) answers api.example.test in JSON mode (enableJsonResponse) and other.example.test in
# SSE mode; tests/mcp/sdk_client.mjs (the SDK's client) runs in a network namespace this test makes, its port 443
# redirected to the gateway's transparent listener, and sees a filtered tools/list (the tools no rule allows are
# absent), calls the allowed tool, and is refused the denied one. @modelcontextprotocol/server-everything (a real
# server with sessions and the GET stream) runs inside the namespace, listening on every interface there, behind
# nginx on loopback (TLS, proxy_buffering off): the same client, through the gateway, sees only its echo tool.
# A raw client (curl) covers the explicit proxy. The SDK client with the sampling capability calls
# server-everything's trigger-sampling-request: the server's sampling/createMessage comes on the call's SSE answer and
# the SDK POSTs its answer on another connection while that one waits; the gateway correlates it (one table for the
# gateway, keyed by sandbox, host and session) and a rule allows answers to sampling/createMessage.
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
cp "$ROOT/tests/mcp/sdk_server.mjs" "$ROOT/tests/mcp/sdk_client.mjs" "$ROOT/tests/mcp/sdk_sampling.mjs" "$T/"

pki_init
spawn "$T/sdk_server.log" node "$T/sdk_server.mjs" "$UPADDR" 443 "$PKI/srv.pem" "$PKI/srv.key" api.example.test
eventually 10 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "SDK server did not start: $(tail -n 5 "$T/sdk_server.log")"

netns_make m
netns_redirect "443"
# names for the namespace only: `ip netns exec` mounts /etc/netns/NAME/hosts over /etc/hosts
mkdir -p "/etc/netns/$NS"
printf '%s api.example.test other.example.test mcp.example.test\n' "$NS_HOST" >"/etc/netns/$NS/hosts"
trap 'rm -rf "/etc/netns/$NS"; cleanup' EXIT

# server-everything in the namespace (it listens on every interface: there, only the namespace's own), nginx in
# front of it on a second loopback address (mcp.example.test), TLS, unbuffered so that its events flow
EVADDR=$(pick_loopback) EVPORT=$((RANDOM % 20000 + 30000))
spawn "$T/everything.log" ip netns exec "$NS" env -i PATH=/usr/bin:/bin PORT=$EVPORT \
  node "$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
eventually 15 sh -c "ip netns exec '$NS' ss -ltnH | grep -q ':$EVPORT '" ||
  die "server-everything did not start: $(tail -n 5 "$T/everything.log")"
mkdir -p "$T/evngx/logs" "$T/evngx/tmp"
cat >"$T/evngx/nginx.conf" <<NGX
daemon off; user root; worker_processes 1; error_log $T/evngx/logs/error.log; pid $T/evngx/nginx.pid;
events { worker_connections 256; }
http {
  client_body_temp_path $T/evngx/tmp/body; proxy_temp_path $T/evngx/tmp/proxy; fastcgi_temp_path $T/evngx/tmp/fcgi;
  uwsgi_temp_path $T/evngx/tmp/uwsgi; scgi_temp_path $T/evngx/tmp/scgi; access_log $T/evngx/logs/access.log;
  server {
    listen $EVADDR:443 ssl; server_name _;
    ssl_certificate $PKI/srv.pem; ssl_certificate_key $PKI/srv.key;
    location / {
      proxy_pass http://$NS_ADDR:$EVPORT; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_cache off; proxy_read_timeout 60s;
    }
  }
}
NGX
spawn "$T/evngx/logs/stdout" nginx -c "$T/evngx/nginx.conf" -p "$T/evngx"
eventually 5 sh -c "ss -ltnH | grep -q ' $EVADDR:443 '" || die "nginx for server-everything did not start"
GW_RESOLVE="mcp.example.test: $EVADDR"

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
  cat <<YAML
  mcp.example.test:
    allow_private: true
    mcp: { endpoint: /mcp }
    rules:
      - id: lifecycle
        allow: { method: POST, path: /mcp, mcp: { method: [initialize, notifications/initialized, ping, tools/list] } }
      - id: stream
        allow: { method: [GET, DELETE], path: /mcp }
      - id: echo
        allow: { method: POST, path: /mcp, mcp: { tool: [echo, trigger-sampling-request] } }
      - id: sampling-answers
        allow: { method: POST, path: /mcp, mcp: { method: [sampling/createMessage] } }
      - id: no-env
        deny: { method: POST, path: /mcp, mcp: { tool: get-env } }
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
direct=$(cd "$T" && ip netns exec "$NS" env -i PATH=/usr/bin:/bin timeout 60 node -e '
  import("@modelcontextprotocol/sdk/client/index.js").then(async ({ Client }) => {
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const c = new Client({ name: "direct", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(process.argv[1])));
    console.log((await c.listTools()).tools.length); await c.close(); process.exit(0);
  });' "http://127.0.0.1:$EVPORT/mcp" 2>"$T/direct.err")
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
