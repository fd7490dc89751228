#!/usr/bin/env bash
# Bad input, names: 10,000 distinct SNI names (all allowed by a *.many.test wildcard) through the transparent
# listener with leaf_cache: 100: every handshake verifies against the sluice CA, /health then shows leaf_cache <= 100
# and leaves_minted >= 10,000, and the cache still behaves as an LRU. SNI values that are not valid DNS names are
# refused at the handshake: the connection closes, no leaf is minted (leaves_minted unchanged), a denial audit
# record says why. Afterwards normal requests (transparent and explicit) still succeed and the gateway stays up.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
N=10000

pki_init
nginx_start
netns_make l
netns_redirect
GW_EXTRA="leaf_cache: 100"
gw_conf <<YAML
default: deny
hosts:
  api.example.test:
    allow_private: true
  "*.many.test":
    verdict: intercept
    rules:
      - allow: { method: GET }
YAML
gw_start

health() { gw_health | jq -r ".$1"; }
alive_check() {
  check_eq "  and then a normal transparent request succeeds" hello "$(ns_exec curl -sS --max-time 10 --cacert "$CA/ca.pem" \
    --resolve "api.example.test:443:$NS_HOST" https://api.example.test/ok/t)"
  check_eq "  and a normal explicit one too" hello "$(pcurl --interface 127.0.0.2 https://api.example.test/ok/after)"
}

cat >"$T/many.py" <<'PY'
import socket, ssl, sys, threading
addr, ca, n, nthreads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
names = sys.argv[5:] or None
ctx = ssl.create_default_context(cafile=ca)   # verifies the chain and the name of every leaf
res = {"ok": 0, "fail": 0}
errs = []
lock = threading.Lock()
def one(name):
    try:
        with socket.create_connection((addr, 443), timeout=20) as s:
            with ctx.wrap_socket(s, server_hostname=name):
                pass
        r = "ok"
    except Exception as e:
        r = "fail"
        with lock:
            if len(errs) < 5:
                errs.append(f"{name}: {e}")
    with lock:
        res[r] += 1
def work(k):
    for i in range(k, n, nthreads):
        one(names[i] if names else f"n{i}.many.test")
ts = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
for t in ts: t.start()
for t in ts: t.join()
print(f"ok {res['ok']} fail {res['fail']}")
for e in errs: print(e, file=sys.stderr)
PY
handshakes() { ns_exec timeout 240 "$PY" "$T/many.py" "$NS_HOST" "$CA/ca.pem" "$@"; }

check_eq "leaf_cache_capacity is the configured 100" 100 "$(health leaf_cache_capacity)"
m0=$(health leaves_minted)
out=$(handshakes "$N" 8 2>"$T/many.err")
check_eq "$N TLS handshakes with distinct SNI names all verify against the sluice CA" "ok $N fail 0" "$out"
[ -s "$T/many.err" ] && sed 's/^/# /' "$T/many.err"
c=$(health leaf_cache) m1=$(health leaves_minted)
check "the leaf cache stays within its bound (leaf_cache $c <= 100)" test "$c" -le 100
check "the cache is in use (leaf_cache $c > 0)" test "$c" -gt 0
check "every distinct name was minted (leaves_minted $m1 - $m0 >= $N)" test $((m1 - m0)) -ge "$N"
check "the gateway process is alive after $N handshakes" kill -0 "$GWPID"
alive_check

# LRU: a fresh name mints once, then hits; an early name was evicted and mints again
m=$(health leaves_minted)
check_eq "a new name mints a leaf" "ok 1 fail 0" "$(handshakes 1 1 last.many.test)"
check_eq "  leaves_minted + 1" $((m + 1)) "$(health leaves_minted)"
check_eq "the same name again" "ok 1 fail 0" "$(handshakes 1 1 last.many.test)"
check_eq "  is served from the cache (leaves_minted unchanged)" $((m + 1)) "$(health leaves_minted)"
check_eq "the first of the $N names again" "ok 1 fail 0" "$(handshakes 1 1 n0.many.test)"
check_eq "  was evicted and is minted again (leaves_minted + 1)" $((m + 2)) "$(health leaves_minted)"

# SNI values that are not valid DNS names: handshake refused, nothing minted
m=$(health leaves_minted)
before=$(jq -s 'map(select(.type == "denial")) | length' "$AUDIT")
long=$(printf 'a%.0s' $(seq 1 64))
bad_names=("bad_name!.many.test" "a..b.many.test" "-x.many.test" "x-.many.test" "$long.many.test" "sp ace.many.test"
           "*.many.test" "x.many.test/y" "%41.many.test")
for b in "${bad_names[@]}"; do
  out=$(ns_exec timeout 20 openssl s_client -brief -connect "$NS_HOST:443" -servername "$b" -CAfile "$CA/ca.pem" </dev/null 2>&1)
  check_nomatch "SNI '$b' is refused at the handshake" 'CONNECTION ESTABLISHED|Verification: OK' "$out"
done
check_eq "no leaf was minted for the invalid names (leaves_minted unchanged)" "$m" "$(health leaves_minted)"
check "each refusal has a denial audit record" eventually 5 \
  test "$(jq -s 'map(select(.type == "denial")) | length' "$AUDIT")" -eq $((before + ${#bad_names[@]}))
check "the audit lines are valid JSON (peer bytes escaped)" jq -e -c . "$AUDIT"
alive_check

gw_final_checks
finish
