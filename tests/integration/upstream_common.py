"""What the tests' python upstreams share (echo_upstream.py, ws_upstream.py): the masking of secret values in
what they log, and the listeners (plain or TLS, one thread per connection).

Masks come from the environment: ECHO_MASK_<NAME>=<value> makes every occurrence of <value> read {{NAME}} in the
logs, so a log can be printed and asserted on without ever holding a value."""
import argparse
import json
import os
import socket
import ssl
import threading

MASKS = sorted(((k[len("ECHO_MASK_"):], v) for k, v in os.environ.items() if k.startswith("ECHO_MASK_") and v),
               key=lambda kv: -len(kv[1]))


def mask(s):
    for name, v in MASKS:
        s = s.replace(v, "{{%s}}" % name)
    return s


def seen(data):
    """Names of the masked values that occur anywhere in <data> (bytes)."""
    return [name for name, v in MASKS if v.encode("latin-1") in data]


def latin(b):
    return b.decode("latin-1")


class BufConn(threading.Thread):
    """One connection's thread with a read buffer (fill, a bounded line, exact bytes) and a JSON-lines log (emit).
    Subclasses set <c>'s protocol; <head_max> bounds a line."""
    lock = threading.Lock()
    head_max = 64 << 10

    def __init__(self, sock, ctx, log):
        super().__init__(daemon=True)
        self.c, self.ctx, self.log, self.buf = sock, ctx, log, b""

    def emit(self, rec):
        with BufConn.lock, open(self.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def fill(self):
        d = self.c.recv(65536)
        if not d:
            raise EOFError("eof")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > self.head_max:
                raise ValueError("line too long")
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def request_head(self):
        """Reads a request head: (method, target, fields), fields by lower-case name (the last one of a name wins)."""
        method, target, _ = latin(self.line()).split(" ", 2)
        hl = {}
        while True:
            ln = self.line()
            if not ln:
                break
            k, _, v = latin(ln).partition(":")
            hl[k.strip().lower()] = v.strip()
        return method, target, hl

    def run(self):
        """Keep-alive: TLS first when a context was given, then self.one() per request until it returns False."""
        try:
            if self.ctx is not None:
                self.c = self.ctx.wrap_socket(self.c, server_side=True)
            while self.one():
                pass
        except Exception:  # noqa: BLE001 - a peer that goes away ends its connection only
            pass
        try:
            self.c.close()
        except OSError:
            pass


def listen(spec, ctx, log, conn_cls):
    tls = spec.endswith(":tls")
    if tls:
        spec = spec[:-4]
    addr, _, port = spec.rpartition(":")
    addr = addr.strip("[]")
    ls = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(256)

    def loop():
        while True:
            c, _ = ls.accept()
            c.settimeout(30)
            conn_cls(c, ctx if tls else None, log).start()
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def serve(conn_cls, doc):
    """The command line of an upstream: --listen ADDR:PORT[:tls] (repeatable), --cert, --key, --log; runs forever.
    conn_cls(sock, ssl_ctx_or_None, log_path) is a thread that serves one connection."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", action="append", required=True, help="ADDR:PORT or ADDR:PORT:tls")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    ctx = None
    if any(s.endswith(":tls") for s in a.listen):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
    threads = [listen(s, ctx, a.log, conn_cls) for s in a.listen]
    for t in threads:
        t.join()
