#!/usr/bin/python3
"""semclient.py - HTTP/2 requests for test_semantic.sh that curl cannot make: through the gateway's explicit proxy
(CONNECT, then TLS with ALPN h2, as h2client.py does).  Debian's /usr/bin/python3 with python3-h2.

    semclient.py PROXY_PORT CAFILE AUTHORITY SCENARIO ARGS...

Scenarios (each prints one result line and exits 0; the test asserts on the line):
    claim PATH CL N       a POST (content-type application/json) whose content-length says CL ("-": none) and whose
                          DATA holds N bytes of a JSON string, without END_STREAM, then waits (up to 30 s) for the
                          answer; prints
                          "status S in T" (T seconds from the DATA to the answer) or "reset CODE in T", "goaway CODE
                          in T", "closed in T", "timeout in T"
    reset PATH BODY WAIT  a POST of BODY (content-type application/x-www-form-urlencoded) with END_STREAM; after WAIT
                          seconds a GET of /ok/while-held on the same connection (stream 1 still unanswered), then
                          RST_STREAM(CANCEL) on stream 1, then a GET of /ok/after-reset; prints "held S1, meanwhile
                          S2, then S3": S1 what stream 1 got in the WAIT ("none" when nothing, as a held request
                          should), S2 and S3 the outcomes of the GETs ("status 200")
"""
import socket
import ssl
import sys
import time

import h2.errors
import h2.events

from h2client import base, connect, outcome


def wait_answer(t, c, sid, deadline):
    """Reads until stream <sid> is answered, reset, or the connection ends; returns a result word."""
    end = time.time() + deadline
    t.settimeout(1.0)
    while time.time() < end:
        try:
            d = t.recv(65536)
        except socket.timeout:
            continue
        except (ssl.SSLError, OSError):
            return "closed"
        if not d:
            return "closed"
        for ev in c.receive_data(d):
            if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                return "status %s" % dict(ev.headers).get(b":status", b"?").decode()
            if isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                return "reset %d" % ev.error_code
            if isinstance(ev, h2.events.ConnectionTerminated):
                return "goaway %d" % ev.error_code
            if isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        out = c.data_to_send()
        if out:
            t.sendall(out)
    return "timeout"


def main():
    port, cafile, authority, scen = sys.argv[1:5]
    args = sys.argv[5:]
    t, c = connect(port, cafile, authority)
    if scen == "claim":
        path, cl, n = args[0], args[1], int(args[2])
        extra = [(b"content-length", cl.encode())] if cl != "-" else []
        c.send_headers(1, base(authority, path, "POST") + [(b"content-type", b"application/json")] + extra)
        c.send_data(1, b'"' + b"x" * (n - 1))
        t.sendall(c.data_to_send())
        t0 = time.time()
        res = wait_answer(t, c, 1, 30.0)
        print("%s in %.1f" % (res, time.time() - t0))
    elif scen == "reset":
        path, body, wait = args[0], args[1].encode(), float(args[2])
        c.send_headers(1, base(authority, path, "POST") + [
            (b"content-type", b"application/x-www-form-urlencoded"), (b"content-length", str(len(body)).encode())])
        c.send_data(1, body, end_stream=True)
        t.sendall(c.data_to_send())
        first = wait_answer(t, c, 1, wait)
        held = "none" if first == "timeout" else first
        c.send_headers(3, base(authority, "/ok/while-held"), end_stream=True)
        t.sendall(c.data_to_send())
        t.settimeout(10)
        meanwhile = outcome(t, c, 3)
        if first == "timeout":
            c.reset_stream(1, error_code=h2.errors.ErrorCodes.CANCEL)
        c.send_headers(5, base(authority, "/ok/after-reset"), end_stream=True)
        t.sendall(c.data_to_send())
        print("held %s, meanwhile %s, then %s" % (held, meanwhile, outcome(t, c, 5)))
    else:
        print("unknown scenario " + scen)


if __name__ == "__main__":
    main()
