#!/usr/bin/python3
"""mcp_upstream.py - a TLS MCP server for test_mcp_resp.sh: answers POST /mcp?m=MODE with list results (issue 23).

    mcp_upstream.py --listen ADDR:PORT[:tls]... --cert C --key K --log FILE

Keep-alive HTTP/1.1, one thread per connection, Debian's python3 standard library only.  The request body is a
JSON-RPC request; the answer's id is the request's unless the mode says otherwise.  The tools listed are
keep_a, keep_b (allowed by the test's policy), drop_x (denied by a rule) and other_y (no rule: default deny);
keep_b's description holds STORED (from the environment), a value the gateway must scrub.  Modes:
    json      application/json, Content-Length
    jsonch    application/json, chunked
    noid      application/json whose id (999999) matches no request
    esc       application/json whose "tools" key is written "\\u0074ools" (a reader that looks for the bytes misses it)
    big       application/json, 10,000 tools: keep_0..keep_4999 and drop_0..drop_4999
    sse       text/event-stream, chunked: a ": ping" comment, an event with non-JSON data, the list event
              (id: 7, event: message), a second ping, a tools/call result, two server-to-client requests
              (sampling/createMessage "srv-1", elicitation/create "srv-2")
    ssecr     the same stream with CR line endings, until close
    sse1      the same stream, until close, every byte of the answer in its own TLS record
    ssebig    a ping, then an event of 10 MiB of data, then a list event (never reached)
    jsonbig   application/json, a list result of 9 MiB (over the gateway's bound of 8 MiB)
    err405    405, application/json: a JSON-RPC error with id null (what the SDK's stateless server answers a GET)
    dup       application/json: a list result with a duplicate "result" key (the second lists every tool)
    ssedup    a ping, then an event whose data is that text
    ask       text/event-stream until close: a server-to-client request (sampling/createMessage, id "srv-1"), then,
              once some connection of this process was POSTed the answer to it (mode ack) or after 4 s, the
              request's result, whose text says which ("answered" or "unanswered")
    ack       202 Accepted, no body: the body is a client's answer (a JSON-RPC response), its id remembered for ask
    flood     text/event-stream until close: list events (each a tools/list result of the four tools) as fast as the
              connection takes them, 64 MiB at most, for 60 s at most; logs {"ev":"flood","host","sent"} at its end
    trickle   text/event-stream until close: a list event every 50 ms, for 60 s at most; logs {"ev":"trickle","host",
              "sent"} when it ends (the peer went, or the 60 s)
    stale     a keep-alive connection the server had closed: on a connection that served a request before, the
              request is read and the connection closed without an answer; as a connection's first, "fresh" (JSON)
Log: one {"ev":"req","mode","id","method","nth","host"} line per request (nth: the how-manieth of its connection).
"""
import json
import os
import threading
import time

from upstream_common import BufConn, serve

STORED = os.environ.get("STORED", "none")


def tools(names):
    return [{"name": n, "description": ("echo " + STORED) if n == "keep_b" else "a tool",
             "inputSchema": {"type": "object"}} for n in names]


def result(rid, names):
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools(names)}}).encode()


NAMES = ["keep_a", "drop_x", "keep_b", "other_y"]
ASK = {"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage",
       "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 5}}
ANSWERED = set()  # ids of the answers POSTed to any connection (mode ack)
ANSWERED_CV = threading.Condition()


def ack(rid):
    with ANSWERED_CV:
        ANSWERED.add(rid)
        ANSWERED_CV.notify_all()


def wait_answer(rid, secs):
    """true once an answer with id <rid> was POSTed, within <secs>; the answer is taken (each one answers once)"""
    end = time.time() + secs
    with ANSWERED_CV:
        while rid not in ANSWERED and time.time() < end:
            ANSWERED_CV.wait(end - time.time())
        if rid not in ANSWERED:
            return False
        ANSWERED.discard(rid)
        return True


def ask_final(rid, answered):
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [
        {"type": "text", "text": "answered" if answered else "unanswered"}]}}).encode()


def stream(rid, eol):
    evs = [b": ping", b"",
           b"event: endpoint", b"data: not json at all", b"",
           b"id: 7", b"event: message", b"data: " + result(rid, NAMES), b"",
           b": ping", b"",
           b"data: " + json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "hi"}]}}).encode(), b"",
           b"data: " + json.dumps({"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage",
                                   "params": {"messages": []}}).encode(), b"",
           b"data: " + json.dumps({"jsonrpc": "2.0", "id": "srv-2", "method": "elicitation/create",
                                   "params": {"message": "?"}}).encode(), b""]
    return eol.join(evs) + eol


class Conn(BufConn):
    def one(self):
        method, target, hl = self.request_head()
        n = int(hl.get("content-length", "0"))
        body = self.exact(n) if n else b""
        mode = target.partition("m=")[2].split("&")[0] or "json"
        try:
            rid = json.loads(body).get("id", 1)
        except Exception:  # noqa: BLE001
            rid = 1
        self.served = getattr(self, "served", 0) + 1
        self.emit({"ev": "req", "mode": mode, "id": rid, "method": method, "nth": self.served,
                   "host": hl.get("host", "")})
        c = self.c
        dup = (b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[]},"result":{"tools":[{"name":"drop_x"}]}}' % json.dumps(rid).encode())
        if mode == "stale":
            if self.served > 1:
                return False
            b = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"fresh"}]}}' % json.dumps(rid).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
            return True
        if mode == "ack":
            ack(rid)
            c.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            return True
        if mode == "flood":
            ev = b"data: " + result(rid, NAMES) + b"\n\n"
            block = ev * (65536 // len(ev))
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            end = time.time() + 60
            sent = 0
            try:
                while sent < (64 << 20) and time.time() < end:
                    c.sendall(block)
                    sent += len(block)
            finally:
                self.emit({"ev": "flood", "host": hl.get("host", ""), "sent": sent})
            return False
        if mode == "trickle":
            ev = b"data: " + result(rid, NAMES) + b"\n\n"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            end, sent = time.time() + 60, 0
            try:
                while time.time() < end:
                    c.sendall(ev)
                    sent += len(ev)
                    time.sleep(0.05)
            finally:
                self.emit({"ev": "trickle", "host": hl.get("host", ""), "sent": sent, "at": time.time()})
            return False
        if mode == "ask":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                      b"data: " + json.dumps(ASK).encode() + b"\n\n")
            c.sendall(b"data: " + ask_final(rid, wait_answer("srv-1", 4)) + b"\n\n")
            return False
        if mode == "err405":
            b = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}'
            c.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                      % len(b) + b)
            return True
        if mode == "jsonbig":
            b = result(rid, ["keep_a", "drop_x"]).replace(b'"a tool"', b'"' + b"y" * (9 << 20) + b'"', 1)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
            return True
        if mode == "dup":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(dup) + dup)
            return True
        if mode in ("json", "jsonch", "noid", "big", "esc"):
            if mode == "big":
                names = ["keep_%d" % i for i in range(5000)] + ["drop_%d" % i for i in range(5000)]
            else:
                names = NAMES
            b = result(999999 if mode == "noid" else rid, names)
            if mode == "esc":
                b = b.replace(b'"tools"', b'"\\u0074ools"')
            if mode == "jsonch":
                half = len(b) // 2
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                          b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, b[:half], len(b) - half, b[half:]))
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
            return True
        if mode == "sse":
            s = stream(rid, b"\n")
            out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            for i in range(0, len(s), 37):  # chunks that cut events anywhere
                p = s[i:i + 37]
                out += b"%x\r\n%s\r\n" % (len(p), p)
            c.sendall(out + b"0\r\n\r\n")
            return True
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        if mode == "ssecr":
            c.sendall(head + stream(rid, b"\r"))
        elif mode == "sse1":
            for x in head + stream(rid, b"\r\n"):
                c.sendall(bytes([x]))
        elif mode == "ssedup":
            c.sendall(head + b": ping\n\ndata: " + dup + b"\n\n")
        elif mode == "ssebig":
            c.sendall(head + b": ping\n\n")
            blob = b"x" * (1 << 20)
            c.sendall(b"data: ")
            for _ in range(10):
                c.sendall(blob)
            c.sendall(b"\n\n" + b"data: " + result(rid, NAMES) + b"\n\n")
        return False


if __name__ == "__main__":
    serve(Conn, __doc__)
