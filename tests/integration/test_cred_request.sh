#!/usr/bin/env bash
# The request side of credential binding (issue 17, requirements 1 and 5), end to end against a recording upstream
# (credgen.py upstream: every request's head and body as received), over HTTP/1.1 and HTTP/2:
#  - one check per finding and its variants (credgen.py findings): F1 a %-encoded placeholder in the path (mixed-case
#    hex, double encoding, base64url), F2 a placeholder in a header name, the method, a query key, encoded in a header
#    value, a cookie (JSON \u), a bound header (base64 of it); a case-changed placeholder forwarded untouched; query:
#    injection percent-encodes the value (one holding & = + % space /), a %-encoded placeholder in the bound query
#    value; Basic; a request body with a Content-Encoding toward a bound host (415); placeholders encoded in JSON and
#    text bodies; request trailers; bodies too large to hold (credgen.py streamed: they stream, searched in their
#    decoded views);
#  - the invariant generator (credgen.py generate, seeded: SLUICE_IT_SEED or random, printed): thousands of requests
#    with the placeholder at a random place in a random encoding; the value reaches the upstream only inside bound
#    places of allowed requests, every other request is refused with nothing sent and (403) its exfiltration_attempt
#    record, or by an earlier named reason (400, 421);
#  - the audit of HTTP/2 refusals (translation errors, resets) and its bound per connection: a flood of bad streams
#    (and of exfiltration attempts on one HTTP/1.1 keep-alive connection) is recorded one by one up to the bound,
#    then as one count.
# Real values are random per run and never printed.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
GEN=$HERE/credgen.py ULOG=$T/up.jsonl OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SLUICE_IT_V="tokv_$(rnd 30)"
export SLUICE_IT_QV="q&x=1+2 %41/$(rnd 20)"
export SLUICE_IT_SV="shv_$(rnd 24)"
export SLUICE_IT_PH="sluice_ph_Gen$ID$(rnd 24)" SLUICE_IT_QPH="sluice_ph_Qk$ID$(rnd 24)"
# a short, lower-case placeholder: it fits in a method and an HTTP/2 header name
export SLUICE_IT_SPH="sph$ID$(head -c 8 /dev/urandom | od -An -tu1 | tr -dc 0-9 | head -c 8)"
SEED=${SLUICE_IT_SEED:-$((RANDOM * 32768 + RANDOM))}
NGEN=${SLUICE_IT_GEN_N:-3000}

pki_init
spawn "$T/up.log" "$PY" "$GEN" upstream "$UPADDR" "$PKI/srv.pem" "$PKI/srv.key" "$ULOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "recording upstream did not start"

policy_base 'allow: { path: "/**" }' <<YAML | gw_conf
secrets:
  tok:
    source: env:SLUICE_IT_V
    placeholder: "$SLUICE_IT_PH"
    hosts: [api.example.test]
    inject: [header:Authorization, basic, "query:key", "json:\$.token", "form:token"]
  qtok:
    source: env:SLUICE_IT_QV
    placeholder: "$SLUICE_IT_QPH"
    hosts: [api.example.test]
    inject: ["query:qk"]
  short:
    source: env:SLUICE_IT_SV
    placeholder: "$SLUICE_IT_SPH"
    hosts: [api.example.test]
    inject: [header:x-short]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
YAML
gw_start

# credgen.py prints ok/FAIL lines: counted here
run_py() {
  local line
  while IFS= read -r line; do
    case $line in
      "ok   "*) ok "${line#ok   }" ;;
      "FAIL "*) bad "${line#FAIL }" ;;
      *) echo "$line" ;;
    esac
  done < <($CLEAN SLUICE_IT_V="$SLUICE_IT_V" SLUICE_IT_PH="$SLUICE_IT_PH" SLUICE_IT_QV="$SLUICE_IT_QV" \
    SLUICE_IT_QPH="$SLUICE_IT_QPH" SLUICE_IT_SPH="$SLUICE_IT_SPH" timeout "$1" "$PY" "$GEN" "${@:2}" 2>&1)
}

# ---------------------------------------------------------------- the findings
run_py 300 findings "$PP" "$CA/ca.pem" "$ULOG" "$AUDIT"

# ---------------------------------------------------------------- bodies too large to hold (they stream)
# an encoded placeholder (mixed-case %, every byte %, double %25xx, JSON \u) near the end of a body over the 1 MiB
# hold bound toward the bound host, h1 and h2: refused 403, audited, the upstream received part of the body but never
# the whole encoded placeholder; a body with stray escapes and no placeholder arrives whole
run_py 120 streamed "$PP" "$CA/ca.pem" "$ULOG" "$AUDIT"

# ---------------------------------------------------------------- the invariant generator
echo "# generator seed $SEED ($NGEN requests; SLUICE_IT_SEED=$SEED repeats it)"
run_py 170 generate "$PP" "$CA/ca.pem" "$ULOG" "$AUDIT" "$SEED" "$NGEN"

# ---------------------------------------------------------------- HTTP/2 refusals: audited, and bounded per connection
before=$(wc -l <"$AUDIT")
out=$($CLEAN SLUICE_IT_V=x SLUICE_IT_PH=x SLUICE_IT_QV=x SLUICE_IT_QPH=x timeout 120 "$PY" "$GEN" flood "$PP" "$CA/ca.pem" \
  "$ULOG" "$AUDIT" 400 2>&1)
check_match "a flood of 400 malformed h2 streams on one connection is refused stream by stream" '^refused 400$' "$out"
eventually 10 sh -c "tail -n +$((before + 1)) '$AUDIT' | grep -q '\"rule\":\"audit.refusals\"'"
recs=$(tail -n +$((before + 1)) "$AUDIT" | jq -c 'select(.type=="request" and .rule=="http2" and .verdict=="deny")' | wc -l)
check_eq "the first 256 refusals are recorded one by one (request, verdict deny, rule http2, h2)" 256 "$recs"
check "... each with its reason and path" sh -c "tail -n +$((before + 1)) '$AUDIT' | jq -e -s \
  '[.[] | select(.type==\"request\" and .rule==\"http2\")] | all(.reason != null and (.path|startswith(\"/f/\")) and .http_version==\"2\")'"
sup=$(tail -n +$((before + 1)) "$AUDIT" | jq -r 'select(.type=="denial" and .rule=="audit.refusals") | .suppressed')
check_eq "the rest is one denial record with the count (rule audit.refusals, suppressed 144)" 144 "$sup"
check "sluice audit verify accepts the log" "$SLUICE" audit verify "$AUDIT"

# the same bound on one keep-alive HTTP/1.1 connection: 300 exfiltration attempts
before=$(wc -l <"$AUDIT")
out=$($CLEAN SLUICE_IT_V=x SLUICE_IT_PH="$SLUICE_IT_PH" SLUICE_IT_QV=x SLUICE_IT_QPH=x timeout 120 "$PY" "$GEN" h1flood \
  "$PP" "$CA/ca.pem" "$ULOG" "$AUDIT" 300 2>&1)
check_match "300 exfiltration attempts on one keep-alive HTTP/1.1 connection: each refused (403)" '^refused 300$' "$out"
eventually 10 sh -c "tail -n +$((before + 1)) '$AUDIT' | grep -q '\"rule\":\"audit.refusals\"'"
recs=$(tail -n +$((before + 1)) "$AUDIT" | jq -c 'select(.type=="exfiltration_attempt")' | wc -l)
check_eq "... the first 256 have their exfiltration_attempt records" 256 "$recs"
sup=$(tail -n +$((before + 1)) "$AUDIT" | jq -r 'select(.type=="denial" and .rule=="audit.refusals") | .suppressed')
check_eq "... the other 44 are one count at the connection's end" 44 "$sup"

# a malformed stream that is answered (a status) is audited too: :authority naming another host
st=$($CLEAN timeout 20 "$PY" "$HERE/h2client.py" "$PP" "$CA/ca.pem" api.example.test authority other.example.test - 2>&1)
check_match "h2 :authority of another host: 421" '^status 421' "$st"
check "... audited (request, deny, status 421, h2)" \
  audit_wait '.type=="request" and .http_version=="2" and .status==421 and .verdict=="deny"'

# ---------------------------------------------------------------- no value in any file but the upstream's own log
cat >"$T/scan.py" <<'PY'
import base64, os, sys
v = os.environ["SLUICE_IT_V"].encode()
needles = [v, base64.b64encode(v)[:-2]]
for root, _, files in os.walk(sys.argv[1]):
    for fn in sorted(files):
        p = os.path.join(root, fn)
        if fn in ("up.jsonl",) or not os.path.isfile(p) or os.path.islink(p):
            continue
        if any(x in open(p, "rb").read() for x in needles):
            print("value found in %s" % os.path.relpath(p, sys.argv[1]))
PY
gw_final_checks
found=$(SLUICE_IT_V="$SLUICE_IT_V" "$PY" "$T/scan.py" "$T")
check_eq "no file of the run (audit, gateway log, this output) holds the value" "" "$found"
finish
