#!/usr/bin/env bash
# Installs the Debian packages Sluice needs to build, run its demo and every `sluice run` backend, and (with
# `test`) what the test suites, the fuzzers and scripts/fresh-check.sh use, and (with `bench`) that and what
# bench/ uses; only those missing.
# Usage: scripts/deps.sh [build|test|bench]
# Exit 0 when every package is installed; otherwise 1, naming the packages that could not be installed.
# scripts/fresh-check.sh proves this list on a new Debian 12 root: a package missing here fails there.
set -euo pipefail
# build, demo and the launcher
want=(gcc cmake make pkg-config libssl-dev libevent-dev libnghttp2-dev libpcre2-dev libyaml-dev libjansson-dev
      libcmocka-dev zlib1g-dev nginx nftables curl iproute2 jq python3 openssl ca-certificates)
want+=(libsystemd-dev)  # sd_notify for the unit's Type=notify (a no-op without NOTIFY_SOCKET)
want+=(bubblewrap)       # sluice run's netns backend (the sandboxed process), so also the demo
want+=(qemu-system-x86)  # sandbox backend qemu (-M microvm); its boot test runs in the integration suite
want+=(busybox-static)   # the test microVM's userland (scripts/vm-image.sh)
want+=(procps)           # pgrep/pkill/ps: the demo and the launcher's tests
want+=(libhiredis-dev)   # proxy/store: shared counters in Redis (0.14.1: hiredis with its libevent adapter)
mode=${1:-build}
case $mode in build|test|bench) ;; *) echo "usage: scripts/deps.sh [build|test|bench]" >&2; exit 2 ;; esac
if [ "$mode" != build ]; then
  # golang-go: test_json_fold builds a Go encoding/json reader (offline, stdlib only); scripts/gen_fold.go
  want+=(clang libclang-rt-14-dev git golang-go fcgiwrap python3-pytest python3-h2 python3-yaml python3-grpcio python3-jsonschema nghttp2-client wrk util-linux)
  want+=(cpio gzip xz-utils file) # scripts/vm-image.sh (the kernel, the initrd), tests that inspect binaries
  want+=(redis-server)            # tests/unit/proxy/test_store, bench/store_bench: a Redis of their own on a unix socket
  want+=(rsyslog)                 # test_audit_siem: a collector of its own (imtcp/imudp on loopback, own config)
  want+=(wget)                    # test_explicit: a GnuTLS client that closes after the handshake (no_request)
  want+=(debootstrap zstd)        # scripts/fresh-check.sh: the fresh Debian root and its cached tarball
  want+=(dpkg-dev debhelper lintian scdoc logrotate bc man-db bsdextrautils)  # scripts/package-check.sh: the .deb,
                                  # lintian, man pages (man -l | col), the logrotate test, timings
  # node and npm: Debian's nodejs only suggests npm. A machine with another node build (one that bundles npm, as
  # NodeSource's does, and conflicts with Debian's npm) keeps it.
  command -v node >/dev/null 2>&1 || want+=(nodejs)
  command -v npm >/dev/null 2>&1 || want+=(npm)
fi
if [ "$mode" = bench ]; then
  want+=(haproxy)                 # bench/run.sh: the reference relay (issue 20); not a test dependency
fi
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
# test: the MCP test clients and servers (issue 23) from tests/mcp/package-lock.json, with npm ci --ignore-scripts
# (no install scripts run), into build/node (SLUICE_NODE_DIR) unless it already holds that lock's install.
node_deps() {
  [ "${1:-build}" != build ] || return 0
  local root dest
  root=$(cd "$(dirname "$0")/.." && pwd)
  dest=${SLUICE_NODE_DIR:-$root/build/node}
  if [ -d "$dest/node_modules" ] && cmp -s "$root/tests/mcp/package-lock.json" "$dest/package-lock.json"; then
    return 0
  fi
  mkdir -p "$dest"
  cp "$root/tests/mcp/package.json" "$root/tests/mcp/package-lock.json" "$dest/"
  # npm trusts its own copy of Mozilla's roots; the machine's store (/etc/ssl/certs, with the site's own CAs from
  # /usr/local/share/ca-certificates, e.g. an egress proxy's) is what apt and curl trust: npm is given it too,
  # unless npm's configuration names a CA file already
  local ca=()
  if [ -z "${npm_config_cafile:-}" ] && [ "$(npm config get cafile 2>/dev/null)" = null ] &&
     [ -s /etc/ssl/certs/ca-certificates.crt ]; then
    ca=(--cafile=/etc/ssl/certs/ca-certificates.crt)
  fi
  if ! (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error "${ca[@]}"); then
    echo "deps.sh: npm ci in $dest failed (is the npm registry reachable?)" >&2
    return 1
  fi
}
need=()
for p in "${want[@]}"; do
  # "install ok installed" only: a removed package whose config files remain does not count
  installed "$p" || need+=("$p")
done
if [ ${#need[@]} -eq 0 ]; then
  node_deps "${1:-build}"
  exit $?
fi
echo "installing: ${need[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } \
  >"$log" 2>&1 || rc=$?
grep -v '^\(Selecting\|Preparing\|Unpacking\|Setting up\|Processing\|(Reading\)' "$log" | tail -n 20 || true
left=()
for p in "${need[@]}"; do installed "$p" || left+=("$p"); done
if [ ${#left[@]} -gt 0 ]; then
  echo "deps.sh: could not install: ${left[*]} (apt-get exit $rc; is Debian's package archive reachable?)" >&2
  exit 1
fi
node_deps "${1:-build}"
