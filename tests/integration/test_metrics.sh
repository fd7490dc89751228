#!/usr/bin/env bash
# Metrics and health on the admin socket (issue 7 item 6): GET /metrics (Prometheus text 0.0.4) and GET /healthz,
# scraped with curl --unix-socket from a real gateway. Known traffic: allowed and denied requests (a rule with an
# id, the default), a wildcard host, plain HTTP to hosts outside the policy, an HTTP/2 client, a client that does
# not trust the CA, an upstream whose certificate names another host. Asserted: exact counter values, host labels
# bounded to the policy's entries (a host outside it counts under "other" and its name never appears), the leaf
# cache counters moving, connections and h2 streams back to 0 once clients close, the format (every family with
# HELP and TYPE), the audit writer's health, reloads (generation, last reload result) and /healthz JSON.
# The request counters come from the audit writer handing every record to metrics_audit().
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

pki_init
nginx_start
OUT1=outside-$ID.test OUT2=elsewhere-$ID.test
GW_RESOLVE="mismatch.test: $UPADDR"
write_policy() {
  policy_base 'allow: { method: GET, path: "/ok/**" }' 'deny: { method: POST, id: no-post }' <<YAML | gw_conf
  "*.example.test":
    allow_private: true
  mismatch.test:
    allow_private: true
$1
YAML
}
write_policy ""
gw_start

scrape() { timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" http://sluice/metrics; }
# metric LINE-PREFIX: the value of the series whose name and labels are exactly that ("" if absent)
metric() { scrape | awk -v k="$1" '$1 == k { print $2 }'; }
healthz() { timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" -o "$T/healthz.json" -w '%{http_code}' http://sluice/healthz; }

check_eq "the admin socket is mode 0600" 600 "$(stat -c %a "$ADMIN")"
code=$(timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" -D "$T/m.head" -o "$T/m0.txt" -w '%{http_code}' http://sluice/metrics)
check_eq "GET /metrics: 200" 200 "$code"
check_match "  Content-Type is text/plain; version=0.0.4; charset=utf-8" \
  '^Content-Type: text/plain; version=0\.0\.4; charset=utf-8'$'\r''?$' "$(grep -i '^content-type' "$T/m.head")"
check_eq "POST /metrics: 405" 405 \
  "$(timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" -o /dev/null -w '%{http_code}' -X POST -d x http://sluice/metrics)"
check_eq "GET /healthz: 200" 200 "$(healthz)"
check_eq "  {status ok, audit ok, generation 1, no reload yet}" "ok ok 1 null true" \
  "$(jq -r '"\(.status) \(.audit) \(.policy_generation) \(.last_reload) \(.uptime_s >= 0)"' "$T/healthz.json")"
check_eq "the existing GET /health still answers" ok "$(gw_health | jq -r .status)"
check_eq "build_info names the version" 1 "$(metric "sluice_build_info{version=\"$("$SLUICE" version | awk '{print $2}')\"}")"
check_eq "no leaf minted yet: leaf_cache_entries 0" 0 "$(metric sluice_leaf_cache_entries)"

# ---- known traffic (HTTP/1.1; each curl its own connection)
N=4 M=2
for i in $(seq 1 $N); do
  check_eq "allowed GET /ok/$i: 200" 200 "$(pcurl --http1.1 -o /dev/null -w '%{http_code}' "https://api.example.test/ok/$i")"
done
for i in $(seq 1 $M); do
  check_eq "denied GET /nope/$i (no rule matches: default): 403" 403 \
    "$(pcurl --http1.1 -o /dev/null -w '%{http_code}' "https://api.example.test/nope/$i")"
done
check_eq "denied POST /ok/x (rule no-post): 403" 403 \
  "$(pcurl --http1.1 -o /dev/null -w '%{http_code}' -d x "https://api.example.test/ok/x")"
check_eq "wildcard host www.example.test GET /: 200" 200 \
  "$(pcurl --http1.1 -o /dev/null -w '%{http_code}' "https://www.example.test/")"
check_eq "plain HTTP to $OUT1 (outside the policy): 403" 403 \
  "$(pcurl -o /dev/null -w '%{http_code}' "http://$OUT1/x")"
check_eq "plain HTTP to $OUT2 (outside the policy): 403" 403 \
  "$(pcurl -o /dev/null -w '%{http_code}' "http://$OUT2/x")"
check "the audit log has the outside host's request (the writer ran)" audit_wait ".host == \"$OUT2\""

m=$(scrape)
printf '%s\n' "$m" >"$T/m1.txt"
check_eq "requests_total: exactly these series" \
"sluice_requests_total{verdict=\"allow\",host=\"*.example.test\"} 1
sluice_requests_total{verdict=\"allow\",host=\"api.example.test\"} $N
sluice_requests_total{verdict=\"deny\",host=\"api.example.test\"} $((M + 1))
sluice_requests_total{verdict=\"deny\",host=\"other\"} 2" \
  "$(printf '%s\n' "$m" | grep '^sluice_requests_total{')"
check_eq "responses_total: 2xx for the allowed ones, by host" \
"sluice_responses_total{host=\"*.example.test\",class=\"2xx\"} 1
sluice_responses_total{host=\"api.example.test\",class=\"2xx\"} $N" \
  "$(printf '%s\n' "$m" | grep '^sluice_responses_total{')"
check_eq "denials_total by rule: default (2 + 2 outside), no-post 1" \
"sluice_denials_total{rule=\"default\"} $((M + 2))
sluice_denials_total{rule=\"no-post\"} 1" \
  "$(printf '%s\n' "$m" | grep '^sluice_denials_total{')"
check_nomatch "the outside hosts' names never appear in /metrics" "outside-|elsewhere-" "$m"
check_eq "no TLS handshake failed yet (client)" 0 "$(metric 'sluice_tls_handshake_failures_total{side="client"}')"
check_eq "DNS answers: none (no responder)" 0 "$(metric 'sluice_dns_queries_total{answer="synthetic"}')"
check_eq "leaf cache: two names minted (api, www): entries 2" 2 "$(metric sluice_leaf_cache_entries)"
check_eq "  misses 2" 2 "$(metric sluice_leaf_cache_misses_total)"
h0=$(metric sluice_leaf_cache_hits_total)
check_eq "  hits: every later handshake for api.example.test ($N + $M + 1 - 1)" $((N + M)) "$h0"
for i in 1 2 3; do pcurl --http1.1 -o /dev/null "https://api.example.test/ok/again$i"; done
check_eq "  three more connections: hits +3" $((h0 + 3)) "$(metric sluice_leaf_cache_hits_total)"
check_eq "  and no more misses" 2 "$(metric sluice_leaf_cache_misses_total)"
check_eq "the audit log is healthy: sluice_audit_healthy 1" 1 "$(metric sluice_audit_healthy)"
check_eq "  sluice_audit_write_errors_total 0" 0 "$(metric sluice_audit_write_errors_total)"
check "  sluice_audit_queue_depth drains to 0" eventually 5 sh -c \
  "timeout 10 curl -s --unix-socket '$ADMIN' http://sluice/metrics | grep -qx 'sluice_audit_queue_depth 0'"

# ---- format: every sample line is name{labels} integer, every family has HELP then TYPE
check "every sample is name[{k=\"v\",...}] value" sh -c "grep -v '^#' '$T/m1.txt' | grep -Ev '^sluice_[a-z0-9_]+(\{[a-z_]+=\"([^\"\\\\]|\\\\.)*\"(,[a-z_]+=\"([^\"\\\\]|\\\\.)*\")*\})? -?[0-9]+$' | grep -q . && exit 1 || exit 0"
check_eq "every sampled family has # HELP and # TYPE" "" \
  "$(for f in $(grep -v '^#' "$T/m1.txt" | sed 's/[{ ].*//' | sort -u); do
       grep -q "^# HELP $f " "$T/m1.txt" && grep -q "^# TYPE $f " "$T/m1.txt" || echo "$f"; done)"
check_eq "the families named in the docs are all there" "" \
  "$(for f in sluice_requests_total sluice_responses_total sluice_denials_total sluice_exfiltration_attempts_total \
       sluice_scrubs_total sluice_dns_queries_total sluice_tls_handshake_failures_total sluice_connections_open \
       sluice_h2_streams_open sluice_leaf_cache_entries sluice_leaf_cache_hits_total sluice_leaf_cache_misses_total \
       sluice_policy_generation sluice_policy_last_reload_success sluice_sandboxes_registered sluice_build_info \
       sluice_audit_queue_depth sluice_audit_write_errors_total sluice_audit_healthy; do
       grep -q "^# TYPE $f " "$T/m1.txt" || echo "$f"; done)"

# ---- TLS failures on both sides
out=$($CLEAN curl -sS --max-time 10 -x "http://127.0.0.1:$PP" -o /dev/null "https://api.example.test/ok/untrusted" 2>&1)
check_match "a client that does not trust the sluice CA fails its handshake" 'certificate|SSL' "$out"
check "  tls_handshake_failures_total{side=\"client\"} 1" \
  eventually 5 sh -c "[ \"\$(timeout 10 curl -s --unix-socket '$ADMIN' http://sluice/metrics | awk '\$1 == \"sluice_tls_handshake_failures_total{side=\\\"client\\\"}\" {print \$2}')\" = 1 ]"
check_eq "  and denials_total{rule=\"tls\"} 1" 1 "$(metric 'sluice_denials_total{rule="tls"}')"
check_eq "an upstream whose certificate names another host: 502" 502 \
  "$(pcurl --http1.1 -o /dev/null -w '%{http_code}' "https://mismatch.test/")"
check_eq "  tls_handshake_failures_total{side=\"upstream\"} 1" 1 \
  "$(metric 'sluice_tls_handshake_failures_total{side="upstream"}')"

# ---- HTTP/2 streams
check_eq "an HTTP/2 client, 3 requests on one connection: all 200" "200 200 200" \
  "$(pcurl --http2 -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' \
      https://api.example.test/ok/h2a https://api.example.test/ok/h2b https://api.example.test/ok/h2c | sed 's/ $//')"
check_eq "  counted as requests (allow, api.example.test: $((N + 3 + 3)))" $((N + 6)) \
  "$(metric 'sluice_requests_total{verdict="allow",host="api.example.test"}')"
check "connections_open returns to 0 after the clients closed" \
  eventually 15 sh -c "[ \"\$(timeout 10 curl -s --unix-socket '$ADMIN' http://sluice/metrics | awk '\$1 == \"sluice_connections_open\" {print \$2}')\" = 0 ]"
check_eq "h2_streams_open is 0 again" 0 "$(metric sluice_h2_streams_open)"
check_eq "sandboxes_registered 0" 0 "$(metric sluice_sandboxes_registered)"
check_eq "register one over the admin socket: 201" 201 \
  "$(timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" -o /dev/null -w '%{http_code}' \
      -X POST -d '{"name":"sb-m","addresses":["127.0.0.9/32"]}' http://sluice/sandboxes)"
check_eq "  sandboxes_registered 1" 1 "$(metric sluice_sandboxes_registered)"

# ---- reloads
write_policy '  "*.pypi.test": {}'
gw_hup
check "a good reload: policy_generation 2" eventually 5 sh -c \
  "timeout 10 curl -s --unix-socket '$ADMIN' http://sluice/metrics | grep -qx 'sluice_policy_generation 2'"
check_eq "  last_reload_success 1" 1 "$(metric sluice_policy_last_reload_success)"
healthz >/dev/null
check_eq "  /healthz: generation 2, last_reload ok" "2 ok 2" \
  "$(jq -r '"\(.policy_generation) \(.last_reload.result) \(.last_reload.generation)"' "$T/healthz.json")"
cp "$GWCONF" "$T/good.yaml"
printf 'hosts: [\n' >>"$GWCONF"
gw_hup
check "a broken reload: last_reload_success 0" eventually 5 sh -c \
  "timeout 10 curl -s --unix-socket '$ADMIN' http://sluice/metrics | grep -qx 'sluice_policy_last_reload_success 0'"
check_eq "  the generation stays 2" 2 "$(metric sluice_policy_generation)"
check_eq "  /healthz still 200 (the previous policy serves)" 200 "$(healthz)"
check_eq "  and says the reload failed, with its reason" "ok error true" \
  "$(jq -r '"\(.status) \(.last_reload.result) \(.last_reload.error | length > 0)"' "$T/healthz.json")"
cp "$T/good.yaml" "$GWCONF"
gw_hup
check "a good reload again: generation 3, success 1" eventually 5 sh -c \
  "timeout 10 curl -s --unix-socket '$ADMIN' http://sluice/metrics | grep -qx 'sluice_policy_generation 3'"
check_eq "  last_reload_success 1" 1 "$(metric sluice_policy_last_reload_success)"
check_eq "counters survive reloads (allow, api.example.test)" $((N + 6)) \
  "$(metric 'sluice_requests_total{verdict="allow",host="api.example.test"}')"

gw_final_checks
finish
