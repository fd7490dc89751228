#!/usr/bin/env bash
# tests/integration/test_run_workspace.sh - `sluice run --workspace` (issue 19, item 7) refuses a directory that
# is, contains, or is inside a path the launcher hides from the sandbox (the CA directory, the audit file, the
# admin socket, file: secrets), by resolved path and by device/inode: through a symlink, a bind mount of a
# parent, a bind mount of a subdirectory, a hard link, and for an audit file not made yet. The refusal comes
# before any sandbox exists; the control (an unrelated workspace) runs a command in /workspace, which is the
# directory checked (bound by its descriptor). Everything made here is under $T; bind mounts are undone.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
mkdir -p "$T/home/keys" "$T/home/ca" "$T/home/logs" "$T/ws" "$T/other"
CA=$T/home/ca AUDIT=$T/home/logs/audit.jsonl
printf 'k\n' >"$T/home/keys/token"; chmod 600 "$T/home/keys/token"
GW_EXTRA="secrets:
  tok:
    source: file:$T/home/keys/token
    hosts: [api.example.test]"
policy_base | gw_conf
MOUNTS=()
undo_mounts() { local m; for m in "${MOUNTS[@]}"; do umount -l "$m" 2>/dev/null; done; }
trap 'undo_mounts; cleanup' EXIT

refused() { # refused LABEL DIR EXPECTED-WORD
  local out rc
  out=$(timeout 30 "$SLUICE" run -c "$GWCONF" --workspace "$2" -- true 2>&1); rc=$?
  if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q "which the sandbox must not see" &&
     printf '%s' "$out" | grep -q -- "$3"; then ok "$1"; else bad "$1 (rc $rc: $(printf '%s' "$out" | tail -n 2))"; fi
}
refused "the CA directory itself" "$T/home/ca" " is $T/home/ca"
refused "a parent of the CA directory" "$T/home" "contains"
mkdir -p "$T/home/ca/sub"
refused "a directory inside the CA directory" "$T/home/ca/sub" "is inside"
ln -s "$T/home/ca" "$T/link-to-ca"
refused "a symlink to the CA directory" "$T/link-to-ca" " is "
refused "the directory of a file: secret" "$T/home/keys" "contains"
refused "the audit file's directory (the file is not made yet)" "$T/home/logs" "contains"
# bind mounts: the same directories under other names
mkdir -p "$T/bm-parent" "$T/bm-sub"
mount --bind "$T/home" "$T/bm-parent" && MOUNTS+=("$T/bm-parent")
refused "a bind mount of the CA's parent" "$T/bm-parent" "contains"
mount --bind "$T/home/ca/sub" "$T/bm-sub" && MOUNTS+=("$T/bm-sub")
refused "a bind mount of a directory inside the CA directory" "$T/bm-sub" "bind mount"
# a hard link to the secret file inside an otherwise unrelated directory
mkdir -p "$T/hl"; ln "$T/home/keys/token" "$T/hl/copy"
refused "a second hard link to a file: secret on the workspace's file system" "$T/hl" "hard link"
rm -f "$T/hl/copy"
undo_mounts; MOUNTS=()

# the control: an unrelated workspace is bound, and it is the directory checked
gw_start
printf 'probe\n' >"$T/ws/marker"; chmod 755 "$T/ws"; chmod 644 "$T/ws/marker"
out=$(cd / && timeout 60 env -i PATH=/usr/bin:/bin "$SLUICE" run -c "$GWCONF" --workspace "$T/ws" -- \
  sh -c 'cat /workspace/marker; pwd' 2>"$T/run.err")
check_eq "an unrelated workspace runs, with /workspace bound" "probe
/workspace" "$out"
finish
