#!/usr/bin/python3
"""tenant_upstream.py - an HTTP/1.1 test upstream that tells its connections apart, for test_revoke.sh and
test_tenants.sh.

    tenant_upstream.py --listen ADDR:PORT[:tls]... --cert C --key K --log FILE

Threaded, keep-alive, until killed; Debian's python3 standard library only.  Each accepted connection gets a number
(conn, from 1); every request is logged as one JSON line {"conn", "n" (its index on the connection), "peer" (the
gateway's source port), "method", "path", "auth" (the Authorization field, masked: see upstream_common.py), "who"
(the X-Who field)} as soon as its head is in, so the log never holds a real value.  Answers, by path:
  /slow/MS    waits MS milliseconds, then answers like anything else
  /desync     answers, then 1 s later writes a second, unrequested response on the same connection (a
              desynchronised or hostile upstream): its body is "DESYNC for <X-Who>"
  /ws         a WebSocket handshake (101), then every frame's payload echoed back as a text frame
  anything else  200, body "conn=<conn> n=<n> who=<X-Who>"
"""
import base64
import hashlib
import threading
import time

from upstream_common import BufConn, mask, serve

COUNTER = [0]
LOCK = threading.Lock()
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def response(body, extra=""):
    b = body.encode("latin-1")
    return ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n" % (len(b), extra)).encode(
        "latin-1") + b


class Conn(BufConn):
    def __init__(self, sock, ctx, log):
        super().__init__(sock, ctx, log)
        with LOCK:
            COUNTER[0] += 1
            self.num = COUNTER[0]
        self.n = 0
        self.peer = sock.getpeername()[1]

    def ws(self, hl):
        key = hl.get("sec-websocket-key", "").encode("latin-1")
        acc = base64.b64encode(hashlib.sha1(key + WS_GUID).digest()).decode()
        self.c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Accept: %s\r\n\r\n" % acc).encode("latin-1"))
        while True:
            h = self.exact(2)
            n = h[1] & 0x7F
            if n == 126:
                n = int.from_bytes(self.exact(2), "big")
            elif n == 127:
                n = int.from_bytes(self.exact(8), "big")
            mk = self.exact(4) if h[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mk[i % 4] for i, b in enumerate(self.exact(n)))
            if h[0] & 0x0F == 8:
                self.c.sendall(b"\x88\x00")
                return False
            out = b"echo:" + data
            self.c.sendall(bytes([0x81, len(out)]) + out if len(out) < 126 else
                           bytes([0x81, 126]) + len(out).to_bytes(2, "big") + out)

    def one(self):
        method, target, hl = self.request_head()
        self.n += 1
        path = target.partition("?")[0]
        who = hl.get("x-who", "")
        self.emit({"conn": self.num, "n": self.n, "peer": self.peer, "method": method, "path": mask(path),
                   "auth": mask(hl.get("authorization", "")), "who": mask(who)})
        if hl.get("content-length", "0") != "0":
            self.exact(int(hl["content-length"]))
        if path == "/ws":
            return self.ws(hl)
        if path.startswith("/slow/"):
            time.sleep(int(path[6:]) / 1000.0)
        self.c.sendall(response("conn=%d n=%d who=%s" % (self.num, self.n, who)))
        if path == "/desync":
            time.sleep(1.0)
            self.c.sendall(response("DESYNC for %s" % who))
        return hl.get("connection", "").lower() != "close"


if __name__ == "__main__":
    serve(Conn, __doc__)
