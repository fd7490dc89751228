// tests/mcp/smoke.mjs - the pinned MCP packages run on this node: a TypeScript SDK client lists the tools of
// server-everything over streamable HTTP and calls one. Usage: node smoke.mjs URL  (prints counts, exits 0)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2] ?? "http://127.0.0.1:3001/mcp");
const client = new Client({ name: "sluice-smoke", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(url));
const { tools } = await client.listTools();
const echo = await client.callTool({ name: "echo", arguments: { message: "hello" } });
console.log(`node ${process.version}: ${tools.length} tools; echo: ${JSON.stringify(echo.content?.[0]?.text ?? null)}`);
await client.close();
