#!/usr/bin/env bash
# One gateway per configuration (issue 16): a second `sluice serve` for the same configuration, for the same
# admin socket, or for a listener address that something already serves, refuses to start with a clear message
# and leaves the running gateway untouched (its admin socket is not unlinked, its ports are not shared through
# SO_REUSEPORT). The lock dies with its process: after a clean stop or a kill -9 the configuration starts again.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
nginx_start
policy_base </dev/null | gw_conf
gw_start
FIRST=$GWPID
check_eq "the first gateway serves" hello "$(pcurl https://api.example.test/ok/a)"
ino() { stat -c %i "$ADMIN" 2>/dev/null; }
INO=$(ino)

second() { # CONFIG: runs a second sluice serve (bounded), prints "rc<TAB>output"
  local out rc
  out=$(timeout 20 "$SLUICE" serve -c "$1" 2>&1); rc=$?
  printf '%s\t%s' "$rc" "$out"
}

# the same configuration again
r=$(second "$GWCONF")
check_eq "a second serve of the same configuration exits 1" 1 "${r%%$'\t'*}"
check_match "it says another gateway is running" "another gateway is (already )?running" "${r#*$'\t'}"
check "the first gateway is alive" kill -0 "$FIRST"
check_eq "its admin socket was not replaced" "$INO" "$(ino)"
check_match "its admin socket still answers" '"status":"ok"' "$(gw_health)"
check_eq "it still serves" hello "$(pcurl https://api.example.test/ok/b)"

# another admin socket, the same proxy port: the bind probe refuses it
sed "s|unix:$ADMIN|unix:$T/other.sock|" "$GWCONF" >"$T/other-admin.yaml"
r=$(second "$T/other-admin.yaml")
check_eq "a gateway on the same listener addresses (other admin socket) exits 1" 1 "${r%%$'\t'*}"
check_match "it names the listener that is in use" "listen\.(proxy|transparent) .* already served" "${r#*$'\t'}"
check "it did not create its admin socket" test ! -e "$T/other.sock"
check_eq "the first gateway still serves" hello "$(pcurl https://api.example.test/ok/c)"

# the same admin socket, other ports: the lock refuses it
P2=$(freeport) T2=$(freeport)
sed -e "s|127.0.0.1:$PP|127.0.0.1:$P2|" -e "s|\[::\]:$TP|[::]:$T2|" "$GWCONF" >"$T/other-ports.yaml"
r=$(second "$T/other-ports.yaml")
check_eq "a gateway with the same admin socket (other ports) exits 1" 1 "${r%%$'\t'*}"
check_match "it says the admin socket is in use" "listen\.admin is in use" "${r#*$'\t'}"
check_eq "the admin socket is still the first gateway's" "$INO" "$(ino)"
check "nothing listens on the second configuration's port" sh -c "! ss -ltnH 'sport = :$P2' | grep -q ."

# a port served by some other program
P3=$(freeport)
spawn "$T/holder.log" "$PY" -c "import socket,time;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',$P3));s.listen();time.sleep(60)"
HOLDER=$LASTPID
wait_listen "$P3" 5
sed -e "s|unix:$ADMIN|unix:$T/third.sock|" -e "s|127.0.0.1:$PP|127.0.0.1:$P3|" -e "s|\[::\]:$TP|[::]:$(freeport)|" \
  "$GWCONF" >"$T/held-port.yaml"
r=$(second "$T/held-port.yaml")
check_eq "a gateway on a port another program serves exits 1" 1 "${r%%$'\t'*}"
check_match "it names listen.proxy" "listen\.proxy 127\.0\.0\.1:$P3 is already served" "${r#*$'\t'}"
kill "$HOLDER" 2>/dev/null

# the lock goes with its process
gw_stop
check_eq "the first gateway stopped cleanly" 0 "$GW_RC"
gw_start
check_eq "after a clean stop the configuration starts again" hello "$(pcurl https://api.example.test/ok/d)"
kill -9 "$GWPID"; wait "$GWPID" 2>/dev/null; GWPID=
gw_start
check_eq "after kill -9 (a stale socket and lock file) it starts again" hello "$(pcurl https://api.example.test/ok/e)"
gw_final_checks
finish
