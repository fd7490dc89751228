#!/usr/bin/env bash
# The fleet's shared counters (issue 22 items 1 and 4): a redis-server of the test's own (a unix socket in $T,
# a password), three gateways with one policy (state.backend: redis, fleet_size: 3): a global rate limit of 6 and a
# global budget of 9 units, with requests spread concurrently over the three gateways (bounded in count and time):
# the total allowed equals the cap exactly; budgets taken by requests that never left (an unreachable upstream)
# are given back; Redis killed: 503 naming the store (on_error: deny), then, restarted with on_error: local, each
# gateway allows its share (2 of 6) alone, and the record says so; Redis started again: one shared count again.
# /metrics shows the store; the Redis password is in no log, audit record, metrics or answer; every audit file
# verifies. Nothing leaves loopback.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
need_tool redis-server redis-cli

pki_init
PYP=$(freeport)
pyup_start "$PYP"       # the payments' upstream (it logs each request)
NGINX_H2=1 nginx_start  # the rate limit's (h2 too: HTTP/2 clients stay h2 end to end)
RPASS="fleet-pw-$ID-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
redis_start
export SLUICE_REDIS_PASSWORD=$RPASS

DOWN=127.$((RANDOM % 200 + 20)).$((RANDOM % 250)).9   # nothing listens there: the dial fails (502)
GW_RESOLVE="down.example.test: $DOWN"
policy() {
  cat <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
    ports: [443, $PYP]
    rules:
      - id: fleet-rate
        allow: { method: GET, path: "/rate/**", limit: { rate: 6/hour, per: global, name: "rate-$ID" } }
      - id: fleet-pay
        allow:
          method: POST
          path: /pay
          form: { amount: { min: 1, max: 100 } }
          budget: { sum: "form:amount", max: 9, per: day, scope: global, name: "pay-$ID" }
      - id: fleet-per-sandbox
        allow: { method: GET, path: "/sbx/**", limit: { rate: 1/hour, per: sandbox, name: "sbx-$ID" } }
  down.example.test:
    allow_private: true
    rules:
      - id: fleet-pay-down
        allow:
          method: POST
          path: /pay
          form: { amount: { min: 1, max: 100 } }
          budget: { sum: "form:amount", max: 9, per: day, scope: global, name: "pay-$ID" }
sandboxes:
  team.a:
    addresses: [127.0.0.3/32]
  team:
    addresses: [127.0.0.4/32]
YAML
}
# gw_up N ON_ERROR: gateway N (its own ports, admin socket, audit file and state dir) with the shared policy
declare -A GPP GPID GAUD GADM GLOG
gw_up() {
  local n=$1
  [ -n "${GPP[$n]:-}" ] || GPP[$n]=$(freeport)
  PP=${GPP[$n]} TP=$(freeport) ADMIN=$T/admin$n.sock AUDIT=$T/audit$n.jsonl GWCONF=$T/gw$n.yaml GWLOG=$T/gw$n.log
  GW_EXTRA=$(printf 'state:\n  backend: redis\n  dir: %s\n  redis: { url: "unix:%s", password: env:SLUICE_REDIS_PASSWORD, timeout: 2s, key_prefix: "fleet-%s:" }\n  gateway_id: gw%s\n  fleet_size: 3\n  on_error: %s' \
    "$T/state$n" "$RSOCK" "$ID" "$n" "$2")
  policy | gw_conf
  gw_start
  GPID[$n]=$GWPID GAUD[$n]=$AUDIT GADM[$n]=$ADMIN GLOG[$n]=$GWLOG
}
gw_down() { GWPID=${GPID[$1]}; gw_stop; check_eq "gateway $1 stops cleanly" 0 "$GW_RC"; }
metric() { timeout 10 curl -sS --max-time 5 --unix-socket "${GADM[$1]}" http://sluice/metrics 2>/dev/null; }
store_up() { [ "$(metric "$1" | sed -n 's/^sluice_store_up \([0-9]*\)$/\1/p')" = 2 ]; }
# req N OUTFILE CURL-ARGS...: one request through gateway N; its status then its body on one line into OUTFILE
req() {
  local n=$1 out=$2; shift 2
  $CLEAN curl -sS --max-time 10 -x "http://127.0.0.1:${GPP[$n]}" --cacert "$CA/ca.pem" -o "$out.body" -w '%{http_code}' "$@" \
    >"$out" 2>/dev/null
}
# burst NAME COUNT CURL-ARGS...: COUNT requests, spread round-robin over the three gateways, all at once
burst() {
  local name=$1 count=$2 i pids=(); shift 2
  rm -rf "$T/$name"; mkdir -p "$T/$name"
  for i in $(seq 1 "$count"); do req $(((i % 3) + 1)) "$T/$name/$i" "$@" & pids+=($!); done
  wait "${pids[@]}"
}
count_status() { local f n=0; for f in "$T/$1"/*; do case $f in *.body) ;; *) [ "$(cat "$f")" = "$2" ] && n=$((n + 1));; esac; done; echo $n; }
all_up() { store_up 1 && store_up 2 && store_up 3; }

for n in 1 2 3; do gw_up $n deny; done
check "the three gateways' stores are connected (/metrics sluice_store_up 2 of 2 workers each)" eventually 15 all_up

# the rate limit: 6/hour global across the fleet; 24 concurrent requests
burst rate 24 https://api.example.test/rate/x
check_eq "rate limit 6/hour over 3 gateways, 24 concurrent requests: exactly 6 allowed" 6 "$(count_status rate 200)"
check_eq "  and the other 18 refused with 429" 18 "$(count_status rate 429)"
check_match "  the 429 names the shared limit" 'rate limit limit:rate-'"$ID"' \(6/hour, global, shared\) is exhausted' \
  "$(cat "$T"/rate/*.body)"

# refunds: 6 payments of 1 to an unreachable upstream take and give back (502); the budget of 9 is whole after
burst down 6 -d amount=1 https://down.example.test/pay
check_eq "6 payments whose upstream cannot be reached: 502 each" 6 "$(count_status down 502)"
burst pay 20 -d amount=1 "https://api.example.test:$PYP/pay"
check_eq "then budget 9 over 3 gateways, 20 concurrent payments of 1: exactly 9 allowed (the 502s were refunded)" 9 \
  "$(count_status pay 200)"
check_eq "  and 11 refused with 429" 11 "$(count_status pay 429)"
check_eq "the upstream saw exactly 9 payments" 9 "$(jq -r .target "$PYUPLOG" | grep -c '^/pay$')"
check_eq "  and Redis holds 9 (in millionths) in the budget's window" 9000000 \
  "$(REDISCLI_AUTH=$RPASS redis-cli -s "$RSOCK" --scan --pattern "fleet-$ID:b:*" | head -n 1 | xargs -r env REDISCLI_AUTH="$RPASS" redis-cli -s "$RSOCK" get)"

# sandbox keys: a sandbox of the configuration is one counter for the fleet ("team.a" and "team" are two); one
# registered with a gateway (what `sluice run` does) is that gateway's: the same name on two gateways is two
# counters, "<gateway_id>/<name>" escaped. (Sandbox names cannot hold the key separator ':'; a client outside
# every sandbox is counted by its address, whose IPv6 form can: the escaping is tested in unit/test_store_reply.)
sreq() { $CLEAN curl -sS --max-time 10 --interface "$1" -x "http://127.0.0.1:${GPP[$2]}" --cacert "$CA/ca.pem" \
  -o /dev/null -w '%{http_code}' "https://api.example.test/sbx/$3" 2>/dev/null; }
check_eq "per-sandbox 1/hour: sandbox team.a through gateway 1, then 2: the second is refused (fleet-wide)" "200 429" \
  "$(sreq 127.0.0.3 1 a) $(sreq 127.0.0.3 2 b)"
check_eq "  sandbox team has a counter of its own" "200 429" \
  "$(sreq 127.0.0.4 3 a) $(sreq 127.0.0.4 1 b)"
for n in 1 2; do
  timeout 10 curl -sS --max-time 5 --unix-socket "${GADM[$n]}" -X POST \
    -d '{"name":"agent-x","backend":"netns","addresses":["127.0.0.5/32"]}' http://sluice/sandboxes >/dev/null 2>&1
done
check_eq "a sandbox registered as agent-x on gateways 1 and 2: one token on each (counted per gateway)" "200 200 429" \
  "$(sreq 127.0.0.5 1 a) $(sreq 127.0.0.5 2 b) $(sreq 127.0.0.5 1 c)"
keys=$(REDISCLI_AUTH=$RPASS redis-cli -s "$RSOCK" --scan --pattern "fleet-$ID:r:*sbx-*" | sort | tr '\n' ' ')
check_match "  the keys: team.a, team, gw1%2Fagent-x, gw2%2Fagent-x" \
  "^fleet-$ID:r:limit%3Asbx-$ID:gw1%2Fagent-x fleet-$ID:r:limit%3Asbx-$ID:gw2%2Fagent-x fleet-$ID:r:limit%3Asbx-$ID:team fleet-$ID:r:limit%3Asbx-$ID:team\\.a $" "$keys"

# requests freed while they wait: Redis stopped (SIGSTOP), HTTP/2 clients that give up first (their streams and
# connection go away: the operations are cancelled); then Redis goes on and the gateways are still well
kill -STOP "$RPID"
gone=()
for n in 1 2 3; do
  $CLEAN curl -sS --http2 --max-time 0.5 -x "http://127.0.0.1:${GPP[$n]}" --cacert "$CA/ca.pem" -o /dev/null \
    --parallel https://api.example.test/rate/gone1 https://api.example.test/rate/gone2 >/dev/null 2>&1 & gone+=($!)
done
wait "${gone[@]}"
kill -CONT "$RPID"
check "clients gone while their requests waited for a stopped Redis: every gateway is alive" \
  bash -c "kill -0 ${GPID[1]} && kill -0 ${GPID[2]} && kill -0 ${GPID[3]}"

# Redis down, on_error: deny
kill "$RPID"; wait "$RPID" 2>/dev/null
burst deny 6 https://api.example.test/rate/y
check_eq "Redis killed, on_error: deny: 6 requests, 6 refused with 503" 6 "$(count_status deny 503)"
check_match "  the JSON reason names the store" 'shared counters \(state.backend: redis\) are unavailable' \
  "$(cat "$T"/deny/*.body)"
check "  audited as limits unavailable (gateway 1)" env AUDIT="${GAUD[1]}" bash -c \
  "jq -e -s 'map(select(.status == 503 and (.reason // \"\" | contains(\"shared counters\")))) | length > 0' \"\$AUDIT\" >/dev/null"
check_match "/metrics counts the store's errors by kind" 'sluice_store_errors_total\{kind="(down|timeout)"\} [1-9]' "$(metric 1)"
check_match "/metrics has the store's latency histogram" 'sluice_store_latency_seconds_count [1-9]' "$(metric 2)"
check_match "  and its state (0 up)" 'sluice_store_up 0' "$(metric 3)"

# on_error: local (a restart: state: needs one)
for n in 1 2 3; do gw_down $n; done
for n in 1 2 3; do gw_up $n local; done
burst local 24 https://api.example.test/rate/z
check_eq "Redis down, on_error: local, fleet_size 3: each gateway allows its share (2 of 6): 6 allowed in all" 6 \
  "$(count_status local 200)"
for n in 1 2 3; do
  got=0
  for i in $(seq 1 24); do
    [ $(((i % 3) + 1)) = "$n" ] && [ "$(cat "$T/local/$i")" = 200 ] && got=$((got + 1))
  done
  check_eq "  gateway $n allowed its 2" 2 "$got"
done
check "  and its record says the limit was counted locally" env AUDIT="${GAUD[2]}" bash -c \
  "jq -e -s 'map(select(.limits_counted == \"local\")) | length > 0' \"\$AUDIT\" >/dev/null"

# Redis back: shared counting again (a fresh Redis: the bucket is full)
redis_start
check "Redis restarted: the stores reconnect" eventually 20 all_up
h2=$($CLEAN curl -sS --http2 --max-time 20 -x "http://127.0.0.1:${GPP[1]}" --cacert "$CA/ca.pem" --parallel \
  -w '%{http_version}:%{http_code}\n' -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
  https://api.example.test/rate/h1 https://api.example.test/rate/h2 https://api.example.test/rate/h3 \
  https://api.example.test/rate/h4 2>/dev/null | sort | uniq -c | tr -s ' ' | sed 's/^ //')
check_eq "HTTP/2: 4 streams on one connection (gateway 1) take 4 of the 6 shared tokens" "4 2:200" "$h2"
burst back 24 https://api.example.test/rate/w
check_eq "shared again: then exactly 2 of 24 HTTP/1.1 requests over the fleet (6 in all)" 2 "$(count_status back 200)"

# a Redis that may evict keys: budgets refused with the reason (on_error: deny), rate limits still shared
REDISCLI_AUTH=$RPASS redis-cli -s "$RSOCK" config set maxmemory-policy allkeys-lru >/dev/null
for n in 1 2 3; do gw_down $n; done
for n in 1 2 3; do gw_up $n deny; done
check "the stores reconnect to the evicting Redis" eventually 20 all_up
req 2 "$T/evict" -d amount=1 "https://api.example.test:$PYP/pay"
check_eq "maxmemory-policy allkeys-lru: a payment under a budget is refused with 503" 503 "$(cat "$T/evict")"
check_match "  the reason says the store may evict keys" 'may evict keys \(maxmemory-policy is not noeviction\)' \
  "$(cat "$T/evict.body")"
req 3 "$T/evict-rate" https://api.example.test/rate/e
check_eq "  while a rate limit is still counted there (its bucket spent: 429, not 503)" 429 "$(cat "$T/evict-rate")"

# the password: nowhere
for n in 1 2 3; do metric $n >>"$T/all-metrics.txt"; done
check "the Redis password is in no gateway log, audit record, /metrics or answer" \
  bash -c "! grep -rqF -- '$RPASS' '$T'/gw*.log '$T'/audit*.jsonl '$T'/all-metrics.txt '$T'/rate '$T'/pay '$T'/deny '$T'/local '$T'/back '$T'/down '$T'/evict.body"
for n in 1 2 3; do gw_down $n; done
for n in 1 2 3; do
  check "gateway $n's audit file verifies (sluice audit verify)" "$SLUICE" audit verify "${GAUD[$n]}"
done
finish
