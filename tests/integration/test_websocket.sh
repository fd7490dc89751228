#!/usr/bin/env bash
# WebSocket frames through the gateway (issue 3, section 5), against ws_upstream.py (a TLS WebSocket echo that
# logs what it received with every secret value and placeholder masked) and wsclient.py. Covers: echo of text and
# binary frames with no secret declared (the byte tunnel: a malformed frame passes untouched) and with secrets
# declared (frames checked); the Authorization header injected into the upgrade request and its value scrubbed from
# an echoed text frame, also when the upstream fragments that message at every offset inside the value (a ping
# between the fragments); a placeholder sent by the client in a text frame, in a binary frame, split across two
# frames and split across two writes of one frame: connection closed (close 1008), audited as exfiltration_attempt
# at place websocket, and the whole placeholder never reached the upstream; malformed client frames (unmasked,
# RSV1) closed and logged; the transparent path. At the end every file of the run and the test's own output are
# scanned for the real values, which are random per run and never printed.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
WSUP=$HERE/ws_upstream.py WSC=$HERE/wsclient.py
WLOG=$T/wsup.jsonl OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

# ---------------------------------------------------------------- values (never printed) and placeholders
rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_WS_GH="ghs_ws$(rnd 34)"
export SLUICE_IT_WS_KEY="sk-ws-real-$(rnd 32)"
GH_PH="ghp_WsPh$ID$(rnd 26)" KEY_PH="sluice_ph_wskey$ID$(rnd 20)"
VALUES="WS_GH WS_KEY"
export VALUES

# vals.py: mask copies stdin to stdout with every value written as {{NAME}}; forms FILE prints the names of the
# values (literal or base64 at any alignment) found in FILE; scan DIR prints "value found in FILE" for every file
# holding one. Values come from the SLUICE_IT_<NAME> environment variables, never from arguments.
cat >"$T/vals.py" <<'PY'
import base64, os, sys
def needles():
    out = []
    for n in os.environ["VALUES"].split():
        v = os.environ["SLUICE_IT_" + n].encode()
        out.append((n, v))
        for k in range(3):
            out.append((n + "_b64", base64.b64encode(b"\0" * k + v)[4 if k else 0:-4]))
    return out
cmd = sys.argv[1]
if cmd == "mask":
    data = sys.stdin.buffer.read()
    for n, v in sorted(needles(), key=lambda p: -len(p[1])):
        data = data.replace(v, b"{{%s}}" % n.encode())
    sys.stdout.buffer.write(data)
elif cmd == "forms":
    data = open(sys.argv[2], "rb").read() if os.path.isfile(sys.argv[2]) else b""
    print(" ".join(sorted({n for n, v in needles() if v in data})))
elif cmd == "scan":
    for root, _, files in os.walk(sys.argv[2]):
        for fn in sorted(files):
            p = os.path.join(root, fn)
            if not os.path.isfile(p) or os.path.islink(p):
                continue
            data = open(p, "rb").read()
            if any(v in data for _, v in needles()):
                print("value found in %s" % os.path.relpath(p, sys.argv[2]))
PY
mask() { if [ -f "$T/vals.py" ]; then "$PY" "$T/vals.py" mask; else cat; fi; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*" | mask; }
dump_logs() {
  local f
  for f in "$GWLOG" "$T/wsup.log"; do
    [ -s "$f" ] && { echo "# --- tail $f"; tail -n 15 "$f" | mask | sed 's/^/# /'; }
  done
  return 0
}
no_values() { check_eq "$1" "" "$("$PY" "$T/vals.py" forms "$2" 2>&1)"; }

# ---------------------------------------------------------------- upstream, clients
pki_init
spawn "$T/wsup.log" env WS_STORED="$SLUICE_IT_WS_GH" ECHO_MASK_GH="$SLUICE_IT_WS_GH" ECHO_MASK_KEY="$SLUICE_IT_WS_KEY" \
  ECHO_MASK_PH_GH="$GH_PH" ECHO_MASK_PH_KEY="$KEY_PH" \
  "$PY" "$WSUP" --listen "$UPADDR:443:tls" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$WLOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "ws upstream did not start: $(tail -n 3 "$T/wsup.log")"
N=0 F=
# wsc PATH ARGS...: wsclient through the explicit proxy to api.example.test PATH; output into a new file $F
wsc() {
  local path=$1; shift
  N=$((N + 1)); F=$T/ws$N.out
  $CLEAN timeout 30 "$PY" "$WSC" --proxy "127.0.0.1:$PP" --host api.example.test --cafile "$CA/ca.pem" \
    --path "$path" --timeout 10 "$@" >"$F" 2>&1
}
out_of() { mask <"$F" | tr '\n' '~'; }
# up_conn PATH: the upstream's connection id for the upgrade request to PATH (empty if none arrived)
up_conn() { jq -r --arg p "$1" 'select(.ev=="head" and .path==$p) | .conn' "$WLOG" 2>/dev/null | tail -n 1; }
# up_end PATH: the upstream's end record of that connection (compact JSON; masked: safe to print)
up_end() {
  local id; id=$(up_conn "$1")
  [ -n "$id" ] && eventually 5 sh -c "jq -e 'select(.ev==\"end\" and .conn==$id)' '$WLOG' >/dev/null"
  [ -n "$id" ] && jq -c "select(.ev==\"end\" and .conn==$id)" "$WLOG" 2>/dev/null | tail -n 1
}
up_frames() { local id; id=$(up_conn "$1"); [ -n "$id" ] && jq -c "select(.ev==\"frame\" and .conn==$id) | .data" "$WLOG"; }

# ---------------------------------------------------------------- no secrets declared: the byte tunnel
policy_base 'allow: { method: GET }' </dev/null | gw_conf
gw_start
wsc /ws-plain --header "Sec-WebSocket-Extensions: permessage-deflate" text:hello-ws 'binary:\x00\x01\xfe\xff' recv:2
check_eq "no secrets: echo of a text and a binary frame" "status 101~text[1] hello-ws~binary[1] 0001feff~" "$(out_of)"
check_eq "no secrets: Sec-WebSocket-Extensions reaches the upstream" permessage-deflate \
  "$(jq -r 'select(.ev=="head" and .path=="/ws-plain") | .extensions' "$WLOG" | tail -n 1)"
wsc /ws-plain-bad 'raw:\x81\x05hello' close
check_eq "no secrets: an unmasked frame passes the byte tunnel untouched (the upstream refuses it)" \
  "client frame not masked" "$(jq -r 'select(.ev=="bad") | .why' "$WLOG" | tail -n 1)"
check_eq "  the upstream's refusal is for that connection" "$(up_conn /ws-plain-bad)" \
  "$(jq -r 'select(.ev=="bad") | .conn' "$WLOG" | tail -n 1)"
gw_stop
check_eq "the gateway (no secrets) stops cleanly" 0 "$GW_RC"

# ---------------------------------------------------------------- secrets declared
netns_make a; netns_redirect "443"
policy_base 'allow: { method: GET }' <<YAML | gw_conf
secrets:
  gh:
    source: env:SLUICE_IT_WS_GH
    placeholder: "$GH_PH"
    hosts: [api.example.test]
    inject: [header:Authorization]
  key:
    source: env:SLUICE_IT_WS_KEY
    placeholder: "$KEY_PH"
    hosts: [api.example.test]
    inject: [header:x-api-key]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
  ns:
    addresses: [$NS_ADDR/32]
YAML
gw_start

wsc /ws-echo text:hello-ws 'binary:\x00\x01\xfe\xff' 'frame:1:0:frag-' 'frame:9:1:p' 'frame:0:1:mented' recv:3
check_eq "secrets: echo of text, binary and a fragmented message (a ping between)" \
  "status 101~text[1] hello-ws~binary[1] 0001feff~pong~text[1] frag-mented~" "$(out_of)"

# issue 17: a connection that injected nothing reads back a value the service stored, in a binary message and a
# text one, each cut inside the value with a ping between the fragments: both are scrubbed (F4, binary frames)
wsc /ws-stored 'binary:stored' 'text:stored' recv:2
GH_PH_HEX=$(printf '%s' "$GH_PH" | od -An -tx1 -v | tr -d ' \n')
check_eq "stored value, no placeholder sent: the binary message comes back with the placeholder (2 frames)" \
  "status 101~ping~binary[2] 00${GH_PH_HEX}ff~ping~text[2] <${GH_PH}>~" "$(out_of)"
no_values "  no form of the value reaches the client" "$F"

# the upgrade carries the injected Authorization; the echo of it is scrubbed
wsc /ws-auth --header "Authorization: Bearer $GH_PH" --header "Sec-WebSocket-Extensions: permessage-deflate" \
  text:auth recv:1
check_eq "injection: the upgrade is answered 101 and the echoed value comes back as the placeholder" \
  "status 101~101 header X-Echo-Auth: Bearer $GH_PH~text[1] auth=[Bearer $GH_PH]~" "$(out_of)"
no_values "  no form of the value reaches the client" "$F"
check_eq "  the upstream received Authorization: Bearer <real value> on the upgrade" "Bearer {{GH}}" \
  "$(jq -r 'select(.ev=="head" and .path=="/ws-auth") | .auth' "$WLOG" | tail -n 1)"
check_eq "  Sec-WebSocket-Extensions was stripped from the upgrade (no extension: frames stay readable)" "" \
  "$(jq -r 'select(.ev=="head" and .path=="/ws-auth") | .extensions' "$WLOG" | tail -n 1)"
check "audit: the upgrade (101) records secret gh injected at header:authorization" audit_wait \
  '.path=="/ws-auth" and .status==101 and any(.secrets[]?; .name=="gh" and (.place|ascii_downcase)=="header:authorization")'
check "gateway log: the scrub of a frame is logged with the secret's name" \
  eventually 5 grep -q "secret 'gh' scrubbed from a WebSocket frame" "$GWLOG"

# the upstream fragments the echoed message at every offset inside the value (and just around it)
pre="auth=[Bearer " steps=() want="status 101~"
for k in $(seq $((${#pre} - 1)) $((${#pre} + ${#SLUICE_IT_WS_GH} + 1))); do
  steps+=("text:auth-split $k" recv:1)
  want="${want}ping~text[*] auth=[Bearer $GH_PH]~"
done
steps+=(text:done recv:1) want="${want}text[*] done~"
wsc /ws-split --header "Authorization: Bearer $GH_PH" "${steps[@]}"
got=$(out_of | sed 's/text\[[0-9]*\]/text[*]/g')
check_eq "fragmented echo at every offset in the value ($((${#SLUICE_IT_WS_GH} + 3)) offsets): scrubbed whole each time" \
  "$want" "$got"
no_values "  no form of the value reaches the client" "$F"
check_eq "  all on one connection: the upstream received every frame (a request and a pong each, then done)" \
  "$((${#steps[@]} - 1))" \
  "$(up_end /ws-split | jq -r .frames)"

# ---------------------------------------------------------------- exfiltration through frames
# exfil WHAT PATH SECRET PHNAME STEPS...: closed with 1008, audited, the upstream never saw the whole placeholder
exfil() {
  local what=$1 path=$2 sec=$3 phn=$4 e; shift 4
  wsc "$path" text:hello recv:1 "$@" close
  check_match "$what: the connection is closed (close 1008, then EOF)" '^status 101~text\[1\] hello~close 1008~end: eof~$' "$(out_of)"
  check "  audit: exfiltration_attempt, secret $sec, place websocket" audit_wait \
    ".path==\"$path\" and .type==\"exfiltration_attempt\" and .secret==\"$sec\" and .place==\"websocket\" and .rule==\"secrets\""
  e=$(up_end "$path")
  if [ -n "$e" ] && printf '%s' "$e" | jq -e "(.seen | index(\"$phn\")) == null" >/dev/null 2>&1; then
    ok "  the upstream never received the whole placeholder (its frames end to end)"
  else bad "  the upstream never received the whole placeholder ($e)"; fi
  check_nomatch "  no logged frame holds it" "\{\{$phn\}\}" "$(up_frames "$path")"
}
exfil "placeholder in a text frame" /ws-ex-text gh PH_GH "text:my token is $GH_PH, use it"
exfil "placeholder in a binary frame" /ws-ex-bin key PH_KEY "binary:\\x00\\x01$KEY_PH\\xff"
exfil "placeholder split across two frames" /ws-ex-frames gh PH_GH "frame:1:0:token ${GH_PH:0:9}" \
  "frame:0:1:${GH_PH:9} tail"
check_match "  its first frame (the start of the placeholder) did reach the upstream" "token ${GH_PH:0:9}" \
  "$(up_frames /ws-ex-frames)"
check "gateway log: the exfiltration attempt is logged with the secret's name" \
  grep -q "exfiltration attempt refused: placeholder of secret 'gh' in a WebSocket frame" "$GWLOG"
bad_off=""
for k in 1 5 $((${#GH_PH} / 2)) $((${#GH_PH} - 1)); do
  wsc "/ws-ex-split-$k" "split:$((4 + k)):say ${GH_PH}!" close
  [ "$(out_of)" = "status 101~close 1008~end: eof~" ] || bad_off="$bad_off $k:$(out_of)"
  audit_wait ".path==\"/ws-ex-split-$k\" and .type==\"exfiltration_attempt\" and .place==\"websocket\"" || bad_off="$bad_off $k(audit)"
  [ "$(up_end "/ws-ex-split-$k" | jq -r '.frames')" = 0 ] || bad_off="$bad_off $k(frames)"
done
check_eq "a placeholder in one frame split across two writes (offsets 1 5 mid last): closed, audited, no frame forwarded" \
  "" "$bad_off"
check_eq "no placeholder ever reached the upstream" "0" "$(grep -c '{{PH_' "$WLOG")"
# issue 17: an encoded placeholder split across frames of a message, cut inside an escape (text and binary):
# found in the decoded views of the frame stream (percent with mixed-case hex, double percent, JSON \u escapes)
up_joined() { local id; id=$(up_conn "$1"); [ -n "$id" ] && jq -j "select(.ev==\"frame\" and .conn==$id) | .data" "$WLOG"; }
exfil_enc() {
  local what=$1 path=$2 enc=$3; shift 3
  exfil "$what" "$path" gh PH_GH "$@"
  if up_joined "$path" | grep -qF -- "$enc"; then bad "  the upstream received the whole encoded placeholder"
  else ok "  the upstream never received the whole encoded placeholder (its frames end to end)"; fi
}
# (E3 as wsclient.py takes it: its backslashes escaped; the frames carry \u0067hp\u005f...)
E1="%67hp%5f${GH_PH:4}" E2="%2567hp%255F${GH_PH:4}" E3="\\\\u0067hp\\\\u005f${GH_PH:4}"
exfil_enc "a %-encoded placeholder (mixed-case hex) split across two text frames inside an escape" /ws-enc-pct "$E1" \
  "frame:1:0:token ${E1:0:2}" "frame:0:1:${E1:2} tail"
exfil_enc "a double %-encoded placeholder split across two binary frames inside %25" /ws-enc-pct2 "$E2" \
  "frame:2:0:\\x00${E2:0:2}" "frame:0:1:${E2:2}\\xff"
exfil_enc "a JSON \\u-escaped placeholder split across two text frames inside \\u" /ws-enc-json '\u0067hp\u005f'"${GH_PH:4}" \
  "frame:1:0:{\"t\": \"${E3:0:5}" "frame:0:1:${E3:5}\"}"

# ---------------------------------------------------------------- malformed client frames
wsc /ws-bad-unmasked text:ok recv:1 'raw:\x81\x05hello' close
check_eq "an unmasked client frame: closed (close 1002)" "status 101~text[1] ok~close 1002~end: eof~" "$(out_of)"
check "  the gateway logs why" grep -q "malformed frame from the client: client frame not masked" "$GWLOG"
check_eq "  the upstream received only the good frame" 1 "$(up_end /ws-bad-unmasked | jq -r .frames)"
wsc /ws-bad-rsv1 'raw:\xc1\x80\x00\x00\x00\x00' close
check_eq "a client frame with RSV1 set: closed (close 1002)" "status 101~close 1002~end: eof~" "$(out_of)"
check "  the gateway logs why" grep -q "malformed frame from the client: reserved bits set" "$GWLOG"
check_eq "  the upstream received no frame" 0 "$(up_end /ws-bad-rsv1 | jq -r .frames)"

# ---------------------------------------------------------------- transparent path (a known sandbox namespace)
N=$((N + 1)); F=$T/ws$N.out
ip netns exec "$NS" env -i PATH=/usr/bin:/bin timeout 30 "$PY" "$WSC" --direct "$NS_HOST:443" --host api.example.test \
  --cafile "$CA/ca.pem" --path /ws-ns --header "Authorization: Bearer $GH_PH" text:auth 'binary:\x07' recv:2 >"$F" 2>&1
check_eq "transparent: injection, scrubbed text echo, binary echo" \
  "status 101~text[1] auth=[Bearer $GH_PH]~binary[1] 07~" "$(out_of)"
check_eq "  the upstream received the real value" "Bearer {{GH}}" \
  "$(jq -r 'select(.ev=="head" and .path=="/ws-ns") | .auth' "$WLOG" | tail -n 1)"
no_values "  no form of the value reaches the client" "$F"

# ---------------------------------------------------------------- the real values are nowhere
gw_final_checks
sleep 0.3
found=$("$PY" "$T/vals.py" scan "$T" 2>&1)
if [ -z "$found" ]; then ok "no real value in any file of the run (logs, audit, upstream log, client outputs) or in this test's output"
else bad "real values leaked:"; printf '%s\n' "$found" | sed 's/^/# /'; fi
finish
