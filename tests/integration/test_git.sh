#!/usr/bin/env bash
# git over HTTPS with a Basic placeholder (issue 3): a real `git clone` and `git push` through the gateway to
# `git http-backend` behind nginx (fcgiwrap), on 127.0.0.1:<free port> with a test PKI, `auth_basic` holding the
# real value (random per run, never printed). git runs under `env -i` with the gateway's CA and the URL
# https://x-access-token:PLACEHOLDER@git.test:PORT/repo.git; the gateway injects the value into the Basic
# credential. Checks: clone (explicit proxy, and transparent from a namespace), a small push, a push larger than
# http.postBuffer (git sends it chunked), a wrong placeholder (401 from the upstream), the placeholder toward a host
# it is not bound to (403, exfiltration_attempt, place basic), the audit's secrets entries, and at the end no file
# of the run nor this test's output holds the value (a hit prints "value found in FILE").
# Semantic git rules (issue 6) on a third name of the same upstream, git3.test, with github-agent-like rules: a push
# to refs/heads/agent/x passes, to main is denied (403, git reports it), deleting agent/x is denied, git's 0000 probe
# passes, malformed pkt-lines (raw POSTs) are refused before the upstream, and a 50 MiB incompressible pack pushed
# to agent/big streams through with the gateway's RSS growing by less than 20 MiB.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
OUT=$T/test.out
exec > >(tee -a "$OUT") 2>&1

FCGIWRAP=/usr/sbin/fcgiwrap
[ -x "$FCGIWRAP" ] || die "required tool fcgiwrap is missing (Debian package fcgiwrap; scripts/deps.sh test installs it)"
HTTP_BACKEND=$(git --exec-path)/git-http-backend
[ -x "$HTTP_BACKEND" ] || die "git-http-backend not found at $HTTP_BACKEND"

# ---------------------------------------------------------------- the value (never printed, in no file) and placeholders
rnd() { head -c 96 /dev/urandom | base64 -w0 | tr -dc A-Za-z0-9 | head -c "$1"; }
VALUE="tst_git_$(rnd 32)"                # not exported: only the gateway gets it (SLUICE_IT_GITPW, at gw_start)
PH="sluice_ph_git$ID$(rnd 20)"           # the placeholder the sandbox holds
WRONG="sluice_ph_wrong$ID$(rnd 20)"      # a string that is no placeholder: forwarded as is, the upstream says 401
[ ${#VALUE} -eq 40 ] || die "setup: the value was not made"
# failure messages and log tails never print the value, even when it leaked
mask() { local m; m=$(cat); printf '%s\n' "${m//"$VALUE"/'{{VALUE}}'}"; }
bad() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*" | mask; }
dump_logs() {
  local f
  for f in "$GWLOG" "$T/nginx/logs/error.log" "$T/fcgiwrap.log"; do
    [ -s "$f" ] && { echo "# --- tail $f"; tail -n 15 "$f" | mask | sed 's/^/# /'; }
  done
  return 0
}
# scan.py DIR|FILE...: "value found in FILE" for every regular file holding the value in any form an echo or a log
# could take (literal, base64 at three alignments, the exact Basic credential, percent-encoded). The value comes
# from the environment (SLUICE_IT_GITPW), never from the arguments.
cat >"$T/scan.py" <<'PY'
import base64, os, sys, urllib.parse
v = os.environ["SLUICE_IT_GITPW"].encode()
needles = {v, base64.b64encode(b"x-access-token:" + v), urllib.parse.quote(v, safe="").encode()}
for k in range(3):
    needles.add(base64.b64encode(b"\0" * k + v)[4 if k else 0:-4])
def scan(p, rel):
    if os.path.isfile(p) and not os.path.islink(p):
        with open(p, "rb") as fh:
            data = fh.read()
        if any(n in data for n in needles):
            print("value found in %s" % rel)
for a in sys.argv[1:]:
    if os.path.isdir(a):
        for root, _, files in os.walk(a):
            for fn in sorted(files):
                scan(os.path.join(root, fn), os.path.relpath(os.path.join(root, fn), a))
    else:
        scan(a, a)
PY
leaks() { SLUICE_IT_GITPW="$VALUE" "$PY" "$T/scan.py" "$@" 2>&1; }
# no_leak MSG FILE...: none of FILE holds the value
no_leak() { local what=$1; shift; check_eq "$what" "" "$(leaks "$@")"; }

# ---------------------------------------------------------------- the repository
GITPORT=$(freeport)
export GIT_CONFIG_NOSYSTEM=1
mkdir -p "$T/home" "$T/repos" "$T/fcgihome"
HOME=$T/home git init -q -b main "$T/src" && printf 'hello from git %s\n' "$ID" >"$T/src/README" \
  && git -C "$T/src" add README && HOME=$T/home git -C "$T/src" -c user.email=t@t -c user.name=t commit -qm init \
  && git clone -q --bare "$T/src" "$T/repos/repo.git" && git -C "$T/repos/repo.git" config http.receivepack true \
  || die "could not build the test repository"

# ---------------------------------------------------------------- the upstream: nginx + fcgiwrap + git http-backend
pki_init
pki_server git "DNS:git.test,DNS:git2.test,DNS:git3.test,DNS:git4.test"
printf 'x-access-token:%s\n' "$(printf '%s\n' "$VALUE" | openssl passwd -apr1 -stdin)" >"$T/htpasswd" \
  || die "htpasswd"
grep -q '^x-access-token:\$apr1\$' "$T/htpasswd" || die "htpasswd has no apr1 hash"
N=$T/nginx GITLOG=$T/nginx/logs/git.log
mkdir -p "$N/logs" "$N/tmp"
cat >"$N/nginx.conf" <<NGX
daemon off; user root; worker_processes 1; error_log $N/logs/error.log; pid $N/nginx.pid;
events { worker_connections 256; }
http {
  client_body_temp_path $N/tmp/body; proxy_temp_path $N/tmp/proxy; fastcgi_temp_path $N/tmp/fcgi;
  uwsgi_temp_path $N/tmp/uwsgi; scgi_temp_path $N/tmp/scgi;
  log_format git '\$host "\$request" \$status \$body_bytes_sent user=\$remote_user te=\$http_transfer_encoding cl=\$content_length';
  client_max_body_size 64m;
  server {
    listen 127.0.0.1:$GITPORT ssl;
    server_name _;
    ssl_certificate $PKI/git.pem; ssl_certificate_key $PKI/git.key;
    access_log $GITLOG git;
    location / {
      auth_basic "git"; auth_basic_user_file $T/htpasswd;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME $HTTP_BACKEND;
      fastcgi_param GIT_PROJECT_ROOT $T/repos;
      fastcgi_param GIT_HTTP_EXPORT_ALL 1;
      fastcgi_param PATH_INFO \$uri;
      fastcgi_param REMOTE_USER \$remote_user;
      fastcgi_pass unix:$T/fcgi.sock;
    }
  }
}
NGX
spawn "$T/fcgiwrap.log" env -i PATH=/usr/bin:/bin HOME="$T/fcgihome" GIT_CONFIG_NOSYSTEM=1 "$FCGIWRAP" -s "unix:$T/fcgi.sock"
eventually 5 test -S "$T/fcgi.sock" || die "fcgiwrap did not start: $(tail -n 3 "$T/fcgiwrap.log")"
spawn "$N/logs/stdout" env -i PATH=/usr/bin:/bin:/usr/sbin nginx -c "$N/nginx.conf" -p "$N"
eventually 5 sh -c "ss -ltnH | grep -q ' 127.0.0.1:$GITPORT '" \
  || die "nginx did not start: $(tail -n 3 "$N/logs/error.log" "$N/logs/stdout")"

# the upstream itself, straight (no gateway): the real value is accepted, the placeholder is not. curl reads the
# credential from stdin (-K -), so it is on no command line and in no file
dcurl() { $CLEAN curl -sS --max-time 10 --cacert "$UPCA" --resolve "git.test:$GITPORT:127.0.0.1" -o /dev/null -w '%{http_code}' "$@"; }
code=$(printf 'user = "x-access-token:%s"\n' "$VALUE" | dcurl -K - "https://git.test:$GITPORT/repo.git/info/refs?service=git-upload-pack" 2>&1)
check_eq "upstream (direct): git http-backend answers the real value with 200" 200 "$code"
code=$(dcurl -u "x-access-token:$PH" "https://git.test:$GITPORT/repo.git/info/refs?service=git-upload-pack" 2>&1)
check_eq "upstream (direct): the placeholder is refused with 401" 401 "$code"

# ---------------------------------------------------------------- the gateway
netns_make g; netns_redirect "$GITPORT"
# shellcheck disable=SC2034  # read by gw_conf (lib.sh)
GW_RESOLVE="git.test: 127.0.0.1
git2.test: 127.0.0.1
git3.test: 127.0.0.1
git4.test: 127.0.0.1"
policy_base <<YAML | gw_conf
  git.test:
    allow_private: true
    ports: [$GITPORT]
    rules:
      - allow: { method: [GET, POST], path: "/repo.git/**" }
  git2.test:
    allow_private: true
    ports: [$GITPORT]
    rules:
      - allow: { method: [GET, POST], path: "/repo.git/**" }
  git3.test:
    allow_private: true
    ports: [$GITPORT]
    rules:
      - id: git-discovery
        allow: { method: GET, path: /repo.git/info/refs, query: { service: { in: [git-upload-pack, git-receive-pack] } } }
      - { id: git-fetch, allow: { method: POST, path: /repo.git/git-upload-pack } }
      - { id: protect-main, deny: { path: /repo.git/git-receive-pack, git: { refs: [refs/heads/main] } } }
      - id: agent-branches
        allow: { method: POST, path: /repo.git/git-receive-pack, git: { refs: ["refs/heads/agent/**"], deny: [delete] } }
  git4.test:
    allow_private: true
    ports: [$GITPORT]
    rules:
      - { id: no-discovery, deny: { method: GET, path: /other.git/info/refs } }
      - { id: git4-discovery, allow: { method: GET, path: /repo.git/info/refs } }
      - { id: no-fetch, deny: { method: POST, path: /repo.git/git-upload-pack } }
      - { id: protect-main4, deny: { path: /repo.git/git-receive-pack, git: { refs: [refs/heads/main] } } }
      - id: push-limited
        allow: { method: POST, path: /repo.git/git-receive-pack, limit: { rate: 1/hour, per: global, name: "push-$ID" } }
secrets:
  gitpw:
    source: env:SLUICE_IT_GITPW
    placeholder: "$PH"
    hosts: [git.test, git3.test, git4.test]
    inject: [basic]
sandboxes:
  local:
    addresses: [127.0.0.1/32]
  gitns:
    addresses: [$NS_ADDR/32]
YAML
# under AddressSanitizer, freed memory waits in a quarantine (256 MiB by default) before it is reused, so the RSS
# bound of the 50 MiB push below would measure the quarantine: keep it small for this gateway
ASANQ=${ASAN_OPTIONS:-}
ldd "$SLUICE" 2>/dev/null | grep -q libasan && ASANQ="${ASANQ:+$ASANQ:}quarantine_size_mb=8:thread_local_quarantine_size_kb=256"
SLUICE_IT_GITPW="$VALUE" ASAN_OPTIONS="$ASANQ" gw_start

# G ARGS...: git through the explicit proxy, clean environment, the gateway's CA only, every command bounded
G() {
  $CLEAN HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false \
    GIT_SSL_CAINFO="$CA/ca.pem" HTTPS_PROXY="http://127.0.0.1:$PP" ${GX:-} timeout 60 git "$@"
}
URL="https://x-access-token:$PH@git.test:$GITPORT/repo.git"
# mark; since: the nginx log lines appended since the mark. asince JQ: the audit records appended since, that satisfy JQ
mark() { MARK=$(wc -l <"$GITLOG"); AMARK=$(wc -l <"$AUDIT" 2>/dev/null || echo 0); }
since() { tail -n +$((MARK + 1)) "$GITLOG"; }
asince() { tail -n +$((AMARK + 1)) "$AUDIT" | jq -c -s "$AUDIT_JOIN" 2>&1 | jq -c "select($1)" 2>&1; }
# git_rc MSG RC OUTFILE: RC is 0, else FAIL with the end of git's output (masked)
git_rc() { if [ "$2" = 0 ]; then ok "$1"; else bad "$1 (exit $2: $(tail -n 3 "$3" | tr '\n' ' '))"; fi; }
has_gitpw='.secrets == [{"name":"gitpw","place":"basic"}]'

# ---------------------------------------------------------------- 1. clone
mark
G clone "$URL" "$T/clone" >"$T/git-clone.out" 2>&1; rc=$?
git_rc "git clone through the gateway (explicit proxy) exits 0" "$rc" "$T/git-clone.out"
check_eq "the clone has the repository's content" "hello from git $ID" "$(cat "$T/clone/README" 2>&1)"
check "the upstream served the clone to the authenticated user (info/refs and git-upload-pack 200, user x-access-token)" \
  sh -c "tail -n +$((MARK + 1)) '$GITLOG' | grep -q '^git.test \"GET /repo.git/info/refs?service=git-upload-pack HTTP/1.1\" 200 .* user=x-access-token ' \
    && tail -n +$((MARK + 1)) '$GITLOG' | grep -q '^git.test \"POST /repo.git/git-upload-pack HTTP/1.1\" 200 .* user=x-access-token '"
check "the clone's .git/config holds the placeholder URL" grep -qF "$PH@git.test:$GITPORT" "$T/clone/.git/config"
no_leak "the clone's .git/config does not hold the value" "$T/clone/.git/config"
no_leak "git's clone output does not hold the value" "$T/git-clone.out"

# ---------------------------------------------------------------- 2. a small push
C() { git -C "$T/clone" -c user.email=t@t -c user.name=t "$@"; }
printf 'small change %s\n' "$ID" >"$T/clone/small.txt"
C add small.txt && C commit -qm "small $ID" || bad "could not commit the small change"
G -C "$T/clone" push origin HEAD:main >"$T/git-push-small.out" 2>&1; rc=$?
git_rc "git push of a small commit exits 0" "$rc" "$T/git-push-small.out"
check_eq "the bare repository has the small commit" "$(C rev-parse HEAD)" \
  "$(git --git-dir="$T/repos/repo.git" rev-parse main 2>&1)"
check_eq "  with its content" "small change $ID" "$(git --git-dir="$T/repos/repo.git" show main:small.txt 2>&1)"
check "the upstream saw git-receive-pack as the authenticated user" \
  grep -q '^git.test "POST /repo.git/git-receive-pack HTTP/1.1" 200 .* user=x-access-token ' "$GITLOG"

# ---------------------------------------------------------------- 3. a push larger than http.postBuffer (chunked)
head -c $((4 << 20)) /dev/urandom >"$T/clone/big.bin"
BIGSHA=$(sha256sum <"$T/clone/big.bin" | cut -d' ' -f1)
C add big.bin && C commit -qm "big $ID" || bad "could not commit the large file"
mark
GX="GIT_TRACE_CURL=$T/git-trace-big.txt GIT_TRACE_CURL_NO_DATA=1" \
  G -c http.version=HTTP/1.1 -C "$T/clone" push origin HEAD:main >"$T/git-push-big.out" 2>&1; rc=$?  # chunking is HTTP/1.1
git_rc "git push of a 4 MiB commit exits 0" "$rc" "$T/git-push-big.out"
check "git sent the pack chunked (the request exceeded http.postBuffer)" \
  grep -qiE '=> Send header: Transfer-Encoding: chunked' "$T/git-trace-big.txt"
check_eq "the bare repository has the large commit" "$(C rev-parse HEAD)" \
  "$(git --git-dir="$T/repos/repo.git" rev-parse main 2>&1)"
check_eq "  with the large file intact (sha256)" "$BIGSHA" \
  "$(git --git-dir="$T/repos/repo.git" cat-file blob main:big.bin 2>/dev/null | sha256sum | cut -d' ' -f1)"
big=$(since | grep '"POST /repo.git/git-receive-pack ' | tail -n 1)
check_match "the upstream received the large git-receive-pack (200)" '" 200 .* user=x-access-token ' "$big"
echo "# framing of the large push at the upstream: $(printf '%s' "$big" | grep -oE 'te=[^ ]* cl=[^ ]*$')"

# ---------------------------------------------------------------- 4. refusals
# a wrong placeholder: forwarded as is, the upstream answers 401, git fails
mark
G clone "https://x-access-token:$WRONG@git.test:$GITPORT/repo.git" "$T/clone-wrong" >"$T/git-clone-wrong.out" 2>&1; rc=$?
check "git clone with a wrong placeholder fails" test "$rc" -ne 0
check_match "  git reports an authentication failure" 'Authentication failed|401' "$(cat "$T/git-clone-wrong.out")"
check "  the upstream answered the wrong credential with 401" \
  sh -c "tail -n +$((MARK + 1)) '$GITLOG' | grep -q '^git.test \"GET /repo.git/info/refs?service=git-upload-pack HTTP/1.1\" 401 .* user=x-access-token '"
check_nomatch "  and served nothing (no 200)" '" 200 ' "$(since)"
no_leak "  no value in git's output" "$T/git-clone-wrong.out"
check "  audit: its requests are recorded as 401" audit_wait '.host=="git.test" and .status==401'
check_eq "  audit: none of them was answered 2xx or had a secret injected" "" \
  "$(asince '.type == "request" and (.status < 300 or ((.secrets // []) | length) > 0)')"

# the placeholder toward a host it is not bound to (git2.test, same upstream): 403 from the gateway
mark
G clone "https://x-access-token:$PH@git2.test:$GITPORT/repo.git" "$T/clone-unbound" >"$T/git-clone-unbound.out" 2>&1; rc=$?
check "git clone with the placeholder toward an unbound host fails" test "$rc" -ne 0
check_match "  git prints the refusal in its words (fatal: remote error: ..., rule secrets)" \
  'fatal: remote error: exfiltration attempt: rule secrets: placeholder of secret .gitpw. in basic' "$(cat "$T/git-clone-unbound.out")"
check "  audit: exfiltration_attempt, secret gitpw, place basic, host git2.test, 403" \
  audit_wait '.type=="exfiltration_attempt" and .secret=="gitpw" and .place=="basic" and .host=="git2.test" and .status==403 and .rule=="secrets"'
check_nomatch "  the upstream never received a credential for git2.test (only the unauthenticated probe)" \
  'user=x-access-token' "$(since)"
no_leak "  no value in git's output" "$T/git-clone-unbound.out"
check "no clone directory was made for the refused clones" sh -c "[ ! -e '$T/clone-unbound/README' ] && [ ! -e '$T/clone-wrong/README' ]"

# ---------------------------------------------------------------- transparent: a clone from a namespace
ns_git() {
  ip netns exec "$NS" env -i PATH=/usr/bin:/bin HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 \
    GIT_ASKPASS=/bin/false GIT_SSL_CAINFO="$CA/ca.pem" timeout 60 git -c "http.curloptResolve=git.test:$GITPORT:$NS_HOST" "$@"
}
ns_git clone "$URL" "$T/clone-ns" >"$T/git-clone-ns.out" 2>&1; rc=$?
git_rc "transparent: git clone from a known namespace exits 0" "$rc" "$T/git-clone-ns.out"
check_eq "transparent: the clone has the latest commit" "$(C rev-parse HEAD)" "$(git -C "$T/clone-ns" rev-parse HEAD 2>&1)"
check "transparent: audit names sandbox gitns and the injected secret" \
  audit_wait ".host==\"git.test\" and .sandbox==\"gitns\" and .status==200 and $has_gitpw"

# ---------------------------------------------------------------- 4b. semantic git rules (git3.test)
URL3="https://x-access-token:$PH@git3.test:$GITPORT/repo.git"
C3() { git -C "$T/clone3" -c user.email=t@t -c user.name=t "$@"; }
bare() { git --git-dir="$T/repos/repo.git" rev-parse --verify -q "$1" 2>/dev/null; }
G clone "$URL3" "$T/clone3" >"$T/git-clone3.out" 2>&1; rc=$?
git_rc "git rules: clone through git3.test (discovery and upload-pack allowed) exits 0" "$rc" "$T/git-clone3.out"
printf 'agent change %s\n' "$ID" >"$T/clone3/agent.txt"
C3 add agent.txt && C3 commit -qm "agent $ID" || bad "could not commit on clone3"
G -C "$T/clone3" push origin HEAD:refs/heads/agent/x >"$T/git-push-agent.out" 2>&1; rc=$?
git_rc "git rules: a push to refs/heads/agent/x exits 0" "$rc" "$T/git-push-agent.out"
check_eq "  the bare repository has agent/x at the pushed commit" "$(C3 rev-parse HEAD)" "$(bare refs/heads/agent/x)"
check "  audit: git-receive-pack allowed by rule agent-branches, 200" audit_wait \
  '.type == "request" and .host == "git3.test" and .path == "/repo.git/git-receive-pack" and .rule == "agent-branches" and .status == 200'
MAIN0=$(bare refs/heads/main)
G -C "$T/clone3" push origin HEAD:main >"$T/git-push-main.out" 2>&1; rc=$?
check "git rules: a push to main fails" test "$rc" -ne 0
check_match "  git prints the rule and the policy on its stderr (! [remote rejected], issue 24)" \
  '! \[remote rejected\] HEAD -> main \(denied by policy: rule protect-main: ' "$(cat "$T/git-push-main.out")"
check_nomatch "  and neither RPC failed nor Everything up-to-date" 'RPC failed|Everything up-to-date|hung up' \
  "$(cat "$T/git-push-main.out")"
check_eq "  main did not move" "$MAIN0" "$(bare refs/heads/main)"
check "  audit: denied by rule protect-main, 403" audit_wait \
  '.type == "request" and .host == "git3.test" and .path == "/repo.git/git-receive-pack" and .rule == "protect-main" and .status == 403'
G -C "$T/clone3" push origin HEAD:refs/heads/agent/y HEAD:main >"$T/git-push-two.out" 2>&1; rc=$?
check "git rules: one push updating agent/y and main fails as a whole" test "$rc" -ne 0
check_match "  git reports agent/y rejected too (the push is refused whole)" \
  'remote rejected\] HEAD -> agent/y \(denied by policy: rule protect-main' "$(cat "$T/git-push-two.out")"
check_eq "  agent/y was not created, main did not move" "- $MAIN0" "$(bare refs/heads/agent/y || echo -) $(bare refs/heads/main)"
AGX=$(bare refs/heads/agent/x)
G -C "$T/clone3" push origin :refs/heads/agent/x >"$T/git-push-del.out" 2>&1; rc=$?
check "git rules: deleting agent/x fails" test "$rc" -ne 0
check_match "  git prints the rule that refused the deletion" \
  '! \[remote rejected\] agent/x \(denied by policy: rule default: no rule matched\)' "$(cat "$T/git-push-del.out")"
check_eq "  agent/x is still there" "$AGX" "$(bare refs/heads/agent/x)"
check "  audit: the deletion fell through to default deny, 403" audit_wait \
  '.type == "request" and .host == "git3.test" and .path == "/repo.git/git-receive-pack" and .rule == "default" and .status == 403'

# raw POSTs: RP NAME BODYFILE -> the status; the marker ?c=NAME must never reach the upstream when refused
RP() {
  pcurl -o "$T/rp-$1.body" -w '%{http_code}' -u "x-access-token:$PH" -H 'Content-Type: application/x-git-receive-pack-request' \
    --data-binary "@$2" "https://git3.test:$GITPORT/repo.git/git-receive-pack?c=$1" 2>&1
}
printf '0000' >"$T/pkt-probe"
mark
code=$(RP probe "$T/pkt-probe")
check_eq "git rules: the 0000 probe (no commands) passes to the upstream" 200 "$code"
check "  the upstream received it (cl=4)" sh -c "tail -n +$((MARK + 1)) '$GITLOG' | grep -q '^git3.test \"POST /repo.git/git-receive-pack?c=probe HTTP/[0-9.]*\" 200 .* cl=4$'"
# malformed command sections, each its own marker
"$PY" - "$T" <<'PY'
import sys
d = sys.argv[1]
z, h = "0" * 40, "1" * 40
def pkt(s):
    b = s.encode() if isinstance(s, str) else s
    return b"%04x" % (len(b) + 4) + b
bodies = {
    "badhex": b"00zz" + b"x" * 40 + b"0000",
    "short": b"0003" + b"0000",
    "trunc": pkt("%s %s refs/heads/agent/t\0report-status\n" % (z, h))[:30],
    "noflush": pkt("%s %s refs/heads/agent/t\0report-status\n" % (z, h)),
    "badid": pkt("%s %s refs/heads/agent/t\0report-status\n" % ("g" * 40, h)) + b"0000",
    "badref": pkt("%s %s refs/heads/agent/../main\0report-status\n" % (z, h)) + b"0000",
    "cert": pkt("push-cert\0report-status\n") + pkt("certificate version 0.1\n") + b"0000",
    "nosp": pkt("%s%srefs/heads/agent/t\0report-status\n" % (z, h)) + b"0000",
}
for k, v in bodies.items():
    open("%s/pkt-%s" % (d, k), "wb").write(v)
PY
# refused in git's protocol (issue 24): 200 with a report-status whose "unpack" line gives the reason (the refs
# cannot be named from a malformed section)
refused="" reached=""
for k in badhex short trunc noflush badid badref cert nosp; do
  code=$(RP "$k" "$T/pkt-$k")
  { [ "$code" = 200 ] && grep -q 'unpack denied by policy: rule git: malformed git pkt-line' "$T/rp-$k.body"; } ||
    refused="$refused $k:$code"
done
check_eq "git rules: malformed pkt-lines are refused in git's protocol, the reason in the report (bad hex length, length 3, truncated, no flush, bad id, bad ref, push-cert, no spaces)" "" "$refused"
sleep 0.3
for k in badhex short trunc noflush badid badref cert nosp; do grep -qF "c=$k " "$GITLOG" && reached="$reached $k"; done
check_eq "  none of them reached the upstream" "" "$reached"

# a 50 MiB incompressible pack to agent/big streams through: the gateway's RSS grows by less than 20 MiB
head -c $((50 << 20)) /dev/urandom >"$T/clone3/big50.bin"
BIG50=$(sha256sum <"$T/clone3/big50.bin" | cut -d' ' -f1)
C3 add big50.bin && C3 commit -qm "big50 $ID" || bad "could not commit the 50 MiB file"
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$GWPID/status"; }
mark
rss0=$(rss) peak=0
GX="GIT_TRACE_CURL=$T/git-trace-big50.txt GIT_TRACE_CURL_NO_DATA=1" \
  G -C "$T/clone3" push origin HEAD:refs/heads/agent/big >"$T/git-push-big50.out" 2>&1 &
gpid=$!
while kill -0 "$gpid" 2>/dev/null; do r=$(rss); [ "${r:-0}" -gt "$peak" ] && peak=$r; sleep 0.1; done
wait "$gpid"; rc=$?
git_rc "git rules: a push of a 50 MiB incompressible pack to agent/big exits 0" "$rc" "$T/git-push-big50.out"
check_eq "  the bare repository has agent/big with the file intact (sha256)" "$BIG50" \
  "$(git --git-dir="$T/repos/repo.git" cat-file blob refs/heads/agent/big:big50.bin 2>/dev/null | sha256sum | cut -d' ' -f1)"
check "  the gateway's RSS grew by less than 20 MiB during the push (${rss0} kB -> peak ${peak} kB)" \
  test "$((peak - rss0))" -lt $((20 * 1024))
big=$(since | grep '^git3.test "POST /repo.git/git-receive-pack ' | tail -n 1)
check_match "  the upstream received the pack (200)" '" 200 ' "$big"
check "  git's own 0000 probe before it passed too (a 4-byte git-receive-pack POST, 200)" \
  sh -c "tail -n +$((MARK + 1)) '$GITLOG' | grep -q '^git3.test \"POST /repo.git/git-receive-pack HTTP/1.1\" 200 .* cl=4$'"
echo "# 50 MiB push: $(grep -c '=> Send header: POST' "$T/git-trace-big50.txt") POSTs, $(grep -m1 -oE 'HTTP/[0-9.]+ [0-9]+' "$T/git-trace-big50.txt" | tail -n 1); upstream: $(printf '%s' "$big" | grep -oE 'te=[^ ]* cl=[^ ]*$')"
rm -f "$T/clone3/big50.bin"

# ---------------------------------------------------------------- 4c. refusals in git's own words (issue 24)
# every refusal is read by git as a git answer, so its stderr carries the rule and the reason; over HTTP/1.1 and
# HTTP/2 alike (git4.test), and nothing of a refused request reaches the upstream
URL4="https://x-access-token:$PH@git4.test:$GITPORT/repo.git"
for v in HTTP/1.1 HTTP/2; do
  mark
  G -c http.version=$v -C "$T/clone3" push "$URL4" HEAD:main >"$T/git-push-main-${v#HTTP/}.out" 2>&1; rc=$?
  check "in git's words ($v): a push to main fails" test "$rc" -ne 0
  check_match "  git prints ! [remote rejected] with the rule" \
    '! \[remote rejected\] HEAD -> main \(denied by policy: rule protect-main4: denied by rule\)' \
    "$(cat "$T/git-push-main-${v#HTTP/}.out")"
  check_nomatch "  no RPC failed, no hung up" 'RPC failed|hung up|up-to-date' "$(cat "$T/git-push-main-${v#HTTP/}.out")"
  check_nomatch "  the upstream received no git-receive-pack POST" 'POST /repo.git/git-receive-pack' "$(since)"
  check "  audit: recorded on http_version ${v#HTTP/}, rule protect-main4, 403" audit_wait \
    ".type == \"request\" and .host == \"git4.test\" and .http_version == \"${v#HTTP/}\" and .rule == \"protect-main4\" and .status == 403"
done
for v in HTTP/1.1 HTTP/2; do
  mark
  G -c http.version=$v clone "$URL4" "$T/clone4-${v#HTTP/}" >"$T/git-clone4-${v#HTTP/}.out" 2>&1; rc=$?
  check "in git's words ($v): a clone whose git-upload-pack is denied fails" test "$rc" -ne 0
  check_match "  git prints fatal: remote error: with the rule" \
    'fatal: remote error: denied by policy: rule no-fetch: denied by rule' "$(cat "$T/git-clone4-${v#HTTP/}.out")"
  check_nomatch "  the upstream received no git-upload-pack POST" 'POST /repo.git/git-upload-pack' "$(since)"
  mark
  G -c http.version=$v ls-remote "https://x-access-token:$PH@git4.test:$GITPORT/other.git" >"$T/git-ls4-${v#HTTP/}.out" 2>&1; rc=$?
  check "in git's words ($v): discovery (info/refs) refused fails" test "$rc" -ne 0
  check_match "  git prints fatal: remote error: with the rule" \
    'fatal: remote error: denied by policy: rule no-discovery: denied by rule' "$(cat "$T/git-ls4-${v#HTTP/}.out")"
  check_eq "  the upstream received nothing" "" "$(since | grep 'other.git')"
done
# a rate limit: the first push passes, the second is refused with the limit and its retry time in git's words
G -C "$T/clone3" push "$URL4" HEAD:refs/heads/agent/l1 >"$T/git-push-l1.out" 2>&1; rc=$?
git_rc "in git's words: the first push under push-limited (1/hour) exits 0" "$rc" "$T/git-push-l1.out"
mark
G -c http.version=HTTP/2 -C "$T/clone3" push "$URL4" HEAD:refs/heads/agent/l2 >"$T/git-push-l2.out" 2>&1; rc=$?
check "in git's words: the second push over the limit fails" test "$rc" -ne 0
check_match "  git prints the limit and the retry time" \
  '! \[remote rejected\] HEAD -> agent/l2 \(rate limited: rule push-limited: .*resets in [0-9]+ s' \
  "$(cat "$T/git-push-l2.out")"
check_nomatch "  the upstream received no git-receive-pack POST" 'POST /repo.git/git-receive-pack' "$(since)"
check_eq "  agent/l2 was not created" "-" "$(bare refs/heads/agent/l2 || echo -)"
check "  audit: 429, rule push-limited, its limit" audit_wait \
  '.type == "request" and .host == "git4.test" and .status == 429 and .rule == "push-limited"'

# ---------------------------------------------------------------- 5. audit
for q in '.method=="GET" and (.path|startswith("/repo.git/info/refs"))' '.method=="POST" and .path=="/repo.git/git-upload-pack"' \
         '.method=="POST" and .path=="/repo.git/git-receive-pack"'; do
  check "audit: $q, status 200, sandbox local, secrets [gitpw at basic]" \
    audit_wait ".type==\"request\" and .host==\"git.test\" and .sandbox==\"local\" and .status==200 and $q and $has_gitpw"
done
check_eq "audit: every 2xx request to git.test had gitpw injected at basic, and nothing else" 0 \
  "$(audit_view | jq -s "[.[] | select(.type==\"request\" and .host==\"git.test\" and .status>=200 and .status<300) | select(($has_gitpw) | not)] | length" 2>&1)"
check "audit: no record carries the secret's value or anything but name and place under secrets" \
  sh -c "[ \"\$(jq -s '[.[] | select(.type==\"request\") | .secrets[]? | keys | select(. != [\"name\",\"place\"])] | length' '$AUDIT')\" = 0 ]"

# ---------------------------------------------------------------- 6. the value is nowhere
gw_stop 20
check_eq "the gateway stops cleanly on SIGTERM" 0 "$GW_RC"
sleep 0.3
check_eq "the clone's .git/config names the placeholder, not the value" "1" \
  "$(grep -cF "x-access-token:$PH@" "$T/clone/.git/config")"
found=$(leaks "$T")
if [ -z "$found" ]; then ok "no value in any file of the run (gateway log, audit, nginx logs, git output and trace, clones, this test's output)"
else bad "the value leaked:"; printf '%s\n' "$found" | sed 's/^/# /'; fi
finish
