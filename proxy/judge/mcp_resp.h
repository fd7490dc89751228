/*
 * proxy/judge/mcp_resp.h - MCP responses (issue 23): hidden tools stay
 * hidden.  On a host with an mcp: endpoint, the answer to a request to the
 * endpoint is read as JSON-RPC and every tools/list, resources/list and
 * prompts/list result in it is rewritten by policy_mcp_list_filter
 * (policy/mcp.h) to list only what some rule could allow.
 *
 *   application/json   the body is held whole, up to MCP_RESP_JSON_MAX
 *                      (over it: refused, 502, audited), filtered, and sent
 *                      with its new Content-Length;
 *   text/event-stream  parsed as a stream (proxy/codec/sse.h): each event
 *                      whose data is JSON-RPC is filtered and re-emitted,
 *                      every other unit (comments, heartbeats, events whose
 *                      data is not JSON) passes byte for byte; nothing is
 *                      held beyond one event of at most MCP_RESP_EVENT_MAX
 *                      (over it: the stream is cut and audited).
 * A JSON body or event data that looks like JSON ('{' or '[') but is not a
 * JSON-RPC message the strict reader takes (duplicate keys, ...) fails
 * closed: 502 for a body, the stream cut for an event.
 *
 * This module transforms bytes only: the session's relay gives it the
 * de-framed body (mcp_resp_in), takes the filtered bytes (mcp_resp_out)
 * and frames them toward the client, or hands them to the scrubber
 * (proxy/cred: secrets are scrubbed from the bytes that leave, after the
 * filter).  It never writes to the client.
 *
 * Ownership: r->mcpr is allocated by mcp_resp_begin and freed by
 * mcp_resp_free (the session calls it when the request ends).
 */
#ifndef SLUICE_PROXY_JUDGE_MCP_RESP_H
#define SLUICE_PROXY_JUDGE_MCP_RESP_H

#include <stddef.h>
#include <jansson.h>

#include "policy/mcp.h"

#define MCP_RESP_JSON_MAX (8u << 20)    /* bytes of an application/json answer held to be filtered */
#define MCP_RESP_EVENT_MAX (4u << 20)   /* bytes of one SSE event (or comment run) held to be filtered */

struct conn;
struct req;
struct evbuffer;
struct h1_message;

enum mcp_resp_kind {
	MCP_RESP_NONE = 0,   /* not an MCP answer: relayed as any body */
	MCP_RESP_JSON = 1,
	MCP_RESP_SSE = 2,
};

/*
 * At the response head <m> of c->req: whether its body is filtered.  Returns
 * MCP_RESP_NONE, MCP_RESP_JSON or MCP_RESP_SSE (then c->req->mcpr is set), or
 * -1: an MCP answer that cannot be filtered (a Content-Encoding other than
 * identity, out of memory): the relay refuses it (502) before its head goes out.
 */
int mcp_resp_begin(struct conn *c, const struct h1_message *m);
/* The queue the relay moves the de-framed body into, and how much it may hold. */
struct evbuffer *mcp_resp_in(struct req *r);
size_t mcp_resp_queue_max(const struct req *r);
/* The filtered bytes, for the relay to frame (or scrub) and send. */
struct evbuffer *mcp_resp_out(struct req *r);
enum mcp_resp_kind mcp_resp_kind_of(const struct req *r);
/*
 * How the relay frames the filtered bytes when no scrubber takes them
 * (relay.c owns these): a JSON answer's head, built without its framing
 * and last CRLF, waits in <head> for the new Content-Length; an SSE stream
 * goes chunked to an HTTP/1.1 client (<chunked>), else until close.
 */
struct mcp_frame {
	struct evbuffer *head;
	int chunked;
};
struct mcp_frame *mcp_resp_frame(struct req *r);
/*
 * Filters what mcp_resp_in holds into mcp_resp_out; <end>: the body ended.
 * 0, or -1 with a static reason in *<why> (over a bound, not a message the
 * filter can read, out of memory): the relay refuses the answer or cuts the
 * stream.  A JSON body comes out whole at <end> only.
 */
int mcp_resp_pump(struct conn *c, int end, const char **why);
/* For the response record: the list method filtered (NULL: none) and the entries removed (0: none). */
const char *mcp_resp_audit(const struct req *r, long *removed);
void mcp_resp_free(struct req *r);

/*
 * Server-to-client requests (sampling, elicitation, roots/list) seen in the
 * answers are remembered in the gateway's table (proxy/judge/mcp_peer.h,
 * through mcp_req_peer_add), so that the client's answer can be correlated
 * on any of its connections.
 */

#endif
