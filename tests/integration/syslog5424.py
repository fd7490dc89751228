#!/usr/bin/python3
"""syslog5424.py FILE INPUT AUDIT_FILE [ENTERPRISE]: checks what test_audit_siem's rsyslogd received on INPUT
(imtcp / imudp): each line of FILE is a JSON object {"input","ver","msgid","sd","raw"} (rsyslog's template).
Every raw message must parse as RFC 5424 (header, one SD-ELEMENT sluice@ENTERPRISE with section 6.3.3 escapes,
the JSON line as MSG), rsyslog must have parsed it as version 1 with the same MSGID, the SD-PARAMs must carry the
record's members, "hash" must be the SHA-256 of the MSG, and the seqs must be consecutive, each message's "prev"
the "hash" before it, and each MSG byte for byte a line of AUDIT_FILE.
Prints "ok N FIRST LAST" or "bad: WHY" (exit 1)."""
import hashlib, json, re, sys

path, want_input, audit_path = sys.argv[1], sys.argv[2], sys.argv[3]
pen = sys.argv[4] if len(sys.argv) > 4 else "32473"

HEAD = re.compile(r'<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) ')
NAME = r'[!-~]{1,32}'   # PRINTUSASCII; '=', ' ', ']', '"' are excluded below


def bad(why):
    print("bad:", why)
    sys.exit(1)


def parse_sd(s, i):
    """RFC 5424 6.3: one or more SD-ELEMENTs from s[i]; returns ([(id, {name: value})], index after)."""
    out = []
    if s[i] != '[':
        bad("no SD-ELEMENT")
    while i < len(s) and s[i] == '[':
        i += 1
        m = re.compile(NAME).match(s, i)
        j = i
        while j < len(s) and s[j] not in ' ]' and s[j] not in '="':
            j += 1
        sd_id = s[i:j]
        if not sd_id or len(sd_id) > 32:
            bad("bad SD-ID %r" % sd_id)
        i = j
        params = {}
        while s[i] == ' ':
            i += 1
            j = i
            while s[j] not in '= ]"':
                j += 1
            name = s[i:j]
            if not (1 <= len(name) <= 32) or any(c < '!' or c > '~' for c in name):
                bad("bad PARAM-NAME %r" % name)
            if s[j] != '=' or s[j + 1] != '"':
                bad("PARAM %s: no =\"" % name)
            i = j + 2
            v = []
            while True:
                c = s[i]
                if c == '\\' and s[i + 1] in '"\\]':
                    v.append(s[i + 1]); i += 2
                elif c == '"':
                    i += 1; break
                elif c in '"]' or c == '\\' and False:
                    bad("unescaped %r in %s" % (c, name))
                else:
                    v.append(c); i += 1
            if name in params:
                bad("PARAM %s twice" % name)
            params[name] = "".join(v)
        if s[i] != ']':
            bad("SD-ELEMENT not closed at %d" % i)
        i += 1
        out.append((sd_id, params))
    return out, i


audit_lines = set(open(audit_path, encoding="ascii").read().split("\n"))
n, prev_seq, prev_hash, first = 0, None, None, None
for row in open(path, encoding="utf-8"):
    r = json.loads(row)
    if r["input"] != want_input:
        continue
    raw = r["raw"]
    m = HEAD.match(raw)
    if not m:
        bad("not an RFC 5424 header: %r" % raw[:80])
    pri, ts, host, app, procid, msgid = m.groups()
    if pri != "86" or app != "sluice":
        bad("PRI %s APP-NAME %s" % (pri, app))
    if not re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z', ts):
        bad("TIMESTAMP %s" % ts)
    if r["ver"] != "1" or r["msgid"] != msgid:
        bad("rsyslog parsed version %r msgid %r, the header says %r" % (r["ver"], r["msgid"], msgid))
    elems, i = parse_sd(raw, m.end())
    if raw[i] != ' ':
        bad("no SP before MSG")
    msg = raw[i + 1:]
    if r["sd"] != raw[m.end():i]:
        bad("rsyslog's STRUCTURED-DATA differs from the raw one")
    if len(elems) != 1 or elems[0][0] != "sluice@" + pen:
        bad("SD-IDs %r" % [e[0] for e in elems])
    p = elems[0][1]
    rec = json.loads(msg)
    if msg not in audit_lines:
        bad("MSG of seq %s is not a line of the audit file" % rec.get("seq"))
    if msgid != rec["type"]:
        bad("MSGID %s for a %s record" % (msgid, rec["type"]))
    if p.get("hash") != hashlib.sha256(msg.encode()).hexdigest():
        bad("hash of seq %s" % rec["seq"])
    for k, v in rec.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                if not isinstance(v2, (dict, list)) and p.get(k + "." + k2) != (str(v2).lower() if isinstance(v2, bool) else str(v2)):
                    bad("SD-PARAM %s.%s" % (k, k2))
        elif isinstance(v, bool):
            if p.get(k) != str(v).lower():
                bad("SD-PARAM %s" % k)
        elif isinstance(v, list):
            if json.loads(p.get(k, "null")) != v:
                bad("SD-PARAM %s (array)" % k)
        elif v is not None and p.get(k) != str(v):
            bad("SD-PARAM %s: %r, the record has %r" % (k, p.get(k), v))
    seq = int(p["seq"])
    if prev_seq is not None:
        if seq != prev_seq + 1:
            bad("gap: seq %d after %d" % (seq, prev_seq))
        if p["prev"] != prev_hash:
            bad("seq %d: prev is not the hash of seq %d" % (seq, prev_seq))
    if first is None:
        first = seq
    prev_seq, prev_hash = seq, p["hash"]
    n += 1
if n == 0:
    bad("nothing received on " + want_input)
print("ok", n, first, prev_seq)
