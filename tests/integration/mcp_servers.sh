# shellcheck shell=bash disable=SC2034
# tests/integration/mcp_servers.sh: the real MCP servers of the MCP integration tests (issue 23, item 5), sourced
# after lib.sh. Never run on its own. The node packages come from build/node (scripts/deps.sh test).
# Sourcing it sets HERE (tests/integration) and ROOT (the repository), copies the output to $T/test.out, needs node
# and jq, and dies unless the SDK is installed (mcp_need_sdk).
#
#   NODE_DIR                        the npm install (SLUICE_NODE_DIR, default build/node)
#   mcp_need_sdk                    dies unless the SDK is installed there
#   mcp_sdk_server_start ADDR PORT JSON_HOST
#                                   tests/mcp/sdk_server.mjs (stateless streamable HTTP over TLS, srv cert) on
#                                   ADDR:PORT: JSON_HOST gets application/json answers, every other host SSE
#   mcp_nginx_front NAME LISTEN UPSTREAM [EXTRA]
#                                   nginx in $T/NAME on LISTEN ("ADDR:443 ssl [http2]") before UPSTREAM, unbuffered
#   mcp_everything_start            @modelcontextprotocol/server-everything inside the namespace $NS (netns_make
#                                   first: it listens on every interface, here only the namespace's own), nginx in
#                                   front of it on a fresh loopback address $EVADDR:443 (TLS, proxy_buffering off);
#                                   sets EVPORT (its port inside $NS) and appends "mcp.example.test: $EVADDR" to
#                                   GW_RESOLVE
#   mcp_everything_ntools           prints how many tools server-everything lists to the SDK's client in $NS
#                                   directly (no gateway)
#   mcp_sdk_host NAME               a host entry (two-space indent) for the SDK server's tools: the lifecycle
#                                   methods, the GET/DELETE stream, keep_* allowed, drop_* denied (other_hidden: no
#                                   rule, default deny)
#   mcp_everything_host             the host entry of mcp.example.test: the lifecycle (with prompts/list and
#                                   resources/list), echo allowed, get-env denied, the prompt simple-prompt and the
#                                   resource demo://resource/static/document/architecture.md allowed
HERE=${HERE:-$(dirname "$(readlink -f "$0")")}
ROOT=${ROOT:-$(readlink -f "$HERE/../..")}
NODE_DIR=${SLUICE_NODE_DIR:-$ROOT/build/node}

mcp_need_sdk() {
  need_tool node
  [ -d "$NODE_DIR/node_modules/@modelcontextprotocol/sdk" ] ||
    die "no MCP SDK in $NODE_DIR (run scripts/deps.sh test; tests never install anything themselves)"
  # ESM resolves packages from the script's own directory upward: the scripts run from $T beside a link to them
  [ -e "$T/node_modules" ] || ln -s "$NODE_DIR/node_modules" "$T/node_modules"
  cp "$ROOT/tests/mcp/sdk_server.mjs" "$ROOT/tests/mcp/sdk_client.mjs" "$T/"
}
OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1
need_tool jq
mcp_need_sdk

mcp_sdk_server_start() {
  [ -f "$PKI/srv.pem" ] || pki_init
  spawn "$T/sdk_server-$1-$2.log" node "$T/sdk_server.mjs" "$1" "$2" "$PKI/srv.pem" "$PKI/srv.key" "$3"
  eventually 10 sh -c "ss -ltnH | grep -q ' $1:$2 '" ||
    die "SDK server did not start on $1:$2: $(tail -n 5 "$T/sdk_server-$1-$2.log")"
}

# mcp_nginx_front NAME LISTEN UPSTREAM [LOCATION_EXTRA]: nginx in $T/NAME listening on LISTEN ("ADDR:443 ssl",
# "ADDR:443 ssl http2"; srv cert) and passing everything to UPSTREAM unbuffered (events flow as they come); its
# access log $T/NAME/logs/access.log, one line per request: host "request line" status
mcp_nginx_front() {
  local d=$T/$1
  mkdir -p "$d/logs" "$d/tmp"
  cat >"$d/nginx.conf" <<NGX
daemon off; user root; worker_processes 1; error_log $d/logs/error.log; pid $d/nginx.pid;
events { worker_connections 256; }
http {
  client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy; fastcgi_temp_path $d/tmp/fcgi;
  uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
  log_format it '\$host "\$request" \$status';
  access_log $d/logs/access.log it;
  server {
    listen $2; server_name _;
    ssl_certificate $PKI/srv.pem; ssl_certificate_key $PKI/srv.key;
    location / {
      proxy_pass $3; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_cache off; proxy_read_timeout 60s; ${4:-}
    }
  }
}
NGX
  spawn "$d/logs/stdout" nginx -c "$d/nginx.conf" -p "$d"
  eventually 5 sh -c "ss -ltnH | grep -q ' ${2%% *} '" || die "nginx $1 did not start: $(tail -n 3 "$d/logs/error.log")"
}

EVADDR='' EVPORT=''
mcp_everything_start() {
  [ -f "$PKI/srv.pem" ] || pki_init
  EVADDR=$(pick_loopback) EVPORT=$((RANDOM % 20000 + 30000))
  spawn "$T/everything.log" ip netns exec "$NS" env -i PATH=/usr/bin:/bin PORT=$EVPORT \
    node "$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
  eventually 15 sh -c "ip netns exec '$NS' ss -ltnH | grep -q ':$EVPORT '" ||
    die "server-everything did not start: $(tail -n 5 "$T/everything.log")"
  mcp_nginx_front evngx "$EVADDR:443 ssl" "http://$NS_ADDR:$EVPORT"
  GW_RESOLVE="${GW_RESOLVE:+$GW_RESOLVE
}mcp.example.test: $EVADDR"
}

mcp_everything_ntools() {
  (cd "$T" && ip netns exec "$NS" env -i PATH=/usr/bin:/bin timeout 60 node -e '
    import("@modelcontextprotocol/sdk/client/index.js").then(async ({ Client }) => {
      const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
      const c = new Client({ name: "direct", version: "1" });
      await c.connect(new StreamableHTTPClientTransport(new URL(process.argv[1])));
      console.log((await c.listTools()).tools.length); await c.close(); process.exit(0);
    });' "http://127.0.0.1:$EVPORT/mcp" 2>"$T/direct.err")
}

mcp_sdk_host() {
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

mcp_everything_host() {
  cat <<YAML
  mcp.example.test:
    allow_private: true
    mcp: { endpoint: /mcp }
    rules:
      - id: lifecycle
        allow:
          method: POST
          path: /mcp
          mcp: { method: [initialize, notifications/initialized, ping, tools/list, prompts/list, resources/list] }
      - id: stream
        allow: { method: [GET, DELETE], path: /mcp }
      - id: echo
        allow: { method: POST, path: /mcp, mcp: { tool: echo } }
      - id: no-env
        deny: { method: POST, path: /mcp, mcp: { tool: get-env } }
      - id: prompt
        allow: { method: POST, path: /mcp, mcp: { tool: simple-prompt } }
      - id: doc
        allow: { method: POST, path: /mcp, mcp: { tool: "demo://resource/static/document/architecture.md" } }
YAML
}
