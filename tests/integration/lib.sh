# shellcheck shell=bash disable=SC2034
# tests/integration/lib.sh: harness for Sluice's integration tests. Sourced, never run on its own.
#
#   . "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"     # $1 (or $SLUICE_BIN) = path of the sluice binary
#
# Sourcing sets `set -u`, makes a per-run temp dir $T and a unique id $ID, checks the tools (a missing one is
# a loud FAIL naming its package: tests install nothing), and installs a trap (EXIT/INT/TERM) that stops every process
# started with `spawn`, deletes the namespaces, veths and nft tables made here, and removes $T (kept when
# SLUICE_IT_KEEP=1). All traffic stays on loopback and in namespaces made here. Function names are stable.
#
# Reporting
#   ok MSG / bad MSG                count and print "ok   MSG" / "FAIL MSG"
#   check MSG CMD...                ok when CMD exits 0 (its output is discarded)
#   check_eq MSG EXPECTED ACTUAL    ok when equal; a failure prints both
#   check_match MSG ERE ACTUAL      ok when ACTUAL matches the extended regex ERE
#   check_nomatch MSG ERE ACTUAL    ok when it does not
#   eventually SECS CMD...          retries CMD every 0.1 s until it succeeds or SECS pass
#   die MSG                         setup failure: FAIL MSG, log tails, exit 1
#   finish                          fails if the gateway died unasked; "NAME: P/N checks pass"; on failure dumps
#                                   log tails; exit 0 iff all passed
# Basics
#   SLUICE (absolute binary), T (temp dir), ID (6 hex), PY=/usr/bin/python3, IT=$T/it.py (client/upstream helpers)
#   CLEAN                           "env -i PATH=/usr/bin:/bin": prefix every client with it (no inherited CA vars)
#   freeport                        a free TCP port (on 0.0.0.0 and ::)
#   wait_listen PORT [SECS]         polls ss until some socket listens on PORT (default 10 s)
#   spawn LOG CMD...                starts CMD in the background (stdout+stderr to LOG), pid in $LASTPID, stopped at exit
# PKI
#   pki_init                        test root $PKI/root.pem (= $UPCA) and server cert $PKI/srv.{pem,key} whose SANs
#                                   are $UP_NAMES plus *.example.test plus $PKI_EXTRA_SAN (e.g. "IP:10.200.1.1")
#   pki_server NAME SAN,...         another leaf $PKI/NAME.{pem,key} from the root (SAN list in openssl syntax)
# Upstreams
#   UPADDR                          random 127.x.y.z (x >= 20) for this run; $UP_NAMES resolve to it in the gateway
#   nginx_start [SNIPPET_FILE]      nginx on $UPADDR:443 (TLS, srv cert) and $UPADDR:80; extra listen directives via
#                                   NGX_LISTEN_EXTRA, one per line ("10.200.1.1:443 ssl"). Root $WWW ($WWW/big: 1 MiB random).
#                                   NGINX_H2=1: port 443 speaks h2 too (ALPN h2, http/1.1).
#                                   Access log $NGXLOG, one line per request: host "request line" status body_bytes.
#                                   Locations: /ok/ -> "hello\n"; /echo-len -> $content_length; = /big; /status/204,
#                                   /status/304; /slow/ (files from $WWW at 64 KiB/s); / -> "other\n". The
#                                   snippet file is pasted inside the server block. client_max_body_size 64m.
#   pyup_start PORT [ADDR]          python TLS upstream (srv cert) on ADDR ($UPADDR) :PORT, keep-alive, logs each
#                                   request head as a JSON line to $PYUPLOG ({"method","target","version","headers":[[k,v]..]}).
#                                   /sha -> "LEN SHA256HEX" of the request body (CL or chunked; answers 100-continue),
#                                   /headers -> the head as JSON, /chunked -> chunked "abc"+"def"+"ghi",
#                                   /nolen -> no length, body "nolen-body\n" x 1000 then close,
#                                   /ws -> WebSocket handshake then echo frames, /close-mid -> CL 100000, 1000 bytes, close,
#                                   /204, /304 -> no body; anything else -> "py\n".
#   redis_start                     a redis-server of the test's own (test_fleet_*): unix socket $RSOCK ($T/redis.sock),
#                                   password $RPASS (set it first), noeviction, no persistence; again after a kill (the
#                                   same empty Redis). Sets RPID; waits for PONG. rcli ARGS: redis-cli against it.
# Gateway
#   policy_base [RULE...] < MORE    prints a policy: "default: deny", then hosts: api.example.test (allow_private)
#                                   whose rules are each RULE as "      - RULE" (default: one rule
#                                   'allow: { method: GET, path: "/ok/**" }'), then stdin verbatim (more hosts,
#                                   indented two spaces; give </dev/null for none). Pipe it to gw_conf.
#   gw_conf < POLICY                writes $GWCONF: base config then stdin (default:, hosts:, ...). Knobs, set before:
#                                   GW_USER (root), GW_PROXY ("127.0.0.1:$PP"), GW_TRANSPARENT ("[::]:$TP"),
#                                   GW_PROXY_CLIENTS (yaml flow list; omitted when empty), GW_WORKERS (2),
#                                   GW_RESOLVE (extra "name: ip" lines), GW_EXTRA (raw top-level yaml lines, e.g.
#                                   "limits: { drain: 5s }"). PP and TP are chosen once per run.
#   gw_start [ARGS]                 `ca init` (once, into $CA) then `serve -c $GWCONF ARGS`, waits for both listeners.
#                                   Sets GWPID, GWLOG (stderr+stdout, appended across restarts), AUDIT, ADMIN, CA.
#   gw_stop [SECS]                  SIGTERM, waits up to SECS (15); sets GW_RC to the exit status (or "timeout").
#                                   Call it directly, not inside $( ): it must be the shell that spawned the gateway.
#   gw_wait [SECS]                  waits (no signal) up to SECS (15) for the gateway to exit; sets GW_RC likewise
#   gw_hup                          SIGHUP
#   gw_health                       /health JSON from the admin socket
#   gw_final_checks                 the closing checks after hostile inputs: the gateway is alive, /health says ok,
#                                   its connections return to 0 (within 15 s), gw_stop exits 0, and $GWLOG has no
#                                   sanitizer report (five checks). Call finish after it.
# Clients (all bounded by timeouts, clean env)
#   pcurl ARGS...                   curl -x http://127.0.0.1:$PP --cacert $CA/ca.pem --max-time 10 -sS
#   proxy_raw [HOST PORT]           stdin bytes sent raw to the proxy listener (default 127.0.0.1:$PP); prints the
#                                   reply until close or IT_IDLE seconds of silence (default 3)
#   tunnel_raw AUTHORITY [SNI]      CONNECT AUTHORITY, then TLS trusting $CA (SNI defaults to the host part; "-"
#                                   = none), sends stdin, prints the reply. If CONNECT is not 200: prints that
#                                   reply, exit 3
#   tls_raw HOST PORT [SNI]         TLS straight to HOST:PORT trusting $CA (for the transparent path), stdin ->
#                                   reply (use with ns_exec)
#   raw_connect TARGET              raw CONNECT TARGET; prints its status, or the status of GET / inside when 200
#                                   (000 when nothing came back)
#   status_of                       stdin: an HTTP reply; prints the first status code (000 if none)
# Audit
#   audit_wait JQ_EXPR [SECS]       true when some record of $AUDIT satisfies JQ_EXPR (default 5 s); records of one
#                                   request (same id) are searched joined: a "request" with its "response" (status,
#                                   bytes, ...), an "exfiltration_attempt" with its request's path, method, ...
#   audit_get JQ_EXPR               prints the matching records of that view (compact JSON)
#   audit_view                      that view: every record, requests joined with their responses
#   audit_n JQ_EXPR                 how many records match (a half-written last line is not counted)
# Guard and namespaces
#   guard_install                   own nft table dropping and counting output to 169.254.0.0/16, 10.0.0.0/8 (but
#                                   not 10.200.0.0/16), 100.64.0.0/10, 127.0.0.1, ::1, fe80::/10, ::ffff:0:0/96,
#                                   64:ff9b::/96 (80/443 and the test ports for loopback)
#   guard_hits                      packets counted by the guard (assert it is 0)
#   netns_make TAG [v6]             namespace $NS with veth: host side $NS_HOST (10.200.S.1/30, dev $NS_VETH), inside
#                                   $NS_ADDR (.2); with v6 also $NS_HOST6/$NS_ADDR6 in fd00:5c::/64 (nodad).
#                                   Default route via the host side; forwarding from it is dropped.
#   netns_redirect [PORTS]          nft: TCP to PORTS (default "80, 443") arriving on $NS_VETH -> redirect to :$TP
#   ns_exec CMD...                  ip netns exec $NS env -i PATH=/usr/bin:/bin CMD...

set -u
PASS=0 FAIL=0
PIDS=() NETNS=() NFT=() LINKS=()
NAME=$(basename "$0" .sh)
PY=/usr/bin/python3
CLEAN="env -i PATH=/usr/bin:/bin"
ID=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
T=$(mktemp -d "/tmp/sluice-it-$NAME.XXXXXX")
chmod 755 "$T"
IT=$T/it.py
GWPID='' GWLOG=$T/gateway.log AUDIT=$T/audit.jsonl ADMIN=$T/admin.sock CA=$T/ca GWCONF=$T/sluice.yaml
UP_NAMES="api.example.test other.example.test private.example.test www.example.test git.example.test example.test"

SLUICE=${1:-${SLUICE_BIN:-}}
[ -n "$SLUICE" ] || { echo "FAIL usage: $0 PATH_TO_SLUICE (or SLUICE_BIN=...)"; exit 1; }
SLUICE=$(readlink -f "$SLUICE")
[ -x "$SLUICE" ] || { echo "FAIL no executable sluice at $SLUICE"; exit 1; }

cleanup() {
  local p n
  trap - EXIT INT TERM
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  for n in "${NFT[@]}"; do nft delete table inet "$n" 2>/dev/null; done
  for n in "${NETNS[@]}"; do ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null; ip netns del "$n" 2>/dev/null; done
  for n in "${LINKS[@]}"; do ip link del "$n" 2>/dev/null; done
  if [ "${SLUICE_IT_KEEP:-0}" = 1 ]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ok, bad, check, check_eq, check_match, check_nomatch, eventually (shared with scripts/package-check.sh)
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/checks.sh"
dump_logs() {
  local f
  for f in "$GWLOG" "$T/nginx/logs/error.log" "$T/pyup.log"; do
    [ -s "$f" ] && { echo "# --- tail $f"; tail -n 15 "$f" | sed 's/^/# /'; }
  done
  return 0
}
die() { bad "$*"; dump_logs; exit 1; }
finish() {
  if [ -n "$GWPID" ] && ! kill -0 "$GWPID" 2>/dev/null; then
    wait "$GWPID" 2>/dev/null; bad "the gateway exited on its own during the test (status $?)"
  elif [ -n "$GWPID" ]; then
    # a clean stop is part of every test: under the sanitizers, leaks make it non-zero
    gw_stop 20
    check_eq "the gateway stops cleanly on SIGTERM" 0 "$GW_RC"
  fi
  # sanitizer reports, and the gateway's own bug detector (an illegal connection state change)
  if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|illegal state change' "$GWLOG" 2>/dev/null; then
    bad "sanitizer report or illegal state change in the gateway log"
    grep -E -A12 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|illegal state change' "$GWLOG" | head -40 | sed 's/^/# /'
  fi
  echo "$NAME: $PASS/$((PASS + FAIL)) checks pass"
  [ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ] && exit 0
  dump_logs
  exit 1
}

# tools: a missing one fails the test loudly, naming its package; tests never install anything themselves
# (scripts/deps.sh test is the one list, and scripts/fresh-check.sh proves it on a new Debian root)
tool_pkg() { # TOOL: the Debian package that brings it
  case $1 in nft) echo nftables;; ip|ss) echo iproute2;; node) echo nodejs;; setpriv) echo util-linux;;
    timeout) echo coreutils;; bwrap) echo bubblewrap;; qemu-system-x86_64) echo qemu-system-x86;;
    h2load|nghttp) echo nghttp2-client;; python3) echo python3;; *) echo "$1";; esac
}
need_tool() { # TOOL...: dies unless each is on PATH (python3 means $PY)
  local t c
  for t in "$@"; do
    c=$t; [ "$t" = python3 ] && c=$PY
    command -v "$c" >/dev/null 2>&1 ||
      die "required tool $t is missing (Debian package $(tool_pkg "$t"); scripts/deps.sh test installs it)"
  done
}
need_tools() { need_tool nginx node curl git openssl nft ip ss jq setpriv timeout python3; }
need_tools
[ "$(id -u)" = 0 ] || die "integration tests run as root (netns, nftables, nginx on port 443)"

freeport() { "$PY" -c 'import socket;s=socket.socket(socket.AF_INET6);s.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_V6ONLY,0);s.bind(("::",0));print(s.getsockname()[1])'; }
wait_listen() {
  local i
  for i in $(seq 1 $((${2:-10} * 10))); do
    ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0; sleep 0.1
  done
  return 1
}
spawn() { local log=$1; shift; "$@" >"$log" 2>&1 & LASTPID=$!; PIDS+=("$LASTPID"); }

pick_loopback() {
  local a
  while :; do
    a=127.$((RANDOM % 200 + 20)).$((RANDOM % 250)).$((RANDOM % 250 + 1))
    ss -ltnH | grep -q " $a:" || { echo "$a"; return; }
  done
}
UPADDR=$(pick_loopback)
PP=$(freeport) TP=$(freeport)

# ---------------------------------------------------------------- PKI
PKI=$T/pki UPCA=$T/pki/root.pem PKI_EXTRA_SAN=${PKI_EXTRA_SAN:-}
pki_server() {
  local n=$1 san=$2
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$n" \
    -keyout "$PKI/$n.key" -out "$PKI/$n.csr" >/dev/null 2>&1 || die "pki: csr $n"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" >"$PKI/$n.ext"
  openssl x509 -req -in "$PKI/$n.csr" -CA "$PKI/root.pem" -CAkey "$PKI/root.key" -CAcreateserial -days 30 \
    -extfile "$PKI/$n.ext" -out "$PKI/$n.pem" >/dev/null 2>&1 || die "pki: sign $n"
}
pki_init() {
  local san="DNS:*.example.test" n
  mkdir -p "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj "/CN=sluice integration root $ID" \
    -keyout "$PKI/root.key" -out "$PKI/root.pem" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign >/dev/null 2>&1 || die "pki: root"
  for n in $UP_NAMES; do san="$san,DNS:$n"; done
  [ -n "$PKI_EXTRA_SAN" ] && san="$san,$PKI_EXTRA_SAN"
  pki_server srv "$san"
}

# ---------------------------------------------------------------- nginx upstream
NGXLOG=$T/nginx/logs/access.log WWW=$T/nginx/www NGX_LISTEN_EXTRA=${NGX_LISTEN_EXTRA:-}
nginx_start() {
  local d=$T/nginx extra=""
  mkdir -p "$d/logs" "$d/www/slow" "$d/tmp"
  [ -f "$PKI/srv.pem" ] || pki_init
  head -c 1048576 /dev/urandom >"$d/www/big"
  [ $# -ge 1 ] && extra=$(cat "$1")
  cat >"$d/nginx.conf" <<NGX
daemon off; user root; worker_processes 1; error_log $d/logs/error.log; pid $d/nginx.pid;
events { worker_connections 1024; }
http {
  client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy; fastcgi_temp_path $d/tmp/fcgi;
  uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
  log_format it '\$host "\$request" \$status \$body_bytes_sent';
  client_max_body_size 64m;
  server {
    listen $UPADDR:443 ssl${NGINX_H2:+ http2}; listen $UPADDR:80;
$(printf '%s\n' "${NGX_LISTEN_EXTRA}" | sed -n 's/^\(..*\)$/    listen \1;/p')
    server_name _;
    ssl_certificate $PKI/srv.pem; ssl_certificate_key $PKI/srv.key;
    access_log $NGXLOG it;
    root $d/www;
    location /ok/ { default_type text/plain; return 200 "hello\n"; }
    location = /echo-len { default_type text/plain; return 200 "\$content_length\n"; }
    location = /big { try_files /big =404; }
    location = /status/204 { return 204; }
    location = /status/304 { return 304; }
    location /slow/ { limit_rate 65536; }
$extra
    location / { default_type text/plain; return 200 "other\n"; }
  }
}
NGX
  spawn "$d/logs/stdout" nginx -c "$d/nginx.conf" -p "$d"
  eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" \
    || die "nginx did not start: $(tail -n 3 "$d/logs/error.log" "$d/logs/stdout")"
}

# ---------------------------------------------------------------- python helpers (clients + upstream)
cat >"$IT" <<'PYEOF'
import base64, hashlib, json, os, socket, ssl, sys, threading, time

IDLE = float(os.environ.get("IT_IDLE", "3"))

def readall(s, idle=IDLE, total=20.0):
    out = b""; end = time.time() + total
    s.settimeout(idle)
    while time.time() < end:
        try:
            b = s.recv(65536)
        except (socket.timeout, TimeoutError):
            break
        except (ConnectionResetError, ssl.SSLError, OSError):
            break
        if not b:
            break
        out += b
    return out

def read_head(s):
    buf = b""; s.settimeout(10)
    while b"\r\n\r\n" not in buf:
        b = s.recv(4096)
        if not b:
            break
        buf += b
        if len(buf) > 65536:
            break
    return buf

def tls(s, sni, ca):
    ctx = ssl.create_default_context(cafile=ca)
    if not sni:
        ctx.check_hostname = False
    return ctx.wrap_socket(s, server_hostname=sni or None)

def cmd_proxy_raw(host, port):
    s = socket.create_connection((host, int(port)), timeout=10)
    data = sys.stdin.buffer.read()
    if data:
        s.sendall(data)
    sys.stdout.buffer.write(readall(s))

def cmd_tunnel_raw(phost, pport, auth, sni, ca):
    s = socket.create_connection((phost, int(pport)), timeout=10)
    s.sendall(f"CONNECT {auth} HTTP/1.1\r\nHost: {auth}\r\n\r\n".encode())
    h = read_head(s)
    if not h.startswith(b"HTTP/1.1 200") and not h.startswith(b"HTTP/1.0 200"):
        sys.stdout.buffer.write(h + readall(s, 1, 3)); sys.exit(3)
    t = tls(s, None if sni == "-" else sni, ca)
    data = sys.stdin.buffer.read()
    if data:
        t.sendall(data)
    sys.stdout.buffer.write(readall(t))

def cmd_tls_raw(host, port, sni, ca):
    s = socket.create_connection((host, int(port)), timeout=10)
    t = tls(s, None if sni == "-" else sni, ca)
    data = sys.stdin.buffer.read()
    if data:
        t.sendall(data)
    sys.stdout.buffer.write(readall(t))

def cmd_raw_connect(phost, pport, target, ca):
    try:
        s = socket.create_connection((phost, int(pport)), timeout=5)
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        h = read_head(s)
        code = h.split(b"\r\n")[0].split(b" ")[1].decode()
        if code == "200":
            t = tls(s, None, ca)
            t.sendall(f"GET / HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n".encode())
            code = read_head(t).split(b"\r\n")[0].split(b" ")[1].decode()
        print(code)
    except Exception:
        print("000")

# ---- python upstream
class Up(threading.Thread):
    lock = threading.Lock()
    def __init__(self, conn, log):
        super().__init__(daemon=True); self.c = conn; self.buf = b""; self.log = log
    def fill(self):
        b = self.c.recv(65536)
        if not b:
            raise EOFError
        self.buf += b
    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l
    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d
    def send(self, status, body=b"", extra=(), length=True):
        h = f"HTTP/1.1 {status}\r\n"
        for k, v in extra:
            h += f"{k}: {v}\r\n"
        if length:
            h += f"Content-Length: {len(body)}\r\n"
        self.c.sendall(h.encode() + b"\r\n" + body)
    def run(self):
        try:
            while self.one():
                pass
        except Exception:
            pass
        try:
            self.c.close()
        except Exception:
            pass
    def one(self):
        rl = self.line().decode("latin-1")
        method, target, version = rl.split(" ", 2)
        hdrs = []
        while True:
            l = self.line()
            if not l:
                break
            k, v = l.decode("latin-1").split(":", 1)
            hdrs.append([k.strip(), v.strip()])
        hl = {k.lower(): v for k, v in hdrs}
        rec = {"method": method, "target": target, "version": version, "headers": hdrs}
        with Up.lock, open(self.log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        if hl.get("expect", "").lower() == "100-continue":
            self.c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = b""
        if "chunked" in hl.get("transfer-encoding", "").lower():
            while True:
                n = int(self.line().split(b";")[0], 16)
                if n == 0:
                    while self.line():
                        pass
                    break
                body += self.exact(n); self.exact(2)
        elif "content-length" in hl:
            body = self.exact(int(hl["content-length"]))
        path = target.split("?")[0]
        if path == "/sha":
            self.send("200 OK", f"{len(body)} {hashlib.sha256(body).hexdigest()}\n".encode())
        elif path == "/headers":
            self.send("200 OK", json.dumps(rec).encode(), [("Content-Type", "application/json")])
        elif path == "/chunked":
            self.c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n3\r\nghi\r\n0\r\n\r\n")
        elif path == "/nolen":
            self.c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"nolen-body\n" * 1000)
            return False
        elif path == "/close-mid":
            self.c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
            return False
        elif path == "/204":
            self.c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        elif path == "/304":
            self.c.sendall(b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n")
        elif path == "/ws":
            key = hl.get("sec-websocket-key", "")
            acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send("101 Switching Protocols", b"", [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                      ("Sec-WebSocket-Accept", acc)], length=False)
            while True:
                b0, b1 = self.exact(2)
                n = b1 & 0x7F
                if n == 126:
                    n = int.from_bytes(self.exact(2), "big")
                elif n == 127:
                    n = int.from_bytes(self.exact(8), "big")
                mask = self.exact(4) if b1 & 0x80 else b"\0\0\0\0"
                data = bytes(x ^ mask[i % 4] for i, x in enumerate(self.exact(n)))
                if b0 & 0x0F == 8:
                    self.c.sendall(bytes([0x88, 0]))
                    return False
                self.c.sendall(bytes([b0, len(data)]) + data if len(data) < 126 else
                               bytes([b0, 126]) + len(data).to_bytes(2, "big") + data)
        else:
            self.send("200 OK", b"py\n", [("Content-Type", "text/plain")])
        return hl.get("connection", "").lower() != "close"

def cmd_pyup(addr, port, cert, key, log):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(cert, key)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    ls = socket.socket(fam); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port))); ls.listen(128)
    while True:
        c, _ = ls.accept()
        try:
            c.settimeout(30)
            t = ctx.wrap_socket(c, server_side=True)
        except Exception:
            c.close(); continue
        Up(t, log).start()

if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
PYEOF

PYUPLOG=$T/pyup.jsonl
pyup_start() {
  [ -f "$PKI/srv.pem" ] || pki_init
  spawn "$T/pyup.log" "$PY" "$IT" pyup "${2:-$UPADDR}" "$1" "$PKI/srv.pem" "$PKI/srv.key" "$PYUPLOG"
  eventually 5 sh -c "ss -ltnH 'sport = :$1' | grep -q ." || die "python upstream did not start: $(tail -n 3 "$T/pyup.log")"
}

# ---------------------------------------------------------------- redis (the fleet tests)
RSOCK=$T/redis.sock
rcli() { REDISCLI_AUTH=$RPASS redis-cli -s "$RSOCK" "$@"; }
redis_start() {
  [ -f "$T/redis.conf" ] || printf 'port 0\nunixsocket %s\nunixsocketperm 700\ndir %s\nsave ""\nappendonly no\nrequirepass %s\nmaxmemory-policy noeviction\n' \
    "$RSOCK" "$T" "$RPASS" >"$T/redis.conf"
  spawn "$T/redis.log" redis-server "$T/redis.conf"; RPID=$LASTPID
  eventually 10 sh -c "REDISCLI_AUTH='$RPASS' redis-cli -s '$RSOCK' ping 2>/dev/null | grep -q PONG" || die "redis-server did not start"
}

# ---------------------------------------------------------------- gateway
policy_base() {
  local r
  printf 'default: deny\nhosts:\n  api.example.test:\n    allow_private: true\n    rules:\n'
  [ $# -gt 0 ] || set -- 'allow: { method: GET, path: "/ok/**" }'
  for r in "$@"; do printf '      - %s\n' "$r"; done
  cat
}
GW_USER=${GW_USER:-root} GW_PROXY_CLIENTS=${GW_PROXY_CLIENTS:-} GW_WORKERS=${GW_WORKERS:-2}
GW_RESOLVE=${GW_RESOLVE:-} GW_UPSTREAM_EXTRA=${GW_UPSTREAM_EXTRA:-} GW_EXTRA=${GW_EXTRA:-} GW_DNS=${GW_DNS:-} GW_HTTP2=${GW_HTTP2:-} GW_PROXY=${GW_PROXY:-} GW_TRANSPARENT=${GW_TRANSPARENT:-}
# tenant_upstream_start: tenant_upstream.py (numbers its connections, can answer twice) on $UPADDR:443 (TLS),
# masking $SLUICE_IT_A and $PH in its log $ULOG; for test_revoke and test_tenants
tenant_upstream_start() {
  spawn "$T/up.log" env ECHO_MASK_A="$SLUICE_IT_A" ECHO_MASK_PH_A="$PH" "$PY" "$(dirname "$(readlink -f "$0")")/tenant_upstream.py" \
    --listen "$UPADDR:443:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$ULOG"
}
gw_conf() {
  local n
  {
    echo "listen:"
    echo "  transparent: \"${GW_TRANSPARENT:-[::]:$TP}\""
    echo "  proxy: \"${GW_PROXY:-127.0.0.1:$PP}\""
    echo "  admin: \"unix:$ADMIN\""
    [ -n "$GW_PROXY_CLIENTS" ] && echo "  proxy_clients: $GW_PROXY_CLIENTS"
    [ -n "$GW_HTTP2" ] && echo "  http2: $GW_HTTP2"
    [ -n "$GW_DNS" ] && echo "  dns: \"$GW_DNS\""
    echo "user: $GW_USER"
    echo "ca: $CA"
    echo "workers: $GW_WORKERS"
    echo "upstream:"
    echo "  ca_bundle: $UPCA"
    echo "  resolve:"
    for n in $UP_NAMES; do echo "    $n: $UPADDR"; done
    [ -n "$GW_RESOLVE" ] && printf '%s\n' "$GW_RESOLVE" | sed 's/^ */    /'
    [ -n "$GW_UPSTREAM_EXTRA" ] && printf '%s\n' "$GW_UPSTREAM_EXTRA" | sed 's/^ */  /'
    echo "audit:"
    echo "  file: $AUDIT"
    [ -n "$GW_EXTRA" ] && printf '%s\n' "$GW_EXTRA"
    cat
  } >"$GWCONF"
}
gw_start() {
  [ -f "$PKI/root.pem" ] || pki_init
  if [ ! -f "$CA/ca.pem" ]; then
    "$SLUICE" ca init --dir "$CA" >"$T/ca-init.out" 2>&1 || die "sluice ca init failed: $(tail -n 2 "$T/ca-init.out")"
  fi
  echo "# --- sluice serve -c $GWCONF $* ($(date +%T))" >>"$GWLOG"
  "$SLUICE" serve -c "$GWCONF" "$@" >>"$GWLOG" 2>&1 &
  GWPID=$!; PIDS+=("$GWPID")
  wait_listen "$PP" 10 && wait_listen "$TP" 5 || die "gateway did not listen on $PP/$TP: $(tail -n 5 "$GWLOG")"
}
gw_stop() {
  GW_RC=none
  [ -n "$GWPID" ] || return 0
  kill -TERM "$GWPID" 2>/dev/null
  gw_wait "${1:-15}"
}
gw_wait() {
  local i
  GW_RC=none
  [ -n "$GWPID" ] || return 0
  for i in $(seq 1 $((${1:-15} * 10))); do
    kill -0 "$GWPID" 2>/dev/null || break; sleep 0.1
  done
  if kill -0 "$GWPID" 2>/dev/null; then GW_RC=timeout; return 0; fi
  wait "$GWPID" 2>/dev/null; GW_RC=$?
  GWPID=
}
gw_hup() { kill -HUP "$GWPID"; }
gw_health() { timeout 10 curl -sS --max-time 5 --unix-socket "$ADMIN" http://sluice/health; }
gw_final_checks() {
  check "the gateway process is still alive" kill -0 "$GWPID"
  check_eq "gateway health says ok" ok "$(gw_health | jq -r .status)"
  check "no connection is left open in the gateway (/health connections returns to 0)" \
    eventually 15 sh -c "[ \"\$(timeout 10 curl -s --max-time 5 --unix-socket '$ADMIN' http://sluice/health | jq .connections)\" = 0 ]"
  gw_stop
  check_eq "the gateway exits 0 on SIGTERM after the bad inputs" 0 "$GW_RC"
  check_nomatch "no sanitizer report or illegal state change in the gateway log" \
    'Sanitizer|runtime error|illegal state change' "$(cat "$GWLOG")"
}

# ---------------------------------------------------------------- clients
# PCURL_OPTS: extra curl options of a test (test_http11 pins --http1.1)
# approval_of PATH: the id of the waiting approval whose path (with its query) is PATH
approval_of() { "$SLUICE" approvals list -c "$GWCONF" --json 2>/dev/null | jq -r --arg p "$1" '.[] | select(.path == $p) | .id' 2>/dev/null | head -n 1; }
# wait_approval PATH CLIENT_PID: polls (10 s at most) until PATH is listed; gives up early when the client ended
wait_approval() {
  local i id
  for i in $(seq 1 50); do
    id=$(approval_of "$1"); [ -n "$id" ] && { echo "$id"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
pcurl() { $CLEAN curl -sS --max-time 10 -x "http://127.0.0.1:$PP" --cacert "$CA/ca.pem" ${PCURL_OPTS:-} "$@"; }
proxy_raw() { $CLEAN IT_IDLE="${IT_IDLE:-3}" timeout 30 "$PY" "$IT" proxy_raw "${1:-127.0.0.1}" "${2:-$PP}"; }
tunnel_raw() {
  local a=$1 sni=${2:-}
  [ -n "$sni" ] || { sni=${a%:*}; sni=${sni#[}; sni=${sni%]}; }
  $CLEAN IT_IDLE="${IT_IDLE:-3}" timeout 30 "$PY" "$IT" tunnel_raw 127.0.0.1 "$PP" "$a" "$sni" "$CA/ca.pem"
}
tls_raw() { $CLEAN IT_IDLE="${IT_IDLE:-3}" timeout 30 "$PY" "$IT" tls_raw "$1" "$2" "${3:-$1}" "$CA/ca.pem"; }
raw_connect() { $CLEAN timeout 20 "$PY" "$IT" raw_connect 127.0.0.1 "$PP" "$1" "$CA/ca.pem"; }
status_of() { head -c 200 | sed -n '1s/^HTTP\/1\.[01] \([0-9][0-9][0-9]\).*/\1/p' | grep . || echo 000; }

# ---------------------------------------------------------------- audit
# A request's decision, its outcome and its exfiltration attempts are records with one id (docs/audit-schema.md):
# the view the helpers below search joins them. A "request" record carries the members of its "response" (status,
# bytes_up/down, duration_ms, upstream_tls, scrubbed; rule and reason when the gateway ended the exchange itself);
# an "exfiltration_attempt" record carries its request's members it lacks (path, method, verdict, status, ...).
# audit_view prints that view, one compact record per line.
AUDIT_JOIN='def bare: del(.type, .seq, .time, .prev, .mac);
  (map(select(.type == "request" and .id != null)) | INDEX(.id)) as $q
  | (map(select(.type == "response" and .id != null)) | INDEX(.id)) as $r
  | .[] | if .type == "request" and .id != null and $r[.id] != null then . + ($r[.id] | bare)
          elif .type == "exfiltration_attempt" and .id != null and $q[.id] != null then ($q[.id] | bare) + .
          else . end'
audit_view() { jq -c -s "$AUDIT_JOIN" "$AUDIT" 2>/dev/null; }
# audit_n JQ_EXPR: how many records match, line by line: a line the writer is still appending (read half
# written) is not counted, and does not make the count 0
audit_n() { jq -nR "[inputs | fromjson? | select($1)] | length" "$AUDIT" 2>/dev/null || echo 0; }
audit_has() { audit_view | jq -e -s "map(select($1)) | length > 0" >/dev/null 2>&1; }
audit_wait() { eventually "${2:-5}" audit_has "$1"; }
audit_get() { audit_view | jq -c "select($1)" 2>/dev/null; }

# ---------------------------------------------------------------- guard + namespaces
GUARD=slg$ID
guard_install() {
  NFT+=("$GUARD")
  nft -f - <<NFT || die "guard table"
table inet $GUARD {
  chain out {
    type filter hook output priority -10; policy accept;
    ip daddr 10.200.0.0/16 return
    ip daddr { 169.254.0.0/16, 10.0.0.0/8, 100.64.0.0/10, 192.168.0.0/16, 172.16.0.0/12 } counter drop
    ip daddr 127.0.0.1 tcp dport { 80, 443, 8443, 22 } counter drop
    ip6 daddr ::1 tcp dport { 80, 443, 8443, 22 } counter drop
    ip6 daddr { fe80::/10, ::ffff:0:0/96, ::ffff:0:0:0/96, 64:ff9b::/32, 2002::/16 } counter drop
  }
}
NFT
}
guard_hits() { nft list table inet "$GUARD" 2>/dev/null | sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}'; }

NS='' NS_VETH='' NS_HOST='' NS_ADDR='' NS_HOST6='' NS_ADDR6=''
netns_make() {
  local tag=$1 sub h s r
  NS=sl$ID$tag h=sl$ID${tag}h s=sl$ID${tag}s
  while :; do
    sub=$((RANDOM % 250 + 1))
    ip -4 -br addr | grep -q " 10\.200\.$sub\." || break
  done
  r=$(printf '%x' $((RANDOM % 65000 + 1)))
  NS_VETH=$h NS_HOST=10.200.$sub.1 NS_ADDR=10.200.$sub.2
  ip netns add "$NS" || die "ip netns add $NS"
  NETNS+=("$NS"); LINKS+=("$h")
  ip link add "$h" type veth peer name "$s" || die "veth $h"
  ip link set "$s" netns "$NS"
  ip addr add "$NS_HOST/30" dev "$h"; ip link set "$h" up
  ip -n "$NS" link set lo up; ip -n "$NS" addr add "$NS_ADDR/30" dev "$s"; ip -n "$NS" link set "$s" up
  ip -n "$NS" route add default via "$NS_HOST"
  if [ "${2:-}" = v6 ]; then
    NS_HOST6=fd00:5c::$r:1 NS_ADDR6=fd00:5c::$r:2
    ip addr add "$NS_HOST6/112" dev "$h" nodad
    ip -n "$NS" addr add "$NS_ADDR6/112" dev "$s" nodad
    ip -n "$NS" -6 route add default via "$NS_HOST6"
  fi
  NFT+=("slf$ID$tag")
  nft -f - <<NFT || die "forward-drop table"
table inet slf$ID$tag {
  chain fwd_drop { type filter hook forward priority filter; policy accept; iifname "$h" counter drop; }
}
NFT
}
netns_redirect() {
  local tb=slr$ID${NS#sl$ID}
  NFT+=("$tb")
  nft -f - <<NFT || die "redirect table"
table inet $tb {
  chain pre {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "$NS_VETH" tcp dport { ${1:-80, 443} } redirect to :$TP
  }
}
NFT
}
ns_exec() { ip netns exec "$NS" env -i PATH=/usr/bin:/bin "$@"; }

# ---------------------------------------------------------------- objects `sluice run` makes on the host
# snap_objects: its netns, nft tables, veths and lock files (named from random ids), one per line, sorted.
# track_sandbox_objects: from now on, new_objects lists those that appeared, and the exit trap deletes them.
snap_objects() {
  { ls /run/netns 2>/dev/null | grep -E '^sluice_[0-9a-f]{8}$' | sed 's/^/netns /'
    nft list tables 2>/dev/null | grep -E '^table inet sluice_[0-9a-f]{8}$' | sed 's/^table inet /table /'
    ls /sys/class/net 2>/dev/null | grep -E '^slh[0-9a-f]{8}$' | sed 's/^/link /'
    ls /run/sluice/sandboxes 2>/dev/null | grep -E '^[0-9a-f]{8}\.lock$' | sed 's/^/lock /'
  } | sort
}
new_objects() { comm -13 <(printf '%s\n' "$SBX_BEFORE") <(snap_objects) | grep . ; }
sandbox_cleanup() {
  local kind name
  while read -r kind name; do
    case $kind in
      netns) NETNS+=("$name");; table) NFT+=("$name");; link) LINKS+=("$name");;
      lock) rm -f "/run/sluice/sandboxes/$name";;
    esac
  done < <(new_objects)
  cleanup
}
track_sandbox_objects() { SBX_BEFORE=$(snap_objects); trap sandbox_cleanup EXIT; }

# host_listeners_start PORT: TCP (sends a banner) and UDP (answers) listeners on every host address that a
# sandbox must not reach; each logs what reaches it in $T/hostlisten.log, which starts empty after a positive
# control from the host itself.
host_listeners_start() {
  cat >"$T/hostlisten.py" <<'PY'
import socket, sys, threading
port, log = int(sys.argv[1]), sys.argv[2]
def note(s):
    with open(log, "a") as f: f.write(s + "\n")
def tcp():
    s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0); s.bind(("::", port)); s.listen(16)
    while True:
        c, a = s.accept(); note("tcp %s" % (a[0],)); c.sendall(b"HOST-LISTENER\n"); c.close()
def udp():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    while True:
        d, a = s.recvfrom(2048); note("udp %s" % (a[0],)); s.sendto(b"HOST-UDP\n", a)
threading.Thread(target=tcp, daemon=True).start(); udp()
PY
  : >"$T/hostlisten.log"
  spawn "$T/hostlisten.out" "$PY" "$T/hostlisten.py" "$1" "$T/hostlisten.log"
  wait_listen "$1" 5 || die "host listener did not start"
  check_match "control: the host-side TCP listener answers on the host" HOST-LISTENER \
    "$(timeout 5 "$PY" -c "import socket;s=socket.create_connection(('127.0.0.1',$1),3);print(s.recv(64).decode())" 2>&1)"
  : >"$T/hostlisten.log"
}
