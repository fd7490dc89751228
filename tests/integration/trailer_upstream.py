#!/usr/bin/python3
"""trailer_upstream.py - a test upstream that answers chunked with trailers and echoes the request's trailers, for
test_http2.sh.

    trailer_upstream.py --listen ADDR:PORT[:tls]... --cert C --key K --log FILE

Threaded, until killed; Debian's python3 standard library only.  For every request it reads the head and the body
(Content-Length or chunked; the trailer lines of a chunked body are kept), logs
{"ev":"req","method","path","body_len","auth","trailers":[line,...]} (masked like echo_upstream.py: every value given as
ECHO_MASK_<NAME>=<value> reads {{NAME}}), and answers 200 with a chunked body "hello " "world\\n" ended by exact
trailer bytes chosen by the path:
    /t/plain    X-T: tval  and  X-Sum: 42
    /t/auth     X-T: tval  and  X-Echo-Auth: <the request's Authorization value, unmasked, as an echo service would>
    /t/req      X-Req-Trailers: <the request's trailer lines joined by "; ">  (or "none")
    /t/bad      "bad name: x"  (a space in the field name: malformed)
    /t/fold     X-A: 1  then an obs-fold continuation line " more"  (malformed)
    /t/none     no trailers
    /t/ws-bad   a 101 whose Sec-WebSocket-Accept answers no key, then close (for the RFC 8441 check)
"""

from upstream_common import BufConn, latin, mask, serve

HEAD_MAX = 64 << 10     # bytes of a request head or of one line
BODY_MAX = 4 << 20      # bytes of a request body read


class Conn(BufConn):
    head_max = HEAD_MAX

    def body(self, hl):
        """Reads the body; returns (length, trailer lines)."""
        if hl.get("transfer-encoding", "").lower() == "chunked":
            total = 0
            while True:
                k = int(self.line().split(b";")[0].strip(), 16)
                if k == 0:
                    tr = []
                    while True:
                        ln = self.line()
                        if not ln:
                            return total, tr
                        tr.append(latin(ln))
                total += k
                if total > BODY_MAX:
                    raise ValueError("body too large")
                self.exact(k)
                if self.exact(2) != b"\r\n":
                    raise ValueError("no CRLF after chunk")
        n = int(hl.get("content-length", "0"))
        if n > BODY_MAX:
            raise ValueError("body too large")
        self.exact(n)
        return n, []

    def one(self):
        method, target, hl = self.request_head()
        total, rtr = self.body(hl)
        path = target.partition("?")[0]
        if path == "/t/ws-bad":
            self.c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
            return False
        self.emit({"ev": "req", "method": method, "path": mask(path), "body_len": total,
                   "auth": mask(hl.get("authorization", "")), "trailers": [mask(t) for t in rtr]})
        trailers = {
            "/t/plain": "X-T: tval\r\nX-Sum: 42\r\n",
            "/t/auth": "X-T: tval\r\nX-Echo-Auth: %s\r\n" % hl.get("authorization", ""),
            "/t/req": "X-Req-Trailers: %s\r\n" % ("; ".join(rtr) or "none"),
            "/t/bad": "bad name: x\r\n",
            "/t/fold": "X-A: 1\r\n more\r\n",
        }.get(path, "")
        self.c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"6\r\nhello \r\n6\r\nworld\n\r\n")
        self.c.sendall(b"0\r\n" + trailers.encode("latin-1") + b"\r\n")
        return hl.get("connection", "").lower() != "close"


if __name__ == "__main__":
    serve(Conn, __doc__)
