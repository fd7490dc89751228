#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: scripts/fresh-check.sh (a new Debian 12 root made by
# debootstrap, with nothing installed by hand: the demo, scripts/deps.sh test, the Release build and the whole
# Release ctest, unit, integration and docs, run there), scripts/package-check.sh (the Debian package, installed
# into another fresh root), then on this machine the same unit and integration tests under
# AddressSanitizer + UndefinedBehaviorSanitizer, a banned-function check, and each libFuzzer target for a short,
# bounded time (beside the sanitized tests, at the lowest priority).  Run as root from the checkout (integration
# tests create network namespaces and nft tables).
# Environment: FUZZ_SECONDS (per fuzzer, default 20), JOBS (default 2), FRESH=0 (skip the fresh root and run the
# Release ctest on this machine instead: for a quick local run, never in CI).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
JOBS=${JOBS:-2}
scripts/deps.sh test

echo "== banned functions"
if git grep -nE '\b(strcpy|strcat|sprintf|vsprintf|strtok|atoi|atol|gets|strncpy)\s*\(' -- '*.c' '*.h'; then
  echo "banned functions found (STYLE.md section 5)"; exit 1
fi

# The fresh root runs in the background, beside the steps on this machine: its tests run in a network namespace
# of their own (scripts/fresh-check.sh: loopback, nft, veths and namespaces apart from this machine's), in a mount
# and PID namespace of their own, so the two suites cannot meet; its log is printed when it is done.
if [ "${FRESH:-1}" = 0 ]; then
  echo "== release build + unit + integration tests (on this machine: FRESH=0)"
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/release -j"$JOBS"
  ctest --test-dir build/release --output-on-failure | tee build/release-ctest.log
  FRESH_PID=
else
  echo "== a fresh Debian 12 root (in the background): the demo, deps.sh test, release build + unit + integration tests"
  mkdir -p build
  scripts/fresh-check.sh >build/release-ctest.log 2>&1 &
  FRESH_PID=$!
  trap 'kill ${FRESH_PID:-} 2>/dev/null || true' EXIT   # it removes its root and namespaces on SIGTERM
fi
# fresh_done: waits for the fresh root, prints its log; its exit status
fresh_done() {
  local rc=0
  [ -n "$FRESH_PID" ] || return 0
  wait "$FRESH_PID" || rc=$?
  FRESH_PID=
  echo "== the fresh Debian 12 root's log"
  cat build/release-ctest.log
  return $rc
}

echo "== ASan + UBSan build, the fuzzers' build"
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON >/dev/null
cmake --build build/asan -j"$JOBS"
CC=clang cmake -S . -B build/fuzz -DSLUICE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$JOBS"

# The fuzzers run one after another beside the sanitized tests, at the lowest priority: the integration tests
# mostly wait (on peers, timers), the fuzzers take what CPU is left, so neither step waits for the other (CI's
# time) and the tests' timing is not the fuzzers' to disturb. Each fuzzer runs FUZZ_SECONDS of wall time.
fuzz_all() {
  local f name corpus seeds
  for f in build/fuzz/tests/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus=build/fuzz/corpus/$name; mkdir -p "$corpus"
    seeds=tests/fuzz/corpus/$name
    [ -d "$seeds" ] || seeds=
    rc=0
    nice -n 19 "$f" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 "$corpus" $seeds \
      >"build/fuzz/$name.log" 2>&1 || rc=$?
    echo "$rc" >"build/fuzz/$name.rc"
  done
}
rm -f build/fuzz/fuzz_*.rc
echo "== the Debian package (scripts/package-check.sh: build, lintian, install into a fresh root, the unit)"
scripts/package-check.sh   # on failure the EXIT trap stops the fresh root (it cleans up on SIGTERM)

fuzz_all &
FUZZ_PID=$!
trap 'kill "$FUZZ_PID" ${FRESH_PID:-} 2>/dev/null; pkill -P "$FUZZ_PID" 2>/dev/null || true' EXIT

echo "== ASan + UBSan unit + integration tests (the fuzzers, ${FUZZ_SECONDS}s each, beside them)"
asan_rc=0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure || asan_rc=$?
fresh_rc=0
fresh_done || fresh_rc=$?
[ "$fresh_rc" = 0 ] || { echo "the fresh Debian 12 root failed (exit $fresh_rc): its log is above"; exit 1; }
release_tests=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\)$/\1/p' build/release-ctest.log | tail -n 1)
[ -n "$release_tests" ] || { echo "the release ctest reported no result"; exit 1; }
[ "$asan_rc" = 0 ] || { echo "the ASan + UBSan tests failed (exit $asan_rc)"; exit 1; }

echo "== fuzzers (${FUZZ_SECONDS}s each)"
wait "$FUZZ_PID"
trap - EXIT
fuzzed=0
for f in build/fuzz/tests/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  rc=$(cat "build/fuzz/$name.rc" 2>/dev/null || echo "did not run")
  echo "-- $name: exit $rc"
  [ "$rc" = 0 ] || { tail -n 40 "build/fuzz/$name.log"; echo "fuzzer $name failed"; exit 1; }
  fuzzed=$((fuzzed + 1))
done
[ "$fuzzed" -gt 0 ] || { echo "no fuzzers were built"; exit 1; }
echo "fuzz: $fuzzed passed, 0 failed"
total=$(( release_tests + 1 + $(ctest --test-dir build/asan -N | sed -n 's/^Total Tests: //p') + fuzzed ))
echo "all: $total passed, 0 failed"
