// tests/mcp/sdk_client.mjs - the TypeScript SDK's client for test_mcp_sdk.sh (issue 23): lists the tools of the
// server at URL, calls ALLOWED with {"message":"hello"} and DENIED with {} (denied by the gateway), and prints one
// JSON line: {"tools":[names],"echo":text|null,"denied":{"code","message"}|null,"denied_ok":text|null}.
// Usage: node sdk_client.mjs URL [ALLOWED [DENIED]]   (default keep_echo, drop_delete; NODE_EXTRA_CA_CERTS names
// the gateway's CA)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const allowed = process.argv[3] ?? "keep_echo";
const denied = process.argv[4] ?? "drop_delete";
const client = new Client({ name: "sluice-sdk-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const out = { tools: null, echo: null, denied: null, denied_ok: null };
out.tools = (await client.listTools()).tools.map((t) => t.name);
const echo = await client.callTool({ name: allowed, arguments: { message: "hello" } });
out.echo = echo.content?.[0]?.text ?? null;
try {
  const r = await client.callTool({ name: denied, arguments: {} });
  out.denied_ok = r.content?.[0]?.text ?? JSON.stringify(r);
} catch (e) {
  out.denied = { code: e.code ?? null, message: String(e.message ?? e) };
}
console.log(JSON.stringify(out));
await client.close();
