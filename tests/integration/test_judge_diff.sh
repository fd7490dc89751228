#!/usr/bin/env bash
# The differential test of the one judge (issue 18): `sluice policy test` is an oracle for the gateway. For each
# example policy, every case of its examples/*.cases.yaml and a seeded generated set of requests (random methods;
# paths with dot segments, %-encodings and ; params; JSON and form bodies; GraphQL; git pushes; method overrides;
# duplicate Content-Types; per-sandbox counters) are judged by `sluice policy test` (written as one cases file, in
# order, one counter state) and sent, in the same order, through a live gateway over HTTP/1.1 and again over
# HTTP/2 (a fresh gateway and counter state each time) to echo_upstream.py, which the example hosts reach through
# upstream.resolve (allow_private on each host). Verdict, status and rule id must agree for every request: the
# gateway's from its audit record (or its CONNECT refusal); holds compare as `hold` (judge_diff.py rejects each one
# through the admin socket as it appears); 429s from limits and budgets compare after the same sequence.
# SLUICE_IT_SEED repeats a run (default 18); SLUICE_IT_GEN_N sets the generated requests per policy (default 140).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
EX=$(readlink -f "$HERE/../../examples")
DIFF=$HERE/judge_diff.py
SEED=${SLUICE_IT_SEED:-18} GEN_N=${SLUICE_IT_GEN_N:-140}
# every exact host name the example policies name reaches the echo upstream (a new example needs no edit here)
EXHOSTS=$("$PY" -c 'import glob, sys, yaml
for f in sorted(glob.glob(sys.argv[1] + "/*.yaml")):
    if not f.endswith(".cases.yaml"):
        for h in (yaml.safe_load(open(f)).get("hosts") or {}):
            if h[0] != "*" and not h[0].isdigit() and ":" not in h:
                print(h)' "$EX" | sort -u | tr '\n' ' ')
[ -n "$EXHOSTS" ] || die "no host names found in $EX/*.yaml"
PKI_EXTRA_SAN=$(for h in $EXHOSTS; do printf 'DNS:%s,' "$h"; done | sed 's/,$//')
pki_init
spawn "$T/echo.log" "$PY" "$HERE/echo_upstream.py" --listen "$UPADDR:443:tls" --cert "$PKI/srv.pem" \
  --key "$PKI/srv.key" --log "$T/echo.jsonl"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "echo upstream did not start: $(tail -n 3 "$T/echo.log")"
GW_RESOLVE=$(for h in $EXHOSTS; do echo "$h: $UPADDR"; done)
# the example secrets' sources: random values, never printed (no request carries a placeholder)
for v in GITHUB_TOKEN OPENAI_API_KEY ANTHROPIC_API_KEY SLACK_BOT_TOKEN STRIPE_SECRET_KEY; do
  export "$v=jd_$(head -c 48 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 24)"
done
echo "seed $SEED, $GEN_N generated requests per policy"

total=0 agreed=0
for cases in "$EX"/*.cases.yaml; do
  pol=$(basename "$cases" .cases.yaml)
  # the examples' own expectations still hold
  out=$("$SLUICE" policy test "$EX/$pol.yaml" "$cases" 2>&1)
  check_match "$pol: sluice policy test passes the example cases" ' 0 failed$' "$out"
  sbx=$("$PY" "$DIFF" gen "$EX/$pol.yaml" "$cases" "$SEED" "$GEN_N" "$T/$pol.cases.yaml" "$T/$pol.list.json") ||
    die "$pol: cannot generate the requests"
  for proto in h1 h2; do
    AUDIT=$T/audit-$pol-$proto.jsonl GW_EXTRA="state_dir: $T/state-$pol-$proto"
    "$PY" "$DIFF" conf "$EX/$pol.yaml" "$sbx" | gw_conf
    sed -i "s|^  file: $AUDIT\$|  file: $AUDIT\n  log_query: true|" "$GWCONF"
    if [ "$proto" = h1 ]; then
      "$PY" "$DIFF" cli "$SLUICE" "$GWCONF" "$T/$pol.cases.yaml" "$T/$pol.list.json" "$T/$pol.cli.json" ||
        die "$pol: sluice policy test did not judge every case"
    fi
    gw_start
    timeout 120 "$PY" "$DIFF" gw "$proto" "$PP" "$CA/ca.pem" "$ADMIN" "$AUDIT" "$T/$pol.list.json" "$sbx" \
      "$T/$pol.$proto.json" || bad "$pol over $proto: the driver failed"
    gw_stop
    check_eq "$pol over $proto: the gateway exits 0" 0 "$GW_RC"
    res=$("$PY" "$DIFF" cmp "$pol/$proto" "$T/$pol.cli.json" "$T/$pol.$proto.json" "$T/$pol.list.json")
    rc=$?
    printf '%s\n' "$res"
    last=$(printf '%s\n' "$res" | tail -n 1)
    n=$(echo "$last" | sed -n 's/.*: \([0-9]*\) cases, \([0-9]*\) agree$/\1/p')
    a=$(echo "$last" | sed -n 's/.*: \([0-9]*\) cases, \([0-9]*\) agree$/\2/p')
    total=$((total + ${n:-0})) agreed=$((agreed + ${a:-0}))
    check_eq "$pol over $proto: policy test and the gateway agree on every request" 0 "$rc"
  done
done
echo "judge_diff: $total cases, $agreed agree (both protocols, $GEN_N generated per policy, seed $SEED)"
check "at least 500 generated requests on each protocol" test $((GEN_N * 4)) -ge 500
finish
