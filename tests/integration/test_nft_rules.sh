#!/usr/bin/env bash
# The nftables table of a sandbox (sandbox-glue/nft.c), proved with real traffic.
#
# The rules come from the unit-test binary test_nft in helper mode (there is no CLI for them yet): this script
# finds it next to the sluice binary's build tree, $(dirname $SLUICE)/../tests/unit/sandbox/test_nft, and runs
# `test_nft --print|--apply|--remove ID INDEX TPORT DPORT`, `--stale`, `--rejected TABLE` (see test_nft.c).
#
# Everything happens in namespaces made here, named from a random 8-hex sandbox id SID, so the machine's own
# ruleset is never touched and no concurrent run can delete the table:
#   sbh_SID  plays the host: the plan's table is applied there (nft_apply), with listeners on the transparent
#            port (python3, reports the original destination via SO_ORIGINAL_DST), the DNS port, and another
#            port (must see nothing); IP forwarding is on in it, so the forward chain is what stops routing;
#   sbn_SID  the sandbox, on the plan's veth pair (host side slhSID, sandbox side slsSID) and addresses;
#   sbo_SID  another host behind sbh_SID (a second veth), reachable by routing before the rules, not after.
# Addresses only in 10.200.0.0/16 and fd00:5c::/64. The lib.sh trap deletes the three namespaces (and with them
# the veths and the table) on exit, also on failure.
# Checks: before the rules the paths work (so the refusals below can fail); with the rules: TCP to any port of
# any address (v4/v6, the other host, the host itself) lands on the transparent listener with its original
# destination; UDP 53 to any address reaches the DNS listener; TCP 53 is refused; UDP to another port reaches
# nothing (refused on the host, dropped when routed); nothing is forwarded either way; a spoofed source gets
# nothing; the `rejected` counter grew; re-applying replaces the table; `--stale` finds it; removal is clean
# and idempotent.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

TNFT=$(readlink -f "$(dirname "$SLUICE")/../tests/unit/sandbox/test_nft")
[ -x "$TNFT" ] || die "no test_nft helper at $(dirname "$SLUICE")/../tests/unit/sandbox/test_nft (build target test_nft)"

SID=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
IDX=$((RANDOM % 16383 + 1))
OIDX=$((IDX % 16383 + 1))
HNS=sbh_$SID SNS=sbn_$SID ONS=sbo_$SID
HIF=slh$SID SIF=sls$SID OHIF=sboh$SID OSIF=sbos$SID
TBL=sluice_$SID
ports=$(shuf -i 20000-60000 -n 3)
read -r TPORT DPORT OPORT <<<"$(echo $ports)"
H() { ip netns exec "$HNS" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
S() { ip netns exec "$SNS" env -i PATH=/usr/bin:/bin "$@"; }
O() { ip netns exec "$ONS" env -i PATH=/usr/bin:/bin "$@"; }

# the plan's addresses, from the rendered script's first line
plan_addrs() {  # ID INDEX -> "SBX4 SBX6 HOST4 HOST6"
  "$TNFT" --print "$1" "$2" 1 2 | sed -n '1s/.*: sandbox \([0-9.]*\) \/ \([0-9a-f:]*\) on .*(host side \([0-9.]*\) \/ \([0-9a-f:]*\))$/\1 \2 \3 \4/p'
}
read -r SBX4 SBX6 HOST4 HOST6 <<<"$(plan_addrs "$SID" "$IDX")"
read -r OTH4 OTH6 OGW4 OGW6 <<<"$(plan_addrs "$SID" "$OIDX")"
[ -n "$HOST6" ] && [ -n "$OGW6" ] || die "could not read the plan's addresses from test_nft --print"
# an address of no one, inside 10.200.0.0/16 and fd00:5c::/64 (block 0 is never a sandbox's)
NOONE4=10.200.0.2 NOONE6=fd00:5c::2

# ---------------------------------------------------------------- namespaces
for n in "$HNS" "$SNS" "$ONS"; do
  ip netns add "$n" || die "ip netns add $n"
  NETNS+=("$n")
  ip -n "$n" link set lo up
done
ip link add "$HIF" netns "$HNS" type veth peer name "$SIF" netns "$SNS" || die "veth $HIF"
ip link add "$OHIF" netns "$HNS" type veth peer name "$OSIF" netns "$ONS" || die "veth $OHIF"
ip -n "$HNS" addr add "$HOST4/30" dev "$HIF"; ip -n "$HNS" addr add "$HOST6/126" dev "$HIF" nodad
ip -n "$HNS" addr add "$OGW4/30" dev "$OHIF"; ip -n "$HNS" addr add "$OGW6/126" dev "$OHIF" nodad
ip -n "$SNS" addr add "$SBX4/30" dev "$SIF"; ip -n "$SNS" addr add "$SBX6/126" dev "$SIF" nodad
ip -n "$ONS" addr add "$OTH4/30" dev "$OSIF"; ip -n "$ONS" addr add "$OTH6/126" dev "$OSIF" nodad
for l in "$HNS $HIF" "$HNS $OHIF" "$SNS $SIF" "$ONS $OSIF"; do set -- $l; ip -n "$1" link set "$2" up; done
ip -n "$SNS" route add default via "$HOST4"; ip -n "$SNS" -6 route add default via "$HOST6"
ip -n "$ONS" route add default via "$OGW4"; ip -n "$ONS" -6 route add default via "$OGW6"
# the host's default route leads to the other host, so what the sandbox sends to unused addresses is routed
ip -n "$HNS" route add default via "$OTH4"; ip -n "$HNS" -6 route add default via "$OTH6"
H sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 || die "forwarding in $HNS"

# ---------------------------------------------------------------- listeners and client
NL=$T/nl.py
cat >"$NL" <<'PY'
import errno, select, socket, struct, sys
def listeners(kind, port):
    out = []
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((addr, port))
        if kind == "tcp":
            s.listen(64)
        out.append(s)
    return out
def orig(c):
    try:
        if c.family == socket.AF_INET:
            b = c.getsockopt(socket.SOL_IP, 80, 16)
            return "%s:%d" % (socket.inet_ntop(socket.AF_INET, b[4:8]), struct.unpack("!H", b[2:4])[0])
        b = c.getsockopt(socket.IPPROTO_IPV6, 80, 28)
        return "[%s]:%d" % (socket.inet_ntop(socket.AF_INET6, b[8:24]), struct.unpack("!H", b[2:4])[0])
    except OSError:
        return "none"
def serve(kind, port, log):
    ls = listeners(kind, int(port))
    while True:
        for s in select.select(ls, [], [])[0]:
            if kind == "tcp":
                c, peer = s.accept()
                line = "PORT %s FROM %s ORIG %s" % (port, peer[0], orig(c))
                c.sendall((line + "\n").encode()); c.close()
            else:
                data, peer = s.recvfrom(2048)
                line = "PORT %s FROM %s UDP %r" % (port, peer[0], data)
                s.sendto(b"reply " + port.encode(), peer)
            with open(log, "a") as f:
                f.write(line + "\n")
def client(kind, addr, port, src=None):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.settimeout(3)
    try:
        if src:
            s.bind((src, 0))
        s.connect((addr, int(port)))
        if kind == "udp":
            s.send(b"query")
        print(s.recv(200).decode().strip())
    except socket.timeout:
        print("timeout")
    except OSError as e:
        print("error " + errno.errorcode.get(e.errno, str(e.errno)))
if __name__ == "__main__":
    {"serve": serve, "client": client}[sys.argv[1]](*sys.argv[2:])
PY
LOG_T=$T/tport.log LOG_D=$T/dport.log LOG_HO=$T/host-other.log LOG_O=$T/other.log LOG_S=$T/sandbox.log
touch "$LOG_T" "$LOG_D" "$LOG_HO" "$LOG_O" "$LOG_S"
spawn "$T/l1.out" ip netns exec "$HNS" "$PY" "$NL" serve tcp "$TPORT" "$LOG_T"
spawn "$T/l2.out" ip netns exec "$HNS" "$PY" "$NL" serve udp "$DPORT" "$LOG_D"
spawn "$T/l3.out" ip netns exec "$HNS" "$PY" "$NL" serve tcp "$OPORT" "$LOG_HO"
spawn "$T/l4.out" ip netns exec "$HNS" "$PY" "$NL" serve udp "$OPORT" "$LOG_HO"
spawn "$T/l5.out" ip netns exec "$ONS" "$PY" "$NL" serve tcp "$OPORT" "$LOG_O"
spawn "$T/l6.out" ip netns exec "$ONS" "$PY" "$NL" serve udp "$OPORT" "$LOG_O"
spawn "$T/l7.out" ip netns exec "$SNS" "$PY" "$NL" serve udp "$OPORT" "$LOG_S"
for p in "$HNS $TPORT" "$HNS $OPORT" "$ONS $OPORT"; do
  set -- $p
  eventually 5 sh -c "ip netns exec $1 ss -ltnH 'sport = :$2' | grep -q ." || die "listener on $1:$2 did not start"
done
eventually 5 sh -c "ip netns exec $HNS ss -lunH 'sport = :$DPORT' | grep -q ." || die "udp listener did not start"
eventually 5 sh -c "ip netns exec $SNS ss -lunH 'sport = :$OPORT' | grep -q ." || die "udp listener did not start"
SC() { S "$PY" "$NL" client "$@"; }   # SC tcp|udp ADDR PORT [SRC]: from the sandbox
OC() { O "$PY" "$NL" client "$@"; }

# ---------------------------------------------------------------- before the rules: the paths work
check_eq "before: TCP from the sandbox to the other host's port gets there" \
  "PORT $OPORT FROM $SBX4 ORIG none" "$(SC tcp "$OTH4" "$OPORT")"
check_eq "before: UDP from the sandbox to the other host's port gets there" "reply $OPORT" "$(SC udp "$OTH4" "$OPORT")"
check_eq "before: TCP from the sandbox to another host port gets there" \
  "PORT $OPORT FROM $SBX6 ORIG none" "$(SC tcp "$HOST6" "$OPORT")"
check_eq "before: UDP from the other host into the sandbox gets there" "reply $OPORT" "$(OC udp "$SBX4" "$OPORT")"
: >"$LOG_O"; : >"$LOG_HO"; : >"$LOG_S"

# ---------------------------------------------------------------- apply
check "the rendered script passes nft -c (in $HNS)" sh -c "'$TNFT' --print $SID $IDX $TPORT $DPORT | ip netns exec $HNS nft -c -f -"
out=$(H "$TNFT" --apply "$SID" "$IDX" "$TPORT" "$DPORT" 2>&1); rc=$?
check_eq "nft_apply of the plan's table succeeds" "0 " "$rc $out"
out=$(H "$TNFT" --apply "$SID" "$IDX" "$TPORT" "$DPORT" 2>&1); rc=$?
check_eq "applying it again (replace) succeeds" "0 " "$rc $out"
check_eq "one table in $HNS, the plan's" "table inet $TBL" "$(H nft list tables)"
check_eq "the machine's own ruleset has no such table" "" "$(nft list tables 2>/dev/null | grep -F "$TBL")"
check_eq "the listed table has the rules as rendered (redirects)" 3 "$(H nft list chain inet "$TBL" prerouting | grep -c redirect)"
check_eq "--stale finds the table" "$TBL" "$(H "$TNFT" --stale)"
read -r R0 _ <<<"$(H "$TNFT" --rejected "$TBL")"
check_eq "rejected counter starts at 0" 0 "$R0"

# ---------------------------------------------------------------- TCP: anything lands on the transparent port
check_eq "TCP v4 to the other host's port lands on the transparent listener, original destination kept" \
  "PORT $TPORT FROM $SBX4 ORIG $OTH4:$OPORT" "$(SC tcp "$OTH4" "$OPORT")"
check_eq "TCP v4 to an unused address, port 443: transparent listener" \
  "PORT $TPORT FROM $SBX4 ORIG $NOONE4:443" "$(SC tcp "$NOONE4" 443)"
check_eq "TCP v4 to an unused address, port 22: transparent listener" \
  "PORT $TPORT FROM $SBX4 ORIG $NOONE4:22" "$(SC tcp "$NOONE4" 22)"
check_eq "TCP v6 to an unused address, port 8443: transparent listener" \
  "PORT $TPORT FROM $SBX6 ORIG [$NOONE6]:8443" "$(SC tcp "$NOONE6" 8443)"
check_eq "TCP v6 to the other host: transparent listener" \
  "PORT $TPORT FROM $SBX6 ORIG [$OTH6]:$OPORT" "$(SC tcp "$OTH6" "$OPORT")"
check_eq "TCP v4 straight to another host-side port: transparent listener, not that port" \
  "PORT $TPORT FROM $SBX4 ORIG $HOST4:$OPORT" "$(SC tcp "$HOST4" "$OPORT")"
check_eq "TCP v6 straight to the DNS port: transparent listener" \
  "PORT $TPORT FROM $SBX6 ORIG [$HOST6]:$DPORT" "$(SC tcp "$HOST6" "$DPORT")"

# ---------------------------------------------------------------- DNS
check_eq "UDP 53 v4 to an unused address: answered by the DNS listener" "reply $DPORT" "$(SC udp "$NOONE4" 53)"
check_eq "UDP 53 v6 to the other host: answered by the DNS listener" "reply $DPORT" "$(SC udp "$OTH6" 53)"
check_eq "UDP 53 to the host itself: DNS listener" "reply $DPORT" "$(SC udp "$HOST4" 53)"
check_eq "the DNS listener saw the three queries, from the sandbox" \
  "3 $SBX4 $SBX6 $SBX4" "$(wc -l <"$LOG_D") $(awk '{printf "%s ", $4}' "$LOG_D" | sed 's/ $//')"
check_eq "TCP 53 v4 is refused" "error ECONNREFUSED" "$(SC tcp "$NOONE4" 53)"
check_eq "TCP 53 v6 is refused" "error ECONNREFUSED" "$(SC tcp "$OTH6" 53)"
check_eq "TCP 53 to the host itself is refused" "error ECONNREFUSED" "$(SC tcp "$HOST4" 53)"

# ---------------------------------------------------------------- UDP elsewhere: nothing
check_eq "UDP v4 to another host-side port: refused (admin-prohibited)" "error EHOSTUNREACH" "$(SC udp "$HOST4" "$OPORT")"
check_eq "UDP v6 to another host-side port: refused (admin-prohibited)" "error EACCES" "$(SC udp "$HOST6" "$OPORT")"
check_eq "UDP v4 to the other host: no answer (not forwarded)" timeout "$(SC udp "$OTH4" "$OPORT")"
check_eq "UDP v6 to the other host: no answer (not forwarded)" timeout "$(SC udp "$OTH6" "$OPORT")"
check_eq "UDP v4 to port 123 of an unused address: no answer" timeout "$(SC udp "$NOONE4" 123)"
check_eq "the other host-side port saw nothing (TCP or UDP)" 0 "$(wc -l <"$LOG_HO")"
check_eq "the other host saw nothing" 0 "$(wc -l <"$LOG_O")"
check_eq "into the sandbox: UDP from the other host is not forwarded" timeout "$(OC udp "$SBX4" "$OPORT")"
check_eq "into the sandbox: nothing arrived" 0 "$(wc -l <"$LOG_S")"

# ---------------------------------------------------------------- a spoofed source
# (the host routes replies to it back into the sandbox, so only the rules can stop the exchange)
ip -n "$SNS" addr add "$NOONE4/32" dev "$SIF"
ip -n "$HNS" route add "$NOONE4/32" dev "$HIF"
: >"$LOG_T"
read -r RS _ <<<"$(H "$TNFT" --rejected "$TBL")"
check_eq "TCP from a source that is not the sandbox's: nothing comes back" timeout "$(SC tcp "$HOST4" 443 "$NOONE4")"
check_eq "UDP 53 from a source that is not the sandbox's: nothing comes back" timeout "$(SC udp "$HOST4" 53 "$NOONE4")"
check_eq "the transparent listener saw no spoofed connection" 0 "$(wc -l <"$LOG_T")"

# ---------------------------------------------------------------- counter, ND, removal
read -r R1 _ <<<"$(H "$TNFT" --rejected "$TBL")"
check "the spoofed packets were counted as rejected (${RS:-?} -> ${R1:-?})" test "${R1:-0}" -ge $((${RS:-0} + 2))
check "the rejected counter grew by the refusals above, at least 7 (now ${R1:-?})" test "${R1:-0}" -ge 7
check_match "IPv6 neighbour discovery works through the rules (the sandbox knows the host side)" \
  "$HOST6 .*(REACHABLE|STALE|DELAY|PROBE)" "$(ip -n "$SNS" -6 neigh show dev "$SIF")"
out=$(H "$TNFT" --remove "$SID" 2>&1); rc=$?
check_eq "removing the table succeeds" "0 " "$rc $out"
check_eq "no table left in $HNS" "" "$(H nft list tables)"
check_eq "--stale finds nothing after removal" "" "$(H "$TNFT" --stale)"
out=$(H "$TNFT" --remove "$SID" 2>&1); rc=$?
check_eq "removing it again succeeds (idempotent)" "0 " "$rc $out"
check_eq "without the table, UDP reaches the other host again" "reply $OPORT" "$(SC udp "$OTH4" "$OPORT")"
out=$(H "$TNFT" --rejected "$TBL" 2>&1); rc=$?
check_match "reading the counter of a removed table fails with nft's reason" "^1 test_nft --rejected: .*(No such file|does not exist|Error)" "$rc $out"
finish
