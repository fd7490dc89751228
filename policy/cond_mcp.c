/*
 * policy/cond_mcp.c - the mcp: condition of a rule and the mcp: entry of a
 * host: loaded and validated here (line:col errors like the rest), and
 * judged against one JSON-RPC message (policy/mcp.h).
 *
 *   hosts.<h>.mcp: { endpoint: /mcp, error_code: -32001 }
 *   rule body:     mcp: { method: [..], tool: name | [names] | glob, arguments: { "$.x": { eq: .. } } }
 *
 * arguments: are ordinary conditions (cond.c parses them, cond_eval.c
 * judges them) whose JSON paths are rooted at params.arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "cond_int.h"

#define WHAT_MAX (POLICY_WHERE_MAX + 64)
#define ENDPOINT_MAX 1024 /* bytes of mcp.endpoint */

static const char *const mcp_keys[] = {"method", "tool", "arguments", "audit"};
static const char *const mcp_host_keys[] = {"endpoint", "error_code"};

static int
printable_ascii(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

/* The items of a scalar-or-list node: *<items>/<n> (a scalar is a list of one). 0, or SLUICE_EINVAL. */
static int
scalar_items(struct policy_ld *l, yaml_node_t *n, const char *what, const char *expect, yaml_node_t ***items,
             size_t *nitems)
{
	yaml_node_item_t *it;
	size_t cnt;

	*items = NULL;
	*nitems = 0;
	if (n->type == YAML_SCALAR_NODE) {
		*items = xcalloc(1, sizeof(**items));
		(*items)[(*nitems)++] = n;
		return 0;
	}
	cnt = n->type == YAML_SEQUENCE_NODE ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start) : 0;
	if (cnt == 0 || cnt > POLICY_MCP_TOOLS_MAX)
		return policy_ld_error(l, n, "expected %s or a list of 1 to %d of them in %s", expect, POLICY_MCP_TOOLS_MAX,
		                       what);
	*items = xcalloc(cnt, sizeof(**items));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = policy_ld_node(l, *it);

		if (e == NULL || e->type != YAML_SCALAR_NODE) {
			free(*items);
			*items = NULL;
			return policy_ld_error(l, e != NULL ? e : n, "expected %s in %s", expect, what);
		}
		(*items)[(*nitems)++] = e;
	}
	return 0;
}

static int
parse_methods(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_mcp_cond *m)
{
	yaml_node_t **items;
	size_t i, cnt;
	int ret;

	if ((ret = scalar_items(l, n, what, "a JSON-RPC method (tools/call)", &items, &cnt)) != 0)
		return ret;
	m->methods = xcalloc(cnt, sizeof(*m->methods));
	for (i = 0; i < cnt; i++) {
		const char *s = (const char *)items[i]->data.scalar.value;
		size_t len = items[i]->data.scalar.length;

		if (len == 0 || len > POLICY_MCP_METHOD_MAX || !printable_ascii(s, len)) {
			ret = policy_ld_error(l, items[i], "expected a JSON-RPC method (1 to %d printable bytes, no spaces) in %s",
			                      POLICY_MCP_METHOD_MAX, what);
			break;
		}
		m->methods[m->nmethods++] = xstrndup(s, len);
	}
	free(items);
	return ret;
}

/* One tool entry: a name glob, or a resource URI (exact, or a prefix ending in '*'). */
static int
tool_one(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_mcp_tool *t)
{
	const char *s = (const char *)n->data.scalar.value, *err = NULL;
	size_t len = n->data.scalar.length, i;
	char glob[POLICY_MCP_NAME_MAX + 2], esc[160];

	policy_ld_esc(esc, sizeof(esc), n->data.scalar.value, len);
	t->src = xstrndup(s, len);
	if (memchr(s, ':', len) != NULL) {
		t->uri = 1;
		t->prefix = len > 0 && s[len - 1] == '*';
		t->prefix_len = len - (size_t)t->prefix;
		if (len > POLICY_MCP_URI_MAX || !printable_ascii(s, len) || memchr(s, '*', t->prefix_len) != NULL ||
		    s[0] == ':')
			return policy_ld_error(l, n, "bad resource URI '%s' in %s; expected a URI, or a prefix of one ending "
			                       "in *, of printable bytes without spaces", esc, what);
		return 0;
	}
	for (i = 0; i < len; i++)
		if (s[i] != '*' && !policy_mcp_name_ok(s + i, 1))
			break;
	if (len == 0 || len > POLICY_MCP_NAME_MAX || i < len) {
		return policy_ld_error(l, n, "bad tool '%s' in %s; expected a tool name (1 to %d of A-Z a-z 0-9 _ . -), a "
		                       "glob of one with *, or a resource URI", esc, what, POLICY_MCP_NAME_MAX);
	}
	/* a path glob over "/" + name: names hold no '/', so '*' is any run of name bytes */
	glob[0] = '/';
	memcpy(glob + 1, s, len);
	if (policy_glob_compile(&t->glob, glob, len + 1, &err) != 0)
		return policy_ld_error(l, n, "bad tool glob '%s' in %s: %s", esc, what, err);
	return 0;
}

static int
parse_tools(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_mcp_cond *m)
{
	yaml_node_t **items;
	size_t i, j, cnt;
	int ret;

	if ((ret = scalar_items(l, n, what, "a tool name, a glob or a resource URI", &items, &cnt)) != 0)
		return ret;
	m->tools = xcalloc(cnt, sizeof(*m->tools));
	for (i = 0; i < cnt && ret == 0; i++) {
		m->ntools++;
		ret = tool_one(l, items[i], what, &m->tools[i]);
		for (j = 0; j < i && ret == 0; j++)
			if (strcmp(m->tools[j].src, m->tools[i].src) == 0)
				ret = policy_ld_error(l, items[i], "duplicate tool '%s' in %s", m->tools[i].src, what);
	}
	free(items);
	return ret;
}

/* audit: [ "$.repo", ... ]: JSON paths rooted at params.arguments, whose values the record may hold in clear. */
static int
parse_audit(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_mcp_cond *m)
{
	yaml_node_item_t *it;
	size_t cnt, j;
	char esc[160];

	cnt = n->type == YAML_SEQUENCE_NODE ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start) : 0;
	if (cnt == 0 || cnt > POLICY_MCP_AUDIT_MAX)
		return policy_ld_error(l, n, "expected a list of 1 to %d JSON paths ($.repo) in %s", POLICY_MCP_AUDIT_MAX,
		                       what);
	m->audit_src = xcalloc(cnt, sizeof(*m->audit_src));
	m->audit = xcalloc(cnt, sizeof(*m->audit));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = policy_ld_node(l, *it);
		const char *s;
		size_t len;

		if (e == NULL || e->type != YAML_SCALAR_NODE)
			return policy_ld_error(l, e != NULL ? e : n, "expected a JSON path ($.repo) in %s", what);
		s = (const char *)e->data.scalar.value;
		len = e->data.scalar.length;
		policy_ld_esc(esc, sizeof(esc), e->data.scalar.value, len);
		if (policy_jpath_compile(s, len, &m->audit[m->naudit]) != 0)
			return policy_ld_error(l, e, "bad JSON path '%s' in %s (rooted at params.arguments: $.repo, "
			                       "$.labels[0], $['a key'])", esc, what);
		m->audit_src[m->naudit++] = xstrndup(s, len);
		for (j = 0; j + 1 < m->naudit; j++)
			if (strcmp(m->audit_src[j], m->audit_src[m->naudit - 1]) == 0)
				return policy_ld_error(l, e, "duplicate path '%s' in %s", esc, what);
	}
	return 0;
}

int
policy_mcp_cond_parse(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r, yaml_node_t **args)
{
	char what[WHAT_MAX];
	yaml_node_t *v[4];
	int ret;

	*args = NULL;
	snprintf(what, sizeof(what), "%s.mcp", where);
	ret = policy_ld_fields(l, n, what, "a map with method, tool, arguments, audit", mcp_keys, 4, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] == NULL && v[1] == NULL && v[2] == NULL)
		return policy_ld_error(l, n, "expected at least one of method, tool, arguments in %s", what);
	r->mcp = xcalloc(1, sizeof(*r->mcp));
	snprintf(what, sizeof(what), "%s.mcp.method", where);
	if (v[0] != NULL && (ret = parse_methods(l, v[0], what, r->mcp)) != 0)
		return ret;
	snprintf(what, sizeof(what), "%s.mcp.tool", where);
	if (v[1] != NULL && (ret = parse_tools(l, v[1], what, r->mcp)) != 0)
		return ret;
	snprintf(what, sizeof(what), "%s.mcp.audit", where);
	if (v[3] != NULL && (ret = parse_audit(l, v[3], what, r->mcp)) != 0)
		return ret;
	*args = v[2];
	return 0;
}

void
policy_mcp_cond_dispose(struct policy_mcp_cond *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->nmethods; i++)
		free(m->methods[i]);
	free(m->methods);
	for (i = 0; i < m->ntools; i++) {
		free(m->tools[i].src);
		policy_glob_dispose(&m->tools[i].glob);
	}
	free(m->tools);
	for (i = 0; i < m->naudit; i++) {
		free(m->audit_src[i]);
		policy_jpath_dispose(&m->audit[i]);
	}
	free(m->audit_src);
	free(m->audit);
	free(m);
}

/* "-32000" .. "-32019" */
static int
error_code(const yaml_node_t *n, int *out)
{
	const char *s = (const char *)n->data.scalar.value;
	int x = 0;
	size_t i;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.length != 6 || s[0] != '-')
		return -1;
	for (i = 1; i < 6; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	if (x < 32000 || x > 32019)
		return -1;
	*out = -x;
	return 0;
}

int
policy_mcp_host_parse(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_host *h)
{
	char what[WHAT_MAX];
	struct policy_glob g;
	const char *err = NULL;
	yaml_node_t *v[2];
	size_t len;
	int ret;

	snprintf(what, sizeof(what), "%s.mcp", where);
	ret = policy_ld_fields(l, n, what, "a map with endpoint, error_code", mcp_host_keys, 2, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] == NULL)
		return policy_ld_error(l, n, "missing required key 'endpoint' in %s (the path MCP messages are POSTed to)",
		                       what);
	if ((ret = policy_ld_string(l, v[0], "an endpoint path", &h->mcp_endpoint)) != 0)
		return ret;
	len = strlen(h->mcp_endpoint);
	/* a normalised path: what the glob compiler accepts, without stars or percent-encoding */
	if (len > ENDPOINT_MAX || strpbrk(h->mcp_endpoint, "*%") != NULL)
		return policy_ld_error(l, v[0], "expected a path (\"/mcp\"; no *, no %%-encoding, at most %d bytes) for "
		                       "%s.endpoint", ENDPOINT_MAX, what);
	if (policy_glob_compile(&g, h->mcp_endpoint, len, &err) != 0)
		return policy_ld_error(l, v[0], "bad path for %s.endpoint: %s", what, err);
	policy_glob_dispose(&g);
	h->mcp_error_code = POLICY_MCP_ERROR_CODE_DEFAULT;
	if (v[1] != NULL && error_code(v[1], &h->mcp_error_code) != 0)
		return policy_ld_error(l, v[1], "expected an integer from -32000 to -32019 (the JSON-RPC range left to "
		                       "implementations) for %s.error_code", what);
	return 0;
}

int
policy_rule_posts(const struct policy_rule *r)
{
	size_t i;

	if (r->nmethods == 0)
		return 1;
	for (i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], "POST") == 0)
			return 1;
	return 0;
}

/* 1 when path regex <re> does not match <ep> (an error of the matcher counts as a match: it could). */
static int
regex_misses(const pcre2_code *re, const char *ep)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	int rc;

	if (md == NULL)
		return 0;
	rc = pcre2_match(re, (PCRE2_SPTR)ep, strlen(ep), 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc == PCRE2_ERROR_NOMATCH;
}

int
policy_mcp_rule_check(struct policy_ld *l, const struct policy_host *h, const struct policy_rule *r)
{
	yaml_mark_t m = {0, r->line - 1, r->col - 1};

	if (r->mcp == NULL)
		return 0;
	if (h->mcp_endpoint == NULL)
		return policy_ld_error_at(l, m, "mcp in %s, but host %s has no MCP endpoint (add mcp: { endpoint: /mcp } "
		                          "to the host)", r->where, h->key);
	if (r->path_kind == POLICY_PATH_GLOB &&
	    !policy_glob_match(&r->glob, h->mcp_endpoint, strlen(h->mcp_endpoint)))
		return policy_ld_error_at(l, m, "mcp in %s, whose path %s is not the host's MCP endpoint %s", r->where,
		                          r->path_src, h->mcp_endpoint);
	if (r->path_kind == POLICY_PATH_REGEX && regex_misses(r->re, h->mcp_endpoint))
		return policy_ld_error_at(l, m, "mcp in %s, whose path %s cannot match the host's MCP endpoint %s",
		                          r->where, r->path_src, h->mcp_endpoint);
	if (!policy_rule_posts(r))
		return policy_ld_error_at(l, m, "mcp in %s, whose method excludes POST (MCP messages are POSTed)", r->where);
	return 0;
}

int
policy_host_mcp(const struct policy_host *h, const char **endpoint, int *code)
{
	if (h == NULL || h->mcp_endpoint == NULL)
		return 0;
	*endpoint = h->mcp_endpoint;
	*code = h->mcp_error_code;
	return 1;
}

/* ---- the audit record's clear values ---- */

static void
collect(void *arg, const json_t *v)
{
	/* jansson's reference count is not part of the value: an incref does not change the argument */
	if (json_array_append(arg, SLUICE_DECONST(json_t *, v)) != 0)
		json_array_clear(arg); /* out of memory: the path is left out */
}

int
policy_mcp_audit_args(const struct policy_host *h, const char *rule, const json_t *arguments, json_t **out)
{
	const struct policy_mcp_cond *m = NULL;
	json_t *vals;
	size_t i;

	*out = NULL;
	if (h == NULL || rule == NULL || !json_is_object(arguments))
		return 0;
	for (i = 0; i < h->nrules && m == NULL; i++)
		if (h->rules[i].mcp != NULL && (h->rules[i].id == rule || strcmp(h->rules[i].id, rule) == 0))
			m = h->rules[i].mcp;
	if (m == NULL || m->naudit == 0)
		return 0;
	for (i = 0; i < m->naudit; i++) {
		if ((vals = json_array()) == NULL)
			goto nomem;
		/* an ambiguous path (a key differing by case) or one over the bound records nothing in clear */
		if (policy_json_select(arguments, &m->audit[i], collect, vals, NULL) != 0 || json_array_size(vals) == 0) {
			json_decref(vals);
			continue;
		}
		if (*out == NULL && (*out = json_object()) == NULL) {
			json_decref(vals);
			goto nomem;
		}
		if (json_object_set(*out, m->audit_src[i], json_array_size(vals) == 1 ? json_array_get(vals, 0) : vals) != 0) {
			json_decref(vals);
			goto nomem;
		}
		json_decref(vals);
	}
	return 0;
nomem:
	json_decref(*out);
	*out = NULL;
	return SLUICE_ENOMEM;
}

/* ---- judging ---- */

const struct policy_mcp_msg *
policy_ctx_mcp(struct policy_ctx *c)
{
	const struct policy_request *r = c->req;
	enum policy_mcp_error err;

	if (c->mcp_state == 1)
		return c->mcp;
	if (c->mcp_state == -1) {
		c->cant = c->mcp_cant;
		return NULL;
	}
	c->mcp_state = -1;
	if (r->mcp_msg != NULL) {
		c->mcp = r->mcp_msg;
	} else {
		if (!policy_ctx_body_readable(c, CT_JSON)) {
			c->mcp_cant = c->cant;
			return NULL;
		}
		if (policy_mcp_parse(r->body, r->body_len, &c->mcpb, &err) != 0) {
			c->mcp_cant = c->cant = policy_mcp_strerror(err);
			return NULL;
		}
		if (c->mcpb.batch) {
			c->mcp_cant = c->cant = "the body is a batch: each of its messages is judged on its own";
			return NULL;
		}
		c->mcp = &c->mcpb.msgs[0];
	}
	c->json_inexact |= c->mcp->inexact;
	c->mcp_state = 1;
	return c->mcp;
}

int
policy_mcp_tool_match(const struct policy_mcp_tool *t, int call, const char *name, size_t n)
{
	char buf[POLICY_MCP_NAME_MAX + 2];

	if (t->uri) {
		if (call != POLICY_MCP_M_RESOURCES_READ)
			return 0;
		return t->prefix ? n >= t->prefix_len && memcmp(name, t->src, t->prefix_len) == 0
		                 : n == t->prefix_len && memcmp(name, t->src, n) == 0;
	}
	if ((call != POLICY_MCP_M_TOOLS_CALL && call != POLICY_MCP_M_PROMPTS_GET) || n > POLICY_MCP_NAME_MAX)
		return 0;
	buf[0] = '/';
	memcpy(buf + 1, name, n);
	return policy_glob_match(&t->glob, buf, n + 1);
}

int
policy_mcp_method_in(const struct policy_mcp_cond *m, const char *method, size_t n)
{
	size_t i;

	if (m->nmethods == 0)
		return 1;
	for (i = 0; i < m->nmethods; i++)
		if (strlen(m->methods[i]) == n && memcmp(m->methods[i], method, n) == 0)
			return 1;
	return 0;
}

int
policy_cond_mcp_eval(struct policy_ctx *c, const struct policy_mcp_cond *m)
{
	const struct policy_mcp_msg *msg = policy_ctx_mcp(c);
	const char *method;
	size_t i, mlen;

	if (msg == NULL) {
		policy_ctx_why(c, "mcp: cannot judge: %s", c->cant);
		return TV_U;
	}
	/* a response the client POSTs is judged as the answer to the server request it answers (its method) */
	method = msg->method != NULL ? msg->method : msg->answers;
	mlen = msg->method != NULL ? msg->method_len : msg->answers_len;
	if (m->nmethods > 0 && (method == NULL || !policy_mcp_method_in(m, method, mlen))) {
		if (method == NULL)
			policy_ctx_why(c, "mcp: a response that answers no known server request (wants %s%s)", m->methods[0],
			               m->nmethods > 1 ? " or the others listed" : "");
		else
			policy_ctx_why(c, "mcp method %.*s%s is not %s%s", (int)mlen, method,
			               msg->method == NULL ? " (answered)" : "", m->methods[0],
			               m->nmethods > 1 ? " or the others listed" : "");
		return TV_F;
	}
	if (m->ntools == 0)
		return TV_T;
	if (msg->name == NULL) {
		policy_ctx_why(c, "mcp: %s names no tool, prompt or resource (wants %s%s)",
		               msg->method != NULL ? msg->method : "a response", m->tools[0].src,
		               m->ntools > 1 ? " or the others listed" : "");
		return TV_F;
	}
	for (i = 0; i < m->ntools; i++)
		if (policy_mcp_tool_match(&m->tools[i], msg->method_id, msg->name, msg->name_len))
			return TV_T;
	policy_ctx_why(c, "mcp tool %.*s is not %s%s", (int)(msg->name_len > 128 ? 128 : msg->name_len), msg->name,
	               m->tools[0].src, m->ntools > 1 ? " or the others listed" : "");
	return TV_F;
}
