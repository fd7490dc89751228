#!/usr/bin/env bash
# `sluice run` without a running gateway (cli/embed.c): the built-in default and the embedded gateway.
#
#  - no -c: the default is made under $SLUICE_STATE_DIR (a CA, a deny-all sluice.yaml, 0600/0700), a gateway is
#    started for it and the command runs: a name outside the (empty) policy does not resolve, a direct connection
#    to a synthetic-less address gets nothing, the DNS query is audited and names the sandbox; at exit the gateway
#    is stopped and nothing is left; a second run reuses the default unchanged;
#  - -c with an admin socket nobody answers: the gateway is started, the allowed request works, and it is
#    stopped at the end;
#  - two runs at once share one embedded gateway: the first to finish leaves it running for the other, the last
#    one stops it;
#  - a gateway the operator started is used and never stopped;
#  - an embedded gateway that cannot start (its port is taken) is reported with its log, exit 1.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

[ -x /usr/bin/bwrap ] || die "bubblewrap (/usr/bin/bwrap) is missing"
track_sandbox_objects

srun() { timeout 60 "$SLUICE" run "$@"; }
no_leftovers() { check_eq "$1: no sluice_* netns, table, veth or lock left" "" "$(new_objects)"; }
# the embedded gateway runs as "sluice serve -c <absolute config path>"
serve_pids() { pgrep -f "^sluice serve -c $1\$" | tr '\n' ' '; }
# the gateways of this test, also when a check failed half-way
stop_embedded() {
  local f
  for f in "$T"/state/admin.sock.embedded "$T"/emb.sock.embedded; do
    [ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
  done
  return 0
}
trap 'stop_embedded; sandbox_cleanup' EXIT

# ---------------------------------------------------------------- the built-in default
export SLUICE_STATE_DIR=$T/state
srun --name emb-default -- sh -c 'echo RAN; getent hosts api.example.test && echo RESOLVED; exit 3' \
  >"$T/d1.out" 2>"$T/d1.err"
rc=$?
check_eq "no -c: the command ran and its status came back" 3 "$rc"
check_match "... it ran" '^RAN$' "$(cat "$T/d1.out")"
check_nomatch "... a name outside the default policy does not resolve" RESOLVED "$(cat "$T/d1.out")"
check_match "... the launcher said it wrote the default" 'wrote the built-in default policy \(deny all\)' "$(cat "$T/d1.err")"
check_match "... and made a CA" 'made a CA for the built-in default' "$(cat "$T/d1.err")"
check_match "... and started a gateway" 'started a gateway for' "$(cat "$T/d1.err")"
check_eq "the state directory is 0755 (it holds no secret)" 755 "$(stat -c %a "$T/state")"
check_eq "the default config is 0644 (the gateway's user reads it on reload)" 644 "$(stat -c %a "$T/state/sluice.yaml")"
check_eq "its state/ is nobody's, 0700" "nobody 700" "$(stat -c '%U %a' "$T/state/state")"
check_eq "the default CA key is 0600" 600 "$(stat -c %a "$T/state/ca/ca.key")"
check "the default config passes policy check" "$SLUICE" policy check "$T/state/sluice.yaml"
check_match "the default denies everything" '^default: deny$' "$(cat "$T/state/sluice.yaml")"
check_match "... and names no host" '^hosts: \{\}$' "$(cat "$T/state/sluice.yaml")"
check_match "... and its header says names get NXDOMAIN" '^# It allows nothing: no name resolves \(the DNS responder answers NXDOMAIN\)' \
  "$(cat "$T/state/sluice.yaml")"
check_nomatch "... not that every request gets a 403" 'every request is refused' "$(cat "$T/state/sluice.yaml")"
check "the DNS query was audited under the sandbox's name, NXDOMAIN" \
  jq -e -s 'map(select(.type == "dns" and .sandbox == "emb-default" and .host == "api.example.test"
                       and (.answer | test("NXDOMAIN")))) | length > 0' "$T/state/state/audit.jsonl"
# the gateway of the default, as nobody: it writes its state, watches and reloads its configuration
check_nomatch "its gateway could write its state directory" 'state_dir .*(not writable|cannot be created)' \
  "$(cat "$T/state/admin.sock.log")"
check_nomatch "... and watch its directory" 'cannot watch' "$(cat "$T/state/admin.sock.log")"
check_match "... it watched it" 'watching .*sluice.yaml for changes' "$(cat "$T/state/admin.sock.log")"
check_nomatch "... and never failed to save counters" 'cannot be saved|cannot save' "$(cat "$T/state/admin.sock.log")"
check_eq "the embedded gateway was stopped at exit" "" "$(serve_pids "$T/state/sluice.yaml")"
check "... and its pid file removed" test ! -e "$T/state/admin.sock.embedded"
check "... its user can write its state/ (counters, audit rotation)" \
  setpriv --reuid=nobody --regid=nogroup --clear-groups touch "$T/state/state/.probe"
rm -f "$T/state/state/.probe"
# a change of the default while its gateway runs is reloaded (the gateway reads it as nobody)
cp "$T/state/sluice.yaml" "$T/default.orig"
srun --name emb-reload -- sh -c 'sleep 4' >/dev/null 2>"$T/d3.err" &
RL=$!
eventually 10 test -s "$T/state/admin.sock.embedded"
sleep 1
sed 's/^hosts: {}$/hosts:\n  reload.example.test:\n    rules:\n      - allow: { method: GET }/' "$T/default.orig" \
  >"$T/state/sluice.yaml.new" && mv "$T/state/sluice.yaml.new" "$T/state/sluice.yaml"
check "... an edit while it runs is reloaded" eventually 10 grep -q 'reloaded the policy from' "$T/state/admin.sock.log"
check_nomatch "... with no reload failure" 'reload failed' "$(cat "$T/state/admin.sock.log")"
wait "$RL"
cp "$T/default.orig" "$T/state/sluice.yaml"
sum=$(sha256sum <"$T/state/sluice.yaml")
srun -- true 2>"$T/d2.err"
check_eq "a second run on the default works" 0 "$?"
check_nomatch "... and makes nothing new" 'wrote|made a CA' "$(cat "$T/d2.err")"
check_eq "... the default is unchanged" "$sum" "$(sha256sum <"$T/state/sluice.yaml")"
unset SLUICE_STATE_DIR
no_leftovers "after the default runs"

# ---------------------------------------------------------------- -c, no gateway running
GW_DNS="[::]:$(freeport)"
nginx_start
ADMIN=$T/emb.sock
policy_base | gw_conf
[ -f "$PKI/root.pem" ] || pki_init
"$SLUICE" ca init --dir "$CA" >/dev/null 2>&1 || die "ca init"
srun -c "$GWCONF" --name emb-one -- sh -c 'curl -sS --max-time 10 https://api.example.test/ok/emb; echo; \
  curl -sS --max-time 10 -o /dev/null -w "denied=%{http_code}\n" https://api.example.test/nope' \
  >"$T/c1.out" 2>"$T/c1.err"
check_eq "-c with no gateway: exit 0" 0 "$?"
check_match "... the allowed request was answered by the upstream" '^hello' "$(cat "$T/c1.out")"
check "... and audited as allowed under the sandbox's name" \
  audit_wait '.sandbox == "emb-one" and .path == "/ok/emb" and .verdict == "allow"'
check_match "... the denied one got the gateway's 403" 'denied=403' "$(cat "$T/c1.out")"
check_match "... the gateway's log is named" "started a gateway for $GWCONF \\(pid [0-9]+, log $T/emb.sock.log\\)" \
  "$(cat "$T/c1.err")"
check_eq "... and it was stopped at the end" "" "$(serve_pids "$GWCONF")"
check "... leaving no admin socket answering" sh -c "! curl -s --max-time 2 --unix-socket '$ADMIN' http://x/health"

# two at once: one gateway, the last one out stops it
srun -c "$GWCONF" --name emb-long -- sh -c 'sleep 3; curl -sS --max-time 10 https://api.example.test/ok/long' \
  >"$T/long.out" 2>"$T/long.err" &
LONG=$!
eventually 10 sh -c "curl -sf --max-time 2 --unix-socket '$ADMIN' http://x/sandboxes | grep -q emb-long" ||
  bad "the first run did not register"
first=$(serve_pids "$GWCONF")
srun -c "$GWCONF" --name emb-short -- curl -sS --max-time 10 https://api.example.test/ok/short >"$T/short.out" 2>"$T/short.err"
check_eq "a second run while the first runs: exit 0" 0 "$?"
check_nomatch "... it started no gateway of its own" 'started a gateway' "$(cat "$T/short.err")"
check_eq "... the same gateway is still running for the first" "$first" "$(serve_pids "$GWCONF")"
wait "$LONG"
check_eq "the first run then completes" 0 "$?"
check_match "... through the gateway the second run left running" '^hello' "$(cat "$T/long.out")"
check_eq "the last run out stopped the gateway" "" "$(serve_pids "$GWCONF")"

# the operator's gateway is never stopped
gw_start
srun -c "$GWCONF" -- true 2>"$T/op.err"
check_eq "with the operator's gateway running: exit 0" 0 "$?"
check_nomatch "... no gateway was started" 'started a gateway' "$(cat "$T/op.err")"
check "... and the operator's gateway still runs" kill -0 "$GWPID"
check "... and answers" gw_health

# an embedded gateway that cannot start: the operator's holds the ports
sed "s|admin: \"unix:$ADMIN\"|admin: \"unix:$T/second.sock\"|" "$GWCONF" >"$T/second.yaml"
srun -c "$T/second.yaml" -- true 2>"$T/fail.err"
check_eq "an embedded gateway that cannot start: exit 1" 1 "$?"
check_match "... named, with its log" "did not start; its log: $T/second.sock.log" "$(cat "$T/fail.err")"
check "... its log says why" grep -qi 'address already in use\|cannot listen\|bind' "$T/second.sock.log"
gw_stop
no_leftovers "at the end"
finish
