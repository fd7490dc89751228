#!/usr/bin/env bash
# HTTP/1.1 through the explicit proxy: keep-alive (one conn id), pipelining in order, Content-Length, chunked and
# 100-continue uploads arriving intact, HEAD/204/304 without bodies (the connection stays in sync), chunked and
# close-delimited responses, WebSocket upgrade (101 relayed, frames echoed), hop-by-hop headers dropped, 1 MiB
# download byte-identical.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
PCURL_OPTS=--http1.1  # this test is about HTTP/1.1 toward the client
nginx_start
PYP=$(freeport)
pyup_start "$PYP"
policy_base 'allow: { method: [GET, HEAD, POST] }' <<Y | gw_conf
  other.example.test:
    allow_private: true
    ports: [$PYP]
Y
gw_start
PYU=https://other.example.test:$PYP
head -c 1048576 /dev/urandom >"$T/up1m"
head -c 2097152 /dev/urandom >"$T/up2m"
sha() { sha256sum "$1" | cut -d' ' -f1; }

# keep-alive: two requests, one client connection
out=$(pcurl -w '%{num_connects}\n' https://api.example.test/ok/ka1 https://api.example.test/ok/ka2)
check_eq "two URLs in one curl: both bodies" "hello 1 hello 0" "$(printf '%s' "$out" | tr '\n' ' ' | sed 's/ $//')"
audit_wait '.path=="/ok/ka2"'
check_eq "audit: both requests carry the same conn id" 1 \
  "$(jq -s '[.[] | select(.path=="/ok/ka1" or .path=="/ok/ka2") | .conn] | unique | length' "$AUDIT")"

# a keep-alive connection serves the next request after an idle pause
r=$($CLEAN timeout 30 "$PY" - "$PP" "$CA/ca.pem" <<'PYH'
import socket, ssl, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
assert s.recv(4096).startswith(b"HTTP/1.1 200")
t = ssl.create_default_context(cafile=sys.argv[2]).wrap_socket(s, server_hostname="api.example.test")
def get(path):
    t.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += t.recv(4096)
    head, body = buf.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += t.recv(4096)
    return head.split(b" ")[1].decode() + ":" + body.decode().strip()
a = get(b"/ok/hib1")
time.sleep(1.5)
b = get(b"/ok/hib2")
print(a, b)
PYH
)
check_eq "keep-alive after an idle pause: both answered" "200:hello 200:hello" "$r"
audit_wait '.path=="/ok/hib2"'
check_eq "audit: both requests on one connection" 1 \
  "$(jq -s '[.[] | select(.path=="/ok/hib1" or .path=="/ok/hib2") | .conn] | unique | length' "$AUDIT")"

# pipelining: three requests written at once, answers in order
r=$(printf 'GET /headers?n=1 HTTP/1.1\r\nHost: other.example.test:%s\r\n\r\nGET /headers?n=2 HTTP/1.1\r\nHost: other.example.test:%s\r\n\r\nGET /headers?n=3 HTTP/1.1\r\nHost: other.example.test:%s\r\nConnection: close\r\n\r\n' "$PYP" "$PYP" "$PYP" \
  | tunnel_raw "other.example.test:$PYP")
check_eq "pipelining: three 200s" 3 "$(printf '%s' "$r" | grep -ao 'HTTP/1.1 200' | wc -l)"
check_eq "pipelining: responses in request order" "n=1 n=2 n=3" "$(printf '%s' "$r" | grep -o 'n=[0-9]' | tr '\n' ' ' | sed 's/ $//')"

# request bodies
check_eq "POST with Content-Length (1 MiB) arrives intact" "1048576 $(sha "$T/up1m")" \
  "$(pcurl --data-binary @"$T/up1m" -H 'Content-Type: application/octet-stream' "$PYU/sha")"
check_eq "POST with Content-Length: nginx sees the length" 1048576 \
  "$(pcurl --data-binary @"$T/up1m" https://api.example.test/echo-len)"
check_eq "POST with a chunked body (1 MiB) arrives intact" "1048576 $(sha "$T/up1m")" \
  "$(pcurl --data-binary @"$T/up1m" -H 'Transfer-Encoding: chunked' "$PYU/sha")"
check "the upstream saw the chunked request" sh -c "jq -e -s 'map(select(.target==\"/sha\" and (.headers|map(.[0]|ascii_downcase)|index(\"transfer-encoding\")))) | length > 0' '$PYUPLOG'"
out=$(pcurl -v --data-binary @"$T/up2m" -H 'Expect: 100-continue' "$PYU/sha" 2>"$T/v100")
check_eq "100-continue upload (2 MiB) arrives intact" "2097152 $(sha "$T/up2m")" "$out"
check "curl received the upstream's 100 Continue" grep -q '^< HTTP/1.1 100' "$T/v100"
check "the upstream saw Expect: 100-continue" sh -c "jq -e -s 'map(select(.headers|map(.[1]|ascii_downcase)|index(\"100-continue\"))) | length > 0' '$PYUPLOG'"
out=$(pcurl --data-binary @"$T/up2m" -H 'Expect: 100-continue' https://api.example.test/echo-len 2>&1); rc=$?
check_eq "100-continue to nginx (answers without reading the body): the answer reaches the client" "0 2097152" "$rc $out"
out=$(pcurl --data-binary @"$T/up2m" -H 'Expect:' https://api.example.test/echo-len 2>&1); rc=$?
check_eq "2 MiB POST to an upstream that answers before reading it: the answer reaches the client" "0 2097152" "$rc $out"
check_eq "and the gateway still serves" hello "$(pcurl https://api.example.test/ok/after-early)"

# HEAD, 204, 304 carry no body: pipelined on one connection, the last answer must still parse
printf 'HEAD /big HTTP/1.1\r\nHost: api.example.test\r\n\r\nGET /status/204 HTTP/1.1\r\nHost: api.example.test\r\n\r\nGET /status/304 HTTP/1.1\r\nHost: api.example.test\r\n\r\nGET /ok/after HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n' \
  | tunnel_raw api.example.test:443 >"$T/nobody.out"
r=$(cat "$T/nobody.out")
check_eq "HEAD, 204, 304, GET on one connection: statuses in order" "200 204 304 200" \
  "$(printf '%s' "$r" | grep -a -o '^HTTP/1.1 [0-9]*' | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//')"
check_match "HEAD answer keeps Content-Length: 1048576" 'Content-Length: 1048576' "$(printf '%s' "$r" | tr -d '\r')"
check_eq "no body bytes after HEAD/204/304: four heads, then exactly the last body" "4 'hello\n'" \
  "$("$PY" -c 'import sys; d=open(sys.argv[1],"rb").read().split(b"\r\n\r\n"); print(len(d)-1, repr(d[-1].decode()))' "$T/nobody.out")"
for p in 204 304; do
  out=$(pcurl -s -o "$T/b$p" -w '%{http_code} %{size_download}' "$PYU/$p")
  check_eq "python upstream $p relayed without a body" "$p 0" "$out"
done

# response framings
out=$(pcurl "$PYU/chunked" 2>&1); rc=$?
check_eq "chunked response relayed, and complete (curl exit 0)" "0 abcdefghi" "$rc $out"
check_eq "chunked then another request on the same connection" "abcdefghi 1py 0" \
  "$(pcurl -w ' %{num_connects}' "$PYU/chunked" "$PYU/plain" | tr '\n' ' ' | sed 's/  */ /g; s/ $//')"
pcurl -o "$T/nolen" "$PYU/nolen"
check_eq "close-delimited response relayed whole (11000 bytes)" 11000 "$(stat -c %s "$T/nolen")"
check_eq "close-delimited response content" "$(printf 'nolen-body\n%.0s' $(seq 1000) | sha256sum | cut -d' ' -f1)" "$(sha "$T/nolen")"
pcurl -o "$T/big" https://api.example.test/big
check_eq "1 MiB download is byte-identical (sha256)" "$(sha "$WWW/big")" "$(sha "$T/big")"

# hop-by-hop request headers are not forwarded
out=$(pcurl -H 'Connection: X-Foo' -H 'X-Foo: bar' -H 'Keep-Alive: timeout=5' -H 'Proxy-Connection: keep-alive' \
  -H 'Proxy-Authorization: Basic Zm9vOmJhcg==' -H 'X-Keep: yes' "$PYU/headers")
names=$(printf '%s' "$out" | jq -r '.headers[][0] | ascii_downcase' 2>&1 | sort | tr '\n' ' ')
check_match "an end-to-end header is forwarded (x-keep)" '(^| )x-keep ' "$names"
for h in x-foo keep-alive proxy-connection proxy-authorization; do
  check_nomatch "hop-by-hop header $h is not forwarded" "(^| )$h " "$names"
done
check_nomatch "the Connection header forwarded does not name X-Foo" 'x-foo' \
  "$(printf '%s' "$out" | jq -r '.headers[] | select(.[0]|ascii_downcase=="connection") | .[1] | ascii_downcase' 2>&1)"

# WebSocket: upgrade through the tunnel, 101 relayed, a frame echoes back
out=$($CLEAN timeout 30 "$PY" - "$PP" "$PYP" "$CA/ca.pem" <<'PY' 2>&1
import base64, os, socket, ssl, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
a = f"other.example.test:{sys.argv[2]}"
s.sendall(f"CONNECT {a} HTTP/1.1\r\nHost: {a}\r\n\r\n".encode())
h = b""
while b"\r\n\r\n" not in h: h += s.recv(1)
t = ssl.create_default_context(cafile=sys.argv[3]).wrap_socket(s, server_hostname="other.example.test")
key = base64.b64encode(os.urandom(16)).decode()
t.sendall(f"GET /ws HTTP/1.1\r\nHost: {a}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
h = b""
while b"\r\n\r\n" not in h:
    b = t.recv(1)
    if not b: break
    h += b
print(h.split(b"\r\n")[0].decode())
msg = b"hello-ws-" + os.urandom(4).hex().encode()
mask = os.urandom(4)
t.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(msg)))
f = b""
while len(f) < 2 + len(msg):
    b = t.recv(4096)
    if not b: break
    f += b
print("echo-ok" if f[0] == 0x81 and f[2:2 + f[1]] == msg else f"echo-bad {f!r}")
PY
)
check_eq "WebSocket: 101 relayed" "HTTP/1.1 101 Switching Protocols" "$(printf '%s\n' "$out" | sed -n 1p)"
check_eq "WebSocket: a frame echoes back through the gateway" echo-ok "$(printf '%s\n' "$out" | sed -n 2p)"
check "the upstream received the Upgrade request" sh -c "jq -e -s 'map(select(.target==\"/ws\" and (.headers|map(.[0]|ascii_downcase)|index(\"upgrade\")))) | length > 0' '$PYUPLOG'"
check "audit records the upgrade with status 101" audit_wait '.path=="/ws" and .status==101'
check_eq "still serving" hello "$(pcurl https://api.example.test/ok/end)"
finish
