#!/usr/bin/python3
"""gRPC peers for test_grpc.sh (Debian's python3-grpcio; no protoc: messages are raw bytes).

server ADDR PORT CERT KEY LOG
    A TLS gRPC server on ADDR:PORT with service sluice.Test:
      Unary   (unary-unary)  -> b"key=[<x-api-key>] msg=[<request>]"
      Stream  (unary-stream) -> N messages b"item <i>" (i = 0..N-1, N = the request as a decimal number), then
                                trailing metadata x-done: yes
      Echo    (unary-unary)  -> b"echo=[<x-api-key>]" and trailing metadata x-echo: <x-api-key>
      Denied  (unary-unary)  -> b"denied-method-reached" (the gateway's policy must stop it before it gets here)
    Each call appends one JSON line to LOG: {"method", "key", "msg"}. Every value given in an
    environment variable GRPC_MASK_<NAME> is written as {{<NAME>}} in the log (so the log never holds the real
    secret); the replies are not masked: they are what a real service would send back.

client TARGET CA CALL [options]
    One call over grpc.secure_channel(TARGET) trusting only CA, and prints a fixed format, one item a line:
      status <CODE NAME>            always first
      details <text>                when the status is not OK
      reply <payload>               Unary, Echo, Denied (payload decoded as latin-1)
      items <n> <in-order|OUT-OF-ORDER>   Stream: how many messages came and whether they were item 0..n-1
      trailer <name>=<value>        the trailing metadata whose name starts with x- (sorted)
    CALL: unary MSG | stream N | echo MSG | denied
    options: --proxy http://HOST:PORT (channel arg grpc.http_proxy), --key VALUE (metadata x-api-key),
             --name HOST (TLS name override and :authority, for the direct runs), --timeout SECS (10)
"""
import json
import os
import sys
import threading
from concurrent import futures

import grpc

SERVICE = "sluice.Test"


def masker():
    pairs = [(v, "{{%s}}" % k[len("GRPC_MASK_"):]) for k, v in os.environ.items()
             if k.startswith("GRPC_MASK_") and v]
    pairs.sort(key=lambda p: -len(p[0]))

    def mask(s):
        for v, n in pairs:
            s = s.replace(v, n)
        return s
    return mask


def server(addr, port, cert, key, log):
    mask = masker()
    lock = threading.Lock()

    def md(context):
        out = {}
        for k, v in context.invocation_metadata():
            out.setdefault(k, v if isinstance(v, str) else v.decode("latin-1"))
        return out

    def record(method, context, req):
        m = md(context)
        rec = {"method": method, "key": mask(m.get("x-api-key", "")), "msg": mask(req.decode("latin-1"))}
        with lock, open(log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        return m

    def unary(req, context):
        m = record("Unary", context, req)
        return b"key=[" + m.get("x-api-key", "").encode("latin-1") + b"] msg=[" + req + b"]"

    def stream(req, context):
        record("Stream", context, req)
        try:
            n = int(req.decode("ascii"))
        except ValueError:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "N is not a number")
        if not 0 <= n <= 10000:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "N out of range")
        for i in range(n):
            yield b"item %d" % i
        context.set_trailing_metadata((("x-done", "yes"),))

    def echo(req, context):
        m = record("Echo", context, req)
        k = m.get("x-api-key", "")
        context.set_trailing_metadata((("x-echo", k),))
        return b"echo=[" + k.encode("latin-1") + b"]"

    def denied(req, context):
        record("Denied", context, req)
        return b"denied-method-reached"

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Denied": grpc.unary_unary_rpc_method_handler(denied),
    }
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    srv.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    creds = grpc.ssl_server_credentials([(open(key, "rb").read(), open(cert, "rb").read())])
    host = "[%s]" % addr if ":" in addr else addr
    if srv.add_secure_port("%s:%s" % (host, port), creds) == 0:
        sys.exit("cannot bind %s:%s" % (addr, port))
    srv.start()
    print("listening %s:%s" % (addr, port), flush=True)
    srv.wait_for_termination()


def client(target, ca, call, *rest):
    args = list(rest)
    opts = {"--proxy": None, "--key": None, "--name": None, "--timeout": "10"}
    arg = None
    if call in ("unary", "stream", "echo"):
        if not args:
            sys.exit("usage: client TARGET CA %s ARG" % call)
        arg = args.pop(0)
    while args:
        k = args.pop(0)
        if k not in opts or not args:
            sys.exit("bad option %s" % k)
        opts[k] = args.pop(0)
    chopts = [("grpc.enable_retries", 0)]
    if opts["--proxy"]:
        chopts.append(("grpc.http_proxy", opts["--proxy"]))
    if opts["--name"]:
        chopts.append(("grpc.ssl_target_name_override", opts["--name"]))
        chopts.append(("grpc.default_authority", opts["--name"]))
    creds = grpc.ssl_channel_credentials(root_certificates=open(ca, "rb").read())
    metadata = (("x-api-key", opts["--key"]),) if opts["--key"] is not None else ()
    timeout = float(opts["--timeout"])
    out = []
    body = ["items 0 in-order"]

    def trailers(c):
        t = c.trailing_metadata() or ()
        for k, v in sorted((k, v if isinstance(v, str) else v.decode("latin-1")) for k, v in t):
            if k.startswith("x-"):
                out.append("trailer %s=%s" % (k, v))

    with grpc.secure_channel(target, creds, options=chopts) as ch:
        try:
            if call == "stream":
                mc = ch.unary_stream("/%s/Stream" % SERVICE)
                it = mc(arg.encode(), metadata=metadata, timeout=timeout)
                got = []
                try:
                    for m in it:
                        got.append(m)
                finally:
                    body = ["items %d %s" % (len(got), "in-order" if got == [b"item %d" % i for i in range(len(got))]
                                             else "OUT-OF-ORDER")]
                out.append("status OK")
                out.extend(body)
                trailers(it)
            else:
                name = {"unary": "Unary", "echo": "Echo", "denied": "Denied"}[call]
                mc = ch.unary_unary("/%s/%s" % (SERVICE, name))
                req = arg.encode() if arg is not None else b"denied"
                resp, c = mc.with_call(req, metadata=metadata, timeout=timeout)
                out.append("status OK")
                out.append("reply " + resp.decode("latin-1"))
                trailers(c)
        except grpc.RpcError as e:
            out = ["status " + e.code().name, "details " + (e.details() or "")]
            if call == "stream":
                out.append(body[0])
            trailers(e)
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("server", "client"):
        sys.exit(__doc__)
    globals()[sys.argv[1]](*sys.argv[2:])
