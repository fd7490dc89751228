// tests/mcp/sdk_server.mjs - an MCP server made with the TypeScript SDK for test_mcp_sdk.sh (issue 23): streamable
// HTTP over TLS on ADDR:PORT, stateless (a server and a transport per request, as the SDK's stateless example).
// The answer form is chosen by the Host: JSON_HOST gets application/json answers (enableJsonResponse), any other
// host text/event-stream. Tools: keep_echo (echoes its message), drop_delete, other_hidden.
// Usage: node sdk_server.mjs ADDR PORT CERT KEY JSON_HOST
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [addr, port, cert, key, jsonHost] = process.argv.slice(2);

function mcp() {
  const s = new McpServer({ name: "sluice-test-server", version: "1.0.0" });
  s.registerTool("keep_echo", { description: "echoes", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: `echo: ${message}` }] }));
  s.registerTool("drop_delete", { description: "deletes everything", inputSchema: {} },
    async () => ({ content: [{ type: "text", text: "deleted" }] }));
  s.registerTool("other_hidden", { description: "no rule names it", inputSchema: {} },
    async () => ({ content: [{ type: "text", text: "hidden" }] }));
  return s;
}

createServer({ cert: readFileSync(cert), key: readFileSync(key) }, async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try { body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined; } catch { body = undefined; }
  const host = (req.headers.host ?? "").split(":")[0];
  const server = mcp();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: host === jsonHost });
  res.on("close", () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}).listen(Number(port), addr, () => console.log(`listening ${addr}:${port}`));
