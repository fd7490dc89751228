#!/usr/bin/env bash
# `sluice run` with the netns backend (sandbox-glue/netns.c, run.c, cli/run.c), end to end.
#
# A gateway (transparent listener, admin socket) and nginx as the upstream; then `sluice run -c $GWCONF -- ...`
# runs probes inside the sandbox (scripts in a workspace bound on /workspace). Checks: an allowed HTTPS request
# works with the CA variables and no -k (curl, python3), IPv6 too; a denied path and a denied plain-HTTP host get
# the gateway's 403 JSON, a denied HTTPS host is closed; TCP to a host-side listener on another port and UDP to
# a host-side listener reach nothing; the gateway's config, CA key, audit log and admin socket cannot be read;
# /proc shows only the sandbox's processes; the uid is 1000 with no capabilities; `ip route add`, `ip link set`
# and a raw socket fail; exit statuses pass through (7, 128+15); the placeholder (as `secrets list` shows it) is
# in the environment and the real value nowhere; --env; two sandboxes at once cannot reach each other; a
# SIGKILLed run's leftovers (table, veth, netns, lock) are removed by the next run; SIGTERM is forwarded to the
# command and the teardown runs; a config whose gateway cannot be started is refused; no sluice_* object is left after any
# run. Prints the start-to-exec time (--timing) of a few runs.
# Objects `sluice run` makes on the host are named from random ids (sluice_<id>, slh<id>); the trap below deletes
# every one that appeared during this test, also on failure.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

[ -x /usr/bin/bwrap ] || die "bubblewrap (/usr/bin/bwrap) is missing"

# what sluice run leaves on the host is deleted at exit, also on failure (lib.sh)
track_sandbox_objects

# ---------------------------------------------------------------- gateway, upstream, policy
SECRET_VALUE="ghs_real$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
export SLUICE_IT_RUNSECRET=$SECRET_VALUE
nginx_start
policy_base 'allow: { method: GET, path: "/ok/**" }' <<'YAML' | gw_conf
secrets:
  gh:
    source: env:SLUICE_IT_RUNSECRET
    hosts: [api.example.test]
    inject: [header:Authorization]
sandbox_env:
  GITHUB_TOKEN: gh
YAML
gw_start
PH=$("$SLUICE" secrets list -c "$GWCONF" | sed -n 's/^  placeholder: \([^ ]*\).*/\1/p' | head -n 1)
[ -n "$PH" ] || die "no placeholder from sluice secrets list"

WS=$T/ws
mkdir -p "$WS"
chown 1000:1000 "$WS"
XP=$(freeport) UP=$(freeport)

host_listeners_start "$XP"

# probes run inside the sandbox; they print "key=value" lines
cat >"$WS/net.py" <<'PY'
import socket, sys
gw = [l.split()[2] for l in open("/proc/net/route").read().splitlines()[1:] if l.split()[1] == "00000000"]
host = socket.inet_ntoa(bytes.fromhex(gw[0])[::-1]) if gw else "?"
print("host=" + host)
xp, up = int(sys.argv[1]), int(sys.argv[2])
for name, addr in (("tcp_host", host), ("tcp_loop", "127.0.0.1")):
    try:
        s = socket.create_connection((addr, xp), 3); s.settimeout(3)
        d = s.recv(64)
        print("%s=%s" % (name, "banner" if b"HOST-LISTENER" in d else "other"))
    except Exception as e:
        print("%s=fail:%s" % (name, type(e).__name__))
for name, port in (("udp_host", up), ("udp_dns", 53)):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    try:
        s.connect((host, port))  # connected: an ICMP refusal shows as an error instead of a timeout
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03api\x07example\x04test\x00\x00\x01\x00\x01", (host, port))
        d, a = s.recvfrom(2048)
        print("%s=answer" % name)
    except Exception as e:
        print("%s=fail:%s" % (name, type(e).__name__))
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("raw=ok")
except Exception as e:
    print("raw=fail:%s" % type(e).__name__)
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); print("packet=ok")
except Exception as e:
    print("packet=fail:%s" % type(e).__name__)
PY
cat >"$WS/https.py" <<'PY'
import json, urllib.request, ssl, socket
# DNS is not wired: connect to any 10.200 address, SNI and Host name the real host (the redirect takes it)
orig = socket.create_connection
socket.create_connection = lambda a, *k, **kw: orig(("10.200.0.9", a[1]), *k, **kw)
print(urllib.request.urlopen("https://api.example.test/ok/", timeout=10).read().decode().strip())
PY
chmod 644 "$WS"/*.py

RUNOPTS=(-c "$GWCONF" --workspace "$WS")
srun() { timeout 60 "$SLUICE" run "$@"; }
no_leftovers() { check_eq "$1: no sluice_* netns, table, veth or lock left" "" "$(new_objects)"; }

# ---------------------------------------------------------------- allowed, denied, CA variables
out=$(cd / && env -i PATH=/usr/bin:/bin SLUICE_IT_RUNSECRET="$SECRET_VALUE" HOMEVAR=from-launcher \
  "$SLUICE" run "${RUNOPTS[@]}" --env HOMEVAR --env FOO=bar -- sh -c '
  R=api.example.test:443:10.200.0.9
  echo "ok=$(curl -sS --max-time 10 --resolve $R https://api.example.test/ok/ 2>&1)"
  echo "py=$(python3 /workspace/https.py 2>&1 | tail -n 1)"
  echo "v6=$(curl -sS --max-time 10 --resolve "api.example.test:443:[fd00:5c::9]" https://api.example.test/ok/ 2>&1)"
  echo "path=$(curl -sS --max-time 10 --resolve $R https://api.example.test/nope 2>&1)"
  echo "plain=$(curl -sS --max-time 10 --resolve other.example.test:80:10.200.0.9 http://other.example.test/ 2>&1)"
  curl -sS --max-time 10 --resolve other.example.test:443:10.200.0.9 https://other.example.test/ok/ >/dev/null 2>&1
  echo "denyhost=$?"
  for v in SSL_CERT_FILE CURL_CA_BUNDLE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO PIP_CERT npm_config_cafile; do
    eval "echo ca_$v=\$$v"
  done
  echo "bundle_has_sluice=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)"
  echo "resolv=$(cat /etc/resolv.conf)"
  echo "gh=$GITHUB_TOKEN"; echo "homevar=$HOMEVAR"; echo "foo=$FOO"; echo "home=$HOME"; echo "pwd=$(pwd)"
  echo "env_count=$(env | wc -l)"
  env | sed "s/^/envdump=/"
  cat /proc/1/environ /proc/self/environ 2>/dev/null | tr "\0" "\n" | sed "s/^/envdump=/"
  echo "secret_var=${SLUICE_IT_RUNSECRET:-unset}"
  exit 0' 2>"$T/run1.err")
rc=$?
echo "$out" | grep -v '^envdump=' | sed 's/^/# /' | head -n 40
check_eq "sluice run exits 0 with the command" 0 "$rc"
line() { printf '%s\n' "$out" | sed -n "s/^$1=//p" | head -n 1; }
check_eq "allowed HTTPS from the sandbox (curl, no -k, no --cacert)" hello "$(line ok)"
check_eq "allowed HTTPS from the sandbox (python3 urllib, SSL_CERT_FILE)" hello "$(line py)"
check_eq "allowed HTTPS over IPv6 from the sandbox" hello "$(line v6)"
check_match "denied path: the gateway's 403 JSON" '"reason"' "$(line path)"
check_match "denied plain-HTTP host: the gateway's 403 JSON" '"reason"' "$(line plain)"
check_eq "denied HTTPS host: closed before TLS (curl exit 35)" 35 "$(line denyhost)"
for v in SSL_CERT_FILE CURL_CA_BUNDLE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO PIP_CERT npm_config_cafile; do
  check_eq "$v names the bundle" /etc/ssl/certs/ca-certificates.crt "$(line "ca_$v")"
done
sys_n=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
check_eq "the bundle inside is the system's plus the Sluice CA" $((sys_n + 1)) "$(line bundle_has_sluice)"
check_match "resolv.conf names the host side" '^nameserver 10\.200\.' "$(line resolv)"
check_eq "the placeholder (as secrets list shows it) is in GITHUB_TOKEN" "$PH" "$(line gh)"
check_eq "--env NAME copies the launcher's value" from-launcher "$(line homevar)"
check_eq "--env NAME=VALUE" bar "$(line foo)"
check_eq "HOME is the workspace" /workspace "$(line home)"
check_eq "the command starts in /workspace" /workspace "$(line pwd)"
check_match "the environment was dumped" "envdump=GITHUB_TOKEN=$PH" "$out"
check_nomatch "the real secret is nowhere in the environment (env, /proc/*/environ)" "$SECRET_VALUE" \
  "$(printf '%s\n' "$out" | grep '^envdump=')"
check_eq "the launcher's other variables are not passed" unset "$(line secret_var)"
check_nomatch "the real secret is not in the output" "$SECRET_VALUE" "$out"
check "the gateway audited the sandbox's request" audit_wait '.type=="request" and .host=="api.example.test"'
if grep -q "no POST /sandboxes" "$T/run1.err"; then
  echo "# the gateway has no POST /sandboxes yet: registration skipped with a warning"
  check_match "registration: the missing endpoint is a warning" "warning: this gateway has no POST /sandboxes" \
    "$(cat "$T/run1.err")"
else
  check_eq "registration: no error on stderr" "" "$(grep -v -e '^sluice run: timing' -e '^sluice run: warning: .* has no listen.dns' "$T/run1.err")"
  check "the audit names the sandbox (sbx-<id>)" audit_wait '(tostring | test("\"sbx-[0-9a-f]{8}\""))'
fi
no_leftovers "after a normal run"

# ---------------------------------------------------------------- escapes
out=$(srun "${RUNOPTS[@]}" -- sh -c "
  python3 /workspace/net.py $XP $UP
  for f in '$GWCONF' '$CA/ca.key' '$CA/ca.pem' '$AUDIT' '$ADMIN' /proc/$GWPID/environ /proc/1/root/etc/shadow; do
    if cat \"\$f\" >/dev/null 2>&1; then echo \"read=\$f\"; fi
  done
  curl -s --max-time 3 --unix-socket '$ADMIN' http://sluice/health >/dev/null 2>&1; echo admin=\$?
  echo uid=\$(id -u) gid=\$(id -g)
  echo caps=\$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
  echo procs=\$(ls /proc | grep -cE '^[0-9]+\$')
  echo cmds=\$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u | tr '\n' ,)
  ip route add 10.200.0.0/24 dev eth0 2>/dev/null; echo route_add=\$?
  ip route del default 2>/dev/null; echo route_del=\$?
  ip link set eth0 down 2>/dev/null; echo link_set=\$?
  nft list ruleset >/dev/null 2>&1; echo nft=\$?
  echo ls_run=\$(ls -A /run | tr '\n' ,) ls_tmp=\$(ls -A /tmp | tr '\n' ,)
  echo home_root=\$(ls /root 2>&1 | head -c 60)
  echo hostname=\$(cat /proc/sys/kernel/hostname)
  echo hosts_sandbox=\$(getent ahostsv4 sandbox | head -n 1 | cut -d' ' -f1)
  echo hosts_file=\$(grep -c . /etc/hosts)
  exit 7")
rc=$?
echo "$out" | sed 's/^/# /' | head -n 40
line() { printf '%s\n' "$out" | sed -n "s/^$1=//p" | head -n 1; }
check_eq "exit status 7 passes through" 7 "$rc"
check_match "TCP to a host-side listener on another port: never reaches it" '^(fail:|other)' "$(line tcp_host)"
check_match "TCP to 127.0.0.1 (the sandbox's own loopback) fails" '^fail:' "$(line tcp_loop)"
check_match "UDP to a host-side listener: refused (ICMP error, no answer)" '^fail:(OSError|PermissionError|ConnectionRefusedError)$' "$(line udp_host)"
check_match "UDP 53 without a DNS responder: refused (port unreachable)" '^fail:ConnectionRefusedError$' "$(line udp_dns)"
check_eq "the host-side listeners saw nothing from the sandbox" "" "$(cat "$T/hostlisten.log")"
check_match "a raw socket fails" '^fail:PermissionError' "$(line raw)"
check_match "a packet socket fails" '^fail:PermissionError' "$(line packet)"
check_eq "nothing of the gateway is readable (config, CA key and cert dir, audit, admin socket, /proc)" "" \
  "$(line read)"
check_match "the admin socket cannot be reached" '^[1-9]' "$(line admin)"
check_match "runs as uid and gid 1000" '^1000 gid=1000$' "$(line uid)"
check_eq "no effective capabilities" 0000000000000000 "$(line caps)"
check_match "/proc shows only the sandbox's own few processes" '^[1-6]$' "$(line procs)"
check_nomatch "no gateway, nginx or launcher process is visible" 'sluice|nginx|python' "$(line cmds)"
check_match "ip route add fails" '^[1-9]' "$(line route_add)"
check_match "ip route del default fails" '^[1-9]' "$(line route_del)"
check_match "ip link set fails" '^[1-9]' "$(line link_set)"
check_match "nft list ruleset fails" '^[1-9]' "$(line nft)"
check_eq "/run is empty and private" "" "$(printf '%s' "$out" | sed -n 's/^ls_run=\([^ ]*\) .*/\1/p')"
check_match "/root is not there" 'No such file' "$(line home_root)"
check_eq "the sandbox has its own hostname" sandbox "$(line hostname)"
check_eq "its host name resolves inside it from /etc/hosts (no DNS query)" 127.0.0.1 "$(line hosts_sandbox)"
check_eq "  /etc/hosts is the sandbox's own two lines, nothing of the host's" 2 "$(line hosts_file)"
no_leftovers "after the escape probes"

# ---------------------------------------------------------------- exit statuses and signals
srun "${RUNOPTS[@]}" -- sh -c 'kill -TERM $$'
check_eq "a command killed by SIGTERM: 128+15" 143 "$?"
srun -c "$GWCONF" -- /nonexistent/cmd 2>"$T/enoent.err"
rc=$?
check_match "a command that cannot be started: non-zero" '^[1-9]' "$rc"
"$SLUICE" run "${RUNOPTS[@]}" -- sh -c 'trap "echo got-term >/workspace/term; exit 3" TERM; echo up >/workspace/up; sleep 30 & wait' \
  >"$T/sig.out" 2>&1 &
SPID=$!
eventually 10 test -s "$WS/up" || bad "the signalled command did not start"
kill -TERM "$SPID"
wait "$SPID"
rc=$?
check_eq "SIGTERM to sluice run reaches the command (its trap ran)" got-term "$(cat "$WS/term" 2>/dev/null)"
check_eq "... and sluice run exits with the command's status" 3 "$rc"
no_leftovers "after SIGTERM"
rm -f "$WS/up" "$WS/term"

# ---------------------------------------------------------------- warnings for the usual mistakes (issue 24)
# this configuration has no listen.dns: said before the sandbox starts, naming the key; nothing else is warned about
srun "${RUNOPTS[@]}" -- true 2>"$T/warn.err"
check_eq "no listen.dns: the run still works" 0 "$?"
check_match "  a warning naming listen.dns" "^sluice run: warning: $GWCONF has no listen.dns: no name resolves" \
  "$(cat "$T/warn.err")"
check_nomatch "  and no other warning (listen.admin is set, the workspace is the sandbox's)" 'listen.admin|--workspace' \
  "$(cat "$T/warn.err")"
# no listen.admin
grep -v '^  admin:' "$GWCONF" >"$T/noadmin.yaml"
srun -c "$T/noadmin.yaml" -- true 2>"$T/warn-admin.err"
check_match "no listen.admin: a warning naming listen.admin" \
  "^sluice run: warning: $T/noadmin.yaml has no listen.admin \\(a unix: socket\\): no gateway for it can be found or started" \
  "$(cat "$T/warn-admin.err")"
# a workspace the sandbox's uid cannot write (root's, 0755): the warning names the uid and the owner, and it is true
mkdir -p "$T/rootws" && chown 0:0 "$T/rootws" && chmod 0755 "$T/rootws"
srun -c "$GWCONF" --workspace "$T/rootws" -- sh -c 'touch /workspace/x' 2>"$T/warn-ws.err"
rc=$?
check_match "an unwritable --workspace: a warning naming the uid and the owner" \
  "^sluice run: warning: --workspace $T/rootws is owned by root \\(uid 0, mode 0755\\): the sandbox runs as uid 1000, which cannot write it" \
  "$(cat "$T/warn-ws.err")"
check "  and indeed the write inside failed" test "$rc" -ne 0
check "  nothing was written" test ! -e "$T/rootws/x"
no_leftovers "after the warnings"

# ---------------------------------------------------------------- two sandboxes at once
cat >"$WS/listen.py" <<'PY'
import socket, sys, os, time
addr = [l.split()[3] for l in os.popen("ip -4 -o addr show dev eth0").read().splitlines()][0].split("/")[0]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(8)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", int(sys.argv[1])))
open("/workspace/peer.tmp", "w").write(addr); os.rename("/workspace/peer.tmp", "/workspace/peer")
s.settimeout(0.2); u.settimeout(0.2); got = []
end = time.time() + 20
while time.time() < end and not os.path.exists("/workspace/done"):
    for sock, kind in ((s, "tcp"), (u, "udp")):
        try:
            if kind == "tcp":
                c, a = sock.accept(); c.sendall(b"PEER\n"); c.close()
            else:
                d, a = sock.recvfrom(100); sock.sendto(b"PEER\n", a)
            got.append(kind)
        except socket.timeout:
            pass
print("listener_got=" + ",".join(got))
PY
cat >"$WS/reach.py" <<'PY'
import socket, sys, time, os
for _ in range(100):
    if os.path.exists("/workspace/peer"): break
    time.sleep(0.1)
peer = open("/workspace/peer").read().strip(); port = int(sys.argv[1])
print("peer=" + peer)
try:
    c = socket.create_connection((peer, port), 3); c.settimeout(3); d = c.recv(16)
    print("tcp=" + ("peer" if b"PEER" in d else "other"))
except Exception as e:
    print("tcp=fail:%s" % type(e).__name__)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
try:
    u.sendto(b"hi", (peer, port)); u.recvfrom(100); print("udp=peer")
except Exception as e:
    print("udp=fail:%s" % type(e).__name__)
open("/workspace/done", "w").write("1")
PY
chmod 644 "$WS"/*.py
PP2=$(shuf -i 20000-60000 -n 1)
"$SLUICE" run "${RUNOPTS[@]}" --name "itA-$ID" -- python3 /workspace/listen.py "$PP2" >"$T/a.out" 2>"$T/a.err" &
APID=$!
eventually 10 test -s "$WS/peer" || bad "sandbox A did not start its listener: $(cat "$T/a.err")"
bout=$(srun "${RUNOPTS[@]}" --name "itB-$ID" -- python3 /workspace/reach.py "$PP2" 2>"$T/b.err")
wait "$APID"
aout=$(cat "$T/a.out")
echo "$bout" | sed 's/^/# B: /'; echo "$aout" | sed 's/^/# A: /'
check_match "two sandboxes get different addresses" '^10\.200\.' "$(printf '%s\n' "$bout" | sed -n 's/^peer=//p')"
check_match "B cannot reach A's TCP listener" '^(fail:|other)' "$(printf '%s\n' "$bout" | sed -n 's/^tcp=//p')"
check_match "B gets nothing back from A's UDP listener" '^fail:' "$(printf '%s\n' "$bout" | sed -n 's/^udp=//p')"
check_eq "A's listener saw nothing" "listener_got=" "$aout"
no_leftovers "after two sandboxes"
rm -f "$WS/peer" "$WS/done"

# ---------------------------------------------------------------- SIGKILL, then the next run cleans
BEFORE_KILL=$(snap_objects)
"$SLUICE" run "${RUNOPTS[@]}" -- sh -c 'echo up >/workspace/up; sleep 61' >"$T/k.out" 2>&1 &
KPID=$!
eventually 10 test -s "$WS/up" || bad "the command to be killed did not start"
left=$(comm -13 <(printf '%s\n' "$BEFORE_KILL") <(snap_objects))
kill -KILL "$KPID"; wait "$KPID" 2>/dev/null
check_match "SIGKILL leaves a netns, a table, a veth and a lock behind" \
  '^link slh.*lock .*netns sluice_.*table sluice_' "$(printf '%s\n' "$left" | sort | tr '\n' ' ')"
check "the sandbox's command died with the launcher" eventually 5 sh -c '! pgrep -f "sleep 6[1]" >/dev/null'
srun "${RUNOPTS[@]}" -- true 2>"$T/clean.err"
check_eq "the next run succeeds" 0 "$?"
check_match "the next run says it removed leftovers" 'removed the leftovers of 1 earlier sandbox' "$(cat "$T/clean.err")"
check_eq "nothing of the killed run is left" "" "$(comm -12 <(printf '%s\n' "$left") <(snap_objects))"
no_leftovers "after the cleanup run"
rm -f "$WS/up"

# ---------------------------------------------------------------- refusals
# (a config whose gateway is not running gets one started: test_run_embedded.sh; here it cannot be)
sed "s|admin: \"unix:$ADMIN\"|admin: \"unix:$T/nodir/none.sock\"|" "$GWCONF" >"$T/other.yaml"
srun -c "$T/other.yaml" -- true 2>"$T/nogw.err"
check_eq "no gateway for the config, and none can be started there: exit 1" 1 "$?"
check_match "... with a clear message" "$T/nodir/none.sock" "$(cat "$T/nogw.err")"
srun -c "$GWCONF" --uid 0 -- true 2>/dev/null
check_eq "--uid 0 is refused (usage)" 2 "$?"
srun -c "$GWCONF" --name 'bad name' -- true 2>/dev/null
check_eq "a bad --name is refused (usage)" 2 "$?"
srun -c "$GWCONF" --env 'BAD-NAME=1' -- true 2>/dev/null
check_eq "a bad --env name is refused" 1 "$?"
srun -c "$GWCONF" 2>/dev/null
check_eq "no command: usage" 2 "$?"
no_leftovers "after the refusals"

# ---------------------------------------------------------------- timing
times=()
for i in 1 2 3 4 5; do
  t=$(srun -c "$GWCONF" --timing -- true 2>&1 | sed -n 's/.*timing: \([0-9.]*\) ms from start.*/\1/p')
  times+=("$t")
done
echo "# start-to-exec ms (5 runs): ${times[*]}"
# every run reports a figure, also `-- true`, whose exec is often too quick to see (then its exit bounds it)
check_match "--timing reports the start-to-exec time in every one of the 5 runs of -- true" \
  '^[0-9]+\.[0-9]( [0-9]+\.[0-9]){4}$' "${times[*]}"
no_leftovers "after the timing runs"

finish
