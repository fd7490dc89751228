#!/usr/bin/env bash
# tests/integration/test_upstream_reading.sh - the gateway judges requests as upstream frameworks read them
# (issue 19), checked on what reaches nginx: ';' path parameters (a dot segment with them is a 400; keep forwards
# as sent but needs both readings allowed; strip forwards the stripped path; refuse answers 400), method
# overrides in headers, the query and a form body, bodies on GET/HEAD/OPTIONS (refused; with get_bodies: allow
# judged and the upstream connection closed after), and a placeholder beside a key twinned by case in JSON.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_TOK="tok$(rnd 30)"
PH="sluice_ph_tok$ID$(rnd 20)"
UP_NAMES="$UP_NAMES keep.example.test strip.example.test refuse.example.test search.example.test"
nginx_start
gw_conf <<YAML
default: deny
hosts:
  keep.example.test:
    allow_private: true
    rules:
      - { id: admin, deny: { path: "/admin/**" } }
      - { id: files, allow: { method: GET, path: "/files/*.txt" } }
      - { id: public, allow: { method: GET, path: "/public/**" } }
  strip.example.test:
    allow_private: true
    path_params: strip
    rules:
      - { id: public, allow: { method: GET, path: "/public/**" } }
  refuse.example.test:
    allow_private: true
    path_params: refuse
    rules:
      - { id: public, allow: { method: GET, path: "/public/**" } }
  api.example.test:
    allow_private: true
    rules:
      - { id: create, allow: { method: POST, path: "/items" } }
      - { id: read, allow: { method: GET, path: "/items" } }
      - { id: post-any, allow: { method: POST, path: "/ok/**" } }
  search.example.test:
    allow_private: true
    get_bodies: allow
    rules:
      - { id: search, allow: { method: GET, path: "/ok/s", json: { "\$.q": { regex: "[a-z]+" } } } }
      - { id: plain, allow: { method: GET, path: "/ok/plain" } }
  other.example.test: { allow_private: true }
secrets:
  tok:
    source: env:SLUICE_IT_TOK
    placeholder: "$PH"
    hosts: [api.example.test]
    inject: ["json:\$.token", "json:\$.auth.token"]
sandboxes:
  local: { addresses: [127.0.0.1/32] }
YAML
gw_start
code() { pcurl -s -o "$T/body" -w '%{http_code}' "$@"; }
seen() { grep -cF -- "$1" "$NGXLOG" 2>/dev/null || true; }

# ---- ';' path parameters
check_eq "/public/..;/admin/users: 400" 400 "$(code --path-as-is 'https://keep.example.test/public/..;/admin/users')"
check_eq "/public/%2e%2e;x/admin: 400" 400 "$(code --path-as-is 'https://keep.example.test/public/%2e%2e;x/admin/users')"
check_eq "/public/.;/x on a strip host: 400" 400 "$(code --path-as-is 'https://strip.example.test/public/.;/x')"
check_eq "nginx saw no dot segment with parameters" 0 "$(seen '..;')"
check_eq "keep: /public/a;jsessionid=1 allowed" 200 "$(code 'https://keep.example.test/public/a;jsessionid=1')"
check_eq "keep: forwarded as sent" 1 "$(seen 'GET /public/a;jsessionid=1 HTTP/1.1')"
check_eq "keep: /files/a.txt allowed" 200 "$(code 'https://keep.example.test/files/a.txt')"
check_eq "keep: /files/secret.key;.txt (stripped: not a .txt): 403" 403 "$(code 'https://keep.example.test/files/secret.key;.txt')"
check_eq "keep: not forwarded" 0 "$(seen 'secret.key')"
check_eq "strip: /public;a=1/x;b=2 allowed" 200 "$(code 'https://strip.example.test/public;a=1/x;b=2')"
check_match "strip: nginx saw /public/x" 'GET /public/x HTTP/1.1' "$(grep strip.example.test "$NGXLOG")"
check_nomatch "strip: no ';' reached nginx" ';' "$(grep strip.example.test "$NGXLOG")"
check_eq "refuse: /public/a;x: 400" 400 "$(code 'https://refuse.example.test/public/a;x')"
check_eq "refuse: /public/a: 200" 200 "$(code 'https://refuse.example.test/public/a')"

# ---- method overrides
check_eq "POST /items: allowed" 200 "$(code -X POST -d '' https://api.example.test/items)"
for h in X-HTTP-Method-Override X-HTTP-Method X-Method-Override x-http-method-override; do
  check_eq "POST /items with $h: DELETE: 403" 403 "$(code -X POST -d '' -H "$h: DELETE" https://api.example.test/items)"
done
check_eq "the refusal names the request rule" request "$(jq -r .rule "$T/body" 2>&1)"
check_eq "an override on a host without rules: 403" 403 "$(code -X POST -d '' -H 'X-HTTP-Method-Override: PUT' https://other.example.test/x)"
check_eq "an override naming its own method: allowed" 200 "$(code -X POST -d '' -H 'X-HTTP-Method-Override: POST' https://api.example.test/items)"
check_eq "?_method=DELETE: 403" 403 "$(code -X POST -d '' 'https://api.example.test/items?_method=DELETE')"
check_eq "?%5Fmethod=delete: 403" 403 "$(code -X POST -d '' 'https://api.example.test/items?a=1&%5Fmethod=delete')"
check_eq "form _method=DELETE on a path where GET is allowed too: 403" 403 \
  "$(code -X POST --data-raw 'a=1&_method=DELETE' https://api.example.test/items)"
check_eq "form _method=POST: allowed" 200 "$(code -X POST --data-raw 'a=1&_method=POST' https://api.example.test/items)"
check_eq "nginx never saw an override" 0 "$(grep -c '_method=DELETE\|_method=delete' "$NGXLOG")"

# ---- bodies on GET, HEAD, OPTIONS
check_eq "GET with a body: 403" 403 "$(code -X GET --data-raw 'x' https://api.example.test/items)"
check_eq "OPTIONS with a body: 403" 403 "$(code -X OPTIONS --data-raw 'x' https://api.example.test/items)"
check_eq "GET with a chunked body: 403" 403 "$(code -X GET -H 'Transfer-Encoding: chunked' --data-raw 'x' https://api.example.test/items)"
check_eq "GET without a body: 200" 200 "$(code https://api.example.test/items)"
check_eq "GET with Content-Length: 0: 200" 200 "$(code -X GET -H 'Content-Length: 0' https://api.example.test/items)"
upconns() { ss -tnH state established "( dport = :443 )" dst "$UPADDR" 2>/dev/null | wc -l; }
gw_stop; gw_start   # no pooled upstream connection before the next check
check_eq "get_bodies: allow: a GET body is judged (allowed)" 200 \
  "$(code -X GET -H 'Content-Type: application/json' --data-raw '{"q":"abc"}' https://search.example.test/ok/s)"
check "get_bodies: allow: the upstream connection is not kept after it" eventually 5 test "$(upconns)" -eq 0
check_eq "get_bodies: allow: a body the rule rejects: 403" 403 \
  "$(code -X GET -H 'Content-Type: application/json' --data-raw '{"q":"ABC!"}' https://search.example.test/ok/s)"
check_eq "control: a GET without a body" 200 "$(code https://search.example.test/ok/plain)"
check "control: its upstream connection is pooled" test "$(upconns)" -ge 1

# ---- a placeholder beside a key twinned by case (Go reads the last of token/TOKEN)
check_eq "control: the placeholder in \$.token is injected" 200 \
  "$(code -X POST -H 'Content-Type: application/json' --data-raw "{\"token\":\"$PH\"}" https://api.example.test/ok/j)"
check_eq "token and TOKEN beside it: 403" 403 \
  "$(code -X POST -H 'Content-Type: application/json' --data-raw "{\"token\":\"$PH\",\"TOKEN\":\"mine\"}" https://api.example.test/ok/j)"
check_eq "control: the placeholder in \$.auth.token is injected" 200 \
  "$(code -X POST -H 'Content-Type: application/json' --data-raw "{\"auth\":{\"token\":\"$PH\"}}" https://api.example.test/ok/j)"
check_eq "a twin of an outer key, escaped (auth, \\u0041UTH): 403" 403 \
  "$(code -X POST -H 'Content-Type: application/json' --data-raw "{\"auth\":{\"token\":\"$PH\"},\"\\u0041UTH\":{}}" https://api.example.test/ok/j)"
check_eq "twins elsewhere in the body do not matter: 200" 200 \
  "$(code -X POST -H 'Content-Type: application/json' --data-raw "{\"token\":\"$PH\",\"meta\":{\"Env\":1,\"env\":2}}" https://api.example.test/ok/j)"
check "the refusal is audited as an exfiltration attempt" audit_wait '.type=="exfiltration_attempt" and .secret=="tok"'
check "no real value in the run's files" sh -c "! grep -rqF -- \"\$SLUICE_IT_TOK\" '$T' --exclude=*.pem"
finish
