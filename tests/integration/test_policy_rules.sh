#!/usr/bin/env bash
# Policy semantics end to end: exact vs wildcard vs longer wildcard, label boundaries, case, globs (* and **),
# regex (anchored), first match wins, method lists, default deny (and default allow still refusing private
# addresses), rule ids in the 403 body and the audit, encoded_slashes, path normalisation as forwarded.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
PKI_EXTRA_SAN="DNS:*.deep.example.test,DNS:example.test.evil.test,DNS:evilexample.test,DNS:nope.test"
pki_init
nginx_start
GW_RESOLVE="x.example.test: $UPADDR
a.deep.example.test: $UPADDR
example.test.evil.test: $UPADDR
evilexample.test: $UPADDR
nope.test: $UPADDR"
policy() { cat <<Y
default: ${1:-deny}
hosts:
  "*.example.test":
    allow_private: true
    rules:
      - allow: { method: GET, path: "/wild/**", id: wild-get }
  "*.deep.example.test":
    allow_private: true
    rules:
      - allow: { method: GET, path: "/deep/**", id: deep-get }
  api.example.test:
    allow_private: true
    encoded_slashes: keep
    rules:
      - deny:  { method: GET, path: "/ok/secret", id: no-secret }
      - allow: { method: GET, path: "/ok/**", id: ok-all }
      - allow: { method: GET, path: "/one/*", id: one-seg }
      - allow: { method: [POST, PUT], path: "/ok/**" }
      - allow: { method: GET, path: "regex:/re/[0-9]+", id: re-num }
      - allow: { method: GET, path: "/enc/*/end", id: enc }
Y
}
policy | gw_conf
gw_start
code() { pcurl --path-as-is -s -o "$T/body" -w '%{http_code}' "$@" 2>/dev/null; }
connect_code() { pcurl -s -o /dev/null -w '%{http_connect}' "https://$1/" 2>/dev/null; }
expect() { # expect WHAT STATUS URL [CURL ARGS]
  local what=$1 want=$2; shift 2
  check_eq "$what: $want" "$want" "$(code "$@")"
}

# host matching
expect "exact entry beats the wildcard (api.example.test /ok/x)" 200 https://api.example.test/ok/x
expect "exact entry's rules only: the wildcard's /wild/** does not apply to api.example.test" 403 https://api.example.test/wild/x
check_eq "that 403 names rule 'default'" default "$(jq -r .rule "$T/body" 2>&1)"
expect "wildcard matches one label (www.example.test /wild/a/b)" 200 https://www.example.test/wild/a/b
expect "wildcard matches several labels (x.example.test)" 200 https://x.example.test/wild/a
check "audit: the wildcard request names rule wild-get" audit_wait '.host=="x.example.test" and .rule=="wild-get" and .verdict=="allow"'
expect "wildcard host without a matching rule (www /ok/x)" 403 https://www.example.test/ok/x
expect "longer wildcard suffix wins (a.deep.example.test /deep/a)" 200 https://a.deep.example.test/deep/a
expect "longer wildcard: the shorter wildcard's rules do not apply (/wild/a)" 403 https://a.deep.example.test/wild/a
for h in example.test example.test.evil.test evilexample.test nope.test; do
  check_eq "label boundary / not listed: CONNECT $h refused with 403" 403 "$(connect_code "$h")"
done
check_eq "CONNECT authority matched case-insensitively (API.Example.TEST)" 200 "$(connect_code API.Example.TEST)"
r=$(printf 'GET /ok/dot HTTP/1.1\r\nHost: api.example.test.\r\nConnection: close\r\n\r\n' | tunnel_raw api.example.test.:443 api.example.test)
check_eq "trailing dot in CONNECT and Host: same host, allowed" 200 "$(printf '%s' "$r" | status_of)"

# globs and regex
expect "'*' matches one segment (/one/a)" 200 https://api.example.test/one/a
expect "'*' does not cross segments (/one/a/b)" 403 https://api.example.test/one/a/b
expect "'**' crosses segments (/ok/a/b/c)" 200 https://api.example.test/ok/a/b/c
expect "regex match (/re/123)" 200 https://api.example.test/re/123
expect "regex anchored at the end (/re/123/x)" 403 https://api.example.test/re/123/x
expect "regex anchored at the start (/x/re/1)" 403 https://api.example.test/x/re/1
expect "regex non-match (/re/12a)" 403 https://api.example.test/re/12a

# first match wins, methods, ids
expect "deny listed before allow wins (/ok/secret)" 403 https://api.example.test/ok/secret
check_eq "the 403 body is the policy JSON with the rule id" 'denied by policy|api.example.test|no-secret' \
  "$(jq -r '[.error,.host,.rule]|join("|")' "$T/body" 2>&1)"
check "the 403 body has a reason" jq -e '.reason|length>0' "$T/body"
check "audit: the denial names rule no-secret" audit_wait '.path=="/ok/secret" and .verdict=="deny" and .rule=="no-secret" and .status==403'
expect "a glob is not a prefix (/ok/secretx allowed by the next rule)" 200 https://api.example.test/ok/secretx
check "audit: allowed request names rule ok-all" audit_wait '.path=="/ok/secretx" and .rule=="ok-all"'
expect "method list: POST allowed" 200 -X POST -d a=b https://api.example.test/ok/p
check "audit: the unnamed rule has the default id api.example.test/rules/3" audit_wait '.path=="/ok/p" and .method=="POST" and .rule=="api.example.test/rules/3"'
expect "method list: PUT allowed" 200 -X PUT -d a=b https://api.example.test/ok/p
expect "method not listed: DELETE" 403 -X DELETE https://api.example.test/ok/p
expect "method not listed: HEAD (GET rule does not imply HEAD)" 403 -I https://api.example.test/ok/p

# encoded slashes and normalisation, checked in nginx's log (what the upstream read)
expect "encoded_slashes: keep: %2F stays in one segment and the rule /enc/*/end matches" 200 'https://api.example.test/enc/a%2Fb/end'
check "nginx received %2F still encoded" grep -q '"GET /enc/a%2Fb/end HTTP/1.1"' "$NGXLOG"
expect "encoded_slashes: keep: %2F does not make a second segment (/one/a%2Fb)" 200 'https://api.example.test/one/a%2Fb'
expect "without keep, %2F is refused" 400 'https://www.example.test/wild/a%2Fb'
expect "without keep, %5C is refused" 400 'https://www.example.test/wild/a%5Cb'
expect "dot segment: /ok/./x allowed" 200 'https://api.example.test/ok/./x'
check "nginx received /ok/./x as /ok/x" grep -q '"GET /ok/x HTTP/1.1"' "$NGXLOG"
check "nginx never saw a dot segment" sh -c "! grep -q '/\./' '$NGXLOG'"
check "audit: path normalised to /ok/x" audit_wait '.path=="/ok/x"'
expect "//admin is judged as /admin (no rule)" 403 'https://api.example.test//admin'
expect "//ok//y is merged and allowed" 200 'https://api.example.test//ok//y'
check "nginx received //ok//y as /ok/y" grep -q '"GET /ok/y HTTP/1.1"' "$NGXLOG"
expect "unreserved %XX decoded before matching (/%6Fk/z)" 200 'https://api.example.test/%6Fk/z'
check "nginx received /%6Fk/z as /ok/z" grep -q '"GET /ok/z HTTP/1.1"' "$NGXLOG"
expect "/ok/../admin is judged as /admin" 403 'https://api.example.test/ok/../admin'
expect "/ok/%2e%2e/admin is judged as /admin" 403 'https://api.example.test/ok/%2e%2e/admin'
expect "'..' above the root: 400" 400 'https://api.example.test/../ok/x'
expect "encoded NUL: 400" 400 'https://api.example.test/ok/%00'
check "nothing reached nginx for /admin (default deny)" sh -c "! grep -q 'admin' '$NGXLOG'"
expect "a query string is forwarded" 200 "https://api.example.test/ok/q?token=sekrit$ID"
check "nginx received the query" grep -q "GET /ok/q?token=sekrit$ID HTTP" "$NGXLOG"
check "audit: the request's path was logged" audit_wait '.path=="/ok/q"'
check "audit: the query string was not logged" sh -c "! grep -q 'sekrit$ID' '$AUDIT'"

# default: allow decides hosts not listed, but still refuses a name that resolves to loopback
gw_stop; check_eq "gateway stopped (exit 0)" 0 "$GW_RC"
policy allow | gw_conf
gw_start
check_eq "default allow: an unlisted host gets its tunnel" 200 "$(connect_code nope.test)"
expect "default allow: unlisted host resolving to loopback still refused (502)" 502 https://nope.test/x
check_match "the 502 reason names the loopback refusal" 'loopback' "$(jq -r .reason "$T/body" 2>&1)"
expect "default allow: a listed host's deny rule still applies" 403 https://api.example.test/ok/secret
expect "default allow: a request no rule matches is allowed" 200 https://api.example.test/admin
check "audit: that request was decided by rule 'default'" audit_wait '.path=="/admin" and .verdict=="allow" and .rule=="default"'
finish
