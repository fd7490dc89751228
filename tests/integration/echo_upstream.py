#!/usr/bin/python3
"""echo_upstream.py - a test upstream that echoes credentials back, for test_credentials.sh.

    echo_upstream.py --listen ADDR:PORT[:tls]... --cert C --key K --log FILE

Threaded, until killed; Debian's python3 standard library only.  For every request it reads the head and the
body strictly (Content-Length or chunked, at most BODY_MAX bytes kept; the rest is counted), logs what it
received, and answers with an echo of it.

The log (JSON lines) records, per request, {"ev":"head",...} as soon as the head is in (host, method, target,
path, query, auth, basic, x_api_key, x_note, accept_encoding) and {"ev":"done",...} once the whole body is in
(body_len, body: its first 4 KiB, complete, seen: the names of masked values anywhere in the body, sent: the
content coding of the answer; a cut body gives complete false, kept and seen).  The log never holds a
real secret: every value given in an environment variable ECHO_MASK_<NAME> is written as {{<NAME>}} wherever it
occurs in a logged string, and an Authorization: Basic credential is logged decoded (field basic, masked) with
auth = "Basic(decoded) <masked user:password>" and basic_canonical = whether the base64 sent is exactly the
canonical encoding of the decoded credential.  The answer itself is not masked: it is what a real echo service would send back.

The answer body (text/plain) echoes the request in the forms an echo or an error page takes:
    auth=[<Authorization>]  basic=[<decoded Basic user:password>]  key=[<X-Api-Key>]  note=[<X-Note>]
    query=[<query string>]  body=[<first 4 KiB of the body>]
and, for the credential token T (the Bearer token, else the Basic password, else X-Api-Key):
    b64_0=[base64(T)] b64_1=[base64("a"+T)] b64_2=[base64("ab"+T)] pct=[T percent-encoded, safe=""]
    json=[T JSON-escaped, "/" as "\\/"]
It also echoes them in the headers X-Echo-Auth (the Authorization value) and X-Echo-Token (T).
Query flags choose how it is sent: gz=1 gzip and deflate=1 zlib (only when the request's Accept-Encoding
allows that coding), chunked=1 chunked in 5-byte chunks written 20 ms apart (so a value spans many reads),
status=401 answers 401, location=URL answers 302 Found with that Location.
"""
import base64
import gzip
import json
import time
import urllib.parse
import zlib

from upstream_common import BufConn, latin, mask, seen, serve

BODY_MAX = 4 << 20      # bytes of a request body kept; the rest is counted
HEAD_MAX = 64 << 10     # bytes of a request head
LOGGED_BODY = 4096      # bytes of the body in the log and the echo


class Conn(BufConn):
    head_max = HEAD_MAX

    def __init__(self, sock, ctx, log):
        super().__init__(sock, ctx, log)
        self.kept = b""

    def exact(self, n, keep=True):
        """Reads n bytes: body bytes (keep) are added to self.kept up to BODY_MAX; returns them when not kept."""
        out = b""
        while n > 0:
            if not self.buf:
                self.fill()
            take = self.buf[:n]
            self.buf = self.buf[len(take):]
            n -= len(take)
            if not keep:
                out += take
            elif len(self.kept) < BODY_MAX:
                self.kept += take[:BODY_MAX - len(self.kept)]
        return out

    def body(self, hl):
        """Reads the body into self.kept (at most BODY_MAX bytes); returns its length; raises on bad framing or a
        cut body (self.kept then holds what arrived)."""
        te = hl.get("transfer-encoding", "")
        if te:
            if te.lower() != "chunked" or "content-length" in hl:
                raise ValueError("framing")
            total = 0
            while True:
                sz = self.line().split(b";")[0].strip()
                if not sz or len(sz) > 15 or any(ch not in b"0123456789abcdefABCDEF" for ch in sz):
                    raise ValueError("bad chunk size")
                k = int(sz, 16)
                if k == 0:
                    while self.line():
                        pass
                    return total
                self.exact(k)
                total += k
                if self.exact(2, False) != b"\r\n":
                    raise ValueError("no CRLF after chunk")
        if "content-length" in hl:
            v = hl["content-length"]
            if not v.isdigit():
                raise ValueError("bad content-length")
            self.exact(int(v))
            return int(v)
        return 0

    def one(self):
        rl = latin(self.line())
        method, target, version = rl.split(" ", 2)
        hl = {}
        while True:
            ln = self.line()
            if not ln:
                break
            k, _, v = latin(ln).partition(":")
            k = k.strip().lower()
            hl[k] = hl[k] + ", " + v.strip() if k in hl else v.strip()
        path, _, query = target.partition("?")
        flags = urllib.parse.parse_qs(query)
        auth = hl.get("authorization", "")
        basic, canonical, token = "", None, ""
        if auth[:6].lower() == "basic ":
            b64 = auth[6:].strip()
            try:
                raw = base64.b64decode(b64, validate=True)
                basic = latin(raw)
                canonical = base64.b64encode(raw).decode() == b64
            except ValueError:
                basic, canonical = "(not base64)", False
            token = basic.partition(":")[2]
        elif auth[:7].lower() == "bearer ":
            token = auth[7:].strip()
        if not token:
            token = hl.get("x-api-key", "")
        logged_auth = "Basic(decoded) %s" % mask(basic) if basic else mask(auth)
        head = {"ev": "head", "host": hl.get("host", ""), "method": method, "target": mask(target),
                "path": mask(path), "query": mask(query), "auth": logged_auth, "basic": mask(basic),
                "basic_canonical": canonical, "x_api_key": mask(hl.get("x-api-key", "")),
                "x_note": mask(hl.get("x-note", "")), "accept_encoding": hl.get("accept-encoding", "")}
        self.emit(head)
        if hl.get("expect", "").lower() == "100-continue":
            self.c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.kept = b""
        try:
            total = self.body(hl)
        except (ValueError, EOFError, OSError) as e:
            self.emit({"ev": "done", "target": mask(target), "complete": False, "why": str(e) or type(e).__name__,
                       "kept": len(self.kept), "seen": seen(self.kept)})
            return False
        body = latin(self.kept[:LOGGED_BODY])

        tb = token.encode("latin-1")
        jsn = json.dumps(token)[1:-1].replace("/", "\\/")
        text = ("auth=[%s]\nbasic=[%s]\nkey=[%s]\nnote=[%s]\nquery=[%s]\nbody=[%s]\n"
                "b64_0=[%s]\nb64_1=[%s]\nb64_2=[%s]\npct=[%s]\njson=[%s]\n") % (
            auth, basic, hl.get("x-api-key", ""), hl.get("x-note", ""), query, body,
            base64.b64encode(tb).decode(), base64.b64encode(b"a" + tb).decode(),
            base64.b64encode(b"ab" + tb).decode(), urllib.parse.quote(token, safe=""), jsn)
        out = text.encode("latin-1")
        accepts = [t.split(";")[0].strip().lower() for t in hl.get("accept-encoding", "").split(",")]
        sent = "identity"
        if flags.get("gz") == ["1"] and "gzip" in accepts:
            out, sent = gzip.compress(out), "gzip"
        elif flags.get("deflate") == ["1"] and "deflate" in accepts:
            out, sent = zlib.compress(out), "deflate"
        self.emit({"ev": "done", "target": mask(target), "complete": True, "body_len": total, "body": mask(body),
                   "seen": seen(self.kept), "sent": sent})

        status = "401 Unauthorized" if flags.get("status") == ["401"] else "200 OK"
        loc = flags.get("location", [""])[0]
        if loc and all(c.isalnum() or c in ":/.-_" for c in loc):  # a redirect, for the never-follow check
            status = "302 Found"
        hdrs = "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nX-Echo-Auth: %s\r\nX-Echo-Token: %s\r\n" % (
            status, auth, token)
        if status.startswith("302"):
            hdrs += "Location: %s\r\n" % loc
        if sent != "identity":
            hdrs += "Content-Encoding: %s\r\nVary: Accept-Encoding\r\n" % sent
        if flags.get("chunked") == ["1"]:
            self.c.sendall((hdrs + "Transfer-Encoding: chunked\r\n\r\n").encode("latin-1"))
            for i in range(0, len(out), 5):
                piece = out[i:i + 5]
                self.c.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                time.sleep(0.02)
            self.c.sendall(b"0\r\n\r\n")
        else:  # a HEAD's answer has no body (its Content-Length says what a GET would get)
            self.c.sendall((hdrs + "Content-Length: %d\r\n\r\n" % len(out)).encode("latin-1") +
                           (out if method != "HEAD" else b""))
        return hl.get("connection", "").lower() != "close"


if __name__ == "__main__":
    serve(Conn, __doc__)
