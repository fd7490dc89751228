#!/usr/bin/python3
"""mcp_flush_upstream.py - an SSE upstream for bench/mcp_bench.sh that writes every event as its own chunk (one
sendall, so one TLS record), as MCP servers do (the TypeScript SDK writes and flushes each message); nginx serving
a file sends the stream in 16 KiB records instead.

    mcp_flush_upstream.py ADDR PORT CERT KEY EVENTS REPEAT

GET /mcp?m=all: EVENTS*REPEAT events, each a tools/list result of two tools (bench_a, drop_b); ?m=mix: progress
notifications and tool results with a tools/list result every 100 events. HTTP/1.1, chunked, keep-alive, one
thread per connection; Debian's python3 standard library only.  Not a test server: no logging.
"""
import json
import socket
import ssl
import sys
import threading


def stream(kind, events, repeat):
    out = []
    for i in range(events * repeat):
        if kind == "all" or i % 100 == 0:
            m = {"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "bench_a"}, {"name": "drop_b"}]}}
        elif i % 2:
            m = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": i}}
        else:
            m = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "line %d" % i}]}}
        ev = ("id: %d\nevent: message\ndata: %s\n\n" % (i, json.dumps(m))).encode()
        out.append(b"%x\r\n%s\r\n" % (len(ev), ev))
    return out


def serve(c, streams):
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
            if len(buf) > 65536:
                return
        head, buf = buf.split(b"\r\n\r\n", 1)
        target = head.split(b"\r\n", 1)[0].split(b" ")[1]
        kind = "mix" if b"m=mix" in target else "all"
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        for chunk in streams[kind]:
            c.sendall(chunk)
        c.sendall(b"0\r\n\r\n")


def conn(c, ctx, streams):
    try:
        t = ctx.wrap_socket(c, server_side=True)
        t.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        serve(t, streams)
    except (OSError, ValueError, IndexError):
        pass
    finally:
        c.close()


def main():
    addr, port, cert, key, events, repeat = sys.argv[1:7]
    streams = {k: stream(k, int(events), int(repeat)) for k in ("all", "mix")}
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ls = socket.socket(socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=conn, args=(c, ctx, streams), daemon=True).start()


if __name__ == "__main__":
    main()
