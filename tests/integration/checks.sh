# shellcheck shell=bash
# tests/integration/checks.sh: the reporting helpers of the integration tests (lib.sh) and of
# scripts/package-check.sh. Sourced; counts into PASS and FAIL, which the sourcing script sets to 0.
#   ok MSG / bad MSG                count and print "ok   MSG" / "FAIL MSG"
#   check MSG CMD...                ok when CMD exits 0 (its output is discarded)
#   check_eq MSG EXPECTED ACTUAL    ok when equal; a failure prints both
#   check_match MSG ERE ACTUAL      ok when ACTUAL matches the extended regex ERE
#   check_nomatch MSG ERE ACTUAL    ok when it does not
#   eventually SECS CMD...          retries CMD every 0.1 s until it succeeds or SECS pass
ok()  { PASS=$((PASS + 1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }
check_eq() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1 (expected [$2], got [$3])"; fi; }
check_match() { if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"; else bad "$1 (no /$2/ in [$(printf '%s' "$3" | head -c 400)])"; fi; }
check_nomatch() { if printf '%s' "$3" | grep -Eq -- "$2"; then bad "$1 (/$2/ found in [$(printf '%s' "$3" | head -c 400)])"; else ok "$1"; fi; }
eventually() { local end=$((SECONDS + $1)); shift; until "$@" >/dev/null 2>&1; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done; }
