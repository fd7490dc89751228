#!/usr/bin/python3
"""proxy_client.py - an MCP client through an explicit proxy, for test_mcp_run.sh (issue 23, item 5).

    HTTPS_PROXY=http://HOST:PORT SSL_CERT_FILE=CA.pem proxy_client.py URL [ALLOWED [DENIED [P_OK P_NO R_OK R_NO]]]

The streamable HTTP transport by hand, with Debian's python3 standard library only (http.client, CONNECT through
HTTPS_PROXY, then TLS trusting SSL_CERT_FILE and nothing else): initialize, notifications/initialized, tools/list,
tools/call ALLOWED {"message":"hello"} and tools/call DENIED {} on one keep-alive connection, carrying the server's
Mcp-Session-Id and the negotiated MCP-Protocol-Version. Each answer may be application/json or a text/event-stream
(read to its end; the event whose JSON-RPC id is the request's is the answer). Prints one JSON line, the shape of
sdk_client.mjs's plus what the exchange looked like:
    {"tools":[names],"echo":text|null,"denied":{"code","message","data"}|null,"denied_ok":text|null,
     "status":{"initialize":N,"initialized":N,"list":N,"call":N,"denied":N},"forms":{"list":"json"|"sse",...},
     "session":bool,"protocol":version}
With P_OK..R_NO also prompts/list, prompts/get P_OK and P_NO (prompt names), resources/list, resources/read R_OK
and R_NO (URIs), adding {"prompts":[names],"resources":[uris],"get":{"ok":bool,"denied":code|null},
"read":{"ok":bool,"denied":code|null}} (ok: a result came; denied: the error code of the refused one, null when it
was answered with a result).
Exits 1 (with the reason on stderr) when an answer is missing or is not JSON-RPC.
"""
import http.client
import json
import os
import ssl
import sys
import urllib.parse

PROTOCOL = "2025-06-18"


class Mcp:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
        ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
        self.path = u.path or "/"
        self.conn = http.client.HTTPSConnection(p.hostname, p.port, context=ctx, timeout=30)
        self.conn.set_tunnel(u.hostname, u.port or 443)
        self.session = None
        self.protocol = None
        self.next_id = 1

    def post(self, method, params=None, notify=False):
        """POSTs one message; returns (status, form, the answer's JSON-RPC message or None)."""
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        rid = None
        if not notify:
            rid = self.next_id
            self.next_id += 1
            msg["id"] = rid
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            h["Mcp-Session-Id"] = self.session
        if self.protocol:
            h["MCP-Protocol-Version"] = self.protocol
        self.conn.request("POST", self.path, body=json.dumps(msg).encode(), headers=h)
        r = self.conn.getresponse()
        body = r.read()
        self.session = r.getheader("Mcp-Session-Id") or self.session
        ctype = (r.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if notify:
            return r.status, None, None
        if ctype == "text/event-stream":
            return r.status, "sse", answer_in_events(body, rid)
        if ctype == "application/json":
            m = json.loads(body)
            return r.status, "json", m if isinstance(m, dict) and m.get("id") == rid else None
        return r.status, ctype or "none", None


def answer_in_events(body, rid):
    """the JSON-RPC message with id rid among the events of body (LF, CRLF or CR line endings)"""
    text = body.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    for ev in text.split("\n\n"):
        data = "\n".join(line[5:].removeprefix(" ") for line in ev.split("\n") if line.startswith("data:"))
        if not data:
            continue
        try:
            m = json.loads(data)
        except ValueError:
            continue
        if isinstance(m, dict) and m.get("id") == rid:
            return m
    return None


def main():
    allowed = sys.argv[2] if len(sys.argv) > 2 else "keep_echo"
    denied = sys.argv[3] if len(sys.argv) > 3 else "drop_delete"
    c = Mcp(sys.argv[1])
    out = {"tools": None, "echo": None, "denied": None, "denied_ok": None, "status": {}, "forms": {}}

    def need(name, got):
        st, form, m = got
        out["status"][name] = st
        out["forms"][name] = form
        if m is None or ("result" not in m and "error" not in m):
            print(json.dumps(out))
            sys.exit("proxy_client: no JSON-RPC answer to %s (HTTP %d, %s)" % (name, st, form))
        return m

    init = need("initialize", c.post("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                                    "clientInfo": {"name": "sluice-proxy-client", "version": "1"}}))
    c.protocol = init.get("result", {}).get("protocolVersion", PROTOCOL)
    out["status"]["initialized"] = c.post("notifications/initialized", notify=True)[0]
    out["tools"] = [t["name"] for t in need("list", c.post("tools/list", {})).get("result", {}).get("tools", [])]
    r = need("call", c.post("tools/call", {"name": allowed, "arguments": {"message": "hello"}}))
    out["echo"] = (r.get("result", {}).get("content") or [{}])[0].get("text")
    r = need("denied", c.post("tools/call", {"name": denied, "arguments": {}}))
    if "error" in r:
        out["denied"] = {k: r["error"].get(k) for k in ("code", "message", "data")}
    else:
        out["denied_ok"] = json.dumps(r.get("result"))
    if len(sys.argv) > 7:
        p_ok, p_no, r_ok, r_no = sys.argv[4:8]
        out["prompts"] = [p["name"] for p in need("prompts", c.post("prompts/list", {})).get("result", {}).get("prompts", [])]
        ok = need("get", c.post("prompts/get", {"name": p_ok, "arguments": {}}))
        no = need("get_denied", c.post("prompts/get", {"name": p_no, "arguments": {}}))
        out["get"] = {"ok": "result" in ok, "denied": no.get("error", {}).get("code")}
        out["resources"] = [r["uri"] for r in need("resources", c.post("resources/list", {})).get("result", {}).get("resources", [])]
        ok = need("read", c.post("resources/read", {"uri": r_ok}))
        no = need("read_denied", c.post("resources/read", {"uri": r_no}))
        out["read"] = {"ok": "result" in ok, "denied": no.get("error", {}).get("code")}
    out["session"] = c.session is not None
    out["protocol"] = c.protocol
    print(json.dumps(out))


if __name__ == "__main__":
    main()
