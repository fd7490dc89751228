#!/usr/bin/env bash
# tests/integration/test_qemu_boot.sh: the qemu backend end to end, without the gateway: builds (or reuses) the
# test kernel and initramfs with scripts/vm-image.sh, boots a -M microvm guest under TCG on a tap inside a
# namespace of its own, and checks what the guest's /init (sandbox-glue/vm-init.sh) and the command line written
# by sandbox-glue/qemu.c give the workload:
#   - eth0 with its IPv4 and IPv6 addresses, the default routes, resolv.conf naming the host side;
#   - the CA from the appended archive (qemu_initrd_compose): curl over HTTPS to a server whose certificate comes
#     from that CA succeeds (v4 and v6), to a server with a certificate from another CA fails (curl 60);
#   - the placeholders from sluice.env.*, the argv from sluice.cmd (words with blanks and quotes intact);
#   - a TCP connection to a closed port fails; the command's exit status comes back as "SLUICE_EXIT 7";
#   - and, in a second boot without the CA archive, /init refuses: a clear error and "SLUICE_EXIT 125".
# It prints the boot times (QEMU start to the first guest line, to /init, to SLUICE_EXIT).
#
# The image is cached in $SLUICE_VM_CACHE (default /var/cache/sluice-test-vm), so the download (~70 MB) is paid
# once per machine. If the kernel package cannot be downloaded, the test fails with that reason.
# The helper binary is test_qemu (tests/unit/sandbox/test_qemu.c), found next to the sluice binary's build dir
# or given as $TEST_QEMU_BIN.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
BUILD=$(dirname "$(dirname "$SLUICE")")
HELPER=${TEST_QEMU_BIN:-$BUILD/tests/unit/sandbox/test_qemu}
CACHE=${SLUICE_VM_CACHE:-/var/cache/sluice-test-vm}
[ -x "$HELPER" ] || die "no test_qemu helper at $HELPER (build the test_qemu target, or set TEST_QEMU_BIN)"
need_tool qemu-system-x86_64

# --- the image (cached across runs) ----------------------------------------------------------------------------
t0=$SECONDS
if ! bash "$SRC/scripts/vm-image.sh" "$CACHE" >"$T/vm-image.log" 2>&1; then
  sed 's/^/# /' "$T/vm-image.log" | tail -n 15
  die "scripts/vm-image.sh could not build the VM image: $(tail -n 1 "$T/vm-image.log")"
fi
sed 's/^/# /' "$T/vm-image.log"
echo "# image ready in $((SECONDS - t0)) s: $(du -h --apparent-size "$CACHE/vmlinux" | cut -f1) vmlinux," \
  "$(du -h --apparent-size "$CACHE/initrd.gz" | cut -f1) initrd.gz"

# --- the namespace, its tap and the servers --------------------------------------------------------------------
X=$((RANDOM % 200 + 40))
NSQ=sbq_$ID TAP=sbqt$ID
H4=10.200.$X.1 G4=10.200.$X.2
H6=fd00:5c::$(printf '%x' "$X"):1 G6=fd00:5c::$(printf '%x' "$X"):2
PORT=8443 BADPORT=9443 CLOSED=9
ip netns add "$NSQ" || die "ip netns add $NSQ"
NETNS+=("$NSQ")
ip -n "$NSQ" link set lo up
ip -n "$NSQ" tuntap add dev "$TAP" mode tap || die "tuntap add $TAP"
ip -n "$NSQ" addr add "$H4/30" dev "$TAP"
ip -n "$NSQ" addr add "$H6/126" dev "$TAP" nodad
ip -n "$NSQ" link set "$TAP" up || die "cannot bring up $TAP"

pki_init
pki_server qemu "IP:$H4,IP:$H6"
# a server whose certificate the guest must not trust: a self-signed one
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=untrusted $ID" \
  -addext "subjectAltName=IP:$H4" -keyout "$PKI/bad.key" -out "$PKI/bad.pem" >/dev/null 2>&1 || die "pki: bad"
cat >"$T/srv.py" <<'PY'
import http.server, socket, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"sluice-qemu-ok " + self.path.encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, fmt, *args):
        sys.stdout.write("%s %s\n" % (self.client_address[0], fmt % args))
        sys.stdout.flush()
class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
def serve(port, cert, key):
    srv = S(("::", port), H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
serve(int(sys.argv[4]), sys.argv[5], sys.argv[6])
print("ready", flush=True)
threading.Event().wait()
PY
spawn "$T/srv.log" ip netns exec "$NSQ" "$PY" -u "$T/srv.py" "$PORT" "$PKI/qemu.pem" "$PKI/qemu.key" \
  "$BADPORT" "$PKI/bad.pem" "$PKI/bad.key"
eventually 10 grep -q ready "$T/srv.log" || die "the HTTPS test server did not start: $(cat "$T/srv.log")"

# --- boot ------------------------------------------------------------------------------------------------------
# boot LOG INITRD ENV_ARGS... -- CMD...: runs the microVM (bounded), sets BOOT_FIRST, BOOT_INIT, BOOT_READY,
# BOOT_EXIT (milliseconds from QEMU's start to the first guest line, to /init's first line, to the command's start,
# to SLUICE_EXIT; "-" if never), BOOT_END (QEMU gone) and QEMU_RC.
boot() {
  local log=$1 initrd=$2 start now pid
  shift 2
  local args=()
  mapfile -t args < <("$HELPER" --argv --kernel "$CACHE/vmlinux" --initrd "$initrd" --tap "$TAP" --id "00${ID}" \
    --sbx4 "$G4" --host4 "$H4" --sbx6 "$G6" --host6 "$H6" --memory 256 --log "$log" "$@")
  [ ${#args[@]} -gt 10 ] || die "test_qemu --argv failed"
  printf '%s\n' "${args[@]}" >"$log.argv"
  : >"$log"
  BOOT_FIRST=- BOOT_INIT=- BOOT_READY=- BOOT_EXIT=-
  start=$(date +%s%N)
  timeout 90 ip netns exec "$NSQ" "${args[@]}" </dev/null >"$log.qemu" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  while kill -0 "$pid" 2>/dev/null; do
    now=$(( ($(date +%s%N) - start) / 1000000 ))
    [ "$BOOT_FIRST" = - ] && [ -s "$log" ] && BOOT_FIRST=$now
    [ "$BOOT_INIT" = - ] && grep -q 'sluice-init: start' "$log" && BOOT_INIT=$now
    [ "$BOOT_READY" = - ] && grep -q 'sluice-init: ready' "$log" && BOOT_READY=$now
    [ "$BOOT_EXIT" = - ] && grep -q '^SLUICE_EXIT' "$log" && BOOT_EXIT=$now
    sleep 0.05
  done
  wait "$pid"
  QEMU_RC=$?
  sed -i 's/\r$//' "$log"  # the guest's tty writes CR LF
  now=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$BOOT_FIRST" = - ] && [ -s "$log" ] && BOOT_FIRST=$now
  [ "$BOOT_EXIT" = - ] && grep -q '^SLUICE_EXIT' "$log" && BOOT_EXIT=$now
  BOOT_END=$now
}
ms() { [ "$1" = - ] && echo never || printf '%d.%02d s' $(($1 / 1000)) $(($1 % 1000 / 10)); }

"$HELPER" --compose "$CACHE/initrd.gz" "$UPCA" "$T/run.img" || die "test_qemu --compose failed"

# the workload: each probe prints one tagged line; the status 7 must come back
read -r -d '' WORK <<EOF
echo "ARGV [\$1] [\$2]"
echo "ENV [\$GITHUB_TOKEN] [\$OPENAI_API_KEY]"
echo "RESOLV [\$(grep nameserver /etc/resolv.conf | tr '\n' ' ')]"
echo "ROUTE [\$(ip route | grep default)] [\$(ip -6 route | grep default)]"
r=\$(curl -sS --max-time 15 https://$H4:$PORT/allowed-v4 2>&1); echo "CURL4 rc=\$? [\$r]"
r=\$(curl -sS --max-time 15 "https://[$H6]:$PORT/allowed-v6" 2>&1); echo "CURL6 rc=\$? [\$r]"
r=\$(curl -sS --max-time 15 https://$H4:$BADPORT/untrusted 2>&1); echo "CURLBAD rc=\$?"
nc -w 3 $H4 $CLOSED </dev/null >/dev/null 2>&1; echo "NC rc=\$?"
exit 7
EOF
boot "$T/serial1.log" "$T/run.img" --env GITHUB_TOKEN=sluice-ph-GITHUB_TOKEN-0a1b --env OPENAI_API_KEY=ph_2 \
  -- sh -c "$WORK" sluice-work "it's one word" 'two "quoted"'
S1=$(cat "$T/serial1.log")
echo "# boot 1 (TCG): first guest line after $(ms "$BOOT_FIRST"), /init after $(ms "$BOOT_INIT"), command" \
  "started after $(ms "$BOOT_READY"), SLUICE_EXIT after $(ms "$BOOT_EXIT"), QEMU gone after $(ms "$BOOT_END")"
check_eq "QEMU exits 0 after the guest powers off" 0 "$QEMU_RC"
check_match "the guest's /init starts" '^sluice-init: start' "$S1"
check_eq "the command's status comes back" "SLUICE_EXIT 7" "$(grep '^SLUICE_EXIT' "$T/serial1.log")"
check_eq "SLUICE_EXIT is the guest's last line but the kernel's" "SLUICE_EXIT 7" \
  "$(grep -v '^\[ *[0-9.]*\]' "$T/serial1.log" | tail -n 1)"
check_eq "argv words with blanks and quotes arrive intact" "ARGV [it's one word] [two \"quoted\"]" \
  "$(grep '^ARGV' "$T/serial1.log")"
check_eq "placeholders from sluice.env.* are exported" "ENV [sluice-ph-GITHUB_TOKEN-0a1b] [ph_2]" \
  "$(grep '^ENV' "$T/serial1.log")"
check_eq "resolv.conf names the host side (v4 and v6)" "RESOLV [nameserver $H4 nameserver $H6 ]" \
  "$(grep '^RESOLV' "$T/serial1.log")"
check_match "default routes via the host side" "^ROUTE \[default via $H4 dev eth0.*\] \[default via $H6 dev eth0" \
  "$(grep '^ROUTE' "$T/serial1.log")"
check_eq "HTTPS over IPv4 with the delivered CA" "CURL4 rc=0 [sluice-qemu-ok /allowed-v4]" \
  "$(grep '^CURL4' "$T/serial1.log")"
check_eq "HTTPS over IPv6 with the delivered CA" "CURL6 rc=0 [sluice-qemu-ok /allowed-v6]" \
  "$(grep '^CURL6' "$T/serial1.log")"
check_eq "a certificate from another CA is refused (curl 60)" "CURLBAD rc=60" "$(grep '^CURLBAD' "$T/serial1.log")"
check_match "a TCP connection to a closed port fails" '^NC rc=[1-9]' "$(grep '^NC' "$T/serial1.log")"
check_match "the server saw the guest's own addresses" "^(::ffff:)?$G4 \"GET /allowed-v4" "$(cat "$T/srv.log")"
check_match "the server saw the guest's IPv6 address" "^$G6 \"GET /allowed-v6" "$(cat "$T/srv.log")"
check_nomatch "no kernel panic or oops" 'Kernel panic|Oops|BUG:' "$S1"
if [ "$BOOT_EXIT" != - ] && [ "$BOOT_EXIT" -lt 60000 ]; then
  ok "the boot is bounded (SLUICE_EXIT before 60 s)"
else
  bad "the boot is bounded (SLUICE_EXIT after $(ms "$BOOT_EXIT"))"
fi

# --- a boot without the CA archive: /init refuses to run the command --------------------------------------------
boot "$T/serial2.log" "$CACHE/initrd.gz" -- sh -c 'echo COMMAND-RAN'
S2=$(cat "$T/serial2.log")
echo "# boot 2 (TCG, no CA): /init after $(ms "$BOOT_INIT"), SLUICE_EXIT after $(ms "$BOOT_EXIT")"
check_eq "without the CA QEMU still exits 0 (powered off)" 0 "$QEMU_RC"
check_match "without the CA /init says why" 'sluice-init: error: no CA archive' "$S2"
check_eq "without the CA the status is 125" "SLUICE_EXIT 125" "$(grep '^SLUICE_EXIT' "$T/serial2.log")"
check_nomatch "without the CA the command never runs" 'COMMAND-RAN' "$S2"

if [ "$FAIL" -ne 0 ]; then
  for f in "$T/serial1.log" "$T/serial1.log.qemu" "$T/serial2.log" "$T/serial2.log.qemu" "$T/srv.log"; do
    [ -s "$f" ] && { echo "# --- tail $f"; tail -n 25 "$f" | sed 's/^/# /'; }
  done
fi
finish
