/*
 * policy/judge.h - the one judge: every decision the policy makes about a
 * request, shared by the gateway (HTTP/1.1 and HTTP/2 streams alike, in
 * proxy/judge/semantic.c, proxy/session/http.c and conn.c) and by
 * `sluice policy test|explain` (cli/policy.c, cli/policy_cases.c), so the
 * tool that tests a policy is the code that enforces it.
 *
 * The steps, in order, and who calls which:
 *   policy_judge_conn()  the connection: deny, passthrough or intercept for
 *                        (host, port); the gateway calls it once per
 *                        connection (and per plain-HTTP host change);
 *                        policy_judge() calls it when the facts say the
 *                        connection was not judged yet (the CLI)
 *   policy_judge_path()  the path normalised with the host entry's
 *                        encoded_slashes and path_params; a refusal is 400
 *   policy_judge()       the body bound, the git command section, the
 *                        rules (report mode, holds), the hold's body bound,
 *                        and, when a counters view is given, the limits
 *                        and budgets the request would take
 *
 * No I/O, no lock, no libevent: the judge reads the immutable snapshot, the
 * facts and the view, and returns an outcome.  It never applies a take: the
 * caller does (the gateway in proxy/judge/semlimits.c, once nothing else
 * can refuse the request, possibly later and elsewhere; the CLI on its
 * counters that stand still between cases).
 *
 * Ownership: every pointer passed in is borrowed for the call.  Pointers in
 * a struct judge_outcome point into the snapshot, into static text, or into
 * the outcome itself (reason may be out->_reason, field texts live in
 * out->dec._text): an outcome is valid while the snapshot is referenced and
 * is not to be copied with memcpy (out->dec alone may be, as
 * proxy/judge/semantic.c's decision_copy does, rebasing its fields).
 */
#ifndef SLUICE_POLICY_JUDGE_H
#define SLUICE_POLICY_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"

enum judge_verdict {
	JUDGE_ALLOW = 0,       /* forward it (status 200) */
	JUDGE_DENY = 1,        /* refused: <status> 403 (policy, git framing), 400 (path), 413 (max_body), 0 (a
	                        * transparent TLS connection: closed unanswered) */
	JUDGE_HOLD = 2,        /* wait for an operator up to hold_ms; forwarded once approved */
	JUDGE_PASSTHROUGH = 3, /* the TLS connection is tunnelled unread: no request is judged */
	JUDGE_NEED_BODY = 4,   /* hold <need> bytes of the body (need_flags: only the git section), judge again */
};

/* Where the outcome was decided. */
enum judge_stage {
	JUDGE_AT_CONN = 0,     /* the connection verdict */
	JUDGE_AT_PATH = 1,     /* the path does not normalise */
	JUDGE_AT_BODY = 2,     /* the body bound, the git section's framing, a hold's body bound */
	JUDGE_AT_RULES = 3,    /* the rules (or the default); <dec> is filled */
	JUDGE_AT_COUNTERS = 4, /* the rules allowed, the counters view refused (429); <dec> is filled */
};

/* How the connection reached the gateway: a refused transparent TLS connection is closed, not answered. */
enum judge_conn_mode {
	JUDGE_CONN_EXPLICIT = 0,    /* CONNECT or an absolute-form proxy request: refused with 403 */
	JUDGE_CONN_TRANSPARENT = 1, /* redirected: a refused TLS connection is closed (status 0) */
};

/* The connection's facts. */
struct judge_conn {
	const char *sandbox;             /* the client's name for per-sandbox counters; NULL: none known */
	const char *host;                /* canonical (common/host.h): SNI, CONNECT authority or Host */
	unsigned port;
	enum judge_conn_mode mode;
	int tls;                         /* 1 TLS (intercepted or passed through), 0 plain HTTP */
	int judged;                      /* 1: <entry> is the verdict of policy_judge_conn for host:port */
	const struct policy_host *entry; /* judged: the entry that matched (NULL: the default's) */
};

/* The request's facts, as it will leave. */
struct judge_req {
	const char *method;
	size_t method_len;
	const char *path;                /* normalised (policy_judge_path), without the query */
	size_t path_len;
	const char *query;               /* raw, after '?'; NULL: none */
	size_t query_len;
	const struct policy_header *headers;  /* Content-Type is read from them: exactly one, or none known */
	size_t nheaders;
	int has_body;                    /* a body follows (Content-Length above 0, or chunked) */
	int body_len_known;              /* body_total is its Content-Length */
	uint64_t body_total;
	const char *body;                /* the held body (or its start), NULL: not held (yet) */
	size_t body_len;
	int body_complete;               /* body is all of it */
	int need_known;                  /* need/need_flags are from this request's JUDGE_NEED_BODY outcome */
	size_t need;
	unsigned need_flags;
	/* mcp: conditions judge this message (one element of a batch: policy_judge_mcp_batch) instead of reading
	 * the body as one; NULL: the body is read */
	const struct policy_mcp_msg *mcp_msg;
};

/*
 * A read-only view of the limit and budget counters (may be NULL: the
 * caller takes them itself later, as the gateway does).  rate_left: the
 * tokens counter <lim> has for <sandbox> now (> 0: a take succeeds);
 * budget_left: the amount (millionths) budget <b> has left for <sandbox>.
 */
struct judge_counters {
	uint64_t (*rate_left)(void *arg, const struct policy_limit *lim, const char *sandbox);
	int64_t (*budget_left)(void *arg, const struct policy_budget *b, const char *sandbox);
	void *arg;
};

/* Which takes of an outcome the caller applies, in order (limit, then budget): those before <refused_take>. */
enum judge_take {
	JUDGE_TAKE_ALL = 0,    /* no take refused: apply the limit and the budget */
	JUDGE_TAKE_LIMIT = 1,  /* the rate limit is exhausted: apply none */
	JUDGE_TAKE_BUDGET = 2, /* the budget would be exceeded: apply the limit's token only (as the gateway does) */
};

#define JUDGE_HOLD_BODY_MAX (1024 * 1024) /* the body held for approval when the hold rule reads none */
#define JUDGE_REASON_MAX 192

struct judge_outcome {
	enum judge_verdict verdict;
	enum judge_stage stage;
	int status;                         /* 200 (ALLOW, HOLD once approved), 400, 403, 413, 429, 0 (closed) */
	const char *rule;                   /* rule id, host key, "default", "path", "max_body", "git" */
	const char *reason;                 /* NULL when allowed */
	const struct policy_host *entry;    /* the connection's entry (NULL: the default's) */
	/* JUDGE_NEED_BODY, and after it */
	size_t need;                        /* the rules' largest max_body */
	unsigned need_flags;                /* POLICY_NEED_GIT_SECTION */
	long git_section;                   /* bytes of the git command section judged, -1 when not a git push */
	/* the takes it asks for (ALLOW, HOLD): applied by the caller, never here */
	const struct policy_limit *limit;
	const struct policy_budget *budget;
	int64_t amount;                     /* budget != NULL: this request's sum, millionths */
	enum judge_take refused_take;       /* JUDGE_AT_COUNTERS: which take the view refused */
	/* JUDGE_HOLD */
	unsigned hold_ms;                   /* the approval's timeout */
	size_t hold_body_max;               /* the body an approval binds, at most (413 beyond) */
	int report_mode;                    /* allowed only because the host is in report mode */
	int decided;                        /* <dec> is filled (the rules ran): dec.reported, dec.report, fields */
	struct policy_decision dec;
	char _reason[JUDGE_REASON_MAX];
};

/* Text of a verdict: "allow", "deny", "hold", "passthrough", "need-body". */
const char *policy_judge_verdict_name(enum judge_verdict v);
/* Text of a limit's or budget's period: "second", "minute", "hour", "day", else "period". */
const char *policy_period_name(uint32_t seconds);
/* An amount in millionths as a decimal ("12.5", "200", "-0.5") into <buf>; returns <buf>. */
const char *policy_amount_fmt(int64_t v, char *buf, size_t cap);

/*
 * The connection verdict for <cf>'s host:port into <out> (filled whole):
 * JUDGE_DENY (403, or 0 for transparent TLS), JUDGE_PASSTHROUGH (TLS
 * only: a plain-HTTP connection to a passthrough host is read, as any), or
 * JUDGE_ALLOW (intercept).  out->entry is the entry that matched.
 */
void policy_judge_conn(const struct policy *pol, const struct judge_conn *cf, struct judge_outcome *out);

/*
 * Normalises the raw path <in>/<len> (no query) for host entry <h> into <buf>
 * (capacity <cap> >= len + 2) as policy_host_path does: the length, or -1
 * with <out> filled as a refusal (JUDGE_DENY, 400, rule "path").
 */
long policy_judge_path(const struct policy_host *h, const char *in, size_t len, char *buf, size_t cap,
                       struct judge_outcome *out);

/*
 * Judges request <rq> on connection <cf> into <out> (filled whole).  When
 * <cf> is not judged, the connection is judged first (policy_judge_conn)
 * and an outcome other than intercept is returned as is.  Then:
 *   - a body that the rules read: its Content-Length over their max_body is
 *     413; not held yet (rq->body NULL, or held but incomplete): returns
 *     JUDGE_NEED_BODY with need and need_flags (a git push: only its
 *     command section, -1/-2-at-the-end framing is 403 "git");
 *   - the rules (policy_explain when <explain> is not NULL, else
 *     policy_decide): deny 403, allow, hold (with hold_ms and the hold's
 *     body bound: a Content-Length over it is 413);
 *   - with <ctr>, an allow or a hold whose limit has no token, or whose
 *     budget cannot pay its amount, is 429 (stage JUDGE_AT_COUNTERS).
 * Returns 0; -1 only for bad arguments (NULL pol/cf/rq/out).
 */
int policy_judge(const struct policy *pol, const struct judge_conn *cf, const struct judge_req *rq,
                 const struct judge_counters *ctr, struct judge_outcome *out, policy_explain_fn explain, void *arg);

/*
 * Judges a batch (a JSON array of JSON-RPC messages, as policy_mcp_parse
 * read it into <b>) POSTed as request <rq>: each element with
 * policy_judge, rq->mcp_msg set to it, into <each> (b->nmsgs outcomes,
 * caller storage; may be NULL), and the batch into <out>: the outcome of
 * the first element denied (a batch is allowed only if every element is),
 * else of the first held, else of the first element.  *<at> (may be NULL)
 * gets that element's index.  <explain> is called for every element's
 * rules in turn.  The takes: each allowed element asks for its own (in
 * <each>); <out> alone asks for its element's only.  A counters view is
 * read for each element as it stands (the takes of earlier elements are
 * not in it).  Returns 0; -1 for bad arguments (<b> not a batch).
 */
struct policy_mcp_body;
int policy_judge_mcp_batch(const struct policy *pol, const struct judge_conn *cf, const struct judge_req *rq,
                           const struct policy_mcp_body *b, const struct judge_counters *ctr,
                           struct judge_outcome *out, struct judge_outcome *each, size_t *at,
                           policy_explain_fn explain, void *arg);

/*
 * Fills <out> as the refusal of a body larger than <bound> (413, rule
 * "max_body"): <hold> says the bound is a hold's (its body is bound whole).
 * For callers that find the size while streaming (the gateway's chunked body).
 */
void policy_judge_too_large(struct judge_outcome *out, size_t bound, int hold);

#endif
