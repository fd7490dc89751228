/*
 * policy/cond.c - the semantic keys of a rule body, validated and compiled
 * at load: query:, headers:, json:, form: (operator maps), graphql:, git:,
 * max_body:, limit:, budget: and a hold's timeout:.  Every error names
 * file:line:column and what was expected; regexes are compiled anchored at
 * both ends and JIT-compiled here, numbers parsed into exact decimals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "policy_int.h"

const char *const policy_cond_keys[POLICY_COND_KEYS] = {
	"query", "headers", "json", "form", "graphql", "git", "max_body", "limit", "budget", "timeout", "mcp",
};
enum { K_QUERY, K_HEADERS, K_JSON, K_FORM, K_GRAPHQL, K_GIT, K_MAX_BODY, K_LIMIT, K_BUDGET, K_TIMEOUT, K_MCP };

static const char *const op_keys[] = {"eq", "in", "not_in", "regex", "min", "max", "exists", "absent"};
#define NOPS 8

#define WHAT_MAX (POLICY_WHERE_MAX + POLICY_JSON_PATH_MAX + 64)

static int
scalar_is(const yaml_node_t *n, const char *lit)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(lit) &&
	       memcmp(n->data.scalar.value, lit, n->data.scalar.length) == 0;
}

static int
parse_lit(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_lit *lit)
{
	const char *s;
	size_t len;

	if (n->type != YAML_SCALAR_NODE)
		return policy_ld_error(l, n, "expected a string or a number in %s", what);
	s = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	if (len > POLICY_VALUE_MAX)
		return policy_ld_error(l, n, "value longer than %d bytes in %s", POLICY_VALUE_MAX, what);
	if (memchr(s, '\0', len) != NULL)
		return policy_ld_error(l, n, "NUL byte in %s", what);
	lit->s = xstrndup(s, len);
	lit->len = len;
	/* a plain YAML number compares as a number; a quoted one as text */
	lit->is_num = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && policy_dec_parse(s, len, 0, &lit->num) == 0;
	return 0;
}

static int
parse_list(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_lit **out, size_t *nout)
{
	yaml_node_item_t *it;
	size_t cnt;
	int ret;

	if (n->type != YAML_SEQUENCE_NODE)
		return policy_ld_error(l, n, "expected a list of values in %s", what);
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt == 0 || cnt > POLICY_LIST_MAX)
		return policy_ld_error(l, n, "expected a list of 1 to %d values in %s", POLICY_LIST_MAX, what);
	*out = xcalloc(cnt, sizeof(**out));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = policy_ld_node(l, *it);

		if (e == NULL)
			return policy_ld_error(l, n, "bad value in %s", what);
		if ((ret = parse_lit(l, e, what, &(*out)[*nout])) != 0)
			return ret;
		(*nout)++;
	}
	return 0;
}

static int
parse_regex(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_test *t)
{
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE off = 0;
	size_t len;
	int code = 0, ret;

	if ((ret = policy_ld_string(l, n, "a regex", &t->re_src)) != 0)
		return ret;
	len = strlen(t->re_src);
	if (len > POLICY_REGEX_MAX)
		return policy_ld_error(l, n, "regex longer than %d bytes in %s", POLICY_REGEX_MAX, what);
	t->re = pcre2_compile((PCRE2_SPTR)t->re_src, len,
	                      PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_NEVER_UTF | PCRE2_NEVER_UCP, &code, &off,
	                      NULL);
	if (t->re == NULL) {
		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			snprintf((char *)msg, sizeof(msg), "error %d", code);
		return policy_ld_error(l, n, "bad regex in %s at offset %zu: %s", what, (size_t)off, (const char *)msg);
	}
	/* JIT failure is not fatal: pcre2_match falls back to the interpreter. */
	(void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);
	return 0;
}

static int
parse_num(struct policy_ld *l, yaml_node_t *n, const char *op, const char *what, struct policy_dec *d, char **src)
{
	if (n->type != YAML_SCALAR_NODE ||
	    policy_dec_parse((const char *)n->data.scalar.value, n->data.scalar.length, 0, d) != 0)
		return policy_ld_error(l, n, "expected a decimal number (\"5000\", \"-1.25\") for %s in %s", op, what);
	*src = xstrndup((const char *)n->data.scalar.value, n->data.scalar.length);
	return 0;
}

/* An operator map (or a scalar: eq) at <n>, for <what> ("hosts.x.rules[0].allow.json.$.a"). */
static int
parse_test(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_test *t)
{
	yaml_node_t *v[NOPS];
	int ret, b;

	if (n->type == YAML_SCALAR_NODE) {
		t->ops = POLICY_OP_EQ;
		return parse_lit(l, n, what, &t->eq);
	}
	ret = policy_ld_fields(l, n, what, "an operator map (eq, in, not_in, regex, min, max, exists, absent) or a value",
	                       op_keys, NOPS, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL) {
		t->ops |= POLICY_OP_EQ;
		if ((ret = parse_lit(l, v[0], what, &t->eq)) != 0)
			return ret;
	}
	if (v[1] != NULL) {
		t->ops |= POLICY_OP_IN;
		if ((ret = parse_list(l, v[1], what, &t->in, &t->nin)) != 0)
			return ret;
	}
	if (v[2] != NULL) {
		t->ops |= POLICY_OP_NOT_IN;
		if ((ret = parse_list(l, v[2], what, &t->not_in, &t->nnot_in)) != 0)
			return ret;
	}
	if (v[3] != NULL) {
		t->ops |= POLICY_OP_REGEX;
		if ((ret = parse_regex(l, v[3], what, t)) != 0)
			return ret;
	}
	if (v[4] != NULL) {
		t->ops |= POLICY_OP_MIN;
		if ((ret = parse_num(l, v[4], "min", what, &t->min, &t->min_src)) != 0)
			return ret;
	}
	if (v[5] != NULL) {
		t->ops |= POLICY_OP_MAX;
		if ((ret = parse_num(l, v[5], "max", what, &t->max, &t->max_src)) != 0)
			return ret;
	}
	if ((t->ops & POLICY_OP_MIN) && (t->ops & POLICY_OP_MAX) && policy_dec_cmp(&t->min, &t->max) > 0)
		return policy_ld_error(l, v[4], "min is larger than max in %s: nothing can match", what);
	if (v[6] != NULL) {
		if ((ret = policy_ld_bool(l, v[6], "exists", &b)) != 0)
			return ret;
		t->ops |= b ? POLICY_OP_EXISTS : POLICY_OP_ABSENT;
	}
	if (v[7] != NULL) {
		if ((ret = policy_ld_bool(l, v[7], "absent", &b)) != 0)
			return ret;
		if ((t->ops & (POLICY_OP_EXISTS | POLICY_OP_ABSENT)) == (b ? POLICY_OP_EXISTS : POLICY_OP_ABSENT))
			return policy_ld_error(l, v[7], "exists and absent contradict each other in %s", what);
		t->ops |= b ? POLICY_OP_ABSENT : POLICY_OP_EXISTS;
	}
	if (t->ops == 0)
		return policy_ld_error(l, n, "expected at least one operator in %s", what);
	if ((t->ops & POLICY_OP_ABSENT) && (t->ops & POLICY_OP_VALUE))
		return policy_ld_error(l, n, "absent with a value operator in %s: nothing can match", what);
	return 0;
}

/* RFC 9110 tchar */
static int
is_tchar(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", (int)c) != NULL);
}

static const char *const place_names[] = {"", "query", "headers", "json", "form", "mcp.arguments"};

/* A map of names (or JSON paths) to operator maps, appended to r->conds. */
static int
parse_named(struct policy_ld *l, yaml_node_t *n, enum policy_place place, const char *where, struct policy_rule *r)
{
	char what[WHAT_MAX], esc[POLICY_NAME_ARG_MAX + 8];
	yaml_node_pair_t *pair;
	size_t cnt, i;
	int ret;

	if (n->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, n, "expected a map of %s to operator maps in %s.%s",
		                       place == POLICY_PLACE_JSON || place == POLICY_PLACE_MCP_ARGS ? "JSON paths" : "names",
		                       where, place_names[place]);
	cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (cnt == 0 || r->nconds + cnt > POLICY_CONDS_MAX)
		return policy_ld_error(l, n, "expected 1 to %d conditions in %s.%s", POLICY_CONDS_MAX, where,
		                       place_names[place]);
	r->conds = xrealloc(r->conds, (r->nconds + cnt) * sizeof(*r->conds));
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);
		struct policy_cond *c = &r->conds[r->nconds];
		const char *s;
		size_t len;

		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
			return policy_ld_error(l, k != NULL ? k : n, "expected a name as a key in %s.%s", where,
			                       place_names[place]);
		memset(c, 0, sizeof(*c));
		r->nconds++;
		c->place = place;
		s = (const char *)k->data.scalar.value;
		len = k->data.scalar.length;
		policy_ld_esc(esc, sizeof(esc), k->data.scalar.value, len);
		if (len == 0 || len > POLICY_NAME_ARG_MAX || memchr(s, '\0', len) != NULL)
			return policy_ld_error(l, k, "bad name '%s' in %s.%s", esc, where, place_names[place]);
		c->name = xstrndup(s, len);
		c->name_len = len;
		switch (place) {
		case POLICY_PLACE_HEADER:
			for (i = 0; i < len; i++) {
				if (!is_tchar((unsigned char)s[i]))
					return policy_ld_error(l, k, "bad header name '%s' in %s.headers", esc, where);
				if (c->name[i] >= 'A' && c->name[i] <= 'Z')
					c->name[i] = (char)(c->name[i] - 'A' + 'a');
			}
			break;
		case POLICY_PLACE_JSON:
		case POLICY_PLACE_MCP_ARGS:
			if (policy_jpath_compile(s, len, &c->path) != 0)
				return policy_ld_error(l, k, "bad JSON path '%s' in %s.%s; expected $ then .name, "
				                       "['name'], [N], [*] or .* steps", esc, where, place_names[place]);
			break;
		default:
			for (i = 0; i < len; i++)
				if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
					return policy_ld_error(l, k, "bad name '%s' in %s.%s", esc, where, place_names[place]);
			break;
		}
		for (i = 0; i + 1 < r->nconds; i++)
			if (r->conds[i].place == place && r->conds[i].name_len == len &&
			    (place == POLICY_PLACE_HEADER ? strcmp(r->conds[i].name, c->name) == 0
			                                  : memcmp(r->conds[i].name, s, len) == 0))
				return policy_ld_error(l, k, "duplicate name '%s' in %s.%s", esc, where, place_names[place]);
		snprintf(what, sizeof(what), "%s.%s.%s", where, place_names[place], esc);
		if ((ret = parse_test(l, v, what, &c->t)) != 0)
			return ret;
	}
	return 0;
}

/* One word of <words> at <e> into <mask>: 0, or -1. */
static int
word_one(const yaml_node_t *e, const char *const *words, size_t nwords, unsigned *mask)
{
	size_t i;

	for (i = 0; i < nwords; i++)
		if (scalar_is(e, words[i])) {
			*mask |= 1u << i;
			return 0;
		}
	return -1;
}

/* A scalar or a non-empty list of the three <words> into a bit mask. */
static int
parse_words(struct policy_ld *l, yaml_node_t *n, const char *what, const char *const *words, unsigned *mask)
{
	yaml_node_item_t *it;
	yaml_node_t *bad = n;

	if (n->type == YAML_SCALAR_NODE) {
		if (word_one(n, words, 3, mask) == 0)
			return 0;
	} else if (n->type == YAML_SEQUENCE_NODE && n->data.sequence.items.top > n->data.sequence.items.start) {
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			yaml_node_t *e = policy_ld_node(l, *it);

			if (e == NULL || word_one(e, words, 3, mask) != 0) {
				bad = e != NULL ? e : n;
				break;
			}
		}
		if (it == n->data.sequence.items.top)
			return 0;
	}
	return policy_ld_error(l, bad, "expected %s, %s or %s (or a list of them) for %s", words[0], words[1], words[2],
	                       what);
}

static int
parse_graphql(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r)
{
	static const char *const keys[] = {"type", "name", "fields"};
	static const char *const types[] = {"query", "mutation", "subscription"};
	char what[WHAT_MAX];
	yaml_node_t *v[3];
	int ret;

	snprintf(what, sizeof(what), "%s.graphql", where);
	ret = policy_ld_fields(l, n, what, "a map with type, name, fields", keys, 3, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] == NULL && v[1] == NULL && v[2] == NULL)
		return policy_ld_error(l, n, "expected at least one of type, name, fields in %s", what);
	r->gql = xcalloc(1, sizeof(*r->gql));
	snprintf(what, sizeof(what), "%s.graphql.type", where);
	if (v[0] != NULL && (ret = parse_words(l, v[0], what, types, &r->gql->types)) != 0)
		return ret;
	if (v[1] != NULL) {
		snprintf(what, sizeof(what), "%s.graphql.name", where);
		r->gql->has_name = 1;
		if ((ret = parse_test(l, v[1], what, &r->gql->name)) != 0)
			return ret;
	}
	if (v[2] != NULL) {
		snprintf(what, sizeof(what), "%s.graphql.fields", where);
		r->gql->has_fields = 1;
		if ((ret = parse_test(l, v[2], what, &r->gql->fields)) != 0)
			return ret;
	}
	return 0;
}

static int
parse_git(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r)
{
	static const char *const keys[] = {"refs", "ops", "deny"};
	static const char *const kinds[] = {"create", "update", "delete"};
	char what[WHAT_MAX], glob[POLICY_GLOB_TOKENS_MAX + 2];
	yaml_node_item_t *it;
	yaml_node_t *v[3];
	struct policy_git_cond *g;
	size_t cnt;
	int ret;

	snprintf(what, sizeof(what), "%s.git", where);
	ret = policy_ld_fields(l, n, what, "a map with refs, ops, deny", keys, 3, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] == NULL && v[1] == NULL && v[2] == NULL)
		return policy_ld_error(l, n, "expected at least one of refs, ops, deny in %s", what);
	g = r->git = xcalloc(1, sizeof(*r->git));
	if (v[0] != NULL) {
		if (v[0]->type != YAML_SEQUENCE_NODE)
			return policy_ld_error(l, v[0], "expected a list of ref globs in %s.refs", what);
		cnt = (size_t)(v[0]->data.sequence.items.top - v[0]->data.sequence.items.start);
		if (cnt == 0 || cnt > POLICY_LIST_MAX)
			return policy_ld_error(l, v[0], "expected a list of 1 to %d ref globs in %s.refs", POLICY_LIST_MAX,
			                       what);
		g->refs = xcalloc(cnt, sizeof(*g->refs));
		g->ref_src = xcalloc(cnt + 1, sizeof(*g->ref_src)); /* NULL-terminated */
		for (it = v[0]->data.sequence.items.start; it < v[0]->data.sequence.items.top; it++) {
			yaml_node_t *e = policy_ld_node(l, *it);
			const char *err = NULL;
			char *s;
			size_t len;

			if (e == NULL || (ret = policy_ld_string(l, e, "a ref glob", &s)) != 0)
				return e == NULL ? policy_ld_error(l, v[0], "bad ref glob in %s.refs", what) : ret;
			g->ref_src[g->nrefs] = s;
			len = strlen(s);
			if (len == 0 || s[0] == '/' || len + 1 >= sizeof(glob))
				return policy_ld_error(l, e, "bad ref glob '%s' in %s.refs; expected e.g. refs/heads/agent/**",
				                       s, what);
			glob[0] = '/';
			memcpy(glob + 1, s, len);
			if (policy_glob_compile(&g->refs[g->nrefs], glob, len + 1, &err) != 0)
				return policy_ld_error(l, e, "bad ref glob '%s' in %s.refs: %s", s, what, err);
			g->nrefs++;
		}
	}
	snprintf(what, sizeof(what), "%s.git.ops", where);
	if (v[1] != NULL && (ret = parse_words(l, v[1], what, kinds, &g->ops)) != 0)
		return ret;
	snprintf(what, sizeof(what), "%s.git.deny", where);
	if (v[2] != NULL && (ret = parse_words(l, v[2], what, kinds, &g->deny)) != 0)
		return ret;
	return 0;
}

static int
parse_rate(const yaml_node_t *n, struct policy_limit *lim)
{
	static const struct {
		const char *unit;
		uint32_t s;
	} units[] = {{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}, {"s", 1}, {"m", 60},
	             {"h", 3600}, {"d", 86400}};
	const char *s, *slash;
	size_t len, i;
	unsigned long x = 0;

	if (n->type != YAML_SCALAR_NODE)
		return -1;
	s = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	slash = memchr(s, '/', len);
	if (slash == NULL || slash == s || slash - s > 9)
		return -1;
	for (i = 0; s + i < slash; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (unsigned long)(s[i] - '0');
	}
	if (x == 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].unit) == len - (size_t)(slash + 1 - s) &&
		    memcmp(slash + 1, units[i].unit, strlen(units[i].unit)) == 0) {
			lim->count = (uint32_t)x;
			lim->period_s = units[i].s;
			return 0;
		}
	return -1;
}

static int
parse_scope(struct policy_ld *l, yaml_node_t *n, const char *what, enum policy_scope *out)
{
	if (scalar_is(n, "sandbox"))
		*out = POLICY_SCOPE_SANDBOX;
	else if (scalar_is(n, "global"))
		*out = POLICY_SCOPE_GLOBAL;
	else
		return policy_ld_error(l, n, "expected sandbox or global for %s", what);
	return 0;
}

/* name: of a limit or budget shared by several rules: its counter key "<kind>:<name>", or NULL on error. */
static char *
shared_key(struct policy_ld *l, yaml_node_t *n, const char *kind, const char *what)
{
	char *name = NULL, *key;
	size_t i, len;

	if (policy_ld_string(l, n, "a counter name", &name) != 0)
		return NULL;
	len = strlen(name);
	for (i = 0; i < len; i++)
		if ((unsigned char)name[i] <= 0x20 || name[i] == 0x7f)
			break;
	if (len == 0 || len > POLICY_NAME_MAX || i < len) {
		policy_ld_error(l, n, "expected a counter name (1 to %d characters, no spaces) for %s.name", POLICY_NAME_MAX,
		                what);
		free(name);
		return NULL;
	}
	key = xmalloc(len + strlen(kind) + 2);
	snprintf(key, len + strlen(kind) + 2, "%s:%s", kind, name);
	free(name);
	return key;
}

int
policy_limit_parse(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_limit *lim)
{
	static const char *const keys[] = {"rate", "per", "name"};
	char what[WHAT_MAX];
	yaml_node_t *v[3];
	int ret;

	snprintf(what, sizeof(what), "%s.limit", where);
	ret = policy_ld_fields(l, n, what, "a map with rate, per, name", keys, 3, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] == NULL)
		return policy_ld_error(l, n, "missing required key 'rate' in %s", what);
	if (parse_rate(v[0], lim) != 0)
		return policy_ld_error(l, v[0], "expected a rate N/second, N/minute, N/hour or N/day (N from 1 to "
		                       "999999999) for %s.rate", what);
	lim->scope = POLICY_SCOPE_SANDBOX;
	if (v[2] != NULL) {
		char *key = shared_key(l, v[2], "limit", what);

		if (key == NULL)
			return SLUICE_EINVAL;
		free(lim->key);
		lim->key = key;
	}
	snprintf(what, sizeof(what), "%s.limit.per", where);
	if (v[1] != NULL && (ret = parse_scope(l, v[1], what, &lim->scope)) != 0)
		return ret;
	return 0;
}

static int
parse_budget(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r)
{
	static const char *const keys[] = {"sum", "max", "per", "scope", "name"};
	char what[WHAT_MAX], *sum = NULL;
	struct policy_budget *b;
	struct policy_dec d;
	struct policy_cond *c;
	yaml_node_t *v[5];
	size_t len;
	int ret;

	snprintf(what, sizeof(what), "%s.budget", where);
	ret = policy_ld_fields(l, n, what, "a map with sum, max, per, scope, name", keys, 5, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] == NULL || v[1] == NULL)
		return policy_ld_error(l, n, "missing required key '%s' in %s", v[0] == NULL ? "sum" : "max", what);
	b = r->budget = xcalloc(1, sizeof(*r->budget));
	c = r->sum = xcalloc(1, sizeof(*r->sum));
	if ((ret = policy_ld_string(l, v[0], "a place for budget.sum", &sum)) != 0)
		return ret;
	b->sum = sum;
	len = strlen(sum);
	if (len > 5 && memcmp(sum, "form:", 5) == 0 && len - 5 <= POLICY_NAME_ARG_MAX) {
		c->place = POLICY_PLACE_FORM;
		c->name = xstrdup(sum + 5);
		c->name_len = len - 5;
	} else if (len > 5 && memcmp(sum, "json:", 5) == 0 && policy_jpath_compile(sum + 5, len - 5, &c->path) == 0) {
		c->place = POLICY_PLACE_JSON;
		c->name = xstrdup(sum + 5);
		c->name_len = len - 5;
	} else {
		return policy_ld_error(l, v[0], "expected \"form:<field>\" or \"json:$.<path>\" for %s.sum", what);
	}
	if (v[1]->type != YAML_SCALAR_NODE ||
	    policy_dec_parse((const char *)v[1]->data.scalar.value, v[1]->data.scalar.length, 0, &d) != 0 ||
	    policy_dec_amount(&d, &b->max) != 0)
		return policy_ld_error(l, v[1], "expected a non-negative decimal number with at most 6 decimals for %s.max",
		                       what);
	b->period_s = 86400;
	if (v[2] != NULL) {
		if (scalar_is(v[2], "day"))
			b->period_s = 86400;
		else if (scalar_is(v[2], "hour"))
			b->period_s = 3600;
		else
			return policy_ld_error(l, v[2], "expected day or hour for %s.per", what);
	}
	b->scope = POLICY_SCOPE_GLOBAL;
	if (v[4] != NULL && (b->key = shared_key(l, v[4], "budget", what)) == NULL)
		return SLUICE_EINVAL;
	snprintf(what, sizeof(what), "%s.budget.scope", where);
	if (v[3] != NULL && (ret = parse_scope(l, v[3], what, &b->scope)) != 0)
		return ret;
	r->body |= c->place == POLICY_PLACE_FORM ? POLICY_BODY_FORM : POLICY_BODY_JSON;
	return 0;
}

int
policy_cond_parse(struct policy_ld *l, yaml_node_t **v, const char *where, struct policy_rule *r)
{
	static const struct policy_unit sizes[] = {{"", 1}, {"K", 1024}, {"KiB", 1024}, {"M", 1u << 20},
	                                           {"MiB", 1u << 20}, {NULL, 0}};
	static const struct policy_unit durations[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000},
	                                               {"h", 3600000}, {NULL, 0}};
	unsigned long x;
	int ret;

	if (v[K_QUERY] != NULL && (ret = parse_named(l, v[K_QUERY], POLICY_PLACE_QUERY, where, r)) != 0)
		return ret;
	if (v[K_HEADERS] != NULL && (ret = parse_named(l, v[K_HEADERS], POLICY_PLACE_HEADER, where, r)) != 0)
		return ret;
	r->nhead_conds = r->nconds;
	if (v[K_JSON] != NULL) {
		if ((ret = parse_named(l, v[K_JSON], POLICY_PLACE_JSON, where, r)) != 0)
			return ret;
		r->body |= POLICY_BODY_JSON;
	}
	if (v[K_FORM] != NULL) {
		if ((ret = parse_named(l, v[K_FORM], POLICY_PLACE_FORM, where, r)) != 0)
			return ret;
		r->body |= POLICY_BODY_FORM;
	}
	if (v[K_GRAPHQL] != NULL) {
		if ((ret = parse_graphql(l, v[K_GRAPHQL], where, r)) != 0)
			return ret;
		r->body |= POLICY_BODY_GQL;
	}
	if (v[K_GIT] != NULL) {
		if ((ret = parse_git(l, v[K_GIT], where, r)) != 0)
			return ret;
		r->body |= POLICY_BODY_GIT;
	}
	if (v[K_MCP] != NULL) {
		yaml_node_t *args;

		if ((ret = policy_mcp_cond_parse(l, v[K_MCP], where, r, &args)) != 0)
			return ret;
		if (args != NULL && (ret = parse_named(l, args, POLICY_PLACE_MCP_ARGS, where, r)) != 0)
			return ret;
		r->body |= POLICY_BODY_JSON;
	}
	if (v[K_LIMIT] != NULL) {
		if (r->verdict == POLICY_REQ_DENY)
			return policy_ld_error(l, v[K_LIMIT], "limit in %s: a deny rule lets nothing through to count", where);
		r->limit = xcalloc(1, sizeof(*r->limit));
		if ((ret = policy_limit_parse(l, v[K_LIMIT], where, r->limit)) != 0)
			return ret;
	}
	if (v[K_BUDGET] != NULL) {
		if (r->verdict == POLICY_REQ_DENY)
			return policy_ld_error(l, v[K_BUDGET], "budget in %s: a deny rule lets nothing through to count",
			                       where);
		if ((ret = parse_budget(l, v[K_BUDGET], where, r)) != 0)
			return ret;
	}
	if ((r->body & (POLICY_BODY_JSON | POLICY_BODY_GQL)) && (r->body & POLICY_BODY_FORM))
		return policy_ld_error(l, v[K_FORM] != NULL ? v[K_FORM] : v[K_BUDGET],
		                       "form and json (or graphql) in %s: a body is one or the other", where);
	if ((r->body & POLICY_BODY_GIT) && r->body != POLICY_BODY_GIT)
		return policy_ld_error(l, v[K_GIT], "git with json, form, graphql or budget in %s: a push body is "
		                       "neither", where);
	if (v[K_MAX_BODY] != NULL) {
		if (r->body == 0)
			return policy_ld_error(l, v[K_MAX_BODY], "max_body in %s, which reads no body (json, form, graphql, "
			                       "git or budget)", where);
		if (policy_ld_scaled(v[K_MAX_BODY], sizes, POLICY_MAX_BODY_MAX, &x) != 0 || x == 0)
			return policy_ld_error(l, v[K_MAX_BODY], "expected a size for %s.max_body (\"64K\", \"1M\", "
			                       "\"16MiB\"; 1 byte to 16 MiB)", where);
		r->max_body = x;
	} else if (r->body != 0) {
		r->max_body = POLICY_MAX_BODY_DEFAULT;
	}
	if (v[K_TIMEOUT] != NULL) {
		if (r->verdict != POLICY_REQ_HOLD)
			return policy_ld_error(l, v[K_TIMEOUT], "timeout in %s: only a hold rule waits", where);
		if (policy_ld_scaled(v[K_TIMEOUT], durations, POLICY_HOLD_MAX_MS, &x) != 0 || x < 1000)
			return policy_ld_error(l, v[K_TIMEOUT], "expected a duration for %s.timeout (\"30s\", \"10m\", "
			                       "\"1h\"; 1s to 24h)", where);
		r->hold_ms = (unsigned)x;
	} else if (r->verdict == POLICY_REQ_HOLD) {
		r->hold_ms = POLICY_HOLD_DEFAULT_MS;
	}
	return 0;
}

static void
lits_free(struct policy_lit *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].s);
	free(v);
}

void
policy_test_dispose(struct policy_test *t)
{
	free(t->eq.s);
	lits_free(t->in, t->nin);
	lits_free(t->not_in, t->nnot_in);
	pcre2_code_free(t->re);
	free(t->re_src);
	free(t->min_src);
	free(t->max_src);
	memset(t, 0, sizeof(*t));
}

static void
cond_dispose(struct policy_cond *c)
{
	free(c->name);
	policy_jpath_dispose(&c->path);
	policy_test_dispose(&c->t);
}

void
policy_cond_dispose(struct policy_rule *r)
{
	size_t i;

	for (i = 0; i < r->nconds; i++)
		cond_dispose(&r->conds[i]);
	free(r->conds);
	if (r->gql != NULL) {
		policy_test_dispose(&r->gql->name);
		policy_test_dispose(&r->gql->fields);
		free(r->gql);
	}
	if (r->git != NULL) {
		for (i = 0; i < r->git->nrefs; i++)
			policy_glob_dispose(&r->git->refs[i]);
		if (r->git->ref_src != NULL)
			for (i = 0; r->git->ref_src[i] != NULL; i++)
				free(r->git->ref_src[i]);
		free(r->git->refs);
		free(r->git->ref_src);
		free(r->git);
	}
	if (r->limit != NULL)
		free(r->limit->key);
	free(r->limit);
	if (r->budget != NULL) {
		free(r->budget->key);
		free(r->budget->sum);
	}
	free(r->budget);
	if (r->sum != NULL)
		cond_dispose(r->sum);
	free(r->sum);
	policy_mcp_cond_dispose(r->mcp);
	r->mcp = NULL;
}
