#!/usr/bin/env bash
# scripts/demo.sh - Sluice in five minutes, on a fresh Debian 12 machine, as root.
#
# 1. installs the Debian packages that are missing (scripts/deps.sh: apt-get, only those);
# 2. builds sluice (cmake, Release) into build/release/ (the directory scripts/test.sh uses);
# 3. makes a throw-away test root CA and a certificate for api.github.com, and
#    starts nginx on a random 127.x.y.z:443 posing as api.github.com
#    (examples/demo-upstream/);
# 4. creates a Sluice CA, writes a sluice.yaml from examples/sluice.yaml and
#    starts `sluice serve`;
# 5. creates a network namespace (the "sandbox") joined by a veth pair, whose
#    TCP 443/80 nftables redirects to the gateway's transparent listener;
# 6. runs curl inside the sandbox (clean environment, trusting only the Sluice
#    CA): an allowed request, two denied ones; then the same allowed request
#    through the explicit proxy (HTTPS_PROXY); prints the answers, the audit
#    lines and the health endpoint;
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
SUF=$(printf '%04x' $((RANDOM % 65536)))
NS=sluice-demo-$SUF              # network namespace
VH=sd${SUF}h VS=sd${SUF}s        # veth pair: host side, sandbox side
TABLE=sluice_demo_$SUF           # nftables table (inet family)
GW_PID='' NGINX_PID='' MADE_NS=0 MADE_VETH=0 MADE_NFT=0

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
	[ "$MADE_NFT" = 1 ] && nft delete table inet "$TABLE" 2>/dev/null
	[ "$MADE_NS" = 1 ] && ip netns del "$NS" 2>/dev/null
	[ "$MADE_VETH" = 1 ] && ip link show "$VH" >/dev/null 2>&1 && ip link del "$VH" 2>/dev/null
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

# ---------------------------------------------------------------- 4. the sandbox: netns + veth + nftables
step "4/7 a sandbox: network namespace $NS, veth $VH, nftables table inet $TABLE"
SUB=''
for _ in $(seq 100); do
	x=$((RANDOM % 254 + 1))
	ip -4 addr show | grep -q "inet 10\.200\.$x\." && continue
	ip -4 route show match "10.200.$x.0/30" | grep -vq '^default' && continue
	SUB=$x
	break
done
[ -n "$SUB" ] || die "no free 10.200.X.0/30 subnet found"
HOSTIP=10.200.$SUB.1 SBIP=10.200.$SUB.2
TP=$(freeport) PP=$(freeport)
ip netns add "$NS"
MADE_NS=1
ip link add "$VH" type veth peer name "$VS"
MADE_VETH=1
ip link set "$VS" netns "$NS"
ip addr add "$HOSTIP/30" dev "$VH"
ip link set "$VH" up
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$SBIP/30" dev "$VS"
ip -n "$NS" link set "$VS" up
# Only packets that arrive on this veth are touched: TCP 443/80 is redirected to the
# transparent listener, everything else the sandbox sends to the host is dropped, and
# nothing from it is forwarded anywhere.
nft -f - <<NFT
table inet $TABLE {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		iifname "$VH" tcp dport { 80, 443 } redirect to :$TP
	}
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "$VH" ct status dnat tcp dport $TP accept
		iifname "$VH" drop
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "$VH" drop
	}
}
NFT
MADE_NFT=1
note "sandbox $SBIP/30, host side $HOSTIP; its TCP 443/80 -> $HOSTIP:$TP (the transparent listener)"
note "nft: iifname \"$VH\" tcp dport { 80, 443 } redirect to :$TP"

# ---------------------------------------------------------------- 5. the gateway
step "5/7 the gateway: sluice ca init, sluice.yaml from examples/, sluice serve"
"$SLUICE" ca init --dir "$D/ca" | sed 's/^/   /'
"$SLUICE" ca show --dir "$D/ca" | sed 's/^/   /'
{
	cat <<YAML
# Written by scripts/demo.sh: the listeners, paths and upstream trust are the demo's;
# default: and hosts: are examples/sluice.yaml's, with one line added (allow_private).
listen:
  # The sandbox reaches the host only at $HOSTIP, so the transparent listener binds
  # that address alone (a production gateway binds "[::]:15001" and filters with nft).
  transparent: "$HOSTIP:$TP"
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
"$SLUICE" serve -c "$D/sluice.yaml" 2>"$D/sluice.log" &
GW_PID=$!
waitlisten "$HOSTIP:$TP" 10 && waitlisten "127.0.0.1:$PP" 5 ||
	die "sluice serve did not start: $(tail -n 5 "$D/sluice.log")"
note "sluice serve -c $D/sluice.yaml   (pid $GW_PID; log: sluice.log)"

# ---------------------------------------------------------------- 6. requests from the sandbox
step "6/7 requests"
FAILS=0
# sandbox CMD: curl inside the namespace, with an empty environment, trusting only the Sluice CA.
# --resolve sends api.github.com to the host side of the veth, as a sandbox's DNS would send it
# anywhere: nftables redirects the connection and the gateway decides where it really goes.
sandbox_curl() {
	ip netns exec "$NS" env -i PATH=/usr/bin:/bin \
		curl -sS --max-time 10 --cacert "$D/ca/ca.pem" --resolve "api.github.com:443:$HOSTIP" "$@"
}
# show LABEL WANT-STATUS CURL-ARGS...: runs a request, prints its answer, checks the status
show() {
	local label=$1 want=$2 out code body
	shift 2
	printf '\n   %s%s%s\n' "$B" "$label" "$N"
	out=$("$@" -w '\n%{http_code}' 2>&1) || true
	code=${out##*$'\n'}
	body=${out%$'\n'*}
	if [ -n "$body" ] && jq -e . >/dev/null 2>&1 <<<"$body"; then
		jq -c . <<<"$body" | sed 's/^/     /'
	else
		printf '%s\n' "$body" | sed 's/^/     /'
	fi
	if [ "$code" = "$want" ]; then
		printf '     %s-> HTTP %s, as expected%s\n' "$G" "$code" "$N"
	else
		printf '     %s-> HTTP %s, expected %s%s\n' "$R" "$code" "$want" "$N"
		FAILS=$((FAILS + 1))
	fi
}
show "sandbox\$ curl https://api.github.com/repos/octo/demo          (transparent; rule: allow GET /repos/**)" 200 \
	sandbox_curl https://api.github.com/repos/octo/demo
show "sandbox\$ curl -X DELETE https://api.github.com/repos/octo/demo/git/refs/heads/main   (a deny rule)" 403 \
	sandbox_curl -X DELETE https://api.github.com/repos/octo/demo/git/refs/heads/main
show "sandbox\$ curl --path-as-is https://api.github.com/repos/x/../../admin   (normalised to /admin: no rule, default deny)" 403 \
	sandbox_curl --path-as-is https://api.github.com/repos/x/../../admin
show "host\$ HTTPS_PROXY=http://127.0.0.1:$PP curl https://api.github.com/repos/octo/demo   (explicit proxy, CONNECT)" 200 \
	env -i PATH=/usr/bin:/bin HTTPS_PROXY="http://127.0.0.1:$PP" \
	curl -sS --max-time 10 --cacert "$D/ca/ca.pem" https://api.github.com/repos/octo/demo
if grep -q '/admin' "$D/nginx-access.log" 2>/dev/null; then
	printf '     %sthe upstream saw a request for /admin%s\n' "$R" "$N"
	FAILS=$((FAILS + 1))
else
	note "the upstream's access log has no /admin request: the gateway refused it before dialling"
fi

# ---------------------------------------------------------------- 7. audit, health, stop
step "7/7 the audit log ($D/audit.jsonl: one JSON line per request), health, shutdown"
for _ in $(seq 50); do
	[ "$(wc -l <"$D/audit.jsonl" 2>/dev/null || echo 0)" -ge 4 ] && break
	sleep 0.1
done
if jq -e . "$D/audit.jsonl" >/dev/null 2>&1 && [ "$(wc -l <"$D/audit.jsonl")" -ge 4 ]; then
	jq -c '{type, sandbox, dest, sni, host, method, path, verdict, rule, reason, status, bytes_down}
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
note "gateway log:"
sed 's/^/     /' "$D/sluice.log"

echo
if [ "$FAILS" -eq 0 ]; then
	printf '%sdemo ok%s (%ds); removing the namespace, the nftables table, nginx and %s\n' "$G" "$N" \
		$((SECONDS - T0)) "$D"
	exit 0
fi
printf '%sdemo: %d step(s) did not behave as expected%s\n' "$R" "$FAILS" "$N"
exit 1
