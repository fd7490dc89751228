#!/usr/bin/python3
"""ws_upstream.py - a WebSocket echo upstream over TLS, for test_websocket.sh.

    ws_upstream.py --listen ADDR:PORT[:tls]... --cert C --key K --log FILE

Threaded, until killed; Debian's python3 standard library only.  Any request with Upgrade: websocket and a
Sec-WebSocket-Key is answered 101 (no extension is ever accepted); anything else gets 404.  Then it reads client
frames strictly (masked, no RSV bits, known opcodes, control frames FIN and at most 125 bytes) and answers each
complete message:
    "auth"              a text message "auth=[<the Authorization header of the upgrade request>]", one frame
    "auth-split N"      the same text, fragmented at byte offset N: a TEXT frame without FIN, a ping, then a
                        continuation frame with FIN (N = 0 or the length: one fragment is empty)
    "stored"            (text or binary) a message of the same type with the value of the environment variable
                        WS_STORED between \x00 and \xff bytes (text: < and >), cut in two frames inside the value, a ping
                        between them: what the bound service stored, read back by a connection that injected
                        nothing (issue 17)
    anything else       echoed back as one frame of the same type (text or binary)
A ping is answered with a pong, a close with a close (then the connection ends).  Frames it sends are unmasked.

The log (JSON lines) never holds a real secret: every value given in an environment variable ECHO_MASK_<NAME> is
written as {{<NAME>}} wherever it occurs in a logged string (as echo_upstream.py does).  Records:
    {"ev":"head","conn":N,"path","auth","extensions","upgrade"}      the upgrade request (auth masked)
    {"ev":"frame","conn":N,"op","fin","len","data"}                  each frame received (data: payload as latin-1,
                                                                      masked, at most 4 KiB)
    {"ev":"bad","conn":N,"why"}                                      a malformed frame (the connection ends)
    {"ev":"end","conn":N,"why","frames","seen"}                      the connection ended: frames received, and
                                                                      seen: the names of masked values found in
                                                                      all its payloads joined end to end
"""
import base64
import hashlib
import itertools
import os

from upstream_common import BufConn, latin, mask, seen, serve

HEAD_MAX = 64 << 10     # bytes of a request head
PAYLOAD_MAX = 1 << 20   # bytes of one frame or message
SEEN_MAX = 4 << 20      # payload bytes of one connection kept to look for values
LOGGED = 4096           # bytes of a frame's payload in the log
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

IDS = itertools.count(1)


def frame(op, data, fin=True):
    n = len(data)
    b0 = (0x80 if fin else 0) | op
    if n < 126:
        h = bytes([b0, n])
    elif n < 65536:
        h = bytes([b0, 126]) + n.to_bytes(2, "big")
    else:
        h = bytes([b0, 127]) + n.to_bytes(8, "big")
    return h + data


class Bad(Exception):
    pass


class Conn(BufConn):
    def __init__(self, sock, ctx, log):
        super().__init__(sock, ctx, log)
        self.id = next(IDS)
        self.frames = 0
        self.payloads = b""
        self.auth = ""

    def emit(self, rec):
        rec["conn"] = self.id
        super().emit(rec)

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > HEAD_MAX:
                raise Bad("head too long")
            self.fill()
        h, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = latin(h).split("\r\n")
        _, target, _ = lines[0].split(" ", 2)
        hl = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            k = k.strip().lower()
            hl[k] = hl[k] + ", " + v.strip() if k in hl else v.strip()
        return target, hl

    def read_frame(self):
        b0, b1 = self.exact(2)
        fin, rsv, op, masked, n = b0 >> 7, b0 & 0x70, b0 & 0x0F, b1 >> 7, b1 & 0x7F
        if rsv:
            raise Bad("RSV bits set")
        if op not in (0, 1, 2, 8, 9, 10):
            raise Bad("unknown opcode %d" % op)
        if not masked:
            raise Bad("client frame not masked")
        if op >= 8 and (not fin or n > 125):
            raise Bad("bad control frame")
        if n == 126:
            n = int.from_bytes(self.exact(2), "big")
        elif n == 127:
            n = int.from_bytes(self.exact(8), "big")
        if n > PAYLOAD_MAX:
            raise Bad("frame too long")
        key = self.exact(4)
        data = bytes(x ^ key[i % 4] for i, x in enumerate(self.exact(n)))
        self.frames += 1
        if len(self.payloads) < SEEN_MAX:
            self.payloads += data
        self.emit({"ev": "frame", "op": op, "fin": bool(fin), "len": n, "data": mask(latin(data[:LOGGED]))})
        return fin, op, data

    def answer(self, op, msg):
        if op in (1, 2) and msg == b"stored":
            v = os.environ.get("WS_STORED", "").encode("latin-1")
            text = (b"\x00" + v + b"\xff") if op == 2 else (b"<" + v + b">")
            k = 1 + len(v) // 2
            self.c.sendall(frame(op, text[:k], fin=False) + frame(9, b"mid") + frame(0, text[k:]))
        elif op == 1 and msg == b"auth":
            self.c.sendall(frame(1, b"auth=[" + self.auth.encode("latin-1") + b"]"))
        elif op == 1 and msg.startswith(b"auth-split "):
            text = b"auth=[" + self.auth.encode("latin-1") + b"]"
            k = max(0, min(len(text), int(msg.split(b" ")[1])))
            self.c.sendall(frame(1, text[:k], fin=False) + frame(9, b"mid") + frame(0, text[k:]))
        else:
            self.c.sendall(frame(op, msg))

    def serve(self):
        target, hl = self.head()
        key = hl.get("sec-websocket-key", "")
        self.auth = hl.get("authorization", "")
        self.emit({"ev": "head", "path": mask(target), "auth": mask(self.auth),
                   "extensions": hl.get("sec-websocket-extensions", ""), "upgrade": hl.get("upgrade", "")})
        if hl.get("upgrade", "").lower() != "websocket" or not key:
            self.c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return "not an upgrade"
        acc = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        echo = "X-Echo-Auth: %s\r\n" % self.auth if target.startswith("/ws-auth") else ""
        self.c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Accept: %s\r\n%s\r\n" % (acc, echo)).encode("latin-1"))
        msg, mop = b"", 0
        while True:
            fin, op, data = self.read_frame()
            if op == 8:
                self.c.sendall(frame(8, data[:2]))
                return "close"
            if op == 9:
                self.c.sendall(frame(10, data))
                continue
            if op == 10:
                continue
            if op != 0:
                if mop:
                    raise Bad("new message inside a fragmented one")
                mop, msg = op, b""
            elif not mop:
                raise Bad("continuation outside a message")
            msg += data
            if len(msg) > PAYLOAD_MAX:
                raise Bad("message too long")
            if fin:
                self.answer(mop, msg)
                mop = 0

    def run(self):
        why = "?"
        try:
            if self.ctx is not None:
                self.c = self.ctx.wrap_socket(self.c, server_side=True)
            why = self.serve()
        except Bad as e:
            why = str(e)
            self.emit({"ev": "bad", "why": why})
        except (EOFError, OSError, ValueError) as e:
            why = str(e) or type(e).__name__
        self.emit({"ev": "end", "why": why, "frames": self.frames, "seen": seen(self.payloads)})
        try:
            self.c.close()
        except OSError:
            pass


if __name__ == "__main__":
    serve(Conn, __doc__)
