#!/usr/bin/env bash
# bench/run.sh - Sluice's benchmark test bed (see docs/performance.md).
#
# Builds a throw-away test bed (network namespace, veth pair, nftables
# redirect, nginx upstream, test PKI, the gateway in transparent mode, and
# Debian's haproxy as the reference relay) and measures, from inside the
# namespace, the same workloads on four paths: directly against nginx
# (direct), through haproxy as a bare TLS relay (relay), through the gateway
# (through), and through the gateway with a header secret injected (secret):
#   keep-alive small GETs (wrk -t2 -c64), HTTP/2 (h2load), new connections/s
#   with full TLS handshakes (bench/tlsload.c), 1 MiB downloads (wrk), p50
#   latency at low load (tlsload), idle memory; and each serving process's
#   CPU per request, per connection and per MiB.  Each figure is the median
#   of BENCH_ROUNDS rounds, the paths interleaved within each round.
# Prints the tables and writes bench/results/latest.md.
#
# Usage: sudo bench/run.sh [--direct-only]
# Environment:
#   SLUICE_BIN              use this sluice binary instead of building one
#   SLUICE_BENCH_BUILD      build directory (default /tmp/sluice-bench-build)
#   SLUICE_BENCH_CMAKE_ARGS extra arguments for cmake's configure step
#   BENCH_DURATION          seconds per throughput run (default 10)
#   BENCH_LATENCY_DURATION  seconds per latency run (default 5)
#   BENCH_CONNS             concurrent connections for newconn and the semantic row (default 50)
#   BENCH_KA_CONNS          wrk connections of the keep-alive rows (default 64, with -t2)
#   BENCH_ROUNDS            interleaved rounds; the median counts (default 3)
#   BENCH_IDLE_CONNS        idle connections for the memory figure (default 1000)
#   BENCH_KEEP=1            keep the run directory (logs, configs) afterwards
#   BENCH_ONLY              measure only these (space-separated of: mem lat ka
#                           nc big h2 semantic, and profile, which is not in the
#                           default set: perf/strace counts per request and the
#                           gateway's profile, BENCH_PROFILE_N requests, 2000);
#                           rows left out print as not run
#   BENCH_AUDIT=off         run the gateway without an audit log (to measure what
#                           the audit writer costs: compare with a run with it on)
#
# Traffic goes only over loopback and the veth pair this script creates.
# Everything it creates is removed on exit, also on failure or Ctrl-C.
set -euo pipefail

DIRECT_ONLY=0
for arg in "$@"; do
	case "$arg" in
	--direct-only) DIRECT_ONLY=1 ;;
	-h|--help) sed -n '2,35p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument: $arg" >&2; exit 2 ;;
	esac
done

if [ "$(id -u)" -ne 0 ]; then
	echo "run.sh: must run as root (netns, veth, nftables)" >&2
	exit 2
fi
for tool in ip nft nginx wrk h2load openssl cc ss timeout awk pgrep; do
	command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: missing $tool" >&2; exit 2; }
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUR=${BENCH_DURATION:-10}
LAT_DUR=${BENCH_LATENCY_DURATION:-5}
CONC=${BENCH_CONNS:-50}
IDLE_N=${BENCH_IDLE_CONNS:-1000}
BUILD=${SLUICE_BENCH_BUILD:-/tmp/sluice-bench-build}
NAME=api.example.test
T_START=$SECONDS

# Per-run names: unique by PID; the /30 and the loopback address are random.
ID=$$
NS=sb_bench_$ID
TABLE=sb_bench_$ID
VETH_H=sbb${ID}h
VETH_S=sbb${ID}s
DIR=$(mktemp -d /tmp/sluice-bench.XXXXXX)
chmod 0711 "$DIR"

GW_PID='' NGINX_PID='' HAP_PID='' IDLE_PID='' MADE_NS=0 MADE_VETH=0 MADE_NFT=0 FAILED=1
declare -A R  # R[metric.path] = value (a median over the rounds); R[metric.path.note] = note

log() { printf '[%3ds] %s\n' $((SECONDS - T_START)) "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

stop_pid() { # pid signal: signal it, wait up to 5 s, then SIGKILL
	local pid=$1 sig=$2
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	set +e
	trap - EXIT INT TERM
	stop_pid "$IDLE_PID" TERM
	stop_pid "$GW_PID" TERM
	stop_pid "$HAP_PID" TERM
	stop_pid "$NGINX_PID" QUIT
	if [ "$MADE_NS" = 1 ]; then
		# Anything left inside our own namespace was started by this run.
		for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	fi
	[ "$MADE_NFT" = 1 ] && nft delete table inet "$TABLE" 2>/dev/null
	[ "$MADE_VETH" = 1 ] && ip link del "$VETH_H" 2>/dev/null
	[ "$MADE_NS" = 1 ] && ip netns del "$NS" 2>/dev/null
	rm -rf "/etc/netns/$NS"
	if [ "$FAILED" = 1 ]; then
		for f in "$DIR"/gateway.log "$DIR"/nginx/error.log; do
			[ -s "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
		done
	fi
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "run directory kept: $DIR" >&2
	else
		rm -rf "$DIR"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { [ -z "$(ss -Htan "sport = :$1" 2>/dev/null)" ]; }
pick_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		port_free "$p" && { echo "$p"; return 0; }
	done
	return 1
}

# ---------------------------------------------------------------- build
log "building tlsload"
cc -O2 -Wall -Wextra -Wshadow -Wmissing-prototypes -Wformat=2 -Wcast-qual -Werror -o "$DIR/tlsload" "$ROOT/bench/tlsload.c" \
	"$ROOT/bench/tlsload_report.c" -lssl -lcrypto ||
	die "tlsload does not build"
TL=$DIR/tlsload

SLUICE=
GW_NOTE=
if [ "$DIRECT_ONLY" = 1 ]; then
	GW_NOTE="not measured (--direct-only)"
elif [ -n "${SLUICE_BIN:-}" ]; then
	SLUICE=$SLUICE_BIN
	[ -x "$SLUICE" ] || die "SLUICE_BIN=$SLUICE is not executable"
else
	log "building sluice (Release) in $BUILD"
	# shellcheck disable=SC2086 # word splitting of the extra args is wanted
	if timeout 900 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
	    -DSLUICE_TESTS=OFF ${SLUICE_BENCH_CMAKE_ARGS:-} >"$DIR/build.log" 2>&1 &&
	   timeout 900 cmake --build "$BUILD" --target sluice -j2 >>"$DIR/build.log" 2>&1; then
		SLUICE=$BUILD/cli/sluice
	else
		tail -n 15 "$DIR/build.log" >&2
		GW_NOTE="not measured (sluice does not build)"
		log "WARNING: sluice does not build; measuring the direct path only"
	fi
fi

# A benchmark on a busy machine measures the machine: say so in the report.
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD_START" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
	log "WARNING: load average $LOAD_START on $(nproc) CPUs before the run: figures will be noisy"
fi

# ---------------------------------------------------------------- addresses
X=
for _ in $(seq 50); do
	c=$((1 + RANDOM % 254))
	if ! ip -4 -o addr show | grep -q " 10\.200\.$c\." &&
	   ! ip -4 route show | grep -q "^10\.200\.$c\."; then X=$c; break; fi
done
[ -n "$X" ] || die "no free 10.200.X.0/30"
HOST_IP=10.200.$X.1
SBX_IP=10.200.$X.2
UPADDR=
for _ in $(seq 50); do
	c=127.$((100 + RANDOM % 100)).$((RANDOM % 256)).$((1 + RANDOM % 254))
	if [ -z "$(ss -Htan "src $c" 2>/dev/null)" ] &&
	   [ -z "$(ss -Htln 'sport = :443' 2>/dev/null | awk '$4 ~ /^(0\.0\.0\.0|\*|\[::\]):443$/')" ]; then
		UPADDR=$c; break
	fi
done
[ -n "$UPADDR" ] || die "no free loopback address for nginx (something listens on *:443?)"
DIRECT_PORT=8443
RELAY_PORT=4443  # the sandbox's destination for the relay path (redirected to haproxy, which dials it back)
TP=$(pick_port) || die "no free port"
HP=$(pick_port) || die "no free port"
PP=$(pick_port) || die "no free port"

# ---------------------------------------------------------------- test PKI
log "making the test PKI"
mkdir -p "$DIR/pki"
(
	cd "$DIR/pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout root.key -out root.pem -days 2 -subj "/CN=Sluice bench root $ID" \
	    -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout server.key -out server.csr -subj "/CN=$NAME"
	printf '%s\n' "subjectAltName=DNS:$NAME" "basicConstraints=critical,CA:FALSE" \
	    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
	openssl x509 -req -in server.csr -CA root.pem -CAkey root.key -CAcreateserial \
	    -days 2 -extfile server.ext -out server.pem
) >"$DIR/pki.log" 2>&1 || { cat "$DIR/pki.log" >&2; die "openssl failed"; }

# ---------------------------------------------------------------- nginx
log "starting nginx on $UPADDR:443 and $HOST_IP:$DIRECT_PORT"
mkdir -p "$DIR/nginx" "$DIR/www"
chmod 0755 "$DIR/www"
head -c 1048576 /dev/urandom >"$DIR/www/big"
chmod 0644 "$DIR/www/big"
cat >"$DIR/nginx/nginx.conf" <<EOF
worker_processes 2;
worker_rlimit_nofile 16384;
pid $DIR/nginx/nginx.pid;
error_log $DIR/nginx/error.log warn;
user nobody nogroup;
events { worker_connections 8192; use epoll; }
http {
    access_log off;
    default_type application/octet-stream;
    keepalive_requests 100000000;  # h2load -D sends ~100k per connection: no GOAWAY mid-run
    keepalive_timeout 300s;
    client_body_temp_path $DIR/nginx/body;
    proxy_temp_path $DIR/nginx/proxy;
    fastcgi_temp_path $DIR/nginx/fastcgi;
    uwsgi_temp_path $DIR/nginx/uwsgi;
    scgi_temp_path $DIR/nginx/scgi;
    ssl_protocols TLSv1.3;
    ssl_certificate $DIR/pki/server.pem;
    ssl_certificate_key $DIR/pki/server.key;
    server {
        listen $UPADDR:443 ssl http2;
        listen $HOST_IP:$DIRECT_PORT ssl http2;
        listen $HOST_IP:$RELAY_PORT ssl http2;   # haproxy's upstream: the original destination
        server_name $NAME;
        location = /small { default_type text/plain; return 200 "ok\n"; }
        location = /json { default_type text/plain; return 200 "ok\n"; }
        location = /big { root $DIR/www; }
        location / { return 404; }
    }
}
EOF

# ---------------------------------------------------------------- netns, veth, nft
log "creating netns $NS, veth $VETH_H/$VETH_S ($HOST_IP/30 - $SBX_IP/30), nft table $TABLE"
ip netns add "$NS"; MADE_NS=1
ip link add "$VETH_H" type veth peer name "$VETH_S"; MADE_VETH=1
ip link set "$VETH_S" netns "$NS"
ip addr add "$HOST_IP/30" dev "$VETH_H"
ip link set "$VETH_H" up
ip -n "$NS" addr add "$SBX_IP/30" dev "$VETH_S"
ip -n "$NS" link set "$VETH_S" up
ip -n "$NS" link set lo up
ip -n "$NS" route add default via "$HOST_IP"
ip netns exec "$NS" sysctl -qw net.ipv4.ip_local_port_range="1024 65000"
ip netns exec "$NS" sysctl -qw net.ipv4.tcp_tw_reuse=1
# ip netns exec bind-mounts /etc/netns/$NS/hosts over /etc/hosts.
mkdir -p "/etc/netns/$NS"
printf '127.0.0.1 localhost\n%s %s\n' "$HOST_IP" "$NAME" >"/etc/netns/$NS/hosts"

# The sandbox's TCP 443 goes to the gateway's transparent port; the port
# itself is reachable from the veth only through that redirect.
nft -f - <<EOF
table inet $TABLE {
    chain pre {
        type nat hook prerouting priority dstnat; policy accept;
        iifname "$VETH_H" tcp dport 443 redirect to :$TP
        iifname "$VETH_H" tcp dport $RELAY_PORT redirect to :$HP
    }
    chain in {
        type filter hook input priority filter; policy accept;
        iifname "$VETH_H" tcp dport $TP ct status dnat accept
        iifname "$VETH_H" tcp dport $TP drop
        iifname "$VETH_H" tcp dport $HP ct status dnat accept
        iifname "$VETH_H" tcp dport $HP drop
    }
}
EOF
MADE_NFT=1

nginx -p "$DIR/nginx" -c "$DIR/nginx/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
for _ in $(seq 50); do
	[ -n "$(ss -Htln "src $UPADDR and sport = :443")" ] && break
	kill -0 "$NGINX_PID" 2>/dev/null || die "nginx did not start"
	sleep 0.1
done
[ -n "$(ss -Htln "src $UPADDR and sport = :443")" ] || die "nginx does not listen"

# ---------------------------------------------------------------- gateway
CA_THROUGH=$DIR/ca/ca.pem
# A secret bound to the benchmark host, and the placeholder the sandbox sends for it (credentials rows).
BENCH_PH=sluice_ph_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
BENCH_SECRET=real$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
CA_DIRECT=$DIR/pki/root.pem
start_gateway() {
	local AUDIT_CONF="audit: { file: $DIR/audit.jsonl }"
	[ "${BENCH_AUDIT:-on}" = off ] && AUDIT_CONF="# no audit log (BENCH_AUDIT=off)"
	"$SLUICE" ca init --dir "$DIR/ca" >"$DIR/ca.log" 2>&1 || return 1
	[ -s "$CA_THROUGH" ] || return 1
	cat >"$DIR/sluice.yaml" <<EOF
listen: { transparent: "[::]:$TP", proxy: "127.0.0.1:$PP", admin: "unix:$DIR/admin.sock" }
user: root
ca: $DIR/ca
upstream: { ca_bundle: $DIR/pki/root.pem, resolve: { $NAME: $UPADDR } }
$AUDIT_CONF
workers: 2
limits: { conns_per_client: 4096 }
default: deny
hosts:
  $NAME:
    allow_private: true
    rules:
      - { allow: { method: GET } }
      - { id: sem-path, allow: { method: POST, path: /small } }
      - { id: sem-json, allow: { method: POST, path: /json, json: { "\$.channel": { in: [C0BOTS, C0ALERTS] } } } }
secrets:
  bench: { source: "env:SLUICE_BENCH_SECRET", placeholder: "$BENCH_PH", hosts: [ $NAME ] }
sandboxes:
  bench: { addresses: [ $SBX_IP/32 ] }
EOF
	(ulimit -n "$(ulimit -Hn)"; export SLUICE_BENCH_SECRET=$BENCH_SECRET
	 exec "$SLUICE" serve -c "$DIR/sluice.yaml") >"$DIR/gateway.log" 2>&1 &
	GW_PID=$!
	for _ in $(seq 100); do
		kill -0 "$GW_PID" 2>/dev/null || return 1
		[ -n "$(ss -Htln "sport = :$TP")" ] && return 0
		sleep 0.1
	done
	return 1
}
if [ -n "$SLUICE" ]; then
	log "starting the gateway (transparent :$TP)"
	if start_gateway; then
		sleep 1
		R[rss0.through]=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$GW_PID/status" 2>/dev/null || true)
	else
		GW_NOTE="not measured (sluice serve did not start)"
		log "WARNING: the gateway did not start; measuring the direct path only"
		for f in "$DIR/ca.log" "$DIR/gateway.log"; do [ -s "$f" ] && tail -n 15 "$f" >&2; done
		stop_pid "$GW_PID" TERM; GW_PID=
	fi
fi

# ---------------------------------------------------------------- haproxy (the reference relay)
# Debian's haproxy as a bare TLS relay on the same machine (issue 20): one static certificate for the
# test name (the one nginx has), the upstream the connection's original destination (0.0.0.0:0: haproxy
# reads SO_ORIGINAL_DST of the redirected connection), verified toward nginx; no minting, no policy, no
# audit. The same two threads as the gateway's workers, HTTP mode (it parses and re-frames like the
# gateway), upstream connections reused.
HAP_NOTE=
start_haproxy() {
	command -v haproxy >/dev/null 2>&1 || { HAP_NOTE="not measured (no haproxy: scripts/deps.sh bench installs it)"; return 1; }
	cat "$DIR/pki/server.pem" "$DIR/pki/server.key" >"$DIR/pki/haproxy.pem"
	cat >"$DIR/haproxy.cfg" <<EOF
global
    nbthread 2
    maxconn 8000
    log stdout format raw local0 err
defaults
    mode http
    log global
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
frontend relay
    bind $HOST_IP:$HP ssl crt $DIR/pki/haproxy.pem alpn h2,http/1.1
    default_backend upstream
backend upstream
    server nginx 0.0.0.0:0 ssl verify required ca-file $DIR/pki/root.pem sni str($NAME) verifyhost $NAME alpn http/1.1
EOF
	haproxy -c -f "$DIR/haproxy.cfg" >"$DIR/haproxy-check.log" 2>&1 || { HAP_NOTE="not measured (haproxy -c failed)"; return 1; }
	(ulimit -n "$(ulimit -Hn)"; exec haproxy -db -f "$DIR/haproxy.cfg") >"$DIR/haproxy.log" 2>&1 &
	HAP_PID=$!
	for _ in $(seq 50); do
		kill -0 "$HAP_PID" 2>/dev/null || break
		[ -n "$(ss -Htln "sport = :$HP")" ] && return 0
		sleep 0.1
	done
	HAP_NOTE="not measured (haproxy did not start)"
	return 1
}
if [ "$DIRECT_ONLY" = 0 ]; then
	log "starting haproxy (the reference relay, :$HP)"
	if ! start_haproxy; then
		log "WARNING: haproxy: $HAP_NOTE"
		[ -s "$DIR/haproxy.log" ] && tail -n 10 "$DIR/haproxy.log" >&2
		stop_pid "$HAP_PID" TERM; HAP_PID=
	fi
fi

# ---------------------------------------------------------------- clients
# Clients run inside the namespace with a clean environment and an explicit
# CA.  Usage: in_ns CAFILE command...
# (A command started in the background must not go through this function:
# $! would be a subshell, and signalling it would leave the client running.)
NS_ENV=(ip netns exec "$NS" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/)
in_ns() {
	local ca=$1; shift
	"${NS_ENV[@]}" SSL_CERT_FILE="$ca" CURL_CA_BUNDLE="$ca" "$@"
}
# path -> "address port cafile url-prefix"
declare -A P_ADDR P_PORT P_CA P_URL
P_ADDR[direct]=$HOST_IP;   P_PORT[direct]=$DIRECT_PORT; P_CA[direct]=$CA_DIRECT
P_URL[direct]=https://$NAME:$DIRECT_PORT
P_ADDR[through]=$HOST_IP;  P_PORT[through]=443;         P_CA[through]=$CA_THROUGH
P_URL[through]=https://$NAME
P_ADDR[relay]=$HOST_IP;    P_PORT[relay]=$RELAY_PORT;   P_CA[relay]=$CA_DIRECT
P_URL[relay]=https://$NAME:$RELAY_PORT

tlsload() { # path mode args...
	local p=$1; shift
	local mode=$1; shift
	in_ns "${P_CA[$p]}" timeout -k 5 $((DUR + LAT_DUR + 30)) "$TL" "$mode" \
	    -a "${P_ADDR[$p]}" -p "${P_PORT[$p]}" -n "$NAME" -c "${P_CA[$p]}" "$@"
}

cat >"$DIR/report.lua" <<'EOF'
done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
	    "wrk requests=%d bytes=%d duration_us=%d errors=%d status_errors=%d p50_us=%d p99_us=%d\n",
	    summary.requests, summary.bytes, summary.duration,
	    e.connect + e.read + e.write + e.timeout, e.status,
	    latency:percentile(50), latency:percentile(99)))
end
EOF
wrk_run() { # path urlpath connections [header]
	in_ns "${P_CA[$1]}" timeout -k 5 $((DUR + 30)) wrk -t1 -c"$3" -d"${DUR}s" \
	    --timeout 5s -s "$DIR/report.lua" ${4:+-H "$4"} "${P_URL[$1]}$2" | grep '^wrk '
}
kv() { # line key -> value
	printf '%s\n' "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'
}
flag_errors() { # metric path output error-keys...: a figure with errors is not a result
	local m=$1 p=$2 line=$3 k v; shift 3
	for k in "$@"; do
		v=$(kv "$line" "$k")
		if [ -z "$v" ] || [ "$v" != 0 ]; then R[$m.$p.bad]=1; fi
	done
	return 0
}

PATHS="direct"
if [ -n "$SLUICE" ] && [ -n "$GW_PID" ]; then
	log "sanity check through the gateway"
	if out=$(tlsload through latency -N 5 -d 10 2>"$DIR/sanity.err") &&
	   [ "$(kv "$out" errors)" = 0 ]; then
		PATHS="direct through"
	else
		GW_NOTE="not measured (requests through the gateway fail)"
		log "WARNING: requests through the gateway fail: $(head -c 300 "$DIR/sanity.err")"
	fi
fi
if [ -n "$HAP_PID" ]; then
	log "sanity check through haproxy"
	if out=$(tlsload relay latency -N 5 -d 10 2>"$DIR/sanity-relay.err") && [ "$(kv "$out" errors)" = 0 ]; then
		PATHS="direct relay${PATHS#direct}"
	else
		HAP_NOTE="not measured (requests through haproxy fail)"
		log "WARNING: requests through haproxy fail: $(head -c 300 "$DIR/sanity-relay.err")"
	fi
fi
log "sanity check direct"
out=$(tlsload direct latency -N 5 -d 10 2>"$DIR/sanity-direct.err") ||
	{ cat "$DIR/sanity-direct.err" >&2; die "direct requests fail"; }

ONLY=" ${BENCH_ONLY:-mem lat ka nc big h2 semantic} "
want() { [[ $ONLY == *" $1 "* ]]; }

rss_kib() { # pid -> VmRSS of it and its children, KiB
	local pid total=0 v
	for pid in "$1" $(pgrep -P "$1" 2>/dev/null); do
		v=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
		total=$((total + ${v:-0}))
	done
	echo "$total"
}

# ---------------------------------------------------------------- idle memory
# Measured first, after the warm-up above (leaf minted, pools made), so the
# delta is the connections' cost rather than one-time allocations or heap
# that earlier load runs left behind.
measure_idle() { # path pid
	local p=$1 pid=$2 before after line
	before=$(rss_kib "$pid")
	# ip and env exec, so $! is tlsload itself.
	"${NS_ENV[@]}" SSL_CERT_FILE="${P_CA[$p]}" "$TL" idle -a "${P_ADDR[$p]}" -p "${P_PORT[$p]}" -n "$NAME" \
	    -c "${P_CA[$p]}" -N "$IDLE_N" -C "$CONC" -d 40 -t 60 \
	    >"$DIR/idle-$p.out" 2>"$DIR/idle-$p.err" &
	IDLE_PID=$!
	line=
	for _ in $(seq 450); do
		line=$(grep '^ready ' "$DIR/idle-$p.out" 2>/dev/null || true)
		[ -n "$line" ] && break
		kill -0 "$IDLE_PID" 2>/dev/null || break
		sleep 0.1
	done
	# idle means idle: give the gateway one malloc_trim period (5 s) to return
	# the handshakes' freed heap before reading its resident size
	sleep 6
	after=$(rss_kib "$pid")
	# Upstream connections the gateway holds for these idle clients.
	local ups=''
	[ "$p" != direct ] &&
	    ups=", $(ss -Htn state established "( dst $UPADDR and dport = :443 )" | wc -l) upstream connections open"
	line=$(grep '^ready ' "$DIR/idle-$p.out" 2>/dev/null || true)
	stop_pid "$IDLE_PID" TERM; IDLE_PID=
	local alive; alive=$(kv "$line" alive)
	if [ -z "$line" ] || [ "${alive:-0}" -ne "$IDLE_N" ]; then
		R[mem.$p.note]="only ${alive:-0}/$IDLE_N connections open: $(head -n 3 "$DIR/idle-$p.err" | tr '\n' ' ')"
		R[mem.$p]=
		settle "$p"
		return
	fi
	R[mem.$p]=$(awk -v a="$after" -v b="$before" -v n="$IDLE_N" 'BEGIN { printf "%.1f", (a - b) / n }')
	R[rss.$p]=$(awk -v a="$after" 'BEGIN { printf "%.1f", a / 1024 }')
	R[mem.$p.note]="VmRSS $before -> $after KiB$ups"
	log "idle $p: ${R[mem.$p]} KiB/connection (${R[mem.$p.note]})"
	settle "$p"
}
# After the clients closed: wait until the server closed its side too, so
# the next run does not start with a thousand connections still open.
settle() {
	local port n=0
	case $1 in direct) port=$DIRECT_PORT ;; relay) port=$HP ;; *) port=$TP ;; esac
	for _ in $(seq 100); do
		n=$(ss -Htn state established "( src $HOST_IP and sport = :$port )" 2>/dev/null | wc -l)
		[ "$n" -eq 0 ] && return 0
		sleep 0.1
	done
	R[mem.$1.note]="${R[mem.$1.note]}; $n connections still open on the server side 10 s after the clients closed"
	log "WARNING: $1: $n connections still open on the server side 10 s after the clients closed"
}
if want mem; then
	log "idle memory: $IDLE_N connections"
	measure_idle direct "$NGINX_PID"
	[[ $PATHS == *relay* ]] && measure_idle relay "$HAP_PID"
	[[ $PATHS == *through* ]] && measure_idle through "$GW_PID"
fi

# ---------------------------------------------------------------- load runs
# CPU the server side spent (utime + stime of it, all its threads, and its
# children, in clock ticks): nginx for direct, haproxy for relay, the
# gateway for through and secret.  Divided by the work done it gives a
# per-request cost that does not depend on who was the bottleneck on this
# shared machine.
HZ=$(getconf CLK_TCK)
cpu_ticks() {
	local pid total=0 v
	for pid in "$1" $(pgrep -P "$1" 2>/dev/null); do
		v=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || true)
		total=$((total + ${v:-0}))
	done
	echo "$total"
}
server_pid() {
	case $1 in direct) echo "$NGINX_PID" ;; relay) echo "$HAP_PID" ;; *) echo "$GW_PID" ;; esac
}
declare -A SERVER_NAME=([direct]=nginx [relay]=haproxy [through]=sluice [secret]=sluice)
# Every figure is measured BENCH_ROUNDS times (default 3), the paths interleaved within each round
# (direct, relay, through, secret, then again), and the median counts: V[metric.path] holds each round's value,
# C[metric.path] each round's server CPU per unit (us).
ROUNDS=${BENCH_ROUNDS:-3}
declare -A V C
add() { V[$1]="${V[$1]:+${V[$1]} }$2"; }
addc() { C[$1]="${C[$1]:+${C[$1]} }$2"; }
median() { # values... -> the median ("" when none)
	printf '%s\n' "$@" | awk 'NF && $1 != "-" { print $1 + 0 }' | sort -g |
	    awk '{ a[NR] = $1 } END { if (NR) { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 } }'
}
cpu_per() { # ticks-before ticks-after count -> us per unit, or -
	awk -v a="$1" -v b="$2" -v n="$3" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / hz / n; else print "-" }'
}
path_header() { [ "$1" = secret ] && echo "Authorization: Bearer $BENCH_PH"; return 0; }
path_base() { [ "$1" = secret ] && echo through || echo "$1"; }

run_lat() { # path
	local p=$1 b out
	b=$(path_base "$p")
	# shellcheck disable=SC2046 # the -H pair, or nothing
	out=$(in_ns "${P_CA[$b]}" timeout -k 5 $((LAT_DUR + 30)) "$TL" latency -a "${P_ADDR[$b]}" -p "${P_PORT[$b]}" \
	    -n "$NAME" -c "${P_CA[$b]}" -d "$LAT_DUR" -N 1000000 ${BH:+-H "$BH"} 2>>"$DIR/lat-$p.err") || true
	add lat.$p "$(awk -v v="$(kv "$out" p50_us)" 'BEGIN { if (v != "") printf "%.3f", v / 1000; else print "-" }')"
	add lat99.$p "$(awk -v v="$(kv "$out" p99_us)" 'BEGIN { if (v != "") printf "%.3f", v / 1000; else print "-" }')"
	flag_errors lat "$p" "$out" errors
	R[lat.$p.note]="p90 $(kv "$out" p90_us) us, p99 $(kv "$out" p99_us) us, $(kv "$out" requests) requests, $(kv "$out" errors) errors (last round)"
}
run_wrk() { # metric path urlpath threads connections
	local m=$1 p=$2 b c0 out n v
	b=$(path_base "$p")
	c0=$(cpu_ticks "$(server_pid "$p")")
	out=$(in_ns "${P_CA[$b]}" timeout -k 5 $((DUR + 30)) wrk -t"$4" -c"$5" -d"${DUR}s" \
	    --timeout 5s -s "$DIR/report.lua" ${BH:+-H "$BH"} "${P_URL[$b]}$3" 2>>"$DIR/wrk-$m-$p.err" | grep '^wrk ') || true
	flag_errors "$m" "$p" "$out" errors status_errors
	if [ "$m" = big ]; then
		v=$(awk -v b="$(kv "$out" bytes)" -v d="$(kv "$out" duration_us)" 'BEGIN { if (d > 0) printf "%.1f", b / 1048576 / (d / 1e6); else print "-" }')
		n=$(awk -v b="$(kv "$out" bytes)" 'BEGIN { printf "%.0f", b / 1048576 }')
	else
		v=$(awk -v r="$(kv "$out" requests)" -v d="$(kv "$out" duration_us)" 'BEGIN { if (d > 0) printf "%.0f", r / (d / 1e6); else print "-" }')
		n=$(kv "$out" requests)
	fi
	add "$m.$p" "$v"
	addc "$m.$p" "$(cpu_per "$c0" "$(cpu_ticks "$(server_pid "$p")")" "${n:-0}")"
	R[$m.$p.note]="p50 $(kv "$out" p50_us) us, p99 $(kv "$out" p99_us) us, errors $(kv "$out" errors), non-2xx $(kv "$out" status_errors) (last round)"
}
run_nc() { # path
	local p=$1 c0 out
	c0=$(cpu_ticks "$(server_pid "$p")")
	out=$(tlsload "$p" newconn -C "$CONC" -d "$DUR" 2>>"$DIR/newconn-$p.err") || true
	add nc.$p "$(kv "$out" rate)"
	addc nc.$p "$(cpu_per "$c0" "$(cpu_ticks "$(server_pid "$p")")" "$(kv "$out" conns)")"
	flag_errors nc "$p" "$out" errors
	R[nc.$p.note]="p50 $(kv "$out" p50_us) us, p99 $(kv "$out" p99_us) us, $(kv "$out" conns) conns, $(kv "$out" errors) errors (last round)"
}
run_h2() { # path
	local p=$1 c0 out done_n failed proto
	c0=$(cpu_ticks "$(server_pid "$p")")
	out=$(in_ns "${P_CA[$p]}" timeout -k 5 $((DUR + 30)) h2load -c"$H2_CONNS" -m"$H2_STREAMS" -D "$DUR" \
	    --warm-up-time=1 "${P_URL[$p]}/small" 2>>"$DIR/h2load-$p.err") || true
	printf '%s\n' "$out" >>"$DIR/h2load-$p.out"
	done_n=$(printf '%s\n' "$out" | awk '/^requests:/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "succeeded,") print $i }')
	failed=$(printf '%s\n' "$out" | awk '/^requests:/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "failed,") print $i }')
	proto=$(printf '%s\n' "$out" | awk '/^Application protocol:/ { print $3 }')
	[ "${failed:-1}" = 0 ] && [ "$proto" = h2 ] || R[h2.$p.bad]=1
	add h2.$p "$(printf '%s\n' "$out" | awk '/^finished in/ { gsub(",", ""); for (i = 1; i <= NF; i++) if ($(i + 1) == "req/s") { printf "%.0f", $i; exit } }')"
	# h2load's CPU window includes its warm-up second: count it as requests at the measured rate
	addc h2.$p "$(cpu_per "$c0" "$(cpu_ticks "$(server_pid "$p")")" \
	    "$(awk -v n="${done_n:-0}" -v d="$DUR" 'BEGIN { printf "%.0f", n * (d + 1) / d }')")"
	R[h2.$p.note]="${done_n:-0} succeeded, ${failed:-?} failed, protocol ${proto:-none} (last round)"
}

KA_THREADS=2 KA_CONNS=${BENCH_KA_CONNS:-64}
BIG_THREADS=2 BIG_CONNS=4
H2_CONNS=16 H2_STREAMS=16
LOAD_PATHS=$PATHS
[[ $PATHS == *through* ]] && LOAD_PATHS="$PATHS secret"
for round in $(seq 1 "$ROUNDS"); do
	for p in $LOAD_PATHS; do
		BH=$(path_header "$p")
		if want lat; then log "round $round/$ROUNDS, latency $p: sequential keep-alive GETs for ${LAT_DUR}s"; run_lat "$p"; fi
		if want ka; then log "round $round/$ROUNDS, keep-alive $p: wrk -t$KA_THREADS -c$KA_CONNS -d${DUR}s /small"
			run_wrk ka "$p" /small "$KA_THREADS" "$KA_CONNS"; fi
		if want big; then log "round $round/$ROUNDS, 1 MiB downloads $p: wrk -t$BIG_THREADS -c$BIG_CONNS -d${DUR}s /big"
			run_wrk big "$p" /big "$BIG_THREADS" "$BIG_CONNS"; fi
		BH=
		[ "$p" = secret ] && continue
		if want nc; then log "round $round/$ROUNDS, new connections $p: tlsload newconn -C $CONC -d $DUR"; run_nc "$p"; fi
		if want h2; then log "round $round/$ROUNDS, h2 $p: h2load -c$H2_CONNS -m$H2_STREAMS -D $DUR /small"; run_h2 "$p"; fi
	done
done
# the medians: R[metric.path] the figure, R[metric.path.cpu] the server CPU per unit, R[metric.path.runs] each round's
for k in "${!V[@]}"; do
	# shellcheck disable=SC2086 # one value a word
	R[$k]=$(median ${V[$k]})
	R[$k.runs]=${V[$k]// / \/ }
done
for k in "${!C[@]}"; do
	# shellcheck disable=SC2086
	R[$k.cpu]=$(median ${C[$k]})
	R[$k.cpuruns]=${C[$k]// / \/ }
done
for k in ka nc big h2; do
	for p in direct relay through secret; do
		[ -n "${R[$k.$p.cpu]:-}" ] && R[$k.$p.note]="${R[$k.$p.note]}, ${SERVER_NAME[$p]} CPU ${R[$k.$p.cpu]} us/$(
		    case $k in ka|h2) echo request ;; nc) echo connection ;; big) echo MiB ;; esac)"
	done
done
if [[ $LOAD_PATHS == *secret* ]] && { want ka || want big; }; then
	R[cred.injected]=$(grep -c '"secrets":\[{"name":"bench"' "$DIR/audit.jsonl" || true)
	R[cred.scrubbed_bodies]=$(grep '"path":"/big"' "$DIR/audit.jsonl" | grep -c '"secrets":\[' || true)
fi

# ---------------------------------------------------------------- semantic policy
# Keep-alive POSTs of one 1 KiB JSON body through the gateway, to a path
# whose rule reads only the method and path (sem-path) and to one whose rule
# reads $.channel with `in` (sem-json: the body is held, parsed and judged
# before anything goes upstream). Same client as the keep-alive rows (wrk),
# alternated twice, the better run of each counts.
sem_run() { # key urlpath -> R[sem.key]: the better of two runs; R[sem.key.cpu]: gateway CPU per request
	local k=$1 out v c0 n
	c0=$(cpu_ticks "$GW_PID")
	out=$(in_ns "$CA_THROUGH" timeout -k 5 $((DUR + 30)) wrk -t1 -c"$CONC" -d"${DUR}s" \
	    --timeout 5s -s "$DIR/post.lua" "${P_URL[through]}$2" 2>>"$DIR/wrk-sem.err" | grep '^wrk ') || true
	flag_errors sem "$k" "$out" errors status_errors
	v=$(awk -v r="$(kv "$out" requests)" -v d="$(kv "$out" duration_us)" \
	    'BEGIN { if (d > 0) printf "%.0f", r / (d / 1e6); else print 0 }')
	R[sem.$k.runs]="${R[sem.$k.runs]:+${R[sem.$k.runs]} / }$v"
	n=$(kv "$out" requests)
	R[sem.$k.cpu]="${R[sem.$k.cpu]:+${R[sem.$k.cpu]} / }$(awk -v a="$c0" -v b="$(cpu_ticks "$GW_PID")" -v n="${n:-0}" \
	    -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.0f", (b - a) * 1e6 / hz / n; else print "-" }')"
	R[sem.$k]=$(awk -v a="${R[sem.$k]:-0}" -v b="$v" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
}
if [[ $PATHS == *through* ]] && want semantic; then
	log "semantic: keep-alive POSTs of a 1 KiB JSON body, path-only rule vs JSON rule"
	SEM_BODY=$(awk 'BEGIN { s = "{\"channel\":\"C0BOTS\",\"text\":\""; while (length(s) < 1022) s = s "x"; printf "%s\"}", s }')
	[ ${#SEM_BODY} -eq 1024 ] || die "the semantic row's body is ${#SEM_BODY} bytes, not 1024"
	{
		echo 'wrk.method = "POST"'
		echo "wrk.body = '$SEM_BODY'"
		echo 'wrk.headers["Content-Type"] = "application/json"'
		cat "$DIR/report.lua"
	} >"$DIR/post.lua"
	for _ in 1 2; do sem_run path /small; sem_run json /json; done
	if [ "${BENCH_AUDIT:-on}" != off ]; then
		R[sem.audit]="Audit lines: $(grep -c '"rule":"sem-path"' "$DIR/audit.jsonl" || true) sem-path,"
		R[sem.audit]="${R[sem.audit]} $(grep -c '"rule":"sem-json"' "$DIR/audit.jsonl" || true) sem-json."
	fi
fi

# where a request's cost goes (BENCH_ONLY=profile), then the report: two parts of this script in files of their own
. "$ROOT/bench/run_profile.sh"
. "$ROOT/bench/run_report.sh"
