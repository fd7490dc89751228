#!/usr/bin/env bash
# Semantic policy in the gateway (issue 6), end to end: real gateway, the python TLS upstream (pyup: it logs every
# request head it receives, /sha answers "LEN SHA256" of the body), curl under env -i with the gateway's CA, over
# HTTP/1.1 AND h2 (curl --http1.1 / --http2 through the explicit proxy) for every kind of verdict.
#   conditions: json (in, [*] with one item over max, $.messages[0].role), duplicate keys, invalid UTF-8, 10,000-deep
#     nesting, a non-JSON body on a JSON rule (all 403, default deny); graphql (a mutation hidden behind the allowed
#     operation name, an alias, a second operation: 403); form (max, repeated fields judged by every value); query and
#     header conditions;
#   bodies: 413 over a rule's max_body; a Content-Length of 100 MB with 1 KB sent (413 within the body timeout, RSS
#     bounded); a body that stalls under max_body (ended by limits.body, nothing upstream);
#   counters: a 2/second limit (429 + Retry-After + JSON naming it, then 200 after the wait), per sandbox vs global
#     (two client addresses, two sandboxes), kept across a SIGHUP reload when the rule id is kept (a renamed id
#     starts afresh), a day budget (equal to max passes, past it 429) that stays spent across kill -9 + restart;
#   report mode: a host in report mode and a report rule: the request passes, the audit says what enforce would do;
#   holds: approve (after longer than limits.body: the request completes upstream with its held body, the secret
#     injected into it), reject (403), timeout (403), client gone (curl gives up; over h2 also RST_STREAM on a live
#     connection): the approval disappears and nothing reaches the upstream; `approval` audit records name who decided;
#     the listing shows a placeholder carried in the body, never the secret's value (the whole run is scanned).
# Every refused request carries a marker (?c=...) that must never appear in the upstream's log.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
RAW=$HERE/rawclient.py SEMC=$HERE/semclient.py
OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
VALUE="semv$(rnd 32)"                      # the secret's value: only the gateway gets it (at gw_start); never printed
PH="sluice_ph_sem$ID$(rnd 20)"             # its placeholder, what the sandbox sends
[ ${#VALUE} -eq 36 ] || die "setup: the value was not made"
mask() { local m; m=$(cat); printf '%s\n' "${m//"$VALUE"/'{{VALUE}}'}"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*" | mask; }
RSS_MAX=24   # MiB of gateway RSS growth allowed around the hostile bodies

# ---------------------------------------------------------------- upstream, policy, gateway
pki_init
PYP=$(freeport)
pyup_start "$PYP"
# nginx (h2 and HTTP/1.1 on 443) in front: it reads every body and passes every request to pyup. With the python
# upstream alone, the gateway would learn that the host speaks only HTTP/1.1 and answer h2 clients with http/1.1.
printf 'location ~ ^/ { proxy_pass https://%s:%s; proxy_ssl_verify off; }\n' "$UPADDR" "$PYP" >"$T/ngx-snippet"
NGINX_H2=1 nginx_start "$T/ngx-snippet"
# shellcheck disable=SC2034  # read by gw_conf (lib.sh)
GW_EXTRA="state_dir: $T/state
reload: { watch: false }
limits: { body: 3s }"
# policy_text [EXTRA_RULE] [RENAMED_ID]: the policy; a reload adds EXTRA_RULE and renames rule ren-a
policy_text() {
  cat <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
    rules:
      - { id: chat, allow: { method: POST, path: /chat.postMessage, json: { "\$.channel": { in: [C0BOTS, C0ALERTS] } } } }
      - { id: chat-sha, allow: { method: POST, path: /sha, json: { "\$.channel": { in: [C0BOTS] } } } }
      - { id: cart, allow: { method: POST, path: /cart, json: { "\$.items[*].amount": { max: 100 } } } }
      - { id: roles, allow: { method: POST, path: /messages, json: { "\$.messages[0].role": system } } }
      - id: gql
        allow:
          method: POST
          path: /graphql
          graphql: { type: query, name: { in: [GetViewer] }, fields: { in: [viewer, repository] } }
      - { id: pay, allow: { method: POST, path: /pay, form: { amount: { max: 5000 }, currency: { eq: usd } } } }
      - id: search
        allow:
          method: GET
          path: /search
          query: { q: { regex: "[a-z]+" }, debug: { absent: true } }
          headers: { X-Api-Version: { eq: "2" } }
      - { id: small, allow: { method: POST, path: /small, json: { "\$.ok": true }, max_body: 4K } }
      - { id: no-tools, mode: report, deny: { path: /chat2, json: { "\$.tools": { exists: true } } } }
      - { id: chat2, allow: { method: POST, path: /chat2 } }
      - { id: rate-h1, allow: { method: POST, path: /rate1, limit: { rate: 2/second, per: sandbox } } }
      - { id: rate-h2, allow: { method: POST, path: /rate2, limit: { rate: 2/second, per: sandbox } } }
      - { id: per-sandbox, allow: { method: POST, path: /persb, limit: { rate: 1/minute, per: sandbox } } }
      - { id: per-global, allow: { method: POST, path: /global, limit: { rate: 1/minute, per: global } } }
      - { id: keep, allow: { method: POST, path: /keep, limit: { rate: 2/minute } } }
      - { id: ${2:-ren-a}, allow: { method: POST, path: /ren, limit: { rate: 1/minute } } }
      - id: spend
        allow:
          method: POST
          path: /spend
          form: { amount: { max: 5000 }, currency: { eq: usd } }
          budget: { sum: "form:amount", max: 8000, per: day }
${1:+      - $1}
  www.example.test:
    allow_private: true
    rules:
      - id: refunds
        hold: { method: POST, path: /sha, timeout: 30s, form: { payment_intent: { exists: true }, api_key: { exists: true } } }
      - { id: quick, hold: { method: POST, path: /quick, timeout: 2s } }
      - { id: www-read, allow: { method: GET, path: "/ok/**" } }
  other.example.test:
    allow_private: true
    mode: report
    rules:
      - { id: rep-admin, deny: { path: "/admin/**" } }
      - { id: rep-read, allow: { method: GET } }
secrets:
  semkey:
    source: env:SLUICE_IT_SEMKEY
    placeholder: "$PH"
    hosts: [www.example.test]
    inject: [form:api_key]
sandboxes:
  one: { addresses: [127.0.0.1/32] }
  two: { addresses: [127.0.0.2/32] }
YAML
}
policy_text | gw_conf
out=$("$SLUICE" policy check "$GWCONF" 2>&1)
check_eq "sluice policy check accepts the test policy" "$GWCONF: ok" "$out"
printf 'ca: /nonexistent\nhosts:\n  a.test:\n    rules:\n      - allow: { method: POST, json: { "$.a": { eq: 1 } }, bogus_key: 1 }\n' >"$T/badpol.yaml"
out=$("$SLUICE" policy check "$T/badpol.yaml" 2>&1); rc=$?
check_match "sluice policy check refuses an unknown key with file:line:column (exit 1)" \
  "^1 $T/badpol.yaml:5:[0-9]+: unknown key 'bogus_key'" "$rc $out"
n=0 f=""
for c in "$HERE"/../../examples/*.cases.yaml; do
  [ -f "$c" ] || continue
  n=$((n + 1))
  "$SLUICE" policy test "${c%.cases.yaml}.yaml" "$c" >"$T/cases.out" 2>&1 || f="$f $(basename "$c")"
done
check_eq "every shipped example has cases, and sluice policy test passes them ($n found)" "yes" \
  "$([ "$n" -ge 4 ] && [ -z "$f" ] && echo yes || echo "no:$f")"
SLUICE_IT_SEMKEY="$VALUE" gw_start
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$GWPID/status"; }

# ---------------------------------------------------------------- clients
A=https://api.example.test W=https://www.example.test O=https://other.example.test
NOREACH=()   # markers of requests that must never reach the upstream
# R VER URL CURL_ARGS...: one request (VER 1.1 or 2); prints the status; body in $T/r.body, head in $T/r.head
R() {
  local v=$1 u=$2 o; shift 2
  o=$(pcurl "--http$v" -o "$T/r.body" -D "$T/r.head" -w '%{http_code} %{http_version}' "$@" "$u" 2>"$T/r.err")
  printf '%s %s\n' "${o#* }" "$u" >>"$T/versions.$v"
  printf '%s' "${o% *}"
}
J() { R "$1" "$2" -H 'Content-Type: application/json' --data-binary "$3"; }       # J VER URL JSON
JF() { R "$1" "$2" -H 'Content-Type: application/json' --data-binary "@$3"; }     # JF VER URL FILE
FORM() { R "$1" "$2" --data-binary "$3"; }                                          # FORM VER URL BODY
body_is() { jq -e "$1" "$T/r.body" >/dev/null 2>&1; }
denied_default() { body_is '.error == "denied by policy" and .host == "api.example.test" and .rule == "default" and .reason == "no rule matched"'; }
hdr() { tr -d '\r' <"$T/r.head" | sed -n "s/^$1: *//Ip" | tail -n 1; }
no_approval() { [ -z "$(approval_of "$1")" ]; }
# upstream_saw MARK: nginx's access log or pyup's log has the request marked ?c=MARK
upstream_saw() { grep -qF "c=$1 " "$NGXLOG" 2>/dev/null || grep -qF "c=$1\"" "$PYUPLOG" 2>/dev/null; }
pyup_saw() { grep -qF "c=$1\"" "$PYUPLOG" 2>/dev/null; }

# hostile bodies
printf '{"channel":"C0BOTS","text":"\xff\xfe bad utf-8"}' >"$T/badutf8.json"
"$PY" -c 'import sys; sys.stdout.write("{\"channel\":" + "[" * 10000 + "]" * 10000 + "}")' >"$T/deep.json"
"$PY" -c 'import sys; sys.stdout.write("{\"ok\":true,\"pad\":\"" + "p" * 8192 + "\"}")' >"$T/big8k.json"
"$PY" -c 'import sys; sys.stdout.write("{\"ok\":true,\"pad\":\"" + "p" * 2048 + "\"}")' >"$T/ok2k.json"
head -c 1023 /dev/zero | tr '\0' x | sed 's/^/"/' >"$T/1k.txt"
printf '{"channel":"C0BOTS","text":"%s"}' "$(rnd 3000)" >"$T/sha.json"
SHA_JSON="$(stat -c %s "$T/sha.json") $(sha256sum <"$T/sha.json" | cut -d' ' -f1)"
printf '{"channel":"C0BOTS","text":"%s"}' "$(head -c 700000 /dev/urandom | base64 -w0 | head -c 900000)" >"$T/sha900k.json"
SHA_900K="$(stat -c %s "$T/sha900k.json") $(sha256sum <"$T/sha900k.json" | cut -d' ' -f1)"
"$PY" -c 'import sys; b = "{\"ok\":true,\"pad\":\""; sys.stdout.write(b + "p" * (4096 - len(b) - 2) + "\"}")' >"$T/exact4k.json"
"$PY" -c 'import sys; b = "{\"ok\":true,\"pad\":\""; sys.stdout.write(b + "p" * (4097 - len(b) - 2) + "\"}")' >"$T/over4k.json"
"$PY" -c 'import gzip, sys; sys.stdout.buffer.write(gzip.compress(b"{\"channel\":\"C0EVIL\"}"))' >"$T/evil.json.gz"

for V in 1.1 2; do
  L=h${V%%.*}
  echo "# ---- $L"
  # ---- json
  code=$(J "$V" "$A/chat.postMessage?c=$L-chat" '{"channel":"C0BOTS","text":"hi"}')
  check_eq "$L json: an allowed channel passes (200 from the upstream)" "200 py" "$code $(cat "$T/r.body")"
  code=$(JF "$V" "$A/sha?c=$L-sha" "$T/sha.json")
  check_eq "$L json: the held body reaches the upstream intact (length and sha256)" "200 $SHA_JSON" "$code $(cat "$T/r.body")"
  code=$(JF "$V" "$A/sha?c=$L-sha9" "$T/sha900k.json")
  check_eq "$L json: a 900 KB body (under the default max_body of 1 MiB) is judged and reaches the upstream intact" \
    "200 $SHA_900K" "$code $(cat "$T/r.body")"
  if [ "$L" = h1 ]; then
    code=$(R "$V" "$A/sha?c=$L-shac" -X POST -H 'Content-Type: application/json' -T - <"$T/sha.json")
    check_eq "$L json: a chunked body is judged and reaches the upstream intact" "200 $SHA_JSON" "$code $(cat "$T/r.body")"
  fi
  code=$(R "$V" "$A/chat.postMessage?c=$L-gz" -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' \
    --data-binary "@$T/evil.json.gz"); NOREACH+=("$L-gz")
  check_eq "$L json: a gzip-encoded body cannot be judged: default deny" "403 default" "$code $(jq -r .rule "$T/r.body" 2>&1)"
  code=$(J "$V" "$A/chat.postMessage?c=$L-chan" '{"channel":"C0EVIL","text":"hi"}'); NOREACH+=("$L-chan")
  check_eq "$L json: another channel is refused" 403 "$code"
  check "  with the JSON body {denied by policy, host, rule default, no rule matched}" denied_default
  code=$(J "$V" "$A/chat.postMessage?c=$L-dup" '{"channel":"C0BOTS","channel":"C0EVIL"}'); NOREACH+=("$L-dup")
  check_eq "$L json: duplicate keys (allowed value first) are refused" "403 default" "$code $(jq -r .rule "$T/r.body" 2>&1)"
  code=$(J "$V" "$A/chat.postMessage?c=$L-dup2" '{"channel":"C0EVIL","channel":"C0BOTS"}'); NOREACH+=("$L-dup2")
  check_eq "$L json: duplicate keys (allowed value last) are refused" 403 "$code"
  code=$(J "$V" "$A/chat.postMessage?c=$L-dup3" '{"chan\u006eel":"C0EVIL","channel":"C0BOTS"}'); NOREACH+=("$L-dup3")
  check_eq "$L json: duplicate keys spelt differently (\\u006e escape) are refused" 403 "$code"
  code=$(J "$V" "$A/chat.postMessage?c=$L-dup4" '{"channel":"C0BOTS","meta":{"a":1,"a":2}}'); NOREACH+=("$L-dup4")
  check_eq "$L json: a duplicate key elsewhere in the body is refused too (docs/policy.md: anywhere)" 403 "$code"
  code=$(R "$V" "$A/chat.postMessage?c=$L-ctype" -H 'Content-Type: text/plain' --data-binary '{"channel":"C0BOTS"}')
  NOREACH+=("$L-ctype")
  check_eq "$L json: an allowed JSON body sent as text/plain is not read: default deny" 403 "$code"
  code=$(J "$V" "$A/chat.postMessage?c=$L-notjson" 'channel=C0BOTS'); NOREACH+=("$L-notjson")
  check_eq "$L json: a non-JSON body falls through to default deny" "403 default" "$code $(jq -r .rule "$T/r.body" 2>&1)"
  code=$(JF "$V" "$A/chat.postMessage?c=$L-utf8" "$T/badutf8.json"); NOREACH+=("$L-utf8")
  check_eq "$L json: invalid UTF-8 is refused" 403 "$code"
  r0=$(rss)
  code=$(JF "$V" "$A/chat.postMessage?c=$L-deep" "$T/deep.json"); NOREACH+=("$L-deep")
  r1=$(rss)
  check_eq "$L json: 10,000-deep nesting is refused" 403 "$code"
  check "  the gateway's RSS grew by less than $RSS_MAX MiB ($r0 kB -> $r1 kB)" test "$((r1 - r0))" -lt $((RSS_MAX * 1024))
  code=$(J "$V" "$A/cart?c=$L-cart" '{"items":[{"amount":5},{"amount":100},{"amount":"99.5"}]}')
  check_eq "$L json [*]: every item within max passes" 200 "$code"
  code=$(J "$V" "$A/cart?c=$L-cart1" '{"items":[{"amount":5},{"amount":100.01},{"amount":7}]}'); NOREACH+=("$L-cart1")
  check_eq "$L json [*]: one item over max refuses the whole request" 403 "$code"
  code=$(J "$V" "$A/messages?c=$L-role" '{"messages":[{"role":"system","content":"x"},{"role":"user","content":"y"}]}')
  check_eq "$L json: \$.messages[0].role == system passes" 200 "$code"
  code=$(J "$V" "$A/messages?c=$L-role1" '{"messages":[{"role":"user","content":"y"},{"role":"system","content":"x"}]}')
  NOREACH+=("$L-role1")
  check_eq "$L json: \$.messages[0].role == user is refused (the system one is second)" 403 "$code"
  # ---- graphql
  code=$(J "$V" "$A/graphql?c=$L-gql" '{"query":"query GetViewer { viewer { login } }","operationName":"GetViewer"}')
  check_eq "$L graphql: the allowed query passes" 200 "$code"
  code=$(J "$V" "$A/graphql?c=$L-gql2" '{"query":"query GetViewer { viewer { login } } mutation Evil { deleteRepository(input: {repositoryId: \"R\"}) { clientMutationId } }","operationName":"GetViewer"}')
  NOREACH+=("$L-gql2")
  check_eq "$L graphql: a mutation as a second operation, operationName the allowed one, is refused" 403 "$code"
  code=$(J "$V" "$A/graphql?c=$L-gqla" '{"query":"query GetViewer { viewer: deleteRepository(input: {repositoryId: \"R\"}) { clientMutationId } }"}')
  NOREACH+=("$L-gqla")
  check_eq "$L graphql: a field hidden behind an allowed alias is refused" 403 "$code"
  code=$(J "$V" "$A/graphql?c=$L-gqlm" '{"query":"mutation GetViewer { viewer { login } }"}'); NOREACH+=("$L-gqlm")
  check_eq "$L graphql: a mutation named like the allowed query is refused" 403 "$code"
  # ---- form
  code=$(FORM "$V" "$A/pay?c=$L-pay" 'amount=4000&currency=usd')
  check_eq "$L form: amount under max passes" 200 "$code"
  code=$(FORM "$V" "$A/pay?c=$L-pay1" 'amount=6000&currency=usd'); NOREACH+=("$L-pay1")
  check_eq "$L form: amount over max is refused" 403 "$code"
  code=$(FORM "$V" "$A/pay?c=$L-pay2" 'amount=100&amount=9000&currency=usd'); NOREACH+=("$L-pay2")
  check_eq "$L form: a repeated field is judged by every value (100 and 9000: refused)" 403 "$code"
  code=$(FORM "$V" "$A/pay?c=$L-pay3" 'amount=100&currency=usd&amount=200')
  check_eq "$L form: a repeated field whose values all pass passes" 200 "$code"
  code=$(FORM "$V" "$A/pay?c=$L-pay4" 'amount=100&currency=usd&currency=eur'); NOREACH+=("$L-pay4")
  check_eq "$L form: currency=usd then currency=eur is refused" 403 "$code"
  # ---- query and headers
  code=$(R "$V" "$A/search?q=abc&c=$L-q" -H 'X-Api-Version: 2')
  check_eq "$L query+headers: q matches, no debug, X-Api-Version 2: passes" 200 "$code"
  code=$(R "$V" "$A/search?q=ABC1&c=$L-q1" -H 'X-Api-Version: 2'); NOREACH+=("$L-q1")
  check_eq "$L query: q not matching the (anchored) regex is refused" 403 "$code"
  code=$(R "$V" "$A/search?q=abc&debug=1&c=$L-q2" -H 'X-Api-Version: 2'); NOREACH+=("$L-q2")
  check_eq "$L query: a parameter that must be absent is refused" 403 "$code"
  code=$(R "$V" "$A/search?q=abc&q=AB&c=$L-q3" -H 'X-Api-Version: 2'); NOREACH+=("$L-q3")
  check_eq "$L query: a repeated parameter with one bad value is refused" 403 "$code"
  code=$(R "$V" "$A/search?q=abc&c=$L-q4"); NOREACH+=("$L-q4")
  check_eq "$L headers: a missing header is refused" 403 "$code"
  code=$(R "$V" "$A/search?q=abc&c=$L-q5" -H 'X-Api-Version: 3'); NOREACH+=("$L-q5")
  check_eq "$L headers: a wrong header value is refused" 403 "$code"
  code=$(R "$V" "$A/search?q=abc&c=$L-q6" -H 'X-Api-Version: 2' -H 'X-Api-Version: 3'); NOREACH+=("$L-q6")
  check_eq "$L headers: the header twice, one value wrong, is refused" 403 "$code"
  # ---- bodies over max_body
  code=$(JF "$V" "$A/small?c=$L-small" "$T/ok2k.json")
  check_eq "$L max_body 4K: a 2 KiB body passes" 200 "$code"
  code=$(JF "$V" "$A/small?c=$L-ex4k" "$T/exact4k.json")
  check_eq "$L max_body 4K: a body of exactly 4096 bytes passes" 200 "$code"
  code=$(JF "$V" "$A/small?c=$L-ov4k" "$T/over4k.json"); NOREACH+=("$L-ov4k")
  check_eq "$L max_body 4K: 4097 bytes get 413" 413 "$code"
  code=$(JF "$V" "$A/small?c=$L-big" "$T/big8k.json"); NOREACH+=("$L-big")
  check_eq "$L max_body 4K: an 8 KiB body gets 413" 413 "$code"
  check "  with a JSON body (error request too large, a reason)" body_is '.error == "request too large" and (.reason | length > 0)'
  # without a length: h1 chunked (curl), h2 DATA frames without content-length (semclient.py: curl 7.88 sometimes
  # reports "Empty reply" when an h2 upload of unknown length is answered early, though the 413 and END_STREAM came)
  if [ "$L" = h1 ]; then
    code=$(R "$V" "$A/small?c=$L-bigs" -X POST -H 'Content-Type: application/json' -T - <"$T/big8k.json")
  else
    code=$($CLEAN timeout 40 "$PY" "$SEMC" "$PP" "$CA/ca.pem" "api.example.test" claim "/small?c=$L-bigs" - 8192 2>&1)
    code=${code#status }; code=${code%% *}
  fi
  NOREACH+=("$L-bigs")
  check_eq "$L max_body 4K: an 8 KiB body without a length ($([ "$L" = h1 ] && echo chunked || echo DATA frames)) gets 413" \
    413 "$code"
  r0=$(rss); t0=$(date +%s%N)
  if [ "$L" = h1 ]; then
    out=$($CLEAN timeout 30 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 20 \
      --connect "api.example.test:443" --send "POST /chat.postMessage?c=$L-claim HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n" \
      --send "@$T/1k.txt" 2>&1 | head -n 1)
  else
    out=$($CLEAN timeout 40 "$PY" "$SEMC" "$PP" "$CA/ca.pem" "api.example.test" claim "/chat.postMessage?c=$L-claim" 104857600 1024 2>&1)
    out=${out#status }; out=${out%% *}
  fi
  el=$(( ($(date +%s%N) - t0) / 1000000 )); r1=$(rss); NOREACH+=("$L-claim")
  check_eq "$L Content-Length 100 MB with 1 KB sent: 413" 413 "$out"
  check "  answered within the body timeout (3 s; took $el ms)" test "$el" -lt 3000
  check "  the gateway's RSS grew by less than $RSS_MAX MiB ($r0 kB -> $r1 kB)" test "$((r1 - r0))" -lt $((RSS_MAX * 1024))
  t0=$(date +%s%N)
  if [ "$L" = h1 ]; then
    out=$($CLEAN timeout 30 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 20 --end \
      --connect "api.example.test:443" --send "POST /chat.postMessage?c=$L-stall HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\nContent-Length: 600000\r\n\r\n" \
      --send "@$T/1k.txt" 2>&1 | tr '\n' ' ')
  else
    out=$($CLEAN timeout 40 "$PY" "$SEMC" "$PP" "$CA/ca.pem" "api.example.test" claim "/chat.postMessage?c=$L-stall" 600000 1024 2>&1)
  fi
  el=$(( ($(date +%s%N) - t0) / 1000000 )); NOREACH+=("$L-stall")
  echo "# $L stalled body under max_body: [$out] after $el ms"
  st=$(printf '%s' "$out" | grep -oE '^(status )?[0-9]{3}' | grep -oE '[0-9]{3}$')
  check "$L a body under max_body that stalls is ended by limits.body (3 s): after 2.5 to 8 s, not 200 (took $el ms)" \
    test "$el" -ge 2500 -a "$el" -lt 8000 -a "${st:-000}" != 200
  # ---- rate limit: 2/second per sandbox
  n=${L#h}
  out=$(pcurl "--http$V" -o /dev/null -o /dev/null -o "$T/rl.body" -D "$T/rl.head" --data-binary x \
    -w '%{http_code}:%header{retry-after} ' "$A/rate$n?c=$L-r1" "$A/rate$n?c=$L-r2" "$A/rate$n?c=$L-r3" 2>&1)
  NOREACH+=("$L-r3")
  check_match "$L limit 2/second: two pass, the third gets 429 with Retry-After >= 1 (got [$out])" \
    '^200: 200: 429:[1-9][0-9]* $' "$out"
  check "  with a JSON body naming the limit (rate limited, rule rate$n)" \
    jq -e "(.error == \"rate limited\") and ((.rule + \" \" + .reason) | contains(\"rate-$L\"))" "$T/rl.body"
  ra=${out##*429:}; ra=${ra%% *}
  [ -n "$ra" ] && [ "$ra" -le 5 ] 2>/dev/null || ra=1
  sleep "$ra"
  code=$(R "$V" "$A/rate$n?c=$L-r4" --data-binary x)
  check_eq "  after Retry-After ($ra s) a request passes again" 200 "$code"
  # ---- report mode
  code=$(R "$V" "$O/admin/$L?c=$L-rep" --data-binary x)
  check_eq "$L report mode (host): a request its deny rule matches passes" 200 "$code"
  check "  audit: mode report, report {verdict deny, rule rep-admin}, status 200" audit_wait \
    ".type == \"request\" and .host == \"other.example.test\" and .path == \"/admin/$L\" and .mode == \"report\" and .report.verdict == \"deny\" and .report.rule == \"rep-admin\" and .status == 200"
  code=$(R "$V" "$O/else/$L?c=$L-rep2" --data-binary x)
  check_eq "$L report mode (host): a request no rule matches passes" 200 "$code"
  check "  audit: mode report, report {verdict deny, rule default}" audit_wait \
    ".type == \"request\" and .path == \"/else/$L\" and .mode == \"report\" and .report.verdict == \"deny\" and .report.rule == \"default\" and .status == 200"
  code=$(J "$V" "$A/chat2?c=$L-rep3" "{\"tools\":[\"$L\"]}")
  check_eq "$L report rule: the request it would deny passes (the next rule allows it)" 200 "$code"
  check "  audit: rule chat2, report {verdict deny, rule no-tools}" audit_wait \
    ".type == \"request\" and .path == \"/chat2\" and .rule == \"chat2\" and .report.verdict == \"deny\" and .report.rule == \"no-tools\" and .status == 200"
done

# ---------------------------------------------------------------- holds (both protocols)
for V in 1.1 2; do
  L=h${V%%.*}
  BODY="payment_intent=pi_$L&api_key=$PH&amount=100"
  SHA_HELD=$(printf '%s' "$BODY" | sha256sum | cut -d' ' -f1)
  SHA_SENT=$(printf '%s' "${BODY//"$PH"/"$VALUE"}" | sha256sum | cut -d' ' -f1)
  # approve
  pcurl "--http$V" --max-time 25 -o "$T/ha-$L.body" -w '%{http_code}' --data-binary "$BODY" "$W/sha?c=$L-approve" \
    >"$T/ha-$L.code" 2>&1 &
  cpid=$!
  id=$(wait_approval "/sha?c=$L-approve" "$cpid")
  check_match "$L hold: the request is listed by sluice approvals list --json" '^[0-9a-f]{16}$' "$id"
  j=$("$SLUICE" approvals list -c "$GWCONF" --json 2>&1)
  printf '%s\n' "$j" >>"$T/approvals-list.out"
  check_eq "  with method, host, rule, the fields (the placeholder, never the value) and the held body's hash" \
    "POST www.example.test refunds form:api_key=$PH,form:payment_intent=pi_$L $SHA_HELD" \
    "$(printf '%s' "$j" | jq -r --arg id "$id" '.[] | select(.id == $id) | "\(.method) \(.host) \(.rule) \(.fields | map("\(.place)=\(.value)") | sort | join(",")) \(.body_sha256)"' 2>&1)"
  tab=$("$SLUICE" approvals list -c "$GWCONF" 2>&1)
  printf '%s\n' "$tab" >>"$T/approvals-list.out"
  check_match "  the table shows the placeholder as the field's value" "form:api_key = $PH" "$tab"
  check "  nothing reached the upstream while held" sh -c "! grep -qF 'c=$L-approve ' '$NGXLOG' && ! grep -qF 'c=$L-approve\"' '$PYUPLOG'"
  [ "$L" = h1 ] && sleep 3.5   # longer than limits.body: a held request is bounded by its hold timeout, not that
  out=$("$SLUICE" approvals approve -c "$GWCONF" "$id" 2>&1)
  check_eq "  sluice approvals approve: exit 0" "approved $id" "$out"
  wait "$cpid"
  check_eq "  the request completes upstream: 200, with the held body, the secret injected after approval" \
    "200 $((${#BODY} - ${#PH} + ${#VALUE})) $SHA_SENT" "$(cat "$T/ha-$L.code") $(cat "$T/ha-$L.body" 2>/dev/null)"
  check "  audit: approval approved by uid:0(root), rule refunds, the body hash" audit_wait \
    ".type == \"approval\" and .id == \"$id\" and .decision == \"approved\" and .by == \"uid:0(root)\" and .rule == \"refunds\" and .host == \"www.example.test\" and .body_sha256 == \"$SHA_HELD\""
  check_eq "  the approval left the list" "" "$(approval_of "/sha?c=$L-approve")"
  # reject
  pcurl "--http$V" --max-time 25 -o "$T/hr-$L.body" -w '%{http_code}' --data-binary "payment_intent=pi_r&api_key=$PH" \
    "$W/sha?c=$L-reject" >"$T/hr-$L.code" 2>&1 &
  cpid=$!; NOREACH+=("$L-reject")
  id=$(wait_approval "/sha?c=$L-reject" "$cpid")
  check_match "$L hold: a second request is listed" '^[0-9a-f]{16}$' "$id"
  out=$("$SLUICE" approvals reject -c "$GWCONF" "$id" 2>&1)
  check_eq "  sluice approvals reject: exit 0" "rejected $id" "$out"
  wait "$cpid"
  check_match "  the client gets 403 naming the hold rule, rejected" '^403 denied by policy refunds .*reject' \
    "$(cat "$T/hr-$L.code") $(jq -r '"\(.error) \(.rule) \(.reason)"' "$T/hr-$L.body" 2>&1)"
  check "  audit: approval rejected by uid:0(root)" audit_wait \
    ".type == \"approval\" and .id == \"$id\" and .decision == \"rejected\" and .by == \"uid:0(root)\" and .rule == \"refunds\""
  # timeout (rule quick: 2 s)
  t0=$(date +%s%N)
  code=$(R "$V" "$W/quick?c=$L-timeout" --max-time 15 --data-binary "x=1"); NOREACH+=("$L-timeout")
  el=$(( ($(date +%s%N) - t0) / 1000000 ))
  check_eq "$L hold timeout (2 s): 403 naming the rule" "403 quick" "$code $(jq -r .rule "$T/r.body" 2>&1)"
  check_match "  the reason says the approval timed out" 'approval timed out' "$(jq -r .reason "$T/r.body" 2>&1)"
  check "  after the hold's timeout, not before (took $el ms)" test "$el" -ge 1900 -a "$el" -lt 10000
  check "  audit: approval timeout by timeout, rule quick" audit_wait \
    ".type == \"approval\" and .decision == \"timeout\" and .by == \"timeout\" and .rule == \"quick\" and (.path | startswith(\"/quick\"))"
  # the client goes away (curl gives up after 3 s)
  pcurl "--http$V" --max-time 3 -o /dev/null --data-binary "payment_intent=pi_g&api_key=$PH" "$W/sha?c=$L-gone" \
    >/dev/null 2>&1 &
  cpid=$!; NOREACH+=("$L-gone")
  id=$(wait_approval "/sha?c=$L-gone" "$cpid")
  check_match "$L hold, client gone: listed while the client waits" '^[0-9a-f]{16}$' "$id"
  wait "$cpid"
  check "  once curl gave up, the approval disappears from the list" eventually 5 no_approval "/sha?c=$L-gone"
  check "  audit: approval cancelled" audit_wait ".type == \"approval\" and .id == \"$id\" and .decision == \"cancelled\""
  out=$("$SLUICE" approvals approve -c "$GWCONF" "$id" 2>&1); rc=$?
  check_eq "  approving it afterwards: exit 1 (no such approval)" 1 "$rc"
  if [ "$L" = h2 ]; then
    $CLEAN timeout 30 "$PY" "$SEMC" "$PP" "$CA/ca.pem" "www.example.test" reset "/sha?c=$L-rst" \
      "payment_intent=pi_x&api_key=$PH" 3 >"$T/rst.out" 2>&1 &
    cpid=$!; NOREACH+=("$L-rst")
    id=$(wait_approval "/sha?c=$L-rst" "$cpid")
    check_match "h2 hold, RST_STREAM of the held stream: listed while held" '^[0-9a-f]{16}$' "$id"
    wait "$cpid"
    check_eq "  nothing answered the held stream; another stream was served meanwhile, and one after the reset" \
      "held none, meanwhile status 200, then status 200" \
      "$(cat "$T/rst.out")"
    check "  the approval disappears from the list" eventually 5 no_approval "/sha?c=$L-rst"
    check "  audit: its approval cancelled" audit_wait ".type == \"approval\" and .id == \"$id\" and .decision == \"cancelled\""
  fi
done

# ---------------------------------------------------------------- counters: per sandbox vs global, reload, budget
code=$(R 1.1 "$A/persb?c=sb1" --data-binary x)
check_eq "limit per sandbox (1/minute): sandbox one passes" 200 "$code"
code=$(R 1.1 "$A/persb?c=sb1b" --data-binary x); NOREACH+=("sb1b")
check_eq "  sandbox one again: 429" 429 "$code"
code=$(R 1.1 "$A/persb?c=sb2" --interface 127.0.0.2 --data-binary x)
check_eq "  sandbox two (127.0.0.2) has its own counter: passes" 200 "$code"
code=$(R 1.1 "$A/global?c=gl1" --data-binary x)
check_eq "limit global (1/minute): sandbox one passes" 200 "$code"
code=$(R 1.1 "$A/global?c=gl2" --interface 127.0.0.2 --data-binary x); NOREACH+=("gl2")
check_eq "  sandbox two shares the counter: 429" 429 "$code"
check "  audit: the refusals are recorded with sandbox two and status 429" audit_wait \
  '.type == "request" and .sandbox == "two" and .path == "/global" and .status == 429'

for i in 1 2; do code=$(R 1.1 "$A/keep?c=keep$i" --data-binary x); [ "$code" = 200 ] || break; done
check_eq "limit 2/minute: two requests pass" 200 "$code"
code=$(R 1.1 "$A/keep?c=keep3" --data-binary x); NOREACH+=("keep3")
check_eq "  the third gets 429" 429 "$code"
code=$(R 1.1 "$A/ren?c=ren1" --data-binary x)
check_eq "limit 1/minute on rule ren-a: passes" 200 "$code"
code=$(R 1.1 "$A/ren?c=ren2" --data-binary x); NOREACH+=("ren2")
check_eq "  then 429" 429 "$code"
policy_text '{ id: reloaded, allow: { method: GET, path: /reloaded } }' ren-b | gw_conf
gw_hup
check "SIGHUP: the new policy is in force (audit config_reload ok, generation 2)" audit_wait \
  '.type == "config_reload" and .result == "ok" and .generation == 2'
code=$(R 1.1 "$A/reloaded?c=rl")
check_eq "  the rule it added answers" 200 "$code"
code=$(R 1.1 "$A/keep?c=keep4" --data-binary x); NOREACH+=("keep4")
check_eq "  rule keep (same id): its counter survived the reload (429)" 429 "$code"
code=$(R 1.1 "$A/ren?c=ren3" --data-binary x)
check_eq "  the renamed rule ren-b starts a new counter (200)" 200 "$code"

code=$(FORM 1.1 "$A/spend?c=sp1" 'amount=4000&currency=usd')
check_eq "budget 8000/day: 4000 passes" 200 "$code"
code=$(FORM 2 "$A/spend?c=sp2" 'amount=4000&currency=usd')
check_eq "  another 4000 (h2; the sum equals max) passes" 200 "$code"
code=$(FORM 1.1 "$A/spend?c=sp3" 'amount=100&currency=usd'); NOREACH+=("sp3")
check_eq "  100 more gets 429" 429 "$code"
ra=$(hdr Retry-After)
check "  with Retry-After up to the end of the UTC day (got [$ra])" \
  sh -c "[ '$ra' -ge 1 ] && [ '$ra' -le \$(( 86400 - \$(date -u +%s) % 86400 + 1 )) ]"
check "  and a JSON body naming the budget (rule spend)" \
  body_is '(.error == "rate limited") and ((.rule + " " + .reason) | contains("spend"))'
code=$(FORM 2 "$A/spend?c=sp4" 'amount=1&currency=usd'); NOREACH+=("sp4")
check_eq "  h2: 1 more also gets 429" 429 "$code"
code=$(FORM 1.1 "$A/spend?c=sp5" 'amount=abc&currency=usd'); NOREACH+=("sp5")
check_eq "  an amount the budget cannot count falls through (403)" 403 "$code"
sleep 1.5   # the counters are saved at least every second
check "the counters are saved under state_dir" test -s "$T/state/counters"
kill -9 "$GWPID"; gw_wait 5
check_eq "kill -9 ends the gateway" 137 "$GW_RC"
SLUICE_IT_SEMKEY="$VALUE" gw_start
code=$(FORM 1.1 "$A/spend?c=sp6" 'amount=100&currency=usd'); NOREACH+=("sp6")
check_eq "after kill -9 and a restart the budget is still spent: 429" 429 "$code"
code=$(R 1.1 "$A/keep?c=keep5" --data-binary x); NOREACH+=("keep5")
check_eq "  and the rate limit's bucket too: 429" 429 "$code"

# ---------------------------------------------------------------- what reached the upstream, protocols, secrets
sleep 0.5
reached=""
for m in "${NOREACH[@]}"; do upstream_saw "$m" && reached="$reached $m"; done
check_eq "none of the ${#NOREACH[@]} refused, held-then-refused or cancelled requests reached the upstream (nginx or pyup)" "" "$reached"
missed=""
for m in h1-chat h2-chat h1-gql h2-gql h1-pay3 h2-rep h1-approve h2-approve sp2 ren3; do pyup_saw "$m" || missed="$missed $m"; done
check_eq "the allowed ones did (h1-chat h2-chat h1-gql h2-gql h1-pay3 h2-rep h1-approve h2-approve sp2 ren3)" "" "$missed"
check_eq "every --http2 request spoke h2" "" "$(grep -v '^2 ' "$T/versions.2" | head -n 3)"
check_eq "every --http1.1 request spoke HTTP/1.1" "" "$(grep -v '^1.1 ' "$T/versions.1.1" | head -n 3)"
check "the audit chain verifies" "$SLUICE" audit verify "$AUDIT"
gw_final_checks
sleep 0.3
check_eq "the secret's value is in no file of the run (audit, gateway log, approvals output, upstream log, this output)" \
  "" "$(grep -rlF "$VALUE" "$T" 2>/dev/null)"
finish
