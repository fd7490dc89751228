#!/usr/bin/env bash
# Installs the Debian packages Sluice needs to build, test and run its demo; only those missing.
# Usage: scripts/deps.sh [build|test]   (test adds what the test suites and fuzzers use)
set -euo pipefail
want=(gcc cmake make pkg-config libssl-dev libevent-dev libnghttp2-dev libpcre2-dev libyaml-dev libjansson-dev
      libcmocka-dev zlib1g-dev nginx nftables curl iproute2 jq python3 openssl)
want+=(qemu-system-x86)  # sandbox backend qemu (-M microvm); its boot test runs in the integration suite
want+=(busybox-static)   # the test microVM's userland (scripts/vm-image.sh)
if [ "${1:-build}" = test ]; then
  # golang-go: test_json_fold builds a Go encoding/json reader (offline, stdlib only); scripts/gen_fold.go
  want+=(clang libclang-rt-14-dev git golang-go fcgiwrap python3-pytest python3-h2 python3-grpcio nghttp2-client wrk util-linux procps)
  command -v node >/dev/null 2>&1 || want+=(nodejs)
fi
need=()
for p in "${want[@]}"; do
  # "install ok installed" only: a removed package whose config files remain does not count
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
