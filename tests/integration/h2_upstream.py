"""An HTTP/2-only TLS upstream for the tests (ALPN h2; python3-h2), hostile when asked.

Every request is logged as one JSON line: method, path, authority, the masked fields (see upstream_common.py),
the body's length and sha256, the request trailers, and which TLS connection it came on (conn, a counter), so a
test can count upstream handshakes.  Responses, by path:
  /big/N        N bytes (byte i is i % 251) with content-length
  /chunky/N     N bytes, no content-length, in DATA frames of 1000 bytes
  /echo         "auth=[..] key=[..] len=N" (the request's authorization, x-api-key, body length), x-echo-auth header
  /trailers     body "t", then trailers x-t: yes and x-echo-auth: <authorization>
  /bad/crlf     a response field whose value holds CR LF
  /bad/conn     a connection: close field
  /bad/upper    an uppercase field name
  /bad/cl       content-length: 10 with 5 bytes of DATA
  /bad/nul      a field value with a NUL
  /reset        RST_STREAM (INTERNAL_ERROR) instead of an answer
  /mcp?m=MODE   an MCP server's answers to the JSON-RPC request in the body (the tools and events of
                mcp_upstream.py, the answer's id the request's): json (application/json, content-length), sse (the
                event stream in DATA frames of 7 bytes, cutting events and lines anywhere), sse1 (one DATA frame
                per byte), ssebig (a ping, then an event of 10 MiB, then a list event never reached), ask (a
                server-to-client request "srv-1" in an event, the stream left open until the answer to it was
                POSTed (ack) or 4 s passed, then the result "answered" or "unanswered"), ack (202, the answer's id
                remembered), refuse (the first such request of the process is reset with REFUSED_STREAM, unprocessed;
                later ones are answered as json)
  anything else "hello h2"
It allows extended CONNECT (RFC 8441): CONNECT :protocol websocket gets a 200 and then a WebSocket echo, every
text message answered "echo:<text>", a close answered with a close and END_STREAM.
Sends respect the peer's flow-control windows, stream by stream, so a stream whose reader is slow waits alone."""
import argparse
import hashlib
import json
import socket
import ssl
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

import mcp_upstream
from upstream_common import latin, listen, mask, seen

COUNTER = [0]
REFUSED = [0]  # requests of mode refuse reset so far
LOCK = threading.Lock()


def pattern(n):
    return bytes(i % 251 for i in range(n))


class Conn(threading.Thread):
    def __init__(self, sock, ctx, log):
        super().__init__(daemon=True)
        self.raw, self.ctx, self.log = sock, ctx, log
        self.streams = {}   # id -> {"headers", "body", "trailers"}
        self.pending = {}   # id -> [bytes left, trailers or None]
        self.ws = {}        # id -> bytes of client frames not parsed yet
        self.asks = {}      # id -> (the request's id, when to give up waiting for the answer)
        with LOCK:
            COUNTER[0] += 1
            self.num = COUNTER[0]

    def write_log(self, rec):
        with LOCK, open(self.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def run(self):
        try:
            self.sock = self.ctx.wrap_socket(self.raw, server_side=True)
        except (ssl.SSLError, OSError):
            return
        cfg = h2.config.H2Configuration(client_side=False, header_encoding=None, validate_outbound_headers=False,
                                        normalize_outbound_headers=False, validate_inbound_headers=True)
        self.c = h2.connection.H2Connection(cfg)
        self.c.initiate_connection()
        self.c.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 200,
                                h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL: 1})
        self.flush()
        self.sock.settimeout(0.05)
        try:
            while True:
                try:
                    data = self.sock.recv(65536)
                    if not data:
                        return
                    events = self.c.receive_data(data)
                except socket.timeout:
                    events = []
                for ev in events:
                    self.event(ev)
                self.send_pending()
                self.tick_asks()
                self.flush()
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
            return

    def flush(self):
        out = self.c.data_to_send()
        if out:
            self.sock.sendall(out)

    def event(self, ev):
        if isinstance(ev, h2.events.RequestReceived) and (b":method", b"CONNECT") in ev.headers:
            h = {latin(k): latin(v) for k, v in ev.headers}
            self.write_log({"ev": "ws", "conn": self.num, "stream": ev.stream_id, "path": h.get(":path"),
                            "protocol": h.get(":protocol"), "headers": {k: mask(v) for k, v in h.items()}})
            self.c.send_headers(ev.stream_id, [(":status", "200")])
            self.ws[ev.stream_id] = b""
        elif isinstance(ev, h2.events.DataReceived) and ev.stream_id in self.ws:
            self.c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            self.ws_frames(ev.stream_id, self.ws[ev.stream_id] + ev.data)
        elif isinstance(ev, h2.events.RequestReceived):
            self.streams[ev.stream_id] = {"headers": ev.headers, "body": bytearray(), "trailers": []}
            if ev.stream_ended:
                self.answer(ev.stream_id)
        elif isinstance(ev, h2.events.DataReceived):
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st["body"] += ev.data
            self.c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.TrailersReceived):
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st["trailers"] = ev.headers
        elif isinstance(ev, h2.events.StreamEnded):
            if ev.stream_id in self.streams:
                self.answer(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset):
            self.pending.pop(ev.stream_id, None)
            self.ws.pop(ev.stream_id, None)
            self.asks.pop(ev.stream_id, None)

    def ws_frames(self, sid, buf):
        """Client frames (masked) in <buf>: text echoed back unmasked, close answered; the rest kept."""
        while len(buf) >= 2:
            op, n, off = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if n == 126:
                n, off = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                n, off = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < off + 4 + n:
                break
            key = buf[off:off + 4]
            p = bytes(b ^ key[i % 4] for i, b in enumerate(buf[off + 4:off + 4 + n]))
            buf = buf[off + 4 + n:]
            if op == 1:
                out = b"echo:" + p
                self.c.send_data(sid, bytes([0x81, len(out)]) + out if len(out) < 126 else
                                 bytes([0x81, 126]) + len(out).to_bytes(2, "big") + out)
                self.write_log({"ev": "ws-text", "stream": sid, "text": mask(latin(p)), "seen": seen(p)})
            elif op == 8:
                self.c.send_data(sid, bytes([0x88, len(p)]) + p, end_stream=True)
                self.ws.pop(sid, None)
                return
        self.ws[sid] = buf

    def answer(self, sid):
        st = self.streams.pop(sid)
        h = {}
        for k, v in st["headers"]:
            h.setdefault(latin(k), latin(v))
        path = h.get(":path", "")
        body = bytes(st["body"])
        self.write_log({"ev": "req", "conn": self.num, "stream": sid, "method": h.get(":method"), "path": path,
                        "authority": h.get(":authority"), "headers": {k: mask(v) for k, v in h.items()},
                        "body_len": len(body), "sha": hashlib.sha256(body).hexdigest(),
                        "trailers": {latin(k): mask(latin(v)) for k, v in st["trailers"]},
                        "seen": seen(body + b"".join(k + b"=" + v for k, v in st["headers"]))})
        auth, key = h.get("authorization", ""), h.get("x-api-key", "")
        if path == "/reset":
            self.c.reset_stream(sid, 2)
            return
        if path.split("?")[0] == "/mcp":
            self.mcp(sid, path.partition("m=")[2].split("&")[0] or "json", body)
            return
        if path.startswith("/big/"):
            n = int(path[5:])
            self.c.send_headers(sid, [(":status", "200"), ("content-length", str(n))])
            self.pending[sid] = [pattern(n), None]
            return
        if path.startswith("/chunky/"):
            self.c.send_headers(sid, [(":status", "200")])
            self.pending[sid] = [pattern(int(path[8:])), None]
            return
        if path == "/echo":
            out = ("auth=[%s] key=[%s] len=%d\n" % (auth, key, len(body))).encode("latin-1")
            self.c.send_headers(sid, [(":status", "200"), ("x-echo-auth", auth)])
            self.pending[sid] = [out, None]
            return
        if path == "/trailers":
            self.c.send_headers(sid, [(":status", "200")])
            self.pending[sid] = [b"t", [("x-t", "yes"), ("x-echo-auth", auth)]]
            return
        bad = {"/bad/crlf": [("x-a", "a\r\nx-injected: 1")], "/bad/conn": [("connection", "close")],
               "/bad/upper": [("X-Up", "1")], "/bad/nul": [("x-a", "a\x00b")]}
        if path in bad:
            self.c.send_headers(sid, [(":status", "200")] + bad[path], end_stream=True)
            return
        if path == "/bad/cl":
            self.c.send_headers(sid, [(":status", "200"), ("content-length", "10")])
            self.c.send_data(sid, b"12345", end_stream=True)
            return
        self.c.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
        self.pending[sid] = [b"hello h2\n", None]

    def mcp(self, sid, mode, body):
        try:
            rid = json.loads(body).get("id", 1)
        except (ValueError, AttributeError):
            rid = 1
        if mode == "refuse" and REFUSED[0] == 0:
            REFUSED[0] += 1
            self.c.reset_stream(sid, 7)  # REFUSED_STREAM: not processed, the client may send it again
            return
        if mode == "ack":
            mcp_upstream.ack(rid)
            self.c.send_headers(sid, [(":status", "202")], end_stream=True)
            return
        if mode == "ask":
            self.c.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream")])
            self.c.send_data(sid, b"data: " + json.dumps(mcp_upstream.ASK).encode() + b"\n\n")
            self.asks[sid] = (rid, time.time() + 4)
            return
        if mode in ("json", "refuse"):
            b = mcp_upstream.result(rid, mcp_upstream.NAMES)
            self.c.send_headers(sid, [(":status", "200"), ("content-type", "application/json"),
                                      ("content-length", str(len(b)))])
            self.pending[sid] = [b, None]
            return
        self.c.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream")])
        if mode == "ssebig":
            s = b": ping\n\ndata: " + b"x" * (10 << 20) + b"\n\ndata: " + mcp_upstream.result(rid, mcp_upstream.NAMES) + b"\n\n"
            self.pending[sid] = [s, None, 16384]
        else:
            self.pending[sid] = [mcp_upstream.stream(rid, b"\n"), None, 1 if mode == "sse1" else 7]

    def tick_asks(self):
        for sid, (rid, end) in list(self.asks.items()):
            answered = mcp_upstream.wait_answer("srv-1", 0)
            if answered or time.time() > end:
                del self.asks[sid]
                try:
                    self.c.send_data(sid, b"data: " + mcp_upstream.ask_final(rid, answered) + b"\n\n", end_stream=True)
                except h2.exceptions.StreamClosedError:
                    pass

    def send_pending(self):
        for sid in list(self.pending):
            data, trailers = self.pending[sid][:2]
            frame = self.pending[sid][2] if len(self.pending[sid]) > 2 else 1000
            try:
                while data:
                    n = min(len(data), self.c.local_flow_control_window(sid), self.c.max_outbound_frame_size, frame)
                    if n <= 0:
                        break
                    self.c.send_data(sid, data[:n])
                    data = data[n:]
                if data:
                    self.pending[sid][0] = data
                    continue
                if trailers:
                    self.c.send_headers(sid, trailers, end_stream=True)
                else:
                    self.c.end_stream(sid)
            except h2.exceptions.StreamClosedError:
                pass
            del self.pending[sid]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", required=True, help="ADDR:PORT")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    ctx.set_alpn_protocols(["h2"])
    listen(a.listen + ":tls", ctx, a.log, Conn).join()


if __name__ == "__main__":
    main()
