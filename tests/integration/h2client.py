#!/usr/bin/python3
"""h2client.py - a raw HTTP/2 client for test_http2.sh: it speaks through the gateway's explicit proxy (CONNECT, then
TLS with ALPN h2) and can send what a well-behaved client never would.  Debian's /usr/bin/python3 with python3-h2.

    h2client.py PROXY_PORT CAFILE AUTHORITY SCENARIO [ARG]     (H2CLIENT_SOURCE=ADDR: connect from ADDR)

Scenarios (each prints one result line and exits 0; the test asserts on the line):
    get PATH                   one GET; prints "status N" (or "reset CODE" / "goaway CODE" / "closed")
    headers PATH JSON          one GET with extra header fields [[name, value], ...] sent unvalidated (uppercase,
                               CR/LF/NUL, connection-specific...); prints like get
    authority AUTH HOST        a GET whose :authority is AUTH and host field HOST ("-": none); prints like get
    clmismatch PATH            a POST whose content-length says 10 and whose DATA holds 5; prints like get
    early PATH                 a POST announcing 1 MiB that sends 16 KiB and waits: for an upstream that answers
                               without reading; prints "status N" and then how the stream ended ("reset CODE")
    rapid_reset PATH N         N streams opened and reset at once (HEADERS + RST_STREAM); prints "goaway CODE"
                               (or "open" when the connection survives) and the number of streams sent
    continuation N             one HEADERS without END_HEADERS and N CONTINUATION frames; prints like get
    hpack_bomb N               a header inserted into the dynamic table, then referenced N times in one block
    settings_flood N           N SETTINGS frames without reading; prints "goaway CODE" or "closed" or "open"
    ping_flood N               N PING frames without reading; likewise
    trailers PATH [JSON]       a GET (extra fields JSON as for headers); prints "status N body LEN trailers T", T the
                               response's trailer fields "name=value" joined by ";" ("-": none), or how it failed
                               ("reset CODE", "goaway CODE", "closed", "timeout")
    post_trailers PATH JSON [CL]  a POST: DATA "abc", then the trailer fields JSON in a HEADERS frame with END_STREAM
                               (with "content-length: 3" when CL is "cl"); prints like trailers
    ws PATH [-H NAME:VALUE]... TEXT...
                               WebSocket over HTTP/2 (RFC 8441): waits for the gateway's SETTINGS, sends an extended
                               CONNECT (:protocol websocket, plus the -H fields), then per TEXT one masked text frame, waiting for one
                               frame back each; then END_STREAM.  A TEXT "@mark:FILE" creates FILE instead, and
                               "@wait:FILE" waits up to 20 s for FILE to exist (no frame either).  Prints "status N" and, after a 200, what came back
                               joined by "~": "text T", "binary HEX", "close CODE", then "end" (END_STREAM), "reset
                               CODE", "goaway CODE", "closed" or "timeout"
    zero_window PATH N WAIT [PING]
                               flow control, a stall: SETTINGS_INITIAL_WINDOW_SIZE=0 and never a WINDOW_UPDATE, then N
                               GETs of PATH; waits up to WAIT seconds for every stream to end, sending a PING every
                               PING seconds if given (alive, just not reading).  Prints "heads H data D
                               ends E in S" after the per-stream reads: H the streams answered with HEADERS, D the DATA
                               bytes received (0 when the gateway honours the window), E how the streams ended, sorted
                               and counted ("reset 2 x3,timeout x1"; "goaway CODE" / "closed" for the streams still open
                               when the connection ended), S the seconds from the requests to the last end (or to
                               WAIT when some timed out)
    flow PATH_A PATH...        flow control, one stream stalled: the connection's window opened wide at once, stream A
                               (PATH_A) never given more than the initial 65535; once A has that much (or after 5 s),
                               one GET per further PATH on the same connection.  Then A's window opens.  Prints "A S
                               stalled N | B S C S ... in T | A+ M after P | A done L SHA": A's status and bytes when
                               the others were sent, each other stream's status (or how it failed) and the seconds until
                               the last one ended, A's bytes M after those P seconds (before its window opened), then
                               A's total length and sha256 (or "A reset CODE" etc.)
"""
import hashlib
import json
import os
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def connect(port, cafile, authority):
    src = os.environ.get("H2CLIENT_SOURCE")  # a source address (a sandbox's), else the kernel's choice
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=10, source_address=(src, 0) if src else None)
    target = (authority if ":" in authority else authority + ":443").encode()
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            raise SystemExit("closed during CONNECT")
        buf += d
    if not buf.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT refused: " + buf.split(b"\r\n")[0].decode("latin-1"))
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["h2"])
    t = ctx.wrap_socket(s, server_hostname=authority.split(":")[0])
    if t.selected_alpn_protocol() != "h2":
        raise SystemExit("no h2: ALPN " + str(t.selected_alpn_protocol()))
    cfg = h2.config.H2Configuration(client_side=True, header_encoding=None, validate_outbound_headers=False,
                                    normalize_outbound_headers=False, validate_inbound_headers=False)
    c = h2.connection.H2Connection(config=cfg)
    c.initiate_connection()
    t.sendall(c.data_to_send())
    return t, c


def outcome(t, c, sid, deadline=8.0):
    """Reads until stream <sid> ends, is reset, or the connection goes; returns the result line."""
    status = None
    end = time.time() + deadline
    while time.time() < end:
        try:
            d = t.recv(65536)
        except socket.timeout:
            break
        except (ssl.SSLError, OSError):
            return "closed"
        if not d:
            return "closed" if status is None else "status %s" % status
        try:
            events = c.receive_data(d)
        except Exception as e:  # noqa: BLE001 - a protocol error on the client side ends the test case
            return "client error " + type(e).__name__
        for ev in events:
            if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                status = dict(ev.headers).get(b":status", b"?").decode()
            elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                return "status %s" % status
            elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                return "reset %d" % ev.error_code
            elif isinstance(ev, h2.events.ConnectionTerminated):
                return "goaway %d" % ev.error_code
            elif isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        out = c.data_to_send()
        if out:
            t.sendall(out)
    return "timeout" if status is None else "status %s" % status


def trailer_outcome(t, c, sid, deadline=8.0):
    """Reads until stream <sid> ends; returns "status N body LEN trailers T" or how it failed."""
    status, body, trailers = None, 0, None
    end = time.time() + deadline
    while time.time() < end:
        try:
            d = t.recv(65536)
        except socket.timeout:
            break
        except (ssl.SSLError, OSError):
            return "closed"
        if not d:
            return "closed"
        for ev in c.receive_data(d):
            if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                status = dict(ev.headers).get(b":status", b"?").decode()
            elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid:
                body += len(ev.data)
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.TrailersReceived) and ev.stream_id == sid:
                trailers = ";".join("%s=%s" % (n.decode("latin-1"), v.decode("latin-1")) for n, v in ev.headers)
            elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                return "status %s body %d trailers %s" % (status, body, trailers if trailers is not None else "-")
            elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                return "reset %d" % ev.error_code
            elif isinstance(ev, h2.events.ConnectionTerminated):
                return "goaway %d" % ev.error_code
        out = c.data_to_send()
        if out:
            t.sendall(out)
    return "timeout"


def ws_frame(text):
    data = text.encode("utf-8")
    mask = bytes([0x5A, 0x13, 0xC7, 0x09])
    n = len(data)
    h = bytes([0x81, 0x80 | n]) if n < 126 else bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
    return h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def ws_parse(buf):
    """One unmasked server frame from <buf>: (description, rest), or (None, buf) when incomplete."""
    if len(buf) < 2:
        return None, buf
    op, n, off = buf[0] & 0x0F, buf[1] & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None, buf
        n, off = int.from_bytes(buf[2:4], "big"), 4
    elif n == 127:
        if len(buf) < 10:
            return None, buf
        n, off = int.from_bytes(buf[2:10], "big"), 10
    if len(buf) < off + n:
        return None, buf
    p, rest = buf[off:off + n], buf[off + n:]
    if op == 1:
        return "text " + p.decode("utf-8", "replace"), rest
    if op == 8:
        return "close %d" % (int.from_bytes(p[:2], "big") if len(p) >= 2 else 0), rest
    return "op%d %s" % (op, p.hex()), rest


def ws_scenario(t, c, authority, path, texts):
    extra = []
    while len(texts) >= 2 and texts[0] == "-H":
        n, _, v = texts[1].partition(":")
        extra.append((n.strip().encode(), v.strip().encode()))
        texts = texts[2:]
    # the extended CONNECT needs the gateway's SETTINGS_ENABLE_CONNECT_PROTOCOL first
    end = time.time() + 5
    while time.time() < end and not c.remote_settings.get(0x8, 0):
        d = t.recv(65536)
        if not d:
            return "closed"
        c.receive_data(d)
        t.sendall(c.data_to_send())
    if not c.remote_settings.get(0x8, 0):
        return "no SETTINGS_ENABLE_CONNECT_PROTOCOL"
    c.send_headers(1, [(b":method", b"CONNECT"), (b":protocol", b"websocket"), (b":scheme", b"https"),
                       (b":path", path.encode()), (b":authority", authority.encode()),
                       (b"sec-websocket-version", b"13")] + extra)
    t.sendall(c.data_to_send())
    status, got, buf, pending, ended = None, [], b"", list(texts), False
    waiting = False
    end = time.time() + 10
    while time.time() < end:
        if status == "200" and not waiting:
            while pending and pending[0].startswith(("@mark:", "@wait:")):
                op = pending.pop(0)
                if op.startswith("@mark:"):
                    open(op[6:], "w").close()
                else:  # the test does something between two messages (test_revoke.sh)
                    wend = time.time() + 20
                    while not os.path.exists(op[6:]) and time.time() < wend:
                        time.sleep(0.05)
                    end = time.time() + 10
            if pending:
                c.send_data(1, ws_frame(pending.pop(0)))
                waiting = True
            elif not ended:
                c.end_stream(1)
                ended = True
            t.sendall(c.data_to_send())
        try:
            d = t.recv(65536)
        except socket.timeout:
            break
        except (ssl.SSLError, OSError):
            return "~".join(["status %s" % status] + got + ["closed"])
        if not d:
            return "~".join(["status %s" % status] + got + ["closed"])
        for ev in c.receive_data(d):
            if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == 1:
                status = dict(ev.headers).get(b":status", b"?").decode()
            elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == 1:
                c.acknowledge_received_data(ev.flow_controlled_length, 1)
                if status != "200":
                    continue
                buf += ev.data
                while True:
                    one, buf = ws_parse(buf)
                    if one is None:
                        break
                    got.append(one)
                    waiting = False
            elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == 1:
                return "~".join(["status %s" % status] + (got + ["end"] if status == "200" else []))
            elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == 1:
                return "~".join(["status %s" % status] + got + ["reset %d" % ev.error_code])
            elif isinstance(ev, h2.events.ConnectionTerminated):
                return "~".join(["status %s" % status] + got + ["goaway %d" % ev.error_code])
        out = c.data_to_send()
        if out:
            t.sendall(out)
    return "~".join(["status %s" % status] + got + ["timeout"])


def raw_outcome(t, sid, deadline=8.0):
    """For frames sent behind the client state machine's back: reads raw frames until stream <sid> is answered
    ("headers"), reset, or the connection ends."""
    buf = b""
    end = time.time() + deadline
    while time.time() < end:
        while len(buf) >= 9:
            n = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + n:
                break
            ftype, fsid, payload = buf[3], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF, buf[9:9 + n]
            buf = buf[9 + n:]
            if ftype == 7:
                return "goaway %d" % int.from_bytes(payload[4:8], "big")
            if ftype == 3 and fsid == sid:
                return "reset %d" % int.from_bytes(payload[:4], "big")
            if ftype == 1 and fsid == sid:
                return "headers"
        try:
            d = t.recv(65536)
        except socket.timeout:
            break
        except (ssl.SSLError, OSError):
            return "closed"
        if not d:
            return "closed"
        buf += d
    return "timeout"


def read_events(t, c, timeout):
    """One read of at most <timeout> seconds; the events, or a string saying how the connection ended."""
    t.settimeout(max(timeout, 0.01))
    try:
        d = t.recv(65536)
    except socket.timeout:
        return []
    except (ssl.SSLError, OSError):
        return "closed"
    if not d:
        return "closed"
    try:
        events = c.receive_data(d)
    except Exception as e:  # noqa: BLE001 - a protocol error (DATA beyond the window) is the result
        return "client error " + type(e).__name__
    out = c.data_to_send()  # SETTINGS and PING acks; never a WINDOW_UPDATE unless asked for
    if out:
        t.sendall(out)
    return events


def zero_window(t, c, authority, path, n, wait, ping_every=0.0):
    c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    sids = [1 + 2 * i for i in range(n)]
    for sid in sids:
        c.send_headers(sid, base(authority, path), end_stream=True)
    t.sendall(c.data_to_send())  # the SETTINGS goes before the HEADERS: every stream starts with a zero window
    t0 = time.time()
    heads, data, ends, last, ping_at = set(), 0, {}, t0, t0 + ping_every
    while len(ends) < n and time.time() < t0 + wait:
        if ping_every > 0 and time.time() >= ping_at:  # a client that is alive, just not reading
            c.ping(b"keepaliv")
            t.sendall(c.data_to_send())
            ping_at = time.time() + ping_every
        events = read_events(t, c, min(t0 + wait, ping_at if ping_every > 0 else t0 + wait) - time.time())
        if isinstance(events, str):
            for sid in sids:
                ends.setdefault(sid, events)
            last = time.time()
            break
        for ev in events:
            if isinstance(ev, h2.events.ResponseReceived):
                heads.add(ev.stream_id)
            elif isinstance(ev, h2.events.DataReceived):
                data += len(ev.data)
            elif isinstance(ev, h2.events.StreamEnded):
                ends.setdefault(ev.stream_id, "end")
                last = time.time()
            elif isinstance(ev, h2.events.StreamReset):
                ends.setdefault(ev.stream_id, "reset %d" % ev.error_code)
                last = time.time()
            elif isinstance(ev, h2.events.ConnectionTerminated):
                for sid in sids:
                    ends.setdefault(sid, "goaway %d" % ev.error_code)
                last = time.time()
    if len(ends) < n:
        last = time.time()
    for sid in sids:
        ends.setdefault(sid, "timeout")
    counts = {}
    for e in ends.values():
        counts[e] = counts.get(e, 0) + 1
    summary = ",".join("%s x%d" % (e, counts[e]) for e in sorted(counts))
    return "heads %d data %d ends %s in %.1f" % (len(heads), data, summary, last - t0)


def flow(t, c, authority, path_a, others):
    c.increment_flow_control_window(64 * 1024 * 1024)  # the connection's window: never the limit here
    c.send_headers(1, base(authority, path_a), end_stream=True)
    t.sendall(c.data_to_send())
    st = {1: {"status": None, "body": hashlib.sha256(), "len": 0, "end": None}}

    def pump(until, done):
        while not done() and time.time() < until:
            events = read_events(t, c, until - time.time())
            if isinstance(events, str):
                for v in st.values():
                    v["end"] = v["end"] or events
                return
            for ev in events:
                v = st.get(getattr(ev, "stream_id", None))
                if isinstance(ev, h2.events.ConnectionTerminated):
                    for v in st.values():
                        v["end"] = v["end"] or "goaway %d" % ev.error_code
                if v is None:
                    continue
                if isinstance(ev, h2.events.ResponseReceived):
                    v["status"] = dict(ev.headers).get(b":status", b"?").decode()
                elif isinstance(ev, h2.events.DataReceived):
                    v["body"].update(ev.data)
                    v["len"] += len(ev.data)
                    if ev.stream_id != 1:  # the others' windows reopen as they are read; A's never (yet)
                        c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                        t.sendall(c.data_to_send())
                elif isinstance(ev, h2.events.StreamEnded):
                    v["end"] = "end"
                elif isinstance(ev, h2.events.StreamReset):
                    v["end"] = "reset %d" % ev.error_code

    a = st[1]
    pump(time.time() + 5, lambda: a["len"] >= 65535 or a["end"] is not None)
    res = "A %s stalled %d" % (a["status"], a["len"])
    sids = [3 + 2 * i for i in range(len(others))]
    for sid, p in zip(sids, others):
        st[sid] = {"status": None, "body": hashlib.sha256(), "len": 0, "end": None}
        c.send_headers(sid, base(authority, p), end_stream=True)
    t.sendall(c.data_to_send())
    t0 = time.time()
    pump(t0 + 10, lambda: all(st[s]["end"] is not None for s in sids))
    t1 = time.time()
    names = "BCDEFGHIJKLMNOPQRSTUVWXYZ"
    res += " | " + " ".join("%s %s" % (names[i], st[s]["status"] if st[s]["end"] == "end" else st[s]["end"] or "timeout")
                            for i, s in enumerate(sids)) + " in %.1f" % (t1 - t0)
    pump(time.time() + 1, lambda: a["end"] is not None)  # a second more: A must not move on its own
    res += " | A+ %d after %.1f" % (a["len"], time.time() - t0)
    if a["end"] is None:
        c.increment_flow_control_window(16 * 1024 * 1024, stream_id=1)
        t.sendall(c.data_to_send())
        pump(time.time() + 20, lambda: a["end"] is not None)
    if a["end"] == "end":
        res += " | A done %d %s" % (a["len"], a["body"].hexdigest())
    else:
        res += " | A %s after %d" % (a["end"] or "timeout", a["len"])
    return res


def base(authority, path, method="GET"):
    return [(b":method", method.encode()), (b":scheme", b"https"), (b":authority", authority.encode()),
            (b":path", path.encode())]


def frame(ftype, flags, sid, payload):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload


def main():
    port, cafile, authority, scen = sys.argv[1:5]
    args = sys.argv[5:]
    t, c = connect(port, cafile, authority)
    if scen == "get":
        c.send_headers(1, base(authority, args[0]), end_stream=True)
        t.sendall(c.data_to_send())
        print(outcome(t, c, 1))
    elif scen == "headers":
        extra = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in json.loads(args[1])]
        c.send_headers(1, base(authority, args[0]) + extra, end_stream=True)
        t.sendall(c.data_to_send())
        print(outcome(t, c, 1))
    elif scen == "authority":
        h = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", args[0].encode()), (b":path", b"/ok/auth")]
        if args[1] != "-":
            h.append((b"host", args[1].encode()))
        c.send_headers(1, h, end_stream=True)
        t.sendall(c.data_to_send())
        print(outcome(t, c, 1))
    elif scen == "clmismatch":
        c.send_headers(1, base(authority, args[0], "POST") + [(b"content-length", b"10")])
        c.send_data(1, b"12345", end_stream=True)
        t.sendall(c.data_to_send())
        print(outcome(t, c, 1))
    elif scen == "early":
        c.send_headers(1, base(authority, args[0], "POST") + [(b"content-length", b"1048576")])
        c.send_data(1, b"x" * 16000)
        t.sendall(c.data_to_send())
        status, how, end = None, "timeout", time.time() + 8
        while how == "timeout" and time.time() < end:
            try:
                d = t.recv(65536)
            except (socket.timeout, ssl.SSLError, OSError):
                break
            if not d:
                how = "closed"
                break
            for ev in c.receive_data(d):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = dict(ev.headers).get(b":status", b"?").decode()
                elif isinstance(ev, h2.events.StreamReset):
                    how = "reset %d" % ev.error_code
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    how = "goaway %d" % ev.error_code
            t.sendall(c.data_to_send())
        print("status %s then %s" % (status, how))
    elif scen == "rapid_reset":
        n = int(args[1])
        sent = 0
        buf = b""
        for i in range(n):
            sid = 1 + 2 * i
            c.send_headers(sid, base(authority, args[0]), end_stream=True)
            c.reset_stream(sid)
            buf += c.data_to_send()
            sent += 1
            if len(buf) > 16384:
                try:
                    t.sendall(buf)
                except OSError:
                    break
                buf = b""
        try:
            t.sendall(buf)
        except OSError:
            pass
        res = outcome(t, c, -1, deadline=5.0)
        print("%s sent %d" % ("open" if res in ("timeout",) else res, sent))
    elif scen == "continuation":
        n = int(args[0])
        block = c.encoder.encode(base(authority, "/ok/cont"))
        raw = frame(1, 0, 1, block)  # HEADERS without END_HEADERS
        for i in range(n):
            raw += frame(9, 0, 1, c.encoder.encode([(b"x-pad-%d" % i, b"y" * 64)]))
        try:
            t.sendall(raw)
        except OSError:
            print("closed")
            return
        print(raw_outcome(t, 1))
    elif scen == "hpack_bomb":
        n = int(args[0])
        # a literal with incremental indexing (index 62 afterwards), then N indexed references to it
        big = c.encoder.encode([(b"x-bomb", b"z" * 3000)])
        block = c.encoder.encode(base(authority, "/ok/bomb")) + big + bytes([0x80 | 62]) * n
        t.sendall(frame(1, 0x4 | 0x1, 1, block))
        print(raw_outcome(t, 1))
    elif scen in ("settings_flood", "ping_flood"):
        n = int(args[0])
        one = frame(4, 0, 0, b"") if scen == "settings_flood" else frame(6, 0, 0, b"12345678")
        t.settimeout(2)
        try:
            for _ in range(n // 100):
                t.sendall(one * 100)
        except OSError:
            print("closed")
            return
        print(raw_outcome(t, -1, deadline=5.0).replace("timeout", "open"))
    elif scen == "trailers":
        extra = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in json.loads(args[1])] if len(args) > 1 else []
        c.send_headers(1, base(authority, args[0]) + extra, end_stream=True)
        t.sendall(c.data_to_send())
        print(trailer_outcome(t, c, 1))
    elif scen == "post_trailers":
        tr = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in json.loads(args[1])]
        cl = [(b"content-length", b"3")] if len(args) > 2 and args[2] == "cl" else []
        c.send_headers(1, base(authority, args[0], "POST") + cl)
        c.send_data(1, b"abc")
        c.send_headers(1, tr, end_stream=True)
        t.sendall(c.data_to_send())
        print(trailer_outcome(t, c, 1))
    elif scen == "zero_window":
        print(zero_window(t, c, authority, args[0], int(args[1]), float(args[2]),
                          float(args[3]) if len(args) > 3 else 0.0))
    elif scen == "flow":
        print(flow(t, c, authority, args[0], args[1:]))
    elif scen == "ws":
        print(ws_scenario(t, c, authority, args[0], args[1:]))
    else:
        raise SystemExit("unknown scenario " + scen)


if __name__ == "__main__":
    main()
