#!/usr/bin/python3
"""judge_diff.py - the differential test of the one judge (test_judge_diff.sh): `sluice policy test` is an oracle
for the gateway.  Debian's /usr/bin/python3 with python3-yaml and python3-h2.

    judge_diff.py gen POLICY EXAMPLE_CASES SEED N OUT_CASES OUT_LIST
        every case of EXAMPLE_CASES (its json:/form: maps written as the CLI writes them) then N generated requests
        (random methods; paths with dot segments, %-encodings and ; params; JSON and form bodies; GraphQL; git
        pushes) for POLICY's hosts, as a cases file whose every expectation is impossible (so `policy test` prints
        each decision) and as a JSON list of the requests (OUT_LIST) for the gateway side.  Each URL carries
        _dq=<n> in its query, the same on both sides, so the audit record of each request is found.
    judge_diff.py conf POLICY SANDBOXES_JSON
        prints POLICY for the gateway: without its ca: (the harness gives one), each host allow_private (they reach
        the echo upstream through upstream.resolve), and the sandboxes of SANDBOXES_JSON by source address.
    judge_diff.py cli SLUICE POLICY CASES LIST OUT
        runs `SLUICE policy test POLICY CASES` and writes each case's (verdict, status, rule) to OUT.
    judge_diff.py gw h1|h2 PROXY_PORT CA_PEM ADMIN_SOCK AUDIT LIST SANDBOX_ADDRS_JSON OUT
        sends every request of LIST in order through the explicit proxy (CONNECT, TLS, HTTP/1.1 or HTTP/2, one
        connection each, from the sandbox's source address), rejecting every hold as it appears (admin socket),
        then reads each one's outcome from the audit records (and the CONNECT answer for connection refusals).
    judge_diff.py cmp NAME CLI GW
        compares; prints "NAME: N cases, N agree" and each disagreement; exit 1 on any.

Verdicts compare as: hold (a held request; the status is not compared: the CLI says what follows an approval),
limited (429), allow (200), deny (anything else); with the status and the rule id.
"""
import json
import random
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

import yaml

TIMEOUT = 15

# ---------------------------------------------------------------- the CLI's writing of json: and form: maps


def json_number_text(s):
    return re.fullmatch(r"-?(0|[1-9][0-9]*)[0-9.eE+-]*", s) is not None


def json_str(s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif c < 0x20:
            out.append("\\u%04x" % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def to_json(n):
    """cli/policy_cases.c to_json: plain scalars that look like numbers, booleans or null keep their spelling."""
    if isinstance(n, yaml.ScalarNode):
        v = n.value
        if n.style is None and (json_number_text(v) or v in ("true", "false", "null")):
            return v
        if n.style is None and v in ("", "~"):
            return "null"
        return json_str(v)
    if isinstance(n, yaml.SequenceNode):
        return "[" + ",".join(to_json(e) for e in n.value) + "]"
    return "{" + ",".join(json_str(k.value) + ":" + to_json(v) for k, v in n.value) + "}"


def mcp_message(n):
    """cli/policy_cases.c mcp_message: one JSON-RPC message of an mcp: case."""
    m = dict((k.value, v) for k, v in n.value)
    method = m["method"].value if "method" in m else "tools/call"
    out = '{"jsonrpc":"2.0"'
    if "id" in m:
        out += ',"id":' + to_json(m["id"])
    elif not method.startswith("notifications/"):
        out += ',"id":1'
    out += ',"method":' + json_str(method)
    if "params" in m:
        out += ',"params":' + to_json(m["params"])
    elif "tool" in m or "uri" in m or "arguments" in m:
        parts = []
        if "tool" in m:
            parts.append('"name":' + json_str(m["tool"].value))
        if "uri" in m:
            parts.append('"uri":' + json_str(m["uri"].value))
        if "arguments" in m:
            parts.append('"arguments":' + to_json(m["arguments"]))
        out += ',"params":{' + ",".join(parts) + "}"
    return out + "}"


def urlenc(s):
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-._~" else
                   "".join("%%%02X" % b for b in ch.encode("utf-8")) for ch in s)


def to_form(n):
    if isinstance(n, yaml.ScalarNode):
        return n.value
    parts = []
    for k, v in n.value:
        vals = v.value if isinstance(v, yaml.SequenceNode) else [v]
        for e in vals:
            parts.append(urlenc(k.value) + "=" + urlenc(e.value))
    return "&".join(parts)


def example_requests(path):
    """The requests of an example cases file, bodies as the CLI builds them."""
    root = yaml.compose(open(path, encoding="utf-8"))
    if isinstance(root, yaml.MappingNode):
        root = dict((k.value, v) for k, v in root.value)["cases"]
    out = []
    for c in root.value:
        cm = dict((k.value, v) for k, v in c.value)
        rm = dict((k.value, v) for k, v in cm["request"].value)
        rq = {"name": cm["name"].value,
              "method": rm["method"].value if "method" in rm else ("POST" if "mcp" in rm else "GET"),
              "url": rm["url"].value, "headers": [], "body": None, "ct": None, "ct_in_headers": False}
        if "headers" in rm:
            for k, v in rm["headers"].value:
                for e in (v.value if isinstance(v, yaml.SequenceNode) else [v]):
                    rq["headers"].append([k.value, e.value])
                    if k.value.lower() == "content-type":
                        rq["ct"], rq["ct_in_headers"] = e.value, True
        if "json" in rm:
            n = rm["json"]
            rq["body"] = n.value if isinstance(n, yaml.ScalarNode) else to_json(n)
            rq["ct"] = rq["ct"] or "application/json"
        elif "form" in rm:
            rq["body"] = to_form(rm["form"])
            rq["ct"] = rq["ct"] or "application/x-www-form-urlencoded"
        elif "body" in rm:
            rq["body"] = rm["body"].value
        elif "mcp" in rm:
            n = rm["mcp"]
            msgs = n.value if isinstance(n, yaml.SequenceNode) else [n]
            text = ",".join(mcp_message(m) for m in msgs)
            rq["body"] = "[" + text + "]" if isinstance(n, yaml.SequenceNode) else text
            rq["ct"] = rq["ct"] or "application/json"
        if "content_type" in rm:
            rq["ct"], rq["ct_in_headers"] = rm["content_type"].value, False
        if "sandbox" in rm:
            rq["sandbox"] = rm["sandbox"].value
        out.append(rq)
    return out

# ---------------------------------------------------------------- generated requests


def mutate_path(rnd, p):
    """The path of a rule, read another way: dot segments, %-encodings, ; parameters, slashes, case."""
    segs = p.split("/")
    k = rnd.randrange(12)
    i = rnd.randrange(1, len(segs)) if len(segs) > 1 else 0
    if k == 0:
        segs.insert(i, ".")
    elif k == 1:
        segs.insert(i, "x")
        segs.insert(i + 1, "..")
    elif k == 2 and segs[i]:
        j = rnd.randrange(len(segs[i]))
        ch = segs[i][j]
        segs[i] = segs[i][:j] + "%%%02X" % ord(ch) + segs[i][j + 1:]   # %-encoded: decoded if unreserved
    elif k == 3:
        segs[i] += ";jsessionid=" + str(rnd.randrange(100))
    elif k == 4:
        segs.insert(i, "..;")
    elif k == 5:
        segs.insert(i, "")                                             # a double slash
    elif k == 6:
        segs[i] = segs[i].upper()
    elif k == 7:
        segs.append("")                                                # a trailing slash
    elif k == 8 and i > 1:
        segs[i - 1] += "%2F" + segs[i]
        del segs[i]
    elif k == 9:
        segs.insert(1, "..")                                           # above the root: 400
    elif k == 10:
        segs[i] += "%2e"
    return "/".join(segs) or "/"


def pkt(line):
    return "%04x%s" % (len(line) + 4, line)


def git_push(rnd):
    z, a, b = "0" * 40, "1" * 40, "2" * 40
    refs = ["refs/heads/agent/x", "refs/heads/main", "refs/heads/agent/deep/y", "refs/heads/release", "refs/tags/v1"]
    n = rnd.randrange(1, 3)
    body = ""
    for j in range(n):
        old, new = rnd.choice([(a, b), (z, b), (a, z)])
        ln = "%s %s %s" % (old, new, rnd.choice(refs))
        if j == 0:
            ln += "\0report-status side-band-64k"
        body += pkt(ln + "\n")
    r = rnd.randrange(10)
    if r == 0:
        return "zzzz" + body                                           # malformed
    if r == 1:
        return body                                                    # no flush: cut short
    return body + "0000PACK" + "x" * rnd.randrange(0, 64)


def jdump(rnd, d):
    s = json.dumps(d, separators=(",", ":"))
    if rnd.randrange(12) == 0 and d:                                   # a duplicate key
        k = rnd.choice(list(d))
        s = s[:-1] + "," + json.dumps(k) + ":" + json.dumps("dup") + "}"
    if rnd.randrange(15) == 0:                                         # a key twinned by case
        k = rnd.choice(list(d)) if d else "k"
        s = s[:-1] + ("," if d else "") + json.dumps(k.upper()) + ":1}"
    if rnd.randrange(25) == 0:
        s = s[:-1]                                                     # does not parse
    return s


def form(rnd, d):
    items = list(d.items())
    if rnd.randrange(10) == 0 and items:
        items.append((items[0][0], "other"))                           # a field twice
    if rnd.randrange(12) == 0:
        items.append(("_method", rnd.choice(["DELETE", "PUT", "post"])))
    return "&".join(urlenc(k) + "=" + urlenc(str(v)) for k, v in items)


# per host: (method, path, body maker) shapes that reach the example rules, and some that do not
def shapes(rnd, host):
    J, F, G, R = "application/json", "application/x-www-form-urlencoded", "application/x-git-receive-pack-request", None
    if host == "api.github.com":
        return rnd.choice([
            ("GET", "/repos/acme/widgets", R, None),
            ("HEAD", "/repos/other/thing/issues", R, None),
            ("GET", rnd.choice(["/repos/acme/widgets/hooks/1", "/repos/acme/widgets/keys", "/orgs/acme/members/x",
                                "/repos/a/b/branches/main/protection", "/admin"]), R, None),
            ("POST", "/repos/acme/widgets/pulls", J, lambda: jdump(rnd, {
                "title": "t", "head": rnd.choice(["agent/fix", "feature/x", "agent/a b", "agent/ok-1"]),
                "base": rnd.choice(["main", "release", "Main"])})),
            ("POST", "/repos/acme/widgets/issues/%d/comments" % rnd.randrange(1, 50), J,
             lambda: jdump(rnd, rnd.choice([{"body": "done"}, {"text": "x"}, {}]))),
            ("POST", "/graphql", J, lambda: json.dumps({"query": rnd.choice([
                "query { viewer { login } }", "{ viewer { login } }", "mutation { addStar(input: {}) { x } }",
                "query A { a } mutation B { b }", "subscription { s }", "query { a } fragment F on T { b }",
                "not graphql {"])})),
            ("DELETE", "/repos/acme/widgets", R, None),
        ])
    if host == "github.com":
        return rnd.choice([
            ("GET", "/acme/widgets.git/info/refs?service=" + rnd.choice(["git-upload-pack", "git-receive-pack",
                                                                        "other"]), R, None),
            ("GET", "/acme/widgets/info/refs", R, None),
            ("POST", "/acme/widgets.git/git-upload-pack", "application/x-git-upload-pack-request", lambda: "0000"),
            ("POST", rnd.choice(["/acme/widgets.git/git-receive-pack", "/acme/widgets/git-receive-pack"]), G,
             lambda: git_push(rnd)),
            ("POST", "/other/repo.git/git-receive-pack", G, lambda: git_push(rnd)),
        ])
    if host == "api.openai.com":
        return ("POST", rnd.choice(["/v1/chat/completions"] * 4 + ["/v1/files", "/v1/fine_tuning/jobs"]), J,
                lambda: jdump(rnd, dict([("model", rnd.choice(["gpt-4o", "gpt-4o-mini", "o1-pro", "GPT-4o"])),
                                         ("messages", [])] + ([("n", 2)] if rnd.randrange(5) == 0 else []) +
                                        ([("tools", [{"type": "function"}])] if rnd.randrange(4) == 0 else []))))
    if host == "api.anthropic.com":
        return ("POST", rnd.choice(["/v1/messages"] * 4 + ["/v1/messages/batches"]), J,
                lambda: jdump(rnd, {"model": rnd.choice(["claude-sonnet-4-20250514", "claude-3-5-haiku-20241022",
                                                         "claude-opus-4-20250514", "claude-sonnet-4-2025051"]),
                                    "max_tokens": rnd.choice([1, 1024, 4096, 4097, 0, -1, 2.5, "10"])}))
    if host == "slack.com":
        return rnd.choice([
            ("POST", "/api/chat.postMessage", J, lambda: jdump(rnd, {"channel": rnd.choice(
                ["C0BOTS", "C0ALERTS", "C0GENERAL", "c0bots"]), "text": "hi"})),
            ("POST", "/api/chat.postMessage", F, lambda: form(rnd, {"channel": rnd.choice(
                ["C0BOTS", "C0ALERTS", "C0GENERAL"]), "text": "hi there"})),
            ("POST", rnd.choice(["/api/files.upload", "/api/files.getUploadURLExternal"]), F,
             lambda: form(rnd, {"channels": "C0BOTS"})),
            ("POST", "/api/auth.test", R, None),
            ("GET", "/api/conversations.history?channel=C0BOTS", R, None),
        ])
    if host == "api.stripe.com":
        return rnd.choice([
            ("POST", "/v1/payment_intents", F, lambda: form(rnd, {
                "amount": rnd.choice([1, 500, 2500, 5000, 5001, 0, -5, "12.5", "abc"]),
                "currency": rnd.choice(["usd", "usd", "eur", "USD"])})),
            ("POST", "/v1/refunds", F, lambda: form(rnd, rnd.choice([{"payment_intent": "pi_1"}, {"amount": 1}]))),
            ("GET", rnd.choice(["/v1/charges", "/v1/customers/cus_1", "/v2/x"]), R, None),
            ("DELETE", "/v1/customers/cus_1", R, None),
        ])
    return ("GET", "/", R, None)


def generated(rnd, hosts, n, sandboxes):
    out = []
    for i in range(n):
        host = rnd.choice(hosts) if rnd.randrange(20) else "unlisted.example.org"
        method, path, ct, body = shapes(rnd, host)
        path, _, query = path.partition("?")
        if rnd.randrange(3) == 0:
            path = mutate_path(rnd, path)
        if rnd.randrange(6) == 0:
            method = rnd.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
        headers = []
        if rnd.randrange(15) == 0:
            headers.append(["X-HTTP-Method-Override", rnd.choice(["DELETE", method])])
        if rnd.randrange(20) == 0:
            query = (query + "&" if query else "") + "_method=" + rnd.choice(["DELETE", method])
        rq = {"name": "g%d" % i, "method": method, "url": "https://%s%s%s" % (host, path, "?" + query if query else ""),
              "headers": headers, "body": body() if body else None, "ct": ct, "ct_in_headers": False}
        if rq["body"] is None and method in ("POST", "PUT") and rnd.randrange(4) == 0:
            rq["body"], rq["ct"] = "x=1", "application/x-www-form-urlencoded"
        if rq["body"] is not None and method == "GET" and rnd.randrange(2):
            rq["body"] = None
        if rnd.randrange(25) == 0 and rq["ct"]:
            rq["headers"].append(["Content-Type", "text/plain"])     # two Content-Types: none known
            rq["headers"].append(["Content-Type", rq["ct"]])
            rq["ct_in_headers"] = True
        if rq["body"] and rnd.randrange(40) == 0:
            rq["body"] += " " * (1 << 20)                             # over the rules' max_body (1 MiB): 413
        if sandboxes and rnd.randrange(3):
            rq["sandbox"] = rnd.choice(sandboxes)
        out.append(rq)
    return out


def tag(rq, i):
    """The URL with _dq=<i> in its query: the same on both sides, so the gateway's audit record is found."""
    u = rq["url"]
    rq["url"] = u + ("&" if "?" in u else "?") + "_dq=%d" % i
    rq["id"] = i


def ystr(s):
    return json.dumps(s)  # a JSON string is a YAML double-quoted scalar


def write_cases(reqs, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# generated by judge_diff.py: every expectation is impossible, so each decision is printed\ncases:\n")
        for rq in reqs:
            f.write("  - name: c%d\n    request:\n" % rq["id"])
            f.write("      method: %s\n      url: %s\n" % (ystr(rq["method"]), ystr(rq["url"])))
            if rq["headers"]:
                f.write("      headers:\n")
                names = {}
                for k, v in rq["headers"]:
                    names.setdefault(k, []).append(v)
                for k, vs in names.items():
                    f.write("        %s: [%s]\n" % (ystr(k), ", ".join(ystr(v) for v in vs)))
            if rq["body"] is not None:
                f.write("      body: %s\n" % ystr(rq["body"]))
            if rq["ct"] is not None and not rq["ct_in_headers"]:
                f.write("      content_type: %s\n" % ystr(rq["ct"]))
            if rq.get("sandbox"):
                f.write("      sandbox: %s\n" % ystr(rq["sandbox"]))
            f.write("    expect: { verdict: allow, rule: \"-never-\" }\n")


def cmd_gen(policy, examples, seed, n, out_cases, out_list):
    pol = yaml.safe_load(open(policy, encoding="utf-8"))
    hosts = sorted(pol["hosts"])
    reqs = example_requests(examples)
    sandboxes = sorted({rq["sandbox"] for rq in reqs if rq.get("sandbox")})
    reqs += generated(random.Random(int(seed)), hosts, int(n), sandboxes)
    for i, rq in enumerate(reqs):
        tag(rq, i)
    write_cases(reqs, out_cases)
    json.dump(reqs, open(out_list, "w"))
    print(json.dumps({s: "127.0.0.%d" % (10 + k) for k, s in enumerate(sandboxes)}))

# ---------------------------------------------------------------- the CLI's side


FAIL_RE = re.compile(r"^FAIL [^\n]*?: c(\d+): .*\(decided: (\S+) by rule '([^']*)'.*, status (\d+)\)$")


def cmd_cli(sluice, policy, cases, listf, out):
    reqs = json.load(open(listf))
    p = subprocess.run([sluice, "policy", "test", policy, cases], capture_output=True, text=True, timeout=120)
    got = {}
    for ln in p.stdout.splitlines():
        m = FAIL_RE.match(ln)
        if m:
            got[int(m.group(1))] = {"verdict": m.group(2), "rule": m.group(3), "status": int(m.group(4))}
    if len(got) != len(reqs):
        sys.exit("cli: %d decisions for %d cases (rc %d): %s" % (len(got), len(reqs), p.returncode, p.stderr[-500:]))
    json.dump(got, open(out, "w"))

# ---------------------------------------------------------------- the gateway's side


def connect(port, src, authority, ctx, alpn):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.") else 0
    if status != 200:
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                rest += d
        except OSError:
            pass
        s.close()
        return None, status, rest
    ctx.set_alpn_protocols([alpn])
    t = ctx.wrap_socket(s, server_hostname=authority.rsplit(":", 1)[0])
    return t, 200, b""


def h1_request(t, rq, host, path):
    lines = ["%s %s HTTP/1.1" % (rq["method"], path), "Host: " + host, "Connection: close"]
    for k, v in rq["headers"]:
        lines.append("%s: %s" % (k, v))
    body = (rq["body"] or "").encode("utf-8")
    if rq["ct"] is not None and not rq["ct_in_headers"]:
        lines.append("Content-Type: " + rq["ct"])
    if rq["body"] is not None:
        lines.append("Content-Length: %d" % len(body))
    t.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body)
    buf = b""
    try:
        while True:
            d = t.recv(65536)
            if not d:
                break
            buf += d
    except (OSError, ssl.SSLError):
        pass
    m = re.match(rb"HTTP/1\.1 (\d+)", buf)
    return int(m.group(1)) if m else 0


def h2_request(t, rq, host, path):
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                                                      validate_outbound_headers=False))
    conn.initiate_connection()
    body = (rq["body"] or "").encode("utf-8")
    hdrs = [(":method", rq["method"]), (":path", path), (":scheme", "https"), (":authority", host)]
    for k, v in rq["headers"]:
        hdrs.append((k.lower(), v))
    if rq["ct"] is not None and not rq["ct_in_headers"]:
        hdrs.append(("content-type", rq["ct"]))
    if rq["body"] is not None:
        hdrs.append(("content-length", str(len(body))))
    conn.send_headers(1, hdrs, end_stream=not body)
    t.sendall(conn.data_to_send())
    st = {"status": 0, "done": False}

    def pump():
        d = t.recv(65536)
        if not d:
            st["done"] = True
            return
        for ev in conn.receive_data(d):
            if isinstance(ev, h2.events.ResponseReceived):
                st["status"] = int(dict(ev.headers).get(":status", "0"))
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset, h2.events.ConnectionTerminated)):
                st["done"] = True
        t.sendall(conn.data_to_send())

    try:
        off = 0
        while off < len(body) and not st["done"]:  # within the flow-control window: the gateway may answer first
            n = min(conn.local_flow_control_window(1), conn.max_outbound_frame_size, len(body) - off)
            if n <= 0:
                pump()
                continue
            conn.send_data(1, body[off:off + n], end_stream=off + n == len(body))
            off += n
            t.sendall(conn.data_to_send())
        while not st["done"]:
            pump()
    except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
        pass
    return st["status"]


def admin(sock, method, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock)
    s.sendall(("%s %s HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\nContent-Length: 0\r\n\r\n" %
               (method, path)).encode())
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return buf.partition(b"\r\n\r\n")[2]


def rejecter(sock, stop, count):
    """Rejects every pending approval as soon as it shows (a hold answers at once, with a hold-specific record)."""
    while not stop.is_set():
        try:
            body = admin(sock, "GET", "/approvals")
            lst = json.loads(body or b"[]")
            lst = lst.get("approvals", lst) if isinstance(lst, dict) else lst
            for a in lst:
                admin(sock, "POST", "/approvals/%s/reject" % a["id"])
                count[0] += 1
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.02)


def audit_records(path):
    recs = {}
    for ln in open(path, encoding="utf-8"):
        try:
            r = json.loads(ln)
        except ValueError:
            continue
        if r.get("type") not in ("request", "response"):
            continue
        m = re.search(r"[?&]_dq=(\d+)", r.get("path", "") or "")
        rid = r.get("id")
        if r.get("type") == "request" and m:
            recs.setdefault(("dq", int(m.group(1))), {}).update(r)
            if rid is not None:
                recs[("id", rid)] = recs[("dq", int(m.group(1)))]
        elif r.get("type") == "response" and rid is not None and ("id", rid) in recs:
            recs[("id", rid)].update({"resp_status": r.get("status")})
    return recs


def cmd_gw(proto, port, cafile, adminsock, auditf, listf, sbxf, out):
    reqs = json.load(open(listf))
    sbx = json.loads(sbxf)
    ctx = ssl.create_default_context(cafile=cafile)
    stop, count = threading.Event(), [0]
    th = threading.Thread(target=rejecter, args=(adminsock, stop, count), daemon=True)
    th.start()
    conn_refused, statuses = {}, {}
    for rq in reqs:
        u = urllib.parse.urlsplit(rq["url"])
        host = u.netloc
        path = u.path + ("?" + u.query if u.query else "")
        src = sbx.get(rq.get("sandbox") or "", "127.0.0.1")
        t, st, body = connect(int(port), src, host if ":" in host else host + ":443", ctx,
                              "h2" if proto == "h2" else "http/1.1")
        if t is None:
            try:
                rule = json.loads(body or b"{}").get("rule")
            except ValueError:
                rule = None
            conn_refused[rq["id"]] = {"verdict": "deny", "status": st, "rule": rule}
            continue
        try:
            if proto == "h2" and t.selected_alpn_protocol() != "h2":
                sys.exit("gw: no h2 from the gateway")
            statuses[rq["id"]] = (h2_request if proto == "h2" else h1_request)(t, rq, host, path)
        finally:
            t.close()
    time.sleep(0.5)
    got, recs = dict(conn_refused), {}
    for _ in range(50):  # the audit writer flushes on its own clock
        recs = audit_records(auditf)
        if all(("dq", i) in recs for i in statuses):
            break
        time.sleep(0.2)
    stop.set()
    for i, wire in statuses.items():
        r = recs.get(("dq", i))
        if r is None:
            got[i] = {"verdict": "?", "status": wire, "rule": "(no audit record)"}
            continue
        status = r.get("status", r.get("resp_status", wire))
        held = bool((r.get("hold") or {}).get("id"))
        got[i] = {"verdict": "hold" if held else "?", "status": status, "rule": r.get("rule"), "wire": wire}
    json.dump({"got": got, "holds_rejected": count[0]}, open(out, "w"))

# ---------------------------------------------------------------- comparing


def norm(d):
    st = int(d["status"]) if d.get("status") is not None else 0
    if d["verdict"] == "hold":
        return ("hold", "-", d["rule"])
    if st == 429:
        return ("limited", 429, d["rule"])
    return ("allow" if st == 200 else "deny", st, d["rule"])


def cmd_cmp(name, clif, gwf, listf):
    cli = json.load(open(clif))
    gw = json.load(open(gwf))["got"]
    reqs = {str(r["id"]): r for r in json.load(open(listf))}
    n = agree = 0
    kinds = {}
    for i in sorted(cli, key=int):
        n += 1
        c = cli[i]
        k = "%s %s" % norm(c)[:2]
        kinds[k] = kinds.get(k, 0) + 1
        if c["verdict"] == "hold" and c["status"] != 200:
            c = dict(c, verdict="deny")  # a hold refused before it waits (413, 429)
        a, b = norm(c), norm(gw.get(i, {"verdict": "?", "status": 0, "rule": "(not sent)"}))
        if a == b:
            agree += 1
        else:
            rq = reqs[i]
            print("  DIFFER %s c%s %s %s (%s): policy test %s, gateway %s" % (
                name, i, rq["method"], rq["url"], rq.get("sandbox", "-"), a, b))
    print("  %s outcomes: %s" % (name, ", ".join("%s x%d" % kv for kv in sorted(kinds.items()))))
    print("%s: %d cases, %d agree" % (name, n, agree))
    return 0 if n == agree and n > 0 else 1


def cmd_conf(policy, sbxf):
    out, in_hosts = [], False
    for ln in open(policy, encoding="utf-8").read().splitlines():
        if re.match(r"^ca:", ln):
            continue
        if re.match(r"^\S", ln):
            in_hosts = ln.startswith("hosts:")
        out.append(ln)
        if in_hosts and re.match(r"^  [^ #][^:]*:\s*$", ln):
            out.append("    allow_private: true")
    sbx = json.loads(sbxf)
    if sbx:
        out.append("sandboxes:")
        for name, addr in sorted(sbx.items()):
            out.append("  %s: { addresses: [%s/32] }" % (name, addr))
    print("\n".join(out))


def main():
    a = sys.argv[1:]
    if a and a[0] == "gen" and len(a) == 7:
        cmd_gen(*a[1:])
    elif a and a[0] == "conf" and len(a) == 3:
        cmd_conf(*a[1:])
    elif a and a[0] == "cli" and len(a) == 6:
        cmd_cli(*a[1:])
    elif a and a[0] == "gw" and len(a) == 9:
        cmd_gw(*a[1:])
    elif a and a[0] == "cmp" and len(a) == 5:
        sys.exit(cmd_cmp(*a[1:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
