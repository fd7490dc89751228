#!/usr/bin/env bash
# Signals: SIGHUP reloads the policy (a newly denied path is 403 after it), a broken file keeps the old policy
# and logs "reload failed"; SIGTERM lets a slow download finish within limits.drain and exits 0, stops
# accepting new connections meanwhile, cuts what outlives the drain, and exits promptly with only idle
# keep-alive connections open.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
nginx_start
head -c 262144 /dev/urandom >"$WWW/slow/256k"     # 4 s at nginx's 64 KiB/s
head -c 1048576 /dev/urandom >"$WWW/slow/1m"      # 16 s
policy() { # policy [RULE]: RULE (as in policy_base) goes before the two allows
  policy_base "$@" 'allow: { method: GET, path: "/ok/**" }' 'allow: { method: GET, path: "/slow/**" }' </dev/null
}
GW_EXTRA="limits: { drain: 20s }"
policy | gw_conf
gw_start

# SIGHUP: a changed policy
check_eq "before reload /ok/hup is allowed" hello "$(pcurl https://api.example.test/ok/hup)"
policy 'deny: { method: GET, path: "/ok/hup", id: hup-deny }' | gw_conf
gw_hup
check "after SIGHUP /ok/hup is denied (403)" eventually 10 sh -c \
  "[ \"\$($CLEAN curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:$PP --cacert '$CA/ca.pem' https://api.example.test/ok/hup)\" = 403 ]"
code=$(pcurl -s -o "$T/b" -w '%{http_code}' https://api.example.test/ok/hup)
check_eq "the 403 after reload names the new rule" "403 hup-deny" "$code $(jq -r .rule "$T/b" 2>&1)"
check_eq "other paths still allowed after reload" hello "$(pcurl https://api.example.test/ok/other)"

# SIGHUP: a broken file keeps the old policy
cp "$GWCONF" "$T/good.yaml"
policy 'allow: { method: GET, path: "/ok/**", bogus: 1 }' | gw_conf
gw_hup
check "the log says reload failed with file:line:col" eventually 10 grep -Eq "reload failed, keeping the previous policy: $GWCONF:[0-9]+:[0-9]+: " "$GWLOG"
check "the gateway is still running" kill -0 "$GWPID"
check_eq "old policy still served: /ok/hup still 403" 403 "$(pcurl -s -o /dev/null -w '%{http_code}' https://api.example.test/ok/hup)"
check_eq "old policy still served: /ok/other still allowed" hello "$(pcurl https://api.example.test/ok/other)"
cp "$T/good.yaml" "$GWCONF"

# SIGTERM during a slow download: it completes within the drain, then exit 0
pcurl -s --max-time 60 -o "$T/dl" https://api.example.test/slow/256k 2>/dev/null & DL=$!
eventually 10 test -s "$T/dl"
check "download under way before SIGTERM" test -s "$T/dl"
kill -TERM "$GWPID"
sleep 0.5
$CLEAN curl -s -o /dev/null --max-time 5 -x "http://127.0.0.1:$PP" --cacert "$CA/ca.pem" https://api.example.test/ok/new; rc=$?
check_eq "while draining a new connection is refused (curl exit 7)" 7 "$rc"
wait "$DL"; rc=$?
check_eq "the slow download completed (curl exit 0)" 0 "$rc"
check_eq "the downloaded bytes are identical" "$(sha256sum <"$WWW/slow/256k")" "$(sha256sum <"$T/dl")"
gw_wait 30
check_eq "the gateway exited 0 after the drain" 0 "$GW_RC"
check "the log says it drained and stopped" grep -q 'stopped' "$GWLOG"

# SIGTERM: what outlives limits.drain is cut, and the gateway still exits 0
GW_EXTRA="limits: { drain: 2s }"
policy | gw_conf
gw_start
pcurl -s --max-time 60 -o "$T/dl2" https://api.example.test/slow/1m 2>/dev/null & DL=$!
eventually 10 test -s "$T/dl2"
kill -TERM "$GWPID"
gw_wait 15
check_eq "with drain 2s and a 16 s download the gateway exits 0 by itself" 0 "$GW_RC"
wait "$DL"; rc=$?
check "the cut download is reported as failed by curl" test "$rc" -ne 0
check "the cut download is short" test "$(stat -c %s "$T/dl2")" -lt 1048576

# SIGTERM with only idle keep-alive connections: exits promptly (well before limits.drain)
GW_EXTRA="limits: { drain: 60s }"
policy | gw_conf
gw_start
$CLEAN timeout 40 "$PY" - "$PP" "$CA/ca.pem" >"$T/idle.out" 2>&1 <<'PY' &
import socket, ssl, sys, time
conns = []
for i in range(3):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=35)
    s.sendall(b"CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
    s.recv(4096)
    t = ssl.create_default_context(cafile=sys.argv[2]).wrap_socket(s, server_hostname="api.example.test")
    t.sendall(b"GET /ok/idle HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
    r = b""
    while not r.endswith(b"\r\n\r\nhello\n"):
        r += t.recv(4096)
    conns.append(t)
print("idle", flush=True)
for t in conns:
    try:
        print("eof" if t.recv(4096) == b"" else "data", flush=True)
    except Exception as e:
        print("closed", type(e).__name__, flush=True)
PY
IDLE=$!
eventually 15 grep -q idle "$T/idle.out"
check "three idle keep-alive connections are open" grep -q idle "$T/idle.out"
kill -TERM "$GWPID"
gw_wait 10
check_eq "with only idle connections the gateway exits 0 long before drain (60 s)" 0 "$GW_RC"
wait "$IDLE"
check_eq "each idle client saw its connection closed" 3 "$(grep -Ec '^(eof|closed)' "$T/idle.out")"
finish
