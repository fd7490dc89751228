#!/usr/bin/env bash
# Privileges: with `user: nobody` the gateway binds (a port below 1024 too), then runs as nobody/nogroup with
# no supplementary groups and no capabilities, is not dumpable (another nobody process cannot read its
# environ or memory), and its listeners, leaf minting, audit and admin socket still work.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
nginx_start
NUID=$(id -u nobody) NGID=$(getent group nogroup | cut -d: -f3)
[ -n "$NUID" ] && [ -n "$NGID" ] || die "no nobody/nogroup on this machine"
for p in $(shuf -i 600-1000 -n 50); do ss -ltnH "sport = :$p" | grep -q . || { TP=$p; break; }; done
GW_USER=nobody
policy_base <<Y | gw_conf
  other.example.test:
    allow_private: true
Y
gw_start
P=$GWPID
st=$(cat "/proc/$P/status")
check_eq "Uid (real, effective, saved, fs) is nobody's" "$NUID $NUID $NUID $NUID" "$(printf '%s\n' "$st" | awk '/^Uid:/ {print $2, $3, $4, $5}')"
check_eq "Gid (real, effective, saved, fs) is nogroup's" "$NGID $NGID $NGID $NGID" "$(printf '%s\n' "$st" | awk '/^Gid:/ {print $2, $3, $4, $5}')"
groups=$(printf '%s\n' "$st" | awk '/^Groups:/ {$1=""; print}' | tr -d ' \t')
check_match "supplementary groups: none, or only nogroup (got [$groups])" "^($NGID)?\$" "$groups"
check_eq "no effective capabilities" 0000000000000000 "$(printf '%s\n' "$st" | awk '/^CapEff:/ {print $2}')"
check_eq "no permitted capabilities" 0000000000000000 "$(printf '%s\n' "$st" | awk '/^CapPrm:/ {print $2}')"
check_eq "no ambient capabilities" 0000000000000000 "$(printf '%s\n' "$st" | awk '/^CapAmb:/ {print $2}')"
bad_threads=0
for t in /proc/"$P"/task/*; do
  [ "$(awk '/^Uid:/ {print $2 $3 $4 $5}' "$t/status")" = "$NUID$NUID$NUID$NUID" ] || bad_threads=$((bad_threads + 1))
done
check_eq "every thread runs as nobody ($(ls /proc/"$P"/task | wc -l) threads)" 0 "$bad_threads"
check_eq "non-dumpable: /proc/PID/environ is owned by root despite uid nobody" 0 "$(stat -c %u "/proc/$P/environ")"
NOB=(setpriv --reuid "$NUID" --regid "$NGID" --clear-groups)
check "another nobody process cannot read its environ" sh -c "! timeout 5 ${NOB[*]} cat /proc/$P/environ"
check "another nobody process cannot open its memory" sh -c "! timeout 5 ${NOB[*]} $PY -c 'open(\"/proc/$P/mem\",\"rb\")'"
# control: an ordinary nobody process's environ IS readable by another nobody process
"${NOB[@]}" sleep 30 & CTRL=$!; PIDS+=("$CTRL")
eventually 5 sh -c "[ \$(awk '/^Uid:/ {print \$2}' /proc/$CTRL/status) = $NUID ]"
check "control: a dumpable nobody process's environ is readable by nobody" timeout 5 "${NOB[@]}" cat "/proc/$CTRL/environ"
kill "$CTRL" 2>/dev/null

check "the log warns nothing about running as root" sh -c "! grep -q 'running as root' '$GWLOG'"
check "the transparent listener bound a port below 1024 ($TP) before dropping" sh -c "ss -ltnpH 'sport = :$TP' | grep -q 'pid=$P,'"
check_eq "explicit listener works after the drop" hello "$(pcurl https://api.example.test/ok/priv)"
check_eq "a new leaf is minted after the drop (CA key kept in memory)" other "$(pcurl https://other.example.test/x)"
check_eq "a denied request still answers 403" 403 "$(pcurl -s -o /dev/null -w '%{http_code}' https://api.example.test/admin)"
check "the audit file is written after the drop" audit_wait '.path=="/ok/priv" and .status==200'
check_eq "the admin socket is mode 0600" 600 "$(stat -c %a "$ADMIN" 2>&1)"
check_match "the admin socket answers /health" '"status":"ok"' "$(gw_health)"
netns_make p
netns_redirect "443"
check_eq "the transparent listener works after the drop" hello \
  "$(ns_exec curl -sS --max-time 10 --cacert "$CA/ca.pem" --resolve "api.example.test:443:$NS_HOST" https://api.example.test/ok/tp)"
gw_stop; check_eq "SIGTERM: exit 0 as nobody" 0 "$GW_RC"
finish
