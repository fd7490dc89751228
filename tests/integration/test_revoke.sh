#!/usr/bin/env bash
# Revocation reaches open connections (issue 17, F11). One client connection (revclient.py) is kept open across a
# revocation, and what it does next is checked on the recording upstream (tenant_upstream.py, values masked) and in
# the audit:
#   - HTTP/1.1, a reload that removes the secret: the idle connection is closed; its next request never arrives
#   - HTTP/1.1, a reload that only adds a deny rule: the next request on the same connection is judged under the
#     new policy (403), and the connection goes on (200)
#   - HTTP/1.1, DELETE /sandboxes/<name> while a request is in flight: its answer says Connection: close, the
#     connection ends, the next request never arrives
#   - a request judged (value injected) but still waiting for its body when the sandbox is removed: refused (503),
#     nothing reaches the upstream (the check where the injected bytes would leave)
#   - WebSocket whose upgrade carried an injected value, DELETE: the tunnel closes
#   - HTTP/2, a reload that removes the (policy) sandbox, and DELETE of a registered one: GOAWAY, no new stream
#     reaches the upstream
# Each revocation is audited (type "revocation": action, reason). No real value is printed or left in a file.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
ULOG=$T/up.jsonl
GW_WORKERS=1

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_A="va_$(rnd 30)"
PH="sluice_ph_r$ID$(rnd 20)"

pki_init
tenant_upstream_start
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "upstream did not start: $(tail -n 3 "$T/up.log")"

# conf SECRET(0/1) DENY(0/1) AGENT(0/1): the policy, with or without secret a, a deny rule, the sandbox "agent"
conf() {
  local rules=('allow: { method: GET }' 'allow: { method: POST, path: "/post/**" }')
  [ "$2" = 1 ] && rules=('deny: { path: "/denied/**" }' "${rules[@]}")
  {
    if [ "$1" = 1 ]; then
      printf 'secrets:\n  a:\n    source: env:SLUICE_IT_A\n    placeholder: "%s"\n' "$PH"
      printf '    hosts: [api.example.test]\n    inject: [header:Authorization]\n'
    fi
    if [ "$3" = 1 ]; then printf 'sandboxes:\n  agent:\n    addresses: [127.0.0.6/32]\n'; fi
  } | policy_base "${rules[@]}" | gw_conf
}
GEN=1
reload() {  # conf args; waits for the next generation's config_reload record
  conf "$@"
  GEN=$((GEN + 1))
  gw_hup
  audit_wait "select(.type == \"config_reload\" and .result == \"ok\" and .generation == $GEN)" 10 ||
    bad "reload to generation $GEN"
}
conf 1 0 1
gw_start
adm() { curl -sS --max-time 5 --unix-socket "$ADMIN" -o /dev/null -w '%{http_code}' "$@"; }
register() { adm -X POST -d "{\"name\":\"$1\",\"addresses\":[\"$2/32\"]}" http://x/sandboxes; }
# client OUT SOURCE [revclient args...]: one connection in the background, its lines in OUT
client() {
  local out=$1 src=$2; shift 2
  $CLEAN "$PY" "$HERE/revclient.py" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --host api.example.test \
    --source "$src" "$@" >"$out" 2>"$out.err" &
  CLIENT=$!
}
# up JQ: the upstream's records that satisfy JQ, compact
up() { jq -c "select($1)" "$ULOG" 2>/dev/null; }
# seen PATH: how the upstream saw PATH's Authorization ("" when PATH never arrived)
seen() { jq -r --arg p "$1" 'select(.path == $p) | .auth' "$ULOG" 2>/dev/null; }
AUTH=(-H "Authorization: Bearer $PH")

echo "# HTTP/1.1: a reload removes the secret while the connection is idle"
check_eq "register sb-one (127.0.0.3): 201" 201 "$(register sb-one 127.0.0.3)"
client "$T/c1" 127.0.0.3 "${AUTH[@]}" get /h1/one mark "$T/m1" wait "$T/g1" get /h1/two eof
eventually 10 test -e "$T/m1" || bad "the first request did not complete"
check_eq "  the first request had the value injected" "Bearer {{A}}" "$(seen /h1/one)"
reload 0 0 1
touch "$T/g1"; wait "$CLIENT"
check_match "  the first request: 200" '^get /h1/one status 200 ' "$(cat "$T/c1")"
check_match "  the next request on the same connection finds it closed" '^get /h1/two closed$' "$(cat "$T/c1")"
check_eq "  and the upstream never saw it" "" "$(seen /h1/two)"
check "  audited: revocation, closed, the policy's secrets changed" audit_wait \
  '.type == "revocation" and .sandbox == "sb-one" and .action == "closed" and (.reason | test("secrets or sandboxes")) and .conn > 0'

echo "# HTTP/1.1: a reload that only adds a deny rule applies to the next request on an open connection"
reload 1 0 1
client "$T/c2" 127.0.0.3 get /ok/1 mark "$T/m2" wait "$T/g2" get /denied/x get /ok/2
C2=$CLIENT
client "$T/c2h" 127.0.0.3 --h2 get /ok/h2a mark "$T/m2h" wait "$T/g2" get /denied/h2 get /ok/h2b
eventually 10 test -e "$T/m2" || bad "the first request did not complete"
eventually 10 test -e "$T/m2h" || bad "the first stream did not complete"
reload 1 1 1
touch "$T/g2"; wait "$C2" "$CLIENT"
check_match "  HTTP/2 too: the next stream is judged under the new rule (403)" '^get /denied/h2 status 403' \
  "$(cat "$T/c2h")"
check_match "  and the connection goes on (200)" '^get /ok/h2b status 200' "$(cat "$T/c2h")"
check_eq "  /denied/h2 never reached the upstream" "" "$(seen /denied/h2)"
check_match "  the request before the reload: 200" '^get /ok/1 status 200 ' "$(cat "$T/c2")"
check_match "  the next request on the same connection is judged under the new rule: 403" \
  '^get /denied/x status 403 ' "$(cat "$T/c2")"
check_match "  and the connection goes on (no secret or sandbox changed): 200" '^get /ok/2 status 200 close 0' \
  "$(cat "$T/c2")"
check_eq "  /denied/x never reached the upstream" "" "$(seen /denied/x)"
check_eq "  all three requests came on the one client connection (one audit conn id)" 1 \
  "$(audit_get '.type == "request" and (.path == "/ok/1" or .path == "/ok/2" or .path == "/denied/x")' | jq -s 'map(.conn) | unique | length')"

echo "# HTTP/1.1: DELETE /sandboxes/<name> while a request is in flight"
check_eq "register sb-two (127.0.0.4): 201" 201 "$(register sb-two 127.0.0.4)"
client "$T/c3" 127.0.0.4 "${AUTH[@]}" send /slow/1500 read /slow/1500 get /h1/after eof
eventually 10 sh -c "jq -e 'select(.path == \"/slow/1500\")' '$ULOG'" || bad "the slow request did not arrive"
check_eq "  DELETE sb-two: 204" 204 "$(adm -X DELETE http://x/sandboxes/sb-two)"
wait "$CLIENT"
check_match "  the request in flight completes, its answer says Connection: close" \
  '^read /slow/1500 status 200 close 1 ' "$(cat "$T/c3")"
check_match "  the next request finds the connection closed" '^get /h1/after closed$' "$(cat "$T/c3")"
check_eq "  and the upstream never saw it" "" "$(seen /h1/after)"
check "  audited: revocation, close_after_request, registration removed" audit_wait \
  '.type == "revocation" and .sandbox == "sb-two" and .action == "close_after_request" and (.reason | test("registration was removed"))'

echo "# a request judged (value injected) and still waiting for its body when its sandbox is removed"
check_eq "register sb-post (127.0.0.7): 201" 201 "$(register sb-post 127.0.0.7)"
client "$T/c4" 127.0.0.7 "${AUTH[@]}" post /post/x 5 mark "$T/m4" wait "$T/g4" rest 5 read /post/x eof
eventually 10 test -e "$T/m4" || bad "the post did not start"
sleep 0.3  # its head reaches the gateway
check_eq "  DELETE sb-post: 204" 204 "$(adm -X DELETE http://x/sandboxes/sb-post)"
touch "$T/g4"; wait "$CLIENT"
check_match "  refused when it would leave: 503, Connection: close" '^read /post/x status 503 close 1 ' "$(cat "$T/c4")"
check_eq "  nothing of it reached the upstream" "" "$(seen /post/x)"
check "  audited: revocation, request_refused" audit_wait \
  '.type == "revocation" and .sandbox == "sb-post" and .action == "request_refused"'
check "  and its response record says why (503, rule revocation)" audit_wait \
  '.type == "request" and .path == "/post/x" and .status == 503 and .rule == "revocation"'

echo "# WebSocket: the upgrade carried an injected value; DELETE closes the tunnel"
check_eq "register sb-ws (127.0.0.5): 201" 201 "$(register sb-ws 127.0.0.5)"
client "$T/c5" 127.0.0.5 "${AUTH[@]}" wsopen /ws wsmsg one mark "$T/m5" wait "$T/g5" wsmsg two eof
eventually 10 test -e "$T/m5" || bad "the WebSocket did not open"
check_eq "  the upgrade had the value injected" "Bearer {{A}}" "$(seen /ws)"
check_eq "  DELETE sb-ws: 204" 204 "$(adm -X DELETE http://x/sandboxes/sb-ws)"
touch "$T/g5"; wait "$CLIENT"
check_match "  before: 101 and an echo" '^wsopen status 101' "$(cat "$T/c5")"
check_match "  ..." '^wsmsg text echo:one$' "$(cat "$T/c5")"
check_match "  after: the tunnel is closed" '^wsmsg (closed|close)$' "$(cat "$T/c5")"
check "  audited: revocation, tunnel_closed" audit_wait \
  '.type == "revocation" and .sandbox == "sb-ws" and .action == "tunnel_closed"'

echo "# WebSocket over HTTP/2 (RFC 8441): the stream whose upgrade carried an injected value is reset"
check_eq "register sb-h2ws (127.0.0.11): 201" 201 "$(register sb-h2ws 127.0.0.11)"
$CLEAN H2CLIENT_SOURCE=127.0.0.11 "$PY" "$HERE/h2client.py" "$PP" "$CA/ca.pem" api.example.test ws /ws \
  -H "authorization: Bearer $PH" one "@mark:$T/m8" "@wait:$T/g8" two >"$T/c8" 2>&1 &
CLIENT=$!
eventually 10 test -e "$T/m8" || bad "the h2 WebSocket did not open"
check_eq "  DELETE sb-h2ws: 204" 204 "$(adm -X DELETE http://x/sandboxes/sb-h2ws)"
touch "$T/g8"; wait "$CLIENT"
check_match "  before: 200 and an echo, then the stream is reset (CANCEL) or the connection goes away" \
  '^status 200~text echo:one~(reset 8|goaway 0|closed)' "$(cat "$T/c8")"
check_nomatch "  the message after the removal is not echoed" 'echo:two' "$(cat "$T/c8")"
check_eq "  the upgrade had the value injected" "Bearer {{A}}" "$(jq -r 'select(.path == "/ws") | .auth' "$ULOG" | sort -u)"
check "  audited: revocation, tunnel_closed" audit_wait \
  '.type == "revocation" and .sandbox == "sb-h2ws" and .action == "tunnel_closed"'

echo "# HTTP/2: a reload removes the sandbox (agent, from the policy)"
client "$T/c6" 127.0.0.6 --h2 "${AUTH[@]}" get /h2/one mark "$T/m6" wait "$T/g6" get /h2/two eof
eventually 10 test -e "$T/m6" || bad "the first stream did not complete"
check_eq "  the first stream had the value injected" "Bearer {{A}}" "$(seen /h2/one)"
reload 1 1 0
touch "$T/g6"; wait "$CLIENT"
check_match "  the first stream: 200" '^get /h2/one status 200' "$(cat "$T/c6")"
check_match "  the next stream is refused by GOAWAY (or the connection is gone)" '^get /h2/two (goaway|closed)$' \
  "$(cat "$T/c6")"
check_match "  the client saw GOAWAY (NO_ERROR) and the connection ended" '^eof goaway 0 yes$' "$(cat "$T/c6")"
check_eq "  the upstream never saw /h2/two" "" "$(seen /h2/two)"
check "  audited: revocation, goaway" audit_wait '.type == "revocation" and .sandbox == "agent" and .action == "goaway"'

echo "# HTTP/2: DELETE of a registered sandbox"
check_eq "register sb-h2 (127.0.0.8): 201" 201 "$(register sb-h2 127.0.0.8)"
client "$T/c7" 127.0.0.8 --h2 "${AUTH[@]}" get /h2/three mark "$T/m7" wait "$T/g7" get /h2/four eof
eventually 10 test -e "$T/m7" || bad "the first stream did not complete"
check_eq "  the first stream had the value injected" "Bearer {{A}}" "$(seen /h2/three)"
check_eq "  DELETE sb-h2: 204" 204 "$(adm -X DELETE http://x/sandboxes/sb-h2)"
touch "$T/g7"; wait "$CLIENT"
check_match "  the next stream is refused" '^get /h2/four (goaway|closed)$' "$(cat "$T/c7")"
check_eq "  the upstream never saw /h2/four" "" "$(seen /h2/four)"
check "  audited: revocation, goaway, registration removed" audit_wait \
  '.type == "revocation" and .sandbox == "sb-h2" and .action == "goaway" and (.reason | test("registration"))'

check "the audit chain verifies" "$SLUICE" audit verify "$AUDIT"
check "no real value in any file of the run" sh -c "! grep -rqaF -e \"\$SLUICE_IT_A\" '$T'"
gw_final_checks
finish
