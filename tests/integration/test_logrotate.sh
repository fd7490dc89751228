#!/usr/bin/env bash
# The package's /etc/logrotate.d/sluice (debian/sluice.logrotate) against a running gateway (issue 21): logrotate
# renames the audit file (dateext, delaycompress, compress), its postrotate signal (here SIGUSR1 to this test's
# gateway, in place of `systemctl kill`) makes the gateway reopen the path, and after two rotations the three files
# (the compressed one unpacked) verify as one chain with `sluice audit verify`; leaving the middle file out fails.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
SRC=$HERE/../../debian/sluice.logrotate
[ -f "$SRC" ] || die "no debian/sluice.logrotate"
command -v logrotate >/dev/null || die "logrotate is not installed (scripts/deps.sh)"
LR=$T/logrotate.conf
# the audit directory as the package makes it: the service user's, 0750 (logrotate refuses insecure parents)
mkdir -p "$T/log" && chown nobody:nogroup "$T/log" && chmod 0750 "$T/log"
AUDIT=$T/log/audit.jsonl
# the shipped stanza, with this run's audit path and signal; everything else as shipped
sed -e "s|/var/log/sluice/audit.jsonl|$AUDIT|" \
    -e "s|^\([[:space:]]*\)if \[ -d /run/systemd/system \].*|\1kill -USR1 \$(cat $T/gw.pid)|" "$SRC" >"$LR"
check "the shipped stanza signals the service with SIGUSR1" grep -q 'systemctl kill --kill-who=main --signal=SIGUSR1 sluice.service' "$SRC"
check "the test's copy signals this gateway" grep -q "kill -USR1" "$LR"
check_nomatch "the shipped stanza never truncates in place" 'copytruncate' "$(grep -v '^[[:space:]]*#' "$SRC")"

policy_base </dev/null | gw_conf
nginx_start
gw_start
echo "$GWPID" >"$T/gw.pid"
reqs() { local i; for i in $(seq 1 "$1"); do pcurl -o /dev/null "https://api.example.test/ok/$2-$i"; done; }
rotate() {
  sleep 1.1   # dateext names carry the epoch second: two rotations need two seconds
  logrotate -f -s "$T/lr.state" "$LR" >"$T/lr.out" 2>&1 || { cat "$T/lr.out"; return 1; }
}
reqs 3 a
check "batch a is audited" audit_wait 'select(.path == "/ok/a-3")'
check "logrotate rotates the audit file" rotate
check "the gateway reopened the moved file" eventually 10 grep -q 'was moved away: reopened it' "$GWLOG"
reqs 3 b
check "batch b is audited in the new file" audit_wait 'select(.path == "/ok/b-3")'
check "a second logrotate rotation" rotate
reqs 3 c
check "batch c is audited in the newest file" audit_wait 'select(.path == "/ok/c-3")'
gw_stop
check_eq "the gateway stops cleanly" 0 "$GW_RC"

mapfile -t rotated < <(ls "$AUDIT"-* 2>/dev/null | sort)
check_eq "two rotated files" 2 "${#rotated[@]}"
check_match "the older one is compressed (delaycompress)" '\.gz$' "${rotated[0]:-}"
check_nomatch "the newer one is plain text" '\.gz$' "${rotated[1]:-x.gz}"
mkdir -p "$T/v"
series=()
for f in "${rotated[@]}"; do
  case $f in *.gz) gunzip -c "$f" >"$T/v/$(basename "${f%.gz}")"; series+=("$T/v/$(basename "${f%.gz}")");; *) series+=("$f");; esac
done
series+=("$AUDIT")
out=$("$SLUICE" audit verify "${series[@]}" 2>&1); rc=$?
check_eq "audit verify over the rotated series exits 0" 0 "$rc"
check_match "... and says ok" '^ok' "$out"
check_match "batch a is in the oldest file" '"/ok/a-1"' "$(cat "${series[0]}")"
check_match "batch b is in the middle file" '"/ok/b-1"' "$(cat "${series[1]}")"
check_match "batch c is in the live file" '"/ok/c-1"' "$(cat "$AUDIT")"
out=$("$SLUICE" audit verify "${series[0]}" "$AUDIT" 2>&1); rc=$?
check_eq "leaving the middle file out fails verification" 1 "$rc"
finish
