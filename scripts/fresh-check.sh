#!/usr/bin/env bash
# scripts/fresh-check.sh - proves the README's two commands on a new Debian 12 machine that this one cannot fake.
#
# Makes a minimal Debian 12 root (`debootstrap --variant=minbase bookworm`; debootstrap's output is cached as a
# tarball and every run starts from a fresh copy of it, never from this machine's root), copies the checkout in,
# enters it (scripts/fresh-enter.sh: a new mount and PID namespace and pivot_root, not chroot) and runs, with
# nothing installed by hand and an empty environment:
#   1. scripts/demo.sh                                 (it installs what it needs, builds, runs the demo: exit 0)
#   2. scripts/deps.sh test                            (what the tests need on top)
#   3. the Release build and the whole Release ctest  (unit and integration tests, in a network namespace of
#      their own: loopback only)
# When a step fails it names the command, module or package that was missing (from the step's log), then the
# log's tail. Interrupted (Ctrl-C, SIGTERM): every process inside gets SIGTERM (their traps remove their
# namespaces and nft tables), then SIGKILL; nothing stays mounted (the mounts live in the namespace); the copy is
# removed.
#
# Usage: scripts/fresh-check.sh              the whole check, as root, from the checkout; exit 0 iff all passed
#        scripts/fresh-check.sh --base DIR   only make DIR a pristine copy of the base root (for other checks,
#                                            such as scripts/package-check.sh) and exit
# Environment:
#   SLUICE_FRESH_CACHE   where the base tarball is kept (default /var/cache/sluice-fresh)
#   FRESH_MIRROR         the Debian archive (default: http://deb.debian.org/debian)
#   FRESH_KEEP=1         keep the root after the run (its path is printed)
#   FRESH_STEPS          the steps to run (default "demo deps build ctest")
#   FRESH_CTEST_ARGS     extra ctest arguments (e.g. "-R integration/run_")
set -euo pipefail
SRC=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
CACHE=${SLUICE_FRESH_CACHE:-/var/cache/sluice-fresh}
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
STEPS=${FRESH_STEPS:-demo deps build ctest}
T0=$SECONDS

say() { printf 'fresh-check: %s\n' "$*"; }
die() { printf 'fresh-check: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run me as root (debootstrap, mount namespaces, the tests' netns and nftables)"
for t in debootstrap unshare zstd tar; do
	command -v "$t" >/dev/null 2>&1 || die "needs $t (scripts/deps.sh test installs it)"
done

# ------------------------------------------------------------------ the base: debootstrap's output, cached
BASE_TAR=$CACHE/$SUITE-minbase-$(dpkg-query -W -f='${Version}' debootstrap).tar.zst
make_base() {
	local d rc=0
	[ -s "$BASE_TAR" ] && return 0
	mkdir -p "$CACHE"
	d=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
	say "debootstrap --variant=minbase $SUITE (cached afterwards in $BASE_TAR)"
	debootstrap --variant=minbase "$SUITE" "$d/root" "$MIRROR" >"$d/log" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 15 "$d/log" >&2
		rm -rf "$d"
		die "debootstrap failed (exit $rc): is Debian's archive ($MIRROR) reachable?"
	fi
	tar -C "$d/root" --numeric-owner -caf "$d/base.tar.zst" .
	mv "$d/base.tar.zst" "$BASE_TAR"
	rm -rf "$d"
}
# fresh_root DIR: DIR becomes a pristine copy of the base, with apt pointed at bookworm, its updates and security
# (the versions a Debian 12 machine gets), and a root directory the sandbox's uid can read
fresh_root() {
	local dir=$1
	make_base
	mkdir -p "$dir"
	tar -C "$dir" --numeric-owner -xaf "$BASE_TAR"
	chmod 0755 "$dir"
	cat >"$dir/etc/apt/sources.list" <<-EOF
		deb $MIRROR $SUITE main
		deb $MIRROR $SUITE-updates main
		deb ${MIRROR%/debian}/debian-security $SUITE-security main
	EOF
	# the machine's site CAs (an egress or corporate proxy's): a new machine on this network has them too, and
	# ca-certificates (deps.sh installs it) adds them to the store when it is installed
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		mkdir -p "$dir/usr/local/share/ca-certificates"
		cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
	fi
	echo "sluice-fresh" >"$dir/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 sluice-fresh\n::1 localhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
}

if [ "${1:-}" = --base ]; then
	[ $# -eq 2 ] || die "usage: $0 --base DIR"
	[ ! -e "$2" ] || [ -z "$(ls -A "$2")" ] || die "--base $2: the directory is not empty"
	fresh_root "$2"
	say "base root ready in $2 ($((SECONDS - T0)) s)"
	exit 0
fi
[ $# -eq 0 ] || die "usage: $0 [--base DIR]"

# ------------------------------------------------------------------ the run
W=$(mktemp -d /var/tmp/sluice-fresh.XXXXXX)
chmod 0755 "$W"
R=$W/root
INNER=''
cleanup() {
	local rc=$? i
	trap - EXIT INT TERM
	if [ -n "$INNER" ] && kill -0 "$INNER" 2>/dev/null; then
		say "stopping what runs inside the root"
		pkill -TERM -P "$INNER" 2>/dev/null || true   # the namespace's init: it passes SIGTERM on, then SIGKILL
		for i in $(seq 250); do kill -0 "$INNER" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$INNER" 2>/dev/null || true
		wait "$INNER" 2>/dev/null || true
	fi
	if grep -qF " $R" /proc/self/mountinfo; then   # never expected: the mounts live in the namespace
		grep -F " $R" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	fi
	if [ "${FRESH_KEEP:-0}" = 1 ]; then say "kept $R"; else rm -rf --one-file-system "$W"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t=$SECONDS
fresh_root "$R"
say "fresh root in $R ($((SECONDS - t)) s)"

# the checkout: what git tracks and what it does not ignore (so an uncommitted change is checked too), no build/
mkdir -p "$R/src/sluice"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -C "$R/src/sluice" -xf -
else
	tar -C "$SRC" --exclude=./build -cf - . | tar -C "$R/src/sluice" -xf -
fi

# run_step NAME SCRIPT: runs SCRIPT in the root (bash -c, cwd /src/sluice); output to $W/NAME.log and, indented,
# here; on failure says what was missing
run_step() {
	local name=$1 script=$2 rc=0 t=$SECONDS
	say "== $name"
	: >"$W/$name.log"   # before the follower starts: tail -f on a file not there yet gives up at once
	"$SRC/scripts/fresh-enter.sh" "$R" bash -c "cd /src/sluice && $script" >>"$W/$name.log" 2>&1 &
	INNER=$!
	tail -n +1 -f --pid="$INNER" "$W/$name.log" 2>/dev/null | sed -u 's/^/   | /' &
	local tailer=$!
	wait "$INNER" || rc=$?
	INNER=''
	wait "$tailer" 2>/dev/null || true
	TIMES+=("$name $((SECONDS - t)) s")
	[ $rc -eq 0 ] && return 0
	say "step '$name' failed (exit $rc) in the fresh root"
	missing "$W/$name.log"
	[ "${FRESH_KEEP:-0}" = 1 ] && say "its log: $W/$name.log"
	exit 1
}
# what a log says was missing: commands, shared libraries, pkg-config modules, Python modules, lib.sh's tool checks
missing() {
	local hits
	hits=$(grep -aE "command not found|: not found$|No such file or directory.*(exec|bwrap|/usr/s?bin/)|exec .*: No such file|Package '[^']+'.* not found|No module named|is missing|required tool|error while loading shared libraries|Could not find|not installed" "$1" |
		sed 's/^/     /' | sort -u | head -n 20) || true
	if [ -n "$hits" ]; then
		say "what was missing (from the log):"
		printf '%s\n' "$hits"
	else
		say "nothing in the log names a missing command or package; its last lines:"
		tail -n 30 "$1" | sed 's/^/     /'
	fi
}

TIMES=()
for s in $STEPS; do
	case $s in
		demo)  run_step demo "./scripts/demo.sh" ;;
		deps)  run_step deps "./scripts/deps.sh test" ;;
		build) run_step build "cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build/release -j\$(nproc)" ;;
		# the tests in a network namespace of their own (only loopback, up; /sys mounted again to show its
		# devices): what they make (listeners, nft tables, veths, namespaces, the guard's counters) never meets
		# this machine's, nor scripts/test.sh's sanitized tests that run beside them; no test needs more than
		# loopback and what it makes
		# (the QEMU tests' kernel and initramfs come from the Debian archive: scripts/vm-image.sh makes them
		# first, with the network, into the cache the tests read)
		ctest) run_step ctest "bash scripts/vm-image.sh \${SLUICE_VM_CACHE:-/var/cache/sluice-test-vm} && unshare --net --mount -- bash -c 'mount -t sysfs sysfs /sys && ip link set lo up && exec ctest --test-dir build/release --output-on-failure ${FRESH_CTEST_ARGS:-}'" ;;
		*) die "unknown step $s" ;;
	esac
done
say "passed in $((SECONDS - T0)) s ($(IFS=,; echo "${TIMES[*]}" | sed 's/,/, /g'))"
