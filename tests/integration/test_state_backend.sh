#!/usr/bin/env bash
# state: (issue 22, groundwork): state.dir is state_dir's new name (made 0700, the gateway serves); giving both is
# refused at load with its line:col; `state.backend: redis` with no Redis listening starts and fails closed: a
# request under a rate limit is refused with 503 naming the store (on_error: deny), never counted alone; one
# without a limit is served. (The shared counting itself: test_fleet_counters.) Nothing leaves loopback.
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
nginx_start
policy_base 'allow: { method: GET, path: "/ok/**" }' 'allow: { method: GET, path: "/lim/**", limit: { rate: 5/hour, per: global } }' \
  </dev/null | gw_conf
check_eq "backend: redis loads (sluice policy check)" 0 "$("$SLUICE" policy check "$GWCONF" >/dev/null 2>&1; echo $?)"
gw_start
out=$(pcurl -o /dev/null -w '%{http_code}' https://api.example.test/lim/x)
check_eq "backend: redis, no Redis: a request under a rate limit is refused with 503 (fail closed)" 503 "$out"
check_match "  and the reason names the store" 'shared counters \(state\.backend: redis\) are unavailable' \
  "$(pcurl https://api.example.test/lim/x)"
check_eq "  while a request without a limit is served" hello "$(pcurl https://api.example.test/ok/x)"
gw_stop
check_eq "  and the gateway stops cleanly" 0 "$GW_RC"
finish
