#!/usr/bin/env bash
# state: (issue 22, groundwork): state.dir is state_dir's new name (made 0700, the gateway serves); giving both is
# refused at load with its line:col; `state.backend: redis` is refused at start, failing closed, because the
# request path does not use the Redis store yet (each gateway counting alone would let a fleet spend every cap
# once per gateway). Nothing leaves loopback; no Redis is needed.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

pki_init
STATE=$T/state-new
GW_EXTRA=$(printf 'state: { dir: %s }' "$STATE")
gw_conf <<YAML
default: deny
hosts: {}
YAML
gw_start
check_eq "state.dir is made, mode 0700" 700 "$(stat -c %a "$STATE" 2>&1)"
gw_stop
check_eq "  and the gateway stops cleanly" 0 "$GW_RC"

GW_EXTRA=$(printf 'state: { dir: %s }\nstate_dir: %s' "$STATE" "$T/state-old")
gw_conf <<YAML
default: deny
hosts: {}
YAML
check_match "state_dir and state.dir together are refused at load, with line:col" \
  'sluice\.yaml:[0-9]+:[0-9]+: state_dir and state\.dir are both given' "$("$SLUICE" policy check "$GWCONF" 2>&1)"

GW_EXTRA=$(printf 'state:\n  backend: redis\n  dir: %s\n  redis: { url: "unix:%s/none.sock", timeout: 50ms }' \
  "$STATE" "$T")
gw_conf <<YAML
default: deny
hosts: {}
YAML
check_eq "backend: redis loads (sluice policy check)" 0 "$("$SLUICE" policy check "$GWCONF" >/dev/null 2>&1; echo $?)"
timeout 20 "$SLUICE" serve -c "$GWCONF" >"$T/redis-start.log" 2>&1
rc=$?
check_eq "backend: redis is refused at start (exit 1: not yet used by the request path)" 1 "$rc"
check_match "  and the log says why" 'not serving: state\.backend: redis is not used by the request path yet' \
  "$(cat "$T/redis-start.log")"
finish
