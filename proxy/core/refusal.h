/*
 * proxy/core/refusal.h - a refusal as a value, and who answers it.
 *
 * Credential checks (proxy/cred/), semantic decisions and limits
 * (proxy/judge/), the protocol-specific refusals (refuse_proto.c) and the
 * relay's own failures (relay.c) never write an answer: they fill a struct
 * refusal the caller passes and return -1.  The session layer (http.c, for
 * an HTTP/1.1 request and for an HTTP/2 stream's virtual connection alike)
 * turns it into the one answer with http_refuse().
 *
 * Ownership and lifetime of the request (c->req):
 *   - c->req is allocated by the session (req_new in http.c) when a request
 *     head arrives, and freed only by the session: http_req_reset(), reached
 *     from http_refuse(), http_answer_end(), relay_abort() (the request in
 *     flight failing after its head went out) and http_next_request() at the
 *     end of a relayed exchange, and by conn_close().
 *   - A callee that refuses fills <rf> and returns; c->req, c->up and every
 *     view into the client's input are still valid when it returns, and stay
 *     valid until its caller (the session) answers.  No callee frees c->req
 *     or c->up on a refusal, and none calls http_refuse() from inside a walk.
 *   - The strings a refusal points to (<rule>, <reason>) are borrowed: static
 *     text, the policy snapshot's (c->pol, which outlives the request), or
 *     c->req->rule_buf and other buffers of c->req.  They must stay valid
 *     until http_refuse() returns: it copies what outlives the request (the
 *     audit record is written before the request is freed).  Never a buffer
 *     of c->up (freed while answering): copy such text into r->rule_buf.
 *   - Async outcomes (an operator's decision, an upstream's dial failing,
 *     an audit record written) arrive in the module that asked for them; it
 *     fills a refusal and hands it to http_refuse() from that callback, the
 *     outermost frame, where nothing below it holds c->req.
 */
#ifndef SLUICE_PROXY_CORE_REFUSAL_H
#define SLUICE_PROXY_CORE_REFUSAL_H

#include <stddef.h>

/* The "error" member of a JSON answer: what kind of refusal it is (text only at the edge: refusal_err_text). */
enum refusal_err {
	REFUSAL_BAD_REQUEST = 1,       /* "bad request" */
	REFUSAL_DENIED,                /* "denied by policy" */
	REFUSAL_EXFILTRATION,          /* "exfiltration attempt" */
	REFUSAL_SECRET_UNAVAILABLE,    /* "secret unavailable" */
	REFUSAL_SECRET_REVOKED,        /* "secret revoked" */
	REFUSAL_INTERNAL,              /* "internal error" */
	REFUSAL_MEDIA_TYPE,            /* "unsupported media type" */
	REFUSAL_TOO_LARGE,             /* "request too large" */
	REFUSAL_RATE_LIMITED,          /* "rate limited" (with struct refusal_limit) */
	REFUSAL_LIMITS_UNAVAILABLE,    /* "limits unavailable" */
	REFUSAL_AUDIT_UNAVAILABLE,     /* "audit log unavailable" */
	REFUSAL_UPSTREAM_FAILED,       /* "upstream failed" */
	REFUSAL_MISDIRECTED,           /* "misdirected request" */
	REFUSAL_METHOD_NOT_ALLOWED,    /* "method not allowed" */
	REFUSAL_TIMEOUT,               /* "request timeout" */
	REFUSAL_PROXY_AUTH,            /* "proxy authentication failed" */
	REFUSAL_GATEWAY_BUSY,          /* "gateway busy" */
	REFUSAL_APPROVAL_UNAVAILABLE,  /* "approval unavailable" */
	REFUSAL_GATEWAY_STOPPING,      /* "gateway stopping" */
};

/* The text of <e> for a JSON answer and a log line (static). */
const char *refusal_err_text(enum refusal_err e);

/* What a 429 adds to its answer (Retry-After, and the JSON members limit, kind, retry_after, reset). */
struct refusal_limit {
	const char *key;      /* the limit's or budget's key (the policy snapshot's) */
	const char *kind;     /* "rate" or "budget" (static) */
	unsigned retry_after; /* seconds, at least 1 */
	const char *reset;    /* when it resets, RFC 3339 (a buffer of c->req->sem) */
};

/*
 * A refusal answered as JSON-RPC errors (an MCP endpoint, issue 23): a 403 or
 * 429 of a request with ids is answered with HTTP 200 and one error per id
 * ({"jsonrpc":"2.0","id":..,"error":{"code","message","data":{"rule","reason"}}},
 * a JSON array for a batch; a 429 adds Retry-After and data.retry_after);
 * a 400 of the body with one error of id null at HTTP 400.  The storage is the
 * judge's (proxy/judge/mcp_req.h, r->mcp), alive until the answer is written.
 */
struct refusal_jsonrpc {
	int code;                           /* the error code (-32001 by default; -32019 a limit; -32700, -32600) */
	const char *const *ids;             /* the ids as JSON texts; nids 0: one error of id null */
	size_t nids;
	unsigned char batch;                /* answered as a JSON array */
};

/*
 * A refusal of the current request, filled by whoever decided it.  Pointers
 * are borrowed as said above; the struct itself lives in the caller's frame.
 */
struct refusal {
	int status;                         /* the HTTP status answered */
	enum refusal_err err;
	const char *rule;                   /* the rule or knob that refused ("secrets", "limits.body", a rule id) */
	const char *reason;                 /* why, for the operator and the client */
	struct refusal_limit limit;         /* a 429's extra members, when limit.key is set */
	const char *phrase;                 /* the status line's reason phrase instead of the status's, or NULL */
	unsigned char close;                /* the connection closes after the answer (else: as the request allows) */
	unsigned char quiet;                /* no audit record (it was written when the refusal was decided) */
	const struct refusal_jsonrpc *jsonrpc; /* answered as JSON-RPC errors (above), or NULL */
};

/*
 * Fills <rf> with a refusal that leaves the connection as the request allows
 * (http_answer_keep) and is audited; returns -1, so that a callee can
 * `return refusal_set(rf, ...)`.
 */
int refusal_set(struct refusal *rf, int status, enum refusal_err err, const char *rule, const char *reason);
/* The HTTP status <rf> is answered with: rf->status, or 200 for a 403 or 429 answered as JSON-RPC errors with ids. */
int refusal_http_status(const struct refusal *rf);
/* refusal_set, and the connection closes after the answer. */
int refusal_close(struct refusal *rf, int status, enum refusal_err err, const char *rule, const char *reason);

/* The session answers a refusal with http_refuse() (proxy/session/session.h), the only writer of an answer. */

#endif
