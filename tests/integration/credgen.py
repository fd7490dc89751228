#!/usr/bin/python3
"""credgen.py - the request side of credential binding, end to end (test_cred_request.sh).  Debian's
/usr/bin/python3 with python3-h2.

    credgen.py upstream ADDR CERT KEY LOG
        A recording TLS upstream (HTTP/1.1, keep-alive) on ADDR:443.  Per request one JSON line in LOG:
        {"gen": <X-Gen-Id>, "head": b64, "body": b64 (as received, chunk framing included)}; the answer
        (200, text/plain) echoes the head and body back, so what the sandbox reads shows what scrubbing did.
    credgen.py findings PROXY_PORT CAFILE LOG AUDIT
        One check per request-side finding (F1, F2, the method, query encoding, a request body with a
        Content-Encoding, trailers, case changes), each over HTTP/1.1 and HTTP/2; prints "ok ..." / "FAIL ...".
    credgen.py generate PROXY_PORT CAFILE LOG AUDIT SEED N
        The invariant generator: N requests (h1 and h2) with the placeholder at a random place in a random
        encoding; prints "ok ..." / "FAIL ..." lines and, on any failure, the seed and the failing cases
        (masked: a value is never printed).
    credgen.py flood PROXY_PORT CAFILE LOG AUDIT N
        N malformed streams on one h2 connection; prints "refused K" (streams answered or reset).
    credgen.py h1flood PROXY_PORT CAFILE LOG AUDIT N
        N requests with the placeholder in an unbound header on one keep-alive HTTP/1.1 connection; prints
        "refused K" (403 answers).

The secret under test: value $SLUICE_IT_V (never printed), placeholder $SLUICE_IT_PH, bound to
api.example.test at header:authorization, basic, query:key, json:$.token and form:token; a second one, value
$SLUICE_IT_QV (holds '&', '=', '+', '%', ' ', '/'), placeholder $SLUICE_IT_QPH, at query:qk.
"""
import base64
import json
import os
import random
import socket
import ssl
import sys
import threading
import time
import urllib.parse

HOST = "api.example.test"


# ------------------------------------------------------------------ the recording upstream

def upstream(addr, cert, key, log):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, 443))
    ls.listen(256)
    lock = threading.Lock()

    def serve(c):
        try:
            c = ctx.wrap_socket(c, server_side=True)
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, buf = buf.split(b"\r\n\r\n", 1)
                head += b"\r\n\r\n"
                lines = head.split(b"\r\n")
                hdrs = {}
                for ln in lines[1:]:
                    if b":" in ln:
                        k, v = ln.split(b":", 1)
                        hdrs[k.strip().lower()] = v.strip()
                body = b""
                gen = hdrs.get(b"x-gen-id", b"").decode("latin-1")
                if b"content-length" in hdrs:
                    n = int(hdrs[b"content-length"])
                    while len(buf) < n:
                        d = c.recv(65536)
                        if not d:
                            # a body cut off (a streamed body refused midway): what arrived is recorded
                            with lock, open(log, "a") as f:
                                f.write(json.dumps({"gen": gen, "head": base64.b64encode(head).decode(),
                                                    "body": base64.b64encode(buf).decode(), "partial": True}) + "\n")
                            return
                        buf += d
                    body, buf = buf[:n], buf[n:]
                elif hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
                    while True:
                        while b"\r\n" not in buf:
                            buf += c.recv(65536)
                        ln, rest = buf.split(b"\r\n", 1)
                        size = int(ln.split(b";")[0], 16)
                        if size == 0:
                            while b"\r\n\r\n" not in b"\r\n" + rest:
                                rest += c.recv(65536)
                            end = (b"\r\n" + rest).index(b"\r\n\r\n") + 2
                            body += buf[:len(ln) + 2 + end]
                            buf = rest[end:]
                            break
                        while len(rest) < size + 2:
                            rest += c.recv(65536)
                        body += buf[:len(ln) + 2 + size + 2]
                        buf = rest[size + 2:]
                gen = hdrs.get(b"x-gen-id", b"").decode("latin-1")
                with lock, open(log, "a") as f:
                    f.write(json.dumps({"gen": gen, "head": base64.b64encode(head).decode(),
                                        "body": base64.b64encode(body).decode()}) + "\n")
                echo = head + body
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(echo)
                          + echo)
        except Exception:
            pass
        finally:
            try:
                c.close()
            except Exception:
                pass

    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


# ------------------------------------------------------------------ clients

class Env:
    def __init__(self, port, cafile, log, audit):
        self.port, self.cafile, self.log, self.audit = int(port), cafile, log, audit
        self.v = os.environ["SLUICE_IT_V"].encode()
        self.ph = os.environ["SLUICE_IT_PH"]
        self.qv = os.environ["SLUICE_IT_QV"].encode()
        self.qph = os.environ["SLUICE_IT_QPH"]
        self.sph = os.environ.get("SLUICE_IT_SPH", "")
        self.ctx = ssl.create_default_context(cafile=cafile)

    def tunnel(self, alpn):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (HOST.encode(), HOST.encode()))
        r = b""
        while b"\r\n\r\n" not in r:
            d = s.recv(4096)
            if not d:
                raise IOError("CONNECT closed")
            r += d
        if not r.startswith(b"HTTP/1.1 200"):
            raise IOError("CONNECT refused")
        self.ctx.set_alpn_protocols(alpn)
        return self.ctx.wrap_socket(s, server_hostname=HOST)

    def h1(self, raw):
        """One request on its own connection: (status, body)."""
        try:
            t = self.tunnel(["http/1.1"])
        except (OSError, IOError):
            return 0, b""
        try:
            t.sendall(raw)
            buf = b""
            while b"\r\n\r\n" not in buf:
                d = t.recv(65536)
                if not d:
                    return 0, buf
                buf += d
            head, body = buf.split(b"\r\n\r\n", 1)
            status = int(head.split(b" ")[1])
            n = None
            for ln in head.split(b"\r\n")[1:]:
                if ln.lower().startswith(b"content-length:"):
                    n = int(ln.split(b":")[1])
            while n is not None and len(body) < n:
                d = t.recv(65536)
                if not d:
                    break
                body += d
            return status, body
        except (OSError, ValueError, IndexError):
            return 0, b""
        finally:
            t.close()

    def audit_lines(self):
        try:
            with open(self.audit, "rb") as f:
                return f.read().splitlines()
        except OSError:
            return []

    def upstream_recs(self):
        out = {}
        try:
            with open(self.log) as f:
                for ln in f:
                    r = json.loads(ln)
                    out.setdefault(r["gen"], []).append((base64.b64decode(r["head"]), base64.b64decode(r["body"])))
        except OSError:
            pass
        return out

    def forms(self, v=None):
        """The forms of a value an upstream or a sandbox could read it in."""
        v = self.v if v is None else v
        f = [v, urllib.parse.quote(v, safe="").encode(), urllib.parse.quote(v, safe="").lower().encode(),
             json.dumps(v.decode("latin-1"))[1:-1].encode()]
        for k in range(3):
            s = base64.b64encode(b"\0" * k + v)
            f.append(s[4 if k else 0:-4])
            f.append(base64.urlsafe_b64encode(b"\0" * k + v)[4 if k else 0:-4])
        return [x for x in f if len(x) >= 8]

    def has_value(self, data, v=None):
        return any(x in data for x in self.forms(v))


class H2:
    """One HTTP/2 connection through the proxy; requests one after another."""

    def __init__(self, env):
        import h2.config
        import h2.connection
        self.t = env.tunnel(["h2"])
        cfg = h2.config.H2Configuration(client_side=True, header_encoding=None, validate_outbound_headers=False,
                                        normalize_outbound_headers=False, validate_inbound_headers=False)
        self.c = h2.connection.H2Connection(config=cfg)
        self.c.initiate_connection()
        self.t.sendall(self.c.data_to_send())
        self.dead = False

    def request(self, headers, body=None, trailers=None):
        """(status or 0, body, how): how is "ok", "reset", "goaway" or "closed"."""
        import h2.events
        if self.dead:
            return 0, b"", "closed"
        sid = self.c.get_next_available_stream_id()
        try:
            self.c.send_headers(sid, headers, end_stream=body is None and trailers is None)
            if body is not None:
                self.c.send_data(sid, body, end_stream=trailers is None)
            if trailers is not None:
                self.c.send_headers(sid, trailers, end_stream=True)
            self.t.sendall(self.c.data_to_send())
        except Exception:
            self.dead = True
            return 0, b"", "closed"
        status, data = 0, b""
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                d = self.t.recv(65536)
            except (OSError, socket.timeout):
                d = b""
            if not d:
                self.dead = True
                return status, data, "closed"
            for ev in self.c.receive_data(d):
                if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                    status = int(dict(ev.headers)[b":status"])
                elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid:
                    data += ev.data
                    self.c.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                    self.t.sendall(self.c.data_to_send())
                    return status, data, "ok"
                elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                    self.t.sendall(self.c.data_to_send())
                    return status, data, "reset"
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    self.dead = True
                    return status, data, "goaway"
            out = self.c.data_to_send()
            if out:
                self.t.sendall(out)
        return status, data, "timeout"

    def close(self):
        try:
            self.t.close()
        except OSError:
            pass


# ------------------------------------------------------------------ a request, in both versions

class Req:
    """A request as parts; rendered as HTTP/1.1 bytes or as h2 fields."""

    def __init__(self, gen, method="GET", path="/r", query=None, headers=None, body=None, ctype=None,
                 trailers=None, host=HOST):
        self.gen, self.method, self.path, self.query = gen, method, path, query or []
        self.headers, self.body, self.ctype, self.trailers, self.host = headers or [], body, ctype, trailers, host

    def target(self):
        q = "&".join(k if v is None else "%s=%s" % (k, v) for k, v in self.query)
        return self.path + ("?" + q if q else "")

    def h1(self):
        hs = ["Host: %s" % self.host, "X-Gen-Id: %s" % self.gen] + ["%s: %s" % hv for hv in self.headers]
        body = self.body.encode("latin-1") if self.body is not None else None
        if self.ctype:
            hs.append("Content-Type: %s" % self.ctype)
        if self.trailers is not None:
            hs.append("Transfer-Encoding: chunked")
            data = (b"%x\r\n%s\r\n" % (len(body or b"x"), body or b"x") + b"0\r\n" +
                    b"".join(b"%s: %s\r\n" % (k.encode("latin-1"), v.encode("latin-1")) for k, v in self.trailers)
                    + b"\r\n")
        elif body is not None:
            hs.append("Content-Length: %d" % len(body))
            data = body
        else:
            data = b""
        return ("%s %s HTTP/1.1\r\n%s\r\n\r\n" % (self.method, self.target(), "\r\n".join(hs))).encode("latin-1") + data

    def h2(self):
        f = [(b":method", self.method.encode("latin-1")), (b":scheme", b"https"),
             (b":authority", self.host.encode("latin-1")), (b":path", self.target().encode("latin-1")),
             (b"x-gen-id", self.gen.encode())]
        # names as given: an upper-case one is malformed in h2 (the gateway resets it), never lower-cased here
        f += [(k.encode("latin-1") if k.startswith("X-Leak") or k.startswith("X-sph") else k.lower().encode("latin-1"),
               v.encode("latin-1")) for k, v in self.headers]
        if self.ctype:
            f.append((b"content-type", self.ctype.encode()))
        body = self.body.encode("latin-1") if self.body is not None else None
        if body is not None and self.trailers is None:
            f.append((b"content-length", b"%d" % len(body)))
        tr = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.trailers] if self.trailers else None
        if tr is not None and body is None:
            body = b"x"
        return f, body, tr


def send(env, req, ver, h2c=None):
    if ver == "h1":
        st, body = env.h1(req.h1())
        return st, body
    own = h2c is None
    h2c = h2c or H2(env)
    try:
        f, body, tr = req.h2()
        st, data, how = h2c.request(f, body, tr)
        return (st if how in ("ok",) or st else 0), data
    finally:
        if own:
            h2c.close()


# ------------------------------------------------------------------ the findings, one check each

class Report:
    def __init__(self):
        self.fails = 0

    def ok(self, cond, msg):
        print(("ok   " if cond else "FAIL ") + msg, flush=True)
        if not cond:
            self.fails += 1


def wait_audit(env, start, pred, secs=5):
    end = time.time() + secs
    while time.time() < end:
        for ln in env.audit_lines()[start:]:
            try:
                r = json.loads(ln)
            except ValueError:
                continue
            if pred(r):
                return r
        time.sleep(0.1)
    return None


def findings(env):
    rep = Report()
    ph, v = env.ph, env.v
    bearer = ("Authorization", "Bearer " + ph)
    n = [0]

    def gen():
        n[0] += 1
        return "f%d" % n[0]

    def refused(name, ver, req, place_re=None, secret="tok"):
        start = len(env.audit_lines())
        st, body = send(env, req, ver)
        ups = env.upstream_recs().get(req.gen, [])
        rep.ok(st == 403, "%s (%s): refused 403 (got %s)" % (name, ver, st))
        rep.ok(not ups, "%s (%s): nothing reached the upstream" % (name, ver))
        rep.ok(not env.has_value(body), "%s (%s): the sandbox read no form of the value" % (name, ver))
        r = wait_audit(env, start, lambda r: r.get("type") == "exfiltration_attempt" and r.get("secret") == secret and
                       (place_re is None or place_re in r.get("place", "")))
        rep.ok(r is not None, "%s (%s): audited as exfiltration_attempt%s" %
               (name, ver, " at %s" % place_re if place_re else ""))

    def allowed(name, ver, req, check, what):
        st, body = send(env, req, ver)
        ups = env.upstream_recs().get(req.gen, [])
        rep.ok(st == 200, "%s (%s): answered 200 (got %s)" % (name, ver, st))
        rep.ok(len(ups) == 1 and check(*ups[0]), "%s (%s): the upstream received %s" % (name, ver, what))
        rep.ok(not env.has_value(body), "%s (%s): the sandbox read no form of the value (scrubbed)" % (name, ver))

    for ver in ("h1", "h2"):
        # F1: the path, percent-encoded (normalised to the placeholder), beside a bound use
        enc = "%73" + ph[1:]
        refused("F1 a %-encoded placeholder in the path beside a bound use", ver,
                Req(gen(), path="/x/" + enc, headers=[bearer]), "path")
        # the variant: upper/lower hex mixed, a later letter, and double encoding (%25xx)
        mixed = ph[:3] + "%%%02x" % ord(ph[3]) + ph[4:6] + "%%%02X" % ord(ph[6]) + ph[7:]
        refused("F1 variant: mixed-case hex further in", ver, Req(gen(), path="/y/" + mixed, headers=[bearer]), "path")
        refused("F1 variant: double encoding %25xx", ver,
                Req(gen(), path="/z/%25" + "%02x" % ord(ph[0]) + ph[1:], headers=[bearer]), "path")
        refused("F1 variant: base64url of the placeholder in a path segment", ver,
                Req(gen(), path="/b/" + base64.urlsafe_b64encode(b"a" + ph.encode()).decode().rstrip("="),
                    headers=[bearer]), "path")
        # F2: header names, beside a bound use
        if ver == "h1":
            refused("F2 a placeholder in a header name beside a bound use", ver,
                    Req(gen(), headers=[bearer, ("X-Leak-" + ph, "1")]), "header name")
        else:
            # h2 names are lower case: a mixed-case placeholder cannot be one (the stream is refused as malformed)
            r = Req(gen(), headers=[bearer, ("X-Leak-" + ph, "1")])
            st, body = send(env, r, ver)
            rep.ok(st != 200 and not env.upstream_recs().get(r.gen), "F2 a mixed-case placeholder in an h2 header "
                   "name: the stream is refused (got %s), nothing upstream" % st)
        # a short, lower-case placeholder (secret 'short', bound to header:x-short) fits a method and an h2 name
        refused("F2 a short placeholder in a header name beside a bound use", ver,
                Req(gen(), headers=[bearer, ("x-sph-" + env.sph, "1")]), "header name", "short")
        refused("F2 variant: a placeholder as the method", ver, Req(gen(), method=env.sph, headers=[bearer]),
                "method", "short")
        refused("F2 variant: a placeholder as a query key", ver,
                Req(gen(), query=[(ph, "1")], headers=[bearer]), "query key")
        refused("F2 variant: base64 in an unbound header value", ver,
                Req(gen(), headers=[bearer, ("X-Note", base64.b64encode(ph.encode()).decode())]), "header:x-note")
        refused("F2 variant: base64 of the placeholder as a Bearer token (a bound header, encoded)", ver,
                Req(gen(), headers=[("Authorization", "Bearer " + base64.b64encode(ph.encode()).decode())]),
                "header:authorization")
        refused("F2 variant: JSON \\u escapes in a cookie", ver,
                Req(gen(), headers=[bearer, ("Cookie", "a=1; s=" + "\\u%04x" % ord(ph[0]) + ph[1:])]), "header:cookie")
        # the bound use alone: injected only there
        allowed("a bound use in Authorization", ver, Req(gen(), path="/ok", headers=[bearer]),
                lambda h, b: h.lower().count(b"authorization: bearer " + v.lower() + b"\r\n") == 1 and h.count(v) == 1,
                "the value in Authorization only")
        # case changes: not a placeholder, forwarded untouched, nothing injected
        # (the last letter: a placeholder may end in a digit, whose case cannot change)
        k = max(i for i, ch in enumerate(ph) if ch.isalpha())
        flipped = ph[:k] + ph[k].swapcase() + ph[k + 1:]
        assert flipped != ph
        allowed("a placeholder with one letter's case changed", ver,
                Req(gen(), path="/c/" + flipped, headers=[("Authorization", "Bearer " + flipped)]),
                lambda h, b: flipped.encode() in h and not env.has_value(h + b), "it untouched, no value")
        # query: injection encodes the value as the place requires (a value with & = + % space /)
        allowed("query:qk with a value holding & = + % space /", ver, Req(gen(), query=[("qk", env.qph), ("z", "1")]),
                lambda h, b: check_query(h, "qk", env.qv) and env.qv not in h, "the value percent-encoded in qk only")
        allowed("query:key, the placeholder partly %-encoded (decoded once, as the upstream reads it)", ver,
                Req(gen(), query=[("key", "%%%02X" % ord(ph[0]) + ph[1:])]),
                lambda h, b: check_query(h, "key", v), "the value in key")
        # Basic: decoded, swapped, re-encoded
        allowed("basic", ver, Req(gen(), headers=[("Authorization", "Basic " +
                                                  base64.b64encode(b"u:" + ph.encode()).decode())]),
                lambda h, b: (b"Basic " + base64.b64encode(b"u:" + v)) in h, "the Basic credential with the value")
        # a request body with a Content-Encoding toward a bound host cannot be searched: refused
        import gzip
        zb = gzip.compress(json.dumps({"text": ph}).encode()).decode("latin-1")
        st, body = send(env, Req(gen(), method="POST", headers=[("Content-Encoding", "gzip")], body=zb,
                                 ctype="application/json"), ver)
        rep.ok(st == 415, "a gzip request body toward a bound host (%s): refused 415 (got %s)" % (ver, st))
        rep.ok(not env.upstream_recs().get("f%d" % n[0]), "... and nothing reached the upstream (%s)" % ver)
        st, body = send(env, Req(gen(), method="POST", headers=[("Content-Encoding", "identity")], body="plain",
                                 ctype="text/plain"), ver)
        rep.ok(st == 200, "Content-Encoding: identity passes (%s) (got %s)" % (ver, st))
        # bodies: the placeholder encoded in a field, in an unbound or a bound field
        refused("base64 of the placeholder in a JSON field", ver,
                Req(gen(), method="POST", body=json.dumps({"token": "x", "note": base64.b64encode(ph.encode()).decode()}),
                    ctype="application/json"), "json:$.note")
        refused("%-encoded placeholder in the bound JSON field $.token", ver,
                Req(gen(), method="POST", body=json.dumps({"token": "%%%02x" % ord(ph[0]) + ph[1:]}),
                    ctype="application/json"), "json:$.token")
        refused("base64url placeholder in a text body", ver,
                Req(gen(), method="POST", body="see " + base64.urlsafe_b64encode(ph.encode()).decode(),
                    ctype="text/plain"), "body")
        allowed("json:$.token", ver, Req(gen(), method="POST", body=json.dumps({"token": ph, "n": 1}),
                                         ctype="application/json"),
                lambda h, b: json.loads(b).get("token") == v.decode(), "the value in $.token")
        # trailers are never sent: a placeholder there refuses the request
        refused("a placeholder in request trailers", ver,
                Req(gen(), method="POST", body="abc", ctype="text/plain", trailers=[("X-Trail", ph)]), "trailers")
    return rep.fails


def check_query(head, key, val):
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    target = line.split(" ")[1]
    q = target.split("?", 1)[1] if "?" in target else ""
    got = [urllib.parse.unquote_to_bytes(p.split("=", 1)[1]) for p in q.split("&") if p.split("=", 1)[0] == key
           and "=" in p]
    return got == [val]


# ------------------------------------------------------------------ the generator

ENCODINGS = ["raw", "pct_part", "pct_all", "b64", "b64url", "json_u", "case"]
H1_PLACES = ["method", "path", "query_key", "query_val", "query_bound", "header_name", "header_val",
             "header_bound", "basic", "cookie", "trailers", "json_bound", "json_other", "json_key", "form_bound",
             "form_other", "host"]
H2_PLACES = H1_PLACES + ["h2_scheme"]
# where a placeholder written as it is (and, for some, %-encoded once) is injected
BOUND_RAW = {"header_bound", "basic", "query_bound", "json_bound", "form_bound"}
BOUND_PCT = {"query_bound"}   # a form field's placeholder must be written as it is (a %-encoded one is refused)


def encode(rng, ph, enc):
    def hx(ch):
        h = "%02x" % ord(ch)
        return "".join(c.upper() if rng.random() < 0.5 else c for c in h)
    if enc == "raw":
        return ph
    if enc == "pct_part":
        k = rng.randrange(len(ph))   # at least one
        return "".join("%" + hx(c) if (i == k or rng.random() < 0.3) else c for i, c in enumerate(ph))
    if enc == "pct_all":
        return "".join("%" + hx(c) for c in ph)
    if enc in ("b64", "b64url"):
        pre = bytes(rng.randrange(33, 127) for _ in range(rng.randrange(3)))
        f = base64.b64encode if enc == "b64" else base64.urlsafe_b64encode
        s = f(pre + ph.encode()).decode()
        return s.rstrip("=") if rng.random() < 0.5 else s
    if enc == "json_u":
        k = rng.randrange(len(ph))
        return "".join("\\u" + "00" + hx(c) if (i == k or rng.random() < 0.3) else c for i, c in enumerate(ph))
    if enc == "case":
        idx = [i for i, c in enumerate(ph) if c.isalpha()]
        i = rng.choice(idx)
        c = ph[i]
        return ph[:i] + (c.lower() if c.isupper() else c.upper()) + ph[i + 1:]
    raise ValueError(enc)


def build(rng, gen, place, s, ph, legit):
    """The request with <s> (an encoded placeholder) at <place>; <legit> adds a bound use beside it."""
    hs = [("Authorization", "Bearer " + ph)] if legit and place not in ("header_bound", "basic") else []
    r = Req(gen, path="/g/" + gen, headers=hs)
    if place == "method":
        r.method = s
    elif place == "path":
        r.path = "/g/%s/%s/x" % (gen, s)
    elif place == "query_key":
        r.query = [("a", "1"), (s, "2")]
    elif place == "query_val":
        r.query = [("q", s)]
    elif place == "query_bound":
        r.query = [("key", s)]
    elif place == "header_name":
        r.headers.append(("X-Leak-" + s, "1"))   # sent as it is in h2 too (upper case there is malformed)
    elif place == "header_val":
        r.headers.append(("X-Note", "a " + s))
    elif place == "header_bound":
        r.headers.append(("Authorization", "Bearer " + s))
    elif place == "basic":
        r.headers.append(("Authorization", "Basic " + base64.b64encode(b"user:" + s.encode("latin-1")).decode()))
    elif place == "cookie":
        r.headers.append(("Cookie", "a=1; sess=" + s))
    elif place == "trailers":
        r.method, r.body, r.ctype, r.trailers = "POST", "abc", "text/plain", [("X-Trail", s)]
    elif place in ("json_bound", "json_other", "json_key"):
        r.method, r.ctype = "POST", "application/json"
        # the encoded form is written into the JSON text as it is (a \\u escape stays an escape)
        if place == "json_bound":
            r.body = '{"token": "%s", "n": 1}' % s
        elif place == "json_other":
            r.body = '{"token": "t", "x": {"y": ["%s"]}}' % s
        else:
            r.body = '{"%s": 1}' % s
    elif place in ("form_bound", "form_other"):
        r.method, r.ctype = "POST", "application/x-www-form-urlencoded"
        r.body = ("token=%s&z=1" if place == "form_bound" else "token=t&other=%s") % s
    elif place == "host":
        r.host = s.lower() + "." + HOST
    elif place == "h2_scheme":
        r.scheme = s
    return r


def expect_allowed(ver, place, enc):
    if place in ("host", "h2_scheme"):
        return False
    if ver == "h2" and place == "header_name":
        return False   # an HTTP/2 field name with upper case is malformed: the stream is refused first
    if enc == "case":
        return True
    if enc == "raw":
        return place in BOUND_RAW
    if enc in ("pct_part", "pct_all"):
        return place in BOUND_PCT
    return False


def strip_bound(env, head, body):
    """The upstream's request with every bound place's value taken out (what must then hold no value)."""
    v = env.v
    lines = head.split(b"\r\n")
    out = []
    for ln in lines:
        low = ln.lower()
        if low.startswith(b"authorization: bearer ") and ln[len(b"authorization: bearer "):] == v:
            continue
        if low.startswith(b"authorization: basic "):
            try:
                dec = base64.b64decode(ln[len(b"authorization: basic "):])
            except ValueError:
                dec = b""
            if dec == b"user:" + v:
                continue
        out.append(ln)
    if out:
        parts = out[0].split(b" ")
        if len(parts) == 3 and b"?" in parts[1]:
            p, q = parts[1].split(b"?", 1)
            q = b"&".join(x for x in q.split(b"&")
                          if not (x.startswith(b"key=") and urllib.parse.unquote_to_bytes(x[4:]) == v))
            out[0] = b" ".join([parts[0], p + b"?" + q, parts[2]])
    rest = b"\r\n".join(out)
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and doc.get("token") == v.decode("latin-1"):
            doc["token"] = ""
            body = json.dumps(doc).encode()
    except ValueError:
        fields = body.split(b"&")
        body = b"&".join(f for f in fields if not (f.startswith(b"token=") and
                                                  urllib.parse.unquote_to_bytes(f[6:].replace(b"+", b" ")) == v))
    return rest, body


def generate(env, seed, n):
    rng = random.Random(seed)
    rep = Report()
    cases = []
    nh2 = n // 3
    h2c, on_conn = None, 0
    t0 = time.time()
    audit_start = len(env.audit_lines())
    for i in range(n):
        ver = "h2" if i < nh2 else "h1"
        place = rng.choice(H2_PLACES if ver == "h2" else H1_PLACES)
        enc = rng.choice(ENCODINGS)
        legit = rng.random() < 0.5
        gen = "g%d-%d" % (seed, i)
        # the method holds at most 39 bytes: there the short placeholder (secret short) is used
        s = encode(rng, env.sph if place == "method" else env.ph, enc)
        req = build(rng, gen, place, s, env.ph, legit)
        legit = legit and place not in ("header_bound", "basic")
        if ver == "h2":
            # a fresh connection every 100 streams: the audit bound per connection (256 refusals) is not what this tests
            if h2c is None or h2c.dead or on_conn == 100:
                if h2c is not None:
                    h2c.close()
                h2c, on_conn = H2(env), 0
            on_conn += 1
            f, body, tr = req.h2()
            if place == "h2_scheme":
                f[1] = (b":scheme", s.encode("latin-1"))
            st, data, how = h2c.request(f, body, tr)
        else:
            st, data = env.h1(req.h1())
        cases.append((i, ver, place, enc, legit, gen, st, data))
    if h2c is not None:
        h2c.close()
    took = time.time() - t0
    time.sleep(1)
    ups = env.upstream_recs()
    bad = []
    n403 = nallowed = 0
    for i, ver, place, enc, legit, gen, st, data in cases:
        allowed = expect_allowed(ver, place, enc)
        got = ups.get(gen, [])
        why = None
        if env.has_value(data):
            why = "the sandbox read a form of the value"
        elif allowed:
            nallowed += 1
            if st != 200 or len(got) != 1:
                why = "expected through (200, once upstream), got status %s, %d upstream" % (st, len(got))
            else:
                h, b = got[0]
                rest, rb = strip_bound(env, h, b)
                if env.has_value(rest + b"\r\n\r\n" + rb):
                    why = "the value reached the upstream outside a bound place"
                elif enc == "case" and env.ph.encode() in h + b and not legit:
                    why = "a placeholder reached the upstream uninjected"
                elif (legit or enc != "case") and not env.has_value(h + b):
                    why = "the bound use was not injected"
        else:
            if got:
                why = "expected refused, but the upstream received it"
            elif st == 403:
                n403 += 1
                if b"exfiltration attempt" not in data:
                    why = "403 that is not an exfiltration refusal"
            elif st not in (400, 421) and not (ver == "h2" and st == 0):
                why = "expected refused (403, or 400/421 first), got %s" % st
        if why:
            bad.append("case %d %s place=%s enc=%s legit=%s: %s" % (i, ver, place, enc, legit, why))
    time.sleep(1)
    nexfil = sum(1 for ln in env.audit_lines()[audit_start:] if b'"type":"exfiltration_attempt"' in ln)
    rep.ok(not bad, "generator seed %d: %d requests (%d h2, %d h1) in %.1fs: every outcome as the invariant says "
           "(%d allowed, %d refused with 403)" % (seed, n, nh2, n - nh2, took, nallowed, n403))
    rep.ok(nexfil == n403, "generator seed %d: every 403 has its exfiltration_attempt record (%d records, %d 403s)" %
           (seed, nexfil, n403))
    if bad or nexfil != n403:
        print("# seed %d failed; first failing cases:" % seed)
        for b in bad[:30]:
            print("#   " + b)
    return rep.fails


# ------------------------------------------------------------------ streamed bodies (issue 17)

STREAM_FILL = (1 << 20) + (200 << 10)   # over the 1 MiB hold bound toward a body-injection host: the body streams


def send_big(env, ver, gen, body):
    """POST <body> (bytes) with a Content-Length, flow-controlled in h2: the status or 0."""
    if ver == "h1":
        try:
            t = env.tunnel(["http/1.1"])
        except (OSError, IOError):
            return 0
        buf = b""
        try:
            t.sendall(b"POST /big HTTP/1.1\r\nHost: %s\r\nX-Gen-Id: %s\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: %d\r\n\r\n" % (HOST.encode(), gen.encode(), len(body)))
            for i in range(0, len(body), 65536):
                t.sendall(body[i:i + 65536])
        except OSError:
            pass
        try:
            while b"\r\n" not in buf:
                d = t.recv(65536)
                if not d:
                    break
                buf += d
            return int(buf.split(b" ")[1]) if buf.startswith(b"HTTP/1.1 ") else 0
        except (OSError, ValueError, IndexError):
            return 0
        finally:
            t.close()
    import h2.events
    c = H2(env)
    sid = c.c.get_next_available_stream_id()
    status, off = 0, 0
    try:
        c.c.send_headers(sid, [(b":method", b"POST"), (b":scheme", b"https"), (b":authority", HOST.encode()),
                               (b":path", b"/big"), (b"x-gen-id", gen.encode()), (b"content-type", b"text/plain"),
                               (b"content-length", b"%d" % len(body))])
        c.t.sendall(c.c.data_to_send())
        deadline = time.time() + 20
        while time.time() < deadline:
            while off < len(body):
                room = min(c.c.local_flow_control_window(sid), c.c.max_outbound_frame_size, len(body) - off)
                if room <= 0:
                    break
                c.c.send_data(sid, body[off:off + room], end_stream=off + room == len(body))
                off += room
            c.t.sendall(c.c.data_to_send())
            d = c.t.recv(65536)
            if not d:
                break
            for ev in c.c.receive_data(d):
                if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                    status = int(dict(ev.headers)[b":status"])
                elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)) and ev.stream_id == sid:
                    return status
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    return status
            if status:
                return status
    except Exception:
        pass
    finally:
        c.close()
    return status


def streamed(env):
    """A body too large to hold, toward the bound host, with an encoded placeholder near its end."""
    rep = Report()
    ph = env.ph
    encs = [("%-encoded, mixed-case hex", "%%%02x" % ord(ph[0]) + ph[1:4] + "%%%02X" % ord(ph[4]) + ph[5:]),
            ("%-encoded, every byte", "".join("%%%02X" % ord(ch) for ch in ph)),
            ("double %-encoded (%25xx)", "%%25%02x" % ord(ph[0]) + ph[1:]),
            ("JSON \\u-escaped", "".join("\\u%04x" % ord(ch) if k % 3 == 0 else ch for k, ch in enumerate(ph)))]
    n = 0
    for ver in ("h1", "h2"):
        for what, enc in encs:
            n += 1
            gen = "s%d" % n
            body = b"a" * STREAM_FILL + b" token=" + enc.encode() + b" end"
            start = len(env.audit_lines())
            st = send_big(env, ver, gen, body)
            rep.ok(st == 403, "a streamed body (%d bytes) holding a %s placeholder (%s): refused 403 (got %s)" %
                   (len(body), what, ver, st))
            r = wait_audit(env, start, lambda r: r.get("type") == "exfiltration_attempt" and r.get("secret") == "tok"
                           and r.get("place") == "body", 10)
            rep.ok(r is not None, "... audited as exfiltration_attempt at body (%s)" % ver)
            ups = env.upstream_recs().get(gen, [])
            got = b"".join(b for _, b in ups)
            rep.ok(all(b not in got for b in (enc.encode(), ph.encode())) and len(got) < len(body),
                   "... the upstream never received the whole encoded placeholder (%d of %d bytes arrived, %s)" %
                   (len(got), len(body), ver))
        # the same body without the placeholder streams through whole
        n += 1
        gen = "s%d" % n
        body = b"a" * STREAM_FILL + b" %41%2 \\u00 end"
        st = send_big(env, ver, gen, body)
        ups = env.upstream_recs().get(gen, [])
        rep.ok(st == 200 and len(ups) == 1 and ups[0][1] == body,
               "a streamed body with stray escapes and no placeholder arrives whole (%s, got %s)" % (ver, st))
    return rep.fails


def flood(env, n):
    h2c = H2(env)
    refused = 0
    for i in range(n):
        f = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", HOST.encode()), (b":path", b"/f/%d" % i),
             (b"connection", b"keep-alive")]   # connection-specific: a translation error
        st, data, how = h2c.request(f)
        if how == "goaway" or how == "closed":
            break
        refused += 1
    h2c.close()
    print("refused %d" % refused)
    return 0


def h1flood(env, n):
    """<n> requests with the placeholder in an unbound header on one keep-alive HTTP/1.1 connection."""
    t = env.tunnel(["http/1.1"])
    refused = 0
    buf = b""
    try:
        for i in range(n):
            t.sendall(b"GET /k/%d HTTP/1.1\r\nHost: %s\r\nX-Note: %s\r\n\r\n" % (i, HOST.encode(), env.ph.encode()))
            while b"\r\n\r\n" not in buf:
                d = t.recv(65536)
                if not d:
                    raise EOFError
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            n_body = [int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
            while len(buf) < (n_body[0] if n_body else 0):
                buf += t.recv(65536)
            buf = buf[n_body[0] if n_body else 0:]
            if head.startswith(b"HTTP/1.1 403"):
                refused += 1
    except (OSError, EOFError):
        pass
    t.close()
    print("refused %d" % refused)
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "upstream":
        upstream(*sys.argv[2:6])
        return 0
    env = Env(*sys.argv[2:6])
    if cmd == "findings":
        return 1 if findings(env) else 0
    if cmd == "generate":
        return 1 if generate(env, int(sys.argv[6]), int(sys.argv[7])) else 0
    if cmd == "flood":
        return flood(env, int(sys.argv[6]))
    if cmd == "streamed":
        return 1 if streamed(env) else 0
    if cmd == "h1flood":
        return h1flood(env, int(sys.argv[6]))
    raise SystemExit("unknown command")


if __name__ == "__main__":
    sys.exit(main())
