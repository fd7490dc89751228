#!/usr/bin/env bash
# scripts/vm-image.sh OUTDIR: builds the test microVM's kernel and initramfs for the qemu sandbox backend.
#
# Everything comes from the Debian archive through apt (signed Release files, checked hashes) and is unpacked with
# `dpkg-deb -x` into a temp dir; nothing is installed on the host:
#   - the kernel image package behind linux-image-amd64 (resolved with apt-cache): its compressed bzImage is turned
#     into the uncompressed ELF OUTDIR/vmlinux, which QEMU boots through PVH (-M microvm, no firmware);
#   - busybox-static: the guest's userland;
#   - the virtio modules -M microvm needs (virtio_mmio, virtio_net and what they depend on), unless the kernel's
#     config file says they are built in.
# OUTDIR/initrd.gz (cpio newc, gzip) holds busybox, the modules (load order in /etc/sluice-modules), /init (from
# sandbox-glue/vm-init.sh), the host's curl with its shared libraries (an HTTPS client for the guest) and the
# host's public root bundle. The per-run CA archive is appended to it by the launcher (qemu_initrd_compose).
#
# Idempotent: when OUTDIR/vmlinux and OUTDIR/initrd.gz are newer than this script and vm-init.sh it does nothing.
# The downloaded .debs are cached in OUTDIR/debs. Exit 0 with a summary, or 1 with the reason.
set -euo pipefail
export LC_ALL=C

die() { echo "vm-image: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 OUTDIR"
OUT=$1
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
SELF=$HERE/vm-image.sh
INIT=$HERE/../sandbox-glue/vm-init.sh
[ -f "$INIT" ] || die "missing $INIT"

if [ -f "$OUT/vmlinux" ] && [ -f "$OUT/initrd.gz" ] &&
   [ "$OUT/vmlinux" -nt "$SELF" ] && [ "$OUT/vmlinux" -nt "$INIT" ] &&
   [ "$OUT/initrd.gz" -nt "$SELF" ] && [ "$OUT/initrd.gz" -nt "$INIT" ]; then
  echo "vm-image: up to date: $OUT/vmlinux $OUT/initrd.gz"
  exit 0
fi

for t in apt-get apt-cache dpkg-deb gzip tr grep find sort; do
  command -v "$t" >/dev/null 2>&1 || die "needs $t"
done
mkdir -p "$OUT/debs"
OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/sluice-vm-image.XXXXXX")
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"  # apt-get download drops privileges to _apt, which must reach $W/dl

# --- the packages -------------------------------------------------------------------------------------------
kernel_pkg() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}
KPKG=$(kernel_pkg)
if [ -z "$KPKG" ]; then
  # no package lists yet (a fresh container): fetch them once
  apt-get update -qq >"$W/apt-update.log" 2>&1 || { cat "$W/apt-update.log" >&2; die "apt-get update failed (no network?)"; }
  KPKG=$(kernel_pkg)
fi
[ -n "$KPKG" ] || die "apt-cache cannot resolve the kernel package behind linux-image-amd64"

# fetch PKG into OUT/debs unless a .deb of its current candidate version is cached there
fetch() {
  local pkg=$1 ver file
  ver=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: //p')
  [ -n "$ver" ] && [ "$ver" != "(none)" ] || die "no candidate version for $pkg in the apt sources"
  file=$(find "$OUT/debs" -maxdepth 1 -name "${pkg}_*.deb" | while read -r f; do
           [ "$(dpkg-deb -f "$f" Version 2>/dev/null)" = "$ver" ] && { echo "$f"; break; }; done)
  if [ -z "$file" ]; then
    # _apt cannot write into a root-owned directory: download in a world-writable temp dir, then move
    mkdir -p "$W/dl" && chmod 777 "$W/dl"
    (cd "$W/dl" && apt-get download "$pkg=$ver") >"$W/dl.log" 2>&1 ||
      { cat "$W/dl.log" >&2; die "cannot download $pkg $ver from the Debian archive (no network?)"; }
    file=$(find "$W/dl" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
    [ -n "$file" ] || die "apt-get download $pkg left no .deb"
    mv "$file" "$OUT/debs/" && file=$OUT/debs/$(basename "$file")
    echo "vm-image: downloaded $(basename "$file")"
  fi
  dpkg-deb -x "$file" "$W/x" || die "dpkg-deb -x $file failed"
  echo "$pkg $ver" >>"$W/versions"
}
mkdir -p "$W/x"
fetch "$KPKG"
fetch busybox-static
BB=$W/x/bin/busybox
[ -x "$BB" ] || die "busybox-static has no /bin/busybox"

KVER=${KPKG#linux-image-}
KCONFIG=$W/x/boot/config-$KVER
BZIMAGE=$W/x/boot/vmlinuz-$KVER
MODDIR=$W/x/lib/modules/$KVER
[ -f "$KCONFIG" ] && [ -f "$BZIMAGE" ] && [ -d "$MODDIR" ] || die "$KPKG lacks its config, vmlinuz or modules"

# --- vmlinux: the ELF inside the bzImage (as the kernel's scripts/extract-vmlinux does) ------------------------
# Finds each compression magic in the image and decompresses from there until the output is an ELF file.
is_elf() { [ -s "$1" ] && [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
try_decompress() {   # MAGIC_REGEX(PCRE bytes) COMMAND...
  local magic=$1 off n=0; shift
  command -v "$1" >/dev/null 2>&1 || return 1
  for off in $(grep -obUaP "$magic" "$BZIMAGE" | cut -d: -f1); do
    n=$((n + 1)); [ $n -le 32 ] || return 1
    tail -c +$((off + 1)) "$BZIMAGE" | "$@" >"$W/vmlinux" 2>/dev/null || true
    is_elf "$W/vmlinux" && return 0
  done
  return 1
}
try_decompress '\x1f\x8b\x08' gzip -dc ||
  try_decompress '\xfd7zXZ\x00' xz -dc ||
  try_decompress '\x28\xb5\x2f\xfd' zstd -dcq ||
  try_decompress 'BZh' bzip2 -dc ||
  try_decompress '\x5d\x00\x00\x00' xz -dc --format=lzma ||
  try_decompress '\x02\x21\x4c\x18' lz4 -dc ||
  die "no compressed ELF kernel found in $(basename "$BZIMAGE")"
if command -v readelf >/dev/null 2>&1; then
  # PVH entry: the Xen ELF note XEN_ELFNOTE_PHYS32_ENTRY (type 0x12) QEMU looks for
  readelf -n "$W/vmlinux" 2>/dev/null | grep -qE 'Xen[[:space:]]+0x[0-9a-f]+[[:space:]]+(Unknown note type: \(0x00000012\)|.*PHYS32_ENTRY)' ||
    die "the kernel has no PVH entry note (CONFIG_PVH): QEMU cannot boot it as vmlinux"
fi

# --- modules -------------------------------------------------------------------------------------------------
# a module named in the config as =y needs nothing; =m is loaded from the initramfs, with its dependencies first
# (read from the .modinfo "depends=" field); unset is an error.
declare -A KO=() SEEN=()
while read -r f; do n=${f##*/}; n=${n%.ko}; KO[${n//-/_}]=$f; done < <(find "$MODDIR/kernel" -name '*.ko')
ORDER=()
add_mod() {
  local m=$1 d deps
  [ -n "${SEEN[$m]:-}" ] && return 0
  [ -n "${KO[$m]:-}" ] || die "module $m not found in $KPKG"
  SEEN[$m]=1
  deps=$(tr '\0' '\n' <"${KO[$m]}" | sed -n 's/^depends=//p' | head -n 1)
  for d in ${deps//,/ }; do add_mod "${d//-/_}"; done
  ORDER+=("$m")
}
for sym in VIRTIO VIRTIO_MMIO VIRTIO_NET; do
  val=$(sed -n "s/^CONFIG_$sym=//p" "$KCONFIG")
  case $val in
    y) ;;
    m) add_mod "${sym,,}" ;;
    *) die "CONFIG_$sym is not set in $KPKG: it cannot drive -M microvm's virtio-mmio network card" ;;
  esac
done

# --- the initramfs tree ----------------------------------------------------------------------------------------
R=$W/root
mkdir -p "$R"/{bin,sbin,dev,proc,sys,tmp,run,root,sluice,etc/ssl/certs,usr/bin,lib/x86_64-linux-gnu,lib64,lib/modules}
chmod 1777 "$R/tmp"
cp "$BB" "$R/bin/busybox"
for a in $("$BB" --list); do [ "$a" = busybox ] || ln -s busybox "$R/bin/$a"; done
: >"$R/etc/sluice-modules"
for m in "${ORDER[@]}"; do
  cp "${KO[$m]}" "$R/lib/modules/$m.ko"
  echo "$m.ko" >>"$R/etc/sluice-modules"
done
cp "$INIT" "$R/init" && chmod 755 "$R/init"
CURL=$(command -v curl) || die "the host has no curl to put into the guest"
cp -L "$CURL" "$R/usr/bin/curl"
# the shared libraries and the loader, each at the path ldd names (the guest has no ld.so.cache)
ldd "$CURL" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
  mkdir -p "$R$(dirname "$lib")"
  cp -L "$lib" "$R$lib"
done
[ -f "$R/lib64/ld-linux-x86-64.so.2" ] || die "ldd named no /lib64/ld-linux-x86-64.so.2 for curl"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp -L /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"  # public roots only
else
  : >"$R/etc/ssl/certs/ca-certificates.crt"
fi
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
printf 'hosts: files dns\n' >"$R/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$R/etc/hosts"
cp "$W/versions" "$R/etc/sluice-image"

(cd "$R" && find . -mindepth 1 | sort | "$BB" cpio -o -H newc 2>/dev/null) | gzip -9n >"$W/initrd.gz"
[ -s "$W/initrd.gz" ] || die "cpio produced nothing"
mv -f "$W/vmlinux" "$OUT/vmlinux"
mv -f "$W/initrd.gz" "$OUT/initrd.gz"
{ cat "$W/versions"; echo "modules ${ORDER[*]}"; } >"$OUT/image.txt"
echo "vm-image: made $OUT/vmlinux ($(du -h --apparent-size "$OUT/vmlinux" | cut -f1), $KPKG, PVH ELF)"
echo "vm-image: made $OUT/initrd.gz ($(du -h --apparent-size "$OUT/initrd.gz" | cut -f1): busybox, modules ${ORDER[*]}, /init, curl + $(find "$R/lib" "$R/lib64" -name '*.so*' | wc -l) libraries)"
