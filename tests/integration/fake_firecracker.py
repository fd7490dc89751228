#!/usr/bin/python3
"""tests/integration/fake_firecracker.py: a stand-in for Firecracker's API socket (stdlib only).

    fake_firecracker.py SOCK LOG [--fail PATH MESSAGE] [--hang PATH] [--hangup PATH] [--chunked PATH]

Listens on the Unix socket SOCK (created here, removed first if stale) and serves HTTP/1.1 keep-alive
connections like Firecracker's API server does: each request must carry a Content-Length and a JSON body.
Every request is appended to LOG as one JSON line {"conn": N, "method", "path", "body"} (body: the parsed
JSON, or {"unparsed": TEXT}) before it is answered.  Answers, as Firecracker words them:
  - "HTTP/1.1 204 \\r\\nServer: Firecracker API\\r\\nConnection: keep-alive\\r\\n\\r\\n" for PUT to a known path;
  - 400 with {"fault_message": MESSAGE} for PATH given to --fail;
  - nothing at all (the request is logged, the connection stays open) for PATH given to --hang;
  - the connection closed without an answer for PATH given to --hangup;
  - a chunked 200 (which the driver must refuse) for PATH given to --chunked;
  - 400 {"fault_message": "Invalid request method and/or path: ..."} for anything else.
"""
import json
import os
import socket
import sys
import threading

KNOWN = {"/boot-source", "/machine-config", "/network-interfaces/eth0", "/actions"}
HEAD_MAX = 16384
BODY_MAX = 1 << 20

lock = threading.Lock()
conn_ids = [0]


def log_line(path, rec):
    with lock, open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def answer(status, body=None):
    head = f"HTTP/1.1 {status} \r\nServer: Firecracker API\r\nConnection: keep-alive\r\n"
    if body is None:
        return (head + "\r\n").encode()
    data = json.dumps(body).encode()
    return (head + f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


def serve(c, cid, opts, log):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
                if len(buf) > HEAD_MAX:
                    return
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path, version = lines[0].split(" ", 2)
            hdrs = {}
            for l in lines[1:]:
                k, v = l.split(":", 1)
                hdrs[k.strip().lower()] = v.strip()
            n = int(hdrs.get("content-length", "0"))
            if n > BODY_MAX:
                return
            while len(buf) < n:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
            raw, buf = buf[:n], buf[n:]
            try:
                body = json.loads(raw.decode("utf-8"))
            except ValueError:
                body = {"unparsed": raw.decode("latin-1")}
            log_line(log, {"conn": cid, "method": method, "path": path, "version": version,
                           "content_type": hdrs.get("content-type"), "body": body})
            if path in opts["hang"]:
                while c.recv(65536):
                    pass
                return
            if path in opts["hangup"]:
                return
            if path in opts["chunked"]:
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            elif path in opts["fail"]:
                c.sendall(answer(400, {"fault_message": opts["fail"][path]}))
            elif method == "PUT" and path in KNOWN:
                c.sendall(answer(204))
            else:
                c.sendall(answer(400, {"fault_message": f"Invalid request method and/or path: {method} {path}"}))
    except (OSError, ValueError):
        return
    finally:
        c.close()


def main():
    sock, log = sys.argv[1], sys.argv[2]
    opts = {"fail": {}, "hang": set(), "hangup": set(), "chunked": set()}
    args = sys.argv[3:]
    while args:
        a = args.pop(0)
        if a == "--fail":
            p = args.pop(0)
            opts["fail"][p] = args.pop(0)
        elif a in ("--hang", "--hangup", "--chunked"):
            opts[a[2:]].add(args.pop(0))
        else:
            sys.exit(f"unknown option {a}")
    if os.path.exists(sock):
        os.unlink(sock)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(sock)
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        conn_ids[0] += 1
        threading.Thread(target=serve, args=(c, conn_ids[0], opts, log), daemon=True).start()


if __name__ == "__main__":
    main()
