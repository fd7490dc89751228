#!/usr/bin/env bash
# MCP on the request path (issue 23), end to end: the example policy examples/mcp-github.yaml (its host reached
# through upstream.resolve, allow_private added; the create_issue limit cut to 3/hour and an audit: path added),
# a real gateway, nginx (h2 and HTTP/1.1) in front of the python upstream, and curl as a raw JSON-RPC client under
# env -i through the explicit proxy, over HTTP/1.1 AND h2:
#   allow (tools/list, a read, create_issue in acme/widgets), deny by tool (a JSON-RPC error at HTTP 200 with the
#   request's id and the host's error_code), deny by argument (another repository; a case-variant key "Repo"),
#   holds approved (the call goes upstream) and rejected (a JSON-RPC error), a batch all allowed (upstream) and
#   one denied (one error per id, nothing upstream), a notification denied (403 with the JSON reason), a
#   client-posted response (refused: no server request seen), Mcp-Method / Mcp-Name / Mcp-Param-* headers that
#   disagree with the body (400) and agree (passed), every malformed body of the issue's list (400, nothing
#   upstream), the create_issue limit (the 4th call within the hour: a JSON-RPC error -32019 with Retry-After;
#   a batch of 2 takes 2), and the audit: mcp_method, tool, rpc_id, args_hmac (checked from the initial key),
#   args (only the audit: path), mcp_batch;
#   `sluice audit query --tool` finds the calls; `sluice audit verify` passes. A batch whose elements take from
#   one budget (send_tip, a budget of 10 a day added to the policy): each element's amount is taken; one that does
#   not fit refuses the batch whole (-32019 per id) and gives back what the elements before it took.
# Every refused request carries a marker (?c=...) that must never appear in the upstream's log.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
EX=$(readlink -f "$HERE/../../examples")
H=api.githubcopilot.com
PKI_EXTRA_SAN="DNS:$H"
pki_init
PYP=$(freeport)
pyup_start "$PYP"
printf 'location ~ ^/ { proxy_pass https://%s:%s; proxy_ssl_verify off; }\n' "$UPADDR" "$PYP" >"$T/ngx-snippet"
NGINX_H2=1 nginx_start "$T/ngx-snippet"
# shellcheck disable=SC2034  # read by gw_conf (lib.sh)
GW_RESOLVE="$H: $UPADDR"
GW_EXTRA="state_dir: $T/state"
"$PY" - "$EX/mcp-github.yaml" >"$T/policy.yaml" <<'EOF' || die "cannot write the policy"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p.pop("ca", None)
h = p["hosts"]["api.githubcopilot.com"]
h["allow_private"] = True
h["rules"].insert(0, {"id": "tips", "allow": {"method": "POST", "path": "/mcp/", "mcp": {"tool": "send_tip"},
                     "budget": {"sum": "json:$.params.arguments.amount", "max": 10, "per": "day"}}})
for r in h["rules"]:
    if r["id"] == "issues-in-widgets":
        r["allow"]["limit"] = {"rate": "3/hour"}
        r["allow"]["mcp"]["audit"] = ["$.repo"]
    if r["id"] == "ask-before-merge":
        r["hold"]["timeout"] = "30s"
print(yaml.safe_dump(p, sort_keys=False))
EOF
gw_conf <"$T/policy.yaml"
"$SLUICE" audit keygen "$T/audit.key" >/dev/null 2>&1 || die "sluice audit keygen failed"
cp "$T/audit.key" "$T/audit.key.initial"
sed -i "s|^  file: $AUDIT\$|  file: $AUDIT\n  key_file: $T/audit.key|" "$GWCONF"
out=$("$SLUICE" policy check "$GWCONF" 2>&1)
check_eq "sluice policy check accepts the test policy" "$GWCONF: ok" "$out"
gw_start

U=https://$H/mcp/
NOREACH=()
# M VER MARKER BODY [CURL_ARGS...]: POSTs BODY (JSON-RPC) to the endpoint; prints the status; the answer in $T/m.body
M() {
  local v=$1 c=$2 b=$3; shift 3
  printf '%s' "$b" >"$T/m.req"
  pcurl "--http$v" -o "$T/m.body" -D "$T/m.head" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "$@" --data-binary "@$T/m.req" "$U?c=$c" 2>"$T/m.err"
}
body() { cat "$T/m.body"; }
reached() { grep -qF "c=$1" "$PYUPLOG"; }
call() { # call ID TOOL ARGS_JSON
  printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"
}

for V in 1.1 2; do
  L=h${V%.*}
  # ---------------------------------------------------------------- allowed
  st=$(M "$V" "$L-list" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
  check_eq "$L: tools/list is allowed (lifecycle) and reaches the upstream" "200 yes" "$st $(reached "$L-list" && echo yes)"
  st=$(M "$V" "$L-read" "$(call 2 get_issue '{"owner":"acme","repo":"widgets","issue_number":7}')")
  check_eq "$L: a read tool is allowed" "200 yes" "$st $(reached "$L-read" && echo yes)"
  st=$(M "$V" "$L-create" "$(call '"c-1"' create_issue '{"owner":"acme","repo":"widgets","title":"Flaky"}')")
  check_eq "$L: create_issue in acme/widgets is allowed" "200 yes" "$st $(reached "$L-create" && echo yes)"
  # ---------------------------------------------------------------- denials: JSON-RPC errors
  st=$(M "$V" "$L-deltool" "$(call 6 delete_repository '{"owner":"acme","repo":"widgets"}')")
  NOREACH+=("$L-deltool")
  check_eq "$L: deny by tool: HTTP 200 with a JSON-RPC error for id 6, code -32001, rule no-repo-deletion" \
    '200 {"jsonrpc":"2.0","id":6,"code":-32001,"message":"denied by policy","rule":"no-repo-deletion"}' \
    "$st $(body | jq -c '{jsonrpc,id,code:.error.code,message:.error.message,rule:.error.data.rule}')"
  st=$(M "$V" "$L-argrepo" "$(call '"x"' create_issue '{"owner":"acme","repo":"gadgets","title":"x"}')")
  NOREACH+=("$L-argrepo")
  check_eq "$L: deny by argument (another repository): JSON-RPC error for id \"x\", rule default" \
    '200 "x" default' "$st $(body | jq -c .id) $(body | jq -r .error.data.rule)"
  st=$(M "$V" "$L-argcase" "$(call 9 create_issue '{"owner":"acme","Repo":"widgets","repo":"gadgets","title":"x"}')")
  NOREACH+=("$L-argcase")
  check_eq "$L: deny by argument: a case-variant key (Repo beside repo) is refused" "200 9" "$st $(body | jq -c .id)"
  st=$(M "$V" "$L-unknown" "$(call 10 update_repository_settings '{}')")
  NOREACH+=("$L-unknown")
  check_eq "$L: a tool no rule names is denied (default deny)" "200 -32001" "$st $(body | jq -c .error.code)"
  # ---------------------------------------------------------------- batches
  st=$(M "$V" "$L-batchok" "[$(call 30 get_issue '{"owner":"acme","repo":"widgets","issue_number":1}'),$(call 31 list_issues '{"owner":"acme","repo":"widgets"}')]")
  check_eq "$L: a batch all allowed reaches the upstream" "200 yes" "$st $(reached "$L-batchok" && echo yes)"
  st=$(M "$V" "$L-batchno" "[$(call 40 get_issue '{"owner":"acme","repo":"widgets","issue_number":1}'),$(call '"b"' delete_repository '{"owner":"acme","repo":"widgets"}'),{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]")
  NOREACH+=("$L-batchno")
  check_eq "$L: a batch with one denied element: one JSON-RPC error per id (an array), nothing upstream" \
    '200 [40,"b"] [-32001,-32001]' "$st $(body | jq -c '[.[].id]') $(body | jq -c '[.[].error.code]')"
  # ---------------------------------------------------------------- a notification, a client-posted response
  st=$(M "$V" "$L-notif" '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}')
  NOREACH+=("$L-notif")
  check_eq "$L: a denied notification: 403 with the JSON reason" "403 denied by policy" "$st $(body | jq -r .error)"
  st=$(M "$V" "$L-resp" '{"jsonrpc":"2.0","id":77,"result":{}}')
  NOREACH+=("$L-resp")
  check_eq "$L: a client-posted response answering no server request seen: 403 (rule mcp)" "403 mcp" \
    "$st $(body | jq -r .rule)"
  # ---------------------------------------------------------------- headers that mirror the body
  st=$(M "$V" "$L-hname" "$(call 11 get_issue '{"owner":"acme","repo":"widgets"}')" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: delete_repository')
  NOREACH+=("$L-hname")
  check_eq "$L: an Mcp-Name that disagrees with the body: 400, JSON-RPC error -32020" "400 -32020" \
    "$st $(body | jq -c .error.code)"
  st=$(M "$V" "$L-hmeth" "$(call 12 get_issue '{"owner":"acme","repo":"widgets"}')" -H 'Mcp-Method: tools/list')
  NOREACH+=("$L-hmeth")
  check_eq "$L: an Mcp-Method that disagrees with the body: 400" "400" "$st"
  st=$(M "$V" "$L-hparam" "$(call 13 get_issue '{"owner":"acme","repo":"widgets"}')" -H 'Mcp-Param-Repo: gadgets')
  NOREACH+=("$L-hparam")
  check_eq "$L: an Mcp-Param header that disagrees with its argument: 400" "400" "$st"
  st=$(M "$V" "$L-hb64" "$(call 14 get_issue '{"owner":"acme","repo":"widgets"}')" -H 'Mcp-Name: =?base64?ZGVsZXRlX3JlcG9zaXRvcnk=?=')
  NOREACH+=("$L-hb64")
  check_eq "$L: a base64-encoded Mcp-Name that disagrees (delete_repository): 400" "400" "$st"
  st=$(M "$V" "$L-hok" "$(call 15 get_issue '{"owner":"acme","repo":"widgets"}')" -H 'Mcp-Method: tools/call' \
    -H 'Mcp-Name: =?base64?Z2V0X2lzc3Vl?=' -H 'Mcp-Param-Repo: widgets' -H 'Mcp-Session-Id: sess-123')
  check_eq "$L: headers that agree pass, and Mcp-Session-Id goes through untouched" "200 yes" \
    "$st $(reached "$L-hok" && grep -F "c=$L-hok" "$PYUPLOG" | grep -qiF 'sess-123' && echo yes)"
  # ---------------------------------------------------------------- malformed bodies: 400, nothing upstream
  i=0
  while IFS= read -r bad_body; do
    i=$((i + 1))
    st=$(M "$V" "$L-bad$i" "$bad_body")
    NOREACH+=("$L-bad$i")
    check_eq "$L: malformed body $i ($bad_body): 400, a JSON-RPC error of id null" "400 null" \
      "$st $(body | jq -c .id 2>/dev/null)"
  done <<EOF
{"jsonrpc":"2.0","id":1,"method":"tools/call"
[1,{"jsonrpc":"2.0","id":1,"method":"ping"}]
{"jsonrpc":"2.0","method":"tools/call","id":{"a":1},"params":{"name":"get_issue"}}
{"jsonrpc":"2.0","id":null,"method":"ping"}
{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":[1]}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"$(printf 'a%.0s' $(seq 1 129))"}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","Name":"delete_repository"}}
[]
not json at all
EOF
  st=$(pcurl "--http$V" -o "$T/m.body" -w '%{http_code}' -X POST -H 'Content-Length: 0' "$U?c=$L-empty")
  NOREACH+=("$L-empty")
  check_eq "$L: an empty POST to the endpoint: 400" "400" "$st"
  # ---------------------------------------------------------------- holds
  M "$V" "$L-holdok" "$(call 50 merge_pull_request '{"owner":"acme","repo":"widgets","pullNumber":3}')" --max-time 25 >"$T/hold.st" &
  cpid=$!
  id=$(wait_approval "/mcp/?c=$L-holdok" "$cpid")
  check_match "$L: merge_pull_request is held for approval" '^[0-9a-f]{16}$' "$id"
  "$SLUICE" approvals approve -c "$GWCONF" "$id" >/dev/null 2>&1
  wait "$cpid"
  check_eq "$L: approved: the call goes upstream" "200 yes" "$(cat "$T/hold.st") $(reached "$L-holdok" && echo yes)"
  M "$V" "$L-holdno" "$(call '"h"' merge_pull_request '{"owner":"acme","repo":"widgets","pullNumber":4}')" --max-time 25 >"$T/hold.st" &
  cpid=$!
  id=$(wait_approval "/mcp/?c=$L-holdno" "$cpid")
  "$SLUICE" approvals reject -c "$GWCONF" "$id" >/dev/null 2>&1
  wait "$cpid"
  NOREACH+=("$L-holdno")
  check_eq "$L: rejected: a JSON-RPC error for id \"h\" (rule ask-before-merge)" '200 "h" ask-before-merge' \
    "$(cat "$T/hold.st") $(body | jq -c .id) $(body | jq -r .error.data.rule)"
done

# ---------------------------------------------------------------- the limit: 3 create_issue an hour (per sandbox)
# h1 and h2 took 1 each above, 1 is left: a batch of 2 create_issue takes 2 (N calls through a limit take N), so it
# is refused whole (its first element took the last token); then a single call is refused too
st=$(M 1.1 lim-batch "[$(call 60 create_issue '{"owner":"acme","repo":"widgets","title":"t3"}'),$(call 61 create_issue '{"owner":"acme","repo":"widgets","title":"t4"}')]")
NOREACH+=(lim-batch)
check_eq "limit: a batch of 2 create_issue with 1 call left: JSON-RPC errors -32019 with Retry-After, nothing upstream" \
  "200 [-32019,-32019] yes" "$st $(body | jq -c '[.[].error.code]') $(grep -qi '^retry-after: [0-9]' "$T/m.head" && echo yes)"
st=$(M 2 lim-next "$(call 63 create_issue '{"owner":"acme","repo":"widgets","title":"t5"}')")
NOREACH+=(lim-next)
check_eq "limit: over h2, the next call: -32019, data.retry_after set" "200 -32019 true" \
  "$st $(body | jq -c .error.code) $(body | jq -c '.error.data.retry_after > 0')"
st=$(M 1.1 lim-other "$(call 64 get_issue '{"owner":"acme","repo":"widgets","issue_number":2}')")
check_eq "limit: a tool without the limit still passes" "200" "$st"

# ---------------------------------------------------------------- budgets in a batch: 10 a day for send_tip
tip() { call "$1" send_tip "{\"amount\":$2}"; }
st=$(M 1.1 bud-ok "[$(tip 70 4),$(tip 71 5)]")
check_eq "budget: a batch of two send_tip (4 + 5 of 10) is allowed and reaches the upstream" "200 yes" \
  "$st $(reached bud-ok && echo yes)"
st=$(M 1.1 bud-over "[$(tip 72 0.5),$(tip 73 1)]")
NOREACH+=(bud-over)
check_eq "budget: 9 + 0.5 fits, 9.5 + 1 does not: the batch is refused whole, -32019 for each id" \
  "200 [72,73] [-32019,-32019]" "$st $(body | jq -c '[.[].id]') $(body | jq -c '[.[].error.code]')"
st=$(M 2 bud-refunded "$(tip 74 1)")
check_eq "budget: the refused batch gave back its first element's 0.5: 1 more fits exactly (9 + 1)" "200 yes" \
  "$st $(reached bud-refunded && echo yes)"
st=$(M 1.1 bud-full "$(tip 75 0.5)")
NOREACH+=(bud-full)
check_eq "budget: now full: 0.5 is refused" "200 -32019" "$st $(body | jq -c .error.code)"

for c in "${NOREACH[@]}"; do
  reached "$c" && bad "a refused request reached the upstream: $c"
done
ok "no refused request reached the upstream (${#NOREACH[@]} checked)"

# ---------------------------------------------------------------- the audit
audit_wait '.type == "request" and .tool == "create_issue"' 5 || bad "the audit has no record of a create_issue call"
rec=$(audit_get '.type == "request" and .tool == "create_issue" and .rpc_id == "c-1"' | head -n 1)
check_eq "audit: the create_issue record has mcp_method, tool, rpc_id and only the audit: path in args" \
  '{"mcp_method":"tools/call","tool":"create_issue","rpc_id":"c-1","args":{"$.repo":"widgets"},"verdict":"allow"}' \
  "$(printf '%s' "$rec" | jq -c '{mcp_method,tool,rpc_id,args,verdict}')"
check_eq "audit: a denial answered as a JSON-RPC error records the verdict, its status and the HTTP status sent" \
  '{"verdict":"deny","rule":"no-repo-deletion","status":403,"http_status":200}' \
  "$(audit_get '.type == "request" and .tool == "delete_repository" and .rpc_id == 6' | head -n 1 | jq -c '{verdict,rule,status,http_status}')"
check_eq "audit: a denied notification (answered 403) has no http_status" 'null' \
  "$(audit_get '.type == "request" and .mcp_method == "notifications/cancelled"' | head -n 1 | jq -c .http_status)"
check "audit: no other argument value (the title) is written" sh -c "! grep -qF 'Flaky' '$AUDIT'"
# args_hmac: HMAC(K_args, JCS(arguments)), K_args = HMAC(K_seq, label), K_seq the initial key evolved to the record
hm=$(grep -F '"rpc_id":"c-1"' "$AUDIT" | head -n 1 | "$PY" -c '
import hashlib, hmac, json, sys
rec = json.loads(sys.stdin.readline())
k = bytes.fromhex(open(sys.argv[1]).read().split()[3])
for _ in range(rec["seq"] - 1):
    k = hashlib.sha256(b"sluice-audit-key-v1" + k).digest()
ka = hmac.new(k, b"sluice-mcp-args-v1", hashlib.sha256).digest()
jcs = json.dumps({"owner": "acme", "repo": "widgets", "title": "Flaky"}, sort_keys=True, separators=(",", ":"))
print("match" if rec.get("args_hmac") == hmac.new(ka, jcs.encode(), hashlib.sha256).hexdigest() else
      "mismatch %s" % rec.get("args_hmac"))' "$T/audit.key.initial" 2>&1)
check_eq "audit: args_hmac is the keyed fingerprint of the arguments (checked from the initial key)" match "$hm"
check_eq "audit: every element of a batch that calls a tool has a 64-hex args_hmac" true \
  "$(audit_get '.type == "request" and .mcp_batch != null' | jq -s -c '[.[].mcp_batch[] | select(.tool != null) | .args_hmac | test("^[0-9a-f]{64}$")] | (length > 0 and all)')"
rec=$(audit_get '.type == "request" and .mcp_batch != null and .verdict == "deny"' | head -n 1)
check_eq "audit: a denied batch has mcp_batch with each element's verdict and rule" \
  '[["get_issue","allow","read"],["delete_repository","deny","no-repo-deletion"],[null,"allow","lifecycle"]]' \
  "$(printf '%s' "$rec" | jq -c '[.mcp_batch[] | [.tool, .verdict, .rule]]')"
n=$("$SLUICE" audit query "$AUDIT" --tool delete_repository 2>/dev/null | grep -c .)
check_match "sluice audit query --tool delete_repository finds the denied calls and batches" '^[4-9]$|^[1-9][0-9]$' "$n"
rec=$(audit_get '.type == "request" and .mcp_batch != null and .verdict == "allow" and (.mcp_batch[0].tool == "send_tip")' | head -n 1)
check_eq "audit: the allowed batch names each element's budget and amount" \
  '[{"key":"rule:tips","amount":"4"},{"key":"rule:tips","amount":"5"}]' "$(printf '%s' "$rec" | jq -c '[.mcp_batch[].budget]')"
out=$("$SLUICE" audit verify "$AUDIT" --key-file "$T/audit.key.initial" 2>&1); rc=$?
check_match "sluice audit verify --key-file (the initial key) passes: every mac, with the fingerprints in place" '^0 ok: ' "$rc $out"
gw_stop
check_eq "the gateway exits 0" 0 "$GW_RC"
finish
