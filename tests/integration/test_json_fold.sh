#!/usr/bin/env bash
# tests/integration/test_json_fold.sh - the JSON key differential (issue 19, item 1): a generated corpus of bodies
# (jsonfold/gen.py: case variants of the keys a rule reads, KELVIN SIGN and LONG S, other folding letters, \u
# escapes, exact and folded duplicates at depth, unrelated objects with duplicates) is read by the gateway's
# condition code (jsonfold_judge, the policy's hold rules on $.amount and $.pay.sku) and by Go's own
# encoding/json decoding into a struct with those fields (jsonfold/reader.go, built here with Debian's golang-go,
# offline). Wherever the two would read a different value, the gateway must say "cannot judge".
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
DIR=$(dirname "$(readlink -f "$0")")/jsonfold
JUDGE=${JSONFOLD_JUDGE:-$(dirname "$SLUICE")/../tests/integration/jsonfold_judge}
[ -x "$JUDGE" ] || die "no jsonfold_judge at $JUDGE (build the jsonfold_judge target, or set JSONFOLD_JUDGE)"
command -v go >/dev/null 2>&1 || die "go not found (Debian's golang-go: scripts/deps.sh test)"
GOHOME=$(dirname "$SLUICE")/../go-build
mkdir -p "$GOHOME"
( cd "$DIR" && env GOCACHE="$GOHOME/cache" GOPATH="$GOHOME/path" GOPROXY=off GOTOOLCHAIN=local GOFLAGS= \
    GO111MODULE=off CGO_ENABLED=0 timeout 170 go build -o "$T/reader" reader.go ) || die "cannot build reader.go"

"$PY" "$DIR/gen.py" 4000 >"$T/corpus" || die "cannot generate the corpus"
"$T/reader" <"$T/corpus" >"$T/go.out" || die "the Go reader failed"
"$JUDGE" <"$T/corpus" >"$T/gw.out" || die "the judge failed"
check_eq "one reading per body from each side" "$(wc -l <"$T/corpus")/$(wc -l <"$T/corpus")" \
  "$(wc -l <"$T/go.out")/$(wc -l <"$T/gw.out")"

# per field: judged and equal / judged and different (a hole) / cannot judge / Go refuses the body
read -r same diff cant goerr folded < <(paste "$T/go.out" "$T/gw.out" | awk -F'\t' '
  { for (f = 1; f <= 2; f++) { g = $f; w = $(f + 2)
      if (w == "?") { cant++; continue }
      if (g == "ERR") { goerr++; continue }
      if (g == w) same++; else { diff++; if (diff <= 5) print "disagree: line " NR " field " f ": go " g ", gateway " w > "/dev/stderr" } } }
  END { print same + 0, diff + 0, cant + 0, goerr + 0 }')
echo "fields judged alike: $same, cannot judge: $cant, Go refused: $goerr"
check_eq "no field the gateway judges is read differently by Go" 0 "$diff"
# the corpus has teeth: many fields folding makes ambiguous, and many the gateway still judges
check "the gateway cannot judge hundreds of fields (folded keys)" test "$cant" -ge 500
check "the gateway still judges hundreds of fields (objects without folded twins)" test "$same" -ge 500
# the fixed cases at the top: the issue's body, Go's specials, a folded twin at depth, and an unrelated object
check_eq "{amount, AMOUNT}: cannot judge" "?" "$(sed -n 1p "$T/gw.out" | cut -f1)"
check_eq "{AMOUNT} alone: cannot judge (Go reads it as amount)" "?" "$(sed -n 2p "$T/gw.out" | cut -f1)"
check_eq "Go reads AMOUNT alone as amount" "v3" "$(sed -n 2p "$T/go.out" | cut -f1)"
check_eq "LONG S twin: cannot judge" "?" "$(sed -n 4p "$T/gw.out" | cut -f2)"
check_eq "Go folds LONG S (last wins)" "v6" "$(sed -n 4p "$T/go.out" | cut -f2)"
check_eq "KELVIN SIGN twin, escaped: cannot judge" "?" "$(sed -n 5p "$T/gw.out" | cut -f2)"
check_eq "Go folds KELVIN SIGN" "v8" "$(sed -n 5p "$T/go.out" | cut -f2)"
check_eq "{pay, PAY}: cannot judge" "?" "$(sed -n 6p "$T/gw.out" | cut -f2)"
check_eq "an unrelated object with Env/env: still judged" "v11" "$(sed -n 7p "$T/gw.out" | cut -f1)"
finish
