#!/usr/bin/env bash
# Transparent listener: a namespace whose TCP 80/443 is redirected by nftables to the gateway (IPv4 and IPv6).
# HTTPS allowed/denied (403), deny verdict and unknown host (closed before TLS), Host != SNI (421), no SNI (host =
# original destination IP), plain HTTP on 80, a connection that was not redirected (closed, audited), a
# ClientHello split across segments, garbage first bytes, and a CONNECT from a proxy variable inside the sandbox
# (answered: the sandbox is transparent, unset the variable; issue 24).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
netns_make t v6
netns_redirect "80, 443"
PKI_EXTRA_SAN="IP:$NS_HOST"
NGX_LISTEN_EXTRA="$NS_HOST:443 ssl"
pki_init
nginx_start
policy_base <<Y | gw_conf
  other.example.test:
    allow_private: true
  blocked.example.test:
    verdict: deny
  "$NS_HOST":
    allow_private: true
    rules:
      - allow: { method: GET, path: "/ok/**" }
Y
gw_start
# TC ARGS: curl inside the namespace; every name resolves to the host side of the veth (then redirected)
TC() {
  ns_exec curl -sS --max-time 10 --cacert "$CA/ca.pem" \
    --resolve "api.example.test:443:$NS_HOST" --resolve "other.example.test:443:$NS_HOST" \
    --resolve "blocked.example.test:443:$NS_HOST" --resolve "unknown.example.test:443:$NS_HOST" \
    --resolve "api.example.test:80:$NS_HOST" --resolve "unknown.example.test:80:$NS_HOST" "$@"
}

# HTTPS
check_eq "redirected HTTPS to an allowed path: upstream body" hello "$(TC https://api.example.test/ok/t1)"
check "audit: sandbox, dest, sni and host of the transparent request" \
  audit_wait ".path==\"/ok/t1\" and .sandbox==\"$NS_ADDR\" and .sni==\"api.example.test\" and .host==\"api.example.test\" and .dest==\"$NS_HOST:443\" and .status==200"
check_eq "denied path: 403" 403 "$(TC -o /dev/null -w '%{http_code}' https://api.example.test/admin)"
check_eq "Host differing from SNI: 421" 421 "$(TC -o /dev/null -w '%{http_code}' -H 'Host: other.example.test' https://api.example.test/ok/t2)"
for h in blocked.example.test unknown.example.test; do
  TC -o /dev/null "https://$h/" >/dev/null 2>&1; rc=$?
  check_eq "$h (deny / not in policy): TLS closed before any HTTP (curl exit 35)" 35 "$rc"
  check "audit: a denial for $h with a reason" \
    audit_wait ".type==\"denial\" and .sni==\"$h\" and (.reason|length>0)"
done
check_eq "nothing for the refused hosts reached nginx" 0 "$(grep -Ec '^(blocked|unknown)' "$NGXLOG")"

# no SNI: the host is the original destination IP, judged as the IP-literal entry
check_eq "no SNI (curl to the IP): leaf for the IP, IP entry allows, body" hello "$(TC "https://$NS_HOST/ok/ip")"
check "audit: no-SNI request judged with host = original destination IP" \
  audit_wait ".path==\"/ok/ip\" and .host==\"$NS_HOST\" and ((.sni // \"\")==\"\") and .verdict==\"allow\""
check_eq "no SNI, path without a rule: 403" 403 "$(TC -o /dev/null -w '%{http_code}' "https://$NS_HOST/admin")"

# plain HTTP on port 80: the Host header is judged
check_eq "plain HTTP to an allowed path: upstream body" hello "$(TC http://api.example.test/ok/plain)"
check "nginx got the plain request on port 80" grep -q '^api.example.test "GET /ok/plain HTTP/1.1" 200' "$NGXLOG"
check_eq "plain HTTP to a path without a rule: 403" 403 "$(TC -o /dev/null -w '%{http_code}' http://api.example.test/admin)"
check_eq "plain HTTP with a Host not in policy: 403" 403 "$(TC -o /dev/null -w '%{http_code}' http://unknown.example.test/)"

# not redirected: straight to the transparent port, from the host and from the namespace
for from in host ns; do
  if [ $from = host ]; then pre=(env -i PATH=/usr/bin:/bin) dst=127.0.0.1; else pre=(ip netns exec "$NS" env -i PATH=/usr/bin:/bin) dst=$NS_HOST; fi
  r=$("${pre[@]}" timeout 20 "$PY" "$IT" tls_raw "$dst" "$TP" api.example.test "$CA/ca.pem" </dev/null 2>&1 | tail -n 1)
  check_match "direct connection to the transparent port ($from) is closed" 'EOF|reset|Connection|SSL|closed' "$r"
done
check "audit: denials for the unredirected connections name a reason" \
  eventually 5 sh -c "[ \$(jq -c 'select(.type==\"denial\" and (.reason|test(\"not redirected\")))' '$AUDIT' | wc -l) -ge 2 ]"

# a first byte that is neither TLS nor an HTTP method
r=$(printf '\000\001\002garbage\r\n\r\n' | ns_exec env IT_IDLE=3 timeout 20 "$PY" "$IT" proxy_raw "$NS_HOST" 443 2>&1)
check_eq "garbage first bytes: closed without a reply" "" "$r"

# ClientHello split across segments (first 10 bytes, pause, rest)
out=$(ns_exec timeout 30 "$PY" - "$NS_HOST" "$CA/ca.pem" <<'PY' 2>&1
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
o = ctx.wrap_bio(inb, outb, server_hostname="api.example.test")
s = socket.create_connection((sys.argv[1], 443), timeout=10)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
try:
    o.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = outb.read()
s.sendall(hello[:10]); time.sleep(0.2); s.sendall(hello[10:])
def pump():
    d = outb.read()
    if d: s.sendall(d)
while True:
    try:
        o.do_handshake(); pump(); break
    except ssl.SSLWantReadError:
        pump()
        b = s.recv(65536)
        if not b: sys.exit("closed during handshake")
        inb.write(b)
o.write(b"GET /ok/split HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n"); pump()
r = b""
while True:
    try:
        d = o.read(65536)
        if not d:  # close_notify: the gateway ended the response cleanly
            break
        r += d
    except ssl.SSLWantReadError:
        b = s.recv(65536)
        if not b: break
        inb.write(b)
    except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
        break
print(r.split(b"\r\n")[0].decode(), r.split(b"\r\n\r\n", 1)[-1].decode().strip())
PY
)
check_match "ClientHello split across segments: request served" '^HTTP/1.1 200 .* hello$' "$out"

# IPv6 inside the namespace, redirected to the [::] listener
out=$(ns_exec curl -sS -6 --max-time 10 --cacert "$CA/ca.pem" --resolve "api.example.test:443:[$NS_HOST6]" https://api.example.test/ok/v6 2>&1)
check_eq "IPv6: redirected HTTPS is intercepted and allowed" hello "$out"
check "audit: IPv6 request with the namespace's v6 source" audit_wait ".path==\"/ok/v6\" and .sandbox==\"$NS_ADDR6\""
out=$(ns_exec curl -s -6 -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$CA/ca.pem" --resolve "api.example.test:443:[$NS_HOST6]" https://api.example.test/admin 2>&1)
check_eq "IPv6: denied path: 403" 403 "$out"
out=$(ns_exec curl -s -6 --max-time 10 --resolve "api.example.test:80:[$NS_HOST6]" http://api.example.test/ok/v6plain 2>&1)
check_eq "IPv6: plain HTTP on port 80" hello "$out"
# a proxy variable passed into the transparent sandbox (issue 24): the CONNECT reaches the transparent listener, whose
# answer says that this sandbox is transparent and the variable should be unset, in the status line (all that Python
# and Go print of a refused CONNECT) and in the JSON body
out=$(ns_exec HTTPS_PROXY="http://$NS_HOST:80" "$PY" -c '
import sys, urllib.request, ssl
ctx = ssl.create_default_context(cafile=sys.argv[1])
try:
    urllib.request.urlopen("https://api.example.test/ok/x", context=ctx, timeout=10)
    print("no error")
except Exception as e:
    print(e)' "$CA/ca.pem" 2>&1)
check_match "CONNECT inside a transparent sandbox: Python's urllib prints that the sandbox is transparent" \
  'Tunnel connection failed: 405 Sandbox Is Transparent: Unset HTTPS_PROXY' "$out"
out=$(ns_exec curl -sS -v --max-time 10 --cacert "$CA/ca.pem" -x "http://$NS_HOST:80" https://api.example.test/ok/x 2>&1)
check_match "  curl -v shows it in the status line" '< HTTP/1.1 405 Sandbox Is Transparent: Unset HTTPS_PROXY' "$out"
check_nomatch "  and not the old, false, reason" 'only accepted as the first request' "$out"
check "  audit: a 405 naming the proxy variables" audit_wait '.status==405 and (.reason|test("unset HTTPS_PROXY"))'
check_eq "still serving after all of the above" hello "$(TC https://api.example.test/ok/end)"
finish
