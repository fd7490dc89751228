#!/usr/bin/env bash
# `sluice policy check|test|explain` end to end, exact outputs: check's ok, warnings (shadowed rule, overlapping
# wildcard), errors (file:line:column; a secret bound to a host without an entry), --strict and exit statuses;
# test on every shipped example (each must pass) and on a file of failing cases (each mismatch printed, exit 1);
# explain's rule-by-rule transcript for a JSON, a form, a hold, a report-mode and a refused request.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
ROOT=$(readlink -f "$(dirname "$(readlink -f "$0")")/../..")
EX=$ROOT/examples
cd "$T" || die "cd $T"

run() { # run CMD...: stdout+stderr, then "rc=N"
  local out rc
  out=$("$@" 2>&1); rc=$?
  printf '%s\nrc=%s' "$out" "$rc"
}

# ---- check ----
cat >clean.yaml <<'Y'
ca: /var/lib/sluice/ca
hosts:
  api.example.com:
    rules:
      - { id: post, allow: { method: POST, path: /v1/items, json: { "$.kind": { in: [a, b] } }, max_body: 64K } }
Y
check_eq "check: a clean policy" "clean.yaml: ok
rc=0" "$(run "$SLUICE" policy check clean.yaml)"

cat >warn.yaml <<'Y'
ca: /var/lib/sluice/ca
hosts:
  "*.example.com": {}
  api.example.com:
    rules:
      - { id: read, allow: { method: GET, path: "/v1/**" } }
      - { id: read-users, allow: { method: GET, path: "/v1/users/*" } }
      - { id: no-admin, deny: { path: "/admin/**" } }
Y
check_eq "check: warnings load, and are printed with file:line:column" "warn.yaml:7:9: warning: rule 'read-users' (hosts.api.example.com.rules[1]) can never match: rule 'read' (line 6) matches every request it would
warn.yaml:3:3: warning: host entry '*.example.com' also covers 'api.example.com' (line 4), whose more specific entry wins: the rules of '*.example.com' do not apply there
warn.yaml: ok (2 warnings)
rc=0" "$(run "$SLUICE" policy check warn.yaml)"
check_eq "check --strict: warnings are errors" "warn.yaml:7:9: warning: rule 'read-users' (hosts.api.example.com.rules[1]) can never match: rule 'read' (line 6) matches every request it would
warn.yaml:3:3: warning: host entry '*.example.com' also covers 'api.example.com' (line 4), whose more specific entry wins: the rules of '*.example.com' do not apply there
warn.yaml: 0 errors, 2 warnings (--strict: warnings are errors)
rc=1" "$(run "$SLUICE" policy check --strict warn.yaml)"

cat >secret.yaml <<'Y'
ca: /var/lib/sluice/ca
hosts:
  api.example.com:
    rules:
      - deny: { path: "/**" }
secrets:
  token:
    source: env:TOKEN
    hosts: [api.example.com, nowhere.test]
Y
check_eq "check: a secret bound to a host without an entry is an error" "secret.yaml:9:13: warning: secret 'token' is bound to host 'api.example.com', whose entry 'api.example.com' has no allow rule
secret.yaml:9:30: error: secret 'token' is bound to host 'nowhere.test', which has no entry in hosts (and default is deny): it can never be used
secret.yaml: 1 error, 1 warning
rc=1" "$(run "$SLUICE" policy check secret.yaml)"
check_match "serve: the same file does not load (the first error, the process exits 1)" \
  "secret.yaml:9:30: error: secret 'token' is bound to host 'nowhere.test', which has no entry in hosts .*
rc=1$" "$(run timeout 10 "$SLUICE" serve -c secret.yaml)"

printf 'ca: /x\nhosts:\n  a.test:\n    rules:\n      - allow: { method: GET, json: { "$.a": { regex: "(" } } }\n' >regex.yaml
check_eq "check: a bad regex" "regex.yaml:5:55: bad regex in hosts.a.test.rules[0].allow.json.\$.a at offset 1: missing closing parenthesis
rc=1" "$(run "$SLUICE" policy check regex.yaml)"
printf 'ca: /x\nhosts:\n  a.test:\n    rules:\n      - allow: { method: GET, bogus_key: 1 }\n' >unknown.yaml
check_match "check: an unknown key names file:line:column" "^unknown.yaml:5:31: unknown key 'bogus_key' in hosts.a.test.rules\[0\].allow; expected one of: method, path, id, mode, query, headers, json, form, graphql, git, max_body, limit, budget, timeout
rc=1$" "$(run "$SLUICE" policy check unknown.yaml)"
printf 'ca: /x\nhosts:\n  a.test:\n    rules:\n      - hold: { max_body: 1M, timeout: 1m }\n' >types.yaml
check_eq "check: a key that does not apply" "types.yaml:5:27: max_body in hosts.a.test.rules[0].hold, which reads no body (json, form, graphql, git or budget)
rc=1" "$(run "$SLUICE" policy check types.yaml)"
check_eq "check: usage" 2 "$("$SLUICE" policy check >/dev/null 2>&1; echo $?)"
check_eq "check: a missing file" "nope.yaml: No such file or directory
rc=1" "$(run "$SLUICE" policy check nope.yaml)"

# ---- test ----
n=0
for c in "$EX"/*.cases.yaml; do
  p=${c%.cases.yaml}.yaml; n=$((n + 1))
  out=$("$SLUICE" policy check --strict "$p" 2>&1)
  check_eq "check --strict $(basename "$p")" "$p: ok" "$out"
  out=$("$SLUICE" policy test "$p" "$c" 2>&1); rc=$?
  check_match "test $(basename "$c"): every case passes" "^$c: [0-9]+ cases, ([0-9]+) passed, 0 failed$" "$out"
  check_eq "test $(basename "$c"): exit 0" 0 "$rc"
done
check "four examples with cases" test "$n" -ge 4

cat >cases.yaml <<'Y'
- name: passes
  request: { method: POST, url: "https://api.stripe.com/v1/payment_intents", form: { amount: 100, currency: usd } }
  expect: { verdict: allow, rule: small-payments, status: 200 }
- name: wrong verdict
  request: { method: POST, url: "https://api.stripe.com/v1/payment_intents", form: { amount: 9000, currency: usd } }
  expect: { verdict: allow, rule: small-payments }
- name: wrong rule and status
  request: { method: POST, url: "https://api.stripe.com/v1/refunds", form: { payment_intent: pi_1 } }
  expect: { verdict: hold, rule: refund, status: 403 }
- name: over the budget
  request: { method: POST, url: "https://api.stripe.com/v1/payment_intents", body: "amount=5000&currency=usd", content_type: application/x-www-form-urlencoded }
  expect: { verdict: allow, status: 200 }
Y
for i in 1 2 3; do printf -- '- { name: "spend %d", request: { method: POST, url: "https://api.stripe.com/v1/payment_intents", form: { amount: 5000, currency: usd } }, expect: { verdict: allow } }\n' "$i"; done >>cases.yaml
check_eq "test: every mismatch, a summary, exit 1" "FAIL cases.yaml:4: wrong verdict: verdict: expected 'allow', got 'deny'; rule: expected 'small-payments', got 'default' (decided: deny by rule 'default': no rule matched, status 403)
FAIL cases.yaml:7: wrong rule and status: rule: expected 'refund', got 'refunds'; status: expected '403', got '200' (decided: hold by rule 'refunds': held for approval, status 200)
cases.yaml: 7 cases, 5 passed, 2 failed
rc=1" "$(run "$SLUICE" policy test "$EX/stripe-limited.yaml" cases.yaml)"
printf -- '- name: x\n  request: { url: "https://api.stripe.com/", color: red }\n  expect: { verdict: allow }\n' >badcases.yaml
check_eq "test: a bad cases file" "badcases.yaml:2:46: unknown key in request
rc=1" "$(run "$SLUICE" policy test "$EX/stripe-limited.yaml" badcases.yaml)"
printf -- '- name: x\n  request: { url: "ftp://api.stripe.com/" }\n  expect: { verdict: allow }\n' >badurl.yaml
check_eq "test: a bad URL" "badurl.yaml:2:12: bad URL 'ftp://api.stripe.com/': the URL must start with https:// or http://
rc=1" "$(run "$SLUICE" policy test "$EX/stripe-limited.yaml" badurl.yaml)"
# mcp: cases: a bad key in a message, two bodies, and a failing batch case naming the element that decided
printf -- '- name: x\n  request: { url: "https://api.githubcopilot.com/mcp/", mcp: { tool: a, colour: red } }\n  expect: { verdict: allow }\n' >badmcp.yaml
check_eq "test: a bad key in an mcp message" "badmcp.yaml:2:73: unknown key in mcp
rc=1" "$(run "$SLUICE" policy test "$EX/mcp-github.yaml" badmcp.yaml)"
printf -- '- name: x\n  request: { url: "https://api.githubcopilot.com/mcp/", mcp: { tool: a }, json: {} }\n  expect: { verdict: allow }\n' >twobodies.yaml
check_eq "test: mcp and json together" "twobodies.yaml:2:12: expected at most one of json, form, body, mcp in request
rc=1" "$(run "$SLUICE" policy test "$EX/mcp-github.yaml" twobodies.yaml)"
cat >batch.yaml <<'Y'
- name: a batch of reads and a merge
  request:
    url: https://api.githubcopilot.com/mcp/
    mcp: [ { tool: get_issue, id: 1 }, { tool: merge_pull_request, id: 2 }, { tool: list_issues, id: 3 } ]
  expect: { verdict: allow }
Y
check_eq "test: a batch is held when one element is, and the element is named" "FAIL batch.yaml:1: a batch of reads and a merge: verdict: expected 'allow', got 'hold' [batch: element 2 of 3 decided] (decided: hold by rule 'ask-before-merge': held for approval, status 200)
batch.yaml: 1 case, 0 passed, 1 failed
rc=1" "$(run "$SLUICE" policy test "$EX/mcp-github.yaml" batch.yaml)"
out=$(run "$SLUICE" policy explain "$EX/mcp-github.yaml" --method POST --url https://api.githubcopilot.com/mcp/ \
  --json '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":{"owner":"acme","repo":"gadgets","title":"t"}}}')
check_match "explain: the failing mcp tool condition" "rule 2 'read' \(allow, line 22\): no match: mcp tool create_issue is not get_\* or the others listed" "$out"
check_match "explain: the failing mcp argument" "rule 3 'issues-in-widgets' \(allow, line 24\): no match: mcp argument \\\$.repo: \"gadgets\" fails eq widgets" "$out"
check_match "explain: the failing mcp method" "rule 0 'lifecycle' \(allow, line 15\): no match: mcp method tools/call is not initialize or the others listed" "$out"
check_eq "test: usage" 2 "$("$SLUICE" policy test "$EX/stripe-limited.yaml" >/dev/null 2>&1; echo $?)"

# ---- explain ----
check_eq "explain: a JSON body against a model allowlist" "request: POST https://api.anthropic.com/v1/messages
  rule 0 'anthropic-messages' (allow, line 26): no match: json \$.model: \"claude-opus-4-20250514\" fails regex claude-(3-5-haiku|sonnet-4)-[0-9]{8}
decision: deny by rule 'default': no rule matched
rc=0" "$(run "$SLUICE" policy explain "$EX/llm-apis.yaml" --method POST --url https://api.anthropic.com/v1/messages \
  --json '{"model":"claude-opus-4-20250514","max_tokens":10}')"
check_eq "explain: report mode, a limit" "request: POST https://api.openai.com/v1/chat/completions
  rule 0 'no-tools' (deny, mode report, line 13): match
  rule 1 'openai-chat' (allow, line 16): match
report: deny by rule 'no-tools': denied by rule
decision: allow by rule 'openai-chat'
  limit: 1000/day, per sandbox (counter limit:llm-requests)
rc=0" "$(run "$SLUICE" policy explain "$EX/llm-apis.yaml" --method POST --url https://api.openai.com/v1/chat/completions \
  --header 'Content-Type: application/json' --json '{"model":"gpt-4o","tools":[]}')"
check_eq "explain: a form, a budget" "request: POST https://api.stripe.com/v1/payment_intents
  rule 0 'small-payments' (allow, line 11): match
decision: allow by rule 'small-payments'
  budget: 20000 of form:amount per day, global (counter rule:small-payments); this request: 4000
rc=0" "$(run "$SLUICE" policy explain "$EX/stripe-limited.yaml" --method POST --url https://api.stripe.com/v1/payment_intents \
  --form 'amount=4000&currency=usd')"
check_eq "explain: a repeated field" "request: POST https://api.stripe.com/v1/payment_intents
  rule 0 'small-payments' (allow, line 11): no match: form amount: \"9000\" fails min 1, max 5000
  rule 1 'refunds' (hold, line 20): no match: path /v1/payment_intents does not match /v1/refunds
  rule 2 'read' (allow, line 26): no match: method POST is not GET
decision: deny by rule 'default': no rule matched
rc=0" "$(run "$SLUICE" policy explain "$EX/stripe-limited.yaml" --method POST --url https://api.stripe.com/v1/payment_intents \
  --form 'amount=100&amount=9000&currency=usd')"
check_eq "explain: a hold and its fields" "request: POST https://api.stripe.com/v1/refunds
  rule 0 'small-payments' (allow, line 11): no match: path /v1/refunds does not match /v1/payment_intents
  rule 1 'refunds' (hold, line 20): match
decision: hold by rule 'refunds': held for approval
  hold: up to 10m for an operator's approval, then 403
  field form:payment_intent = pi_1
rc=0" "$(run "$SLUICE" policy explain "$EX/stripe-limited.yaml" --method POST --url https://api.stripe.com/v1/refunds \
  --form 'payment_intent=pi_1&amount=300')"
printf '00741111111111111111111111111111111111111111 2222222222222222222222222222222222222222 refs/heads/main\0report-status\n0000PACK' >push.bin
check_eq "explain: a git push to main, from a file" "request: POST https://github.com/acme/widgets.git/git-receive-pack
  rule 0 'git-discovery' (allow, line 36): no match: method POST is not GET
  rule 1 'git-fetch' (allow, line 41): no match: path /acme/widgets.git/git-receive-pack does not match regex:/acme/widgets(\\.git)?/git-upload-pack
  rule 2 'protect-main' (deny, line 43): match
decision: deny by rule 'protect-main': denied by rule
rc=0" "$(run "$SLUICE" policy explain "$EX/github-agent.yaml" --method POST \
  --url https://github.com/acme/widgets.git/git-receive-pack --body-file push.bin --content-type application/x-git-receive-pack-request)"
check_eq "explain: a duplicate key cannot be judged" "request: POST https://api.github.com/repos/acme/widgets/pulls
  rule 0 'no-admin' (deny, line 14): no match: path /repos/acme/widgets/pulls does not match regex:/(repos/[^/]+/[^/]+/(hooks|keys|collaborators|branches/[^/]+/protection|actions/secrets|environments)|orgs/[^/]+/(hooks|members|memberships|actions/secrets)|admin)(/.*)?
  rule 1 'read-anything' (allow, line 17): no match: method POST is not GET or the others listed
  rule 2 'open-pull-requests' (allow, line 19): no match: json \$.head: cannot judge: the JSON body has a duplicate key
  rule 3 'comment-on-pull-requests' (allow, line 26): no match: path /repos/acme/widgets/pulls does not match /repos/acme/widgets/issues/*/comments
  rule 4 'graphql-reads' (allow, line 32): no match: path /repos/acme/widgets/pulls does not match /graphql
decision: deny by rule 'default': no rule matched
rc=0" "$(run "$SLUICE" policy explain "$EX/github-agent.yaml" --method POST --url https://api.github.com/repos/acme/widgets/pulls \
  --json '{"head":"agent/x","base":"main","base":"release"}')"
check_eq "explain: a host not in the policy" "request: GET https://evil.test/x
decision: deny by rule 'default': host not in policy (status 403)
rc=0" "$(run "$SLUICE" policy explain "$EX/llm-apis.yaml" --url https://evil.test/x)"
check_eq "explain: a path that climbs above the root" "request: GET https://api.openai.com/a/../../x
decision: deny by rule 'path': path climbs above the root (status 400)
rc=0" "$(run "$SLUICE" policy explain "$EX/llm-apis.yaml" --url 'https://api.openai.com/a/../../x')"
check_eq "explain: usage (two bodies)" 2 "$("$SLUICE" policy explain "$EX/llm-apis.yaml" --url https://x.test/ --json '{}' --form a=1 >/dev/null 2>&1; echo $?)"
finish
