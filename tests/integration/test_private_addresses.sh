#!/usr/bin/env bash
# Private, loopback and metadata addresses are refused upstream unless the host entry says allow_private, in
# every spelling (raw CONNECT lines, since curl rewrites some forms), also where the policy lists the IP
# literal, and also under default: allow. A guard nft table drops and counts anything the host sends toward
# those addresses: its count must stay 0, so a failing gateway never reaches a real metadata service.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
guard_install
nginx_start
GW_RESOLVE="meta.example.test: \"169.254.169.254\"
ten.example.test: \"10.1.2.3\"
cgnat.example.test: \"100.64.1.1\"
mapped.example.test: \"::ffff:a9fe:a9fe\"
nat64.example.test: \"64:ff9b::a9fe:a9fe\"
nat64local.example.test: \"64:ff9b:1::808:808\"
siit.example.test: \"::ffff:0:a9fe:a9fe\"
nat64listed.example.test: \"64:ff9b:2:a9fe:a9:fe00::\"
six.example.test: \"::1\""
# a listed NAT64 prefix is judged by the IPv4 at its RFC 6052 position (169.254.169.254 for the /48 above)
GW_UPSTREAM_EXTRA='nat64_prefixes: ["64:ff9b:2::/48"]'
policy() { cat <<Y
default: ${1:-deny}
hosts:
  api.example.test:
    allow_private: true
  private.example.test:
    rules:
      - allow: { method: GET }
  "127.0.0.1": { rules: [ { allow: { method: GET } } ] }
  "169.254.169.254": { rules: [ { allow: { method: GET } } ] }
  "10.1.2.3": { rules: [ { allow: { method: GET } } ] }
  "::1": { rules: [ { allow: { method: GET } } ] }
  "::ffff:127.0.0.1": { rules: [ { allow: { method: GET } } ] }
  "$UPADDR": { rules: [ { allow: { method: GET } } ] }
  meta.example.test: {}
  ten.example.test: {}
  cgnat.example.test: {}
  mapped.example.test: {}
  nat64.example.test: {}
  nat64local.example.test: {}
  siit.example.test: {}
  nat64listed.example.test: {}
  six.example.test: {}
Y
}
TARGETS="127.0.0.1:443 169.254.169.254:443 [::1]:443 10.1.2.3:443 127.1:443 2130706433:443 0x7f000001:443
[::ffff:127.0.0.1]:443 [::ffff:a9fe:a9fe]:443 [64:ff9b::a9fe:a9fe]:443 [::ffff:7f00:1]:443 0177.0.0.1:443
169.254.169.254.:443 $UPADDR:443 100.64.1.1:443 [fe80::1]:443 0.0.0.0:443 [::]:443"

refusals() { # refusals LABEL
  local t c
  for t in $TARGETS; do
    c=$(raw_connect "$t")
    check_match "$1: raw CONNECT $t refused with 400/403/502 (got $c)" '^(400|403|502)$' "$c"
  done
}
policy | gw_conf
gw_start
check_eq "control: allow_private host is served" hello "$(pcurl https://api.example.test/ok/a)"
refusals "default deny"

# names that resolve to refused addresses: 502 with the reason in JSON
for h in private.example.test meta.example.test ten.example.test cgnat.example.test mapped.example.test nat64.example.test \
         nat64local.example.test siit.example.test nat64listed.example.test six.example.test; do
  code=$(pcurl -s -o "$T/b" -w '%{http_code}' "https://$h/x")
  check_eq "$h (resolves to a refused address, no allow_private): 502" 502 "$code"
  check_eq "$h: JSON error is 'upstream failed'" "upstream failed" "$(jq -r .error "$T/b" 2>&1)"
  check_match "$h: reason says it resolves to a refused address and names allow_private" \
    "^$h resolves to an? [a-z0-9 -]+ address; the host entry does not say allow_private$" "$(jq -r .reason "$T/b" 2>&1)"
done
check_match "private.example.test's reason names loopback" 'loopback' \
  "$(pcurl -s https://private.example.test/x | jq -r .reason 2>&1)"
# NAT64 / SIIT (issue 19): the local-use /48 (not listed) is refused whatever it embeds (8.8.8.8 here: no
# packet leaves either way, the guard counts); SIIT and a listed prefix are judged by the IPv4 inside
check_match "64:ff9b:1::/48, not in nat64_prefixes: refused as nat64" 'a nat64 address' \
  "$(pcurl -s https://nat64local.example.test/x | jq -r .reason 2>&1)"
check_match "::ffff:0:a9fe:a9fe (SIIT): judged as the link-local IPv4 inside" 'link-local' \
  "$(pcurl -s https://siit.example.test/x | jq -r .reason 2>&1)"
check_match "64:ff9b:2::/48 listed: the IPv4 at the /48 position (link-local) is judged" 'link-local' \
  "$(pcurl -s https://nat64listed.example.test/x | jq -r .reason 2>&1)"
# the request was allowed by policy (its record says so, before the dial); the dial refused the address: its
# response record says 502, rule upstream, and why
check "audit: the refusal is recorded with status 502, rule upstream and the reason" \
  audit_wait '.host=="private.example.test" and .status==502 and .rule=="upstream" and (.reason|test("allow_private"))'
check "nginx never saw a request for private.example.test" sh -c "! grep -q '^private' '$NGXLOG'"

# the upstream IP literal itself (loopback) needs allow_private too
code=$(pcurl -s -o "$T/b" -w '%{http_code}' "https://$UPADDR/ok/x")
check_eq "IP-literal entry for a loopback upstream without allow_private: 502" 502 "$code"

# allow_private: true on private.example.test -> 200
gw_stop; check_eq "gateway stopped (exit 0)" 0 "$GW_RC"
policy | sed 's/^  private.example.test:$/  private.example.test:\n    allow_private: true/' | gw_conf
gw_start
check_eq "with allow_private: true the same name is served" other "$(pcurl https://private.example.test/x)"

# default: allow changes nothing for private addresses
gw_stop
policy allow | gw_conf
gw_start
refusals "default allow"
check_eq "default allow: unlisted host resolving to loopback: 502" 502 "$(pcurl -s -o /dev/null -w '%{http_code}' https://www.example.test/x)"
check_eq "guard: no packet left for metadata/private/loopback addresses" 0 "$(guard_hits)"
check_eq "still serving" hello "$(pcurl https://api.example.test/ok/z)"
finish
