#!/usr/bin/env bash
# Firecracker backend: the API driver (sandbox-glue/firecracker.c, fc_api_boot) against fake_firecracker.py, a
# stand-in for Firecracker's API socket (the real binary is not available here).  The driver runs through the
# unit test binary in its `--boot SOCK KERNEL INITRD TAP [TIMEOUT_MS]` mode, found at
# $(dirname "$SLUICE")/../tests/unit/sandbox/test_firecracker (build it with the unit tests).  Checks: the exact
# request sequence and JSON bodies on one connection, escaping of odd paths end to end, a 400 with a
# fault_message stopping the sequence, a server that never answers (bounded by the timeout), a hang-up, a
# chunked answer refused, a missing socket, and a control byte refused before anything is sent.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
FAKE=$HERE/fake_firecracker.py
FCT=$(readlink -f "$(dirname "$SLUICE")/../tests/unit/sandbox/test_firecracker")
[ -x "$FCT" ] || die "no driver binary at $(dirname "$SLUICE")/../tests/unit/sandbox/test_firecracker (build the unit tests)"

N=0
# fake_start ARGS...: a fresh fake on $SOCK logging to $FLOG
fake_start() {
  N=$((N + 1))
  SOCK=$T/fc$N.sock FLOG=$T/fc$N.jsonl
  : >"$FLOG"
  spawn "$T/fake$N.log" "$PY" "$FAKE" "$SOCK" "$FLOG" "$@"
  FAKEPID=$LASTPID
  eventually 5 test -S "$SOCK" || die "fake firecracker did not start: $(tail -n 3 "$T/fake$N.log")"
}
fake_stop() { kill "$FAKEPID" 2>/dev/null; wait "$FAKEPID" 2>/dev/null; }
# boot KERNEL INITRD TAP [TIMEOUT_MS]: runs the driver against $SOCK; sets OUT and RC (124: the driver hung)
boot() { OUT=$(timeout 20 "$FCT" --boot "$SOCK" "$@" 2>&1); RC=$?; }
reqs() { jq -r '"\(.method) \(.path)"' "$FLOG" | paste -sd, -; }

K=/var/lib/sluice/vm/vmlinux I=/var/lib/sluice/vm/initrd.gz

# 1. the whole sequence
fake_start
boot "$K" "$I" slh0123abcd
check_eq "boot against the fake succeeds" "0 ok" "$RC $OUT"
check_eq "requests in order" "PUT /boot-source,PUT /machine-config,PUT /network-interfaces/eth0,PUT /actions" "$(reqs)"
check_eq "all four on one connection" "1" "$(jq -r .conn "$FLOG" | sort -u | paste -sd, -)"
check_eq "HTTP/1.1 with Content-Type application/json" "HTTP/1.1 application/json" \
  "$(jq -r '"\(.version) \(.content_type)"' "$FLOG" | sort -u | paste -sd'|' -)"
check_eq "boot-source body" \
  '{"boot_args":"console=ttyS0 reboot=k panic=1 quiet","initrd_path":"/var/lib/sluice/vm/initrd.gz","kernel_image_path":"/var/lib/sluice/vm/vmlinux"}' \
  "$(sed -n 1p "$FLOG" | jq -cS .body)"
check_eq "machine-config body" '{"mem_size_mib":256,"smt":false,"vcpu_count":2}' "$(sed -n 2p "$FLOG" | jq -cS .body)"
check_eq "network-interfaces body" '{"guest_mac":"02:5c:00:00:00:01","host_dev_name":"slh0123abcd","iface_id":"eth0"}' \
  "$(sed -n 3p "$FLOG" | jq -cS .body)"
check_eq "actions body" '{"action_type":"InstanceStart"}' "$(sed -n 4p "$FLOG" | jq -cS .body)"
check_eq "exactly four requests" 4 "$(wc -l <"$FLOG")"

# 2. odd characters in paths survive the JSON round trip
boot '/vm/a"b\c/vmlinux' "/vm/café/init rd" slh0123abcd
check_eq "boot with odd paths succeeds" "0 ok" "$RC $OUT"
check_eq "quote and backslash arrive intact" '/vm/a"b\c/vmlinux' "$(sed -n 5p "$FLOG" | jq -r .body.kernel_image_path)"
check_eq "UTF-8 and space arrive intact" "/vm/café/init rd" "$(sed -n 5p "$FLOG" | jq -r .body.initrd_path)"
check_eq "the second boot used a second connection" "1,2" "$(jq -r .conn "$FLOG" | sort -u | paste -sd, -)"

# 3. control bytes are refused before anything is sent
boot "$(printf '/vm/a\nb')" "$I" slh0123abcd
check_eq "a newline in the kernel path is refused" \
  "1 error invalid argument: vm refused: kernel path missing, too long, or with control bytes" "$RC $OUT"
boot "$K" "$I" 'tap 0'
check_eq "a tap name with a space is refused" "1 error invalid argument: vm refused: tap name missing or invalid" "$RC $OUT"
check_eq "nothing was sent for the refused VMs" 8 "$(wc -l <"$FLOG")"
fake_stop

# 4. Firecracker refuses machine-config: its fault_message is reported and the sequence stops
fake_start --fail /machine-config 'Invalid machine configuration: "mem_size_mib" 0'
boot "$K" "$I" slh0123abcd
check_eq "a 400 fails the boot with the fault message" \
  '1 error denied: PUT /machine-config: 400: Invalid machine configuration: "mem_size_mib" 0' "$RC $OUT"
check_eq "nothing after the refused request" "PUT /boot-source,PUT /machine-config" "$(reqs)"
fake_stop

# 5. a fault message with control bytes is neutralised, and bounded
fake_start --fail /boot-source "$(printf 'bad\r\n\033[31mred %s' "$(head -c 3000 /dev/zero | tr '\0' x)")"
boot "$K" "$I" slh0123abcd
check_match "control bytes in the fault message become ?" '^1 error denied: PUT /boot-source: 400: bad\?\?\?\[31mred x+$' "$RC $OUT"
check "the reported message is bounded (under 600 bytes)" test "${#OUT}" -lt 600
fake_stop

# 6. a server that never answers: the driver gives up at its timeout
fake_start --hang /network-interfaces/eth0
start=$SECONDS
boot "$K" "$I" slh0123abcd 1500
check_eq "a silent server times out" \
  "1 error timed out: PUT /network-interfaces/eth0: timed out waiting for the answer" "$RC $OUT"
check "the driver returned on its own (well before the 20 s guard)" test $((SECONDS - start)) -lt 10
check_eq "the silent request was sent" "PUT /boot-source,PUT /machine-config,PUT /network-interfaces/eth0" "$(reqs)"
fake_stop

# 7. a hang-up mid-sequence, and a chunked answer
fake_start --hangup /actions --chunked /machine-config
boot "$K" "$I" slh0123abcd
check_eq "a chunked answer is refused" \
  "1 error parse error: PUT /machine-config: bad answer: Transfer-Encoding refused" "$RC $OUT"
fake_stop
fake_start --hangup /actions
boot "$K" "$I" slh0123abcd
check_eq "a hang-up before the answer is reported" \
  "1 error connection closed: PUT /actions: the API socket closed before a whole answer" "$RC $OUT"
fake_stop

# 8. no socket at all: bounded retries, then a timeout naming the socket
SOCK=$T/none.sock
boot "$K" "$I" slh0123abcd 300
check_eq "a missing socket times out" \
  "1 error timed out: connect $T/none.sock: timed out (No such file or directory)" "$RC $OUT"

finish
