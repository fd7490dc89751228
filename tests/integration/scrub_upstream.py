#!/usr/bin/python3
"""scrub_upstream.py - a TLS upstream for test_scrub_host.sh that answers with values it "stored" (issue 17).

    scrub_upstream.py --listen ADDR:PORT[:tls]... --cert C --key K --log FILE

Keep-alive HTTP/1.1, one thread per connection, Debian's python3 standard library only.  The values it echoes
come from the environment (STORED_<NAME>=value), never from a request: the requests that read them carry no
placeholder, as a later request reading back what the bound service stored would.  Every value given as
ECHO_MASK_<NAME> is written {{NAME}} in the log, which holds one {"ev":"head","path","headers":{lower: value}}
record per request.  Paths:
    /stored          200, Content-Length: every STORED_* value literally, and as encodeURIComponent, Python's
                     quote (keeping '/'), quote_plus and PHP urlencode write it, one per line; X-Stored: the
                     first value.  Honours Range (bytes=A-B): a 206 with that slice, as a real server would.
    /early           a 103 Early Hints with Link: </s?t=VALUE> before a 200
    /ce-two          Content-Encoding: identity and Content-Encoding: gzip (two fields), the body gzip(VALUE)
    /ce-list         Content-Encoding: gzip, gzip (a coding list), the body gzip(gzip(VALUE))
    /partial         an unasked 206 with the first half of VALUE
    /trailer         a chunked body "ok" with a trailer field X-Echo: VALUE
    /many            every STORED_M* value, one per line (a host with a hundred secrets)
    /answer-early    reads 1000 bytes of the request body, answers a head (Content-Length: 10) and 5 bytes of the
                     body, then reads the rest of the request body before the last 5 bytes (an early answer whose
                     head a gateway holds while the request body still streams)
    /file            the contents of the file SCRUB_FILE names, read at each request (a rotating value);
                     /file-old: of SCRUB_FILE.old (the value it had before)
    anything else    200 "ok"
"""
import gzip
import json
import os
import urllib.parse

from upstream_common import BufConn, latin, mask, serve

STORED = sorted((k[len("STORED_"):], v.encode("latin-1")) for k, v in os.environ.items() if k.startswith("STORED_"))


def forms(v):
    s = v.decode("latin-1")
    out = [v]
    out.append(urllib.parse.quote(s, safe="-_.!~*'()").encode())   # encodeURIComponent
    out.append(urllib.parse.quote(s).encode())                     # quote, keeps '/'
    out.append(urllib.parse.quote_plus(s).encode())                # quote_plus, form encoding
    out.append(urllib.parse.quote_plus(s, safe="").replace("~", "%7E").encode())  # PHP urlencode
    return out


class Conn(BufConn):
    def answer(self, status, reason, body, extra=b""):
        self.c.sendall(b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\n%s\r\n" % (status, reason, len(body), extra) + body)

    def one(self):
        ln = latin(self.line())
        method, target, _ = ln.split(" ", 2)
        hl = {}
        while True:
            h = latin(self.line())
            if h == "":
                break
            k, _, v = h.partition(":")
            k = k.strip().lower()
            hl[k] = (hl[k] + " | " if k in hl else "") + v.strip()
        n = int(hl.get("content-length", "0") or 0)
        path = target.split("?")[0]
        if path == "/answer-early" and n > 1000:
            self.exact(1000)
            self.emit({"ev": "head", "path": path, "headers": {k: mask(v) for k, v in hl.items()}})
            self.c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf:")
            self.exact(n - 1000)
            self.c.sendall(b"rest\n")
            return
        if n:
            self.exact(n)
        self.emit({"ev": "head", "path": path, "headers": {k: mask(v) for k, v in hl.items()}})
        first = dict(STORED).get("V1", b"none")
        if path == "/stored":
            body = b"".join(f + b"\n" for _, v in STORED for f in forms(v))
            rng = hl.get("range", "")
            if rng.startswith("bytes="):
                a, _, b = rng[6:].partition("-")
                a, b = int(a or 0), int(b or len(body) - 1)
                part = body[a:b + 1]
                self.answer(206, b"Partial Content", part,
                            b"Content-Range: bytes %d-%d/%d\r\n" % (a, a + len(part) - 1, len(body)))
            else:
                self.answer(200, b"OK", body, b"X-Stored: " + first + b"\r\n")
        elif path == "/early":
            self.c.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s?t=" + first + b">; rel=preload\r\n\r\n")
            self.answer(200, b"OK", b"ok\n")
        elif path == "/ce-two":
            self.answer(200, b"OK", gzip.compress(b"v=" + first + b"\n"),
                        b"Content-Encoding: identity\r\nContent-Encoding: gzip\r\n")
        elif path == "/ce-list":
            self.answer(200, b"OK", gzip.compress(gzip.compress(b"v=" + first + b"\n")),
                        b"Content-Encoding: gzip, gzip\r\n")
        elif path == "/partial":
            half = first[:len(first) // 2]
            self.answer(206, b"Partial Content", half, b"Content-Range: bytes 0-%d/%d\r\n" % (len(half) - 1, 999))
        elif path == "/trailer":
            self.c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Echo\r\n\r\n"
                           b"3\r\nok\n\r\n0\r\nX-Echo: " + first + b"\r\n\r\n")
        elif path in ("/file", "/file-old"):
            with open(os.environ["SCRUB_FILE"] + (".old" if path == "/file-old" else ""), "rb") as f:
                self.answer(200, b"OK", b"v=" + f.read() + b"\n")
        elif path == "/many":
            self.answer(200, b"OK", b"".join(v + b"\n" for k, v in STORED if k.startswith("M")))
        else:
            self.answer(200, b"OK", b"ok\n")

    def run(self):
        try:
            if self.ctx is not None:
                self.c = self.ctx.wrap_socket(self.c, server_side=True)
            while True:
                self.one()
        except (EOFError, OSError, ValueError):
            pass
        finally:
            self.c.close()


if __name__ == "__main__":
    serve(Conn, __doc__)
