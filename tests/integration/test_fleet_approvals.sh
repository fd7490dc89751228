#!/usr/bin/env bash
# Approvals across the fleet (issue 22 items 1, 2 and 4): a redis-server of the test's own (a unix socket in $T, a
# password), three gateways with one policy (state.backend: redis, one state.fleet_key file), hold rules.
#   - a hold on gateway 1 is listed on gateway 3 (gateway gw1, state pending) and, approved from gateway 3, completes
#     upstream on gateway 1; a hold rejected from gateway 2 gets the refusal (403); both gateways audit the decision
#     (the holder: by uid:0(root)@gwN; the decider: gateway gw1); a second decision is refused; two gateways
#     deciding one hold at once: exactly one takes it (SET NX), the other is told 409;
#   - a field of bytes >= 0x80 (a form value decoded to c3 a9 ff) is listed by gateway 3 as the same bytes as by gateway 1;
#   - written into Redis by hand, without the fleet key: a decision (SET and PUBLISH) releases nothing, a genuine
#     decision replayed under another hold's key releases nothing, a hold record is listed "unverified" and cannot
#     be decided (409);
#   - a killed gateway's hold is shown "gateway_gone", then "expired", and cannot be decided;
#   - Redis killed: deciding another gateway's hold answers 503 naming the store; a local hold is still decided;
#     Redis restarted: the holds are published again and decided across the fleet again;
#   - the fleet key and the Redis password are in no log, audit record or answer; every audit file verifies.
# Nothing leaves loopback; the clients run under env -i with the CA given explicitly.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
need_tool redis-server redis-cli

pki_init
PYP=$(freeport)
pyup_start "$PYP"
RPASS="fleetap-pw-$ID-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
FKEY="fleetkey-$ID-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$FKEY" >"$T/fleet.key"; chmod 600 "$T/fleet.key"
PFX="fap-$ID:"
redis_start
export SLUICE_REDIS_PASSWORD=$RPASS

policy() {
  cat <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
    ports: [443, $PYP]
    rules:
      - { id: pay-hold, hold: { method: POST, path: /pay, timeout: 60s } }
      - { id: gone-hold, hold: { method: POST, path: /gone, timeout: 8s } }
      - { id: note-hold, hold: { method: POST, path: /note, form: { note: { exists: true } }, timeout: 60s } }
YAML
}
declare -A GPP GPID GAUD GADM GLOG GCONF
gw_up() {
  local n=$1
  [ -n "${GPP[$n]:-}" ] || GPP[$n]=$(freeport)
  PP=${GPP[$n]} TP=$(freeport) ADMIN=$T/admin$n.sock AUDIT=$T/audit$n.jsonl GWCONF=$T/gw$n.yaml GWLOG=$T/gw$n.log
  GW_EXTRA=$(printf 'state:\n  backend: redis\n  dir: %s\n  redis: { url: "unix:%s", password: env:SLUICE_REDIS_PASSWORD, timeout: 2s, key_prefix: "%s" }\n  gateway_id: gw%s\n  fleet_size: 3\n  fleet_key: file:%s' \
    "$T/state$n" "$RSOCK" "$PFX" "$n" "$T/fleet.key")
  policy | gw_conf
  gw_start
  GPID[$n]=$GWPID GAUD[$n]=$AUDIT GADM[$n]=$ADMIN GLOG[$n]=$GWLOG GCONF[$n]=$GWCONF
}
gw_down() { GWPID=${GPID[$1]}; gw_stop; check_eq "gateway $1 stops cleanly" 0 "$GW_RC"; }
# list N: gateway N's listing (--json), kept for the secrets scan
list() { "$SLUICE" approvals list -c "${GCONF[$1]}" --json 2>&1 | tee -a "$T/answers.out"; }
# fleet_entry N PATH: "<id> <gateway> <state>" of the entry with PATH in gateway N's listing
fleet_entry() { list "$1" | jq -r --arg p "$2" '.[] | select(.path == $p) | "\(.id) \(.gateway // "-") \(.state // "-")"' 2>/dev/null | head -n 1; }
# wait_entry N PATH STATE: until gateway N lists PATH in STATE (15 s at most); prints the id
wait_entry() {
  local i e
  for i in $(seq 1 75); do
    e=$(fleet_entry "$1" "$2"); case $e in *" $3") echo "${e%% *}"; return 0;; esac
    sleep 0.2
  done
  return 1
}
state_of() { list "$1" | jq -r --arg id "$2" '.[] | select(.id == $id) | .state // "local"' 2>/dev/null; }
# hold N NAME PATH: a POST through gateway N, in the background (its status and body in $T/NAME.code/.body)
hold() {
  $CLEAN curl -sS --max-time 90 -x "http://127.0.0.1:${GPP[$1]}" --cacert "$CA/ca.pem" -o "$T/$2.body" -w '%{http_code}' \
    -d "amount=$RANDOM" "https://api.example.test:$PYP$3" >"$T/$2.code" 2>/dev/null &
  LASTCLIENT=$!
}
decide() { "$SLUICE" approvals "$2" -c "${GCONF[$1]}" "$3" 2>&1 | tee -a "$T/answers.out"; return "${PIPESTATUS[0]}"; }
arec() { jq -r --arg id "$2" 'select(.type == "approval" and .id == $id) | "\(.decision) \(.by) \(.gateway // "-") \(.rule)"' "${GAUD[$1]}" 2>/dev/null; }
upstream_saw() { jq -r .target "$PYUPLOG" 2>/dev/null | grep -qxF "$1"; }
shared() { grep -q 'holds shared with the fleet as gateway' "${GLOG[$1]}"; }

for n in 1 2 3; do gw_up $n; done
check "the three gateways share their holds" eventually 10 sh -c "grep -q 'holds shared' '${GLOG[1]}' && grep -q 'holds shared' '${GLOG[2]}' && grep -q 'holds shared' '${GLOG[3]}'"

# ---------------------------------------------------------------- approve from another gateway
hold 1 a "/pay?c=approve"; CA1=$LASTCLIENT
ID1=$(wait_entry 3 "/pay?c=approve" pending)
check_match "a hold on gateway 1 is listed on gateway 3: gateway gw1, pending" '^[0-9a-f]{16}$' "$ID1"
check_eq "  gateway 1 lists it as its own (no gateway member)" local "$(state_of 1 "$ID1")"
check_eq "  gateway 2 lists it too" "$ID1 gw1 pending" "$(fleet_entry 2 "/pay?c=approve")"
tab=$("$SLUICE" approvals list -c "${GCONF[3]}" 2>&1); printf '%s\n' "$tab" >>"$T/answers.out"
check_match "  the table on gateway 3 says where it waits" "gateway = gw1 \(pending\)" "$tab"
check "  nothing reached the upstream while held" sh -c "! jq -r .target '$PYUPLOG' 2>/dev/null | grep -qF 'c=approve'"
out=$(decide 3 approve "$ID1"); rc=$?
check_eq "sluice approvals approve on gateway 3: exit 0, sent to the holder" \
  "0 approved $ID1 (held by gateway gw1: the signed decision was sent to it)" "$rc $out"
wait "$CA1"
check_eq "  the request completes on gateway 1: 200 from the upstream" 200 "$(cat "$T/a.code")"
check "  the upstream saw it" upstream_saw "/pay?c=approve"
check "  gateway 1 audits the approval by uid:0(root)@gw3" eventually 5 \
  sh -c "[ \"\$(jq -r --arg id '$ID1' 'select(.type == \"approval\" and .id == \$id) | \"\(.decision) \(.by)\"' '${GAUD[1]}')\" = 'approved uid:0(root)@gw3' ]"
check_eq "  gateway 3 audits that it decided for gw1" "approved uid:0(root) gw1 pay-hold" "$(arec 3 "$ID1")"
check "  the hold leaves every listing" eventually 5 sh -c "[ -z \"\$('$SLUICE' approvals list -c '${GCONF[2]}' --json | jq -r '.[] | select(.id == \"$ID1\") | .id')\" ]"
decide 2 reject "$ID1" >/dev/null; rc=$?
check_eq "  deciding it again from gateway 2: exit 1" 1 "$rc"

# ---------------------------------------------------------------- reject from another gateway
hold 1 r "/pay?c=reject"; CR1=$LASTCLIENT
ID2=$(wait_entry 2 "/pay?c=reject" pending)
check_match "a second hold on gateway 1 is listed on gateway 2" '^[0-9a-f]{16}$' "$ID2"
out=$(decide 2 reject "$ID2"); rc=$?
check_eq "sluice approvals reject on gateway 2: exit 0" 0 "$rc"
wait "$CR1"
check_match "  the client on gateway 1 gets the refusal: 403 naming the hold rule" '^403 pay-hold' \
  "$(cat "$T/r.code") $(jq -r .rule "$T/r.body" 2>&1)"
check "  it never reached the upstream" sh -c "! jq -r .target '$PYUPLOG' | grep -qF 'c=reject'"
check "  gateway 1 audits the rejection by uid:0(root)@gw2" eventually 5 \
  sh -c "[ \"\$(jq -r --arg id '$ID2' 'select(.type == \"approval\" and .id == \$id) | \"\(.decision) \(.by)\"' '${GAUD[1]}')\" = 'rejected uid:0(root)@gw2' ]"
check_eq "  gateway 2 audits that it decided for gw1" "rejected uid:0(root) gw1 pay-hold" "$(arec 2 "$ID2")"

# ---------------------------------------------------------------- two gateways decide at once: one wins
hold 1 b "/pay?c=both"; CB=$LASTCLIENT
IDB=$(wait_entry 2 "/pay?c=both" pending)
eventually 5 sh -c "[ \"\$('$SLUICE' approvals list -c '${GCONF[3]}' --json | jq -r '.[] | select(.id == \"$IDB\") | .state')\" = pending ]"
decide 2 approve "$IDB" >"$T/both2.out" & P2=$!
decide 3 reject "$IDB" >"$T/both3.out" & P3=$!
wait "$P2"; r2=$?; wait "$P3"; r3=$?
check_eq "a hold decided from gateways 2 and 3 at once: exactly one decision is taken" 1 $(( (r2 == 0) + (r3 == 0) ))
check_match "  the other is told another decision came first (409)" 'HTTP 409.*another decision took that hold first' \
  "$(cat "$T/both2.out" "$T/both3.out")"
wait "$CB"
if [ "$r2" = 0 ]; then want="200 approved"; else want="403 rejected"; fi
check_eq "  the client on gateway 1 gets the winner's outcome" "$want" \
  "$(cat "$T/b.code") $(jq -r --arg id "$IDB" 'select(.type == "approval" and .id == $id) | .decision' "${GAUD[1]}")"
check_eq "  one approval record on the holder, one on the winner, none on the loser" "1 $(( r2 == 0 ? 1 : 0 )) $(( r3 == 0 ? 1 : 0 ))" \
  "$(for n in 1 2 3; do jq -c --arg id "$IDB" 'select(.type == "approval" and .id == $id)' "${GAUD[$n]}" | wc -l; done | tr '\n' ' ' | sed 's/ $//')"

# ---------------------------------------------------------------- bytes >= 0x80 cross the fleet as they are
# the form field's value is the bytes "caf" c3 a9 ff: the holder lists each byte >= 0x80 as one \u00XX, and so must
# every other gateway (the sealed record read back to the same bytes, not to their UTF-8 re-encoded)
$CLEAN curl -sS --max-time 90 -x "http://127.0.0.1:${GPP[1]}" --cacert "$CA/ca.pem" -o "$T/u.body" -w '%{http_code}' \
  --data-binary 'amount=7&note=caf%C3%A9%FF' "https://api.example.test:$PYP/note?c=bytes" >"$T/u.code" 2>/dev/null &
CU=$!
IDU=$(wait_entry 3 "/note?c=bytes" pending)
# note_of N: the code points of the note field as gateway N lists the hold
note_of() { list "$1" | jq -r --arg id "$IDU" '.[] | select(.id == $id) | .fields[] | select(.place == "form:note") | .value | explode | map(tostring) | join(",")' 2>/dev/null; }
check_eq "a hold whose field has bytes >= 0x80: gateway 1 lists one code point a byte" "99,97,102,195,169,255" "$(note_of 1)"
check_eq "  gateway 3 lists the very same bytes" "$(note_of 1)" "$(note_of 3)"
decide 3 reject "$IDU" >/dev/null
wait "$CU"
check_eq "  rejected from gateway 3: 403 on gateway 1" 403 "$(cat "$T/u.code")"

# ---------------------------------------------------------------- what Redis alone cannot do
hold 1 f "/pay?c=forged"; CF1=$LASTCLIENT
ID3=$(wait_entry 3 "/pay?c=forged" pending)
check_match "a third hold on gateway 1, listed on gateway 3" '^[0-9a-f]{16}$' "$ID3"
FORGED="$(printf '%064d' 0).{\"v\":1,\"t\":\"decision\",\"id\":\"$ID3\",\"gw\":\"gw1\",\"decision\":\"approve\",\"by\":\"uid:0(root)\",\"from\":\"gw3\",\"time_ms\":1}"
rcli set "${PFX}ap:d:$ID3" "$FORGED" >/dev/null
rcli publish "${PFX}ap:decisions" "$FORGED" >/dev/null
# a genuine decision (the first hold's approval, sealed with the key) under this hold's key, and published again
GENUINE=$(rcli get "${PFX}ap:d:$ID1")
check_match "  the first hold's decision is in Redis, sealed" '^[0-9a-f]{64}\.\{"v":1,"t":"decision"' "$GENUINE"
rcli set "${PFX}ap:d:$ID3" "$GENUINE" >/dev/null
rcli publish "${PFX}ap:decisions" "$GENUINE" >/dev/null
sleep 1.5
check "a decision written into Redis by hand (no fleet key), and a genuine one replayed: the client still waits" kill -0 "$CF1"
check_eq "  the hold is still pending on gateway 1" local "$(state_of 1 "$ID3")"
check "  nothing reached the upstream" sh -c "! jq -r .target '$PYUPLOG' | grep -qF 'c=forged'"
check_match "  gateway 1 logged the forgery" 'a decision read from the store does not verify with the fleet key' "$(cat "${GLOG[1]}")"
check_eq "  the first hold still has its one approval record on gateway 1" 1 \
  "$(jq -c --arg id "$ID1" 'select(.type == "approval" and .id == $id)' "${GAUD[1]}" | wc -l)"
# a hold record written by hand
FID=fedcba9876543210
rcli set "${PFX}ap:h:$FID" "$(printf '%064d' 0).{\"v\":1,\"t\":\"hold\",\"id\":\"$FID\",\"gw\":\"gw1\",\"method\":\"POST\",\"host\":\"evil\",\"path\":\"/x\",\"body_sha256\":\"$(printf '%064d' 0)\",\"created_ms\":1,\"expiry_ms\":99999999999999,\"fields\":[]}" PX 60000 >/dev/null
rcli zadd "${PFX}ap:idx" 99999999999999 "$FID" >/dev/null
rcli zadd "${PFX}ap:idx" 99999999999999 "not-an-id" >/dev/null
check "a hold record written by hand is listed as unverified on gateway 2" eventually 5 \
  sh -c "[ \"\$('$SLUICE' approvals list -c '${GCONF[2]}' --json | jq -c '.[] | select(.id == \"$FID\")')\" = '{\"id\":\"$FID\",\"state\":\"unverified\"}' ]"
decide 2 approve "$FID" >"$T/forged-hold.out"; rc=$?
check_eq "  approving it: exit 1" 1 "$rc"
check_match "  the gateway says it cannot be decided (409)" 'HTTP 409.*does not verify' "$(cat "$T/forged-hold.out")"
check_eq "  an index member that is not an id is never listed" "" \
  "$(list 2 | jq -r '.[] | select(.id == "not-an-id") | .id')"
rcli del "${PFX}ap:h:$FID" >/dev/null
out=$(decide 1 reject "$ID3"); rc=$?
check_eq "the third hold rejected locally on gateway 1 (exit 0)" "0 rejected $ID3" "$rc $out"
wait "$CF1"
check_eq "  its client gets 403" 403 "$(cat "$T/f.code")"

# ---------------------------------------------------------------- a gateway dies
hold 2 g "/gone?c=gone"; CG=$LASTCLIENT
ID4=$(wait_entry 3 "/gone?c=gone" pending)
check_match "a hold on gateway 2, listed on gateway 3" '^[0-9a-f]{16}$' "$ID4"
kill -KILL "${GPID[2]}"; wait "${GPID[2]}" 2>/dev/null
wait "$CG" 2>/dev/null
check "gateway 2 killed: gateway 3 shows its hold as gateway_gone" eventually 10 \
  sh -c "[ \"\$('$SLUICE' approvals list -c '${GCONF[3]}' --json | jq -r '.[] | select(.id == \"$ID4\") | .state')\" = gateway_gone ]"
decide 3 approve "$ID4" >"$T/gone.out"; rc=$?
check_eq "  approving it: exit 1" 1 "$rc"
check_match "  409: its gateway is gone" 'HTTP 409' "$(cat "$T/gone.out")"
check "  once its timeout (8 s) passed: shown as expired" eventually 15 \
  sh -c "[ \"\$('$SLUICE' approvals list -c '${GCONF[3]}' --json | jq -r '.[] | select(.id == \"$ID4\") | .state')\" = expired ]"

# ---------------------------------------------------------------- an admin client that goes while its decision waits
hold 1 s "/pay?c=stall"; CS=$LASTCLIENT
IDS=$(wait_entry 3 "/pay?c=stall" pending)
kill -STOP "$RPID"
timeout 10 curl -s --max-time 0.5 --unix-socket "${GADM[3]}" -o /dev/null -X POST "http://x/approvals/$IDS/approve"
sleep 2.5   # past state.redis.timeout (2 s): the decision's SET is not confirmed; its admin client is gone
kill -CONT "$RPID"
check_eq "an admin client gone while its decision waited for a stopped Redis: gateway 3 still answers" 200 \
  "$(timeout 10 curl -s --max-time 5 --unix-socket "${GADM[3]}" -o /dev/null -w '%{http_code}' http://x/approvals)"
check_match "  and logged that the store did not confirm it" 'a decision was not confirmed by the store' "$(cat "${GLOG[3]}")"
# the SET may have reached Redis before it stopped (then gateway 1 applies it); else the hold is decided here
for i in $(seq 1 30); do kill -0 "$CS" 2>/dev/null || break; sleep 0.1; done
kill -0 "$CS" 2>/dev/null && decide 1 reject "$IDS" >/dev/null
wait "$CS"
check_match "  the held request ends either way (200 or 403)" '^(200|403)$' "$(cat "$T/s.code")"

# ---------------------------------------------------------------- Redis down, then back
hold 1 d "/pay?c=down"; CD=$LASTCLIENT
ID5=$(wait_entry 3 "/pay?c=down" pending)
check_match "a hold on gateway 1 listed on gateway 3 before Redis goes" '^[0-9a-f]{16}$' "$ID5"
kill "$RPID"; wait "$RPID" 2>/dev/null
sleep 0.6
code=$(timeout 10 curl -sS --max-time 5 --unix-socket "${GADM[3]}" -o "$T/down.body" -w '%{http_code}' -X POST \
  "http://x/approvals/$ID5/approve"); cat "$T/down.body" >>"$T/answers.out"
check_eq "Redis killed: approving another gateway's hold answers 503" 503 "$code"
check_match "  naming the store" 'fleet store \(state.redis\) cannot be reached' "$(jq -r .error "$T/down.body")"
check "  the client on gateway 1 still waits" kill -0 "$CD"
hold 1 l "/pay?c=local"; CL=$LASTCLIENT
IDL=""; for i in $(seq 1 50); do IDL=$(list 1 | jq -r '.[] | select(.path == "/pay?c=local") | .id' | head -n 1); [ -n "$IDL" ] && break; sleep 0.2; done
check_match "  a new hold on gateway 1 while Redis is down is listed there" '^[0-9a-f]{16}$' "$IDL"
out=$(decide 1 approve "$IDL"); rc=$?
check_eq "  and approved locally: exit 0" "0 approved $IDL" "$rc $out"
wait "$CL"
check_eq "  its request completes (200)" 200 "$(cat "$T/l.code")"
redis_start
ID5B=$(wait_entry 3 "/pay?c=down" pending)
check_eq "Redis restarted (empty): gateway 1 publishes its pending hold again, gateway 3 lists it" "$ID5" "$ID5B"
out=$(decide 3 approve "$ID5"); rc=$?
check_eq "  approved from gateway 3: exit 0" 0 "$rc"
wait "$CD"
check_eq "  the request completes on gateway 1 (200)" 200 "$(cat "$T/d.code")"

# ---------------------------------------------------------------- secrets, audit
check "the fleet key and the Redis password are in no log, audit record or answer" \
  bash -c "! grep -rqF -e '$FKEY' -e '$RPASS' '$T'/gw*.log '$T'/audit*.jsonl '$T'/answers.out '$T'/*.body '$T'/*.out"
check_nomatch "no sanitizer report in the gateways' logs" 'Sanitizer|runtime error' "$(cat "$T"/gw*.log)"
gw_down 1
gw_down 3
# the approval records of both sides are valid under docs/audit-schema.json (python3-jsonschema, from scripts/deps.sh test)
SCHEMA=$(dirname "$(readlink -f "$0")")/../../docs/audit-schema.json
"$PY" -c 'import jsonschema' 2>/dev/null || die "python3-jsonschema is missing (scripts/deps.sh test installs it)"
if true; then
  out=$(cat "${GAUD[1]}" "${GAUD[2]}" "${GAUD[3]}" | "$PY" -c '
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
recs = [json.loads(l) for l in sys.stdin if l.strip()]
ap = [r for r in recs if r.get("type") == "approval"]
print(len([r for r in ap if "gateway" in r]) > 0, [r["id"] for r in ap if list(v.iter_errors(r))])' "$SCHEMA")
  check_eq "docs/audit-schema.json accepts every approval record of the three gateways (some with gateway)" "True []" "$out"
fi
for n in 1 2 3; do
  check "gateway $n's audit file verifies (sluice audit verify)" "$SLUICE" audit verify "${GAUD[$n]}"
done
finish
