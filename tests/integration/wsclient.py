#!/usr/bin/python3
"""wsclient.py - a small WebSocket client speaking through the sluice gateway, for test_websocket.sh.

    wsclient.py (--proxy H:P | --direct H:P) --host NAME [--port 443] --cafile CA [--path /ws]
                [--header "K: V"]... [--timeout S] STEP...

Connects to the explicit proxy (--proxy: CONNECT NAME:PORT, then TLS) or straight to an address (--direct: the
transparent listener, TLS with SNI NAME), sends the upgrade request (Sec-WebSocket-Key, version 13, the extra
headers) and runs the steps in order.  Strings are escape-decoded (\\r \\n \\x00 \\\\ ...).
    text:S              one masked TEXT frame with FIN
    binary:S            one masked BINARY frame with FIN
    frame:OP:FIN:S      one masked frame with opcode OP (0..15) and FIN (0/1)
    split:K:S           one masked TEXT frame with FIN, in two writes 50 ms apart, cut K bytes into the payload
    raw:S               these bytes as they are (malformed frames)
    recv:N              read N whole messages (fragments joined; pings are answered and not counted)
    close               read until the connection ends
    sleep:S             wait S seconds
Each frame is one write.  Output (stdout), one line each:
    status CODE                     the upgrade's answer (000 if none; then it stops)
    text[K] DATA / binary[K] HEX    a message received, K = the number of frames it came in
    ping / pong                     control frames received
    close CODE                      a close frame received (code, or "-" when it had none)
    end: eof | reset | timeout      how the connection ended (close step, or a read that could not finish)
Exit 0 when the steps ran (whatever came back), 3 when the connection or the handshake failed.
"""
import argparse
import base64
import codecs
import os
import socket
import ssl
import sys
import time


class Ended(Exception):
    pass


def hostport(s):
    h, _, p = s.rpartition(":")
    return h.strip("[]"), int(p)


def unesc(s):
    return codecs.escape_decode(s.encode("utf-8"))[0]


def frame(op, fin, data):
    key = os.urandom(4)
    n = len(data)
    b0 = (0x80 if fin else 0) | op
    if n < 126:
        h = bytes([b0, 0x80 | n])
    elif n < 65536:
        h = bytes([b0, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        h = bytes([b0, 0x80 | 127]) + n.to_bytes(8, "big")
    return h + key + bytes(x ^ key[i % 4] for i, x in enumerate(data))


class Conn:
    def __init__(self, sock, deadline):
        self.s, self.buf, self.deadline = sock, b"", deadline

    def fill(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Ended("timeout")
        self.s.settimeout(left)
        try:
            d = self.s.recv(65536)
        except (socket.timeout, TimeoutError):
            raise Ended("timeout")
        except ssl.SSLError as e:
            raise Ended("eof" if "EOF" in str(e) else "reset")
        except OSError:
            raise Ended("reset")
        if not d:
            raise Ended("eof")
        self.buf += d

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def frame(self):
        b0, b1 = self.exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(self.exact(2), "big")
        elif n == 127:
            n = int.from_bytes(self.exact(8), "big")
        key = self.exact(4) if b1 & 0x80 else None
        data = self.exact(n)
        if key:
            data = bytes(x ^ key[i % 4] for i, x in enumerate(data))
        return b0 >> 7, b0 & 0x0F, data


def connect(a, deadline):
    left = max(0.1, deadline - time.monotonic())
    if a.proxy:
        s = socket.create_connection(hostport(a.proxy), timeout=left)
        auth = "%s:%d" % (a.host, a.port)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (auth, auth)).encode())
        h = b""
        while b"\r\n\r\n" not in h:
            d = s.recv(1)
            if not d:
                return None
            h += d
        if h.split(b" ")[1] != b"200":
            return None
    else:
        s = socket.create_connection(hostport(a.direct), timeout=left)
    ctx = ssl.create_default_context(cafile=a.cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(s, server_hostname=a.host)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proxy")
    ap.add_argument("--direct")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--cafile", required=True)
    ap.add_argument("--path", default="/ws")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=10)
    ap.add_argument("steps", nargs="*")
    a = ap.parse_args()
    out = sys.stdout
    deadline = time.monotonic() + a.timeout
    try:
        s = connect(a, deadline)
    except (OSError, ssl.SSLError):
        s = None
    if s is None:
        print("status 000")
        return 3
    key = base64.b64encode(os.urandom(16)).decode()
    host = a.host if a.port == 443 else "%s:%d" % (a.host, a.port)
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
           "Sec-WebSocket-Version: 13\r\n" % (a.path, host, key))
    for h in a.header:
        req += h + "\r\n"
    s.sendall((req + "\r\n").encode("latin-1"))
    c = Conn(s, deadline)
    try:
        while b"\r\n\r\n" not in c.buf:
            c.fill()
    except Ended:
        print("status 000")
        return 3
    head, c.buf = c.buf.split(b"\r\n\r\n", 1)
    status = head.split(b" ")[1].decode("latin-1") if b" " in head else "000"
    print("status " + status)
    for line in head.split(b"\r\n")[1:]:  # an echo header of the upgrade's answer, as the client got it
        if line.lower().startswith(b"x-echo-auth:"):
            print("101 header " + line.decode("latin-1"))
    out.flush()
    if status != "101":
        return 0
    try:
        for step in a.steps:
            kind, _, arg = step.partition(":")
            if kind == "text":
                s.sendall(frame(1, 1, unesc(arg)))
            elif kind == "binary":
                s.sendall(frame(2, 1, unesc(arg)))
            elif kind == "frame":
                op, fin, data = arg.split(":", 2)
                s.sendall(frame(int(op), int(fin), unesc(data)))
            elif kind == "split":
                k, data = arg.split(":", 1)
                f = frame(1, 1, unesc(data))
                cut = len(f) - len(unesc(data)) + int(k)
                s.sendall(f[:cut])
                time.sleep(0.05)
                s.sendall(f[cut:])
            elif kind == "raw":
                s.sendall(unesc(arg))
            elif kind == "sleep":
                time.sleep(float(arg))
            elif kind in ("recv", "close"):
                want = int(arg) if kind == "recv" else -1
                got, msg, mop, k = 0, b"", 0, 0
                while want < 0 or got < want:
                    fin, op, data = c.frame()
                    if op == 9:
                        print("ping")
                        s.sendall(frame(10, 1, data))
                        continue
                    if op == 10:
                        print("pong")
                        continue
                    if op == 8:
                        print("close %s" % (int.from_bytes(data[:2], "big") if len(data) >= 2 else "-"))
                        continue
                    if op != 0:
                        mop, msg, k = op, b"", 0
                    msg += data
                    k += 1
                    if fin:
                        if mop == 1:
                            print("text[%d] %s" % (k, msg.decode("utf-8", "replace")))
                        else:
                            print("binary[%d] %s" % (k, msg.hex()))
                        got += 1
                    out.flush()
            else:
                print("bad step " + step)
                return 2
            out.flush()
    except Ended as e:
        print("end: %s" % e)
    except (OSError, ssl.SSLError):
        print("end: reset")
    return 0


if __name__ == "__main__":
    sys.exit(main())
