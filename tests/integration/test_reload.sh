#!/usr/bin/env bash
# Hot reload and the counters' state file. With reload.watch off: SIGHUP with a good policy changes decisions (a
# request denied, then allowed), audited as config_reload ok with generation 2; a broken policy keeps the old one,
# names file:line:col in the log, the audit record (result error) and /healthz. With the watch on (the default): an
# editor-style rewrite (write a temp file, rename it over) and an in-place rewrite reload without a signal; a
# rewrite with the same text does not; a slow download in flight when its path becomes denied finishes, byte for
# byte, under the policy it started with, while a new request is refused. state_dir: made 0700 when missing; a
# counters file that does not parse stops the start (naming the file and the line); a valid one is neither reset
# nor rewritten by a start, a kill -9 or a stop. (Counters taken by requests are tested at the unit level,
# tests/unit/proxy/test_limits.c, until the request path takes them.)
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
nginx_start
head -c 262144 /dev/urandom >"$WWW/slow/256k"     # 4 s at nginx's 64 KiB/s
STATE=$T/state/sub
code_of() { pcurl -s -o "$T/body" -w '%{http_code}' "$1"; }
reloads() { jq -c 'select(.type == "config_reload")' "$AUDIT" 2>/dev/null; }
nreloads() { reloads | wc -l; }

# ---- SIGHUP (watch off); policy warnings are logged
GW_EXTRA=$(printf 'state_dir: %s\nreload: { watch: false }' "$STATE")
policy_base </dev/null | gw_conf
gw_start
check_eq "state_dir is made, mode 0700" 700 "$(stat -c %a "$STATE" 2>&1)"
check_eq "before the reload /new/x is denied (403, default)" "403 default" "$(code_of https://api.example.test/new/x) $(jq -r .rule "$T/body")"
check_eq "no config_reload record yet" 0 "$(nreloads)"
policy_base 'allow: { method: GET, path: "/ok/**" }' 'allow: { method: GET, path: "/new/**", id: new-ok }' \
  'allow: { method: GET, path: "/ok/x", id: shadowed }' </dev/null | gw_conf
sleep 0.5
check_eq "watch off: a rewritten file alone changes nothing" 403 "$(code_of https://api.example.test/new/x)"
gw_hup
check "after SIGHUP /new/x is allowed (nginx answers \"other\")" eventually 10 sh -c \
  "[ \"\$($CLEAN curl -s --max-time 5 -x http://127.0.0.1:$PP --cacert '$CA/ca.pem' https://api.example.test/new/x)\" = other ]"
check "the reload is audited: config_reload ok, generation 2" audit_wait \
  'select(.type == "config_reload" and .result == "ok" and .generation == 2 and .sandbox == "-" and .error == null)'
check_match "the log says reloaded, generation 2, 1 warning" "reloaded the policy from .*\(SIGHUP\): generation 2, 1 warnings" "$(cat "$GWLOG")"
check_match "  and logs the warning with file:line:col" "policy \(reload\): $GWCONF:[0-9]+:[0-9]+: warning: rule 'shadowed' .* can never match" "$(cat "$GWLOG")"
cp "$GWCONF" "$T/good.yaml"
policy_base 'allow: { method: GET, path: "/ok/**", bogus: 1 }' </dev/null | gw_conf
gw_hup
check "a broken policy: the log names file:line:col" eventually 10 \
  grep -Eq "reload failed, keeping the previous policy: $GWCONF:[0-9]+:[0-9]+: unknown key 'bogus'.* \(reload on SIGHUP\)$" "$GWLOG"
check "  audited: config_reload error, generation still 2, error with file:line:col" audit_wait \
  "select(.type == \"config_reload\" and .result == \"error\" and .generation == 2 and (.error | test(\"^$GWCONF:[0-9]+:[0-9]+: unknown key 'bogus'\")))"
check_eq "  the old policy still serves (/new/x allowed)" other "$(pcurl https://api.example.test/new/x)"
check_eq "  /healthz: generation 2, last reload error" "2 error true" \
  "$(timeout 10 curl -s --unix-socket "$ADMIN" http://sluice/healthz | jq -r '"\(.policy_generation) \(.last_reload.result) \(.last_reload.error | test(":[0-9]+:[0-9]+: "))"')"
check_eq "two config_reload records in all" 2 "$(nreloads)"
gw_stop
check_eq "the gateway stops cleanly" 0 "$GW_RC"
check "no counters file: nothing was counted" test ! -e "$STATE/counters"

# ---- the file watch (the default)
GW_EXTRA="state_dir: $STATE"
AUDIT=$T/audit2.jsonl   # a fresh audit file: its config_reload records are this run's
policy_base 'allow: { method: GET, path: "/ok/**" }' 'allow: { method: GET, path: "/slow/**", id: slow-ok }' </dev/null | gw_conf
gw_start
check "the log says the file is watched" grep -q "watching $GWCONF for changes" "$GWLOG"
check_eq "before: /new/y denied" 403 "$(code_of https://api.example.test/new/y)"
# an editor's save: a new file renamed over the old one
policy_base 'allow: { method: GET, path: "/ok/**" }' 'allow: { method: GET, path: "/slow/**", id: slow-ok }' \
  'allow: { method: GET, path: "/new/**", id: new-ok }' </dev/null | GWCONF=$T/edit.tmp gw_conf
mv "$T/edit.tmp" "$GWCONF"
check "a rename over the file reloads it without a signal: /new/y allowed" eventually 10 sh -c \
  "[ \"\$($CLEAN curl -s --max-time 5 -x http://127.0.0.1:$PP --cacert '$CA/ca.pem' https://api.example.test/new/y)\" = other ]"
check "  audited as config_reload ok, generation 2" audit_wait 'select(.type == "config_reload" and .result == "ok" and .generation == 2)'
check_match "  the log says why" "reloaded the policy from .*\(file changed\): generation 2" "$(cat "$GWLOG")"
# the same text again: no reload
cp "$GWCONF" "$T/same.yaml"; cat "$T/same.yaml" >"$GWCONF"
sleep 1
check_eq "rewriting the same text does not reload" 1 "$(nreloads)"
# a slow download in flight when its path becomes denied (an in-place write this time)
pcurl -s --max-time 60 -o "$T/dl" https://api.example.test/slow/256k 2>/dev/null & DL=$!
eventually 10 test -s "$T/dl"
check "the download is under way" test -s "$T/dl"
policy_base 'allow: { method: GET, path: "/ok/**" }' 'deny: { method: GET, path: "/slow/**", id: slow-deny }' </dev/null | gw_conf
check "an in-place rewrite reloads: generation 3" audit_wait 'select(.type == "config_reload" and .result == "ok" and .generation == 3)' 10
check_eq "  a new request to /slow/ is refused by the new rule" "403 slow-deny" \
  "$(code_of https://api.example.test/slow/256k) $(jq -r .rule "$T/body")"
wait "$DL"; rc=$?
check_eq "the download in flight completed (curl exit 0)" 0 "$rc"
check_eq "  with every byte" "$(sha256sum <"$WWW/slow/256k")" "$(sha256sum <"$T/dl")"
check "  and its request record is the old policy's allow" audit_wait \
  'select(.type == "request" and .path == "/slow/256k" and .verdict == "allow" and .rule == "slow-ok" and .status == 200)'
# a broken save through the watch keeps the old policy
printf 'hosts: [\n' >>"$GWCONF"
check "a broken save is audited as an error with file:line:col" audit_wait \
  "select(.type == \"config_reload\" and .result == \"error\" and (.error | test(\"^$GWCONF:[0-9]+:[0-9]+: \")))" 10
check_eq "  and the old policy serves on" "403 slow-deny" "$(code_of https://api.example.test/slow/x) $(jq -r .rule "$T/body")"
check_eq "  /ok/ still allowed" hello "$(pcurl https://api.example.test/ok/z)"
gw_stop
check_eq "the gateway stops cleanly" 0 "$GW_RC"

# ---- the counters file at the gateway's start and stop
policy_base </dev/null | gw_conf
now_ms=$(($(date +%s) * 1000))
day=$((now_ms - now_ms % 86400000))
printf 'sluice-counters v1\nbudget rule:pay * %s 150000000\nrate rule:post agent%%201 2000 %s\nend 2\n' "$day" "$now_ms" >"$STATE/counters"
cp "$STATE/counters" "$T/counters.orig"
gw_start
check "a valid counters file: the gateway starts" kill -0 "$GWPID"
kill -9 "$GWPID"; wait "$GWPID" 2>/dev/null; GWPID=
check_eq "after kill -9 the counters file is intact" "$(sha256sum <"$T/counters.orig")" "$(sha256sum <"$STATE/counters")"
gw_start
gw_stop
check_eq "a clean stop with nothing counted leaves it as it was" "$(sha256sum <"$T/counters.orig")" "$(sha256sum <"$STATE/counters")"
check "no temp file is left" test ! -e "$STATE/counters.tmp"
head -c -4 "$T/counters.orig" >"$STATE/counters"   # cut inside the end line
: >"$T/start.log"
timeout 20 "$SLUICE" serve -c "$GWCONF" >"$T/start.log" 2>&1; rc=$?
check_eq "a truncated counters file: the gateway does not start (exit 1)" 1 "$rc"
check_match "  and says which file and line" "not serving: $STATE/counters:4: truncated \(the last line has no newline\)" \
  "$(cat "$T/start.log")"
printf 'sluice-counters v1\nbudget rule:pay * 1 2 3\nend 1\n' >"$STATE/counters"
timeout 20 "$SLUICE" serve -c "$GWCONF" >"$T/start.log" 2>&1; rc=$?
check_eq "a corrupt counter line: the gateway does not start (exit 1)" 1 "$rc"
check_match "  and names line 2" "not serving: $STATE/counters:2: expected" "$(cat "$T/start.log")"
cp "$T/counters.orig" "$STATE/counters"
gw_start
check "with the file repaired it starts again" kill -0 "$GWPID"
finish
