#!/usr/bin/env bash
# The gateway under systemd's protocols, without systemd (issue 21): sd_notify READY=1 once it serves,
# RELOADING=1 with MONOTONIC_USEC then READY=1 around a good and a failed reload, STOPPING=1 on drain (a datagram
# socket this test owns is NOTIFY_SOCKET); "<N>" priority prefixes on every log line when JOURNAL_STREAM names the
# gateway's stderr, and none when it names another file; started as a non-root user (systemd's User=), `user:` is a
# no-op and it serves; a file:$CREDENTIALS_DIRECTORY/NAME secret (LoadCredential=) is read from the directory the
# variable names and injected. The secret's value is random per run and never printed (grep -q only).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
NLOG=$T/notify.log NSOCK=$T/notify.sock
cat >"$T/notify.py" <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        m = s.recv(4096).decode("ascii", "replace")
        f.write("%d %s\n" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000, m.replace("\n", "|")))
PY
spawn "$T/notify.out" "$PY" "$T/notify.py" "$NSOCK" "$NLOG"
eventually 5 test -S "$NSOCK" || die "the notify socket was not made"
notified() { grep -c -- "$1" "$NLOG" 2>/dev/null || true; }

pki_init
pyup_start 443
# ---------------------------------------------------------------- as root: notify and the journal prefix
policy_base </dev/null | gw_conf
: >"$GWLOG"
export NOTIFY_SOCKET=$NSOCK JOURNAL_STREAM
JOURNAL_STREAM=$(stat -c '%d:%i' "$GWLOG")
gw_start
check "READY=1 is sent once the gateway serves" eventually 10 grep -q 'READY=1' "$NLOG"
check_eq "READY=1 was sent exactly once at start" 1 "$(notified 'READY=1')"
check "the proxy listener was bound when READY=1 came" wait_listen "$PP" 1
check_eq "a request is served" "py" "$(pcurl https://api.example.test/ok/x)"
lines=$(grep -v '^# ---' "$GWLOG")
check_match "log lines carry <6> for info" '^<6>[0-9-]+T.* info: serving with' "$lines"
check_match "log lines carry <4> for a warning" '^<4>.* warning: running as root' "$lines"
check_eq "every log line starts with a priority" 0 "$(printf '%s\n' "$lines" | grep -cvE '^<[0-7]>' || true)"

gw_hup
check "SIGHUP: RELOADING=1 is sent" eventually 10 grep -q 'RELOADING=1' "$NLOG"
check "... then READY=1 again" eventually 10 sh -c "[ \$(grep -c 'READY=1' '$NLOG') -ge 2 ]"
rl=$(grep 'RELOADING=1' "$NLOG" | head -n 1)
check_match "RELOADING=1 carries MONOTONIC_USEC" 'RELOADING=1\|MONOTONIC_USEC=[0-9]+' "$rl"
got=$(printf '%s' "$rl" | sed -n 's/.*MONOTONIC_USEC=\([0-9]*\).*/\1/p') at=${rl%% *}
check "MONOTONIC_USEC is CLOCK_MONOTONIC now (within 30 s of its arrival)" \
  test $(( at > got ? at - got : got - at )) -lt 30000000
order=$(awk '{print $2}' "$NLOG" | sed 's/|.*//' | tr '\n' ' ')
check_match "order: READY, RELOADING, READY" '^READY=1 RELOADING=1 READY=1 $' "$order"
# a reload that fails keeps serving, and says so as READY=1 with a status
cp "$GWCONF" "$T/good.yaml"
printf 'hosts: [\n' >>"$GWCONF"
gw_hup
check "a failed reload: READY=1 again, with its status" eventually 10 grep -q 'READY=1|STATUS=reload failed' "$NLOG"
check_eq "... after its own RELOADING=1" 2 "$(notified 'RELOADING=1')"
check_eq "still serving after the failed reload" "py" "$(pcurl https://api.example.test/ok/x)"
cp "$T/good.yaml" "$GWCONF"
gw_stop
check_eq "the gateway exits 0 on SIGTERM" 0 "$GW_RC"
check "SIGTERM: STOPPING=1 is sent" grep -q 'STOPPING=1' "$NLOG"

# JOURNAL_STREAM inherited by a process whose stderr is another file: plain lines
JOURNAL_STREAM=$(stat -c '%d:%i' "$NLOG")
echo "# --- JOURNAL_STREAM names another file" >>"$GWLOG"
gw_start
check_eq "a request is served" "py" "$(pcurl https://api.example.test/ok/x)"
gw_stop
check_eq "JOURNAL_STREAM naming another file: no prefixes" 0 \
  "$(sed -n '/JOURNAL_STREAM names another file/,$p' "$GWLOG" | grep -v '^# ---' | grep -cE '^<[0-7]>' || true)"
check_match "... and the lines are there" '^[0-9-]+T.* info: serving with' "$(sed -n '/JOURNAL_STREAM names another file/,$p' "$GWLOG")"
unset JOURNAL_STREAM NOTIFY_SOCKET

# ---------------------------------------------------------------- as a non-root user: user: is a no-op; credentials
NB=$T/nb; mkdir -p "$NB/creds"
rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
rnd 40 >"$NB/creds/upstream_token"
PH="sluice_ph_cred$ID$(rnd 20)"
cp -r "$CA" "$NB/ca"
chown -R nobody:nogroup "$NB"; chmod 0700 "$NB/creds"; chmod 0400 "$NB/creds/upstream_token"
CA=$NB/ca AUDIT=$NB/audit.jsonl ADMIN=$NB/admin.sock GW_USER=daemon GW_EXTRA="state_dir: $NB/state" gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
secrets:
  upstream:
    source: file:\$CREDENTIALS_DIRECTORY/upstream_token
    placeholder: $PH
    hosts: [api.example.test]
    inject: [header:Authorization]
sandboxes:
  local:
    addresses: [127.0.0.0/8]
YAML
chmod 0644 "$GWCONF"
check "policy check accepts a \$CREDENTIALS_DIRECTORY source" "$SLUICE" policy check "$GWCONF"
echo "# --- as nobody, user: daemon" >>"$GWLOG"
# nobody may not reach the build tree (a clone in a 0700 directory): a copy of the binary in $T
install -m 0755 "$SLUICE" "$T/sluice-nobody"
setpriv --reuid=nobody --regid=nogroup --clear-groups env NOTIFY_SOCKET="$NSOCK" CREDENTIALS_DIRECTORY="$NB/creds" \
  "$T/sluice-nobody" serve -c "$GWCONF" >>"$GWLOG" 2>&1 &
GWPID=$!; PIDS+=("$GWPID")
wait_listen "$PP" 10 || die "the gateway did not listen as nobody: $(tail -n 5 "$GWLOG")"
check_match "not root: user: is named as having no effect" "not started as root: running as uid 65534, user: 'daemon' has no effect" "$(cat "$GWLOG")"
check_eq "the gateway runs as nobody" 65534 "$(stat -c %u /proc/"$GWPID")"
check "READY=1 from the non-root gateway" eventually 10 sh -c "[ \$(grep -c 'READY=1|STATUS=serving with' '$NLOG') -ge 3 ]"
CA=$NB/ca
code=$(pcurl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PH" https://api.example.test/headers)
check_eq "a request with the credential's placeholder is served" 200 "$code"
check "the upstream received the credential's value" grep -qF "Bearer $(cat "$NB/creds/upstream_token")" "$PYUPLOG"
check "... and not the placeholder" sh -c "! grep -qF '$PH' '$PYUPLOG'"
check "the value is in no log line" sh -c "! grep -qF \"\$(cat '$NB/creds/upstream_token')\" '$GWLOG'"
finish
