#!/usr/bin/env bash
# scripts/demo.sh - Sluice in five minutes, on a fresh Debian 12 machine, as root.
#
# 1. installs the Debian packages that are missing (scripts/deps.sh: apt-get, only those);
# 2. builds sluice (cmake, Release) into build/release/ (the directory scripts/test.sh uses);
# 3. makes a throw-away test root CA and a certificate for api.github.com, and
#    starts nginx on a random 127.x.y.z:443 posing as api.github.com
#    (examples/demo-upstream/);
# 4. creates a Sluice CA and writes a sluice.yaml from examples/sluice.yaml;
# 5. `sluice run -c sluice.yaml -- sh -c '...'`: a sandbox (network namespace,
#    bubblewrap, nftables) whose only way out is the gateway, which sluice run
#    starts for it; inside, curl with no flags (DNS and the CA come from the
#    gateway): an allowed request, two denied ones, a name outside the policy;
# 6. the same policy for a host client: `sluice serve` and HTTPS_PROXY;
#    prints the answers, the audit lines and the health endpoint;
# 7. removes everything it made (also on failure or Ctrl-C).
#
# Traffic stays on loopback and on the veth pair it creates; no real GitHub
# address is contacted: the gateway maps api.github.com to the local nginx
# (upstream.resolve).  Exit status 0 when every step behaved as shown.
#
# Environment:
#   SLUICE_BIN=path   use this sluice binary instead of building build/release/cli/sluice
#   DEMO_KEEP=1       keep the demo directory (configs, logs, audit file)
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
T0=$SECONDS

if [ -t 1 ]; then B=$'\033[1m' G=$'\033[32m' R=$'\033[31m' N=$'\033[0m'; else B='' G='' R='' N=''; fi
step() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
note() { printf '   %s\n' "$*"; }
die()  { printf '%sdemo: %s%s\n' "$R" "$*" "$N" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run me as root (I install packages, create a network namespace and nftables rules)"

# ---------------------------------------------------------------- 1. packages
step "1/7 Debian packages (scripts/deps.sh: apt-get, only what is missing)"
"$ROOT/scripts/deps.sh" build | sed 's/^/   /'
note "ok"

# ---------------------------------------------------------------- 2. build
step "2/7 build"
if [ -n "${SLUICE_BIN:-}" ]; then
	SLUICE=$(readlink -f "$SLUICE_BIN")
	[ -x "$SLUICE" ] || die "SLUICE_BIN=$SLUICE_BIN is not an executable"
	note "using $SLUICE (SLUICE_BIN)"
else
	mkdir -p "$ROOT/build/release"
	note "cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release && cmake --build build/release --target sluice"
	if ! { cmake -S "$ROOT" -B "$ROOT/build/release" -DCMAKE_BUILD_TYPE=Release &&
	       cmake --build "$ROOT/build/release" --target sluice -j"$(nproc)"; } >"$ROOT/build/demo-build.log" 2>&1; then
		tail -n 25 "$ROOT/build/demo-build.log" >&2
		die "build failed (full log: build/demo-build.log)"
	fi
	SLUICE=$ROOT/build/release/cli/sluice
fi
note "$("$SLUICE" version)"

# ---------------------------------------------------------------- clean-up, whatever happens next
D=''
GW_PID='' NGINX_PID=''

stop_pid() { # PID: SIGTERM, up to 15 s, then SIGKILL
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	local rc=$?
	set +e
	stop_pid "$GW_PID"
	stop_pid "$NGINX_PID"
	# sluice run removes its sandbox itself; the gateway it started is gone with the last run,
	# unless the demo was killed in between
	[ -n "$D" ] && [ -s "$D/admin.sock.embedded" ] && stop_pid "$(cat "$D/admin.sock.embedded")"
	if [ -n "$D" ] && [ "${DEMO_KEEP:-0}" = 1 ]; then
		echo "demo directory kept: $D"
	elif [ -n "$D" ]; then
		rm -rf "$D"
	fi
	if [ $rc -ne 0 ]; then
		printf '%sdemo failed (exit %d); everything it made has been removed%s\n' "$R" "$rc" "$N" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
D=$(mktemp -d /tmp/sluice-demo.XXXXXX)

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
waitlisten() { # ADDR:PORT, seconds
	local i
	for i in $(seq $(($2 * 10))); do
		ss -ltnH "src $1" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- 3. upstream stand-in
step "3/7 a stand-in for api.github.com: nginx with a test CA on loopback"
for _ in $(seq 50); do
	UPADDR=127.$((RANDOM % 200 + 20)).$((RANDOM % 250)).$((RANDOM % 250 + 1))
	ss -ltnH "src $UPADDR" 2>/dev/null | grep -q . || break
done
mkdir -p "$D/pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj "/CN=Sluice demo upstream root (throw-away)" -keyout "$D/pki/root.key" -out "$D/pki/root.pem" \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=api.github.com" \
	-keyout "$D/pki/api.github.com.key" -out "$D/pki/api.github.com.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.github.com\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n' >"$D/pki/ext"
openssl x509 -req -in "$D/pki/api.github.com.csr" -CA "$D/pki/root.pem" -CAkey "$D/pki/root.key" \
	-CAcreateserial -days 1 -extfile "$D/pki/ext" -out "$D/pki/api.github.com.pem" 2>/dev/null
sed -e "s|@ADDR@|$UPADDR|g" -e "s|@DIR@|$D|g" "$ROOT/examples/demo-upstream/nginx.conf.in" >"$D/nginx.conf"
nginx -q -e "$D/nginx-error.log" -p "$D" -c "$D/nginx.conf" &
NGINX_PID=$!
waitlisten "$UPADDR:443" 10 || die "nginx did not start on $UPADDR:443: $(tail -n 3 "$D/nginx-error.log" 2>/dev/null)"
note "nginx on $UPADDR:443, certificate for api.github.com from a throw-away root ($D/pki/root.pem)"

# ---------------------------------------------------------------- 4. the configuration
step "4/7 the gateway's configuration: sluice ca init, sluice.yaml from examples/"
TP=$(freeport) PP=$(freeport) DP=$(freeport)
"$SLUICE" ca init --dir "$D/ca" | sed 's/^/   /'
"$SLUICE" ca show --dir "$D/ca" | sed 's/^/   /'
{
	cat <<YAML
# Written by scripts/demo.sh: the listeners, paths and upstream trust are the demo's;
# default: and hosts: are examples/sluice.yaml's, with one line added (allow_private).
listen:
  transparent: "[::]:$TP"         # sluice run's nftables rules redirect all sandbox TCP here
  dns: "[::]:$DP"                 # and sandbox UDP 53 here
  proxy: "127.0.0.1:$PP"
  admin: "unix:$D/admin.sock"
  proxy_clients: [127.0.0.0/8, "::1/128"]
user: root                 # the demo's files live in a root-only directory; the default is nobody
ca: $D/ca
upstream:
  ca_bundle: $D/pki/root.pem      # the gateway trusts the demo root for upstreams; nothing else does
  resolve:
    api.github.com: $UPADDR      # the gateway resolves names itself; here, to the local nginx
audit:
  file: $D/audit.jsonl
workers: 2
YAML
	# default: and hosts: from the example; api.github.com gets allow_private, because its
	# stand-in lives on a loopback address, which the gateway otherwise refuses to dial.
	sed -n '/^default:/,$p' "$ROOT/examples/sluice.yaml" |
		sed 's|^  api.github.com:$|&\n    allow_private: true   # demo only: the stand-in is on loopback|'
} >"$D/sluice.yaml"
"$SLUICE" policy check "$D/sluice.yaml" | sed 's/^/   /'
note "policy for api.github.com (examples/sluice.yaml):"
sed -n '/^  api.github.com:$/,/^  "/p' "$D/sluice.yaml" | sed '$d' | sed 's/^/     /'

# ---------------------------------------------------------------- 5. the sandboxed command
step "5/7 sluice run: a sandboxed command whose only way out is the gateway"
note "sluice run -c sluice.yaml -- sh -c '<three curls, no flags>'"
note "(no gateway is running for sluice.yaml yet, so sluice run starts one and stops it at the end)"
FAILS=0
# Inside: a network namespace, bubblewrap, uid 1000, an empty environment plus the CA variables.
# curl needs no flags: DNS answers come from the gateway, the CA bundle holds the Sluice CA.
# Each request prints its body, then "=> <status>" on a line of its own.
cat >"$D/sandboxed.sh" <<'SH'
req() { curl -sS --max-time 10 -w '\n=> %{http_code}\n' "$@" 2>&1; }
echo "--- id: $(id -un 2>/dev/null || id -u), resolv.conf: $(grep nameserver /etc/resolv.conf)"
echo "--- curl https://api.github.com/repos/octo/demo"
req https://api.github.com/repos/octo/demo
echo "--- curl -X DELETE https://api.github.com/repos/octo/demo/git/refs/heads/main"
req -X DELETE https://api.github.com/repos/octo/demo/git/refs/heads/main
echo "--- curl --path-as-is https://api.github.com/repos/x/../../admin"
req --path-as-is https://api.github.com/repos/x/../../admin
echo "--- curl --max-time 3 http://example.com:8080/ (a name outside the policy)"
req --max-time 3 http://example.com:8080/
# the last request fails by design (curl's exit 6): the script's own status says only that it ran to the end
exit 0
SH
rc=0
"$SLUICE" run -c "$D/sluice.yaml" --timing -- sh -c "$(cat "$D/sandboxed.sh")" >"$D/run.out" 2>"$D/run.err" || rc=$?
sed 's/^/   | /' "$D/run.out"
sed 's/^/   /' "$D/run.err"
note "sluice run exited with $rc (the sandboxed script's status: 0 when it ran to its end)"
[ "$rc" -eq 0 ] || FAILS=$((FAILS + 1))
# expect WHAT-LINE WANT: the status printed after the request named by WHAT-LINE
expect() {
	local got
	got=$(awk -v h="--- $1" 'index($0, h) == 1 {f = 1; next} f && /^=> / {print $2; exit}' "$D/run.out")
	if [ "$got" = "$2" ]; then
		printf '   %s%s -> %s, as expected%s\n' "$G" "$1" "$got" "$N"
	else
		printf '   %s%s -> %s, expected %s%s\n' "$R" "$1" "${got:-nothing}" "$2" "$N"
		FAILS=$((FAILS + 1))
	fi
}
expect "curl https://api.github.com/repos/octo/demo" 200
expect "curl -X DELETE https://api.github.com/repos/octo/demo/git/refs/heads/main" 403
expect "curl --path-as-is https://api.github.com/repos/x/../../admin" 403
expect "curl --max-time 3 http://example.com:8080/ (a name outside the policy)" 000
if grep -q 'Could not resolve host: example.com' "$D/run.out"; then
	printf '   %sexample.com did not resolve inside the sandbox (NXDOMAIN from the gateway), as expected%s\n' "$G" "$N"
else
	printf '   %sexample.com: no "Could not resolve host" from curl%s\n' "$R" "$N"
	FAILS=$((FAILS + 1))
fi
if grep -q '/admin' "$D/nginx-access.log" 2>/dev/null; then
	printf '   %sthe upstream saw a request for /admin%s\n' "$R" "$N"
	FAILS=$((FAILS + 1))
else
	note "the upstream's access log has no /admin request: the gateway refused it before dialling"
fi
if [ -e "$D/admin.sock.embedded" ]; then
	printf '   %sthe gateway sluice run started is still running%s\n' "$R" "$N"
	FAILS=$((FAILS + 1))
else
	note "after the command: sluice run removed its sandbox and stopped the gateway it started"
fi

# ---------------------------------------------------------------- 6. explicit proxy
step "6/7 the same policy for a client on the host: sluice serve, HTTPS_PROXY"
"$SLUICE" serve -c "$D/sluice.yaml" 2>"$D/sluice.log" &
GW_PID=$!
waitlisten "127.0.0.1:$PP" 10 || die "sluice serve did not start: $(tail -n 5 "$D/sluice.log")"
note "sluice serve -c $D/sluice.yaml   (pid $GW_PID; log: sluice.log)"
note "host\$ HTTPS_PROXY=http://127.0.0.1:$PP curl https://api.github.com/repos/octo/demo"
code=$(env -i PATH=/usr/bin:/bin HTTPS_PROXY="http://127.0.0.1:$PP" \
	curl -sS --max-time 10 --cacert "$D/ca/ca.pem" -o "$D/proxy.body" -w '%{http_code}' \
	https://api.github.com/repos/octo/demo 2>&1) || true
sed 's/^/     /' "$D/proxy.body" 2>/dev/null || true
if [ "$code" = 200 ]; then
	printf '     %s-> HTTP %s, as expected%s\n' "$G" "$code" "$N"
else
	printf '     %s-> HTTP %s, expected 200%s\n' "$R" "$code" "$N"
	FAILS=$((FAILS + 1))
fi

# ---------------------------------------------------------------- 7. audit, health, stop
step "7/7 the audit log ($D/audit.jsonl: one JSON line per DNS answer and request), health, shutdown"
for _ in $(seq 50); do
	[ "$(grep -c '"type":"request"' "$D/audit.jsonl" 2>/dev/null || echo 0)" -ge 4 ] && break
	sleep 0.1
done
if jq -e . "$D/audit.jsonl" >/dev/null 2>&1 && [ "$(grep -c '"type":"request"' "$D/audit.jsonl")" -ge 4 ]; then
	jq -c '{type, sandbox, sni, host, qtype, answer, method, path, verdict, rule, status}
	       | with_entries(select(.value != null))' "$D/audit.jsonl" | sed 's/^/   /'
else
	printf '   %sthe audit file does not hold the four request lines%s\n' "$R" "$N"
	FAILS=$((FAILS + 1))
fi
note ""
note "curl --unix-socket $D/admin.sock http://sluice/health"
curl -sS --max-time 5 --unix-socket "$D/admin.sock" http://sluice/health | sed 's/^/   /' ||
	{ FAILS=$((FAILS + 1)); true; }
kill -TERM "$GW_PID"
rc=0
wait "$GW_PID" || rc=$?
GW_PID=''
note "SIGTERM: sluice drained and exited with status $rc"
[ "$rc" -eq 0 ] || FAILS=$((FAILS + 1))

echo
if [ "$FAILS" -eq 0 ]; then
	printf '%sdemo ok%s (%ds); removing nginx and %s\n' "$G" "$N" \
		$((SECONDS - T0)) "$D"
	exit 0
fi
printf '%sdemo: %d step(s) did not behave as expected%s\n' "$R" "$FAILS" "$N"
exit 1
