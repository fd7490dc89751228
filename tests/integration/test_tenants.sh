#!/usr/bin/env bash
# No upstream connection crosses tenants (issue 17, requirement 4). One worker, so every request could share its
# pool: HTTP/1.1 upstream connections (tenant_upstream.py numbers them) are reused by the same sandbox and never
# handed to another one, credential or not (two registered sandboxes, one sandbox from the policy, two clients no
# sandbox claims, which are told apart by address); a sandbox removed and registered again under the same name is
# a new tenant. A hostile upstream that answers twice (a desync): the second, unrequested answer never reaches
# another sandbox. HTTP/2 upstream sessions (h2_upstream.py numbers them) are shared by one sandbox's requests and
# never by two. Values are random per run and never printed.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
ULOG=$T/up.jsonl HLOG=$T/h2up.jsonl
GW_WORKERS=1

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_A="va_$(rnd 30)"
PH="sluice_ph_t$ID$(rnd 20)"

pki_init
tenant_upstream_start
HP=$(freeport)
spawn "$T/h2up.out" env ECHO_MASK_A="$SLUICE_IT_A" PYTHONPATH="$HERE" "$PY" "$HERE/h2_upstream.py" \
  --listen "$UPADDR:$HP" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$HLOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "upstream did not start: $(tail -n 3 "$T/up.log")"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$HP '" || die "h2 upstream did not start: $(tail -n 3 "$T/h2up.out")"
policy_base 'allow: { method: GET }' <<YAML | gw_conf
  other.example.test:
    allow_private: true
    ports: [$HP]
    rules:
      - allow: { method: GET }
secrets:
  a:
    source: env:SLUICE_IT_A
    placeholder: "$PH"
    hosts: [api.example.test, other.example.test]
    inject: [header:Authorization]
sandboxes:
  pol:
    addresses: [127.0.0.6/32]
YAML
gw_start
adm() { curl -sS --max-time 5 --unix-socket "$ADMIN" -o /dev/null -w '%{http_code}' "$@"; }
register() { adm -X POST -d "{\"name\":\"$1\",\"addresses\":[\"$2/32\"]}" http://x/sandboxes; }
# get FROM PATH WHO [curl args]: a GET of api.example.test from source address FROM with X-Who: WHO; prints the body
get() {
  local from=$1 path=$2 who=$3; shift 3
  pcurl --interface "$from" -H "X-Who: $who" "$@" "https://api.example.test$path"
}
# conn PATH: the upstream connection PATH came on
conn() { jq -r --arg p "$1" 'select(.path == $p) | .conn' "$ULOG" 2>/dev/null | head -n 1; }
AUTH=(-H "Authorization: Bearer $PH")

check_eq "register ta (127.0.0.3): 201" 201 "$(register ta 127.0.0.3)"
check_eq "register tb (127.0.0.4): 201" 201 "$(register tb 127.0.0.4)"

echo "# HTTP/1.1 pool: reused within a tenant, never across"
get 127.0.0.3 /a/1 a "${AUTH[@]}" >/dev/null
get 127.0.0.4 /b/1 b >/dev/null
get 127.0.0.3 /a/2 a >/dev/null
get 127.0.0.4 /b/2 b "${AUTH[@]}" >/dev/null
get 127.0.0.6 /p/1 p >/dev/null
get 127.0.0.9 /u9/1 u9 >/dev/null
get 127.0.0.10 /u10/1 u10 >/dev/null
get 127.0.0.9 /u9/2 u9 >/dev/null
check_match "  the upstream saw every request (8)" '^8$' "$(wc -l <"$ULOG")"
check_eq "  sandbox ta's two requests shared one pooled connection (the pool still works)" "$(conn /a/1)" "$(conn /a/2)"
check_eq "  so did tb's" "$(conn /b/1)" "$(conn /b/2)"
check_eq "  and the unknown client 127.0.0.9's" "$(conn /u9/1)" "$(conn /u9/2)"
conns="$(conn /a/1) $(conn /b/1) $(conn /p/1) $(conn /u9/1) $(conn /u10/1)"
check_eq "  ta, tb, the policy's sandbox pol and the unknown 127.0.0.9 and 127.0.0.10: five connections" 5 \
  "$(printf '%s\n' $conns | sort -u | wc -l)"
check_eq "  ta's injected request and tb's plain one were on different connections" 1 \
  "$([ "$(conn /a/1)" != "$(conn /b/1)" ] && echo 1)"

echo "# a sandbox registered again under the same name is a new tenant"
check_eq "  DELETE ta: 204" 204 "$(adm -X DELETE http://x/sandboxes/ta)"
check_eq "  register ta again (same address): 201" 201 "$(register ta 127.0.0.3)"
get 127.0.0.3 /a/3 a >/dev/null
check_nomatch "  its request does not reuse the old registration's connection" "^$(conn /a/1)\$" "$(conn /a/3)"

echo "# a hostile upstream answers twice (desync): the extra answer never reaches another sandbox"
out=$(get 127.0.0.3 /desync a "${AUTH[@]}")
check_match "  ta gets its answer" '^conn=[0-9]+ n=[0-9]+ who=a$' "$out"
out=$(get 127.0.0.4 /b/3 b)
check_match "  tb, right after, gets its own answer" '^conn=[0-9]+ n=[0-9]+ who=b$' "$out"
check_nomatch "  never the answer meant for ta" 'DESYNC' "$out"
check_nomatch "  the desynchronised connection carried no request of tb" "^$(conn /desync)\$" "$(conn /b/3)"
sleep 1.2  # the extra answer arrives on ta's idle pooled connection: it is dropped, not kept
out=$(get 127.0.0.3 /a/4 a)
check_nomatch "  ta's next request does not read the stray answer either (the pool drops a connection that speaks)" \
  'DESYNC' "$out"

echo "# HTTP/2 upstream sessions: one per tenant"
H="https://other.example.test:$HP"
hconn() { jq -r --arg p "$1" 'select(.ev == "req" and .path == $p) | .conn' "$HLOG" 2>/dev/null | head -n 1; }
pcurl --interface 127.0.0.3 --http2 "${AUTH[@]}" -o /dev/null "$H/h2/a1"
pcurl --interface 127.0.0.4 --http2 -o /dev/null "$H/h2/b1"
pcurl --interface 127.0.0.3 --http2 -o /dev/null "$H/h2/a2"
pcurl --interface 127.0.0.4 --http2 "${AUTH[@]}" -o /dev/null "$H/h2/b2"
check_eq "  ta's two requests shared one upstream h2 session" "$(hconn /h2/a1)" "$(hconn /h2/a2)"
check_eq "  tb's two requests shared another" "$(hconn /h2/b1)" "$(hconn /h2/b2)"
check_eq "  and ta's and tb's sessions are two" 1 "$([ -n "$(hconn /h2/a1)" ] && [ "$(hconn /h2/a1)" != "$(hconn /h2/b1)" ] && echo 1)"
# concurrent: both tenants at once, 4 streams each
BG=()
for i in 1 2 3 4; do
  pcurl --interface 127.0.0.3 --http2 -o /dev/null "$H/h2/ca$i" & BG+=($!)
  pcurl --interface 127.0.0.4 --http2 -o /dev/null "$H/h2/cb$i" & BG+=($!)
done
wait "${BG[@]}"
ca=$(jq -r 'select(.ev == "req" and (.path | startswith("/h2/ca"))) | .conn' "$HLOG" | sort -u | tr '\n' ' ')
cb=$(jq -r 'select(.ev == "req" and (.path | startswith("/h2/cb"))) | .conn' "$HLOG" | sort -u | tr '\n' ' ')
check_match "  concurrently, ta's streams all arrived" '[0-9]' "$ca"
overlap=$(comm -12 <(printf '%s\n' $ca | sort) <(printf '%s\n' $cb | sort) | wc -l)
check_eq "  no upstream h2 session carried streams of both" 0 "$overlap"

check "no real value in any file of the run" sh -c "! grep -rqaF -e \"\$SLUICE_IT_A\" '$T'"
gw_final_checks
finish
