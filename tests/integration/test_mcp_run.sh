#!/usr/bin/env bash
# MCP with real clients (issue 23, item 5), the way an agent meets the gateway.
# Transparent: the TypeScript SDK's client (tests/mcp/sdk_client.mjs, StreamableHTTPClientTransport) runs inside a
# `sluice run` sandbox: the launcher makes the namespace, its redirect and its resolver (listen.dns), the client runs
# there under env -i with the gateway's CA given explicitly (NODE_EXTRA_CA_CERTS, a copy in the workspace), reaches
# the servers by name alone, lists the tools (the hidden ones absent), calls the allowed tool (its result) and the
# denied one (the JSON-RPC error -32001 the SDK raises), against the SDK server in JSON mode (api.example.test), in
# SSE mode (other.example.test) and against @modelcontextprotocol/server-everything (mcp.example.test, in a
# namespace of its own behind nginx). The audit names the sandbox and the filtered lists.
# Explicit proxy: tests/mcp/proxy_client.py (python3's http.client through CONNECT to HTTPS_PROXY, SSL_CERT_FILE
# the gateway's CA) does the same exchange by hand (initialize, notifications/initialized, tools/list, tools/call
# twice) against the same three servers, with server-everything's Mcp-Session-Id carried.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
. "$(dirname "$(readlink -f "$0")")/mcp_servers.sh"

need_tool nft ip
[ -x /usr/bin/bwrap ] || die "bubblewrap (/usr/bin/bwrap) is missing"
track_sandbox_objects

pki_init
mcp_sdk_server_start "$UPADDR" 443 api.example.test
netns_make e
mcp_everything_start

DNSP=$(freeport)
GW_DNS="[::]:$DNSP"
{
  echo "default: deny"
  echo "hosts:"
  mcp_sdk_host api.example.test
  mcp_sdk_host other.example.test
  mcp_everything_host
  printf 'sandboxes:\n  local:\n    addresses: [127.0.0.1/32]\n'
} | gw_conf
gw_start

# the workspace: the client, the SDK (the sandbox sees /usr, /etc and /workspace only) and a copy of the CA
WS=$T/ws
mkdir -p "$WS"
cp -r "$NODE_DIR/node_modules" "$WS/node_modules"
cp "$ROOT/tests/mcp/sdk_client.mjs" "$WS/"
cp "$CA/ca.pem" "$WS/gateway-ca.pem"
chown -R 1000:1000 "$WS"
chmod -R a+rX "$WS"

# sdk_in_sandbox NAME URL [ALLOWED DENIED]: the SDK client in a fresh `sluice run` sandbox; its JSON line in
# $T/run-NAME.json
sdk_in_sandbox() {
  local tag=$1; shift
  (cd / && env -i PATH=/usr/bin:/bin timeout 90 "$SLUICE" run -c "$GWCONF" --name "mcp-$tag-$ID" --workspace "$WS" -- \
    env -i PATH=/usr/bin:/bin NODE_EXTRA_CA_CERTS=/workspace/gateway-ca.pem \
    node /workspace/sdk_client.mjs "$@") >"$T/run-$tag.json" 2>"$T/run-$tag.err"
  echo $?
}
j() { jq -c "$2" "$1" 2>/dev/null; }

# server-everything's own list, read in its namespace directly, against what the clients see through the gateway
direct=$(mcp_everything_ntools)
check_match "server-everything lists many tools directly ($direct)" '^[0-9]+$' "$direct"
[ "${direct:-0}" -gt 2 ] && ok "server-everything: more than two tools without the gateway" ||
  bad "server-everything: $direct tools directly"
# server TAG: the host, tools, expected answers and rule of the server behind TAG
server() {
  case $1 in
    json) host=api.example.test allowed=keep_echo denied=drop_delete tools='["keep_echo"]' echo='"echo: hello"'
      form='"json"' rule=no-drop removed=2;;
    sse) host=other.example.test allowed=keep_echo denied=drop_delete tools='["keep_echo"]' echo='"echo: hello"'
      form='"sse"' rule=no-drop removed=2;;
    everything) host=mcp.example.test allowed=echo denied=get-env tools='["echo"]' echo='"Echo: hello"' form='"sse"'
      rule=no-env removed=$((direct - 1));;
  esac
}

for tag in json sse everything; do
  server $tag
  f=$T/run-$tag.json
  rc=$(sdk_in_sandbox $tag "https://$host/mcp" $allowed $denied)
  check_eq "sandbox SDK $tag: sluice run and the client exit 0" 0 "$rc"
  [ "$rc" = 0 ] || sed 's/^/# /' "$T/run-$tag.err" | tail -n 15
  check_eq "sandbox SDK $tag: tools/list shows only the allowed tool" "$tools" "$(j "$f" .tools)"
  check_eq "sandbox SDK $tag: the allowed tool is called, its result comes back" "$echo" "$(j "$f" .echo)"
  check_eq "sandbox SDK $tag: the denied tool never ran" null "$(j "$f" .denied_ok)"
  check_eq "sandbox SDK $tag: the SDK raises the gateway's JSON-RPC error -32001" -32001 "$(j "$f" '.denied.code')"
  check_match "sandbox SDK $tag: ... whose message says the policy denied it" 'denied by policy' \
    "$(j "$f" '.denied.message')"
  check "audit: sandbox SDK $tag: the sandbox's tools/list, filtered, $removed removed" audit_wait \
    ".sandbox==\"mcp-$tag-$ID\" and .host==\"$host\" and .mcp_method==\"tools/list\" and .removed==$removed"
  check "audit: sandbox SDK $tag: the denied call, its rule and tool" audit_wait \
    ".sandbox==\"mcp-$tag-$ID\" and .tool==\"$denied\" and .verdict==\"deny\" and .rule==\"$rule\""
  check "audit: sandbox SDK $tag: the name was resolved by the gateway for the sandbox" audit_wait \
    ".type==\"dns\" and .sandbox==\"mcp-$tag-$ID\" and .host==\"$host\""
done
check "audit: the sandbox's MCP requests came through the transparent listener (its own address)" audit_wait \
  ".sandbox==\"mcp-everything-$ID\" and .mcp_method==\"initialize\" and ((.client // \"\") | test(\"^(10\\\\.200\\\\.|fd00:5c:)\"))"
check_eq "no sluice_* object is left after the sandboxes" "" "$(new_objects)"

# ---------------------------------------------------------------- the explicit proxy: python3, http.client, CONNECT
pyc() { # TAG URL [ALLOWED DENIED]
  local tag=$1; shift
  $CLEAN HTTPS_PROXY="http://127.0.0.1:$PP" SSL_CERT_FILE="$CA/ca.pem" timeout 60 "$PY" "$ROOT/tests/mcp/proxy_client.py" \
    "$@" >"$T/py-$tag.json" 2>"$T/py-$tag.err"
  echo $?
}
for tag in json sse everything; do
  server $tag
  f=$T/py-$tag.json
  rc=$(pyc $tag "https://$host/mcp" $allowed $denied)
  check_eq "proxy python $tag: the exchange completes" 0 "$rc"
  [ "$rc" = 0 ] || sed 's/^/# /' "$T/py-$tag.err" | tail -n 5
  check_eq "proxy python $tag: initialize, list and the allowed call are 200, the notification 202" \
    '[200,202,200,200]' "$(j "$f" '[.status.initialize, .status.initialized, .status.list, .status.call]')"
  check_eq "proxy python $tag: the server answered in its form ($form)" "[$form,$form,$form]" \
    "$(j "$f" '[.forms.initialize, .forms.list, .forms.call]')"
  check_eq "proxy python $tag: tools/list shows only the allowed tool" "$tools" "$(j "$f" .tools)"
  check_eq "proxy python $tag: the allowed tool's result" "$echo" "$(j "$f" .echo)"
  check_eq "proxy python $tag: the denied call is HTTP 200 with the JSON-RPC error -32001 naming the rule" \
    "[200,-32001,\"denied by policy\"]" "$(j "$f" '[.status.denied, .denied.code, .denied.message]')"
  check_match "proxy python $tag: ... whose data names the rule" "\"rule\":\"$rule\"" "$(j "$f" .denied.data)"
  check "audit: proxy python $tag: tools/list filtered for the proxy client" audit_wait \
    ".host==\"$host\" and .client==\"127.0.0.1\" and .mcp_method==\"tools/list\" and .removed > 0"
done
check_eq "proxy python everything: server-everything's session id was carried" true "$(j "$T/py-everything.json" .session)"
# prompts and resources of server-everything: the lists hide what no rule allows, prompts/get and resources/read judged
DOC=demo://resource/static/document
rc=$(pyc lists https://mcp.example.test/mcp echo get-env simple-prompt args-prompt "$DOC/architecture.md" "$DOC/features.md")
f=$T/py-lists.json
check_eq "proxy python everything lists: the exchange completes" 0 "$rc"
[ "$rc" = 0 ] || sed 's/^/# /' "$T/py-lists.err" | tail -n 5
check_eq "proxy python everything: prompts/list shows only simple-prompt" '["simple-prompt"]' "$(j "$f" .prompts)"
check_eq "proxy python everything: prompts/get simple-prompt answered, args-prompt refused (-32001)" \
  '{"ok":true,"denied":-32001}' "$(j "$f" .get)"
check_eq "proxy python everything: resources/list shows only the allowed document" "[\"$DOC/architecture.md\"]" \
  "$(j "$f" .resources)"
check_eq "proxy python everything: resources/read of it answered, of another document refused (-32001)" \
  '{"ok":true,"denied":-32001}' "$(j "$f" .read)"
check "audit: the prompts list filtered" audit_wait \
  '.host=="mcp.example.test" and .mcp_method=="prompts/list" and .removed > 0'
check "audit: the resources list filtered" audit_wait \
  '.host=="mcp.example.test" and .mcp_method=="resources/list" and .removed > 0'
check "audit: resources/read of the other document denied, its URI as the tool" audit_wait \
  ".host==\"mcp.example.test\" and .tool==\"$DOC/features.md\" and .verdict==\"deny\""

finish
