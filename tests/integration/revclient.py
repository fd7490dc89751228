#!/usr/bin/python3
"""revclient.py - one client connection kept open across a revocation, for test_revoke.sh and test_tenants.sh.

    revclient.py --proxy HOST:PORT --cafile CA --host NAME [--source ADDR] [--h2] [-H "Name: value"]... STEP...

It CONNECTs through the explicit proxy (from --source), speaks TLS trusting CA (ALPN http/1.1, or h2 with --h2)
and runs the steps in order on that one connection, printing one line per step (never a header value):
    get PATH      a GET with the -H fields: "get PATH status S close C body B" (C 1 when the answer said
                  Connection: close; B its body's first line), or "get PATH closed" when the connection ended
                  first; with --h2 a new stream: "get PATH status S body B", "get PATH reset CODE",
                  "get PATH goaway" (the connection refuses new streams) or "get PATH closed"
    send PATH     (HTTP/1.1) only the request; read PATH reads its answer and prints as get does
    read PATH
    post PATH N   (HTTP/1.1) a POST head announcing 2N body bytes and the first N of them; rest N sends the
    rest N        other N (then read PATH reads the answer)
    mark FILE     creates FILE (the test waits for it)
    wait FILE     waits up to 20 s for FILE to exist
    eof           "eof yes" when the gateway closes the connection within 3 s (with --h2 "eof goaway CODE" when a
                  GOAWAY came, then "eof yes|no"), else "eof no"
    wsopen PATH   (HTTP/1.1) a WebSocket upgrade with the -H fields: "wsopen status S"
    wsmsg TEXT    a masked text frame, then one frame back: "wsmsg text T", "wsmsg close" or "wsmsg closed"
Debian's /usr/bin/python3 (python3-h2 for --h2).
"""
import argparse
import base64
import os
import socket
import ssl
import sys
import time


class Http1:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def fill(self, timeout=10.0):
        self.s.settimeout(timeout)
        try:
            d = self.s.recv(65536)
        except (socket.timeout, ssl.SSLError, OSError):
            d = None
        if not d:
            raise EOFError
        self.buf += d

    def until(self, sep):
        while sep not in self.buf:
            self.fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self):
        head = self.until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        status = lines[0].split(" ")[1]
        fields = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, _, v = ln.partition(":")
                fields[k.strip().lower()] = v.strip()
        body = b""
        if "content-length" in fields:
            body = self.take(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            while True:
                n = int(self.until(b"\r\n").strip().split(b";")[0], 16)
                if n == 0:
                    self.until(b"\r\n")
                    break
                body += self.take(n)
                self.take(2)
        close = 1 if fields.get("connection", "").lower() == "close" else 0
        first = body.decode("latin-1").split("\n")[0][:80]
        return status, close, first

    def send(self, path, host, hdrs):
        req = "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path, host, "".join(h + "\r\n" for h in hdrs))
        try:
            self.s.sendall(req.encode("latin-1"))
        except OSError:
            pass

    def post(self, path, host, hdrs, n):
        req = "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n" % (
            path, host, 2 * n, "".join(h + "\r\n" for h in hdrs))
        self.s.sendall(req.encode("latin-1") + b"x" * n)

    def rest(self, n):
        try:
            self.s.sendall(b"y" * n)
        except OSError:
            pass

    def read(self, path):
        try:
            st, close, body = self.response()
            return "status %s close %d body %s" % (st, close, body)
        except (EOFError, ValueError, IndexError):
            return "closed"

    def eof(self):
        end = time.time() + 3
        while time.time() < end:
            try:
                self.fill(max(0.1, end - time.time()))
            except EOFError:
                return "eof yes"
        return "eof no"

    def wsopen(self, path, host, hdrs):
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n%s\r\n") % (path, host, key, "".join(h + "\r\n" for h in hdrs))
        self.s.sendall(req.encode("latin-1"))
        try:
            head = self.until(b"\r\n\r\n").decode("latin-1")
            return "status " + head.split(" ")[1]
        except EOFError:
            return "closed"

    def wsmsg(self, text):
        data = text.encode()
        mk = os.urandom(4)
        frame = bytes([0x81, 0x80 | len(data)]) + mk + bytes(b ^ mk[i % 4] for i, b in enumerate(data))
        try:
            self.s.sendall(frame)
            h = self.take(2)
            n = h[1] & 0x7F
            if n == 126:
                n = int.from_bytes(self.take(2), "big")
            payload = self.take(n)
        except (EOFError, OSError):
            return "closed"
        if h[0] & 0x0F == 8:
            return "close"
        return "text " + payload.decode("latin-1")


class Http2:
    def __init__(self, s, host):
        import h2.config
        import h2.connection
        self.h2 = __import__("h2.events").events
        self.s, self.host = s, host
        self.c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.c.initiate_connection()
        self.flush()
        self.goaway = None
        self.dead = False

    def flush(self):
        try:
            self.s.sendall(self.c.data_to_send())
        except OSError:
            self.dead = True

    def events(self, timeout):
        self.s.settimeout(timeout)
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return []
        except (ssl.SSLError, OSError):
            d = b""
        if not d:
            self.dead = True
            return []
        evs = self.c.receive_data(d)
        self.flush()
        for e in evs:
            if isinstance(e, self.h2.ConnectionTerminated):
                self.goaway = e.error_code
        return evs

    def get(self, path, hdrs):
        if self.dead:
            return "closed"
        if self.goaway is not None:
            return "goaway"
        sid = self.c.get_next_available_stream_id()
        fields = [(":method", "GET"), (":scheme", "https"), (":authority", self.host), (":path", path)]
        fields += [(h.partition(":")[0].strip().lower(), h.partition(":")[2].strip()) for h in hdrs]
        try:
            self.c.send_headers(sid, fields, end_stream=True)
        except Exception:  # noqa: BLE001 - h2 refuses new streams after a GOAWAY
            return "goaway"
        self.flush()
        status, body, end = None, b"", time.time() + 10
        while time.time() < end and not self.dead:
            for e in self.events(0.5):
                if isinstance(e, self.h2.ResponseReceived) and e.stream_id == sid:
                    status = dict(e.headers).get(b":status", b"?").decode()
                elif isinstance(e, self.h2.DataReceived) and e.stream_id == sid:
                    body += e.data
                    self.c.acknowledge_received_data(e.flow_controlled_length, sid)
                    self.flush()
                elif isinstance(e, self.h2.StreamEnded) and e.stream_id == sid:
                    return "status %s body %s" % (status, body.decode("latin-1").split("\n")[0][:80])
                elif isinstance(e, self.h2.StreamReset) and e.stream_id == sid:
                    return "reset %d" % e.error_code
            if self.goaway is not None and status is None and self.c.state_machine.state.name == "CLOSED":
                return "goaway"
        return "closed" if self.dead else "timeout"

    def eof(self):
        end = time.time() + 3
        while time.time() < end and not self.dead:
            self.events(0.2)
        out = "eof goaway %d " % self.goaway if self.goaway is not None else "eof "
        return out + ("yes" if self.dead else "no")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--cafile", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--source")
    ap.add_argument("--h2", action="store_true")
    ap.add_argument("-H", dest="hdrs", action="append", default=[])
    ap.add_argument("steps", nargs="*")
    a = ap.parse_args()
    ph, _, pp = a.proxy.rpartition(":")
    raw = socket.create_connection((ph, int(pp)), timeout=10, source_address=(a.source, 0) if a.source else None)
    raw.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (a.host, a.host)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        d = raw.recv(4096)
        if not d:
            print("connect closed")
            return
        got += d
    if b" 200 " not in got.split(b"\r\n")[0] + b" ":
        print("connect " + got.split(b"\r\n")[0].decode("latin-1"))
        return
    ctx = ssl.create_default_context(cafile=a.cafile)
    ctx.set_alpn_protocols(["h2"] if a.h2 else ["http/1.1"])
    s = ctx.wrap_socket(raw, server_hostname=a.host)
    conn = Http2(s, a.host) if a.h2 else Http1(s)
    steps = list(a.steps)
    while steps:
        op = steps.pop(0)
        if op in ("mark", "wait"):
            f = steps.pop(0)
            if op == "mark":
                open(f, "w").close()
            else:
                end = time.time() + 20
                while not os.path.exists(f) and time.time() < end:
                    time.sleep(0.05)
            continue
        if op == "eof":
            print(conn.eof())
        elif op == "get" and a.h2:
            p = steps.pop(0)
            print("get %s %s" % (p, conn.get(p, a.hdrs)))
        elif op == "get":
            p = steps.pop(0)
            conn.send(p, a.host, a.hdrs)
            print("get %s %s" % (p, conn.read(p)))
        elif op == "send":
            conn.send(steps.pop(0), a.host, a.hdrs)
        elif op == "post":
            p = steps.pop(0)
            conn.post(p, a.host, a.hdrs, int(steps.pop(0)))
        elif op == "rest":
            conn.rest(int(steps.pop(0)))
        elif op == "read":
            p = steps.pop(0)
            print("read %s %s" % (p, conn.read(p)))
        elif op == "wsopen":
            print("wsopen " + conn.wsopen(steps.pop(0), a.host, a.hdrs))
        elif op == "wsmsg":
            print("wsmsg " + conn.wsmsg(steps.pop(0)))
        else:
            print("unknown step " + op)
            sys.exit(2)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
