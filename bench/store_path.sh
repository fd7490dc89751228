#!/usr/bin/env bash
# bench/store_path.sh - keep-alive requests through a rule with a global rate limit, state.backend: redis
# against state.backend: file, in one run (issue 22, Measure): two gateways with the same policy (one per
# backend), a redis-server of its own on a unix socket, nginx on loopback (tests/integration/lib.sh's harness).
# Client: curl over one keep-alive connection through the explicit proxy listener (per-request times from
# curl's time_total: its p50 is the request's round trip) and C such clients at once for throughput.
# A crude client (curl, not wrk: wrk cannot use a proxy), so the absolute figures carry curl's own cost; the
# difference between the two gateways is the figure. The two alternate, STORE_BENCH_ROUNDS rounds (11: medians
# of five swung by 0.2x between runs here), and the medians are compared. Loopback only; bounded in count and time.
#   bench/store_path.sh build/release/cli/sluice [N per client] [C clients]
. "$(dirname "$(readlink -f "$0")")/../tests/integration/lib.sh" "$1"
N=${2:-400} C=${3:-8}
need_tool redis-server redis-cli curl
pki_init
nginx_start
cat >"$T/redis.conf" <<CONF
port 0
unixsocket $T/redis.sock
unixsocketperm 700
dir $T
save ""
appendonly no
CONF
spawn "$T/redis.log" redis-server "$T/redis.conf"
REDIS_PID=$LASTPID
eventually 10 sh -c "redis-cli -s '$T/redis.sock' ping 2>/dev/null | grep -q PONG" || die "redis-server did not start"
declare -A GP GWP
for b in file redis; do
  GP[$b]=$(freeport)
  PP=${GP[$b]} TP=$(freeport) ADMIN=$T/admin-$b.sock AUDIT=$T/audit-$b.jsonl GWCONF=$T/gw-$b.yaml GWLOG=$T/gw-$b.log
  if [ $b = redis ]; then
    GW_EXTRA=$(printf 'state:\n  backend: redis\n  dir: %s\n  redis: { url: "unix:%s", timeout: 1s }' "$T/st-$b" "$T/redis.sock")
  else
    GW_EXTRA=$(printf 'state: { dir: %s }' "$T/st-$b")
  fi
  policy_base 'allow: { method: GET, path: "/ok/**", limit: { rate: 100000000/hour, per: global } }' </dev/null | gw_conf
  gw_start
  GWP[$b]=$GWPID
done
# CPU (utime + stime, clock ticks) of a process, all its threads
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
declare -A CPU_GW CPU_RD
urls() { local i; for i in $(seq 1 "$N"); do printf 'url = "https://api.example.test/ok/%s"\noutput = "/dev/null"\n' "$i"; done; }
urls >"$T/urls.cfg"
one() { # BACKEND OUT: N keep-alive requests on one connection; time_total of each, one a line
  $CLEAN curl -sS --max-time 120 -x "http://127.0.0.1:${GP[$1]}" --cacert "$CA/ca.pem" -w '%{http_code} %{time_total}\n' \
    -K "$T/urls.cfg" >"$2" 2>/dev/null
}
p50_ms() { awk '$1 == 200 { print $2 }' "$1" | sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%.3f", a[int((NR + 1) / 2)] * 1000 }'; }
ok_count() { awk '$1 == 200' "$@" | wc -l; }
declare -A LAT TPUT NREQ
ROUNDS=${STORE_BENCH_ROUNDS:-11}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR) { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f", (a[NR / 2] + a[NR / 2 + 1]) / 2 } }'; }
for round in $(seq 1 "$ROUNDS"); do
  for b in file redis; do
    one $b "$T/lat-$b-$round.txt"
    LAT[$b]="${LAT[$b]:+${LAT[$b]} }$(p50_ms "$T/lat-$b-$round.txt")"
    g0=$(ticks "${GWP[$b]}"); r0=$(ticks "$REDIS_PID")
    t0=$(date +%s.%N); pids=()
    for c in $(seq 1 "$C"); do one $b "$T/tp-$b-$round-$c.txt" & pids+=($!); done
    wait "${pids[@]}"
    t1=$(date +%s.%N)
    n=$(ok_count "$T"/tp-$b-$round-*.txt)
    CPU_GW[$b]=$(( ${CPU_GW[$b]:-0} + $(ticks "${GWP[$b]}") - g0 )); CPU_RD[$b]=$(( ${CPU_RD[$b]:-0} + $(ticks "$REDIS_PID") - r0 ))
    NREQ[$b]=$(( ${NREQ[$b]:-0} + n ))
    TPUT[$b]="${TPUT[$b]:+${TPUT[$b]} }$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')"
    [ "$n" = $((N * C)) ] || echo "WARNING: $b round $round: $n of $((N * C)) requests answered 200"
  done
done
# shellcheck disable=SC2086 # one value a word
{ lf=$(median ${LAT[file]}); lr=$(median ${LAT[redis]}); tf=$(median ${TPUT[file]}); tr=$(median ${TPUT[redis]}); }
echo "| backend | p50 per request, 1 client (ms): median of $ROUNDS rounds (each round) | requests/s, $C clients x $N: median (each round) |"
echo "|---|---|---|"
echo "| file | $lf (${LAT[file]// / \/ }) | $tf (${TPUT[file]// / \/ }) |"
echo "| redis | $lr (${LAT[redis]// / \/ }) | $tr (${TPUT[redis]// / \/ }) |"
awk -v lf="$lf" -v lr="$lr" -v tf="$tf" -v tr="$tr" 'BEGIN {
  printf "added p50: %+.3f ms (goal <= 0.15 ms: %s); throughput redis/file: %.2fx (goal >= 0.90x: %s)\n",
    lr - lf, (lr - lf <= 0.15) ? "met" : "NOT met", tr / tf, (tr / tf >= 0.90) ? "met" : "NOT met" }'
hz=$(getconf CLK_TCK)
for b in file redis; do
  awk -v g="${CPU_GW[$b]}" -v r="${CPU_RD[$b]}" -v n="${NREQ[$b]}" -v hz="$hz" -v b="$b" 'BEGIN {
    if (n > 0) printf "CPU per request in the throughput runs, %s: gateway %.1f us, redis-server %.1f us\n", b, g * 1e6 / hz / n, r * 1e6 / hz / n }'
done
redis-cli -s "$T/redis.sock" info stats | grep -E 'total_(reads|writes|commands)_processed' || true
redis-cli -s "$T/redis.sock" info commandstats | grep '^cmdstat' || true
ops=$(timeout 5 curl -s --unix-socket "$T/admin-redis.sock" http://sluice/metrics | sed -n 's/^sluice_store_operations_total //p')
echo "store operations (the redis gateway): ${ops:-?}"
finish >/dev/null
