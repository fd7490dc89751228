#!/usr/bin/python3
"""mcp_h2client.py - an MCP client over HTTP/2 answering a server's request, for test_mcp_h2.sh (issue 23).

    mcp_h2client.py PROXY_PORT CAFILE AUTHORITY ASK_PATH ACK_PATH
    mcp_h2client.py PROXY_PORT CAFILE AUTHORITY many PATH...
    mcp_h2client.py PROXY_PORT CAFILE AUTHORITY stall h1|h2|h2reset PATH SECS

Through the gateway's explicit proxy (h2client.py's connect: CONNECT, TLS with ALPN h2), on one connection:
stream 1 POSTs a tools/call (keep_a, id 11) to ASK_PATH, whose answer is an event stream that first carries a
server-to-client request (sampling/createMessage, id "srv-1"). As soon as that event is in, while stream 1 is still
open, stream 3 POSTs the client's answer (a JSON-RPC response, id "srv-1") to ACK_PATH; once that is answered,
stream 5 POSTs the same answer again, then stream 7 an answer to "srv-9", a request never made. Then stream 1 is
read to its end. Prints one line:
    ask S1 answer S3 OPEN again S5 RULE5 unknown S7 RULE7 final TEXT
S<n> the HTTP status of stream n (or "reset CODE", "timeout"), OPEN "open" when stream 3 was sent before stream 1
ended (else "after"; the upstream holds stream 1 open until it has the answer, so "final answered" says that the
answer went through while stream 1 was open), RULE the "rule" in the data of a refusal's JSON-RPC error or 403 body ("-" when none), TEXT
the text of stream 1's final result ("answered" when the upstream got the answer) or "none".
With "many": one tools/list POST per PATH, all at once on one connection (their answers interleave), each read to
its end; prints per stream, in order, "STATUS NAMES" joined by " | ", NAMES the tools of the list results in its
answer (JSON or events) joined by ",", or how it ended ("reset CODE", "timeout").
With "stall": one tools/list POST to PATH over HTTP/1.1 (h1: reads 16 KiB of the answer, then nothing) or HTTP/2
(h2: SETTINGS_INITIAL_WINDOW_SIZE 16384 and never a WINDOW_UPDATE; h2reset: the same, and the stream reset with
CANCEL at its first DATA), then waits SECS seconds with the connection open, reading nothing; prints "read N" (the bytes of the answer it read).
"""
import json
import socket
import ssl
import sys
import time

import h2.events
import h2.settings

from h2client import connect


def post(c, sid, authority, path, body):
    c.send_headers(sid, [(b":method", b"POST"), (b":scheme", b"https"), (b":authority", authority.encode()),
                         (b":path", path.encode()), (b"content-type", b"application/json"),
                         (b"accept", b"application/json, text/event-stream"),
                         (b"mcp-protocol-version", b"2025-06-18"),
                         (b"content-length", str(len(body)).encode())])
    c.send_data(sid, body, end_stream=True)


def take(c, events, status, body, done):
    """Folds h2 <events> into <status>, <body> and <done> (by stream id: the status, the DATA so far, how the
    stream ended: its status or "reset CODE"), acknowledging the DATA; false when the connection ended."""
    alive = True
    for ev in events:
        sid = getattr(ev, "stream_id", None)
        if isinstance(ev, h2.events.ResponseReceived):
            status[sid] = dict(ev.headers).get(b":status", b"?").decode()
        elif isinstance(ev, h2.events.DataReceived):
            body[sid] = body.get(sid, b"") + ev.data
            c.acknowledge_received_data(ev.flow_controlled_length, sid)
        elif isinstance(ev, h2.events.StreamEnded):
            done[sid] = status.get(sid, "?")
        elif isinstance(ev, h2.events.StreamReset):
            done[sid] = "reset %d" % ev.error_code
        elif isinstance(ev, h2.events.ConnectionTerminated):
            alive = False
    return alive


def rule_of(body):
    try:
        m = json.loads(body)
    except ValueError:
        return "-"
    if not isinstance(m, dict):
        return "-"
    err = m.get("error")
    data = err.get("data") if isinstance(err, dict) else m  # a JSON-RPC error, or the gateway's 403 body
    return str(data.get("rule", "-")) if isinstance(data, dict) else "-"


def final_text(body):
    for ev in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        for line in ev.split("\n"):
            if line.startswith("data: "):
                try:
                    m = json.loads(line[6:])
                except ValueError:
                    continue
                if isinstance(m, dict) and m.get("id") == 11 and "result" in m:
                    return m["result"]["content"][0]["text"]
    return "none"


def list_names(body):
    """the tool names of every list result in <body> (application/json or an event stream)"""
    text = body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    datas = [ln[6:] for ln in text.split("\n") if ln.startswith("data: ")] or [text]
    names = []
    for d in datas:
        try:
            m = json.loads(d)
        except ValueError:
            continue
        if isinstance(m, dict) and isinstance(m.get("result"), dict) and "tools" in m["result"]:
            names += [t.get("name") for t in m["result"]["tools"]]
    return ",".join(names) or "-"


def many(port, cafile, authority, paths):
    t, c = connect(port, cafile, authority)
    t.settimeout(0.2)
    sids = [1 + 2 * i for i in range(len(paths))]
    for i, (sid, path) in enumerate(zip(sids, paths)):
        post(c, sid, authority, path, json.dumps({"jsonrpc": "2.0", "id": 41 + i, "method": "tools/list"}).encode())
    t.sendall(c.data_to_send())
    status, body, done = {}, {}, {}
    end = time.time() + 30
    while time.time() < end and len(done) < len(sids):
        try:
            d = t.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not d:
            break
        if not take(c, c.receive_data(d), status, body, done):
            break
        out = c.data_to_send()
        if out:
            t.sendall(out)
    print(" | ".join("%s %s" % (done[s], list_names(body.get(s, b""))) if s in done and not done[s].startswith("reset")
                     else done.get(s, "timeout") for s in sids))


def stall(port, cafile, authority, proto, path, secs):
    body = json.dumps({"jsonrpc": "2.0", "id": 41, "method": "tools/list"}).encode()
    if proto in ("h2", "h2reset"):
        t, c = connect(port, cafile, authority)
        c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16384})
        post(c, 1, authority, path, body)
        t.sendall(c.data_to_send())
        t.settimeout(0.2)
        got, end = 0, time.time() + secs
        while time.time() < end:
            try:
                d = t.recv(65536)
            except socket.timeout:
                continue
            if not d:
                break
            for ev in c.receive_data(d):
                if isinstance(ev, h2.events.DataReceived):
                    got += len(ev.data)  # never acknowledged: the window stays shut
                    if proto == "h2reset" and got > 0 and 1 in c.streams:
                        c.reset_stream(1, 8)  # CANCEL: the client goes, its connection stays
            out = c.data_to_send()
            if out:
                t.sendall(out)
        print("read %d" % got)
        return
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    target = (authority if ":" in authority else authority + ":443").encode()
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    # a small receive buffer, so that the kernel holds little of what the gateway sends
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    t = ctx.wrap_socket(s, server_hostname=authority.split(":")[0])
    t.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
              % (path.encode(), authority.split(":")[0].encode(), len(body), body))
    got = 0
    while got < 16384:
        d = t.recv(16384 - got)
        if not d:
            break
        got += len(d)
    time.sleep(secs)
    print("read %d" % got)


def main():
    if sys.argv[4] == "stall":
        stall(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5], sys.argv[6], float(sys.argv[7]))
        return
    if sys.argv[4] == "many":
        many(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5:])
        return
    port, cafile, authority, ask_path, ack_path = sys.argv[1:6]
    t, c = connect(port, cafile, authority)
    t.settimeout(0.2)
    answer = lambda rid: json.dumps({"jsonrpc": "2.0", "id": rid, "result": {  # noqa: E731
        "role": "assistant", "model": "test", "content": {"type": "text", "text": "4"}}}).encode()
    post(c, 1, authority, ask_path, json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                                                 "params": {"name": "keep_a", "arguments": {}}}).encode())
    t.sendall(c.data_to_send())
    status, body, done = {}, {1: b""}, {}
    nxt = [(3, "srv-1"), (5, "srv-1"), (7, "srv-9")]
    sent = None
    open_when_answered = "after"
    end = time.time() + 20
    while time.time() < end and not (1 in done and not nxt and all(s in done for s in (3, 5, 7))):
        try:
            d = t.recv(65536)
        except socket.timeout:
            d = None
        except OSError:
            break
        if d == b"":
            break
        if d and not take(c, c.receive_data(d), status, body, done):
            end = 0
        # the next answer once the server's request is in and the one before it was answered
        if nxt and b'"srv-1"' in body[1] and (sent is None or sent in done):
            sid, rid = nxt.pop(0)
            if sid == 3:
                open_when_answered = "after" if 1 in done else "open"
            post(c, sid, authority, ack_path, answer(rid))
            sent = sid
        out = c.data_to_send()
        if out:
            t.sendall(out)
    st = lambda s: done.get(s, "timeout")  # noqa: E731
    print("ask %s answer %s %s again %s %s unknown %s %s final %s" % (
        st(1), st(3), open_when_answered, st(5), rule_of(body.get(5, b"")), st(7), rule_of(body.get(7, b"")),
        final_text(body[1])))


if __name__ == "__main__":
    main()
