// tests/mcp/sdk_sampling.mjs - the TypeScript SDK's client with the sampling capability, for test_mcp_sdk.sh
// (issue 23): calls TOOL of the server at URL (server-everything's trigger-sampling-request), answers the server's
// sampling/createMessage request with the text "sampled-ok" (the SDK POSTs that answer while the call's own POST
// still waits for its result: on another connection), and prints one JSON line: {"text":the tool's text|null,
// "sampled":how many sampling requests it answered,"error":text|null}.
// Usage: node sdk_sampling.mjs URL [TOOL]   (NODE_EXTRA_CA_CERTS names the gateway's CA)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const tool = process.argv[3] ?? "trigger-sampling-request";
const out = { text: null, sampled: 0, error: null };
const client = new Client({ name: "sluice-sdk-sampling", version: "1.0.0" }, { capabilities: { sampling: {} } });
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  out.sampled++;
  return { role: "assistant", content: { type: "text", text: "sampled-ok" }, model: "sluice-test" };
});
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
  const r = await client.callTool({ name: tool, arguments: { prompt: "hello", maxTokens: 5 } }, undefined,
    { timeout: 20000 });
  out.text = r.content?.[0]?.text ?? JSON.stringify(r);
} catch (e) {
  out.error = String(e.message ?? e);
}
console.log(JSON.stringify(out));
await client.close();
process.exit(0);
