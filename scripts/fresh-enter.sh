#!/usr/bin/env bash
# scripts/fresh-enter.sh ROOT CMD [ARG...] - runs CMD inside the Debian root ROOT, as root, with nothing of this
# machine's file system visible, and with an empty environment (PATH, HOME, TERM, LANG and CI only).
#
# The root is entered with a new mount namespace and pivot_root, not chroot: the kernel refuses user namespaces
# to a chrooted process (so bubblewrap, hence `sluice run`, would fail inside a chroot). A new PID namespace
# too: when CMD ends or this script is killed, every process started inside dies with the namespace's init,
# and the mounts made here (ROOT bound onto itself, a fresh /proc, /sys, /dev, an empty /run) vanish
# with the mount namespace: nothing stays mounted on the host. The network namespace is the host's: apt reaches
# Debian's archive, tests use loopback and make their own namespaces and nft tables (which they remove).
#
# Exit status: CMD's.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 ROOT CMD [ARG...]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "fresh-enter: run me as root" >&2; exit 2; }
ROOT=$(readlink -f "$1"); shift
[ -x "$ROOT/bin/sh" ] && [ -d "$ROOT/etc" ] || { echo "fresh-enter: $ROOT is not a Debian root" >&2; exit 2; }

if [ "${FRESH_ENTER_INNER:-}" != 1 ]; then
	# the mount and PID namespaces; --kill-child: if this script is killed, the namespace's init goes too
	exec unshare --mount --pid --fork --kill-child=SIGTERM --propagation private \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin FRESH_ENTER_INNER=1 CI="${CI:-}" bash "$0" "$ROOT" "$@"
fi

# inside the new namespaces: ROOT becomes a mount point of its own, then the new /
mount --bind "$ROOT" "$ROOT"
mount -t proc -o nosuid,nodev,noexec proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --make-rslave "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"   # /dev/net/tun, /dev/kvm (where there is one), /dev/pts, /dev/shm
mount --make-rslave "$ROOT/dev"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$ROOT/run"
chmod 1777 "$ROOT/tmp"              # the root's own /tmp (a caller may put files there from outside)
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"   # the host's resolver, for apt
mkdir -p "$ROOT/.oldroot"
cd "$ROOT"
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot 2>/dev/null || true
# This shell stays the namespace's init: it reaps orphans, and on SIGTERM/SIGINT (scripts/fresh-check.sh sends
# it one when interrupted) it passes SIGTERM to every process inside, so each test's trap removes its namespaces
# and nft tables, then, 15 s later, SIGKILL to what is left.
others() { local n=0 p; for p in /proc/[0-9]*; do [ "${p#/proc/}" = $$ ] || n=$((n + 1)); done; echo "$n"; }
stop_all() {
	trap - TERM INT
	kill -TERM -1 2>/dev/null || true
	for _ in $(seq 150); do [ "$(others)" -eq 0 ] && break; sleep 0.1; done
	kill -KILL -1 2>/dev/null || true
	exit 143
}
trap stop_all TERM INT
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C.UTF-8 CI="${CI:-}" "$@" &
child=$!
rc=0
wait "$child" || rc=$?
exit "$rc"
