#!/usr/bin/env bash
# Sandboxes registered at run time over the admin socket (what `sluice run` does): POST /sandboxes makes the
# client at those addresses a known sandbox (the audit names it, it may use secrets, only those it was registered
# with when it named any); GET /sandboxes lists them with request counts; DELETE removes one, after which the same
# client is unknown again. Bad registrations: not JSON, a bad name, a too-wide block, a duplicate name, an
# overlapping address (400/409), an unknown DELETE (404). Values are random per run and never printed.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
ECHO=$HERE/echo_upstream.py ELOG=$T/echo.jsonl

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_A="va_$(rnd 30)" SLUICE_IT_B="vb_$(rnd 30)"
A_PH="sluice_ph_a$ID$(rnd 20)" B_PH="sluice_ph_b$ID$(rnd 20)"

pki_init
spawn "$T/echo.log" env ECHO_MASK_A="$SLUICE_IT_A" ECHO_MASK_B="$SLUICE_IT_B" ECHO_MASK_PH_A="$A_PH" \
  ECHO_MASK_PH_B="$B_PH" "$PY" "$ECHO" --listen "$UPADDR:443:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$ELOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "echo upstream did not start: $(tail -n 3 "$T/echo.log")"
policy_base 'allow: { method: GET }' <<YAML | gw_conf
secrets:
  a:
    source: env:SLUICE_IT_A
    placeholder: "$A_PH"
    hosts: [api.example.test]
    inject: [header:Authorization]
  b:
    source: env:SLUICE_IT_B
    placeholder: "$B_PH"
    hosts: [api.example.test]
    inject: [header:X-B]
YAML
gw_start

adm() { curl -sS --max-time 5 --unix-socket "$ADMIN" -o "$T/adm.body" -w '%{http_code}' "$@"; }
# get FROM PATH [HEADER...]: a GET through the explicit proxy from source address FROM; prints the status
get() {
  local from=$1 path=$2; shift 2
  pcurl --interface "$from" -o /dev/null -w '%{http_code}' "$@" "https://api.example.test$path"
}
# the upstream's record of PATH: its Authorization (values and placeholders masked as {{A}}, {{PH_A}}), or nothing
seen() { jq -r --arg p "$1" 'select(.ev=="head" and .path==$p) | "authorization=\(.auth)"' "$ELOG" 2>/dev/null; }

check_eq "before registration, 127.0.0.3 is unknown: its placeholder is refused (403)" 403 \
  "$(get 127.0.0.3 /r/before -H "Authorization: Bearer $A_PH")"
check "  and the audit names it by address" audit_wait '.path == "/r/before" and .sandbox == "127.0.0.3"'

check_eq "register sb-one (127.0.0.3, secrets [a]): 201" 201 \
  "$(adm -X POST -d '{"name":"sb-one","backend":"netns","addresses":["127.0.0.3/32"],"secrets":["a"]}' http://x/sandboxes)"
check_eq "  its secret a is injected (200)" 200 "$(get 127.0.0.3 /r/a -H "Authorization: Bearer $A_PH")"
check_match "  and the upstream got the value, not the placeholder" 'authorization=Bearer \{\{A\}\}' "$(seen /r/a)"
check "  the audit names the sandbox and the secret" \
  audit_wait '.type == "request" and .path == "/r/a" and .sandbox == "sb-one" and (.secrets | map(.name) | index("a"))'
check_eq "  secret b, not in its registration: refused (403)" 403 "$(get 127.0.0.3 /r/b -H "X-B: $B_PH")"
check_eq "  and b never reached the upstream" "" "$(seen /r/b)"
check_eq "register sb-two (127.0.0.4, no secrets list): 201" 201 \
  "$(adm -X POST -d '{"name":"sb-two","addresses":["127.0.0.4/32"]}' http://x/sandboxes)"
check_eq "  it may use every secret the policy lets it (b: 200)" 200 "$(get 127.0.0.4 /r/two -H "X-B: $B_PH")"

check_eq "GET /sandboxes: 200" 200 "$(adm http://x/sandboxes)"
check_eq "  lists both, with addresses, secrets, backend and request counts" \
  'sb-one netns 127.0.0.3/32 a 2 1
sb-two external 127.0.0.4/32  1 0' \
  "$(jq -r '.[] | "\(.name) \(.backend) \(.addresses|join(",")) \(.secrets|join(",")) \(.requests) \(.denied)"' "$T/adm.body")"

out=$("$SLUICE" sandboxes -c "$GWCONF")
check_match "sluice sandboxes lists sb-one with its backend, address and counts" \
  '^sb-one +netns +127\.0\.0\.3/32 +20[0-9-]+T[0-9:]+Z +2 +1$' "$(printf '%s\n' "$out" | grep '^sb-one')"
check_match "  and sb-two" '^sb-two +external +127\.0\.0\.4/32 ' "$(printf '%s\n' "$out" | grep '^sb-two')"
check_eq "  --json gives the gateway's list" "sb-one sb-two" "$("$SLUICE" sandboxes -c "$GWCONF" --json | jq -r '[.[].name] | sort | join(" ")')"
check_eq "a duplicate name: 409" 409 "$(adm -X POST -d '{"name":"sb-one","addresses":["127.0.0.9/32"]}' http://x/sandboxes)"
check_eq "an overlapping address: 409" 409 \
  "$(adm -X POST -d '{"name":"sb-x","addresses":["127.0.0.0/24"]}' http://x/sandboxes)"
check_match "  with a JSON reason" 'overlaps sandbox' "$(jq -r .error "$T/adm.body")"
check_eq "not JSON: 400" 400 "$(adm -X POST -d 'nope' http://x/sandboxes)"
check_eq "a bad name: 400" 400 "$(adm -X POST -d '{"name":"../x","addresses":["127.0.0.9/32"]}' http://x/sandboxes)"
check_eq "a block wider than /24: 400" 400 \
  "$(adm -X POST -d '{"name":"wide","addresses":["10.0.0.0/8"]}' http://x/sandboxes)"
check_eq "no addresses: 400" 400 "$(adm -X POST -d '{"name":"none","addresses":[]}' http://x/sandboxes)"
check_eq "DELETE of an unknown sandbox: 404" 404 "$(adm -X DELETE http://x/sandboxes/nobody)"

check_eq "DELETE sb-one: 204" 204 "$(adm -X DELETE http://x/sandboxes/sb-one)"
check_eq "  then 127.0.0.3 is unknown again: its placeholder is refused (403)" 403 \
  "$(get 127.0.0.3 /r/after -H "Authorization: Bearer $A_PH")"
check "  and the audit names it by address" audit_wait '.path == "/r/after" and .sandbox == "127.0.0.3"'
check_eq "  the name can be registered again: 201" 201 \
  "$(adm -X POST -d '{"name":"sb-one","addresses":["127.0.0.5/32"]}' http://x/sandboxes)"
check_eq "  GET lists sb-one (at its new address) and sb-two" "sb-one 127.0.0.5/32 sb-two 127.0.0.4/32" \
  "$(adm http://x/sandboxes >/dev/null; jq -r '[sort_by(.name)[] | .name, .addresses[0]] | join(" ")' "$T/adm.body")"

check "no real value in any file of the run" sh -c "! grep -rqaF -e \"\$SLUICE_IT_A\" -e \"\$SLUICE_IT_B\" '$T'"
gw_final_checks
finish
