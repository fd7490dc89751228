#!/usr/bin/python3
"""rawclient.py - send exact bytes through the sluice gateway and report its first answer.

Connects to the explicit proxy (--proxy) and, with --connect, opens a CONNECT tunnel and
wraps it in TLS trusting --cafile; without --connect the bytes go to the proxy as they are
(absolute-form plain HTTP).  --direct connects straight to an address instead (the
transparent listener from a sandbox namespace, or an upstream); add --tls for TLS there.

Each --send is one write: an escaped string (\\r \\n \\x00 \\\\ ...), or @FILE for a file's
bytes.  --split N cuts every write into N-byte writes, --delay S sleeps between writes.
--trickle DATA then sends DATA one byte every --trickle-delay seconds (a slowloris).

Output (stdout): the first line is the status code of the first response (000 if none
arrived), then its body.  A CONNECT that is refused prints the refusal's status and body.
--end adds a last line telling how the connection ended after that: "end: eof",
"end: reset" or "end: timeout" (still open when --timeout ran out).
--hold N first opens N tunnels (CONNECT 200 + TLS) from --hold-source and keeps them open
while the main exchange runs.

Exit status: 0 when the exchange ran (whatever the answer), 3 when the connection or the
TLS handshake failed (000 printed), 2 on bad usage.

rawclient.py upstream --listen ADDR:PORT[:tls]... --cert C --key K --log FILE [--stall ADDR:PORT]
runs a misbehaving test upstream (threaded, until killed).  Every request head is logged as
{"ev":"head",...}; its body is read strictly (Content-Length or chunked) and logged as
{"ev":"body","target":..,"complete":true|false,"len":..}; then it answers "up LEN\n".
Paths: /bighead answers with a 1 MiB header line; /close-mid sends Content-Length: 100000,
10 bytes and closes; /hang reads the request and never answers; /stall-body reads the head and
then nothing for 8 s, and closes; /flood answers 256 MiB as fast as it is taken.  --stall accepts TCP
connections and never reads from them (a TLS handshake there never completes).
"""
import argparse
import codecs
import select
import socket
import ssl
import sys
import threading
import time

from upstream_common import BufConn


class Timeout(Exception):
    pass


def hostport(s):
    if s.startswith("["):
        h, _, p = s[1:].partition("]:")
        return h, int(p)
    h, _, p = s.rpartition(":")
    return h, int(p)


def payload(item):
    if item.startswith("@"):
        with open(item[1:], "rb") as f:
            return f.read()
    return codecs.escape_decode(item.encode("utf-8"))[0]


class Reader:
    """Buffered reads against one overall deadline."""

    def __init__(self, sock, deadline):
        self.s = sock
        self.buf = b""
        self.deadline = deadline
        self.eof = False
        self.how = None  # eof | reset

    def fill(self):
        if self.eof:
            return False
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Timeout()
        self.s.settimeout(left)
        try:
            d = self.s.recv(65536)
        except (socket.timeout, TimeoutError):
            raise Timeout()
        except (ConnectionResetError, BrokenPipeError):
            self.eof, self.how = True, "reset"
            return False
        except ssl.SSLError as e:
            self.eof, self.how = True, "eof" if "EOF" in str(e) or "eof" in str(e) else "reset"
            return False
        except OSError:
            self.eof, self.how = True, "reset"
            return False
        if not d:
            self.eof, self.how = True, "eof"
            return False
        self.buf += d
        return True

    def until(self, sep, limit=4 << 20):
        while sep not in self.buf:
            if len(self.buf) > limit or not self.fill():
                return None
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def take(self, n):
        while len(self.buf) < n:
            if not self.fill():
                break
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self):
        while self.fill():
            pass
        out, self.buf = self.buf, b""
        return out


def read_response(r, method):
    """Returns (status, headers dict (lower-case), body) or None when nothing complete arrived."""
    head = r.until(b"\r\n\r\n")
    if head is None:
        return None
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    status = int(parts[1])
    hdrs = {}
    for ln in lines[1:]:
        if b":" in ln:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    body = b""
    if method == b"HEAD" or status in (204, 304) or 100 <= status < 200 or (method == b"CONNECT" and status == 200):
        return status, hdrs, body
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        while True:
            ln = r.until(b"\r\n")
            if ln is None:
                break
            try:
                n = int(ln.split(b";")[0].strip(), 16)
            except ValueError:
                break
            if n == 0:
                r.until(b"\r\n")
                break
            body += r.take(n)
            r.take(2)
    elif "content-length" in hdrs:
        body = r.take(int(hdrs["content-length"]))
    else:
        body = r.rest()
    return status, hdrs, body


def poll_read(s):
    """Bytes the peer already sent (b"" if none); TLS records without application data do not count."""
    if not select.select([s], [], [], 0)[0] and not (isinstance(s, ssl.SSLSocket) and s.pending()):
        return b""
    s.settimeout(0)
    try:
        return s.recv(65536) or b""
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return b""
    except (OSError, ssl.SSLError):
        return b""


def tunnel(args, source, deadline):
    """Connects (to the proxy, CONNECT + TLS, or --direct); returns (socket, refusal or None)."""
    left = max(0.1, deadline - time.monotonic())
    if args.direct:
        addr = hostport(args.direct)
    else:
        addr = hostport(args.proxy)
    s = socket.create_connection(addr, timeout=left, source_address=(source, 0) if source else None)
    if args.connect:
        s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args.connect.encode(), args.connect.encode()))
        r = Reader(s, deadline)
        res = read_response(r, b"CONNECT")
        if res is None:
            return s, (0, b"")
        if res[0] != 200:
            return s, (res[0], res[2])
    if args.connect or args.tls:
        sni = args.sni or hostport(args.connect or args.direct)[0]
        if args.insecure:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            ctx = ssl.create_default_context(cafile=args.cafile)
            if args.no_check_hostname:
                ctx.check_hostname = False
        ctx.set_alpn_protocols(["http/1.1"])
        s.settimeout(max(0.1, deadline - time.monotonic()))
        s = ctx.wrap_socket(s, server_hostname=sni)
    return s, None


class UpConn(BufConn):
    head_max = 1 << 20  # /bighead's line and the like

    def __init__(self, sock, log, ctx):
        super().__init__(sock, ctx, log)

    def emit(self, **rec):
        super().emit(rec)

    def body(self, hl):
        te = hl.get("transfer-encoding", "")
        if te:
            if te.lower() != "chunked" or "content-length" in hl:
                raise ValueError("framing: te=%r" % te)
            n = 0
            while True:
                sz = self.line().split(b";")[0]
                if not sz or any(ch not in b"0123456789abcdefABCDEF" for ch in sz) or len(sz) > 15:
                    raise ValueError("bad chunk size %r" % sz)
                k = int(sz, 16)
                if k == 0:
                    while self.line():
                        pass
                    return n
                self.exact(k)
                if self.exact(2) != b"\r\n":
                    raise ValueError("no CRLF after chunk data")
                n += k
        if "content-length" in hl:
            v = hl["content-length"]
            if not v.isdigit():
                raise ValueError("bad content-length %r" % v)
            return len(self.exact(int(v)))
        return 0

    def one(self):
        rl = self.line().decode("latin-1")
        method, target, version = rl.split(" ", 2)
        hl = {}
        while True:
            ln = self.line()
            if not ln:
                break
            k, _, v = ln.decode("latin-1").partition(":")
            k = k.lower()
            if k in hl:
                hl[k] += ", " + v.strip()
            else:
                hl[k] = v.strip()
        self.emit(ev="head", method=method, target=target, version=version, headers=hl)
        if target.startswith("/bighead"):
            self.c.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (1 << 20) + b"\r\nContent-Length: 3\r\n\r\nbig")
            return False
        if target.startswith("/close-mid"):
            self.c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789")
            return False
        if target.startswith("/stall-body"):
            time.sleep(8)  # reads the head, then not a byte of the body for 8 s, and closes
            return False
        if target.startswith("/flood"):
            n = 256 << 20  # far more than any bound of the gateway; sent as fast as the gateway takes it
            self.c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
            chunk = b"\0" * 65536
            for _ in range(n // len(chunk)):
                self.c.sendall(chunk)
            return False
        if hl.get("expect", "").lower() == "100-continue":
            self.c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            n = self.body(hl)
        except Exception as e:  # noqa: BLE001 - any failure means an incomplete body
            self.emit(ev="body", target=target, complete=False, why=str(e) or type(e).__name__)
            return False
        self.emit(ev="body", target=target, complete=True, len=n)
        if target.startswith("/hang"):
            time.sleep(3600)
            return False
        msg = b"up %d\n" % n
        self.c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(msg), msg))
        return hl.get("connection", "").lower() != "close"


def up_listen(spec, ctx, log, stall, held):
    parts = spec.rsplit(":", 2) if spec.endswith(":tls") else spec.rsplit(":", 1)
    addr, port = parts[0].strip("[]"), int(parts[1])
    ls = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(256)
    tls = spec.endswith(":tls")

    def loop():
        while True:
            c, _ = ls.accept()
            if stall:
                held.append(c)  # never read, never answer
                continue
            c.settimeout(60)
            UpConn(c, log, ctx if tls else None).start()
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def upstream_main(argv):
    ap = argparse.ArgumentParser(prog="rawclient.py upstream")
    ap.add_argument("--listen", action="append", default=[], help="ADDR:PORT or ADDR:PORT:tls")
    ap.add_argument("--stall", action="append", default=[], help="ADDR:PORT: accept and never answer")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    ctx = None
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
    held = []
    for spec in a.listen:
        up_listen(spec, ctx, a.log, False, held)
    for spec in a.stall:
        up_listen(spec, ctx, a.log, True, held)
    while True:
        time.sleep(3600)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "upstream":
        return upstream_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proxy", help="explicit proxy HOST:PORT")
    ap.add_argument("--connect", help="CONNECT authority (then TLS inside the tunnel)")
    ap.add_argument("--direct", help="connect straight to HOST:PORT instead of the proxy")
    ap.add_argument("--tls", action="store_true", help="TLS on --direct")
    ap.add_argument("--sni", help="server name for TLS (default: the CONNECT/--direct host)")
    ap.add_argument("--cafile", help="CA to trust (the sluice CA)")
    ap.add_argument("--insecure", action="store_true", help="do not verify the server certificate")
    ap.add_argument("--no-check-hostname", action="store_true")
    ap.add_argument("--source", help="local source address")
    ap.add_argument("--send", action="append", default=[], help="escaped bytes or @FILE; one write each")
    ap.add_argument("--trickle", help="escaped bytes or @FILE sent after the --send writes, one byte at a time")
    ap.add_argument("--trickle-delay", type=float, default=1.0, help="seconds between trickled bytes")
    ap.add_argument("--split", type=int, default=0, help="cut writes into N-byte pieces")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds between writes")
    ap.add_argument("--timeout", type=float, default=10.0, help="overall deadline in seconds")
    ap.add_argument("--end", action="store_true", help="report how the connection ended")
    ap.add_argument("--hold", type=int, default=0, help="open N tunnels first and keep them open")
    ap.add_argument("--hold-source", help="source address of the held tunnels (default --source)")
    ap.add_argument("--method", default=None, help="method of the request sent (for HEAD framing)")
    args = ap.parse_args()
    if not args.proxy and not args.direct:
        ap.error("--proxy or --direct is required")

    deadline = time.monotonic() + args.timeout
    held = []
    try:
        hold_src = args.hold_source or args.source
        for _ in range(args.hold):
            hs, refused = tunnel(args, hold_src, deadline)
            if refused is not None:
                print("hold: tunnel refused with %d" % refused[0], file=sys.stderr)
                return 3
            held.append(hs)
        s, refused = tunnel(args, args.source, deadline)
    except (OSError, ssl.SSLError, socket.timeout) as e:
        print("000")
        print("rawclient: %s" % e, file=sys.stderr)
        return 3

    if refused is not None:
        sys.stdout.write("%03d\n" % refused[0])
        sys.stdout.flush()
        sys.stdout.buffer.write(refused[1])
        if args.end:
            r = Reader(s, deadline)
            try:
                r.rest()
                how = r.how
            except Timeout:
                how = "timeout"
            sys.stdout.write("%send: %s\n" % ("" if refused[1].endswith(b"\n") or not refused[1] else "\n", how))
        return 0

    writes = []
    for item in args.send:
        data = payload(item)
        if args.split > 0:
            writes += [data[i:i + args.split] for i in range(0, len(data), args.split)]
        else:
            writes.append(data)
    if args.trickle:
        t = payload(args.trickle)
        writes += [t[i:i + 1] for i in range(len(t))]
    first = b"".join(writes[:1]) or (payload(args.trickle) if args.trickle else b"")
    method = args.method.encode() if args.method else first.split(b" ", 1)[0]

    how = None
    early = b""
    try:
        ntrickle = len(payload(args.trickle)) if args.trickle else 0
        for i, w in enumerate(writes):
            if i >= len(writes) - ntrickle and i > 0:
                time.sleep(args.trickle_delay)
            elif i and args.delay:
                time.sleep(args.delay)
            # big writes go in pieces; once the gateway answers (it refused early), stop writing and read
            for off in range(0, max(len(w), 1), 16384):
                got = poll_read(s)
                if got:
                    early += got
                    raise StopIteration
                s.settimeout(max(0.1, deadline - time.monotonic()))
                s.sendall(w[off:off + 16384])
    except StopIteration:
        pass
    except (socket.timeout, TimeoutError):
        how = "timeout"
    except (OSError, ssl.SSLError):
        how = "reset"  # the gateway closed while we wrote; its answer may still be readable

    r = Reader(s, deadline)
    r.buf = early
    res = None
    try:
        res = read_response(r, method)
    except Timeout:
        how = "timeout"
    if res is None:
        sys.stdout.write("000\n")
    else:
        sys.stdout.write("%03d\n" % res[0])
        sys.stdout.flush()
        sys.stdout.buffer.write(res[2])
    if args.end:
        if how != "timeout":
            try:
                r.rest()
                how = r.how
            except Timeout:
                how = "timeout"
        body = res[2] if res is not None else b""
        sys.stdout.buffer.flush()
        sys.stdout.write("%send: %s\n" % ("" if body.endswith(b"\n") or not body else "\n", how))
    return 0


if __name__ == "__main__":
    sys.exit(main())
