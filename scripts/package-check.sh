#!/usr/bin/env bash
# The Debian package, checked end to end (issue 21). Run as root from the checkout; scripts/test.sh calls it.
#
#   1. build: `dpkg-buildpackage -us -uc -b` in a copy of the tree (git's files, never build/) -> sluice_<v>_amd64.deb
#   2. lintian: no errors; the man pages render with man(1)
#   3. a fresh Debian 12 base root (scripts/fresh-check.sh --base: a new copy of debootstrap's cached output),
#      into which `apt-get install ./sluice_*.deb` runs with the root's own apt sources: its
#      declared dependencies bring the libraries
#   4. `systemd-analyze verify --root` accepts the installed unit; `systemd-analyze security --offline=yes` gives
#      an exposure of at most $SLUICE_EXPOSURE_MAX (2.0)
#   5. the unit's own start, by hand (no systemd runs here), in a network namespace of this script: ExecStartPre
#      lines, then ExecStart, as User= with UMask= and a fresh RuntimeDirectory; NOTIFY_SOCKET is a datagram
#      socket this script owns: READY=1, a request served (a 403 from the shipped deny-all policy, then a request
#      intercepted with the CA the first start made, to an upstream in the namespace), ExecReload's SIGHUP
#      (RELOADING=1 ... READY=1), SIGTERM (STOPPING=1)
#   6. faults: a policy that does not load makes ExecStartPre fail with file:line:col and nothing listens; an
#      upgrade with a modified conffile stops at dpkg's conffile prompt (never a silent overwrite), --force-confold
#      keeps it; the CA and the audit file survive a reinstall and an upgrade; remove keeps everything; purge
#      removes /etc/sluice and /var/lib/sluice and keeps /var/log/sluice
#
# Prints "ok"/"FAIL" lines, the .deb size, the exposure and the time of each phase; exits 0 iff all passed.
# Environment: SLUICE_PKG_KEEP=1 keeps the work dir,
# SLUICE_EXPOSURE_MAX (2.0). Network: the Debian archive (apt-get inside the root); all test traffic stays in a
# namespace made here.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
TOP=$PWD
PY=/usr/bin/python3
ID=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
W=$(mktemp -d /var/tmp/sluice-pkgcheck.XXXXXX)
NS=slpkg$ID
EXPOSURE_MAX=${SLUICE_EXPOSURE_MAX:-2.0}
PASS=0 FAIL=0 PIDS=()
T0=$(date +%s.%N)

cleanup() {
  local p
  trap - EXIT INT TERM
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  if [ "${SLUICE_PKG_KEEP:-0}" = 1 ]; then echo "# kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. tests/integration/checks.sh   # ok, bad, check, check_eq, check_match, check_nomatch, eventually
die() { bad "$*"; finish; }
PHASE_T=$(date +%s.%N) TIMES=()
phase() {
  local now; now=$(date +%s.%N)
  [ -n "${PHASE:-}" ] && TIMES+=("$(printf '%s %.1fs' "$PHASE" "$(echo "$now - $PHASE_T" | bc)")")
  PHASE=$1 PHASE_T=$now
  [ -n "$1" ] && echo "== $1"
}
finish() {
  phase ""
  echo "package-check times: ${TIMES[*]}; total $(printf '%.1fs' "$(echo "$(date +%s.%N) - $T0" | bc)")"
  echo "package-check: $PASS/$((PASS + FAIL)) checks pass"
  [ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ] && exit 0
  exit 1
}
[ "$(id -u)" = 0 ] || { echo "FAIL run as root (debootstrap root, namespaces)"; exit 1; }
for t in dpkg-buildpackage lintian scdoc systemd-analyze zstd bc ip ss curl openssl man; do
  command -v "$t" >/dev/null || die "missing tool $t (scripts/deps.sh test)"
done

# ---------------------------------------------------------------- the fresh base root and how to enter it
# scripts/fresh-check.sh owns the pristine root and its cache (a new copy of debootstrap's output each time);
# scripts/fresh-enter.sh enters it (mount and PID namespace, pivot_root, the caller's network namespace, an empty
# environment: a variable CMD needs goes on its command line)
fresh_root() {
  scripts/fresh-check.sh --base "$1" >"$W/fresh-check.log" 2>&1 || { tail -n 20 "$W/fresh-check.log"; return 1; }
}
enter() { scripts/fresh-enter.sh "$@"; }

# ---------------------------------------------------------------- 1. build
phase build
VERSION=$(dpkg-parsechangelog -l debian/changelog -S Version)
UPVER=$(sed -n 's/^#define SLUICE_VERSION "\(.*\)"/\1/p' common/sluice.h)
check_eq "debian/changelog's version is the program's (common/sluice.h)" "$UPVER" "${VERSION%%-*}"
SRC=$W/src/sluice-$VERSION
mkdir -p "$SRC"
git ls-files -co --exclude-standard | grep -v '^build' | tar -cf - -T - | tar -C "$SRC" -xf -
(cd "$SRC" && dpkg-buildpackage -us -uc -b -j"${JOBS:-2}") >"$W/build.log" 2>&1
rc=$?
[ "$rc" = 0 ] || { tail -n 30 "$W/build.log"; die "dpkg-buildpackage -us -uc -b failed ($rc)"; }
DEB=$W/src/sluice_${VERSION}_amd64.deb
check "dpkg-buildpackage made sluice_${VERSION}_amd64.deb" test -s "$DEB"
SIZE=$(stat -c %s "$DEB")
echo "# .deb size: $SIZE bytes ($(dpkg-deb -f "$DEB" Installed-Size) KiB installed)"
deps=$(dpkg-deb -f "$DEB" Depends)
for lib in libssl3 libevent-2.1-7 libevent-openssl-2.1-7 libnghttp2-14 libpcre2-8-0 libyaml-0-2 libjansson4 libsystemd0 adduser procps; do
  check_match "Depends names $lib" "(^|, )$lib( |,|$)" "$deps"
done
check_match "the conffiles are the configuration and the logrotate stanza" \
  '^/etc/logrotate.d/sluice /etc/sluice/sluice.yaml $' "$(dpkg-deb -I "$DEB" conffiles | sort | tr '\n' ' ')"

phase lintian
out=$(lintian --fail-on error "$W/src/sluice_${VERSION}_amd64.changes" 2>&1); rc=$?
check_eq "lintian reports no errors" 0 "$rc"
printf '%s\n' "$out" | grep -E '^[EW]: ' | sed 's/^/# lintian: /'
dpkg-deb -x "$DEB" "$W/x"
for m in man1/sluice.1 man5/sluice.yaml.5; do
  txt=$(MANWIDTH=100 man -l "$W/x/usr/share/man/$m.gz" 2>&1)
  check_match "man -l $m renders" '^(SLUICE|sluice)' "$txt"
done
# sluice(1) is consistent with --help: every command of `sluice --help` and every option of every --help has its
# entry; sluice.yaml(5) names every key the loader knows (the key tables of policy/*.c)
man1=$(MANWIDTH=200 man -l "$W/x/usr/share/man/man1/sluice.1.gz" 2>/dev/null | col -b)
B=$W/x/usr/bin/sluice
# (a here-string, not printf | grep -q: under pipefail, grep -q exiting at an early match kills printf with SIGPIPE
# once the page outgrows the pipe buffer, and the check fails on a key that is there)
cmds=$("$B" --help | sed -n '/^commands:/,/^$/p' | awk 'NF && !/commands:/ {print $1}')
missing=""
for c in $cmds; do grep -qE "^ +$c( |$)" <<<"$man1" || missing+=" $c"; done
check_eq "sluice(1) has an entry for every command of --help" "" "$missing"
helps=$(for c in "" "ca init" "ca show" serve "policy check" "secrets list" run sandboxes approvals audit \
  "audit verify" "audit summary" "audit keygen" version; do "$B" $c --help 2>&1; done)
missing=""
for o in $(printf '%s' "$helps" | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
  grep -qF -- "$o" <<<"$man1" || missing+=" $o"
done
check_eq "sluice(1) names every option of every --help" "" "$missing"
man5=$(MANWIDTH=200 man -l "$W/x/usr/share/man/man5/sluice.yaml.5.gz" 2>/dev/null | col -b)
keys=$($PY - policy/*.c <<'PY'
import re, sys
for f in sys.argv[1:]:
    s = open(f).read()
    for m in re.finditer(r'static const char \*const \w*keys\w*\[\w*\]\s*=\s*\{(.*?)\};', s, re.S):
        print("\n".join(re.findall(r'"([^"]+)"', m.group(1))))
PY
)
missing=""
# each key as a term of its own (bold, *key*, in the scdoc source) and in the installed page
for k in $(printf '%s\n' "$keys" | sort -u); do
  grep -qF -- "*$k*" docs/man/sluice.yaml.5.scd && grep -qw -- "$k" <<<"$man5" || missing+=" $k"
done
check "the loader's key tables were found" test "$(printf '%s\n' "$keys" | wc -l)" -gt 50
check_eq "sluice.yaml(5) names every key the loader accepts" "" "$missing"

# ---------------------------------------------------------------- 3. install into a fresh base root
phase "fresh root + apt-get install"
R=$W/root
fresh_root "$R" || die "no fresh base root"
check "the base root has no sluice user yet" sh -c "! grep -q '^sluice:' '$R/etc/passwd'"
cp "$DEB" "$R/tmp/"
enter "$R" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ./tmp/$(basename "$DEB")" \
  >"$W/apt.log" 2>&1
rc=$?
[ "$rc" = 0 ] || { tail -n 20 "$W/apt.log"; die "apt-get install ./$(basename "$DEB") failed in the fresh root"; }
ok "apt-get install ./$(basename "$DEB") in the fresh root (its dependencies from the root's own sources)"
check "/usr/bin/sluice runs in the root" enter "$R" /usr/bin/sluice version
check "a sluice system user was created" sh -c "grep -q '^sluice:x:[0-9]*:[0-9]*:.*:/var/lib/sluice:/usr/sbin/nologin' '$R/etc/passwd'"
SUID=$(awk -F: '$1 == "sluice" {print $3}' "$R/etc/passwd")
check "the sluice user is a system user (uid < 1000)" test "${SUID:-1000}" -lt 1000
check_eq "/var/lib/sluice is sluice's, 0700" "sluice:sluice 700" "$(enter "$R" stat -c '%U:%G %a' /var/lib/sluice)"
check_eq "/var/log/sluice is sluice's, 0750" "sluice:sluice 750" "$(enter "$R" stat -c '%U:%G %a' /var/log/sluice)"
check_eq "/etc/sluice/sluice.yaml is root:sluice 0640" "root:sluice 640" "$(enter "$R" stat -c '%U:%G %a' /etc/sluice/sluice.yaml)"
check_match "dpkg lists /etc/sluice/sluice.yaml as a conffile" '/etc/sluice/sluice.yaml [0-9a-f]{32}' \
  "$(enter "$R" dpkg-query -W -f='${Conffiles}' sluice)"
check_match "the shipped configuration says default: deny" '^default: deny' "$(cat "$R/etc/sluice/sluice.yaml")"
check "no CA is made at install (the first start makes it)" test ! -e "$R/var/lib/sluice/ca"
out=$(enter "$R" setpriv --reuid=sluice --regid=sluice --clear-groups /usr/bin/sluice policy check /etc/sluice/sluice.yaml 2>&1)
check_eq "sluice policy check /etc/sluice/sluice.yaml passes (as sluice)" "/etc/sluice/sluice.yaml: ok" "$out"
check "/etc/logrotate.d/sluice is installed" test -s "$R/etc/logrotate.d/sluice"
check "the man pages are installed" test -s "$R/usr/share/man/man1/sluice.1.gz" -a -s "$R/usr/share/man/man5/sluice.yaml.5.gz"

# ---------------------------------------------------------------- 4. the unit: verify and exposure
phase "systemd-analyze"
UNIT=$R/lib/systemd/system/sluice.service
# verify resolves the unit's dependencies (sysinit.target, ...) and commands in the root: a second fresh root
# where systemd is installed along with the package
R2=$W/root-systemd
fresh_root "$R2" || die "no fresh base root"
cp "$DEB" "$R2/tmp/"
enter "$R2" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd ./tmp/$(basename "$DEB")" \
  >"$W/apt-systemd.log" 2>&1 || { tail -n 20 "$W/apt-systemd.log"; die "apt-get install systemd ./$(basename "$DEB") failed"; }
# --man=no: the base root has no man-db (the pages are checked with man -l above)
out=$(systemd-analyze verify --man=no --root="$R2" sluice.service 2>&1); rc=$?
check_eq "systemd-analyze verify --root accepts sluice.service" 0 "$rc"
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# verify: /'
check_eq "... without a complaint" "" "$out"
check "dh_installsystemd enabled it (multi-user.target.wants)" test -L "$R2/etc/systemd/system/multi-user.target.wants/sluice.service"
out=$(systemd-analyze security --offline=yes --root="$R" sluice.service 2>&1)
EXPOSURE=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for sluice.service: \([0-9.]*\).*/\1/p')
echo "# exposure (systemd-analyze security --offline=yes): ${EXPOSURE:-?}"
check "the exposure is at most $EXPOSURE_MAX" sh -c "[ -n '$EXPOSURE' ] && [ \$(echo '$EXPOSURE <= $EXPOSURE_MAX' | bc) = 1 ]"
rm -rf "$R2"
for o in ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes NoNewPrivileges=yes 'CapabilityBoundingSet=$' \
  RestrictAddressFamilies= RestrictNamespaces=yes SystemCallFilter=@system-service SystemCallArchitectures=native \
  LockPersonality=yes RestrictRealtime=yes RestrictSUIDSGID=yes ProtectKernelTunables=yes ProtectKernelModules=yes \
  ProtectKernelLogs=yes ProtectControlGroups=yes ProtectClock=yes ProtectHostname=yes ProtectProc=invisible \
  ProcSubset=pid UMask=0077 PrivateMounts=yes DevicePolicy=closed Type=notify User=sluice; do
  check "the unit sets ${o%\$}" grep -qE "^$o" "$UNIT"
done
for o in PrivateNetwork IPAddressDeny MemoryDenyWriteExecute; do
  check "the unit does not set $o (it would break the gateway: operator.md)" sh -c "! grep -q '^$o=' '$UNIT'"
done

# ---------------------------------------------------------------- 5. the unit's start, by hand
phase "serve by hand"
ip netns add "$NS" || die "ip netns add"
ip -n "$NS" link set lo up
nsrun() { ip netns exec "$NS" "$@"; }
unit_get() { sed -n "s/^$1=//p" "$UNIT"; }
U=$(unit_get User) UM=$(unit_get UMask)
# the unit's start as systemd does it: a fresh RuntimeDirectory for User=, every ExecStartPre in order (a failure
# ends the start), then ExecStart exec'd as User= with UMask=; NOTIFY_SOCKET passed through
{
  echo 'set -e'
  echo "mkdir -m $(unit_get RuntimeDirectoryMode) /run/$(unit_get RuntimeDirectory); chown $U:$(unit_get Group) /run/$(unit_get RuntimeDirectory)"
  echo "umask $UM"
  unit_get ExecStartPre | sed "s|^|setpriv --reuid=$U --regid=$(unit_get Group) --clear-groups |"
  echo 'echo $$ >/tmp/sluice-start.pid'
  unit_get ExecStart | sed "s|^|exec setpriv --reuid=$U --regid=$(unit_get Group) --clear-groups |"
} >"$R/tmp/unit-start.sh"
NSOCK=$R/tmp/notify.sock NLOG=$W/notify.log
cat >"$W/notify.py" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode("ascii", "replace").replace("\n", "|") + "\n")
PY
$PY "$W/notify.py" "$NSOCK" "$NLOG" & PIDS+=($!)
eventually 5 test -S "$NSOCK" || die "notify socket"
gw_pid() { local p; for p in $(ip netns pids "$NS" 2>/dev/null); do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = sluice ] && echo "$p"; done | head -n 1; }
unit_start() {
  : >"$W/gw.log"
  ip netns exec "$NS" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "$(declare -f enter); cd '$TOP'; enter '$R' env NOTIFY_SOCKET=/tmp/notify.sock sh /tmp/unit-start.sh" \
    >>"$W/gw.log" 2>&1 &
  START_PID=$!; PIDS+=("$START_PID")
}
unit_start
check "READY=1 arrives from the unit's start" eventually 20 grep -q '^READY=1' "$NLOG"
GW=$(gw_pid)
check_eq "the gateway runs as User=sluice" "$SUID" "$(stat -c %u /proc/"${GW:-0}" 2>/dev/null)"
check "the first start made the CA (ca init --if-missing)" test -s "$R/var/lib/sluice/ca/ca.pem" -a -s "$R/var/lib/sluice/ca/ca.key"
check_eq "the CA key is sluice's, 0600" "$SUID 600" "$(stat -c '%u %a' "$R/var/lib/sluice/ca/ca.key" 2>/dev/null)"
check "the admin socket listens in the RuntimeDirectory" sh -c "ip netns exec $NS ss -xlH | grep -q /run/sluice/admin.sock"
check "it listens on the shipped proxy address" nsrun sh -c "ss -ltnH 'sport = :3128' | grep -q 127.0.0.1"
out=$(nsrun curl -sS --max-time 10 -x http://127.0.0.1:3128 -o - -w ' %{http_code}' http://example.com/ 2>&1 | tr -d '\n')
check_match "a request is served: the shipped policy refuses it with 403 and a JSON reason" '"rule":"default".* 403$' "$out"
check "... and audits it" eventually 5 grep -q '"host":"example.com"' "$R/var/log/sluice/audit.jsonl"
# an upstream in the namespace, an intercepted request trusting the CA the first start made
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=up.test" \
  -addext subjectAltName=DNS:up.test -keyout "$W/up.key" -out "$W/up.pem" >/dev/null 2>&1
cp "$W/up.pem" "$R/etc/sluice/upstream.pem"
cat >"$W/up.py" <<'PY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"packaged\n"; self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 8443), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True); s.serve_forever()
PY
nsrun $PY "$W/up.py" "$W/up.pem" "$W/up.key" & PIDS+=($!)
cp "$R/etc/sluice/sluice.yaml" "$W/shipped.yaml"
# the operator's edit: an upstream trust file and one host (this also makes the conffile "modified" for step 6)
sed -i -e 's|^hosts: {}|upstream:\n  ca_bundle: /etc/sluice/upstream.pem\n  resolve: { up.test: 127.0.0.1 }\nhosts:\n  up.test:\n    allow_private: true\n    ports: [8443]|' "$R/etc/sluice/sluice.yaml"
check "the edited configuration checks" enter "$R" sluice policy check /etc/sluice/sluice.yaml
# an upstream's trust is read at start only: ExecReload (SIGHUP) applies hosts, a restart the rest
kill -HUP "$GW"
check "ExecReload's SIGHUP: RELOADING=1 then READY=1" eventually 10 sh -c "grep -A1 '^RELOADING=1|MONOTONIC_USEC=[0-9]' '$NLOG' | grep -q '^READY=1'"
kill -TERM "$GW"
check "SIGTERM: STOPPING=1" eventually 10 grep -q '^STOPPING=1' "$NLOG"
check "the gateway exits after the drain" eventually 20 sh -c "[ -z \"\$(ip netns pids $NS | while read p; do [ \"\$(cat /proc/\$p/comm 2>/dev/null)\" = sluice ] && echo \$p; done)\" ]"
CASUM=$(sha256sum <"$R/var/lib/sluice/ca/ca.pem")
: >"$NLOG"
unit_start
check "the restarted unit is READY" eventually 20 grep -q '^READY=1' "$NLOG"
check_eq "a restart keeps the CA" "$CASUM" "$(sha256sum <"$R/var/lib/sluice/ca/ca.pem")"
cp "$R/var/lib/sluice/ca/ca.pem" "$W/gwca.pem"
out=$(nsrun curl -sS --max-time 10 -x http://127.0.0.1:3128 --cacert "$W/gwca.pem" --resolve up.test:8443:127.0.0.1 \
  https://up.test:8443/x 2>&1)
check_eq "an intercepted request through the packaged gateway reaches the upstream" "packaged" "$out"
check "... audited with verdict allow" eventually 5 grep -q '"host":"up.test".*"verdict":"allow"' "$R/var/log/sluice/audit.jsonl"
GW=$(gw_pid); kill -TERM "$GW" 2>/dev/null
eventually 20 sh -c "[ ! -d /proc/$GW ]"
check "the audit file verifies" enter "$R" sluice audit verify /var/log/sluice/audit.jsonl

# ---------------------------------------------------------------- 6. faults
phase "faults"
cp "$R/etc/sluice/sluice.yaml" "$W/edited.yaml"
printf 'hosts:\n  up.test:\n    verdict: maybe\n' >>"$R/etc/sluice/sluice.yaml"
: >"$NLOG"
unit_start
wait "$START_PID"; rc=$?
check "a policy that does not load: the start fails" test "$rc" != 0
check_match "ExecStartPre says file:line:col" '/etc/sluice/sluice.yaml:[0-9]+:[0-9]+: ' "$(cat "$W/gw.log")"
check "... and nothing listens" sh -c "! ip netns exec $NS ss -ltnH | grep -q ':3128 '"
check "... and no READY=1 was sent" sh -c "! grep -q READY '$NLOG'"
cp "$W/edited.yaml" "$R/etc/sluice/sluice.yaml"
AUSUM=$(sha256sum <"$R/var/log/sluice/audit.jsonl") CONFSUM=$(sha256sum <"$R/etc/sluice/sluice.yaml")
KEYSUM=$(sha256sum <"$R/var/lib/sluice/ca/ca.key")
# the same .deb again
enter "$R" dpkg -i "/tmp/$(basename "$DEB")" </dev/null >"$W/reinstall.log" 2>&1
check_eq "reinstalling the same .deb succeeds" 0 "$?"
check_eq "... keeps the modified configuration" "$CONFSUM" "$(sha256sum <"$R/etc/sluice/sluice.yaml")"
check_eq "... keeps the CA" "$CASUM $KEYSUM" "$(sha256sum <"$R/var/lib/sluice/ca/ca.pem") $(sha256sum <"$R/var/lib/sluice/ca/ca.key")"
check_eq "... keeps the audit file" "$AUSUM" "$(sha256sum <"$R/var/log/sluice/audit.jsonl")"
# an upgrade whose shipped configuration changed: the same package repacked as version +1, one comment line more
NEXT=${VERSION}+pkgcheck1
rm -rf "$W/repack"; dpkg-deb -R "$DEB" "$W/repack"
sed -i "s/^Version: .*/Version: $NEXT/" "$W/repack/DEBIAN/control"
echo "# (a later release's reference configuration)" >>"$W/repack/etc/sluice/sluice.yaml"
(cd "$W/repack" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | sort | xargs md5sum >DEBIAN/md5sums)
dpkg-deb -b --root-owner-group "$W/repack" "$R/tmp/sluice_${NEXT}_amd64.deb" >/dev/null 2>&1 || die "repack"
out=$(enter "$R" dpkg -i "/tmp/sluice_${NEXT}_amd64.deb" </dev/null 2>&1); rc=$?
check "an upgrade over a modified conffile stops at dpkg's prompt (stdin closed: it fails)" test "$rc" != 0
check_match "... dpkg asked about /etc/sluice/sluice.yaml" "Configuration file '/etc/sluice/sluice.yaml'" "$out"
check_eq "... and did not overwrite it" "$CONFSUM" "$(sha256sum <"$R/etc/sluice/sluice.yaml")"
out=$(enter "$R" dpkg -i --force-confold "/tmp/sluice_${NEXT}_amd64.deb" </dev/null 2>&1); rc=$?
check_eq "with --force-confold the upgrade completes" 0 "$rc"
check_eq "... to the new version" "$NEXT" "$(enter "$R" dpkg-query -W -f='${Version}' sluice)"
check_eq "... keeping the operator's file" "$CONFSUM" "$(sha256sum <"$R/etc/sluice/sluice.yaml")"
check "... and leaving the new one beside it (.dpkg-dist)" grep -q 'a later release' "$R/etc/sluice/sluice.yaml.dpkg-dist"
check_eq "the upgrade kept the CA" "$CASUM $KEYSUM" "$(sha256sum <"$R/var/lib/sluice/ca/ca.pem") $(sha256sum <"$R/var/lib/sluice/ca/ca.key")"
check_eq "the upgrade kept the audit file" "$AUSUM" "$(sha256sum <"$R/var/log/sluice/audit.jsonl")"
: >"$NLOG"
unit_start
check "the upgraded unit starts (READY=1)" eventually 20 grep -q '^READY=1' "$NLOG"
GW=$(gw_pid); kill -TERM "$GW" 2>/dev/null
eventually 20 sh -c "[ ! -d /proc/$GW ]"
check "the audit chain goes on across the upgrade" enter "$R" sluice audit verify /var/log/sluice/audit.jsonl
# remove keeps everything; purge removes the configuration and the state, never the audit trail
enter "$R" dpkg -r sluice >"$W/remove.log" 2>&1
check_eq "dpkg -r sluice succeeds" 0 "$?"
check "remove: /usr/bin/sluice is gone" test ! -e "$R/usr/bin/sluice"
check "remove: the configuration stays" test -s "$R/etc/sluice/sluice.yaml"
check_eq "remove: the CA stays" "$CASUM" "$(sha256sum <"$R/var/lib/sluice/ca/ca.pem")"
check "remove: the audit file stays" test -s "$R/var/log/sluice/audit.jsonl"
enter "$R" dpkg -P sluice >"$W/purge.log" 2>&1
check_eq "dpkg -P sluice succeeds" 0 "$?"
check "purge: /etc/sluice is gone" test ! -e "$R/etc/sluice"
check "purge: /var/lib/sluice (the CA) is gone" test ! -e "$R/var/lib/sluice"
check "purge: /var/log/sluice/audit.jsonl stays (evidence)" test -s "$R/var/log/sluice/audit.jsonl"
check "purge: the logrotate stanza is gone" test ! -e "$R/etc/logrotate.d/sluice"
finish
