#!/usr/bin/env bash
# Every response of a bound host is scrubbed (issue 17, requirement 2), against scrub_upstream.py, which answers
# with values it "stored" (from its environment; STORED_V1 is the one /early, /ce-* and /partial use) to requests
# that carry no placeholder. Over HTTP/1.1 and HTTP/2: a response to a request without a placeholder is scrubbed
# (F4), with the other percent-encodings of a value (encodeURIComponent, Python quote, quote_plus, PHP urlencode),
# a small body's new Content-Length and its audit scrub record; a trailer; a 103's Link field (F3); Range and If-Range never
# reach the bound host and an unasked 206 is refused (F10); two Content-Encoding fields or a coding list are
# refused (F6); every Accept-Encoding field becomes one (F8); a host with 120 bound secrets scrubs every one.
# After a file: value rotates, the new value and the one it replaced are scrubbed. A value shorter than 8 bytes,
# and one with a CR, make their secret unavailable (503, audited, and `secrets list` says why: F12). Real values
# are random per run and never printed.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
HERE=$(dirname "$(readlink -f "$0")")
ULOG=$T/up.jsonl OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
export SHV_V1="stv1_$(rnd 28)"
export SHV_V2="v2 x/y!z'(a)*b~c+d=$(rnd 12)"     # every encoder writes it differently
NM=120
for i in $(seq 1 $NM); do export "SHV_M$i=m${i}_$(rnd 24)"; done
printf 'short7' >"$T/short"                          # 6 bytes: cannot be scrubbed reliably
printf 'abcdefgh\rijklmnop' >"$T/cr"                 # a CR inside: would split a header
head -c 48 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 30 >"$T/v3"   # rotated by the test
chmod 0644 "$T/short" "$T/cr" "$T/v3"
PH1="sluice_ph_v1_$ID$(rnd 20)" PH2="sluice_ph_v2_$ID$(rnd 20)"
PHS="sluice_ph_short_$ID$(rnd 16)" PHC="sluice_ph_cr_$ID$(rnd 16)" PH3="sluice_ph_v3_$ID$(rnd 16)"

# forms FILE: the names of the values any of whose forms (literal, RFC 3986 percent both cases, encodeURIComponent,
# quote, quote_plus, PHP urlencode, base64) occurs in FILE; "" when none. Values come from the environment.
cat >"$T/forms.py" <<'PY'
import base64, os, sys, urllib.parse
data = open(sys.argv[1], "rb").read()
hit = []
for k, v in sorted(os.environ.items()):
    if not k.startswith("SHV_"):
        continue
    f = {v, urllib.parse.quote(v, safe="-_.~"), urllib.parse.quote(v, safe="-_.~").lower(),
         urllib.parse.quote(v, safe="-_.!~*'()"), urllib.parse.quote(v), urllib.parse.quote_plus(v),
         urllib.parse.quote_plus(v, safe="").replace("~", "%7E"), base64.b64encode(v.encode()).decode().rstrip("=")}
    if any(x.encode("latin-1") in data for x in f if len(x) >= 8):
        hit.append(k[len("SHV_"):])
print(" ".join(hit))
PY
no_forms() { check_eq "$1" "" "$("$PY" "$T/forms.py" "$2")"; }

pki_init
env_stored() { env | sed -n 's/^SHV_\([A-Z0-9]*\)=.*/\1/p' | while read -r n; do
  printf 'STORED_%s=%s\0ECHO_MASK_%s=%s\0' "$n" "$(printenv "SHV_$n")" "$n" "$(printenv "SHV_$n")"; done; }
mapfile -d '' UPENV < <(env_stored)
spawn "$T/up.log" env "${UPENV[@]}" SCRUB_FILE="$T/v3" "$PY" "$HERE/scrub_upstream.py" --listen "$UPADDR:443:tls" \
  --cert "$PKI/srv.pem" --key "$PKI/srv.key" --log "$ULOG"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:443 '" || die "upstream did not start: $(tail -n 3 "$T/up.log")"

{
  policy_base 'allow: { method: GET }' 'allow: { method: POST, path: /answer-early }' </dev/null
  cat <<YAML
secrets:
  v1:
    source: env:SHV_V1
    placeholder: "$PH1"
    hosts: [api.example.test]
  v2:
    source: env:SHV_V2
    placeholder: "$PH2"
    hosts: [api.example.test]
  short:
    source: file:$T/short
    placeholder: "$PHS"
    hosts: [api.example.test]
    inject: [header:X-Short]
  v3:
    source: file:$T/v3
    ttl: 1s
    placeholder: "$PH3"
    hosts: [api.example.test]
  cr:
    source: file:$T/cr
    placeholder: "$PHC"
    hosts: [api.example.test]
    inject: [header:X-Cr]
YAML
  for i in $(seq 1 $NM); do
    printf '  m%s:\n    source: env:SHV_M%s\n    placeholder: "sluice_ph_m%s_%s"\n    hosts: [api.example.test]\n' \
      "$i" "$i" "$i" "$ID"
  done
  printf 'sandboxes:\n  local:\n    addresses: [127.0.0.1/32]\n'
} | gw_conf
gw_start

up_hdr() { jq -r --arg p "$1" --arg h "$2" 'select(.ev=="head" and .path==$p) | .headers[$h] // "(none)"' "$ULOG" | tail -n 1; }
N=0 F=
nf() { N=$((N + 1)); F=$T/r$N.$1; }

for V in 1.1 2; do
  tag="h$V"
  # ------------------------------------------------ F4: no placeholder in the request, the stored values come back
  nf body; b=$F; nf hdr; h=$F
  out=$(pcurl --http$V -D "$h" -o "$b" -w '%{http_version} %{http_code}' "https://api.example.test/stored?$tag" 2>/dev/null)
  check_eq "$tag F4: a request without a placeholder to a bound host: 200" "${V%.1} 200" "${out/1.1/1}"
  no_forms "$tag F4: no form of any value in the body (literal, five percent-encodings)" "$b"
  no_forms "$tag F4: ... nor in the response head" "$h"
  check "$tag F4: the stored value comes back as its placeholder" grep -qxF "$PH1" "$b"
  check "$tag F4: X-Stored is scrubbed" grep -qiF "x-stored: $PH1" "$h"
  check "$tag F4: a small body keeps a Content-Length (held whole, scrubbed, its new length)" \
    grep -qiE "^content-length: $(stat -c %s "$b")"$'\r'"?\$" "$h"
  for enc in "$($PY -c 'import sys,urllib.parse;print(urllib.parse.quote(sys.argv[1],safe="-_.!~*'"'"'()"))' "$PH2")" \
             "$($PY -c 'import sys,urllib.parse;print(urllib.parse.quote_plus(sys.argv[1]))' "$PH2")"; do
    check "$tag F4: an encoded form of v2 comes back as the same form of its placeholder" grep -qxF "$enc" "$b"
  done
  check "audit: $tag the response records v1 and v2 scrubbed, nothing injected" audit_wait \
    ".path==\"/stored\" and .http_version==\"$V\" and any(.scrubbed[]?; .==\"v1\") and any(.scrubbed[]?; .==\"v2\") and ((.secrets // []) | length == 0)"

  # ------------------------------------------------ F10: Range / If-Range do not reach the host; an unasked 206 is refused
  nf body; b=$F
  code=$(pcurl --http$V -o "$b" -w '%{http_code}' -H 'Range: bytes=3-11' -H 'If-Range: "x"' -H 'Request-Range: bytes=0-4' \
    "https://api.example.test/stored?range-$tag" 2>/dev/null)
  check_eq "$tag F10: a Range request to a bound host gets the whole response (200)" 200 "$code"
  check_eq "$tag F10: the upstream received no Range" "(none)" "$(up_hdr /stored range)"
  check_eq "$tag F10: ... no If-Range" "(none)" "$(up_hdr /stored if-range)"
  check_eq "$tag F10: ... no Request-Range" "(none)" "$(up_hdr /stored request-range)"
  no_forms "$tag F10: the whole response is scrubbed" "$b"
  nf body; b=$F
  code=$(pcurl --http$V -o "$b" -w '%{http_code}' "https://api.example.test/partial?$tag" 2>/dev/null)
  check_eq "$tag F10: a 206 nobody asked for, from a bound host: 502" 502 "$code"
  check "$tag F10: ... and the half value is not in it" bash -c "! grep -qF -- \"\${SHV_V1:0:10}\" '$b'"

  # ------------------------------------------------ F3: a 103's fields are scrubbed
  nf hdr; h=$F
  code=$(pcurl --http$V -D "$h" -o /dev/null -w '%{http_code}' "https://api.example.test/early?$tag" 2>/dev/null)
  check_eq "$tag F3: 200 after a 103" 200 "$code"
  check "$tag F3: the 103 reached the client" grep -q " 103" "$h"
  check "$tag F3: its Link field holds the placeholder" grep -qiF "link: </s?t=$PH1>" "$h"
  no_forms "$tag F3: no value in any head the client read" "$h"

  # ------------------------------------------------ trailers of a response that injected nothing
  nf hdr; h=$F
  code=$(pcurl --http$V -H 'TE: trailers' -D "$h" -o /dev/null -w '%{http_code}' "https://api.example.test/trailer?$tag" 2>/dev/null)
  check_eq "$tag trailers: 200" 200 "$code"
  check "$tag trailers: the echoed trailer holds the placeholder" grep -qiF "x-echo: $PH1" "$h"
  no_forms "$tag trailers: no value in what the client read" "$h"

  # ------------------------------------------------ F6: two Content-Encoding fields, or a coding list: refused
  for p in ce-two ce-list; do
    nf body; b=$F
    code=$(pcurl --http$V --compressed -o "$b" -w '%{http_code}' "https://api.example.test/$p?$tag" 2>/dev/null)
    check_eq "$tag F6: /$p (the scrubber cannot decode it): 502" 502 "$code"
    no_forms "$tag F6: /$p: no value reaches the client" "$b"
  done

  # ------------------------------------------------ F8: every Accept-Encoding field becomes one the scrubber decodes
  pcurl --http$V -o /dev/null -H 'Accept-Encoding: br' -H 'Accept-Encoding: zstd' "https://api.example.test/ae?$tag" 2>/dev/null
  check_eq "$tag F8: the upstream received exactly one Accept-Encoding: gzip, deflate" "gzip, deflate" "$(up_hdr /ae accept-encoding)"

  # ------------------------------------------------ a host with 120 bound secrets
  nf body; b=$F
  code=$(pcurl --http$V -o "$b" -w '%{http_code}' "https://api.example.test/many?$tag" 2>/dev/null)
  check_eq "$tag many: 200" 200 "$code"
  check_eq "$tag many: all $NM values came back as their placeholders" "$NM" "$(grep -c "^sluice_ph_m[0-9]*_$ID\$" "$b")"
  no_forms "$tag many: none of the $NM values reaches the client" "$b"
done

# ------------------------------------------------ the host's set is rebuilt when a bound value changes (file: ttl)
# the file's contents are never printed: checks compare with grep -q against the file itself
nf body; b=$F
pcurl -o "$b" "https://api.example.test/file?1" 2>/dev/null
check "rotation: the first value comes back as the placeholder" grep -qxF "v=$PH3" "$b"
cp "$T/v3" "$T/v3.old"
head -c 48 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c 30 >"$T/v3.new" && mv "$T/v3.new" "$T/v3"
sleep 7  # the store re-reads sources whose ttl ran out at its 5 s tick
nf body; b=$F
pcurl -o "$b" "https://api.example.test/file?2" 2>/dev/null
check "rotation: after the refresh the new value comes back as the placeholder" grep -qxF "v=$PH3" "$b"
check "rotation: ... and the new value is not in the body" bash -c "! grep -qF -f '$T/v3' '$b'"
check "rotation: ... nor is the old one" bash -c "! grep -qF -f '$T/v3.old' '$b'"
nf body; b=$F
pcurl -o "$b" "https://api.example.test/file-old?3" 2>/dev/null
check "rotation: the value it replaced (a rotated token may stay valid, and stored) is still scrubbed" \
  grep -qxF "v=$PH3" "$b"
check "rotation: ... it is not in the body" bash -c "! grep -qF -f '$T/v3.old' '$b'"
for f in "$GWLOG" "$AUDIT" "$OUT"; do
  check "rotation: neither value of v3 in $(basename "$f")" bash -c "! grep -qF -f '$T/v3' '$f' && ! grep -qF -f '$T/v3.old' '$f'"
done

# ------------------------------------------------ a placeholder in a streamed body after the upstream answered early
# The upstream answers (head and half its body) after 1000 bytes of a 100000-byte body that streams through the
# placeholder search; the gateway holds that head to scrub the small body whole.  The placeholder, sent 2 s later,
# is refused as what it is (403 exfiltration attempt, rule secrets), not as a bad request: the head never went out.
head -c 4096 /dev/zero | tr '\0' a >"$T/early1"
{ printf '%s' "$PH1"; head -c $((100000 - 4096 - ${#PH1})) /dev/zero | tr '\0' b; } >"$T/early2"
nf body; b=$F
$CLEAN "$PY" "$HERE/rawclient.py" --proxy "127.0.0.1:$PP" --connect api.example.test:443 --cafile "$CA/ca.pem" \
  --send 'POST /answer-early HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n' \
  --send "@$T/early1" --delay 2 --send "@$T/early2" >"$b" 2>&1
check_eq "early answer: the placeholder after it is refused: 403" 403 "$(head -n 1 "$b")"
check_eq "early answer: ... as an exfiltration attempt of the secrets rule" "exfiltration attempt secrets" \
  "$(sed -n 2p "$b" | jq -r '.error + " " + .rule')"
check "early answer: the upstream's held answer did not reach the client" bash -c "! grep -q 'half:' '$b'"
check "audit: early answer: the request is recorded as refused by the secrets rule" audit_wait \
  '.type=="request" and .path=="/answer-early" and .status==403 and .rule=="secrets"'
check "audit: early answer: its exfiltration_attempt record" audit_wait \
  '.type=="exfiltration_attempt" and .secret=="v1" and .place=="body"'

# ------------------------------------------------ F12: a value shorter than 8 bytes; a value with a CR
for s in short cr; do
  ph=$PHS; [ $s = cr ] && ph=$PHC
  hdr=X-Short; [ $s = cr ] && hdr=X-Cr
  nf body; b=$F
  code=$(pcurl -o "$b" -w '%{http_code}' -H "$hdr: $ph" "https://api.example.test/use-$s" 2>/dev/null)
  check_eq "F12 $s: a request that needs the secret: 503" 503 "$code"
  check_eq "F12 $s: nothing reached the upstream" "" "$(jq -r 'select(.ev=="head" and .path=="/use-'$s'") | .path' "$ULOG")"
done
check "F12 short: the 503 says why" grep -q "shorter than 8 bytes" "$T/r$((N - 1)).body"
check "F12 cr: the 503 says why" grep -q "NUL or a line break" "$T/r$N.body"
check "audit: F12 short: the refusal is audited with its reason" audit_wait \
  '.path=="/use-short" and .status==503 and (.reason|test("shorter than 8 bytes"))'
check "audit: F12 cr: audited" audit_wait '.path=="/use-cr" and .status==503 and (.reason|test("line break"))'
"$SLUICE" secrets list -c "$GWCONF" >"$T/list.out" 2>&1
check "secrets list: the short secret is unavailable, saying why" grep -q "unavailable: the secret's value is shorter than 8 bytes" "$T/list.out"
check "secrets list: the CR secret is unavailable, saying why" grep -q "unavailable: the secret's value contains a NUL or a line break" "$T/list.out"

no_forms "the test's own output holds no value" "$OUT"
for f in "$GWLOG" "$AUDIT" "$ULOG" "$T/list.out"; do no_forms "no value in $(basename "$f")" "$f"; done
finish
