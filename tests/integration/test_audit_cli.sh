#!/usr/bin/env bash
# sluice audit verify|query|tail|summary|keygen over chains built here by a python generator that follows
# docs/audit-schema.md (seq, prev = SHA-256 of the previous line, mac = HMAC-SHA-256 with the evolving key,
# checkpoint records and their syslog lines). Every tampering is named exactly; hostile values print harmlessly.
. "$(dirname "$(readlink -f "$0")")/lib.sh" "$@"
S=$SLUICE

cat >"$T/gen.py" <<'PY'
"""gen.py OUT [--key KEYFILE] [--first SEQ --prev HEX] [--checkpoints FILE] < SPEC: one JSON object per line
(type, sandbox, then the type's fields, in order); writes the chained lines to OUT (appends)."""
import hashlib, hmac, json, sys

def esc(s):
    b = s.encode('latin-1') if all(ord(c) < 256 for c in s) else s.encode('utf-8')
    out = ['"']
    for c in b:
        if c == 0x22: out.append('\\"')
        elif c == 0x5c: out.append('\\\\')
        elif c < 0x20 or c >= 0x7f: out.append('\\u%04x' % c)
        else: out.append(chr(c))
    out.append('"')
    return ''.join(out)

def val(v):
    if isinstance(v, bool): return 'true' if v else 'false'
    if isinstance(v, int): return str(v)
    if isinstance(v, str): return esc(v)
    if isinstance(v, list): return '[' + ','.join(val(x) for x in v) + ']'
    if isinstance(v, dict): return '{' + ','.join(esc(k) + ':' + val(x) for k, x in v.items()) + '}'
    raise ValueError(v)

args = sys.argv[1:]
out = args.pop(0)
key = None; seq = 1; prev = '0' * 64; cpf = None
while args:
    a = args.pop(0)
    if a == '--key':
        _, _, kseq, khex = open(args.pop(0)).read().split()
        key = (int(kseq), bytes.fromhex(khex))
    elif a == '--first': seq = int(args.pop(0))
    elif a == '--prev': prev = args.pop(0)
    elif a == '--checkpoints': cpf = open(args.pop(0), 'a')
if key:
    k = key[1]
    for _ in range(seq - key[0]):
        k = hashlib.sha256(b'sluice-audit-key-v1' + k).digest()
with open(out, 'a') as f:
    for spec in sys.stdin:
        r = json.loads(spec)
        t = r.pop('time', '2026-12-01T04:%02d:%02d.000Z' % (seq // 60 % 60, seq % 60))
        if r['type'] == 'checkpoint':
            r['head_seq'] = seq - 1; r['head_hash'] = prev
        if key and 'args_of' in r:  # the mcp fields' fingerprint (docs/audit-schema.md), ASCII arguments only
            sub = hmac.new(k, b'sluice-mcp-args-v1', hashlib.sha256).digest()
            canon = json.dumps(r.pop('args_of'), sort_keys=True, separators=(',', ':')).encode()
            r['args_hmac'] = hmac.new(sub, canon, hashlib.sha256).hexdigest()
        body = '{"seq":%d,"time":%s' % (seq, esc(t)) + ''.join(',' + esc(k2) + ':' + val(v) for k2, v in r.items())
        body += ',"prev":"%s"' % prev
        if key:
            m = hmac.new(k, (body + '}').encode('latin-1'), hashlib.sha256).hexdigest()
            line = body + ',"mac":"%s"}' % m
            k = hashlib.sha256(b'sluice-audit-key-v1' + k).digest()
        else:
            line = body + '}'
        f.write(line + '\n')
        prev = hashlib.sha256(line.encode('latin-1')).hexdigest()
        if r['type'] == 'checkpoint' and cpf:
            cpf.write('Dec  1 04:07:10 gw sluice[7]: sluice-audit checkpoint file=%s seq=%d hash=%s\n' % (out, seq, prev))
        seq += 1
print(prev)
PY

# one run of a gateway, as records (the ESC and the CR LF are peer bytes the writer escaped)
cat >"$T/spec" <<'EOF'
{"type":"start","sandbox":"-","run":"0123456789abcdef","version":"0.1.0","pid":7,"config":"/etc/sluice.yaml"}
{"type":"dns","sandbox":"agent-1","host":"api.github.com","qtype":"A","answer":"A 198.18.0.7","verdict":"allow"}
{"type":"request","sandbox":"agent-1","id":"1-1","client":"10.200.1.2","host":"api.github.com","method":"GET","path":"/user","http_version":"1.1","verdict":"allow","rule":"api.github.com/rules/0","secrets":[{"name":"github","place":"header:authorization"}],"conn":1}
{"type":"scrub","sandbox":"agent-1","id":"1-1","secrets":["github"]}
{"type":"response","sandbox":"agent-1","id":"1-1","status":200,"bytes_up":0,"bytes_down":116,"duration_ms":25,"upstream_tls":true,"scrubbed":["github"],"conn":1}
{"type":"request","sandbox":"agent-1","id":"2-1","client":"10.200.1.2","host":"slack.com","method":"POST","path":"/api/chat.postMessage","http_version":"1.1","verdict":"deny","rule":"secrets","reason":"placeholder of secret 'slack' in body","status":403,"conn":2}
{"type":"exfiltration_attempt","sandbox":"agent-1","id":"2-1","secret":"slack","place":"body","host":"slack.com","rule":"secrets"}
{"type":"denial","sandbox":"agent-2","client":"10.200.2.2","dest":"10.200.2.1:443","sni":"x\u001b[31m.evil.test","rule":"tls","reason":"client TLS handshake failed","conn":3}
{"type":"request","sandbox":"agent-2","id":"4-1","client":"10.200.2.2","host":"api.github.com","method":"GET","path":"/a\r\n{\"type\":\"request\",\"x\":\"\u001b[2J\"}","http_version":"1.1","verdict":"allow","rule":"api.github.com/rules/0","conn":4}
{"type":"response","sandbox":"agent-2","id":"4-1","status":404,"bytes_up":0,"bytes_down":9,"duration_ms":3,"upstream_tls":true,"conn":4}
{"type":"checkpoint","sandbox":"-"}
{"type":"request","sandbox":"agent-1","id":"5-1","client":"10.200.1.2","host":"pypi.org","method":"GET","path":"/simple/","http_version":"1.1","verdict":"allow","rule":"pypi.org","conn":5}
{"type":"response","sandbox":"agent-1","id":"5-1","status":200,"bytes_up":0,"bytes_down":4096,"duration_ms":80,"upstream_tls":true,"conn":5}
{"type":"stop","sandbox":"-","reason":"signal","records":13}
EOF

# keygen: 0600, one line, refuses to overwrite, says to copy it off the host
out=$("$S" audit keygen "$T/audit.key" 2>&1); rc=$?
check_eq "keygen exits 0" 0 "$rc"
check_eq "keygen writes mode 0600" 600 "$(stat -c %a "$T/audit.key")"
check_match "keygen writes one 'sluice-audit-key v1 1 <64 hex>' line" '^sluice-audit-key v1 1 [0-9a-f]{64}$' "$(cat "$T/audit.key")"
check_eq "the key file is one line" 1 "$(wc -l <"$T/audit.key")"
check_match "keygen says where" "to $T/audit.key" "$out"
check_match "keygen says to copy it off the host before starting" 'BEFORE starting the gateway, copy this file off this host' "$out"
sum=$(sha256sum <"$T/audit.key")
out=$("$S" audit keygen "$T/audit.key" 2>&1); rc=$?
check_eq "keygen over an existing file exits 1" 1 "$rc"
check_eq "keygen refusal says so" "sluice audit keygen: $T/audit.key exists; refusing to overwrite it" "$out"
check_eq "the refused keygen left the key unchanged" "$sum" "$(sha256sum <"$T/audit.key")"
"$S" audit keygen "$T/other.key" >/dev/null 2>&1
check "two keygens make different keys" test "$(cut -d' ' -f4 "$T/audit.key")" != "$(cut -d' ' -f4 "$T/other.key")"

L=$T/audit.jsonl CP=$T/checkpoints
head=$("$PY" "$T/gen.py" "$L" --key "$T/audit.key" --checkpoints "$CP" <"$T/spec")
check_eq "the generator wrote 14 records" 14 "$(wc -l <"$L")"
check_eq "the writer's escaping leaves no raw ESC or CR in the log" 0 "$(tr -cd '\033\r' <"$L" | wc -c)"
check_match "the checkpoints file has the checkpoint's syslog line" '^Dec  1 04:07:10 gw sluice\[7\]: sluice-audit checkpoint file=.* seq=11 hash=[0-9a-f]{64}$' "$(cat "$CP")"

# every line the generator wrote is valid under docs/audit-schema.json (python3-jsonschema, from scripts/deps.sh test)
SCHEMA=$(dirname "$(readlink -f "$0")")/../../docs/audit-schema.json
"$PY" -c 'import jsonschema' 2>/dev/null || die "python3-jsonschema is missing (scripts/deps.sh test installs it)"
if true; then
  out=$("$PY" - "$SCHEMA" "$L" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
bad = [n for n, line in enumerate(open(sys.argv[2], encoding='latin-1'), 1) if list(v.iter_errors(json.loads(line)))]
print("invalid:", bad)
PY
)
  check_eq "docs/audit-schema.json accepts every record" "invalid: []" "$out"
  out=$(sed -n 3p "$L" | sed 's/"conn":1,/"conn":1,"bogus":2,/' | "$PY" -c '
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
print(len(list(v.iter_errors(json.loads(sys.stdin.read())))) > 0)' "$SCHEMA")
  check_eq "docs/audit-schema.json refuses an unknown member" True "$out"
fi

hash_of() { sed -n "${2}p" "$1" | tr -d '\n' | sha256sum | cut -d' ' -f1; }
vf() { "$S" audit verify "$@" 2>&1; }

# a good log
out=$(vf "$L" --key-file "$T/audit.key" --checkpoints "$CP"); rc=$?
check_eq "verify of a good log exits 0" 0 "$rc"
check_eq "verify prints the summary, the mac and checkpoint notes" \
"ok: 14 records, seq 1..14, 2026-12-01T04:00:01.000Z .. 2026-12-01T04:00:14.000Z, final hash $head
note: macs: 14 checked with the key file from seq 1
note: checkpoints: 1 matched" "$out"
check_eq "the final hash is the generator's (sha256 of the last line)" "$head" "$(hash_of "$L" 14)"
out=$(vf "$L"); rc=$?
check_eq "verify without a key exits 0 and notes the macs" "0 ok: 14 records, seq 1..14, 2026-12-01T04:00:01.000Z .. 2026-12-01T04:00:14.000Z, final hash $head
note: macs present but not checked (no --key-file)" "$rc $out"

# tampering, each named
cp "$L" "$T/e1"; sed -i '5s/"bytes_down":116/"bytes_down":117/' "$T/e1"
out=$(vf "$T/e1"); rc=$?
check_eq "one byte edited: exit 1, seq 5 named" "1 $T/e1:5: seq 5: edited (its line no longer matches the prev of seq 6)" "$rc $out"
out=$(vf "$T/e1" --key-file "$T/audit.key"); rc=$?
check_eq "one byte edited, with the key: the mac names seq 5" "1 $T/e1:5: seq 5: edited (mac mismatch)" "$rc $out"
cp "$L" "$T/e2"; sed -i '14s/"records":13/"records":12/' "$T/e2"
out=$(vf "$T/e2"); rc=$?
check_eq "the last record edited: invisible to the chain alone" 0 "$rc"
out=$(vf "$T/e2" --key-file "$T/audit.key"); rc=$?
check_eq "the last record edited: the mac names seq 14" "1 $T/e2:14: seq 14: edited (mac mismatch)" "$rc $out"

sed '6d' "$L" >"$T/d1"
out=$(vf "$T/d1" --key-file "$T/audit.key"); rc=$?
check_eq "a record deleted: seq 6 removed" "1 $T/d1:6: seq 6: removed (seq 6 is missing: this line has seq 7)" "$rc $out"
sed '6,8d' "$L" >"$T/d2"
out=$(vf "$T/d2"); rc=$?
check_eq "three records deleted: seq 6..8 removed" "1 $T/d2:6: seq 6: removed (seq 6..8 are missing: this line has seq 9)" "$rc $out"

{ sed -n '1,5p' "$L"; sed -n '7p' "$L"; sed -n '6p' "$L"; sed -n '8,$p' "$L"; } >"$T/s1"
out=$(vf "$T/s1" --key-file "$T/audit.key"); rc=$?
check_eq "two records swapped: reordered" "1 $T/s1:6: seq 7: reordered (seq 6 was expected here; it comes later, at $T/s1:7)" "$rc $out"
sed -n '1,5p;5p;6,$p' "$L" >"$T/s2"
out=$(vf "$T/s2"); rc=$?
check_eq "a record repeated: reordered" "1 $T/s2:6: seq 5: reordered (it repeats seq 5)" "$rc $out"

"$PY" - "$L" "$T/t1" <<'PY'
import sys
lines = open(sys.argv[1], 'rb').read().split(b'\n')
lines[6] = lines[6][:40]
open(sys.argv[2], 'wb').write(b'\n'.join(lines))
PY
out=$(vf "$T/t1"); rc=$?
check_eq "a record cut short mid-file: truncated in the middle" "1 $T/t1:7: seq 7: truncated in the middle (an incomplete record followed by more lines)" "$rc $out"

head -c -30 "$L" >"$T/p1"
out=$(vf "$T/p1" --key-file "$T/audit.key" --checkpoints "$CP"); rc=$?
check_eq "a partial last line (a crash mid-write) is only a warning: exit 0" 0 "$rc"
check_eq "the partial last line is reported as such" "ok: 13 records, seq 1..13, 2026-12-01T04:00:01.000Z .. 2026-12-01T04:00:13.000Z, final hash $(hash_of "$L" 13)
note: macs: 13 checked with the key file from seq 1
note: checkpoints: 1 matched
warning: $T/p1:14: incomplete last record ($(($(sed -n 14p "$L" | wc -c) - 30)) bytes without a final newline, as a crash during a write leaves it; not verified)" "$out"

head -n 9 "$L" >"$T/c1"
out=$(vf "$T/c1" --checkpoints "$CP"); rc=$?
check_eq "cut before a checkpoint: shorter than the checkpoint says" "1 $T/c1:10: seq 10: truncated: the log ends at seq 9 but a checkpoint names seq 11 ($CP:1)" "$rc $out"
out=$(vf "$T/c1"); rc=$?
check_eq "the same cut without checkpoints passes (the chain alone cannot see it)" 0 "$rc"
printf 'seq=11 hash=%064d\n' 0 >"$T/cpbad"
out=$(vf "$L" --checkpoints "$T/cpbad"); rc=$?
check_eq "a checkpoint with another hash: edited" "1 $L:11: seq 11: edited (its hash differs from the checkpoint at $T/cpbad:1)" "$rc $out"

out=$(vf "$L" --key-file "$T/other.key"); rc=$?
check_eq "the wrong key: mac mismatch at seq 1" "1 $L:1: seq 1: edited (mac mismatch)" "$rc $out"
printf 'sluice-audit-key v1 1 zz\n' >"$T/bad.key"
out=$(vf "$L" --key-file "$T/bad.key"); rc=$?
check_eq "a malformed key file: exit 1, says why" "1 sluice audit verify: key file $T/bad.key: the key in the key file is not 64 hex digits" "$rc $out"

# rotation: the chain continues across files, given oldest first
head -n 6 "$L" >"$T/r.jsonl.20261201T040006Z"; tail -n +7 "$L" >"$T/r.jsonl"
out=$(vf "$T/r.jsonl.20261201T040006Z" "$T/r.jsonl" --key-file "$T/audit.key"); rc=$?
check_eq "rotated files oldest first: ok" "0 ok: 14 records" "$rc $(printf '%s' "$out" | head -n1 | cut -d, -f1)"
out=$(vf "$T/r.jsonl" "$T/r.jsonl.20261201T040006Z"); rc=$?
check_eq "rotated files newest first: says so" "1 $T/r.jsonl.20261201T040006Z:1: seq 1: reordered (it comes after seq 14; give rotated files oldest first)" "$rc $out"
out=$(vf "$T/r.jsonl" --key-file "$T/audit.key"); rc=$?
check_eq "only the current file: its first prev and the earlier macs cannot be checked, and it says so" "0 ok: 8 records, seq 7..14, 2026-12-01T04:00:07.000Z .. 2026-12-01T04:00:14.000Z, final hash $head
note: the prev of seq 7 is not checked: the chain starts before these files
note: macs: 8 checked with the key file from seq 1" "$rc $out"

# a too-long line is an error naming its line, not a crash
{ head -n 2 "$L"; head -c 1100000 /dev/zero | tr '\0' 'a'; echo; tail -n +3 "$L"; } >"$T/long"
out=$(vf "$T/long"); rc=$?
check_eq "a line over 1 MiB: unreadable, named" "1 $T/long:3: seq 3: unreadable (the line is longer than 1048576 bytes)" "$rc $out"

# query: aligned table; hostile values escaped
H='TIME                           SEQ  TYPE                  SANDBOX           VERDICT  STATUS  METHOD   HOST                              PATH/DETAIL'
out=$("$S" audit query "$L" --sandbox agent-2 2>&1); rc=$?
check_eq "query --sandbox agent-2 (table)" "0 $H
2026-12-01T04:00:08.000Z         8  denial                agent-2           deny          -  -        x\\x1b[31m.evil.test               sni=x\\x1b[31m.evil.test dest=10.200.2.1:443 rule=tls reason=client TLS handshake failed
2026-12-01T04:00:09.000Z         9  request               agent-2           allow         -  GET      api.github.com                    /a\\x0d\\x0a{\"type\":\"request\",\"x\":\"\\x1b[2J\"}
2026-12-01T04:00:10.000Z        10  response              agent-2           allow       404  GET      api.github.com                    /a\\x0d\\x0a{\"type\":\"request\",\"x\":\"\\x1b[2J\"} up=0 down=9 ms=3" "$rc $out"
check_eq "query output holds no raw ESC or CR" 0 "$(printf '%s' "$out" | tr -cd '\033\r' | wc -c)"
out=$("$S" audit query "$L" --host api.github.com --status 200 2>&1)
check_eq "query --host with --status finds the response through its request" "$H
2026-12-01T04:00:05.000Z         5  response              agent-1           allow       200  GET      api.github.com                    /user up=0 down=116 ms=25 scrubbed=github" "$out"
out=$("$S" audit query "$L" --secret slack --format json 2>&1)
check_eq "query --secret slack --format json prints the lines as they are" "$(sed -n '7p' "$L")" "$out"
out=$("$S" audit query "$L" --secret github --format json 2>&1)
check_eq "query --secret github: the request, the scrub and the response" "$(sed -n '3,5p' "$L")" "$out"
out=$("$S" audit query "$L" --verdict deny --format json 2>&1)
check_eq "query --verdict deny: the denied request, the attempt and the denial" "$(sed -n '6,8p' "$L")" "$out"
out=$("$S" audit query "$L" --type start,stop,checkpoint 2>&1)
check_eq "query --type list" "$H
2026-12-01T04:00:01.000Z         1  start                 -                 -             -  -        -                                 run=0123456789abcdef version=0.1.0 pid=7
2026-12-01T04:00:11.000Z        11  checkpoint            -                 -             -  -        -                                 head_seq=10
2026-12-01T04:00:14.000Z        14  stop                  -                 -             -  -        -                                 reason=signal records=13" "$out"
out=$("$S" audit query "$L" --since 2026-12-01T04:00:12Z --until 2026-12-01T04:00:13.000Z --format json 2>&1)
check_eq "query --since/--until (inclusive)" "$(sed -n '12,13p' "$L")" "$out"
out=$("$S" audit query "$L" --since 100000d --format json 2>&1 | wc -l)
check_eq "query --since 100000d (relative): everything" 14 "$out"
out=$("$S" audit query "$L" --until 100000d --format json 2>&1); rc=$?
check_eq "query --until 100000d (relative): nothing, exit 0" "0 " "$rc $out"
out=$("$S" audit query "$T/p1" --type stop 2>&1)
check_match "query warns about an incomplete last record" "$T/p1:14: skipped: incomplete last record" "$out"

# summary
out=$("$S" audit summary "$L" 2>&1); rc=$?
check_eq "summary per sandbox" "0 SANDBOX  REQUESTS  DENIALS  EXFILTRATION  SECRETS     HOSTS
agent-1         3        1             1  github (1)  api.github.com (1), pypi.org (1)
agent-2         1        1             0  -           api.github.com (1)" "$rc $out"
out=$("$S" audit summary "$L" --until 2026-12-01T04:00:05Z 2>&1)
check_eq "summary --until" "SANDBOX  REQUESTS  DENIALS  EXFILTRATION  SECRETS     HOSTS
agent-1         1        0             0  github (1)  api.github.com (1)" "$out"

# tail: the last N, then follow across a rotation
out=$("$S" audit tail -n 2 "$L" --format json 2>&1)
check_eq "tail -n 2" "$(sed -n '13,14p' "$L")" "$out"
out=$("$S" audit tail "$L" --format json | wc -l)
check_eq "tail prints the last 10 by default" 10 "$out"
nlines_ge() { [ "$(wc -l <"$1")" -ge "$2" ]; }
F=$T/live.jsonl
head -n 3 "$L" >"$F"
spawn "$T/tail.out" "$S" audit tail -f "$F" --format json
TAILPID=$LASTPID
check "tail -f prints the last lines first" eventually 5 nlines_ge "$T/tail.out" 3
sed -n '4,5p' "$L" >>"$F"
check "tail -f follows appended lines" eventually 5 nlines_ge "$T/tail.out" 5
sed -n '6p' "$L" | head -c 50 >>"$F"   # half a line: held until complete
sleep 0.6
check_eq "tail -f holds a partial line back" 5 "$(wc -l <"$T/tail.out")"
sed -n '6p' "$L" | tail -c +51 >>"$F"
mv "$F" "$F.20261201T040006Z"
sed -n '7,9p' "$L" >"$F.new"; mv "$F.new" "$F"
check "tail -f survives rotation" eventually 5 nlines_ge "$T/tail.out" 9
kill "$TAILPID" 2>/dev/null; wait "$TAILPID" 2>/dev/null
check_eq "tail -f printed every record once, in order" "$(sed -n '1,9p' "$L")" "$(cat "$T/tail.out")"
spawn "$T/tail2.out" "$S" audit tail -f -n 0 "$F" --type request
TAILPID=$LASTPID
eventually 5 test -s "$T/tail2.out"
sed -n '10,12p' "$L" >>"$F"
check "tail -f with a filter" eventually 5 nlines_ge "$T/tail2.out" 2
kill "$TAILPID" 2>/dev/null; wait "$TAILPID" 2>/dev/null
check_eq "tail -f --type request shows the header and the one new request" "$H
2026-12-01T04:00:12.000Z        12  request               agent-1           allow         -  GET      pypi.org                          /simple/" "$(cat "$T/tail2.out")"

# usage
for c in "audit" "audit bogus" "audit verify" "audit keygen" "audit query" "audit tail" "audit tail a b" \
         "audit query $L --verdict maybe" "audit query $L --since yesterday" "audit query $L --status 9" \
         "audit query $L --format xml" "audit summary $L --host x" "audit verify $L --bogus"; do
  # shellcheck disable=SC2086
  "$S" $c >/dev/null 2>&1; rc=$?
  check_eq "bad usage '$c' exits 2" 2 "$rc"
done
for c in "audit --help" "audit verify --help" "audit keygen --help" "audit query --help" "audit tail --help" "audit summary --help"; do
  # shellcheck disable=SC2086
  out=$("$S" $c 2>&1); rc=$?
  check_eq "sluice $c exits 0" 0 "$rc"
  check_match "sluice $c prints usage" '^usage: sluice audit' "$out"
done
out=$("$S" audit verify "$T/nothing" 2>&1); rc=$?
check_eq "verify of a missing file exits 1 and says why" "1 sluice audit verify: $T/nothing: No such file or directory" "$rc $out"
out=$("$S" audit query "$T/nothing" 2>&1); rc=$?
check_eq "query of a missing file exits 1" 1 "$rc"

# the mcp fields (docs/audit-schema.md): a signed log of MCP calls, one of them a batch
cat >"$T/mcpspec" <<'EOF'
{"type":"request","sandbox":"agent-1","id":"7-1","client":"10.200.1.2","host":"mcp.test","method":"POST","path":"/mcp","http_version":"1.1","verdict":"allow","rule":"issues","mcp_method":"tools/call","tool":"create_issue","rpc_id":3,"args_of":{"repo":"widgets","owner":"acme","title":"secret plan"},"args":{"$.repo":"widgets"},"conn":7}
{"type":"response","sandbox":"agent-1","id":"7-1","status":200,"bytes_up":90,"bytes_down":40,"duration_ms":5,"upstream_tls":true,"conn":7}
{"type":"request","sandbox":"agent-2","id":"8-1","client":"10.200.2.2","host":"mcp.test","method":"POST","path":"/mcp","http_version":"1.1","verdict":"deny","rule":"no-deletes","status":200,"mcp_batch":[{"mcp_method":"tools/call","tool":"create_issue","rpc_id":"a","verdict":"allow","rule":"issues"},{"mcp_method":"tools/call","tool":"delete_repository","rpc_id":"b","verdict":"deny","rule":"no-deletes"}],"conn":8}
{"type":"request","sandbox":"agent-2","id":"9-1","client":"10.200.2.2","host":"mcp.test","method":"POST","path":"/mcp","http_version":"1.1","verdict":"allow","rule":"lifecycle","mcp_method":"tools/list","rpc_id":4,"conn":9}
{"type":"response","sandbox":"agent-2","id":"9-1","status":200,"bytes_up":50,"bytes_down":900,"duration_ms":4,"upstream_tls":true,"mcp_method":"tools/list","removed":3,"conn":9}
EOF
"$S" audit keygen "$T/mcp.key" >/dev/null 2>&1
M=$T/mcp.jsonl
"$PY" "$T/gen.py" "$M" --key "$T/mcp.key" <"$T/mcpspec" >/dev/null
out=$("$S" audit verify "$M" --key-file "$T/mcp.key" 2>&1); rc=$?
check_match "verify: a log with the mcp fields verifies with its key" "^0 ok: 5 records" "$rc $out"
out=$("$S" audit query "$M" --tool create_issue --format json 2>&1); rc=$?
check_eq "query --tool: the call, its response by the join, the batch that names it" "0 7-1 7-1 8-1" \
  "$rc $(printf '%s\n' "$out" | "$PY" -c 'import json,sys; print(" ".join(json.loads(l)["id"] for l in sys.stdin))')"
out=$("$S" audit query "$M" --tool delete_repository 2>&1)
check_match "query --tool: a batch element" "request .* deny .* POST +mcp.test +/mcp batch=2" "$out"
check_eq "query --tool: one row and the header" 2 "$(printf '%s\n' "$out" | wc -l)"
out=$("$S" audit query "$M" --tool Create_issue --format json 2>&1); rc=$?
check_eq "query --tool is exact (tool names are case-sensitive)" "0 " "$rc $out"
out=$("$S" audit query "$M" --tool create_issue 2>&1)
check "the table shows no argument value" bash -c '! grep -q -e widgets -e "secret plan" <<<"$1"' _ "$out"
check_match "the table shows the method, tool and id" "/mcp mcp=tools/call tool=create_issue rpc_id=3" "$out"
out=$("$S" audit query "$M" --type response --format table 2>&1)
check_match "a filtered list's response shows what it removed" "removed=3" "$out"
out=$("$S" audit summary "$M" 2>&1); rc=$?
check_eq "summary per sandbox, then per tool" "0 SANDBOX  REQUESTS  DENIALS  EXFILTRATION  SECRETS  HOSTS
agent-1         1        0             0  -        mcp.test (1)
agent-2         2        1             0  -        mcp.test (1)

TOOL                  CALLS  DENIALS   HELD  SANDBOXES
create_issue              2        0      0  agent-1 (1), agent-2 (1)
delete_repository         1        1      0  agent-2 (1)" "$rc $out"
"$S" audit summary "$M" --tool create_issue >/dev/null 2>&1; rc=$?
check_eq "summary takes no --tool" 2 "$rc"

finish
