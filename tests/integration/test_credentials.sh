#!/usr/bin/env bash
# Credential injection (issue 3) end to end, against echo_upstream.py (TLS on 443, plain on 80), which logs what it
# received with every secret value and placeholder masked, and echoes it back (literal, Basic, base64 at three
# alignments, percent- and JSON-escaped; identity, chunked, gzip, deflate). Covers: `secrets list`; injection into
# a header, x-api-key (exec source, derived placeholder), Basic (password and user), query; curl and python3
# urllib, node https; known clients by address (explicit and transparent), by Proxy-Authorization, and restricted with
# `sandboxes:`; unknown clients refused; placeholders toward an unbound host or in an unbound place (query, other
# header, path, body, Basic) refused with 403, audited as exfiltration_attempt, and not forwarded; a placeholder
# split across two writes at every offset; bodies over 1 MiB; plain HTTP with and without allow_plaintext; an exec
# source that fails (503); response scrubbing in headers and in identity/chunked/gzip/deflate bodies, with
# Accept-Encoding narrowed; audit fields. At the end every file of the run and the test's own output are scanned
# for the real values. Real values are random per run and never printed (a hit prints "value found in FILE").
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
RAW=$HERE/rawclient.py ECHO=$HERE/echo_upstream.py
ELOG=$T/echo.jsonl OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

# ---------------------------------------------------------------- values (never printed) and placeholders
rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_GH="ghs_$(rnd 30)/+=$(rnd 8)"        # '/', '+', '=': its percent and JSON forms differ
export SLUICE_IT_Q="q$(rnd 31)"
export SLUICE_IT_SB="sbv_$(rnd 30)"
export SLUICE_IT_SLACK="xoxb-real-$(rnd 30)"
export SLUICE_IT_PROXYPW="pw$(rnd 22)"
# the exec: source derives its value from a seed, so the value itself is in no file
rnd 32 >"$T/seed"
cat >"$T/mint.py" <<'PY'
import hashlib, sys
print("sk-ant-real-" + hashlib.sha256(open(sys.argv[1], "rb").read() + b"|sluice-it").hexdigest())
PY
export SLUICE_IT_KEY; SLUICE_IT_KEY=$("$PY" "$T/mint.py" "$T/seed")
[ ${#SLUICE_IT_KEY} -gt 40 ] || die "setup: the exec secret's value was not made"
# an exec: source whose value the test rotates (a counter file): re-run after the upstream answers 401
printf 1 >"$T/rot.n"
printf 'import sys\nprint("rotating-value-" + open(sys.argv[1]).read().strip())\n' >"$T/rot.py"
ROT_PH="sluice_ph_rot$ID$(rnd 20)"
GH_PH="ghp_Ph$ID$(rnd 28)"                           # explicit placeholders (derived ones: key, slack)
Q_PH="sluice_ph_q$ID$(rnd 24)" SB_PH="sluice_ph_sb$ID$(rnd 24)" BROKEN_PH="sluice_ph_broken$ID$(rnd 20)"
VALUES="GH Q SB SLACK PROXYPW KEY"

# cred.py: forms FILE NAME... prints the echo forms of those values found in FILE; mask copies stdin to stdout with
# every value written as {{NAME}}; scan DIR prints "value found in FILE" for every file holding any value (or the
# exact Basic credential of GH). Values come from the SLUICE_IT_<NAME> environment variables, never from arguments.
cat >"$T/cred.py" <<'PY'
import base64, json, os, sys, urllib.parse
def val(n):
    return os.environ["SLUICE_IT_" + n].encode()
def forms(n):
    v = val(n)
    f = {"literal": v}
    for k in range(3):
        s = base64.b64encode(b"\0" * k + v)
        f["b64_%d" % k] = s[4 if k else 0:-4]
    f["pct"] = urllib.parse.quote(v, safe="").encode()
    f["json"] = json.dumps(v.decode("latin-1"))[1:-1].replace("/", "\\/").encode()
    f["basic_pw"] = base64.b64encode(b"x-access-token:" + v)
    f["basic_user"] = base64.b64encode(v + b":")
    return f
cmd = sys.argv[1]
if cmd == "forms":
    if not os.path.isfile(sys.argv[2]):
        sys.exit(print("(no output file)"))
    data = open(sys.argv[2], "rb").read()
    print(" ".join("%s:%s" % (n, k) for n in sys.argv[3:] for k, s in forms(n).items() if s and s in data))
elif cmd == "mask":
    data = sys.stdin.buffer.read()
    pairs = [(val(n), n) for n in os.environ["VALUES"].split()]
    pairs += [(forms("GH")["basic_pw"], "GH_BASIC"), (forms("GH")["basic_user"], "GH_BASIC_USER")]
    for v, n in sorted(pairs, key=lambda p: -len(p[0])):
        data = data.replace(v, b"{{%s}}" % n.encode())
    sys.stdout.buffer.write(data)
elif cmd == "scan":
    names = os.environ["VALUES"].split()
    needles = [val(n) for n in names] + [forms("GH")["basic_pw"], forms("GH")["basic_user"]]
    for root, _, files in os.walk(sys.argv[2]):
        for fn in sorted(files):
            p = os.path.join(root, fn)
            if not os.path.isfile(p) or os.path.islink(p):
                continue
            with open(p, "rb") as fh:
                data = fh.read()
            if any(x in data for x in needles):
                print("value found in %s" % os.path.relpath(p, sys.argv[2]))
PY
export VALUES
# whatever a failure prints (messages, bodies, log tails) goes through the masker: a leaked value is reported by
# the checks and the final scan, never printed
mask() { if [ -f "$T/cred.py" ]; then "$PY" "$T/cred.py" mask; else cat; fi; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*" | mask; }
dump_logs() {
  local f
  for f in "$GWLOG" "$T/echo.log"; do
    [ -s "$f" ] && { echo "# --- tail $f"; tail -n 15 "$f" | mask | sed 's/^/# /'; }
  done
  return 0
}
forms_in() { local f=$1; shift; "$PY" "$T/cred.py" forms "$f" "$@" 2>&1; }
# no_forms MSG FILE NAME...: none of the echo forms of those values is in FILE (names of the forms on failure)
no_forms() { local what=$1; shift; check_eq "$what" "" "$(forms_in "$@")"; }

cat >"$T/urlc.py" <<'PY'
import ssl, sys, urllib.error, urllib.request
proxy, ca, url, ph, out = sys.argv[1:6]
ctx = ssl.create_default_context(cafile=ca)
op = urllib.request.build_opener(urllib.request.ProxyHandler({"https": proxy}), urllib.request.HTTPSHandler(context=ctx))
req = urllib.request.Request(url, data=b"hello from urllib", method="POST",
                             headers={"Authorization": "Bearer " + ph, "Content-Type": "text/plain"})
try:
    r = op.open(req, timeout=10); code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
open(out, "wb").write(body)
print(code)
PY

# ---------------------------------------------------------------- namespaces, upstream, gateway
netns_make a; netns_redirect "80, 443"; NSA=$NS NSA_ADDR=$NS_ADDR NSA_HOST=$NS_HOST
netns_make b; netns_redirect "80, 443"; NSB=$NS NSB_ADDR=$NS_ADDR NSB_HOST=$NS_HOST
pki_init
# the gh value as a form field carries it (percent-encoded: it holds '/', '+' and '=')
GH_FORM=$("$PY" -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["SLUICE_IT_GH"], safe="-._~"))')
spawn "$T/echo.log" env ECHO_MASK_GH="$SLUICE_IT_GH" ECHO_MASK_Q="$SLUICE_IT_Q" ECHO_MASK_SB="$SLUICE_IT_SB" \
  ECHO_MASK_SLACK="$SLUICE_IT_SLACK" ECHO_MASK_KEY="$SLUICE_IT_KEY" ECHO_MASK_PH_GH="$GH_PH" ECHO_MASK_PH_Q="$Q_PH" \
  ECHO_MASK_PH_SB="$SB_PH" ECHO_MASK_PH_BROKEN="$BROKEN_PH" ECHO_MASK_GHFORM="$GH_FORM" \
  "$PY" "$ECHO" --listen "$UPADDR:443:tls" --listen "$UPADDR:80" --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$ELOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "echo upstream did not start: $(tail -n 3 "$T/echo.log")"

policy_base 'allow: { method: [GET, POST] }' <<YAML | gw_conf
  other.example.test:
    allow_private: true
    rules:
      - allow: { method: [GET, POST] }
  www.example.test:
    allow_private: true
    allow_plaintext: true
    rules:
      - allow: { method: [GET, POST] }
secrets:
  gh:
    source: env:SLUICE_IT_GH
    placeholder: "$GH_PH"
    hosts: [api.example.test, www.example.test]
    inject: [header:Authorization, basic, "json:\$.auth['gh token']", "json:\$.items[*].key", "form:gh_token"]
  key:
    source: exec:$PY $T/mint.py $T/seed
    ttl: 10m
    format: anthropic
    hosts: [api.example.test]
    inject: [header:x-api-key]
  q:
    source: env:SLUICE_IT_Q
    placeholder: "$Q_PH"
    hosts: [api.example.test]
    inject: ["query:api_key"]
  sbonly:
    source: env:SLUICE_IT_SB
    placeholder: "$SB_PH"
    hosts: [api.example.test]
    inject: [header:Authorization]
    sandboxes: [known-ns]
  slack:
    source: env:SLUICE_IT_SLACK
    format: slack
    hosts: [api.example.test]
    inject: [header:Authorization, "json:\$.token", "form:token"]
  rot:
    source: exec:$PY $T/rot.py $T/rot.n
    placeholder: "$ROT_PH"
    hosts: [api.example.test]
    inject: [header:X-Note]
  broken:
    source: exec:/bin/false
    placeholder: "$BROKEN_PH"
    hosts: [api.example.test]
    inject: [header:Authorization]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
  known-ns:
    addresses: [$NSA_ADDR/32]
  ci:
    proxy_auth: { user: ci, password: env:SLUICE_IT_PROXYPW }
sandbox_env:
  GITHUB_TOKEN: gh
  ANTHROPIC_API_KEY: key
YAML
gw_start

# ---------------------------------------------------------------- helpers
rc() { $CLEAN timeout 30 "$PY" "$RAW" --proxy "127.0.0.1:$PP" --cafile "$CA/ca.pem" --timeout 10 "$@"; }
# nsc NS HOST ARGS...: curl inside namespace NS, every name resolving to its host side (then redirected)
nsc() {
  local ns=$1 h=$2; shift 2
  ip netns exec "$ns" env -i PATH=/usr/bin:/bin curl -sS --max-time 10 --cacert "$CA/ca.pem" \
    --resolve "api.example.test:443:$h" --resolve "other.example.test:443:$h" "$@"
}
# the upstream's last head record for PATH (or a path below PATH/), as compact JSON (masked: safe to print)
up_rec() { jq -c --arg p "$1" 'select(.ev=="head" and (.path==$p or (.path|startswith($p + "/"))))' "$ELOG" 2>/dev/null | tail -n 1; }
up_done() { jq -c --arg p "$1" 'select(.ev=="done") | select((.target|split("?")[0]) as $q | ($q==$p or ($q|startswith($p + "/"))))' "$ELOG" 2>/dev/null | tail -n 1; }
# up_check MSG PATH JQ: the upstream received a request for PATH whose head record satisfies JQ
up_check() {
  local r; r=$(up_rec "$2")
  if [ -n "$r" ] && printf '%s' "$r" | jq -e "$3" >/dev/null 2>&1; then ok "$1"; else bad "$1 (upstream saw [${r:-nothing}])"; fi
}
# up_none MSG PATH: nothing at all for PATH reached the upstream
up_none() { local r; r=$(up_rec "$2"); if [ -z "$r" ]; then ok "$1"; else bad "$1 (upstream saw [$r])"; fi; }
# json_check MSG FILE JQ: FILE is JSON satisfying JQ (else the start of FILE, masked, is printed)
json_check() {
  if jq -e "$3" "$2" >/dev/null 2>&1; then ok "$1"; else bad "$1 (body [$(mask <"$2" 2>/dev/null | head -c 300)])"; fi
}
has_secret() { printf 'any(.secrets[]?; .name=="%s" and ((.place // "") | ascii_downcase)=="%s")' "$1" "$2"; }
has_scrub() { printf 'any(.scrubbed[]?; .=="%s")' "$1"; }
N=0 F=
# nf EXT: F = a new file name in the run directory for one client output
nf() { N=$((N + 1)); F=$T/r$N.$1; }

# ---------------------------------------------------------------- secrets list
"$SLUICE" secrets list -c "$GWCONF" >"$T/list.out" 2>&1
"$SLUICE" secrets list -c "$GWCONF" >"$T/list2.out" 2>&1
for n in gh key q sbonly slack broken; do
  check "secrets list names secret '$n'" grep -qE "(^|[^A-Za-z0-9_-])$n([^A-Za-z0-9_-]|\$)" "$T/list.out"
done
for p in "$GH_PH" "$Q_PH" "$SB_PH" "$BROKEN_PH"; do
  check "secrets list shows the configured placeholder ${p:0:16}..." grep -qF -- "$p" "$T/list.out"
done
KEY_PH=$(grep -oE 'sk-ant-api03-[A-Za-z0-9_-]{86}AA' "$T/list.out" | head -n 1)
SLACK_PH=$(grep -oE 'xoxb-[0-9]{13}-[0-9]{13}-[A-Za-z0-9]{24}' "$T/list.out" | head -n 1)
check "secrets list shows a derived placeholder of format anthropic (sk-ant-api03-...)" test -n "$KEY_PH"
check "secrets list shows a derived placeholder of format slack (xoxb-...)" test -n "$SLACK_PH"
check "derived placeholders are the same on a second run" sh -c "grep -qF -- '${KEY_PH:-none}' '$T/list2.out' && grep -qF -- '${SLACK_PH:-none}' '$T/list2.out'"
check "the placeholder key is kept in the CA directory (placeholder.key)" test -s "$CA/placeholder.key"
check "secrets list shows the source kinds (env, exec)" sh -c "grep -q env '$T/list.out' && grep -q exec '$T/list.out'"
check "secrets list shows a status 'ok'" grep -qw ok "$T/list.out"
no_forms "secrets list never shows a value" "$T/list.out" $VALUES
[ -n "$KEY_PH" ] || KEY_PH="sk-ant-api03-unknown$ID"
[ -n "$SLACK_PH" ] || SLACK_PH="xoxb-unknown$ID"

# ---------------------------------------------------------------- injection
# header (curl, explicit proxy, known client "local" by address)
nf body; b=$F; nf hdr; h=$F
code=$(pcurl -D "$h" -o "$b" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://api.example.test/e/inj-hdr 2>/dev/null)
check_eq "header: a bound placeholder in Authorization is answered 200" 200 "$code"
up_check "header: the upstream received Authorization: Bearer <real value>" /e/inj-hdr '.auth == "Bearer {{GH}}"'
check "header: the echo body is scrubbed back to the placeholder" grep -qF "auth=[Bearer $GH_PH]" "$b"
check "header: the echoed response header is scrubbed (X-Echo-Auth: Bearer <placeholder>)" grep -qiF "x-echo-auth: Bearer $GH_PH" "$h"
no_forms "header: no form of the value (literal, base64 x3, percent, JSON) reaches the client, body or headers" "$b" GH
no_forms "header: ... nor in the response headers" "$h" GH
check "audit: injected secret gh at header:authorization, sandbox 'local', scrubbed" \
  audit_wait ".path==\"/e/inj-hdr\" and .status==200 and .sandbox==\"local\" and $(has_secret gh header:authorization) and $(has_scrub gh)"

# Basic: the password (what git sends for https://x-access-token:TOKEN@host/...) and the user (Stripe style)
nf body; b=$F
code=$(pcurl -o "$b" -w '%{http_code}' -u "x-access-token:$GH_PH" https://api.example.test/e/inj-basic 2>/dev/null)
check_eq "basic: placeholder as the Basic password: 200" 200 "$code"
up_check "basic: the upstream received Basic x-access-token:<real value>, canonically re-encoded" /e/inj-basic \
  '.basic == "x-access-token:{{GH}}" and .basic_canonical == true'
check "basic: the echoed decoded credential is scrubbed" grep -qF "basic=[x-access-token:$GH_PH]" "$b"
no_forms "basic: neither the value nor the exact Basic credential comes back" "$b" GH
check "audit: injected secret gh at basic" audit_wait ".path==\"/e/inj-basic\" and $(has_secret gh basic)"
nf body; b=$F
code=$(pcurl -o "$b" -w '%{http_code}' -u "$GH_PH:" https://api.example.test/e/inj-basicuser 2>/dev/null)
check_eq "basic: placeholder as the Basic user with an empty password: 200" 200 "$code"
up_check "basic: the upstream received Basic <real value>:" /e/inj-basicuser '.basic == "{{GH}}:" and .basic_canonical == true'
no_forms "basic (user): nothing of the value comes back" "$b" GH

# x-api-key from an exec: source with a derived placeholder
nf body; b=$F
code=$(pcurl -o "$b" -w '%{http_code}' -H "x-api-key: $KEY_PH" https://api.example.test/e/inj-key 2>/dev/null)
check_eq "x-api-key: derived placeholder, exec source: 200" 200 "$code"
up_check "x-api-key: the upstream received the exec source's value" /e/inj-key '.x_api_key == "{{KEY}}"'
check "x-api-key: the echo is scrubbed back to the derived placeholder" grep -qF "key=[$KEY_PH]" "$b"
no_forms "x-api-key: nothing of the value comes back" "$b" KEY
check "audit: injected secret key at header:x-api-key" audit_wait ".path==\"/e/inj-key\" and $(has_secret key header:x-api-key)"

# an exec: source is re-run after the upstream answers 401 (an expired token), and only then
code=$(pcurl -o /dev/null -w '%{http_code}' -H "X-Note: $ROT_PH" https://api.example.test/e/rot-a 2>/dev/null)
check_eq "exec source: 200" 200 "$code"
up_check "exec source: the upstream received the program's value" /e/rot-a '.x_note == "rotating-value-1"'
printf 2 >"$T/rot.n"
pcurl -o /dev/null -H "X-Note: $ROT_PH" https://api.example.test/e/rot-b 2>/dev/null
up_check "exec source: no ttl, no 401: the value is not re-read" /e/rot-b '.x_note == "rotating-value-1"'
code=$(pcurl -o /dev/null -w '%{http_code}' -H "X-Note: $ROT_PH" "https://api.example.test/e/rot-401?status=401" 2>/dev/null)
check_eq "exec source: the upstream rejects the value (401)" 401 "$code"
sleep 6  # the store re-runs sources at its 5 s tick
pcurl -o /dev/null -H "X-Note: $ROT_PH" https://api.example.test/e/rot-c 2>/dev/null
up_check "exec source: after the 401 the program ran again and its new value is injected" /e/rot-c '.x_note == "rotating-value-2"'

# query parameter
nf body; b=$F
code=$(pcurl -o "$b" -w '%{http_code}' "https://api.example.test/e/inj-query?api_key=$Q_PH&x=1" 2>/dev/null)
check_eq "query: a bound placeholder in ?api_key=: 200" 200 "$code"
up_check "query: the upstream received api_key=<real value>" /e/inj-query '.query == "api_key={{Q}}&x=1"'
check "query: the echoed query is scrubbed" grep -qF "query=[api_key=$Q_PH&x=1]" "$b"
no_forms "query: nothing of the value comes back" "$b" Q
check "audit: injected secret q at query:api_key" audit_wait ".path==\"/e/inj-query\" and $(has_secret q query:api_key)"

# python3 urllib, POST with a body that holds no placeholder
nf body; b=$F
code=$($CLEAN timeout 20 "$PY" "$T/urlc.py" "http://127.0.0.1:$PP" "$CA/ca.pem" https://api.example.test/e/inj-urllib "$GH_PH" "$b" 2>/dev/null)
check_eq "python3 urllib POST with Authorization: Bearer <placeholder>: 200" 200 "$code"
up_check "urllib: the upstream received the real value" /e/inj-urllib '.auth == "Bearer {{GH}}"'
check "urllib: the upstream received the whole body" test "$(up_done /e/inj-urllib | jq -r '.body_len')" = 17
check "urllib: the echo is scrubbed" grep -qF "auth=[Bearer $GH_PH]" "$b"
no_forms "urllib: nothing of the value comes back" "$b" GH

# node https: CONNECT by hand, then https.get over the tunnel (trust from NODE_EXTRA_CA_CERTS); the body goes
# to a file, only the status is printed
cat >"$T/nodec.js" <<'JS'
const http = require('http'), https = require('https'), tls = require('tls'), fs = require('fs');
const [port, host, path, ph, out] = process.argv.slice(2);
const t = setTimeout(() => { console.error('timeout'); process.exit(3); }, 15000);
http.request({ host: '127.0.0.1', port: +port, method: 'CONNECT', path: host + ':443' })
  .on('connect', (res, socket) => {
    if (res.statusCode !== 200) { console.error('CONNECT ' + res.statusCode); process.exit(2); }
    https.get({ host, path, port: 443, headers: { Authorization: 'Bearer ' + ph },
                createConnection: () => tls.connect({ socket, servername: host }) }, (r) => {
      const parts = []; r.on('data', (d) => parts.push(d));
      r.on('end', () => { fs.writeFileSync(out, Buffer.concat(parts)); process.stdout.write(String(r.statusCode));
                          clearTimeout(t); process.exit(0); });
    }).on('error', (e) => { console.error(e.code || e.message); process.exit(1); });
  }).on('error', (e) => { console.error(e.message); process.exit(1); }).end();
JS
nf body; b=$F
code=$($CLEAN NODE_EXTRA_CA_CERTS="$CA/ca.pem" timeout 30 node "$T/nodec.js" "$PP" api.example.test /e/inj-node "$GH_PH" "$b" 2>&1)
check_eq "node https with Authorization: Bearer <placeholder>: 200" 200 "$code"
up_check "node: the upstream received the real value" /e/inj-node '.auth == "Bearer {{GH}}"'
check "node: the echo is scrubbed" grep -qF "auth=[Bearer $GH_PH]" "$b"
no_forms "node: nothing of the value comes back" "$b" GH

# a placeholder split inside the request head across two writes: still injected whole
bad_off=""
for k in 1 7 $((${#GH_PH} / 2)) $((${#GH_PH} - 1)); do
  nf body; b=$F
  rc --connect api.example.test:443 --delay 0.05 \
    --send "GET /e/split-head-$k HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer ${GH_PH:0:k}" \
    --send "${GH_PH:k}\r\nConnection: close\r\n\r\n" >"$b" 2>/dev/null
  [ "$(head -n 1 "$b")" = 200 ] && [ "$(up_rec "/e/split-head-$k" | jq -r .auth)" = "Bearer {{GH}}" ] || bad_off="$bad_off $k"
  [ -z "$(forms_in "$b" GH)" ] || bad_off="$bad_off $k(echo)"
done
check_eq "a placeholder split across two writes of the head is injected whole (offsets 1 7 mid last)" "" "$bad_off"

# ---------------------------------------------------------------- who may use a secret
nf body; b=$F
code=$(nsc "$NSA" "$NSA_HOST" -o "$b" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://api.example.test/e/ns-known 2>/dev/null)
check_eq "transparent, known sandbox (by address): 200" 200 "$code"
up_check "transparent, known sandbox: the upstream received the real value" /e/ns-known '.auth == "Bearer {{GH}}"'
no_forms "transparent, known sandbox: nothing of the value comes back" "$b" GH
check "audit: the sandbox field names the known sandbox (known-ns)" \
  audit_wait ".path==\"/e/ns-known\" and .sandbox==\"known-ns\" and $(has_secret gh header:authorization)"
nf body; b=$F
code=$(nsc "$NSA" "$NSA_HOST" -o "$b" -w '%{http_code}' -H "Authorization: Bearer $SB_PH" https://api.example.test/e/ns-sbonly 2>/dev/null)
check_eq "a secret restricted to sandboxes: [known-ns], used by known-ns: 200" 200 "$code"
up_check "  and the upstream received its value" /e/ns-sbonly '.auth == "Bearer {{SB}}"'
nf body
code=$(pcurl -o "$F" -w '%{http_code}' -H "Authorization: Bearer $SB_PH" https://api.example.test/e/sbonly-local 2>/dev/null)
check_eq "the same secret used by another known client (local): 403" 403 "$code"
up_none "  and nothing reached the upstream" /e/sbonly-local

nf body; b=$F
code=$(nsc "$NSB" "$NSB_HOST" -o "$b" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://api.example.test/e/ns-unknown 2>/dev/null)
check_eq "transparent, a namespace not in sandboxes: no injection, 403" 403 "$code"
json_check "  the refusal names rule secrets" "$b" '.rule == "secrets"'
up_none "  and nothing reached the upstream" /e/ns-unknown
check "audit: the unknown client's refusal (403, rule secrets, sandbox = its address)" \
  audit_wait ".status==403 and .rule==\"secrets\" and .sandbox==\"$NSB_ADDR\""
nf body
code=$(pcurl --interface 127.0.0.2 -o "$F" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://api.example.test/e/px-unknown 2>/dev/null)
check_eq "explicit proxy, a client address not in sandboxes, no Proxy-Authorization: 403" 403 "$code"
up_none "  and nothing reached the upstream" /e/px-unknown
nf body; b=$F
code=$(pcurl --interface 127.0.0.2 --proxy-user "ci:$SLUICE_IT_PROXYPW" -o "$b" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://api.example.test/e/px-auth 2>/dev/null)
check_eq "explicit proxy, same address, Proxy-Authorization of sandbox ci: 200" 200 "$code"
up_check "  the upstream received the real value" /e/px-auth '.auth == "Bearer {{GH}}"'
no_forms "  nothing of the value comes back" "$b" GH
check "audit: the sandbox field says ci" audit_wait ".path==\"/e/px-auth\" and .sandbox==\"ci\" and $(has_secret gh header:authorization)"
nf body
code=$(pcurl --interface 127.0.0.2 --proxy-user "ci:wrong$ID" -o "$F" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://api.example.test/e/px-badauth 2>/dev/null)
check_match "explicit proxy, wrong proxy password: refused (not 2xx)" '^(000|[1345][0-9][0-9])$' "$code"
check_nomatch "  and the upstream never received the value for it" '\{\{GH\}\}' "$(up_rec /e/px-badauth)"

# ---------------------------------------------------------------- exfiltration: refused, audited, not forwarded
# exfil WHAT PATH SECRET PLACE WORD CURL_ARGS...: 403 with rule secrets and a reason naming SECRET and WORD, nothing
# reached the upstream, and an exfiltration_attempt audit record for SECRET at PLACE ("" = any place)
exfil() {
  local what=$1 path=$2 sec=$3 place=$4 word=$5 b code q; shift 5
  nf body; b=$F
  code=$(pcurl -o "$b" -w '%{http_code}' "$@" 2>/dev/null)
  check_eq "$what: 403" 403 "$code"
  json_check "  the refusal: rule secrets, reason names '$sec' and '$word'" "$b" \
    ".rule == \"secrets\" and (.reason | contains(\"$sec\")) and (.reason | ascii_downcase | contains(\"$word\"))"
  up_none "  nothing reached the upstream" "$path"
  q=".type==\"exfiltration_attempt\" and .secret==\"$sec\" and ((.path // \"$path\") | startswith(\"$path\"))"
  [ -n "$place" ] && q="$q and ((.place // \"\") | ascii_downcase)==\"$place\""
  check "  audit: exfiltration_attempt, secret $sec${place:+, place $place}" audit_wait "$q"
}
exfil "unbound host (other.example.test)" /e/ex-host gh header:authorization authorization \
  -H "Authorization: Bearer $GH_PH" https://other.example.test/e/ex-host
check "  audit: the exfiltration record names the host" \
  audit_wait '.type=="exfiltration_attempt" and .host=="other.example.test" and .secret=="gh"'
exfil "bound host, unbound place: query ?leak=" /e/ex-query gh query:leak leak "https://api.example.test/e/ex-query?leak=$GH_PH"
exfil "bound host, unbound place: another header (X-Note)" /e/ex-note gh header:x-note x-note \
  -H "X-Note: token is $GH_PH" https://api.example.test/e/ex-note
exfil "bound host, unbound place: the path" /e/ex-path gh "" "" "https://api.example.test/e/ex-path/$GH_PH"
exfil "bound host, unbound place: a JSON body field" /e/ex-body gh 'json:$.text' 'json:$.text' -X POST \
  -H 'Content-Type: application/json' --data "{\"text\":\"my token is $GH_PH\"}" https://api.example.test/e/ex-body
exfil "a secret with json:\$.token, quoted into \$.text (the Slack message case)" /e/ex-slack slack 'json:$.text' \
  'json:$.text' -X POST -H 'Content-Type: application/json' \
  --data "{\"channel\":\"C1\",\"text\":\"my token is $SLACK_PH\"}" https://api.example.test/e/ex-slack
exfil "a JSON body that is not application/json" /e/ex-ctype slack body body -X POST -H 'Content-Type: text/plain' \
  --data "{\"token\":\"$SLACK_PH\"}" https://api.example.test/e/ex-ctype
exfil "a JSON key" /e/ex-key slack 'json key' 'json key' -X POST -H 'Content-Type: application/json' \
  --data "{\"$SLACK_PH\":1}" https://api.example.test/e/ex-key
exfil "the placeholder JSON-escaped (\\u0078 for its first letter)" /e/ex-esc slack body body -X POST \
  -H 'Content-Type: application/json' --data "{\"token\":\"\\u0078${SLACK_PH:1}\"}" https://api.example.test/e/ex-esc
exfil "duplicate JSON keys (not JSON to the gateway)" /e/ex-dup slack body body -X POST \
  -H 'Content-Type: application/json' --data "{\"token\":\"$SLACK_PH\",\"token\":\"x\"}" https://api.example.test/e/ex-dup
exfil "a form field it is not bound to" /e/ex-form slack form:text form:text -X POST \
  --data "token=x&text=$SLACK_PH" https://api.example.test/e/ex-form
exfil "a form field it is bound to, in a body with a bad escape (not a form)" /e/ex-badform slack body body -X POST \
  --data "token=$SLACK_PH&x=%zz" https://api.example.test/e/ex-badform
exfil "bound host, unbound place: Basic (x-api-key secret)" /e/ex-basic key basic basic \
  -u "user:$KEY_PH" https://api.example.test/e/ex-basic
exfil "bound host, unbound place: Authorization (x-api-key secret)" /e/ex-keyauth key header:authorization authorization \
  -H "Authorization: Bearer $KEY_PH" https://api.example.test/e/ex-keyauth
exfil "query secret in a header" /e/ex-qhdr q header:x-note x-note -H "X-Note: $Q_PH" https://api.example.test/e/ex-qhdr
nf body
code=$(pcurl -o "$F" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" http://api.example.test/e/plain-no 2>/dev/null)
check_eq "plain HTTP to a bound host without allow_plaintext: no injection, 403" 403 "$code"
up_none "  and nothing reached the upstream" /e/plain-no
nf body; b=$F
code=$(pcurl -o "$b" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" http://www.example.test/e/plain-ok 2>/dev/null)
check_eq "plain HTTP to a bound host with allow_plaintext: true: 200" 200 "$code"
up_check "  the upstream received the real value over plain HTTP" /e/plain-ok '.auth == "Bearer {{GH}}"'
no_forms "  nothing of the value comes back" "$b" GH

# redirects: the gateway never follows one; the sandbox's follow-up is judged afresh (other.example.test: unbound)
nf body; b=$F; nf hdr; h=$F
code=$(pcurl -D "$h" -o "$b" -w '%{http_code}' -H "Authorization: Bearer $GH_PH" \
  "https://api.example.test/e/redir?location=https://other.example.test/e/redir-target" 2>/dev/null)
check_eq "a 302 from a bound host reaches the sandbox as it is" 302 "$code"
check "  with its Location" grep -qi "^location: https://other.example.test/e/redir-target" "$h"
up_none "  the gateway did not follow it" /e/redir-target
code=$(pcurl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $GH_PH" https://other.example.test/e/redir-target 2>/dev/null)
check_eq "  the sandbox's follow-up with the placeholder to the unbound host: 403" 403 "$code"
up_none "  and nothing reached that host" /e/redir-target

# ---------------------------------------------------------------- injection into bodies (json:, form:)
# bpost PATH CURL_ARGS...: POSTs to PATH; code = the status, F = the client's copy
bpost() { local path=$1; shift; nf body; code=$(pcurl -o "$F" -w '%{http_code}' -X POST "$@" "https://api.example.test$path" 2>/dev/null); }
up_body() { up_done "$1" | jq -r '.body'; }
bpost /e/b-json -H 'Content-Type: application/json' --data "{\"channel\":\"C1\",\"token\":\"$SLACK_PH\",\"n\":1.50}"
check_eq "json:\$.token: 200" 200 "$code"
check_eq "  the upstream received the value in \$.token, the rest byte for byte (1.50 stays 1.50)" \
  '{"channel":"C1","token":"{{SLACK}}","n":1.50}' "$(up_body /e/b-json)"
exp='{"channel":"C1","token":"'$SLUICE_IT_SLACK'","n":1.50}'
check_eq "  re-framed: the Content-Length is the new length" "${#exp}" "$(up_done /e/b-json | jq -r '.body_len')"
check "  the echo is scrubbed back to the placeholder" grep -qF "\"token\":\"$SLACK_PH\"" "$F"
no_forms "  nothing of the value comes back" "$F" SLACK
check "  audit: injected secret slack at json:\$.token" \
  audit_wait ".path==\"/e/b-json\" and .status==200 and $(has_secret slack 'json:$.token')"
bpost /e/b-jsonwild -H 'Content-Type: application/vnd.api+json; charset=utf-8' \
  --data "{\"items\":[{\"key\":\"$GH_PH\"},{\"key\":\"a $GH_PH b\"}],\"auth\":{\"gh token\":\"$GH_PH\"}}"
check_eq "json:\$.items[*].key and json:\$.auth['gh token'] (a +json type): 200" 200 "$code"
check_eq "  every bound occurrence injected" '{"items":[{"key":"{{GH}}"},{"key":"a {{GH}} b"}],"auth":{"gh token":"{{GH}}"}}' \
  "$(up_body /e/b-jsonwild)"
check "  audit: both places, as bound" audit_wait ".path==\"/e/b-jsonwild\" and $(has_secret gh 'json:$.items[*].key') and $(has_secret gh "json:\$.auth['gh token']")"
no_forms "  nothing of the value comes back" "$F" GH
bpost /e/b-form --data "a=1&gh_token=$GH_PH&token=$SLACK_PH&b=x%20y+z"
check_eq "form:gh_token and form:token: 200" 200 "$code"
check_eq "  the upstream received both values, percent-encoded, the other fields as sent" \
  'a=1&gh_token={{GHFORM}}&token={{SLACK}}&b=x%20y+z' "$(up_body /e/b-form)"
no_forms "  nothing of the values comes back" "$F" GH SLACK
bpost /e/b-chunked -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data "{\"token\":\"$SLACK_PH\"}"
check_eq "a chunked JSON body: 200" 200 "$code"
check_eq "  injected, sent whole" '{"token":"{{SLACK}}"}' "$(up_body /e/b-chunked)"
bpost /e/b-expect -H 'Content-Type: application/json' -H 'Expect: 100-continue' --data "{\"token\":\"$SLACK_PH\"}"
check_eq "Expect: 100-continue with a held body (the gateway answers 100 itself): 200" 200 "$code"
check_eq "  injected" '{"token":"{{SLACK}}"}' "$(up_body /e/b-expect)"
# the placeholder split across two writes at every offset: injected whole, every time
json_pre='{"token":"' bad_off=""
for k in $(seq 1 $((${#SLACK_PH} - 1))); do
  len=$((${#json_pre} + ${#SLACK_PH} + 2))
  st=$(rc --connect api.example.test:443 --delay 0.03 \
    --send "POST /e/bsplit-$k HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\nContent-Length: $len\r\nConnection: close\r\n\r\n$json_pre${SLACK_PH:0:k}" \
    --send="${SLACK_PH:k}\"}" 2>/dev/null | head -n 1)  # "=": a part may begin with '-' 
  [ "$st" = 200 ] && [ "$(up_body "/e/bsplit-$k")" = '{"token":"{{SLACK}}"}' ] || bad_off="$bad_off $k:$st"
done
check_eq "json:\$.token split across two writes at every offset 1..$((${#SLACK_PH} - 1)): injected whole" "" "$bad_off"
# a body over the 1 MiB inject bound streams through the search: a placeholder in it is refused
"$PY" - "$T/big.req" "$SLACK_PH" <<'PY'
import sys
body = b'{"pad":"' + b"a" * (1100 << 10) + b'","token":"' + sys.argv[2].encode() + b'"}'
open(sys.argv[1], "wb").write(b"POST /e/b-big HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
PY
st=$(rc --connect api.example.test:443 --send "@$T/big.req" 2>/dev/null | head -n 1)
check_match "a JSON body over 1 MiB with a bound placeholder: refused (403, or cut)" '^(403|000|)$' "$st"
check_nomatch "  the upstream never completed it" '"complete": true' "$(up_done /e/b-big)"

# a body placeholder split across two writes, at every offset: refused, nothing forwarded
body_pre="text=" bad_off=""
for k in $(seq 1 $((${#GH_PH} - 1))); do
  len=$((${#body_pre} + ${#GH_PH} + 1))
  st=$(rc --connect api.example.test:443 --delay 0.05 \
    --send "POST /e/split-$k HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: $len\r\n\r\n$body_pre${GH_PH:0:k}" \
    --send "${GH_PH:k}\n" 2>/dev/null | head -n 1)
  [ "$st" = 403 ] && [ -z "$(up_rec "/e/split-$k")" ] || bad_off="$bad_off $k:$st"
done
check_eq "body placeholder split across two writes at every offset 1..$((${#GH_PH} - 1)): 403, nothing forwarded" "" "$bad_off"
h=${GH_PH:0:13} t=${GH_PH:13}
st=$(rc --connect api.example.test:443 --delay 0.05 \
  --send "POST /e/split-chunked HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nnote=\r\n$(printf '%x' ${#h})\r\n$h\r\n" \
  --send "$(printf '%x' ${#t})\r\n$t\r\n0\r\n\r\n" 2>/dev/null | head -n 1)
check_eq "body placeholder split across two chunks (two writes): 403" 403 "$st"
check_nomatch "  the upstream never received a complete body (the head may go: the body streams)" '"complete": true' \
  "$(up_done /e/split-chunked)"

# bodies: up to 32 KiB are held and searched whole (nothing sent, see the split test above); larger ones
# stream, and the request is aborted before the bytes of a placeholder pass
"$PY" - "$T/mid.req" "$T/big.req" "$GH_PH" <<'PY'
import sys
ph = sys.argv[3].encode()
for fn, path, pre, post in ((sys.argv[1], b"/e/body-900k", 900 << 10, 100 << 10),
                            (sys.argv[2], b"/e/body-2m", 3 << 19, 1 << 19)):
    body = b"a" * pre + ph + b"a" * post
    with open(fn, "wb") as f:
        f.write(b"POST %s HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                % (path, len(body)) + body)
PY
st=$(rc --connect api.example.test:443 --timeout 20 --send "@$T/mid.req" 2>/dev/null | head -n 1)
check_eq "a 1000 KiB body with a placeholder near its end: 403" 403 "$st"
check_nomatch "  the upstream never completed that body" '"complete": true' "$(up_done /e/body-900k)"
st=$(rc --connect api.example.test:443 --timeout 20 --send "@$T/big.req" 2>/dev/null | head -n 1)
check_match "a 2 MiB body with a placeholder at 1.5 MiB: refused or aborted (403 or no answer)" '^(403|000)$' "$st"
check_nomatch "  the upstream never completed that body" '"complete": true' "$(up_done /e/body-2m)"
check "  audit: an exfiltration_attempt in the body was recorded" \
  audit_wait '.type=="exfiltration_attempt" and .secret=="gh" and ((.place // "") | ascii_downcase)=="body"'
check_eq "no placeholder ever reached the upstream, in any request (head or body)" 0 "$(grep -c 'PH_' "$ELOG")"

# ---------------------------------------------------------------- a secret whose source fails
nf body; b=$F
code=$(pcurl -o "$b" -w '%{http_code}' -H "Authorization: Bearer $BROKEN_PH" https://api.example.test/e/broken 2>/dev/null)
check_eq "exec source that fails (/bin/false): 503" 503 "$code"
json_check "  reason: secret 'broken' is unavailable: <why>" "$b" '.reason | startswith("secret '"'"'broken'"'"' is unavailable: ")'
up_none "  and nothing was forwarded" /e/broken
check "audit: the 503 is recorded" audit_wait '.path=="/e/broken" and .status==503'

# ---------------------------------------------------------------- response scrubbing
# gzip: the upstream really compresses; the gateway decodes, scrubs and sends identity
nf body; b=$F; nf hdr; h=$F
code=$(pcurl -D "$h" -o "$b" -w '%{http_code}' -H 'Accept-Encoding: br, zstd, gzip' -H "Authorization: Bearer $GH_PH" \
  'https://api.example.test/e/scrub-gz?gz=1' 2>/dev/null)
check_eq "gzip: 200" 200 "$code"
check_eq "gzip: the upstream really sent gzip" gzip "$(up_done /e/scrub-gz | jq -r .sent)"
check "gzip: Accept-Encoding was narrowed (the upstream saw only gzip, deflate, identity, and gzip)" sh -c \
  "up=\$(jq -r 'select(.ev==\"head\" and .path==\"/e/scrub-gz\") | .accept_encoding' '$ELOG' | tr 'A-Z' 'a-z'); \
   echo \"\$up\" | grep -qw gzip && ! echo \"\$up\" | grep -qwE 'br|zstd'"
check "gzip: the client got no Content-Encoding (the gateway decoded it)" sh -c "! grep -qi '^content-encoding:' '$h'"
check "gzip: the decoded body is scrubbed back to the placeholder" grep -qF "auth=[Bearer $GH_PH]" "$b"
no_forms "gzip: no form of the value in the body" "$b" GH
no_forms "gzip: ... nor in the headers" "$h" GH
check "audit: the gzip response was scrubbed (scrubbed: [gh])" audit_wait ".path==\"/e/scrub-gz\" and $(has_scrub gh)"
# gzip with Basic: the exact injected Basic credential is scrubbed inside a compressed body
nf body; b=$F
pcurl -o "$b" -H 'Accept-Encoding: gzip' -u "x-access-token:$GH_PH" 'https://api.example.test/e/scrub-gzbasic?gz=1' >/dev/null 2>&1
check_eq "gzip + Basic: the upstream really sent gzip" gzip "$(up_done /e/scrub-gzbasic | jq -r .sent)"
check "gzip + Basic: the echoed Basic credential is scrubbed" grep -qF "basic=[x-access-token:$GH_PH]" "$b"
no_forms "gzip + Basic: neither the value nor the exact Basic credential comes back" "$b" GH
# deflate (zlib)
nf body; b=$F; nf hdr; h=$F
pcurl -D "$h" -o "$b" -H 'Accept-Encoding: deflate' -H "Authorization: Bearer $GH_PH" 'https://api.example.test/e/scrub-deflate?deflate=1' >/dev/null 2>&1
check_eq "deflate: the upstream really sent deflate" deflate "$(up_done /e/scrub-deflate | jq -r .sent)"
check "deflate: no Content-Encoding toward the client" sh -c "! grep -qi '^content-encoding:' '$h'"
check "deflate: the body is scrubbed" grep -qF "auth=[Bearer $GH_PH]" "$b"
no_forms "deflate: no form of the value in the body" "$b" GH
# chunked in 5-byte chunks 20 ms apart: every value spans several reads
nf body; b=$F
pcurl -o "$b" -H "Authorization: Bearer $GH_PH" 'https://api.example.test/e/scrub-chunked?chunked=1' >/dev/null 2>&1
check "chunked across reads: the body is scrubbed" grep -qF "auth=[Bearer $GH_PH]" "$b"
no_forms "chunked across reads: no form of the value in the body" "$b" GH
nf body; b=$F
pcurl -o "$b" -H 'Accept-Encoding: gzip' -H "x-api-key: $KEY_PH" 'https://api.example.test/e/scrub-keygz?gz=1&chunked=1' >/dev/null 2>&1
check_eq "gzip + chunked (x-api-key): the upstream really sent gzip" gzip "$(up_done /e/scrub-keygz | jq -r .sent)"
no_forms "gzip + chunked (x-api-key): no form of the value in the body" "$b" KEY

# ---------------------------------------------------------------- audit hygiene
check "audit: no request record carries a secrets entry with anything but name and place" \
  sh -c "[ \"\$(jq -s '[.[] | select(.type==\"request\") | .secrets[]? | keys | select(. != [\"name\",\"place\"])] | length' '$AUDIT')\" = 0 ]"
check "audit: scrub records name secrets only (an array of names)" \
  sh -c "[ \"\$(jq -s '[.[] | select(.type==\"scrub\") | select((.secrets | type) != \"array\" or any(.secrets[]; type != \"string\"))] | length' '$AUDIT')\" = 0 ]"
check "audit: every exfiltration_attempt names a secret and a place" \
  sh -c "[ \"\$(jq -s '[.[] | select(.type==\"exfiltration_attempt\") | select((.secret|type)!=\"string\" or (.place|type)!=\"string\")] | length' '$AUDIT')\" = 0 ]"

# ---------------------------------------------------------------- the real values are nowhere
gw_stop 20
check_eq "the gateway stops cleanly on SIGTERM" 0 "$GW_RC"
sleep 0.3
found=$("$PY" "$T/cred.py" scan "$T" 2>&1)
if [ -z "$found" ]; then ok "no real value in any file of the run (logs, audit, upstream log, client outputs) or in this test's output"
else bad "real values leaked:"; printf '%s\n' "$found" | sed 's/^/# /'; fi
finish
