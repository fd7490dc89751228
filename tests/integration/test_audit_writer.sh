#!/usr/bin/env bash
# The audit writer on a real gateway (issue 7): records in order, seq contiguous, the prev chain and the macs
# valid (checked here by a python snippet with hashlib/hmac, and by `sluice audit verify`); a request's record is in
# the file before the upstream sees the request (the upstream reads the audit file when the request arrives), over
# HTTP/1.1 and HTTP/2; each allowed request has one request and one response record with the same id, a denied one
# one request record with its status; SIGUSR1 rotates and the chain goes on; checkpoints go to the checkpoint file
# and name the right line; every line is also sent to syslog (RFC 5424 over UDP to a loopback listener); kill -9
# under load, then a torn last line: the restart cuts it and reports it in its start record, and nothing before it
# is lost; the key file moves forward and no longer holds the initial key.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"

pki_init
nginx_start

# ---------------------------------------------------------------- helpers
CHAIN=$T/chain.py
cat >"$CHAIN" <<'PY'
# chain.py [--key INITIAL_KEY_FILE] FILE...: checks seq, prev and mac across FILEs (oldest first);
# prints "ok <records> <last seq>" or "bad: <why>" (exit 1). A torn last line of the last file is ignored.
import hashlib, hmac, json, sys
args = sys.argv[1:]
key = None
if args and args[0] == "--key":
    f = open(args[1]).read().split()
    assert f[0] == "sluice-audit-key" and f[1] == "v1", "not a key file"
    kseq, key = int(f[2]), bytes.fromhex(f[3])
    args = args[2:]
prev, seq, n = "0" * 64, None, 0
def bad(why):
    print("bad:", why); sys.exit(1)
for name in args:
    data = open(name, "rb").read()
    lines = data.split(b"\n")
    if lines[-1] != b"" and name != args[-1]:
        bad(f"{name}: ends in a partial line")
    for raw in lines[:-1]:
        line = raw.decode("ascii")   # every byte a peer sent is escaped: the line is pure ASCII
        o = json.loads(line)
        keys = list(o.keys())
        if keys[:4] != ["seq", "time", "type", "sandbox"]:
            bad(f"seq {o.get('seq')}: members start {keys[:4]}")
        if keys[-1] != ("mac" if key else "prev") or (key and keys[-2] != "prev"):
            bad(f"seq {o['seq']}: members end {keys[-2:]}")
        if seq is not None and o["seq"] != seq + 1:
            bad(f"seq {o['seq']} after {seq}")
        if o["prev"] != prev:
            bad(f"seq {o['seq']}: prev does not match the line before")
        if key is not None:
            if o["seq"] < kseq:
                bad(f"seq {o['seq']} before the key's seq {kseq}")
            while kseq < o["seq"]:
                key = hashlib.sha256(b"sluice-audit-key-v1" + key).digest()
                kseq += 1
            covered = line[:line.index(',"mac":"')] + "}"
            if hmac.new(key, covered.encode(), "sha256").hexdigest() != o["mac"]:
                bad(f"seq {o['seq']}: mac does not verify")
        prev = hashlib.sha256(raw).hexdigest()
        seq = o["seq"]
        n += 1
print("ok", n, seq)
PY
chain() { "$PY" "$CHAIN" "$@" 2>&1; }

# An upstream that, when a request arrives, looks in the audit file for that request's record.
AUP=$T/aup.py
cat >"$AUP" <<'PY'
import http.server, json, socketserver, ssl, sys
addr, port, cert, key, audit, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
def audited(path):
    try:
        with open(audit, "rb") as f:
            for raw in f:
                if b'"type":"request"' in raw and raw.endswith(b"\n"):
                    o = json.loads(raw)
                    if o.get("path") == path:
                        return o["seq"]
    except FileNotFoundError:
        pass
    return 0
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        seq = audited(self.path)
        with open(log, "a") as f:
            f.write(f"{self.path} {seq}\n")
        body = f"audited={1 if seq else 0}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.set_alpn_protocols(["http/1.1"])
s = S((addr, port), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
AP=$(freeport)
spawn "$T/aup.out" "$PY" "$AUP" "$UPADDR" "$AP" "$PKI/srv.pem" "$PKI/srv.key" "$AUDIT" "$T/aup.log"
eventually 5 sh -c "ss -ltnH | grep -q ' $UPADDR:$AP '" || die "audit-checking upstream did not start: $(tail -n 3 "$T/aup.out")"

# syslog collector: RFC 5424 datagrams on loopback, one per line into a file
SYSLOG_PORT=$(freeport)
spawn "$T/syslog.out" "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
with open(sys.argv[2], "ab", buffering=0) as f:
    while True:
        d, _ = s.recvfrom(70000)
        f.write(d.replace(b"\n", b"\\n") + b"\n")
' "$SYSLOG_PORT" "$T/syslog.got"

# the initial key, kept "off the host" (a copy the gateway is never told about)
"$SLUICE" audit keygen "$T/audit.key" >"$T/keygen.out" 2>&1 || die "sluice audit keygen: $(cat "$T/keygen.out")"
cp "$T/audit.key" "$T/initial.key"
check_match "keygen writes a key for seq 1" '^sluice-audit-key v1 1 [0-9a-f]{64}$' "$(cat "$T/initial.key")"

GW_HTTP2=true
GW_EXTRA="  key_file: $T/audit.key
  fsync: 200ms
  checkpoint_interval: 1s
  checkpoint_file: $T/checkpoints
  syslog: { enabled: true, address: \"udp://127.0.0.1:$SYSLOG_PORT\", format: rfc5424 }
  queue: 4096"
policy_base 'allow: { method: GET, path: "/ok/**" }' 'allow: { method: GET, path: "/a/**" }' <<YAML | gw_conf
  www.example.test:
    allow_private: true
    ports: [$AP]
    rules:
      - allow: { method: GET, path: "/a/**" }
YAML
gw_start

# ---------------------------------------------------------------- 1. the record is written before the request goes up
bad_h1='' bad_h2=''
for i in $(seq 1 20); do
  out=$(pcurl --http1.1 "https://www.example.test:$AP/a/h1-$i")
  [ "$out" = "audited=1" ] || bad_h1="$bad_h1 $i:$out"
done
check_eq "HTTP/1.1: the upstream found each request's record in the file when the request arrived (20)" "" "$bad_h1"
# one keep-alive connection, several requests (the record of each is parked for, not only the first)
out=$(pcurl --http1.1 "https://www.example.test:$AP/a/ka-1" "https://www.example.test:$AP/a/ka-2" \
  "https://www.example.test:$AP/a/ka-3" | tr '\n' ' ')
check_eq "  and so on one keep-alive connection (3 requests)" "audited=1 audited=1 audited=1 " "$out"
for i in $(seq 1 10); do
  out=$(pcurl --http2 "https://www.example.test:$AP/a/h2-$i")
  [ "$out" = "audited=1" ] || bad_h2="$bad_h2 $i:$out"
done
check_eq "HTTP/2 client streams: the same (10)" "" "$bad_h2"
# 20 at once on one HTTP/2 connection
args=()
for i in $(seq 1 20); do args+=("https://www.example.test:$AP/a/par-$i"); done
out=$(pcurl --http2 --parallel --parallel-max 20 "${args[@]}" | sort | uniq -c | sed 's/^ *//')
check_eq "  and 20 parallel streams on one connection" "20 audited=1" "$out"
check_eq "the upstream log agrees (53 requests, each with its record's seq)" 53 \
  "$(awk '$2 > 0' "$T/aup.log" | wc -l)"

# ---------------------------------------------------------------- 2. request and response records
check_eq "a denied request gets 403" 403 "$(pcurl -o /dev/null -w '%{http_code}' https://api.example.test/nope/x)"
check_eq "an allowed one through nginx" hello "$(pcurl https://api.example.test/ok/pair)"
sleep 0.5
req=$(jq -c 'select(.type == "request" and .path == "/ok/pair")' "$AUDIT")
id=$(printf '%s' "$req" | jq -r .id)
check_match "the allowed request's record: verdict allow, an id <conn>-<n>, no status" \
  '^allow [0-9]+-[0-9]+ null$' "$(printf '%s' "$req" | jq -r '"\(.verdict) \(.id) \(.status)"')"
check_eq "  one response record with the same id: 200, 6 bytes down" "200 6" \
  "$(jq -r --arg id "$id" 'select(.type == "response" and .id == $id) | "\(.status) \(.bytes_down)"' "$AUDIT")"
check "  and the response comes after the request" test \
  "$(jq -r --arg id "$id" 'select(.type == "response" and .id == $id) | .seq' "$AUDIT")" -gt "$(printf '%s' "$req" | jq .seq)"
did=$(jq -r 'select(.path == "/nope/x") | .id' "$AUDIT")
check_eq "the denied request: one record, deny and its status, and no other record with its id" "request deny 403 1" \
  "$(jq -r 'select(.path == "/nope/x") | "\(.type) \(.verdict) \(.status)"' "$AUDIT") $(jq -c --arg id "$did" 'select(.id == $id)' "$AUDIT" | wc -l)"
check_eq "h2 streams' ids name the connection and the stream" "1 3 5" \
  "$(jq -r 'select(.type == "request" and (.path | startswith("/a/par-"))) | .id | split("-")[1] | tonumber' "$AUDIT" | sort -n | head -3 | tr '\n' ' ' | sed 's/ $//')"

# ---------------------------------------------------------------- 3. SIGUSR1 rotates, the chain goes on
last_before=$(tail -n 1 "$AUDIT" | jq .seq)
kill -USR1 "$GWPID"
check "SIGUSR1: the log says it rotated" eventually 5 grep -q "audit: rotated $AUDIT to $AUDIT\.[0-9]\{8\}T[0-9]\{6\}Z" "$GWLOG"
ROT=$(ls "$AUDIT".* 2>/dev/null | grep -E '\.[0-9]{8}T[0-9]{6}Z$' | head -n 1)
check "  the rotated file is there" test -s "$ROT"
check_eq "  after the rotation the request still goes through" hello "$(pcurl https://api.example.test/ok/after-rot)"
check "  the new file starts with the next seq" eventually 5 sh -c \
  "[ \"\$(head -n 1 '$AUDIT' | jq .seq)\" -gt $last_before ]"
check_match "  the chain runs across both files (python hashlib/hmac, initial key)" '^ok ' \
  "$(chain --key "$T/initial.key" "$ROT" "$AUDIT")"
check_match "  and sluice audit verify agrees" '^ok: ' \
  "$("$SLUICE" audit verify --key-file "$T/initial.key" "$ROT" "$AUDIT" 2>&1)"

# ---------------------------------------------------------------- 4. checkpoints and syslog
check "a checkpoint reaches the checkpoint file" eventually 5 grep -q 'seq=' "$T/checkpoints"
ck=$(tail -n 1 "$T/checkpoints")
check_match "  as \"sluice-audit checkpoint file=... seq=N hash=H\"" \
  "^sluice-audit checkpoint file=$AUDIT seq=[0-9]+ hash=[0-9a-f]{64}\$" "$ck"
ckseq=$(printf '%s' "$ck" | sed 's/.* seq=\([0-9]*\) .*/\1/')
ckhash=$(printf '%s' "$ck" | sed 's/.* hash=//')
ckline=$(cat "$ROT" "$AUDIT" | jq -c "select(.seq == $ckseq)")
check_eq "  its seq is a checkpoint record, and its hash is that line's SHA-256" "checkpoint $ckhash" \
  "$(printf '%s' "$ckline" | jq -r .type) $(cat "$ROT" "$AUDIT" | grep "^{\"seq\":$ckseq," | tr -d '\n' | sha256sum | cut -d' ' -f1)"
check "  the checkpoint's head is the line before it" test "$(printf '%s' "$ckline" | jq .head_seq)" -eq $((ckseq - 1))
check "every line also goes to syslog" eventually 5 grep -q '"path":"/ok/after-rot"' "$T/syslog.got"
sys=$(grep '"path":"/ok/after-rot"' "$T/syslog.got" | head -n 1)
check_match "  as RFC 5424: <86>1 TIME HOST sluice PID request [sluice@32473 hash=... seq=...] JSON" \
  "^<86>1 [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z [^ ]+ sluice $GWPID request \\[sluice@32473 hash=\"[0-9a-f]{64}\" seq=\"[0-9]+\" .*\\] \\{\"seq\":" "$sys"
check "  and the JSON is the line in the file, byte for byte" grep -qxF "${sys#*\] }" "$AUDIT"

# ---------------------------------------------------------------- 5. kill -9 under load; a torn last line
LOAD=()
for i in $(seq 1 4); do
  ( for j in $(seq 1 200); do pcurl -o /dev/null "https://api.example.test/ok/load-$i-$j" 2>/dev/null; done ) &
  LOAD+=($!)
done
sleep 2
kill -9 "$GWPID"
wait "$GWPID" 2>/dev/null
GWPID=
wait "${LOAD[@]}" 2>/dev/null
check_match "after kill -9: what was written verifies (a torn last line at most)" '^ok ' \
  "$(chain --key "$T/initial.key" "$ROT" "$AUDIT")"
n_before=$(grep -c . "$AUDIT")
last=$(tail -n 1 "$AUDIT" | jq .seq)
# what a write cut short by the crash leaves behind
printf '{"seq":%d,"time":"2026-01-01T00:00:00.000Z","type":"requ' $((last + 1)) >>"$AUDIT"
torn=$(printf '{"seq":%d,"time":"2026-01-01T00:00:00.000Z","type":"requ' $((last + 1)) | wc -c)
check_match "  sluice audit verify reports the torn line as incomplete" 'incomplete|partial|truncat' \
  "$("$SLUICE" audit verify "$ROT" "$AUDIT" 2>&1)"
gw_start
check "restart: the log says the partial line was cut" eventually 5 grep -q "cut a partial last line ($torn bytes)" "$GWLOG"
start=$(jq -c "select(.seq == $((last + 1)))" "$AUDIT")
check_eq "  the restart's start record takes the torn line's seq and reports the bytes cut" "start $torn" \
  "$(printf '%s' "$start" | jq -r '"\(.type) \(.recovered_bytes)"')"
check_eq "  nothing before it was lost" "$n_before" "$(jq -c "select(.seq <= $last)" "$AUDIT" | wc -l)"
check_eq "  and requests are served again" hello "$(pcurl https://api.example.test/ok/after-crash)"
served_recorded() { # every /ok/load- path nginx served has a request record
  sed -n 's/^[^ ]* "GET \(\/ok\/load-[^ ]*\) .*/\1/p' "$NGXLOG" | sort -u >"$T/served"
  cat "$ROT" "$AUDIT" | jq -r 'select(.type == "request" and (.path | startswith("/ok/load-"))) | .path' \
    | sort -u >"$T/recorded"
  [ -s "$T/served" ] && [ -z "$(comm -23 "$T/served" "$T/recorded")" ]
}
check "  each request nginx served before the crash has its request record ($(grep -c 'load-' "$NGXLOG") served)" \
  served_recorded

# ---------------------------------------------------------------- 6. the key file
gw_stop
check_eq "the gateway stops cleanly" 0 "$GW_RC"
check_eq "  its last record is stop (reason signal)" "stop signal" "$(tail -n 1 "$AUDIT" | jq -r '"\(.type) \(.reason)"')"
check_match "the whole log verifies from the initial key (python)" '^ok ' "$(chain --key "$T/initial.key" "$ROT" "$AUDIT")"
check_match "  and with sluice audit verify --checkpoints" '^ok: ' \
  "$("$SLUICE" audit verify --key-file "$T/initial.key" --checkpoints "$T/checkpoints" "$ROT" "$AUDIT" 2>&1)"
live=$(cat "$T/audit.key")
check_match "the key file moved on to the record after the last" "^sluice-audit-key v1 $(( $(tail -n 1 "$AUDIT" | jq .seq) + 1 )) [0-9a-f]{64}\$" "$live"
check "  and no longer holds the initial key" sh -c "! grep -qF '$(cut -d' ' -f4 "$T/initial.key")' '$T/audit.key'"
check_eq "  mode 0600" 600 "$(stat -c %a "$T/audit.key")"
# the key file's key must verify the next record: a mac made with an older key would not
check_match "a key ahead of the log refuses to start" 'key of record [0-9]+ but the log.s next record is' \
  "$( { printf 'sluice-audit-key v1 999999 %s\n' "$(cut -d' ' -f4 "$T/initial.key")" >"$T/audit.key"; \
       timeout 10 "$SLUICE" serve -c "$GWCONF"; } 2>&1 | tail -n 3)"
# a log whose end was cut (the checkpoints say so)
head -n 3 "$AUDIT" >"$T/cut.jsonl"
check_match "a log cut short of a checkpoint fails verify --checkpoints" 'truncated' \
  "$("$SLUICE" audit verify --checkpoints "$T/checkpoints" "$ROT" "$T/cut.jsonl" 2>&1)"
finish
