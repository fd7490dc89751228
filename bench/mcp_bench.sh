#!/usr/bin/env bash
# bench/mcp_bench.sh - MCP through the gateway (issue 23, "Measure"; docs/performance.md):
#   sse   an SSE stream of 10,000 small events through a host with an mcp endpoint (filtered) against the
#         same stream from a host without one (relayed as a body); goal >= 0.80x events/s. Two streams: "all",
#         every event a tools/list result of two tools one of which no rule allows (each parsed, filtered,
#         re-emitted: the worst case), and "mix", progress notifications and tool results with a tools/list
#         result every 100 events (what a tool's run streams)
#   call  keep-alive tools/call POSTs with 1 KiB arguments through an mcp rule (the body is held and judged)
#         against the same POSTs through a path-only rule; goal >= 0.85x requests/s
# The upstream is nginx (tests/integration/lib.sh: loopback, TLS), the client curl through the explicit proxy
# (one keep-alive connection for the POSTs). Each side runs BENCH_RUNS times (default 5), alternated; the best
# of each counts and every run is printed. Not a test: no assertion on time (the machine is shared).
#
# Usage: bench/mcp_bench.sh PATH_TO_SLUICE   (as root: the harness's nginx and gateway)
# Environment: BENCH_RUNS (5), BENCH_EVENTS (10000), BENCH_CALLS (2000)
. "$(dirname "$(readlink -f "$0")")/../tests/integration/lib.sh" "$@"
RUNS=${BENCH_RUNS:-5} EVENTS=${BENCH_EVENTS:-10000} CALLS=${BENCH_CALLS:-2000}

mkdir -p "$T/nginx/www"
"$PY" - "$T/nginx/www/sse" "$EVENTS" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write("id: %d\nevent: message\ndata: %s\n\n" % (i, json.dumps(
            {"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "bench_a"}, {"name": "drop_b"}]}})))
PY
# a stream as a tool's run gives it: progress notifications and tool results, and a tools/list result every 100
"$PY" - "$T/nginx/www/mix" "$EVENTS" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        if i % 100 == 0:
            m = {"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "bench_a"}, {"name": "drop_b"}]}}
        elif i % 2:
            m = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": i}}
        else:
            m = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "line %d" % i}]}}
        f.write("id: %d\nevent: message\ndata: %s\n\n" % (i, json.dumps(m)))
PY
cat >"$T/ngx.extra" <<'NGX'
    location = /mixfile { internal; try_files /mix =404; }
    location = /mcp {
      if ($arg_m = mix) { rewrite ^ /mixfile last; }
      if ($request_method = POST) { return 200 "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n"; }
      try_files /sse =404;
    }
    types { text/event-stream sse; }
    default_type text/event-stream;
NGX
# the snippet's default_type makes /mcp (the file and the POST answer) text/event-stream
nginx_start "$T/ngx.extra"

cat <<'YAML' | gw_conf
default: deny
hosts:
  api.example.test:
    allow_private: true
    mcp: { endpoint: /mcp }
    rules:
      - { id: stream, allow: { method: GET, path: /mcp } }
      - { id: mcp-call, allow: { method: POST, path: /mcp, mcp: { tool: "bench_*" } } }
  other.example.test:
    allow_private: true
    rules:
      - { id: stream, allow: { method: GET, path: /mcp } }
      - { id: path-call, allow: { method: POST, path: /mcp } }
sandboxes:
  local:
    addresses: [127.0.0.1/32]
YAML
gw_start

pad=$(head -c 2000 /dev/zero | tr '\0' x | head -c 1000)
printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_call","arguments":{"text":"%s"}}}' \
  "$pad" >"$T/call.json"
for h in api other; do
  for _ in $(seq 1 "$CALLS"); do printf 'url = "https://%s.example.test/mcp"\noutput = "/dev/null"\n' "$h"; done >"$T/urls-$h"
done

sse_run() { # HOST [mix]: events/s of one GET of the stream (every event a list result, or the mix), from the
  # first byte of the answer to its last (the connection, CONNECT and TLS set-up are not counted)
  local t
  t=$(pcurl -o "$T/sse-$1${2:-}.out" -w '%{time_starttransfer} %{time_total}' "https://$1.example.test/mcp?m=${2:-all}")
  awk -v n="$EVENTS" -v t="$t" 'BEGIN { split(t, a, " "); d = a[2] - a[1]; if (d <= 0) d = 1e-6; printf "%.0f", n / d }'
}
call_run() { # HOST: requests/s of CALLS keep-alive POSTs on one connection
  local s e
  s=$(date +%s.%N)
  pcurl -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --data-binary @"$T/call.json" -K "$T/urls-$1" || echo "curl failed" >&2
  e=$(date +%s.%N)
  awk -v n="$CALLS" -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", n / (e - s) }'
}
best() { printf '%s\n' "$@" | sort -n | tail -n 1; }

declare -a sf su xf xu cm cp
for i in $(seq 1 "$RUNS"); do
  sf+=("$(sse_run api)"); su+=("$(sse_run other)")
  xf+=("$(sse_run api mix)"); xu+=("$(sse_run other mix)")
  cm+=("$(call_run api)"); cp+=("$(call_run other)")
done
kept=$(grep -c '^data: .*bench_a' "$T/sse-api.out"); hid=$(grep -c 'drop_b' "$T/sse-api.out")
echo "load average before the last run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sse filtered  (events/s): ${sf[*]}   (last run: $kept events with bench_a, $hid with drop_b)"
echo "sse unfiltered(events/s): ${su[*]}   (last run: $(grep -c drop_b "$T/sse-other.out") events with drop_b)"
echo "mix filtered  (events/s): ${xf[*]}   (last run: $(grep -c drop_b "$T/sse-apimix.out") with drop_b, $(grep -c bench_a "$T/sse-apimix.out") with bench_a)"
echo "mix unfiltered(events/s): ${xu[*]}"
echo "call mcp rule (req/s):    ${cm[*]}"
echo "call path-only (req/s):   ${cp[*]}"
awk -v a="$(best "${sf[@]}")" -v b="$(best "${su[@]}")" 'BEGIN { printf "sse:  best %d / %d events/s = %.2fx (goal >= 0.80x)\n", a, b, a / b }'
awk -v a="$(best "${xf[@]}")" -v b="$(best "${xu[@]}")" 'BEGIN { printf "mix:  best %d / %d events/s = %.2fx (goal >= 0.80x)\n", a, b, a / b }'
awk -v a="$(best "${cm[@]}")" -v b="$(best "${cp[@]}")" 'BEGIN { printf "call: best %d / %d req/s = %.2fx (goal >= 0.85x)\n", a, b, a / b }'
echo "audit: $(jq -r 'select(.type=="response" and .removed) | .removed' "$AUDIT" | sort | uniq -c | head -3 | tr '\n' ' ')"
echo "audit: rules $(jq -r 'select(.type=="request") | .rule' "$AUDIT" | sort | uniq -c | tr '\n' ' ')"
gw_stop
