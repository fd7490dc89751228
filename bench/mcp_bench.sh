#!/usr/bin/env bash
# bench/mcp_bench.sh - MCP through the gateway (issue 23, "Measure"; docs/performance.md):
#   sse   an SSE stream of small events through a host with an mcp endpoint (filtered) against the same stream
#         from a host without one (relayed as a body); goal >= 0.80x events/s.  Two streams: "all", every event a
#         tools/list result of two tools one of which no rule allows (each parsed, filtered, re-emitted: the worst
#         case), and "mix", progress notifications and tool results with a tools/list result every 100 events
#         (what a tool's run streams).  Each from two upstreams: "file", nginx serving the stream as a file (16 KiB
#         TLS records), and "flush", bench/mcp_flush_upstream.py writing every event as its own chunk and TLS
#         record (as MCP servers do)
#   call  keep-alive tools/call POSTs with 1 KiB arguments through an mcp rule (the body is held and judged)
#         against the same POSTs through a path-only rule; goal >= 0.85x requests/s
# The client is curl through the explicit proxy.  The stream is the 10,000-event stream repeated BENCH_REPEAT
# times (ids go on), so that one GET lasts long enough for the timer; it is timed from the first byte of the answer
# to its last (the CONNECT, both handshakes and the request are not counted).  The POSTs are timed per transfer by
# curl, the first (which holds the connection set-up) left out.  Each row runs BENCH_RUNS pairs, the filtered and
# the unfiltered side interleaved (which goes first alternates); the figures are medians, the ratio the median of
# the pairs' ratios, with its range.  Not a test: no assertion on time (the machine is shared).
#
# Usage: bench/mcp_bench.sh PATH_TO_SLUICE   (as root: the harness's nginx and gateway)
# Environment: BENCH_RUNS (7), BENCH_EVENTS (10000), BENCH_REPEAT (10), BENCH_CALLS (2000), BENCH_ROWS (all rows:
#   "file-all file-mix flush-all flush-mix call")
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/../tests/integration/lib.sh" "$@"
RUNS=${BENCH_RUNS:-7} EVENTS=${BENCH_EVENTS:-10000} REPEAT=${BENCH_REPEAT:-10} CALLS=${BENCH_CALLS:-2000}
ROWS=${BENCH_ROWS:-file-all file-mix flush-all flush-mix call}
N=$((EVENTS * REPEAT))

mkdir -p "$T/nginx/www"
"$PY" - "$T/nginx/www" "$EVENTS" "$REPEAT" <<'PY'
import json, sys
d, ev, rep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(d + "/sse", "w") as fa, open(d + "/mix", "w") as fm:
    for i in range(ev * rep):
        a = {"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "bench_a"}, {"name": "drop_b"}]}}
        fa.write("id: %d\nevent: message\ndata: %s\n\n" % (i, json.dumps(a)))
        # a stream as a tool's run gives it: progress notifications and tool results, a tools/list result every 100
        if i % 100 == 0:
            m = a
        elif i % 2:
            m = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": i}}
        else:
            m = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "line %d" % i}]}}
        fm.write("id: %d\nevent: message\ndata: %s\n\n" % (i, json.dumps(m)))
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

FLUSHADDR=$(pick_loopback)
spawn "$T/flush.log" "$PY" "$HERE/mcp_flush_upstream.py" "$FLUSHADDR" 443 "$PKI/srv.pem" "$PKI/srv.key" "$EVENTS" "$REPEAT"
eventually 30 sh -c "ss -ltnH | grep -q ' $FLUSHADDR:443 '" || die "flush upstream did not start: $(tail -n 3 "$T/flush.log")"
GW_RESOLVE="flushapi.example.test: $FLUSHADDR
flushother.example.test: $FLUSHADDR"

cat <<'YAML' | gw_conf
default: deny
hosts:
  api.example.test:
    allow_private: true
    mcp: { endpoint: /mcp }
    rules:
      - { id: stream, allow: { method: GET, path: /mcp } }
      - { id: mcp-call, allow: { method: POST, path: /mcp, mcp: { tool: "bench_*" } } }
  flushapi.example.test:
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
  flushother.example.test:
    allow_private: true
    rules:
      - { id: stream, allow: { method: GET, path: /mcp } }
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

sse_run() { # HOST MODE: events/s of one GET of the stream, from the first byte of the answer to its last
  local t
  t=$(PCURL_OPTS="--max-time 120" pcurl -o "$T/sse-$1-$2.out" -w '%{time_starttransfer} %{time_total}' \
    "https://$1.example.test/mcp?m=$2") || echo "curl failed: $1 $2" >&2
  awk -v n="$N" -v t="$t" 'BEGIN { split(t, a, " "); d = a[2] - a[1]; if (d <= 0) d = 1e-6; printf "%.0f", n / d }'
}
call_run() { # HOST: requests/s of CALLS keep-alive POSTs on one connection, the first (connection set-up) not counted
  PCURL_OPTS="--max-time 120" pcurl -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --data-binary @"$T/call.json" -K "$T/urls-$1" -w '%{time_total}\n' >"$T/call-$1.times" || echo "curl failed" >&2
  awk 'NR > 1 { s += $1; n++ } END { if (s <= 0) s = 1e-6; printf "%.0f", n / s }' "$T/call-$1.times"
}
one() { # ROW SIDE(f|u): one measurement
  case "$1:$2" in
  file-all:f) sse_run api all ;; file-all:u) sse_run other all ;;
  file-mix:f) sse_run api mix ;; file-mix:u) sse_run other mix ;;
  flush-all:f) sse_run flushapi all ;; flush-all:u) sse_run flushother all ;;
  flush-mix:f) sse_run flushapi mix ;; flush-mix:u) sse_run flushother mix ;;
  call:f) call_run api ;; call:u) call_run other ;;
  esac
}
# CPU (utime + stime, clock ticks) of the gateway, all its threads
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$GWPID/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)
timed() { # ROW SIDE: one measurement into V, and the gateway's CPU per unit (ns) of it appended to C[ROW:SIDE]
  local t0
  t0=$(ticks); V=$(one "$1" "$2")
  C[$1:$2]="${C[$1:$2]:-} $(awk -v a="$t0" -v b="$(ticks)" -v hz="$HZ" -v n="$([ "$1" = call ] && echo "$CALLS" || echo "$N")" \
    'BEGIN { printf "%.0f", (b - a) * 1e9 / hz / n }')"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A F U R C
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $N events a stream, $CALLS POSTs a run, $RUNS pairs a row"
for i in $(seq 1 "$RUNS"); do
  for row in $ROWS; do
    if [ $((i % 2)) -eq 1 ]; then timed "$row" f; f=$V; timed "$row" u; u=$V; else timed "$row" u; u=$V; timed "$row" f; f=$V; fi
    F[$row]="${F[$row]:-} $f" U[$row]="${U[$row]:-} $u"
    R[$row]="${R[$row]:-} $(awk -v a="$f" -v b="$u" 'BEGIN { printf "%.3f", a / b }')"
  done
done
echo "load average at end:   $(cut -d' ' -f1-3 /proc/loadavg)"
for row in $ROWS; do
  unit=events/s goal=0.80
  [ "$row" = call ] && unit=req/s goal=0.85
  # shellcheck disable=SC2086
  printf '%-9s filtered %s; unfiltered %s (%s)\n' "$row" "${F[$row]# }" "${U[$row]# }" "$unit"
  # shellcheck disable=SC2086
  printf '%-9s median %.0f / %.0f %s; ratio median %.2fx (pairs %s to %s; goal >= %sx)\n' "$row" \
    "$(median ${F[$row]})" "$(median ${U[$row]})" "$unit" "$(median ${R[$row]})" \
    "$(printf '%s\n' ${R[$row]} | sort -g | head -n 1)" "$(printf '%s\n' ${R[$row]} | sort -g | tail -n 1)" "$goal"
  # shellcheck disable=SC2086
  printf '%-9s gateway CPU per %s: filtered %s ns, unfiltered %s ns (medians; clock ticks of %s ms)\n' "$row" \
    "$([ "$row" = call ] && echo request || echo event)" "$(median ${C[$row:f]})" "$(median ${C[$row:u]})" "$((1000 / HZ))"
done
for m in all mix; do
  for h in api flushapi; do
    [ -f "$T/sse-$h-$m.out" ] || continue
    echo "check $h $m: $(grep -c '^data: ' "$T/sse-$h-$m.out") events, $(grep -c bench_a "$T/sse-$h-$m.out") with bench_a, $(grep -c drop_b "$T/sse-$h-$m.out") with drop_b"
  done
done
echo "audit: removed $(jq -r 'select(.type=="response" and .removed) | .removed' "$AUDIT" | sort | uniq -c | head -3 | tr '\n' ' ')"
echo "audit: rules $(jq -r 'select(.type=="request") | .rule' "$AUDIT" | sort | uniq -c | tr '\n' ' ')"
gw_stop
