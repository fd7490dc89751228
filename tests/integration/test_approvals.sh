#!/usr/bin/env bash
# Human approval holds, the operator's side: the admin routes (GET /approvals, POST /approvals/<id>/approve|reject)
# and `sluice approvals list|approve|reject`.
#   1. A real gateway (a hold rule in its policy): its admin socket is 0600 and refuses another user; the empty
#      listing; 404 for unknown or malformed ids and paths, 405 for wrong methods (with Allow); the CLI's exit codes
#      (1 unknown id, 2 usage) and its refusal to put a malformed id in a request.
#   2. The request path does not park requests yet, so approvals_harness (a test program, never part of sluice:
#      the gateway's real admin routes, approvals registry and audit writer, with requests parked by a test
#      thread) stands in for it: the table (aligned, hostile bytes shown as \xNN, fields, body hash), --json,
#      approve (uid:0(root)), reject from another uid (SO_PEERCRED names it), a second decision refused, a timeout,
#      shutdown (-2), and the `approval` audit records {id, request, decision, by, rule, host, method, path,
#      body_sha256} in a chain that verifies.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HARNESS=${APPROVALS_HARNESS:-$(dirname "$SLUICE")/../tests/integration/approvals_harness}
[ -x "$HARNESS" ] || die "no approvals_harness at $HARNESS (build the approvals_harness target, or set APPROVALS_HARNESS)"
HARNESS=$(readlink -f "$HARNESS")
NOBODY=$(id -u nobody)

adm() { curl -sS --max-time 5 --unix-socket "$ADMIN" -o "$T/adm.body" -D "$T/adm.head" -w '%{http_code}' "$@"; }
allow_of() { tr -d '\r' <"$T/adm.head" | sed -n 's/^Allow: //Ip'; }

# ---------------------------------------------------------------- 1. the real gateway
policy_base 'allow: { method: GET }' '{ id: refunds, hold: { method: POST, path: /v1/refunds, timeout: 10m } }' \
  </dev/null | gw_conf
gw_start

check_eq "the admin socket is mode 0600, owned by root" "600 root" "$(stat -c '%a %U' "$ADMIN")"
check_eq "  another user cannot connect to it" 000 \
  "$(setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups curl -s --max-time 5 --unix-socket "$ADMIN" \
     -o /dev/null -w '%{http_code}' http://x/approvals)"
check_eq "GET /approvals: 200" 200 "$(adm http://x/approvals)"
check_eq "  an empty JSON array" "[]" "$(jq -c . "$T/adm.body")"
check_eq "POST approve of an unknown id: 404" 404 "$(adm -X POST http://x/approvals/0123456789abcdef/approve)"
check_match "  with a JSON reason" 'no such pending approval' "$(jq -r .error "$T/adm.body")"
check_eq "POST reject of an unknown id: 404" 404 "$(adm -X POST http://x/approvals/0123456789abcdef/reject)"
check_eq "POST approve of a malformed id: 404" 404 "$(adm -X POST http://x/approvals/0123456789ABCDEF/approve)"
check_eq "POST approve of a short id: 404" 404 "$(adm -X POST http://x/approvals/0123/approve)"
check_eq "an unknown verb: 404" 404 "$(adm -X POST http://x/approvals/0123456789abcdef/maybe)"
check_eq "no verb: 404" 404 "$(adm -X POST http://x/approvals/0123456789abcdef)"
check_eq "GET on approve: 405" 405 "$(adm http://x/approvals/0123456789abcdef/approve)"
check_eq "  Allow: POST" POST "$(allow_of)"
check_eq "DELETE /approvals: 405" 405 "$(adm -X DELETE http://x/approvals)"
check_eq "  Allow: GET" GET "$(allow_of)"
check_eq "POST /approvals: 405" 405 "$(adm -X POST http://x/approvals)"

out=$("$SLUICE" approvals list -c "$GWCONF" 2>&1); rc=$?
check_eq "sluice approvals list: nothing waiting (exit 0)" "0 no requests are waiting for approval" "$rc $out"
check_eq "  --json: the gateway's []" "[]" "$("$SLUICE" approvals list -c "$GWCONF" --json | jq -c .)"
out=$("$SLUICE" approvals approve -c "$GWCONF" 0123456789abcdef 2>&1); rc=$?
check_eq "sluice approvals approve of an unknown id: exit 1" 1 "$rc"
check_match "  says so" 'no pending approval 0123456789abcdef' "$out"
"$SLUICE" approvals reject -c "$GWCONF" 0123456789abcdef >/dev/null 2>&1; rc=$?
check_eq "sluice approvals reject of an unknown id: exit 1" 1 "$rc"
out=$("$SLUICE" approvals approve -c "$GWCONF" $'../../sandboxes/x\r\nX: y' 2>&1); rc=$?
check_eq "a malformed id: exit 1, never sent" 1 "$rc"
check_match "  shown escaped" 'no pending approval \.\./\.\./sandboxes/x\\x0d\\x0aX: y \(an id is 16 hex digits\)' "$out"
"$SLUICE" approvals approve -c "$GWCONF" >/dev/null 2>&1; rc=$?
check_eq "approve without an id: usage (exit 2)" 2 "$rc"
"$SLUICE" approvals frobnicate -c "$GWCONF" >/dev/null 2>&1; rc=$?
check_eq "an unknown subcommand: usage (exit 2)" 2 "$rc"
"$SLUICE" approvals list >/dev/null 2>&1; rc=$?
check_eq "list without -c: usage (exit 2)" 2 "$rc"
check_match "--help: exit 0 with the usage" '^usage: sluice approvals list -c FILE' "$("$SLUICE" approvals --help)"
check_match "sluice --help lists approvals" 'approvals list\|approve\|reject' "$("$SLUICE" --help)"
check_eq "GET /approvals still answers after all that" 200 "$(adm http://x/approvals)"

# ---------------------------------------------------------------- 2. held requests (approvals_harness)
HSOCK=$T/h.sock HAUDIT=$T/h-audit.jsonl HCONF=$T/h.yaml HLOG=$T/harness.log
cat >"$HCONF" <<YAML
listen:
  admin: "unix:$HSOCK"
ca: $CA
audit:
  file: $HAUDIT
default: deny
hosts:
  api.stripe.com:
    rules:
      - id: refunds
        hold: { method: POST, path: /v1/refunds, timeout: 10m }
YAML
# five holds: requests 0, 1, 2, 0, 1 (the last one times out after 1.5 s)
spawn "$HLOG" "$HARNESS" "$HCONF" 600000 600000 600000 600000 1500
HPID=$LASTPID
eventually 10 grep -q '^ready$' "$HLOG" || die "approvals_harness did not start: $(tail -n 5 "$HLOG")"
mapfile -t IDS < <(sed -n 's/^held \([0-9a-f]\{16\}\) [0-9]$/\1/p' "$HLOG")
check_eq "five approvals parked, with distinct 16-hex ids" 5 "$(printf '%s\n' "${IDS[@]}" | sort -u | grep -cE '^[0-9a-f]{16}$')"
ID0=${IDS[0]} ID1=${IDS[1]} ID2=${IDS[2]} ID3=${IDS[3]} ID4=${IDS[4]}
SHA0=$(printf '%s' 'amount=5000&currency=usd' | sha256sum | cut -d' ' -f1)
check_eq "the harness socket is 0600 too" 600 "$(stat -c '%a' "$HSOCK")"
check "the short one times out" eventually 10 grep -q "^decided $ID4 -1 timeout$" "$HLOG"

out=$("$SLUICE" approvals list -c "$HCONF"); rc=$?
check_eq "sluice approvals list: exit 0" 0 "$rc"
check_match "  a header line" '^ID +AGE +LEFT +SANDBOX +METHOD +HOST +RULE +PATH$' "$(printf '%s\n' "$out" | head -n 1)"
check_eq "  four rows (the timed-out one is gone), oldest first" "$ID0 $ID1 $ID2 $ID3" \
  "$(printf '%s\n' "$out" | grep -oE '^[0-9a-f]{16}' | tr '\n' ' ' | sed 's/ $//')"
check_match "  the refund: age, time left, sandbox, method, host, rule, path" \
  "^$ID0 +[0-9]+s +9m[0-9]{2}s +sb-one +POST +api\.stripe\.com +refunds +/v1/refunds\$" "$(printf '%s\n' "$out" | grep "^$ID0")"
check_eq "  the columns line up (PATH starts at one offset on every line)" 1 \
  "$(printf '%s\n' "$out" | grep -E '^(ID|[0-9a-f]{16}) ' | awk '{print index($0, " /v1/") ? index($0, " /v1/") : index($0, " PATH")}' | sort -u | wc -l)"
check_eq "  its fields and body hash below it" "    form:amount = 5000
    form:currency = usd
    body sha256 = $SHA0" "$(printf '%s\n' "$out" | grep -A3 "^$ID0" | tail -n 3)"
check_match "  the query stays in the path" "^$ID1 .* /v1/refunds\?expand=charge\$" "$(printf '%s\n' "$out" | grep "^$ID1")"
check_match "  hostile sandbox and path bytes are shown as \\xNN" \
  "^$ID2 .* sb-\\\\x1b\[31mred +POST .* /v1/refunds/\\\\x1b\[2J\\\\xe2\\\\x80\\\\xaefdp\.exe\$" "$(printf '%s\n' "$out" | grep "^$ID2")"
check_eq "  and a hostile field value" '    json:$.note = \x1b]0;owned\x07 hi' "$(printf '%s\n' "$out" | grep -F 'json:$.note')"
check_eq "  no byte outside printable ASCII reaches the terminal" 0 \
  "$(printf '%s' "$out" | LC_ALL=C tr -d '\n' | LC_ALL=C grep -c '[^ -~]')"
j=$("$SLUICE" approvals list -c "$HCONF" --json)
check_eq "--json: four entries" 4 "$(printf '%s' "$j" | jq length)"
check_eq "  with every member" \
  "sb-one POST api.stripe.com /v1/refunds refunds $SHA0 form:amount=5000,form:currency=usd true true" \
  "$(printf '%s' "$j" | jq -r --arg id "$ID0" '.[] | select(.id == $id) | "\(.sandbox) \(.method) \(.host) \(.path) \(.rule) \(.body_sha256) \(.fields | map("\(.place)=\(.value)") | join(",")) \(.age_ms >= 0) \(.timeout_left_ms > 590000)"')"
check_eq "  the JSON itself is ASCII" 0 "$(printf '%s' "$j" | LC_ALL=C grep -c '[^ -~]')"

out=$("$SLUICE" approvals approve -c "$HCONF" "$ID0" 2>&1); rc=$?
check_eq "approve: exit 0, says so" "0 approved $ID0" "$rc $out"
check "  the held request gets 1, decided by uid:0(root)" eventually 5 grep -q "^decided $ID0 1 uid:0(root)$" "$HLOG"
out=$("$SLUICE" approvals approve -c "$HCONF" "$ID0" 2>&1); rc=$?
check_eq "approving it again: exit 1" 1 "$rc"
check_match "  already decided" "no pending approval $ID0 \(unknown, already decided, or timed out\)" "$out"
"$SLUICE" approvals reject -c "$HCONF" "$ID0" >/dev/null 2>&1; rc=$?
check_eq "rejecting it after: exit 1" 1 "$rc"
"$SLUICE" approvals approve -c "$HCONF" "$ID4" >/dev/null 2>&1; rc=$?
check_eq "approving the timed-out one: exit 1" 1 "$rc"
check_eq "  and its callback ran once only" 1 "$(grep -c "^decided $ID4 " "$HLOG")"

chmod 666 "$HSOCK"   # only so that another uid can reach it: SO_PEERCRED must name that uid
code=$(setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups curl -s --max-time 5 --unix-socket "$HSOCK" \
  -o /dev/null -w '%{http_code}' -X POST "http://x/approvals/$ID1/reject")
check_eq "reject by another uid: 204" 204 "$code"
check "  the held request gets 0, decided by uid:$NOBODY(nobody)" \
  eventually 5 grep -q "^decided $ID1 0 uid:$NOBODY(nobody)$" "$HLOG"
chmod 600 "$HSOCK"
check_eq "sluice approvals reject --json of the hostile one" "{\"id\":\"$ID2\",\"decision\":\"rejected\"}" \
  "$("$SLUICE" approvals reject -c "$HCONF" --json "$ID2")"
check_eq "the listing now has only the last one" "$ID3" "$("$SLUICE" approvals list -c "$HCONF" --json | jq -r '.[].id')"

kill -TERM "$HPID"
check "SIGTERM: the pending one gets -2 (shutdown)" eventually 5 grep -q "^decided $ID3 -2 shutdown$" "$HLOG"
wait "$HPID"; rc=$?
check_eq "  the harness exits 0 after freeing everything" 0 "$rc"
check_eq "  every callback ran exactly once" "1 1 1 1 1" \
  "$(for i in "${IDS[@]}"; do grep -c "^decided $i " "$HLOG"; done | tr '\n' ' ' | sed 's/ $//')"
check_nomatch "  no sanitizer report" 'Sanitizer|runtime error' "$(cat "$HLOG")"

arec() { jq -r --arg id "$1" 'select(.type == "approval" and .id == $id)
  | [.decision, .by, .sandbox, .rule, .host, .method, .path, .body_sha256, (.request // "-")] | join(" ")' "$HAUDIT" 2>/dev/null; }
check_eq "audit: the approval, with who, what and the body hash" \
  "approved uid:0(root) sb-one refunds api.stripe.com POST /v1/refunds $SHA0 7-1" "$(arec "$ID0")"
check_eq "audit: the rejection by the other uid" \
  "rejected uid:$NOBODY(nobody) sb-two refunds api.stripe.com POST /v1/refunds?expand=charge $(printf amount=99 | sha256sum | cut -d' ' -f1) 8-1" \
  "$(arec "$ID1")"
check_match "audit: the timeout" '^timeout timeout sb-two refunds ' "$(arec "$ID4")"
check_match "audit: the shutdown" '^shutdown shutdown sb-one refunds ' "$(arec "$ID3")"
check_eq "audit: one record per approval" 5 "$(jq -c 'select(.type == "approval")' "$HAUDIT" | wc -l)"
check "the harness's audit chain verifies" "$SLUICE" audit verify "$HAUDIT"
finish
