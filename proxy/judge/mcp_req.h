/*
 * proxy/judge/mcp_req.h - MCP on the request path (issue 23): a POST to a
 * host's MCP endpoint (policy/mcp.h policy_host_mcp) is judged per JSON-RPC
 * message, and what the rest of the request needs of its messages is kept in
 * r->mcp (struct mcp_req): the ids for a JSON-RPC error answer, the limits of
 * a batch's elements, the audit members, and for the response side the
 * methods asked by id.
 *
 * The order (called by proxy/judge/semantic.c, which runs it for the session):
 *   mcp_req_head()      at the head of any request to the endpoint: the key
 *                       its server requests and their answers go by
 *                       (client, host, Mcp-Session-Id; proxy/judge/mcp_peer.h)
 *   mcp_req_applies()   at the head: the request is a POST to the endpoint, so
 *                       its body is held (at most MCP_REQ_BODY_MAX, or the
 *                       rules' larger max_body) whatever the head's outcome
 *   mcp_req_judge()     the body is held whole: read with policy_mcp_parse
 *                       (any bad input: 400), the Mcp-Method, Mcp-Name and
 *                       Mcp-Param-* headers checked against it (a mismatch:
 *                       400), a response correlated with the server
 *                       request it answers (refused when none), each
 *                       message judged (policy_judge with rq->mcp_msg; a
 *                       batch by policy_judge_mcp_batch)
 *   mcp_req_refusal()   a refusal of such a request becomes a JSON-RPC error
 *                       answer (struct refusal_jsonrpc, proxy/core/refusal.h)
 *   mcp_req_limit()     sem_admit takes each allowed batch element's limit,
 *   mcp_req_budget_at() then each one's budget (all or none: a refusal gives
 *                       back what the batch took)
 *   mcp_req_audit_fill() the request record's mcp members
 *   mcp_req_free()      the request ends (sem_req_free)
 *
 * Ownership: r->mcp is allocated by mcp_req_head (or mcp_req_judge) and
 * freed by mcp_req_free; everything it points to is its own or the policy
 * snapshot's.  The response side (proxy/session/relay.c, proxy/cred/credresp.c,
 * proxy/judge/mcp_resp.c) only reads it, and adds the server requests it sees
 * to the gateway's table under its key (mcp_req_peer_add).
 */
#ifndef SLUICE_PROXY_JUDGE_MCP_REQ_H
#define SLUICE_PROXY_JUDGE_MCP_REQ_H

#include <stddef.h>
#include <jansson.h>
#include "policy/mcp.h"
#include "proxy/core/refusal.h"
#include "proxy/judge/mcp_peer.h"

#define MCP_REQ_BODY_MAX (1024u * 1024u)   /* the body held at an MCP endpoint when no rule asks for more */
#define MCP_REQ_CODE_LIMITED (-32019)      /* the JSON-RPC error code of a rate limit or budget refusal */
#define MCP_REQ_CODE_PARSE (-32700)        /* the body is not JSON */
#define MCP_REQ_CODE_INVALID (-32600)      /* JSON, but not a message the gateway judges */
#define MCP_REQ_CODE_HEADER (-32020)       /* Mcp-* headers disagree with the body (the 2026-07-28 revision's code) */
#define MCP_REQ_BUDGET_TAKES_MAX 16        /* budget takes of one batch's elements; more: the batch is refused (403) */
#define MCP_REQ_ID_TEXT_MAX (POLICY_MCP_ID_MAX * 6 + 3)  /* an id as JSON text, escaped and quoted */

struct conn;
struct req;
struct audit_rec;
struct judge_conn;
struct judge_req;
struct judge_outcome;
struct policy_limit;

/* One message of the request, as judged (copies: the body's tree is gone after the judge). */
struct mcp_req_msg {
	enum policy_mcp_kind kind;
	enum policy_mcp_method method_id;
	char *method;                        /* NULL for a response */
	char answers[POLICY_MCP_METHOD_MAX + 1];  /* a response: the server request's method it answers; "": none */
	char *name;                          /* tool or prompt name, or resource uri; NULL: none */
	char *id;                            /* the id as compact JSON text ("7", "\"a\""); NULL: a notification */
	char *args;                          /* the clear arguments of the rule's audit: paths, JSON text; NULL: none */
	const char *verdict;                 /* a batch element's own: "allow", "deny", "hold" (static) */
	const char *rule;                    /* ... and its rule (the snapshot's, or static) */
	const struct policy_limit *limit;    /* a batch element's limit, taken by sem_admit; NULL: none */
	const struct policy_budget *budget;  /* a batch element's budget, taken by sem_admit; NULL: none */
	int64_t amount;                      /* ... its amount (millionths) */
	unsigned char budget_taken;          /* ... taken (given back if the request never leaves) */
	unsigned char budget_shared;         /* ... from the shared counters: refunded there, in <window_s> */
	uint64_t window_s;
	unsigned char fp;                    /* tools/call or prompts/get: its arguments are fingerprinted (args_hmac) */
	json_t *arguments;                   /* ... params.arguments (a reference), NULL: absent (fingerprinted as {}) */
};

struct mcp_req {
	unsigned char judged;                /* mcp_req_judge read the body (else: only the head was seen) */
	unsigned char keyed;                 /* <peer_key> is set (mcp_req_head) */
	struct mcp_peer_key peer_key;        /* the client, host and Mcp-Session-Id of the request (mcp_peer.h) */
	int batch;                           /* the body was a JSON array */
	size_t n;
	struct mcp_req_msg m[POLICY_MCP_BATCH_MAX];
	char *batch_json;                    /* a batch: the audit's mcp_batch array, JSON text */
	int code;                            /* the host's error_code */
	const char *ids[POLICY_MCP_BATCH_MAX];  /* the requests' ids (JSON texts), for an error answer */
	struct refusal_jsonrpc rpc;          /* what a refusal points to (mcp_req_refusal) */
	int http_status;                     /* ... the HTTP status it is answered with (200); 0: not answered so */
	const json_t *fp_args[POLICY_MCP_BATCH_MAX];  /* the audit record's args_hmac arguments, in order */
};

/*
 * The Mcp-Method, Mcp-Name and Mcp-Param-* headers among <h>/<n> against the
 * parsed body <b> (SEP-2243; "=?base64?...?=" values decoded): NULL when they
 * agree or are absent, else why not (static text).  Pure; O(n^2) in the
 * Mcp-Param-* headers (at most the head's H1_MAX_HEADERS).
 */
struct policy_header;
const char *mcp_req_headers_check(const struct policy_header *h, size_t n, const struct policy_mcp_body *b);

/* 1 when request c->req is a POST to its host's MCP endpoint (its path, normalised, is the endpoint). */
int mcp_req_applies(const struct conn *c);

/*
 * At the head <m> of request c->req, any method: when it is to the host's
 * MCP endpoint, keeps the key its server requests are remembered under and
 * its answers taken by (mcp_peer.h: the client, the host, the Mcp-Session-Id
 * header; two such headers: no key).  Allocates r->mcp.  0, or -1 out of
 * memory (the request is refused: nothing of it could be correlated).
 */
struct h1_message;
int mcp_req_head(struct conn *c, const struct h1_message *m);
/* The key mcp_req_head kept for <r>, or NULL (not to the endpoint, no key). */
const struct mcp_peer_key *mcp_req_peer_key(const struct req *r);

/*
 * For the response side: server request <msg> was seen in an answer to
 * c->req; remembered under c->req's key in the gateway's table (mcp_peer.h)
 * for the client's answer, on this connection or another.  Nothing is kept
 * without a key or a table (the answer will be refused: fail closed).
 */
void mcp_req_peer_add(struct conn *c, const struct policy_mcp_msg *msg);

/*
 * Judges the MCP request <q> (its body held, <q>->headers the head's) on
 * <cf> into <o>: 0 with <o> the outcome to apply (for a batch: allowed only
 * if every element is; its limit is cleared, each element's being in
 * r->mcp), or -1 with <rf> filled (400: the body or its headers; 503: out of
 * memory).  A body not complete gives <o> a 413.  Allocates r->mcp.
 */
int mcp_req_judge(struct conn *c, const struct judge_conn *cf, const struct judge_req *q, struct judge_outcome *o,
                  struct refusal *rf);

/*
 * A refusal <rf> of request <r> (403, 429; a 400 of its body) becomes a
 * JSON-RPC error answer when <r> is an MCP request: rf->jsonrpc points into
 * r->mcp.  A request without ids (notifications only) stays a JSON answer.
 */
void mcp_req_refusal(struct req *r, struct refusal *rf);

/* The limit batch element <i> of <r> takes, or NULL (i >= r->mcp->n, or not a batch). */
const struct policy_limit *mcp_req_limit(const struct req *r, size_t i);
/*
 * Batch element <i> of <r> when it takes from a budget (its budget, amount
 * and the marks sem_admit keeps of the take), or NULL (no budget, i >= n,
 * not a batch).  At most MCP_REQ_BUDGET_TAKES_MAX elements of a batch that
 * mcp_req_judge allowed have one.
 */
struct mcp_req_msg *mcp_req_budget_at(struct req *r, size_t i);

/* Adds the mcp members (mcp_method, tool, rpc_id, args_hmac, args, mcp_batch) of <r> to its audit record <a>. */
void mcp_req_audit_fill(struct req *r, struct audit_rec *a);

/*
 * For the response side: the method the request of <r> asked with id <id>
 * (a response's id), POLICY_MCP_M_NONE when no request of it has that id.
 */
enum policy_mcp_method mcp_req_method_of(const struct req *r, const json_t *id);
/* 1 when the request of <r> holds a JSON-RPC request (a message with an id) that an answer can correlate to. */
int mcp_req_awaits(const struct req *r);

/* Frees r->mcp (NULL: nothing). */
void mcp_req_free(struct req *r);

#endif
