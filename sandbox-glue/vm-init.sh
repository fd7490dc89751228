#!/bin/busybox sh
# shellcheck shell=dash
# sandbox-glue/vm-init.sh: /init of the Sluice microVM (busybox sh; scripts/vm-image.sh copies it into the
# initramfs). Everything it needs comes from the kernel command line (written by sandbox-glue/qemu.c) and from
# the CA archive the launcher appends to the initramfs:
#   sluice.ip4=ADDR/30 sluice.gw4=ADDR [sluice.ip6=ADDR/126 sluice.gw6=ADDR]   eth0's addresses and gateways
#   sluice.env.NAME=VALUE ...                     placeholders to export (NAME: [A-Z_][A-Z0-9_]*; never secrets)
#   sluice.cmd=BASE64                             the command: its argv joined by NUL, base64
#   /sluice/ca.pem                                the gateway's CA, added to the guest's root bundle
# It runs the command, prints "SLUICE_EXIT <status>" on the console and powers off. Any failure prints
# "sluice-init: error: ..." and ends with "SLUICE_EXIT 125" (the line is always the last one it prints).
export PATH=/usr/bin:/bin
umask 022
/bin/busybox mount -t devtmpfs dev /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
set -f  # the command line is split on blanks below: no globbing of its words

off() {
  echo "SLUICE_EXIT $1"
  sync
  poweroff -f
  # poweroff needs ACPI; a reboot ends QEMU too (-no-reboot); and if both fail, PID 1 exits: panic=-1
  reboot -f
  exit "$1"
}
fail() { echo "sluice-init: error: $*"; off 125; }

mount -t proc proc /proc || fail "cannot mount /proc"
mount -t sysfs sys /sys || fail "cannot mount /sys"
mount -t tmpfs -o mode=1777 tmp /tmp || fail "cannot mount /tmp"
mount -t tmpfs -o mode=755 run /run || fail "cannot mount /run"
mkdir -p /dev/pts && mount -t devpts pts /dev/pts 2>/dev/null
echo "sluice-init: start (uptime $(cut -d' ' -f1 /proc/uptime))"

while read -r m; do
  [ -n "$m" ] || continue
  insmod "/lib/modules/$m" || fail "cannot load module $m"
done </etc/sluice-modules

ip4='' gw4='' ip6='' gw6='' cmd=''
for w in $(cat /proc/cmdline); do
  case $w in
    sluice.ip4=*) ip4=${w#*=} ;;
    sluice.gw4=*) gw4=${w#*=} ;;
    sluice.ip6=*) ip6=${w#*=} ;;
    sluice.gw6=*) gw6=${w#*=} ;;
    sluice.cmd=*) cmd=${w#*=} ;;
    sluice.env.*=*)
      kv=${w#sluice.env.}
      name=${kv%%=*}
      case $name in
        '' | [0-9]* | *[!A-Z0-9_]*) fail "bad placeholder name in sluice.env.$name" ;;
      esac
      export "$name=${kv#*=}" ;;
  esac
done
[ -n "$ip4" ] && [ -n "$gw4" ] || fail "no sluice.ip4 / sluice.gw4 on the kernel command line"
[ -n "$cmd" ] || fail "no sluice.cmd on the kernel command line"

# the network: eth0 appears when virtio_mmio has probed the card
i=0
while [ ! -e /sys/class/net/eth0 ]; do
  i=$((i + 1))
  [ $i -le 100 ] || fail "no eth0 (virtio-net) after 5 s"
  usleep 50000
done
ip link set lo up || fail "cannot bring up lo"
ip link set eth0 up || fail "cannot bring up eth0"
ip addr add "$ip4" dev eth0 || fail "cannot add $ip4 to eth0"
ip route add default via "$gw4" dev eth0 || fail "cannot route via $gw4"
: >/etc/resolv.conf
if [ -n "$ip6" ] && [ -n "$gw6" ]; then
  echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad
  echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_ra
  ip -6 addr add "$ip6" dev eth0 || fail "cannot add $ip6 to eth0"
  ip -6 route add default via "$gw6" dev eth0 || fail "cannot route via $gw6"
fi
echo "nameserver $gw4" >>/etc/resolv.conf
[ -n "$gw6" ] && echo "nameserver $gw6" >>/etc/resolv.conf

# the CA: the gateway's CA joins the public roots, wherever clients look
[ -s /sluice/ca.pem ] || fail "no CA archive: /sluice/ca.pem is missing from the initramfs"
B=/etc/ssl/certs/ca-certificates.crt
cat /sluice/ca.pem >>"$B" || fail "cannot install the CA into $B"
export SSL_CERT_FILE=$B CURL_CA_BUNDLE=$B REQUESTS_CA_BUNDLE=$B NODE_EXTRA_CA_CERTS=/sluice/ca.pem \
  GIT_SSL_CAINFO=$B PIP_CERT=$B npm_config_cafile=$B
export HOME=/root

# the command: argv from NUL-separated words; its status comes back through a file (xargs maps statuses)
echo "$cmd" | base64 -d >/run/sluice.argv 2>/dev/null || fail "sluice.cmd is not valid base64"
[ -s /run/sluice.argv ] || fail "sluice.cmd is empty"
echo "sluice-init: ready (uptime $(cut -d' ' -f1 /proc/uptime)), running the command"
cd /root || fail "no /root"
xargs -0 -a /run/sluice.argv sh -c '"$@"; echo $? >/run/sluice.status' sluice-cmd
st=$(cat /run/sluice.status 2>/dev/null)
case $st in
  '' | *[!0-9]*) fail "the command did not run" ;;
esac
off "$st"
