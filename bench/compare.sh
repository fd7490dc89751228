#!/usr/bin/env bash
# bench/compare.sh - two sluice binaries side by side: bench/run.sh with the old and the new binary alternating
# (old, new, old, new, ...) on the same machine, and the median of each figure per binary.
#
# Usage: sudo bench/compare.sh OLD_SLUICE NEW_SLUICE [RUNS]     (RUNS per binary, default 3)
# Environment: BENCH_ONLY (default "ka h2 big lat"), BENCH_DURATION (default 6) and the rest of bench/run.sh's;
#   COMPARE_OUT: directory for each run's report (default a fresh one under /tmp, kept and named at the end).
# Prints, per figure: old median, new median, new/old, and each binary's spread (max-min over median) —
# the gateway CPU per request and per MiB are the figures the redesign must not regress (issue 18).
set -euo pipefail
old=${1:?usage: compare.sh OLD_SLUICE NEW_SLUICE [RUNS]} new=${2:?usage: compare.sh OLD_SLUICE NEW_SLUICE [RUNS]}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=${COMPARE_OUT:-$(mktemp -d /tmp/sluice-compare.XXXXXX)}
mkdir -p "$out"
export BENCH_ONLY=${BENCH_ONLY:-ka h2 big lat} BENCH_DURATION=${BENCH_DURATION:-6}
for i in $(seq 1 "$runs"); do
	for side in old new; do
		bin=$old; [ "$side" = new ] && bin=$new
		echo "== run $i, $side ($bin)" >&2
		SLUICE_BIN=$bin "$here/run.sh" >"$out/$side.$i.md" 2>"$out/$side.$i.log" ||
		    { echo "compare.sh: bench/run.sh failed for $side run $i (see $out/$side.$i.log)" >&2; exit 1; }
	done
done
/usr/bin/python3 - "$out" "$runs" <<'PY'
import re, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def figures(path):
    f = {}
    head = None
    for line in open(path):
        # the first table's "through" column: | label | direct | through | ratio | goal | met? |; the side-by-side
        # table's "Sluice" column: | figure | direct | HAProxy | Sluice | Sluice with a secret |
        cols = [c.strip() for c in line.strip().split('|')[1:-1]] if line.startswith('|') else []
        if cols and cols[0] in ('metric', 'figure'):
            head = cols[1]   # "direct" for the first table and the side by side; "without" for the credentials'
            continue
        if head != 'direct':
            continue
        if len(cols) == 6 and cols[0] != 'metric' and re.match(r'[0-9.]+!?$', cols[2]):
            f[cols[0]] = float(cols[2].rstrip('!'))
        elif len(cols) == 5 and cols[0] != 'figure' and re.match(r'[0-9.]+!?$', cols[3]):
            f[cols[0]] = float(cols[3].rstrip('!'))
        # the details: "- label, through: ..., sluice CPU N us/unit"
        m = re.match(r'- (.+?), through: .*sluice CPU ([0-9.]+) us/(\w+)', line)
        if m:
            f["gateway CPU per %s, %s (us)" % (m.group(3), m.group(1))] = float(m.group(2))
    return f
side = {s: [figures("%s/%s.%d.md" % (out, s, i)) for i in range(1, runs + 1)] for s in ("old", "new")}
keys = [k for k in side["old"][0] if all(k in r for s in side.values() for r in s)]
print("| figure | old (median) | new (median) | new/old | old spread | new spread |")
print("|---|---|---|---|---|---|")
for k in keys:
    o = [r[k] for r in side["old"]]; n = [r[k] for r in side["new"]]
    mo, mn = statistics.median(o), statistics.median(n)
    sp = lambda v, m: "%.0f%%" % (100 * (max(v) - min(v)) / m) if m else "-"
    print("| %s | %g | %g | %s | %s | %s |" % (k, mo, mn, "%.2fx" % (mn / mo) if mo else "-", sp(o, mo), sp(n, mn)))
print()
print("%d runs per binary, alternating; reports in %s" % (runs, out))
PY
