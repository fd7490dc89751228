#!/usr/bin/env bash
# A full disk under the audit log (issue 7): the audit file on a small tmpfs that fills up. New requests get 503
# with the JSON reason "audit log unavailable" (and a new explicit-proxy connection too), stderr says why once, no
# request reaches the upstream without its record, a request already decided stays parked and is answered 503 when
# its record cannot be written in time; once space is freed the pending records are written, stderr says so,
# requests are served again, and the whole log verifies (no record lost, no torn line in the middle).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

DISK=$T/disk
mkdir -p "$DISK"
mount -t tmpfs -o size=256k,mode=0755 "sluice-it-$ID" "$DISK" || die "cannot mount a tmpfs on $DISK"
trap 'umount -l "$DISK" 2>/dev/null; cleanup' EXIT
AUDIT=$DISK/audit.jsonl

nginx_start
GW_EXTRA="  fsync: 100ms
limits: { upstream_connect: 2s }"
policy_base </dev/null | gw_conf
gw_start

check_eq "before: requests are served" hello "$(pcurl https://api.example.test/ok/before-1)"
check_eq "  (a second one)" hello "$(pcurl https://api.example.test/ok/before-2)"
check "  and recorded" audit_wait '.path == "/ok/before-2" and .status == 200'

# fill the disk: nothing is left for the log
dd if=/dev/zero of="$DISK/filler" bs=4k >/dev/null 2>&1
check "the tmpfs is full" sh -c "! dd if=/dev/zero of='$DISK/probe' bs=1k count=1 2>/dev/null"
rm -f "$DISK/probe"

# the last page of the file may still take a few records; then a request is decided, its record queued but not
# written: it waits (parked), never reaches nginx, and is answered 503 once limits.upstream_connect (+1 s) runs out
first=''
for i in $(seq 1 30); do
  code=$(pcurl -o "$T/fill.body" -w '%{http_code}' "https://api.example.test/ok/fill-$i")
  [ "$code" = 200 ] || { first="$i $code"; break; }
done
check_match "once the file cannot grow, a request is answered 503" '^[0-9]+ 503$' "$first"
check_eq "  with the JSON reason" "audit log unavailable audit" "$(jq -r '"\(.error) \(.rule)"' "$T/fill.body" 2>&1)"
PARKED=/ok/fill-${first% *}
check "stderr says the log cannot be written, and that new requests are refused" \
  eventually 5 grep -q "audit: cannot write $AUDIT: No space left on device: refusing new requests (503)" "$GWLOG"
nginx_full=$(grep -c '/ok/' "$NGXLOG")
check_eq "a new explicit-proxy CONNECT meanwhile: 503" 503 \
  "$(pcurl -o /dev/null -w '%{http_connect}' https://api.example.test/ok/new 2>/dev/null)"
reply=$(printf 'GET http://api.example.test/ok/plain HTTP/1.1\r\nHost: api.example.test\r\n\r\n' | proxy_raw)
check_match "a new plain explicit-proxy request: 503 at once" '^HTTP/1.1 503 ' "$reply"
check_match "  with the JSON reason" '"error":"audit log unavailable".*"rule":"audit"' "$reply"
check_eq "nothing reached the upstream without its record" "$nginx_full" "$(grep -c '/ok/' "$NGXLOG")"
check "  (nginx never saw the parked request)" sh -c "! grep -q '$PARKED ' '$NGXLOG'"
check_eq "stderr said it once" 1 "$(grep -c 'audit: cannot write' "$GWLOG")"

# space again: the pending records go out, requests are served
rm -f "$DISK/filler"
check "stderr says the log is written again" eventually 5 grep -q "audit: $AUDIT is written again" "$GWLOG"
check_eq "requests are served again" hello "$(pcurl https://api.example.test/ok/after-1)"
check "  and recorded" audit_wait '.path == "/ok/after-1" and .status == 200'
check "the parked request's records were written once the disk had room: allow, then its 503" \
  audit_wait ".path == \"$PARKED\" and .verdict == \"allow\" and .status == 503 and .rule == \"audit\""

gw_stop
check_eq "the gateway stops cleanly" 0 "$GW_RC"
check_match "the whole log verifies (no torn line in the middle, no record missing)" '^ok: ' \
  "$("$SLUICE" audit verify "$AUDIT" 2>&1)"
check_eq "  and its last record is stop" stop "$(tail -n 1 "$AUDIT" | jq -r .type)"
served_recorded() { # every /ok/ path nginx served has its request record (those without: $T/missing)
  sed -n 's/^[^ ]* "GET \(\/ok\/[^ ]*\) .*/\1/p' "$NGXLOG" | sort -u >"$T/served"
  jq -r 'select(.type == "request") | .path' "$AUDIT" | sort -u >"$T/recorded"
  comm -23 "$T/served" "$T/recorded" >"$T/missing"
  [ -s "$T/served" ] && [ ! -s "$T/missing" ]
}
check "every request nginx served has its request record ($(grep -c '/ok/' "$NGXLOG") served)" served_recorded
[ -s "$T/missing" ] && echo "# missing: $(tr '\n' ' ' <"$T/missing")"
check "the refused connection has its denial record (rule audit, 503), written once there was room" \
  audit_wait '.type == "denial" and .rule == "audit" and .status == 503' 1
finish
