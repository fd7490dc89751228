/*
 * policy/decide.c - request decisions: rules tried in order with their
 * method, path, query, header and body conditions; modes; what the proxy
 * needs to hold; explanations.
 *
 * A decision reads only the immutable snapshot and the request; the body
 * is parsed at most once (struct policy_ctx), when the first rule that reads it is
 * reached, and everything allocated for it is freed before returning.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "cond_int.h"

static int
method_matches(const struct policy_rule *r, const char *m, size_t n)
{
	size_t i;

	if (r->nmethods == 0)
		return 1;
	for (i = 0; i < r->nmethods; i++)
		if (strlen(r->methods[i]) == n && memcmp(r->methods[i], m, n) == 0)
			return 1;
	return 0;
}

static int
path_tv(const struct policy *p, const struct policy_rule *r, const char *s, size_t n)
{
	int rc;

	switch (r->path_kind) {
	case POLICY_PATH_ANY:
		return TV_T;
	case POLICY_PATH_GLOB:
		/* every match starts with the glob's literal prefix; most globs need nothing more */
		if (n < r->prefix_len || memcmp(s, r->path_src, r->prefix_len) != 0)
			return TV_F;
		switch (r->fast) {
		case POLICY_GLOB_EXACT:
			return n == r->prefix_len ? TV_T : TV_F;
		case POLICY_GLOB_PREFIX_ANY:
			return TV_T;
		case POLICY_GLOB_PREFIX_SEG:
			return memchr(s + r->prefix_len, '/', n - r->prefix_len) == NULL ? TV_T : TV_F;
		default:
			return policy_glob_match(&r->glob, s, n) ? TV_T : TV_F;
		}
	case POLICY_PATH_REGEX:
		/* a regex that hit its limits cannot judge: it never allows, and never escapes a deny */
		rc = policy_regex_match(p, r->re, s, n);
		return rc < 0 ? TV_U : rc ? TV_T : TV_F;
	}
	return TV_F;
}

/* The parts of a rule that need no body: method, path, query and headers. */
static int
rule_head(struct policy_ctx *c, const struct policy_rule *r, int all)
{
	const struct policy_request *q = c->req;
	size_t i;
	int x;

	if (!method_matches(r, q->method, q->method_len)) {
		policy_ctx_why(c, "method %.*s is not %s%s", (int)(q->method_len > 64 ? 64 : q->method_len), q->method,
		        r->methods[0], r->nmethods > 1 ? " or the others listed" : "");
		return TV_F;
	}
	x = path_tv(c->p, r, q->path, q->path_len);
	if (x != TV_T) {
		policy_ctx_why(c, "path %.*s %s %s", (int)(q->path_len > 200 ? 200 : q->path_len), q->path,
		        x == TV_F ? "does not match" : "cannot be judged (regex limits) by", r->path_src);
		if (x == TV_F)
			return x;
	}
	for (i = 0; i < r->nhead_conds && x != TV_F; i++)
		x = policy_tv_and(x, policy_cond_eval(c, &r->conds[i], all));
	return x;
}

static int
rule_body(struct policy_ctx *c, const struct policy_rule *r, int all, int64_t *amount)
{
	size_t i;
	int x = TV_T;

	for (i = r->nhead_conds; i < r->nconds && x != TV_F; i++)
		x = policy_tv_and(x, policy_cond_eval(c, &r->conds[i], all));
	if (r->gql != NULL && x != TV_F)
		x = policy_tv_and(x, policy_cond_gql_eval(c, r->gql, all));
	if (r->git != NULL && x != TV_F)
		x = policy_tv_and(x, policy_cond_git_eval(c, r->git, all));
	if (r->mcp != NULL && x != TV_F)
		x = policy_tv_and(x, policy_cond_mcp_eval(c, r->mcp));
	if (r->sum != NULL && x != TV_F)
		x = policy_tv_and(x, policy_cond_sum(c, r->sum, amount));
	return x;
}

/* An allow rule needs every condition true; deny and hold rules match unless one is false. */
static int
rule_eval(struct policy_ctx *c, const struct policy_rule *r, int64_t *amount)
{
	int all = r->verdict == POLICY_REQ_ALLOW, x;

	*amount = 0;
	x = rule_head(c, r, all);
	if (x == TV_F)
		return x;
	return policy_tv_and(x, rule_body(c, r, all, amount));
}

static int
matched(const struct policy_rule *r, int x)
{
	return r->verdict == POLICY_REQ_ALLOW ? x == TV_T : x != TV_F;
}

static void
outcome_of(const struct policy_rule *r, int64_t amount, struct policy_outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->verdict = r->verdict;
	o->rule = r->id;
	o->reason = r->verdict == POLICY_REQ_DENY ? "denied by rule" :
	            r->verdict == POLICY_REQ_HOLD ? "held for approval" : NULL;
	o->limit = r->limit;
	o->budget = r->budget;
	o->amount = r->budget != NULL ? amount : 0;
	o->hold_ms = r->hold_ms;
}

static void
default_outcome(const struct policy *p, const char *why, struct policy_outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->rule = "default";
	if (p->default_allow) {
		o->verdict = POLICY_REQ_ALLOW;
	} else {
		o->verdict = POLICY_REQ_DENY;
		o->reason = why;
	}
}

static void
run(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
    struct policy_decision *out, policy_explain_fn fn, void *arg, int head_unknown)
{
	char why[WHY_MAX];
	struct policy_ctx c;
	size_t i;

	const char *refused;

	/* everything but the text buffer of the relevant fields */
	memset(out, 0, offsetof(struct policy_decision, _text));
	out->act.rule = "default";
	if (p == NULL) {
		out->act.reason = "no policy";
		return;
	}
	if (host == NULL) {
		default_outcome(p, "host not in policy", &out->act);
		return;
	}
	policy_ctx_init(&c, p, req);
	c.head_unknown = head_unknown;
	/* read as upstreams read it, on every host and in every mode (screen.c) */
	if ((refused = policy_screen(host, req, head_unknown, c.ctype == CT_FORM && !c.encoded)) != NULL) {
		out->act.rule = "request";
		out->act.reason = refused;
		policy_ctx_dispose(&c);
		return;
	}
	if (!host->has_rules) {
		out->act.verdict = POLICY_REQ_ALLOW;
		out->act.rule = host->key;
		policy_ctx_dispose(&c);
		return;
	}
	for (i = 0; i < host->nrules; i++) {
		const struct policy_rule *r = &host->rules[i];
		struct policy_explain_step st;
		int64_t amount = 0;
		int x = TV_F;

		if (fn != NULL) {
			memset(&st, 0, sizeof(st));
			st.index = i;
			st.rule = r->id;
			st.verdict = r->verdict;
			st.mode = r->mode;
			st.line = r->line;
			st.col = r->col;
			why[0] = '\0';
			c.why = why;
			c.why_set = 0;
		}
		if (r->mode == POLICY_MODE_OFF) {
			if (fn != NULL) {
				st.result = -1;
				st.why = "mode off";
				fn(arg, &st);
			}
			continue;
		}
		x = rule_eval(&c, r, &amount);
		if (fn != NULL) {
			st.result = matched(r, x) ? (x == TV_U ? 2 : 1) : 0;
			st.why = st.result == 1 ? NULL : why[0] != '\0' ? why : "a condition does not hold";
			fn(arg, &st);
		}
		if (!matched(r, x))
			continue;
		if (r->mode == POLICY_MODE_REPORT) {
			if (!out->reported) {
				out->reported = 1;
				outcome_of(r, amount, &out->report);
			}
			continue;
		}
		outcome_of(r, amount, &out->act);
		if (r->verdict == POLICY_REQ_HOLD) {
			/* again, recording what the conditions read, for the approver */
			c.why = NULL;
			c.cap = out;
			(void)rule_eval(&c, r, &amount);
			c.cap = NULL;
		}
		policy_ctx_dispose(&c);
		return;
	}
	policy_ctx_dispose(&c);
	default_outcome(p, "no rule matched", &out->act);
	if (host->mode == POLICY_MODE_REPORT) {
		/* report mode: the request passes, and the audit says what enforce would have done */
		if (!out->reported) {
			out->reported = 1;
			out->report = out->act;
		}
		memset(&out->act, 0, sizeof(out->act));
		out->act.verdict = POLICY_REQ_ALLOW;
		out->act.rule = host->key;
		out->mode = POLICY_MODE_REPORT;
	}
}

/* deny is stricter than hold, hold than allow */
static int
strictness(enum policy_req_verdict v)
{
	return v == POLICY_REQ_DENY ? 2 : v == POLICY_REQ_HOLD ? 1 : 0;
}

/*
 * 1 if <req>'s path has ';' parameters that the host keeps (path_params: keep): then it is judged twice, as
 * sent and stripped (*<stripped> malloc'd, owned by the caller), and the stricter decision stands.
 */
static int
path_twice(const struct policy_host *host, const struct policy_request *req, struct policy_request *stripped)
{
	char *s;

	if (host == NULL || policy_host_path_params(host) != POLICY_PATH_PARAMS_KEEP || req->path == NULL ||
	    memchr(req->path, ';', req->path_len) == NULL)
		return 0;
	*stripped = *req;
	s = xmalloc(req->path_len + 1);
	stripped->path_len = policy_path_strip_params(req->path, req->path_len, s, req->path_len + 1);
	stripped->path = s;
	return 1;
}

static void
decide_both(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
            struct policy_decision *out, policy_explain_fn fn, void *arg, int head_unknown)
{
	struct policy_request stripped;
	struct policy_decision *d2;

	run(p, host, req, out, fn, arg, head_unknown);
	if (!path_twice(host, req, &stripped))
		return;
	d2 = xmalloc(sizeof(*d2));
	run(p, host, &stripped, d2, fn, arg, head_unknown);
	if (strictness(d2->act.verdict) > strictness(out->act.verdict) ||
	    (out->mode == POLICY_MODE_REPORT && d2->mode != POLICY_MODE_REPORT)) {
		*out = *d2;
		/* the field texts moved with the copy: repoint them */
		for (size_t i = 0; i < out->nfields; i++) {
			out->fields[i].place = out->_text + (d2->fields[i].place - d2->_text);
			out->fields[i].value = out->_text + (d2->fields[i].value - d2->_text);
		}
	}
	free(d2);
	free(SLUICE_DECONST(char *, stripped.path)); /* path_twice's copy */
}

void
policy_decide(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
              struct policy_decision *out)
{
	decide_both(p, host, req, out, NULL, NULL, 0);
}

void
policy_explain(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
               struct policy_decision *out, policy_explain_fn fn, void *arg)
{
	decide_both(p, host, req, out, fn, arg, 0);
}

/*
 * 1 if <req> is a urlencoded POST on a path where some rule of <host> names methods that do not include POST:
 * a _method field could carry it into another rule, so the body is held to check it (screen.c).
 */
static int
form_method_matters(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
                    int ctype)
{
	size_t i, k;

	if (ctype != CT_FORM || !sluice_iov_ieq(req->method, req->method_len, "POST"))
		return 0;
	for (i = 0; i < host->nrules; i++) {
		const struct policy_rule *r = &host->rules[i];
		int post = 0;

		if (r->nmethods == 0 || r->mode == POLICY_MODE_OFF || path_tv(p, r, req->path, req->path_len) == TV_F)
			continue;
		for (k = 0; k < r->nmethods; k++)
			post |= strcmp(r->methods[k], "POST") == 0;
		if (!post)
			return 1;
	}
	return 0;
}

static size_t
body_need(const struct policy *p, const struct policy_host *host, const struct policy_request *req, unsigned *flags)
{
	struct policy_request head = *req;
	size_t i, need = 0;
	int nongit = 0;
	struct policy_ctx c;

	if (flags != NULL)
		*flags = 0;
	if (p == NULL || host == NULL || !host->has_rules)
		return 0;
	head.body = NULL;
	head.body_len = 0;
	head.body_complete = 0;
	policy_ctx_init(&c, p, &head);
	if (form_method_matters(p, host, req, c.ctype)) {
		need = POLICY_MAX_BODY_DEFAULT;
		nongit = 1;
	}
	for (i = 0; i < host->nrules; i++) {
		const struct policy_rule *r = &host->rules[i];
		int x;

		if (r->mode == POLICY_MODE_OFF)
			continue;
		x = rule_head(&c, r, r->verdict == POLICY_REQ_ALLOW);
		if (x == TV_F)
			continue;
		if (r->body != 0) {
			if (r->max_body > need)
				need = r->max_body;
			if (r->body != POLICY_BODY_GIT)
				nongit = 1;
			continue;
		}
		/* decided without a body: later rules are never reached */
		if (matched(r, x) && r->mode == POLICY_MODE_ENFORCE)
			break;
	}
	policy_ctx_dispose(&c);
	if (flags != NULL && need > 0 && !nongit)
		*flags = POLICY_NEED_GIT_SECTION;
	return need;
}

size_t
policy_body_need(const struct policy *p, const struct policy_host *host, const struct policy_request *req,
                 unsigned *flags)
{
	struct policy_request stripped;
	size_t need = body_need(p, host, req, flags), n2;
	unsigned f2 = 0;

	if (!path_twice(host, req, &stripped))
		return need;
	n2 = body_need(p, host, &stripped, &f2);
	if (n2 > need)
		need = n2;
	/* only git sections when both readings hold only them */
	if (flags != NULL && (n2 > 0 && !(f2 & POLICY_NEED_GIT_SECTION)))
		*flags &= ~POLICY_NEED_GIT_SECTION;
	free(SLUICE_DECONST(char *, stripped.path)); /* path_twice's copy */
	return need;
}

void
policy_decide_request(const struct policy *p, const struct policy_host *host,
                      const char *method, size_t method_len, const char *path, size_t path_len,
                      struct policy_req_decision *out)
{
	struct policy_request req;
	struct policy_decision d;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.method_len = method_len;
	req.path = path;
	req.path_len = path_len;
	/* the path-only API: conditions on the query, headers or body cannot be judged */
	decide_both(p, host, &req, &d, NULL, NULL, 1);
	out->allow = d.act.verdict == POLICY_REQ_ALLOW;
	out->rule = d.act.rule;
	out->reason = out->allow ? NULL : d.act.verdict == POLICY_REQ_HOLD ? "held for approval" : d.act.reason;
}

const char *
policy_verdict_name(enum policy_req_verdict v)
{
	return v == POLICY_REQ_ALLOW ? "allow" : v == POLICY_REQ_HOLD ? "hold" : "deny";
}

const char *
policy_mode_name(enum policy_mode m)
{
	return m == POLICY_MODE_REPORT ? "report" : m == POLICY_MODE_OFF ? "off" : "enforce";
}
