/*
 * policy/mcp.h - MCP (Model Context Protocol) messages: JSON-RPC 2.0 bodies
 * read strictly, the host's MCP endpoint, and tools/list filtering.  Pure:
 * no I/O, no libevent; the proxy (later) and `sluice policy` call it.
 *
 * A POST body to an MCP endpoint is one JSON-RPC message (a request, a
 * notification or a response) or, as the 2025-03-26 revision allowed, a
 * batch: a JSON array of them.  The reader refuses anything that two
 * readers could take differently (duplicate keys, keys that differ only by
 * case where a server folds case, members a message kind does not have) or
 * that a rule could not judge (a tool name that is not a strict name).
 */
#ifndef SLUICE_POLICY_MCP_H
#define SLUICE_POLICY_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "policy/policy.h"

#define POLICY_MCP_BATCH_MAX 64         /* messages of one batch */
#define POLICY_MCP_METHOD_MAX 128       /* bytes of a method name */
#define POLICY_MCP_NAME_MAX 128         /* bytes of a tool (or prompt) name: the 2025-11-25 revision's bound */
#define POLICY_MCP_URI_MAX 4096         /* bytes of a resources/read uri */
#define POLICY_MCP_ID_MAX 256           /* bytes of a string id */
#define POLICY_MCP_LIST_MAX 100000      /* entries of one tools/list (resources, prompts) result */
#define POLICY_MCP_ERROR_CODE_DEFAULT (-32001)

enum policy_mcp_kind {
	POLICY_MCP_REQUEST = 1,       /* method and id */
	POLICY_MCP_NOTIFICATION = 2,  /* method, no id */
	POLICY_MCP_RESPONSE = 3,      /* id and result or error */
	POLICY_MCP_BATCH = 4,         /* a JSON array of the above */
};

/* The methods a rule or the filter treats specially; everything else is POLICY_MCP_M_OTHER. */
enum policy_mcp_method {
	POLICY_MCP_M_NONE = 0,        /* a response */
	POLICY_MCP_M_OTHER = 1,
	POLICY_MCP_M_TOOLS_CALL = 2,
	POLICY_MCP_M_RESOURCES_READ = 3,
	POLICY_MCP_M_PROMPTS_GET = 4,
	POLICY_MCP_M_TOOLS_LIST = 5,
	POLICY_MCP_M_RESOURCES_LIST = 6,
	POLICY_MCP_M_PROMPTS_LIST = 7,
};

/* Why a body is not a message the gateway will judge. */
enum policy_mcp_error {
	POLICY_MCP_OK = 0,
	POLICY_MCP_E_JSON = 1,        /* not JSON (or not UTF-8, or nested over 64 levels) */
	POLICY_MCP_E_DUPLICATE,       /* a duplicate key anywhere */
	POLICY_MCP_E_NOT_OBJECT,      /* the body (or a batch element) is not an object */
	POLICY_MCP_E_BATCH,           /* an empty batch, or over POLICY_MCP_BATCH_MAX */
	POLICY_MCP_E_VERSION,         /* jsonrpc is not "2.0" */
	POLICY_MCP_E_MEMBER,          /* a member the kind does not have, or one that differs from a known one by case */
	POLICY_MCP_E_ID,              /* id missing (response), null, not a string or an integer, or too long */
	POLICY_MCP_E_METHOD,          /* method not a string, empty, too long, or with control bytes */
	POLICY_MCP_E_PARAMS,          /* params not an object */
	POLICY_MCP_E_ARGUMENTS,       /* params.arguments not an object */
	POLICY_MCP_E_NAME,            /* tools/call or prompts/get without a strict name */
	POLICY_MCP_E_URI,             /* resources/read without a uri (a string, 1 to 4096 printable bytes) */
	POLICY_MCP_E_RESPONSE,        /* a response without exactly one of result (an object) and error (an object) */
	POLICY_MCP_E_NOMEM,
};

/* One message; every pointer points into the owning struct policy_mcp_body. */
struct policy_mcp_msg {
	enum policy_mcp_kind kind;
	enum policy_mcp_method method_id;
	const char *method;           /* requests and notifications; NUL-terminated */
	size_t method_len;
	const json_t *id;             /* a string or an integer; NULL for a notification */
	const json_t *params;         /* NULL when absent */
	const char *name;             /* tools/call and prompts/get: params.name; resources/read: params.uri */
	size_t name_len;
	const json_t *arguments;      /* tools/call and prompts/get: params.arguments (an object), NULL when absent */
	const json_t *result;         /* responses: the result object, NULL for an error */
	const json_t *error;          /* responses: the error object */
	const json_t *obj;            /* the whole message */
	const char *answers;          /* a response: the method of the server request it answers, set by the caller
	                               * that correlated it (the gateway: proxy/judge/mcp_peer.h), NUL-terminated;
	                               * an mcp: method condition matches it.  NULL: not correlated */
	size_t answers_len;
	int inexact;                  /* the body holds a real a double cannot hold: such numbers cannot be compared */
};

/* A parsed body: one message, or a batch of them. */
struct policy_mcp_body {
	json_t *root;                 /* owned */
	int batch;                    /* 1: a JSON array */
	int inexact;                  /* a real with more digits than a double keeps (conditions cannot compare it) */
	size_t nmsgs;
	struct policy_mcp_msg one;    /* msgs points here for a single message */
	struct policy_mcp_msg *msgs;
	size_t bad_index;             /* on a batch error: the element at fault */
};

/*
 * Reads <body>/<len> into <out> (caller storage).  Returns 0, or -1 with
 * *<err> set (POLICY_MCP_E_*); either way <out> must be disposed.  Bounded:
 * O(len) time, at most one jansson tree of the body plus POLICY_MCP_BATCH_MAX
 * messages.
 */
int policy_mcp_parse(const char *body, size_t len, struct policy_mcp_body *out, enum policy_mcp_error *err);
void policy_mcp_body_dispose(struct policy_mcp_body *b);
/* Static text for <e>, for refusals and audit ("params is not an object"). */
const char *policy_mcp_strerror(enum policy_mcp_error e);
/* The method id of <method>/<len>. */
enum policy_mcp_method policy_mcp_method_of(const char *method, size_t len);
/* 1 if <s>/<n> is a strict tool name: ^[A-Za-z0-9_.-]{1,128}$ (the 2025-11-25 revision's naming guidance). */
int policy_mcp_name_ok(const char *s, size_t n);

/*
 * The host's mcp: entry.  1 when <h> has one (*<endpoint>: the normalised
 * path, snapshot-owned; *<error_code>: -32000..-32019), else 0.
 */
int policy_host_mcp(const struct policy_host *h, const char **endpoint, int *error_code);

/*
 * The argument values that rule <rule> (the rule id of an outcome: the
 * pointer policy_judge returned, or the same text) of host <h> lets the
 * audit record hold in clear (mcp.audit: [ "$.repo" ]), selected from
 * <arguments> (params.arguments; NULL: none): a new object
 * {"$.repo": value, ...} in *<out> holding the paths that select a value (a
 * path selecting several: an array of them), the values shared with
 * <arguments> (json_incref: keep <arguments> alive or json_deep_copy it);
 * *<out> NULL when the rule names no path or none selects.  Every other
 * argument is recorded only as its fingerprint (audit/audit.h
 * audit_args_hmac).  Returns 0, or SLUICE_ENOMEM.  O(rules + paths).
 */
int policy_mcp_audit_args(const struct policy_host *h, const char *rule, const json_t *arguments, json_t **out);

/*
 * The list results: 1 if the entry named <name>/<n> of a <list> result
 * (POLICY_MCP_M_TOOLS_LIST, _RESOURCES_LIST or _PROMPTS_LIST) is visible on
 * <h>: the first rule that could decide a call of it (its tools/call,
 * resources/read or prompts/get POST to the endpoint) is an allow or hold
 * rule, not a deny rule that refuses it unconditionally; with no such
 * rule, the policy's default.  A host without rules, or in report mode,
 * shows everything.  Rules do not depend on the sandbox, so neither does
 * this.  O(rules).
 */
int policy_mcp_visible(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list,
                       const char *name, size_t n);

/*
 * Filters a list result in place: <result> is the "result" object of a
 * response to <list>, or POLICY_MCP_M_NONE when the request is not known
 * (then its shape says: a "tools", "resources" or "prompts" array).
 * Entries not visible (policy_mcp_visible), and entries that are not
 * objects with a string name (uri for resources), are removed.  Returns the
 * count removed (0: <result> untouched), or -1 when the list is over
 * POLICY_MCP_LIST_MAX entries or memory runs out (the caller refuses the
 * response).  Memory: one array of pointers of the list's size.
 */
long policy_mcp_list_filter(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list,
                            json_t *result);

/*
 * The same on a whole JSON-RPC response text <s>/<n>: 0 when nothing is
 * removed (or it is no list result: the text passes as it is), a count
 * with *<out>/<outlen> the rewritten text (malloc'd, the caller frees),
 * or -1 (refuse: not a response, or the bound).
 */
long policy_mcp_filter_text(const struct policy *p, const struct policy_host *h, enum policy_mcp_method list,
                            const char *s, size_t n, char **out, size_t *outlen);

#endif
