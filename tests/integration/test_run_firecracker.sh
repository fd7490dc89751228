#!/usr/bin/env bash
# `sluice run --backend firecracker` (sandbox-glue/run_vm.c) against a fake `firecracker` binary: the real one is
# not installed here (and this host's KVM cannot boot a guest). The fake, fake_firecracker.py --vm, is found
# through PATH (a wrapper named firecracker in $T/bin) and validates what it is given: `--no-api --config-file
# FILE`, its uid and gid (the sandbox's), an empty environment, the kernel, the composed initrd (the image's, then
# the gateway's CA as sluice/ca.pem; root's, group the uid, 0640), one vCPU and the memory, the tap (slh<id>,
# existing, a tap owned by the uid) and its MAC, and boot args carrying the console base and the addresses that are
# on the tap. Then it plays a guest on its stdout (CR LF line ends): a Firecracker log line, kernel and /init lines,
# the checks, the argv and placeholders, and "SLUICE_EXIT 3".
# Checks: every CHECK line is ok; the status 3 comes back; the command's output is forwarded without the
# SLUICE_EXIT, the start marker and the CRs, with Firecracker's log lines on stderr; while it runs the tap, the
# table and the registration (GET /sandboxes, backend firecracker) exist; nothing is left after (tables, taps,
# locks, VM directories). Also: SIGTERM (143, the fake gone), a VM that ends without a status (1, the message),
# "SLUICE_EXIT n" passed through, SIGKILL of sluice run (the fake dies with it; the next run removes the tap, table,
# lock and VM directory), and no firecracker in PATH (1, a message naming docs/firecracker.md).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
track_sandbox_objects
vm_dirs() { ls /run/sluice/vm 2>/dev/null | grep -E '^[0-9a-f]{8}$' | sort; }
VM_BEFORE=$(vm_dirs)
new_vm_dirs() { comm -13 <(printf '%s\n' "$VM_BEFORE") <(vm_dirs) | grep .; }
no_leftovers() {
  check_eq "$1: no sluice_* table, tap or lock left" "" "$(new_objects)"
  check_eq "$1: no VM directory left" "" "$(new_vm_dirs)"
}

# a kernel and an image initrd of our own (the fake boots nothing), world-readable like an installed image
VM=$T/vm
mkdir -p "$VM" "$T/bin"
head -c 4096 /dev/urandom >"$VM/vmlinux"
printf 'fake initramfs %s\n' "$ID" | gzip -9n >"$VM/initrd.gz"
chmod 755 "$VM" && chmod 644 "$VM/vmlinux" "$VM/initrd.gz"

DNSP=$(freeport)
GW_DNS="[::]:$DNSP"
GW_EXTRA="sandbox:
  backend: firecracker
  uid: 1000
  qemu:
    kernel: $VM/vmlinux
    initrd: $VM/initrd.gz
    memory: 192M"
export SLUICE_IT_RUNSECRET="ghs_fc$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
policy_base <<'YAML' | gw_conf
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

GO=$T/go
cp "$CA/ca.pem" "$T/ca-copy.pem" && chmod 644 "$T/ca-copy.pem"  # the fake runs as uid 1000: $CA is root's
jq -n --argjson uid 1000 --arg k "$VM/vmlinux" --arg i "$VM/initrd.gz" --arg ca "$T/ca-copy.pem" --arg go "$GO" \
  '{uid: $uid, kernel: $k, initrd: $i, ca: $ca, memory: 192, go: $go}' >"$T/expect.json"
# the fake runs as uid 1000, which may not reach the checkout (a clone in a 0700 directory): a copy in $T
install -m 0644 "$HERE/fake_firecracker.py" "$T/fake_firecracker.py"
printf '#!/bin/sh\nexec /usr/bin/python3 %s --vm %s "$@"\n' "$T/fake_firecracker.py" "$T/expect.json" >"$T/bin/firecracker"
chmod 755 "$T/bin/firecracker"
chmod 644 "$T/expect.json"
FCPATH="$T/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# ---------------------------------------------------------------- one run
NAME=fc-$ID
PATH=$FCPATH "$SLUICE" run -c "$GWCONF" --name "$NAME" --env EXTRA_VAR=x1 -- sh -c 'echo "it is $GITHUB_TOKEN"' \
  >"$T/fc.out" 2>"$T/fc.err" &
RPID=$!
new_tap() { comm -13 <(printf '%s\n' "$SBX_BEFORE" | sed -n 's/^link //p') <(ls /sys/class/net | grep -E '^slh[0-9a-f]{8}$') | head -n 1 | grep .; }
eventually 10 new_tap || bad "no tap appeared: $(tail -n 3 "$T/fc.err")"
TAP=$(new_tap)
check_match "while it runs: a tap slh<id>" '^slh[0-9a-f]{8}$' "$TAP"
check "  the sandbox's nft table exists" nft list table inet "sluice_${TAP#slh}"
check "  the gateway lists the sandbox (GET /sandboxes: name, backend firecracker)" eventually 10 sh -c \
  "curl -s --max-time 5 --unix-socket '$ADMIN' http://sluice/sandboxes | jq -e '.. | objects | select(.name? == \"$NAME\" and .backend? == \"firecracker\")' >/dev/null"
check "  the VM directory exists" test -n "$(new_vm_dirs)"
touch "$GO"
wait "$RPID"
rc=$?
out=$(cat "$T/fc.out")
echo "$out" | sed 's/^/# stdout: /'
sed 's/^/# stderr: /' "$T/fc.err"
check_eq "the exit status is the guest's SLUICE_EXIT 3" 3 "$rc"
for c in uid groups env-empty kernel initrd initrd-mode machine drives tap-name tap-owner mac boot-base boot-addresses; do
  check_match "the fake firecracker's check: $c" "^ok" "$(printf '%s\n' "$out" | sed -n "s/^CHECK $c //p")"
done
check_eq "no failed check at all" "" "$(printf '%s\n' "$out" | grep '^CHECK .* bad')"
check_eq "the command's argv arrives (sluice.cmd)" 'ARGV ["sh", "-c", "echo \"it is $GITHUB_TOKEN\""]' \
  "$(printf '%s\n' "$out" | grep '^ARGV')"
check_eq "the placeholders arrive (sluice.env.*): sandbox_env and --env" "ENV EXTRA_VAR=x1 ENV GITHUB_TOKEN=$PH" \
  "$(printf '%s\n' "$out" | grep '^ENV' | paste -sd' ' -)"
check_nomatch "stdout has no SLUICE_EXIT, no /init line, no kernel or Firecracker log line" \
  '^(SLUICE_EXIT|sluice-init|\[ |2024-)' "$out"
check_eq "no CR is left in the forwarded lines" 0 "$(printf '%s' "$out" | tr -cd '\r' | wc -c)"
check_match "Firecracker's log line mid-run went to stderr, marked" 'sluice run: guest: 2024-05-01T10:00:00.5' \
  "$(cat "$T/fc.err")"
check_nomatch "the boot lines and the power-off line are not shown (the command started; a status came)" \
  'Linux version|Restarting system|sluice-init: start' "$(cat "$T/fc.err")"
check "the audit of the gateway: the sandbox was registered by name" \
  sh -c "grep -q 'sandbox $NAME registered' '$GWLOG'"
no_leftovers "after the run"

# ---------------------------------------------------------------- statuses, SIGTERM, no firecracker
PATH=$FCPATH "$SLUICE" run -c "$GWCONF" -- fake-status 42 >"$T/st.out" 2>"$T/st.err"
check_eq "SLUICE_EXIT 42 passes through" 42 "$?"
PATH=$FCPATH "$SLUICE" run -c "$GWCONF" -- fake-nostatus >"$T/ns.out" 2>"$T/ns.err"
check_eq "a VM that ends without SLUICE_EXIT: exit 1" 1 "$?"
check_match "  with the reason" 'the VM ended without reporting a status \(the monitor exited with status 0\)' \
  "$(cat "$T/ns.err")"
PATH=$FCPATH "$SLUICE" run -c "$GWCONF" -- fake-sleep >"$T/sl.out" 2>"$T/sl.err" &
RPID=$!
eventually 10 grep -q SLEEPING "$T/sl.out" || bad "the fake did not start sleeping: $(tail -n 3 "$T/sl.err")"
FPID=$(pgrep -P "$RPID" | head -n 1)
kill -TERM "$RPID"
wait "$RPID"
check_eq "SIGTERM to sluice run: 128+15" 143 "$?"
check "  the fake firecracker is gone" eventually 5 sh -c "! kill -0 '$FPID' 2>/dev/null"
no_leftovers "after SIGTERM"
# SIGKILL: the fake dies with sluice run (PR_SET_PDEATHSIG); the next run removes the tap, table, lock, VM directory
BEFORE_KILL=$(snap_objects; vm_dirs | sed 's/^/vmdir /')
PATH=$FCPATH "$SLUICE" run -c "$GWCONF" -- fake-sleep >"$T/k.out" 2>"$T/k.err" &
RPID=$!
eventually 10 grep -q SLEEPING "$T/k.out" || bad "the fake did not start sleeping: $(tail -n 3 "$T/k.err")"
FPID=$(pgrep -P "$RPID" | head -n 1)
left=$(comm -13 <(printf '%s\n' "$BEFORE_KILL") <(snap_objects; vm_dirs | sed 's/^/vmdir /'))
kill -KILL "$RPID"; wait "$RPID" 2>/dev/null
check_match "SIGKILL leaves a tap, a lock, a table and a VM directory behind" '^link slh.*lock .*table sluice_.*vmdir ' \
  "$(printf '%s\n' "$left" | sort | tr '\n' ' ')"
check "  the fake firecracker died with sluice run" eventually 5 sh -c "! kill -0 '$FPID' 2>/dev/null"
PATH=$FCPATH "$SLUICE" run -c "$GWCONF" -- fake-status 0 >/dev/null 2>"$T/clean.err"
check_eq "  the next run succeeds" 0 "$?"
check_match "  and says it removed the leftovers" 'removed the leftovers of 1 earlier sandbox' "$(cat "$T/clean.err")"
check_eq "  nothing of the killed run is left" "" \
  "$(comm -12 <(printf '%s\n' "$left") <(snap_objects; vm_dirs | sed 's/^/vmdir /'))"
no_leftovers "after the cleanup run"
PATH=/usr/sbin:/usr/bin:/sbin:/bin "$SLUICE" run -c "$GWCONF" -- true 2>"$T/nofc.err"
check_eq "no firecracker in PATH: exit 1" 1 "$?"
check_match "  with a message naming docs/firecracker.md" 'firecracker is not installed.*docs/firecracker.md' \
  "$(cat "$T/nofc.err")"
no_leftovers "after the refusals"
check_nomatch "no sanitizer report from any sluice run" 'Sanitizer|runtime error' "$(cat "$T"/*.err)"

gw_final_checks
finish
