// tests/mcp/sdk_client.mjs - the TypeScript SDK's client for test_mcp_sdk.sh (issue 23): lists the tools of the
// server at URL, calls keep_echo (allowed) and drop_delete (denied by the gateway), and prints one JSON line:
// {"tools":[names],"echo":text|null,"denied":{"code","message"}|null,"denied_ok":text|null}.
// Usage: node sdk_client.mjs URL   (NODE_EXTRA_CA_CERTS names the gateway's CA)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "sluice-sdk-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const out = { tools: null, echo: null, denied: null, denied_ok: null };
out.tools = (await client.listTools()).tools.map((t) => t.name);
const echo = await client.callTool({ name: "keep_echo", arguments: { message: "hello" } });
out.echo = echo.content?.[0]?.text ?? null;
try {
  const r = await client.callTool({ name: "drop_delete", arguments: {} });
  out.denied_ok = r.content?.[0]?.text ?? JSON.stringify(r);
} catch (e) {
  out.denied = { code: e.code ?? null, message: String(e.message ?? e) };
}
console.log(JSON.stringify(out));
await client.close();
