#!/usr/bin/env bash
# Real clients accept the gateway's minted leaves through the explicit proxy and get the upstream's bytes:
# curl, python3 urllib (default context), node https, git (dumb-HTTP clone), openssl s_client. The leaf itself
# verifies strictly against ca.pem and has the promised SAN, EKU, key usage, key ids and validity.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
PKI_EXTRA_SAN="IP:$UPADDR"
pki_init

# a small repository served as static files ("dumb HTTP")
export GIT_CONFIG_NOSYSTEM=1 HOME=$T/home
mkdir -p "$HOME" "$WWW"
git init -q "$T/src" && printf 'hello from the repo %s\n' "$ID" >"$T/src/README" \
  && git -C "$T/src" add README && git -C "$T/src" -c user.email=t@t -c user.name=t commit -qm init \
  && git clone -q --bare "$T/src" "$WWW/repo.git" && git -C "$WWW/repo.git" update-server-info \
  || die "could not build the test repository"
echo 'location /repo.git/ { default_type application/octet-stream; }' >"$T/ngx.snip"
nginx_start "$T/ngx.snip"

policy_base <<Y | gw_conf
  other.example.test:
    allow_private: true
    rules:
      - allow: { method: GET, path: "/ok/**" }
  git.example.test:
    allow_private: true
    rules:
      - allow: { method: GET, path: "/repo.git/**" }
  "$UPADDR":
    allow_private: true
    rules:
      - allow: { method: GET, path: "/ok/**" }
Y
gw_start
PEM=$CA/ca.pem PROXY=http://127.0.0.1:$PP

# curl
check_eq "curl -x --cacert gets the upstream body" hello "$(pcurl https://api.example.test/ok/curl)"
out=$($CLEAN curl -sS --max-time 10 -x "$PROXY" https://api.example.test/ok/curl 2>&1); rc=$?
check_eq "curl without the sluice CA refuses the leaf (exit 60)" 60 "$rc"

# python3 urllib, default SSL context, HTTPS_PROXY + SSL_CERT_FILE
pyget='import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())'
out=$($CLEAN HTTPS_PROXY="$PROXY" SSL_CERT_FILE="$PEM" timeout 30 "$PY" -c "$pyget" https://api.example.test/ok/py 2>&1)
check_eq "python3 urllib (default context) gets the upstream body" hello "$out"
out=$($CLEAN HTTPS_PROXY="$PROXY" timeout 30 "$PY" -c "$pyget" https://api.example.test/ok/py 2>&1)
check_match "python3 urllib without the sluice CA fails verification" 'CERTIFICATE_VERIFY_FAILED' "$out"

# node https: CONNECT by hand, then https.get over the tunnel; trust from NODE_EXTRA_CA_CERTS
cat >"$T/get.js" <<'JS'
const http = require('http'), https = require('https'), tls = require('tls');
const [port, host, path] = process.argv.slice(2);
const t = setTimeout(() => { console.error('timeout'); process.exit(3); }, 15000);
http.request({ host: '127.0.0.1', port: +port, method: 'CONNECT', path: host + ':443' })
  .on('connect', (res, socket) => {
    if (res.statusCode !== 200) { console.error('CONNECT ' + res.statusCode); process.exit(2); }
    https.get({ host, path, port: 443, defaultPort: 443,
                createConnection: () => tls.connect({ socket, servername: host }) }, (r) => {
      let b = ''; r.on('data', (d) => b += d);
      r.on('end', () => { process.stdout.write(r.statusCode + ' ' + b); clearTimeout(t); process.exit(0); });
    }).on('error', (e) => { console.error(e.code || e.message); process.exit(1); });
  }).on('error', (e) => { console.error(e.message); process.exit(1); }).end();
JS
out=$($CLEAN NODE_EXTRA_CA_CERTS="$PEM" timeout 30 node "$T/get.js" "$PP" api.example.test /ok/node 2>&1)
check_eq "node https (NODE_EXTRA_CA_CERTS) gets the upstream body" "200 hello" "$out"
out=$($CLEAN timeout 30 node "$T/get.js" "$PP" api.example.test /ok/node 2>&1)
check_match "node https without the sluice CA refuses the leaf" 'UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|SELF_SIGNED' "$out"

# git clone over HTTPS through the gateway (dumb HTTP)
out=$($CLEAN HOME="$HOME" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_SSL_CAINFO="$PEM" https_proxy="$PROXY" \
  timeout 60 git clone -q https://git.example.test/repo.git "$T/clone" 2>&1); rc=$?
check_eq "git clone through the gateway exits 0" 0 "$rc"
check_eq "the clone has the repository's content" "hello from the repo $ID" "$(cat "$T/clone/README" 2>&1)"
$CLEAN HOME="$HOME" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 https_proxy="$PROXY" \
  timeout 60 git clone -q https://git.example.test/repo.git "$T/clone2" >"$T/git2.out" 2>&1; rc=$?
check "git clone without the sluice CA fails" test "$rc" -ne 0
check_match "git's refusal is a certificate problem" 'certificate|SSL' "$(cat "$T/git2.out")"
check "audit shows git's requests judged by the repo rule" audit_wait '.host=="git.example.test" and .verdict=="allow" and (.path|startswith("/repo.git/"))'

# the leaf, seen by openssl s_client through the proxy
leaf() { # leaf CONNECT-HOST [SERVERNAME] -> PEM of the leaf on stdout
  local sn=()
  [ -n "${2:-}" ] && sn=(-servername "$2")
  echo | $CLEAN timeout 20 openssl s_client -proxy "127.0.0.1:$PP" -connect "$1:443" "${sn[@]}" 2>/dev/null \
    | sed -n '/-----BEGIN CERTIFICATE-----/,/-----END CERTIFICATE-----/p' | sed '/-----END/q'
}
leaf api.example.test api.example.test >"$T/leaf.pem"
check "s_client received a leaf" test -s "$T/leaf.pem"
out=$($CLEAN openssl verify -x509_strict -purpose sslserver -CAfile "$PEM" "$T/leaf.pem" 2>&1)
check_eq "openssl verify -x509_strict -purpose sslserver accepts the leaf" "$T/leaf.pem: OK" "$out"
out=$($CLEAN openssl verify -x509_strict -CAfile "$PEM" -verify_hostname api.example.test "$T/leaf.pem" 2>&1)
check_eq "the leaf verifies for the hostname" "$T/leaf.pem: OK" "$out"
txt=$(openssl x509 -in "$T/leaf.pem" -noout -text 2>&1)
san=$(openssl x509 -in "$T/leaf.pem" -noout -ext subjectAltName 2>/dev/null | sed -n '2p' | tr -d ' ')
check_eq "leaf SAN is exactly the name" "DNS:api.example.test" "$san"
check_match "leaf EKU is serverAuth" 'TLS Web Server Authentication' "$(openssl x509 -in "$T/leaf.pem" -noout -ext extendedKeyUsage 2>&1)"
check_match "leaf keyUsage has digitalSignature" 'Digital Signature' "$(openssl x509 -in "$T/leaf.pem" -noout -ext keyUsage 2>&1)"
check_match "leaf has a subject key identifier" 'Subject Key Identifier' "$txt"
ski=$(openssl x509 -in "$PEM" -noout -ext subjectKeyIdentifier | sed -n '2p' | tr -d ' ')
aki=$(openssl x509 -in "$T/leaf.pem" -noout -ext authorityKeyIdentifier | sed -n '2,$p' | tr -d ' ' | sed 's/^keyid://' | head -n 1)
check_eq "leaf authority key id is the CA's subject key id" "$ski" "$aki"
nb=$(date -d "$(openssl x509 -in "$T/leaf.pem" -noout -startdate | cut -d= -f2)" +%s)
na=$(date -d "$(openssl x509 -in "$T/leaf.pem" -noout -enddate | cut -d= -f2)" +%s)
cana=$(date -d "$(openssl x509 -in "$PEM" -noout -enddate | cut -d= -f2)" +%s)
now=$(date +%s)
check "leaf validity is at most 30 days" test $((na - nb)) -le $((30 * 86400 + 3600))
check "leaf notAfter is at most 30 days from now" test $((na - now)) -le $((30 * 86400))
check "leaf notAfter is not past the CA's" test "$na" -le "$cana"
check "leaf notBefore is about one hour back (backdated 50-70 min)" test $((now - nb)) -ge 3000 -a $((now - nb)) -le 4300

leaf other.example.test other.example.test >"$T/leaf2.pem"
check_eq "a second name gets its own leaf (SAN)" "DNS:other.example.test" \
  "$(openssl x509 -in "$T/leaf2.pem" -noout -ext subjectAltName 2>/dev/null | sed -n 2p | tr -d ' ')"
check "leaves have different random serials" test "$(openssl x509 -in "$T/leaf.pem" -noout -serial)" != "$(openssl x509 -in "$T/leaf2.pem" -noout -serial)"
check_eq "leaves share one leaf key" "$(openssl x509 -in "$T/leaf.pem" -noout -pubkey)" "$(openssl x509 -in "$T/leaf2.pem" -noout -pubkey)"
leaf "$UPADDR" >"$T/leaf3.pem"
check_eq "an IP-literal CONNECT without SNI gets a leaf with an IP SAN" "IPAddress:$UPADDR" \
  "$(openssl x509 -in "$T/leaf3.pem" -noout -ext subjectAltName 2>/dev/null | sed -n 2p | tr -d ' ')"
out=$($CLEAN openssl verify -x509_strict -CAfile "$PEM" -verify_ip "$UPADDR" "$T/leaf3.pem" 2>&1)
check_eq "the IP leaf verifies for the IP" "$T/leaf3.pem: OK" "$out"
check_eq "curl to the IP literal through the proxy gets the body" hello "$(pcurl "https://$UPADDR/ok/ip")"
check_match "health counts minted leaves" '"leaves_minted":[3-9]' "$(gw_health)"
finish
