#!/usr/bin/env bash
# `sluice run --backend qemu` end to end (sandbox-glue/run_vm.c, run_console.c, netns.c's tap, cli/run.c): a
# gateway with its DNS responder, a python TLS upstream, and ONE microVM (TCG) whose command
#   - makes an allowed HTTPS request by name (DNS through the gateway, the CA from the appended archive) carrying
#     the placeholder of a sandbox_env secret, which the upstream receives as the real value;
#   - makes a denied one (403 with the JSON reason), and asks for a name the policy cannot allow (NXDOMAIN);
#   - opens TCP (busybox nc) and UDP (curl's tftp) to host-side listeners this test runs: they must see nothing;
#   - prints a false "SLUICE_EXIT 0" and exits 7: the last status (from /init) counts.
# Checks the forwarded output (without the SLUICE_EXIT lines or /init's start marker), the status 7, the audit
# naming the sandbox, the registration, the tap (owned by the uid) and table while it runs, and nothing left
# after (tables, taps, lock files, VM directories). Then: SIGTERM to `sluice run` while the guest sleeps (143, QEMU
# gone, nothing left); a missing kernel (a clear error naming the key and scripts/vm-image.sh); a placeholder the
# kernel command line cannot carry. Prints the start-to-command time (--timing) as a "# " line.
# The image is the one test_qemu_boot.sh builds (cache $SLUICE_VM_CACHE, default /var/cache/sluice-test-vm).
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
CACHE=${SLUICE_VM_CACHE:-/var/cache/sluice-test-vm}
need_tool qemu-system-x86_64
bash "$SRC/scripts/vm-image.sh" "$CACHE" >"$T/vm-image.log" 2>&1 ||
  die "scripts/vm-image.sh could not build the VM image: $(tail -n 1 "$T/vm-image.log")"

track_sandbox_objects
vm_dirs() { ls /run/sluice/vm 2>/dev/null | grep -E '^[0-9a-f]{8}$' | sort; }
VM_BEFORE=$(vm_dirs)
new_vm_dirs() { comm -13 <(printf '%s\n' "$VM_BEFORE") <(vm_dirs) | grep .; }
no_leftovers() {
  check_eq "$1: no sluice_* table, tap or lock left" "" "$(new_objects)"
  check_eq "$1: no VM directory left" "" "$(new_vm_dirs)"
}

# ---------------------------------------------------------------- gateway, upstream, policy
SECRET_VALUE="ghs_vm$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
export SLUICE_IT_RUNSECRET=$SECRET_VALUE
DNSP=$(freeport)
GW_DNS="[::]:$DNSP"
GW_EXTRA="sandbox:
  backend: qemu
  uid: 1000
  qemu:
    kernel: $CACHE/vmlinux
    initrd: $CACHE/initrd.gz
    accel: tcg
    memory: 256M"
pyup_start 443
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

XP=$(freeport)
host_listeners_start "$XP"

# ---------------------------------------------------------------- one microVM
NAME=vmq-$ID
read -r -d '' WORK <<EOF
gw=\$(ip route | sed -n 's/^default via \([^ ]*\).*/\1/p' | head -n 1)
echo "GW \$gw"
r=\$(curl -sS --max-time 20 -H "Authorization: Bearer \$GITHUB_TOKEN" https://api.example.test/ok/vm 2>&1)
echo "ALLOWED rc=\$? [\$r]"
r=\$(curl -sS --max-time 20 -w ' code=%{http_code}' https://api.example.test/nope 2>&1 | tr -d '\n')
echo "DENIED [\$r]"
curl -sS --max-time 20 https://exfil.attacker.test/ >/dev/null 2>&1; echo "NXDOMAIN rc=\$?"
r=\$(nc -w 3 "\$gw" $XP </dev/null 2>&1); echo "TCP rc=\$? [\$r]"
r=\$(curl -sS --max-time 3 "tftp://\$gw:$XP/x" 2>&1); echo "UDP [\$r]"
echo "TOKEN \$GITHUB_TOKEN"
echo "SLUICE_EXIT 0"
echo "LAST"
exit 7
EOF
"$SLUICE" run -c "$GWCONF" --name "$NAME" --timing -- sh -c "$WORK" >"$T/vm.out" 2>"$T/vm.err" &
RPID=$!
# while it runs: the tap (owned by the uid), the table, the registration
new_tap() { comm -13 <(printf '%s\n' "$SBX_BEFORE" | sed -n 's/^link //p') <(ls /sys/class/net | grep -E '^slh[0-9a-f]{8}$') | head -n 1 | grep .; }
eventually 30 new_tap || bad "no tap appeared: $(tail -n 3 "$T/vm.err")"
TAP=$(new_tap)
check_match "while it runs: a tap slh<id>" '^slh[0-9a-f]{8}$' "$TAP"
check_eq "  the tap is a tap owned by uid 1000 (QEMU runs as it)" "tap 1000" \
  "$(ip -d link show "$TAP" 2>/dev/null | grep -o 'tun type tap' | sed 's/tun type //') $(cat "/sys/class/net/$TAP/owner" 2>/dev/null)"
check "  the sandbox's nft table exists" nft list table inet "sluice_${TAP#slh}"
check "  the gateway lists the sandbox (GET /sandboxes: name, backend qemu)" eventually 10 sh -c \
  "curl -s --max-time 5 --unix-socket '$ADMIN' http://sluice/sandboxes | jq -e '.. | objects | select(.name? == \"$NAME\" and .backend? == \"qemu\")' >/dev/null"
QPID=$(pgrep -P "$RPID" | head -n 1)
check_eq "  QEMU runs as uid 1000" 1000 "$(ps -o uid= -p "$QPID" 2>/dev/null | tr -d ' ')"
check_eq "  QEMU's environment is empty" "" "$(tr '\0' '\n' <"/proc/$QPID/environ" 2>/dev/null)"
wait "$RPID"
rc=$?
out=$(cat "$T/vm.out")
echo "$out" | sed 's/^/# guest: /'
sed 's/^/# stderr: /' "$T/vm.err" | grep -v 'guest: \[' | head -n 20
line() { printf '%s\n' "$out" | sed -n "s/^$1 //p" | head -n 1; }
check_eq "the exit status is the last SLUICE_EXIT (the command's 7, not its fake 0)" 7 "$rc"
check_eq "allowed HTTPS by name through DNS and the CA: the upstream's answer" "rc=0 [py]" "$(line ALLOWED)"
check "  the upstream got the real secret for the placeholder" grep -q "Bearer $SECRET_VALUE" "$PYUPLOG"
check_eq "  the guest holds the placeholder (as secrets list shows it)" "$PH" "$(line TOKEN)"
check_nomatch "  the real secret is nowhere in the output" "$SECRET_VALUE" "$out $(cat "$T/vm.err")"
check_match "denied path: the gateway's 403 with the JSON reason" '"reason".* code=403\]$' "$(line DENIED)"
check_eq "a name the policy cannot allow: NXDOMAIN (curl 6)" "rc=6" "$(line NXDOMAIN)"
check_nomatch "TCP to a host-side listener: no banner" 'HOST-LISTENER' "$(line TCP)"
check_nomatch "UDP to a host-side listener: no answer" 'HOST-UDP' "$(line UDP)"
check_eq "the host-side listeners saw nothing from the guest" "" "$(cat "$T/hostlisten.log")"
check_eq "the SLUICE_EXIT lines and /init's lines are not forwarded; the output ends with the command's last line" \
  "LAST" "$(printf '%s\n' "$out" | grep -cE '^(SLUICE_EXIT|sluice-init:)' | sed 's/^0$//')$(printf '%s\n' "$out" | tail -n 1)"
check "the audit names the sandbox on the request" \
  audit_wait ".type == \"request\" and .sandbox == \"$NAME\" and .path == \"/ok/vm\" and .status == 200"
check "  and on its DNS queries" audit_wait ".type == \"dns\" and .sandbox == \"$NAME\" and .host == \"api.example.test\""
check "  and the NXDOMAIN" audit_wait ".type == \"dns\" and .sandbox == \"$NAME\" and .answer == \"NXDOMAIN\""
ms=$(sed -n 's/.*timing: \([0-9.]*\) ms from start to the command.s start.*/\1/p' "$T/vm.err")
check_match "--timing reports the time to the command's start in the guest" '^[0-9]+\.[0-9]$' "$ms"
echo "# qemu (TCG) start to the command: $(sed -n 's/.*timing: //p' "$T/vm.err")"
check_eq "the gateway no longer lists it" "" \
  "$(curl -s --max-time 5 --unix-socket "$ADMIN" http://sluice/sandboxes | jq -r ".. | objects | select(.name? == \"$NAME\") | .name")"
no_leftovers "after the run"

# ---------------------------------------------------------------- SIGTERM while the guest sleeps
"$SLUICE" run -c "$GWCONF" -- sh -c 'echo SLEEPING; sleep 60; echo WOKE' >"$T/term.out" 2>"$T/term.err" &
RPID=$!
eventually 60 grep -q SLEEPING "$T/term.out" || bad "the guest did not start its sleep: $(tail -n 3 "$T/term.err")"
QPID=$(pgrep -P "$RPID" | head -n 1)
kill -TERM "$RPID"
wait "$RPID"
check_eq "SIGTERM to sluice run: it exits 128+15" 143 "$?"
check_nomatch "  the guest's sleep never finished" WOKE "$(cat "$T/term.out")"
check "  QEMU is gone" eventually 5 sh -c "! kill -0 '$QPID' 2>/dev/null"
no_leftovers "after SIGTERM"

# ---------------------------------------------------------------- refusals
sed "s|kernel: $CACHE/vmlinux|kernel: $T/none/vmlinux|" "$GWCONF" >"$T/nokernel.yaml"
"$SLUICE" run -c "$T/nokernel.yaml" -- true 2>"$T/nok.err"
check_eq "a missing kernel: exit 1" 1 "$?"
check_match "  naming the key and the image script" 'sandbox.qemu.kernel .*scripts/vm-image.sh' "$(cat "$T/nok.err")"
"$SLUICE" run -c "$GWCONF" --env 'HOMEVAR=two words' -- true 2>"$T/env.err"
check_eq "a value the kernel command line cannot carry: exit 1" 1 "$?"
check_match "  naming the variable" 'variable HOMEVAR cannot go to the guest' "$(cat "$T/env.err")"
"$SLUICE" run -c "$GWCONF" --workspace "$T" -- true 2>"$T/ws.err"
check_eq "--workspace with a VM: usage refused (exit 1)" 1 "$?"
no_leftovers "after the refusals"
check_nomatch "no sanitizer report from any sluice run" 'Sanitizer|runtime error' "$(cat "$T"/*.err)"

gw_final_checks
finish
