/*
 * policy/cond_graphql.c - GraphQL conditions: a bounded lexer and parser for
 * the executable documents in the "query" of a JSON body (or of each request
 * of a batched array body).  It finds every operation (type, name) and its
 * root fields, with aliases resolved to the field names and fragment spreads
 * and inline fragments at the root expanded, so that a mutation hidden as a
 * second operation, behind an alias or inside a fragment is still seen.
 * Anything else in the document (type definitions, a syntax error, a spread
 * of an unknown fragment) makes the body unreadable.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/fold.h"
#include "common/sluice.h"
#include "cond_int.h"

#define GQL_EXPAND_MAX 4096 /* fragment expansions in one document */

enum { T_EOF = 0, T_PUNCT, T_NAME, T_NUM, T_STR, T_SPREAD };

struct token {
	int kind;
	char ch;           /* T_PUNCT */
	const char *s;     /* T_NAME */
	size_t len;
};

struct gdef {
	int frag;
	unsigned type;
	const char *name;
	size_t nlen;
	size_t item0, nitems;
};

struct gitem {
	int spread;
	const char *s;
	size_t len;
};

struct gp {
	const char *p, *end;
	int depth;
	const char *err;
	struct gdef defs[GQL_DEFS_MAX];
	size_t ndefs;
	struct gitem items[GQL_ITEMS_MAX];
	size_t nitems;
	unsigned expansions;
};

static int
name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int
name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static void
skip_ignored(struct gp *g)
{
	while (g->p < g->end) {
		char c = *g->p;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') {
			g->p++;
		} else if (c == '#') {
			while (g->p < g->end && *g->p != '\n' && *g->p != '\r')
				g->p++;
		} else if (g->end - g->p >= 3 && memcmp(g->p, "\xef\xbb\xbf", 3) == 0) {
			g->p += 3;
		} else {
			break;
		}
	}
}

static int
fail(struct gp *g, const char *err)
{
	if (g->err == NULL)
		g->err = err;
	return -1;
}

static int
lex_string(struct gp *g)
{
	const char *p = g->p, *end = g->end;

	if (end - p >= 3 && memcmp(p, "\"\"\"", 3) == 0) {
		for (p += 3; end - p >= 3; p++) {
			if (*p == '\\' && end - p >= 4 && memcmp(p + 1, "\"\"\"", 3) == 0) {
				p += 3;
				continue;
			}
			if (memcmp(p, "\"\"\"", 3) == 0) {
				g->p = p + 3;
				return 0;
			}
		}
		return fail(g, "unterminated block string");
	}
	for (p++; p < end; p++) {
		if (*p == '"') {
			g->p = p + 1;
			return 0;
		}
		if (*p == '\n' || *p == '\r')
			return fail(g, "line break in a string");
		if (*p != '\\')
			continue;
		if (++p == end)
			break;
		if (*p == 'u') {
			int k;

			for (k = 1; k <= 4; k++)
				if (p + k >= end || sluice_hexval((unsigned char)p[k]) < 0)
					return fail(g, "bad \\u escape in a string");
			p += 4;
		} else if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0') {
			return fail(g, "bad escape in a string");
		}
	}
	return fail(g, "unterminated string");
}

static int
lex_number(struct gp *g)
{
	const char *p = g->p, *end = g->end;

	if (*p == '-')
		p++;
	if (p == end || *p < '0' || *p > '9')
		return fail(g, "bad number");
	if (*p == '0')
		p++;
	else
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	if (p < end && *p == '.') {
		if (++p == end || *p < '0' || *p > '9')
			return fail(g, "bad number");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || *p < '0' || *p > '9')
			return fail(g, "bad number");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (name_start(*p) || *p == '.' || (*p >= '0' && *p <= '9')))
		return fail(g, "bad number");
	g->p = p;
	return 0;
}

/* The next token, consumed. */
static int
next(struct gp *g, struct token *t)
{
	char c;

	skip_ignored(g);
	memset(t, 0, sizeof(*t));
	if (g->p == g->end) {
		t->kind = T_EOF;
		return 0;
	}
	c = *g->p;
	if (name_start(c)) {
		t->kind = T_NAME;
		t->s = g->p;
		while (g->p < g->end && name_char(*g->p))
			g->p++;
		t->len = (size_t)(g->p - t->s);
		return 0;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		t->kind = T_NUM;
		return lex_number(g);
	}
	if (c == '"') {
		t->kind = T_STR;
		return lex_string(g);
	}
	if (c == '.') {
		if (g->end - g->p < 3 || memcmp(g->p, "...", 3) != 0)
			return fail(g, "bad '.'");
		g->p += 3;
		t->kind = T_SPREAD;
		return 0;
	}
	if (strchr("!$&():=@[]{|}", c) != NULL && c != '\0') {
		t->kind = T_PUNCT;
		t->ch = c;
		g->p++;
		return 0;
	}
	return fail(g, "unexpected character");
}

static int
peek(struct gp *g, struct token *t)
{
	const char *save = g->p;
	int r = next(g, t);

	g->p = save;
	return r;
}

static int
is_punct(const struct token *t, char ch)
{
	return t->kind == T_PUNCT && t->ch == ch;
}

static int
is_word(const struct token *t, const char *w)
{
	return t->kind == T_NAME && t->len == strlen(w) && memcmp(t->s, w, t->len) == 0;
}

static int
expect(struct gp *g, char ch)
{
	struct token t;

	if (next(g, &t) != 0 || !is_punct(&t, ch))
		return fail(g, "unexpected token");
	return 0;
}

static int
expect_name(struct gp *g, struct token *t)
{
	if (next(g, t) != 0 || t->kind != T_NAME)
		return fail(g, "expected a name");
	return 0;
}

static int
enter(struct gp *g)
{
	if (++g->depth > GQL_DEPTH_MAX)
		return fail(g, "nested too deeply");
	return 0;
}

static int
value(struct gp *g)
{
	struct token t, k;
	int r = 0;

	if (next(g, &t) != 0)
		return -1;
	if (t.kind == T_NAME || t.kind == T_NUM || t.kind == T_STR)
		return 0;
	if (is_punct(&t, '$'))
		return expect_name(g, &k);
	if (is_punct(&t, '[') || is_punct(&t, '{')) {
		char close = t.ch == '[' ? ']' : '}';

		if (enter(g) != 0)
			return -1;
		for (;;) {
			if (peek(g, &k) != 0)
				return -1;
			if (is_punct(&k, close)) {
				next(g, &k);
				break;
			}
			if (close == '}' && (expect_name(g, &k) != 0 || expect(g, ':') != 0))
				return -1;
			if ((r = value(g)) != 0)
				return r;
		}
		g->depth--;
		return 0;
	}
	return fail(g, "expected a value");
}

/* (name: value ...), when the next token is '('. */
static int
arguments(struct gp *g)
{
	struct token t;

	if (peek(g, &t) != 0 || !is_punct(&t, '('))
		return g->err != NULL ? -1 : 0;
	next(g, &t);
	do {
		if (expect_name(g, &t) != 0 || expect(g, ':') != 0 || value(g) != 0)
			return -1;
		if (peek(g, &t) != 0)
			return -1;
	} while (!is_punct(&t, ')'));
	next(g, &t);
	return 0;
}

static int
directives(struct gp *g)
{
	struct token t;

	for (;;) {
		if (peek(g, &t) != 0)
			return -1;
		if (!is_punct(&t, '@'))
			return 0;
		next(g, &t);
		if (expect_name(g, &t) != 0 || arguments(g) != 0)
			return -1;
	}
}

static int
type_ref(struct gp *g)
{
	struct token t;

	if (next(g, &t) != 0)
		return -1;
	if (is_punct(&t, '[')) {
		if (enter(g) != 0 || type_ref(g) != 0 || expect(g, ']') != 0)
			return -1;
		g->depth--;
	} else if (t.kind != T_NAME) {
		return fail(g, "expected a type");
	}
	if (peek(g, &t) != 0)
		return -1;
	if (is_punct(&t, '!'))
		next(g, &t);
	return 0;
}

static int
variable_defs(struct gp *g)
{
	struct token t;

	if (peek(g, &t) != 0 || !is_punct(&t, '('))
		return g->err != NULL ? -1 : 0;
	next(g, &t);
	do {
		if (expect(g, '$') != 0 || expect_name(g, &t) != 0 || expect(g, ':') != 0 || type_ref(g) != 0)
			return -1;
		if (peek(g, &t) != 0)
			return -1;
		if (is_punct(&t, '=')) {
			next(g, &t);
			if (value(g) != 0)
				return -1;
		}
		if (directives(g) != 0 || peek(g, &t) != 0)
			return -1;
	} while (!is_punct(&t, ')'));
	next(g, &t);
	return 0;
}

static int
add_item(struct gp *g, struct gdef *d, int spread, const struct token *t)
{
	if (g->nitems >= GQL_ITEMS_MAX)
		return fail(g, "too many root selections");
	g->items[g->nitems].spread = spread;
	g->items[g->nitems].s = t->s;
	g->items[g->nitems].len = t->len;
	g->nitems++;
	d->nitems++;
	return 0;
}

/* { selection ... }: at the root of a definition when <d> is not NULL (its fields and spreads are recorded). */
static int
selection_set(struct gp *g, struct gdef *d)
{
	struct token t, n;

	if (expect(g, '{') != 0 || enter(g) != 0)
		return -1;
	do {
		if (next(g, &t) != 0)
			return -1;
		if (t.kind == T_SPREAD) {
			if (peek(g, &n) != 0)
				return -1;
			if (n.kind == T_NAME && !is_word(&n, "on")) {
				next(g, &n);
				if ((d != NULL && add_item(g, d, 1, &n) != 0) || directives(g) != 0)
					return -1;
			} else {
				/* an inline fragment: its selections are at the same level */
				if (is_word(&n, "on")) {
					next(g, &n);
					if (expect_name(g, &n) != 0)
						return -1;
				}
				if (directives(g) != 0 || selection_set(g, d) != 0)
					return -1;
			}
		} else if (t.kind == T_NAME) {
			if (peek(g, &n) != 0)
				return -1;
			if (is_punct(&n, ':')) {
				/* alias: name: the field is the second name */
				next(g, &n);
				if (expect_name(g, &t) != 0)
					return -1;
			}
			if ((d != NULL && add_item(g, d, 0, &t) != 0) || arguments(g) != 0 || directives(g) != 0 ||
			    peek(g, &n) != 0)
				return -1;
			if (is_punct(&n, '{') && selection_set(g, NULL) != 0)
				return -1;
		} else {
			return fail(g, "expected a selection");
		}
		if (peek(g, &t) != 0)
			return -1;
	} while (!is_punct(&t, '}'));
	next(g, &t);
	g->depth--;
	return 0;
}

static int
definition(struct gp *g)
{
	static const char *const types[] = {"query", "mutation", "subscription"};
	struct gdef *d;
	struct token t;
	unsigned i;

	if (g->ndefs >= GQL_DEFS_MAX)
		return fail(g, "too many definitions");
	d = &g->defs[g->ndefs++];
	memset(d, 0, sizeof(*d));
	d->item0 = g->nitems;
	if (peek(g, &t) != 0)
		return -1;
	if (is_punct(&t, '{')) {
		d->type = POLICY_GQL_QUERY;
		return selection_set(g, d);
	}
	next(g, &t);
	if (is_word(&t, "fragment")) {
		d->frag = 1;
		if (expect_name(g, &t) != 0 || is_word(&t, "on"))
			return fail(g, "expected a fragment name");
		d->name = t.s;
		d->nlen = t.len;
		if (next(g, &t) != 0 || !is_word(&t, "on") || expect_name(g, &t) != 0)
			return fail(g, "expected on Type");
		if (directives(g) != 0)
			return -1;
		return selection_set(g, d);
	}
	for (i = 0; i < 3; i++)
		if (is_word(&t, types[i]))
			break;
	if (i == 3)
		return fail(g, "not an executable definition");
	d->type = 1u << i;
	if (peek(g, &t) != 0)
		return -1;
	if (t.kind == T_NAME) {
		next(g, &t);
		d->name = t.s;
		d->nlen = t.len;
	}
	if (variable_defs(g) != 0 || directives(g) != 0)
		return -1;
	return selection_set(g, d);
}

static const struct gdef *
fragment(const struct gp *g, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < g->ndefs; i++)
		if (g->defs[i].frag && g->defs[i].nlen == len && memcmp(g->defs[i].name, s, len) == 0)
			return &g->defs[i];
	return NULL;
}

static int
expand(struct gp *g, const struct gdef *d, struct policy_gql_doc *doc, int depth)
{
	size_t i;

	if (depth > GQL_FRAG_DEPTH_MAX || ++g->expansions > GQL_EXPAND_MAX)
		return fail(g, "fragments nested too deeply");
	for (i = d->item0; i < d->item0 + d->nitems; i++) {
		const struct gitem *it = &g->items[i];

		if (it->spread) {
			const struct gdef *f = fragment(g, it->s, it->len);

			if (f == NULL)
				return fail(g, "spread of an unknown fragment");
			if (expand(g, f, doc, depth + 1) != 0)
				return -1;
			continue;
		}
		if (doc->nfields >= GQL_FIELDS_MAX)
			return fail(g, "too many root fields");
		doc->fields[doc->nfields].s = it->s;
		doc->fields[doc->nfields].len = it->len;
		doc->nfields++;
	}
	return 0;
}

int
policy_gql_parse(const char *q, size_t len, struct policy_gql_doc *doc, const char **err)
{
	struct gp *g = try_malloc(sizeof(*g));
	struct token t;
	size_t i, nops = 0;
	int ret = -1;

	if (g == NULL) {
		*err = "out of memory";
		return -1;
	}
	memset(g, 0, offsetof(struct gp, defs));
	g->ndefs = g->nitems = 0;
	g->p = q;
	g->end = q + len;
	for (;;) {
		if (peek(g, &t) != 0)
			goto out;
		if (t.kind == T_EOF)
			break;
		if (definition(g) != 0)
			goto out;
	}
	for (i = 0; i < g->ndefs; i++) {
		if (g->defs[i].frag)
			continue;
		if (doc->nops >= GQL_OPS_MAX) {
			fail(g, "too many operations");
			goto out;
		}
		doc->ops[doc->nops].type = g->defs[i].type;
		doc->ops[doc->nops].name = g->defs[i].name;
		doc->ops[doc->nops].name_len = g->defs[i].nlen;
		doc->nops++;
		nops++;
		if (expand(g, &g->defs[i], doc, 0) != 0)
			goto out;
	}
	if (nops == 0) {
		fail(g, "no operation");
		goto out;
	}
	ret = 0;
out:
	*err = g->err != NULL ? g->err : "cannot parse";
	free(g);
	return ret;
}

/* ---- the condition ---- */

/* The members of a GraphQL-over-HTTP request that servers read, from the body or (GET) from the query string. */
static const char *const gql_members[] = {"query", "operationName", "variables", "extensions"};
#define GQL_MEMBER_NAME_MAX 16   /* bytes of a decoded query parameter name compared with gql_members */

/*
 * 1 if the request's query string names a member of a GraphQL request
 * (decoded, compared under case folding): express-graphql and others take
 * ?query= from the URL in preference to the body, so the document the rule
 * judged may not be the one that runs.
 */
static int
query_has_gql(const struct policy_request *r)
{
	struct policy_form_iter it;
	const char *name, *val;
	size_t nlen, vlen, i;
	char buf[GQL_MEMBER_NAME_MAX];
	long n;

	if (r->query == NULL)
		return 0;
	it.p = r->query;
	it.end = r->query + r->query_len;
	while (policy_form_next(&it, &name, &nlen, &val, &vlen)) {
		if (nlen > 3 * sizeof(buf))
			continue;  /* too long to decode to a member's name */
		n = policy_form_decode(name, nlen, buf, sizeof(buf));  /* a bad escape: kept as written by who lets it by */
		for (i = 0; n > 0 && i < sizeof(gql_members) / sizeof(gql_members[0]); i++)
			if (sluice_fold_eq(buf, (size_t)n, gql_members[i], strlen(gql_members[i])))
				return 1;
	}
	return 0;
}

static int
one_request(struct policy_ctx *c, const json_t *req)
{
	const json_t *q = json_object_get(req, "query"), *on = json_object_get(req, "operationName");
	size_t first = c->gql->nops, i;
	const char *err = NULL;

	for (i = 0; i < sizeof(gql_members) / sizeof(gql_members[0]); i++)
		if (policy_json_key_ambiguous(req, gql_members[i], strlen(gql_members[i]))) {
			c->cant = "the GraphQL request has members that differ only by case (a server may read either)";
			return -1;
		}
	if (!json_is_string(q)) {
		c->cant = "the body has no GraphQL query string";
		return -1;
	}
	if (policy_gql_parse(json_string_value(q), json_string_length(q), c->gql, &err) != 0) {
		c->cant = err;
		return -1;
	}
	if (on == NULL || json_is_null(on))
		return 0;
	if (!json_is_string(on)) {
		c->cant = "operationName is not a string";
		return -1;
	}
	for (i = first; i < c->gql->nops; i++)
		if (c->gql->ops[i].name != NULL && c->gql->ops[i].name_len == json_string_length(on) &&
		    memcmp(c->gql->ops[i].name, json_string_value(on), c->gql->ops[i].name_len) == 0)
			return 0;
	c->cant = "operationName names no operation of the document";
	return -1;
}

static int
gql_load(struct policy_ctx *c)
{
	const json_t *el;
	size_t i;

	if (c->gql_state != 0)
		return c->gql_state;
	c->gql_state = -1;
	if (query_has_gql(c->req)) {
		c->cant = "the query string carries a GraphQL request member (query, operationName, variables, extensions)";
		return -1;
	}
	if (!policy_ctx_body_readable(c, CT_JSON))
		return -1;
	if (c->req->body_len == 0) {
		c->cant = "the body is empty";
		return -1;
	}
	if (policy_json_body(c) < 0)
		return -1;
	c->gql = try_malloc(sizeof(*c->gql));
	if (c->gql == NULL) {
		c->cant = "out of memory";
		return -1;
	}
	c->gql->nops = c->gql->nfields = 0;
	if (json_is_array(c->json)) {
		if (json_array_size(c->json) == 0 || json_array_size(c->json) > POLICY_JSON_BATCH_MAX) {
			c->cant = "a batch of no or too many requests";
			return -1;
		}
		json_array_foreach(c->json, i, el)
			if (!json_is_object(el) || one_request(c, el) != 0)
				return -1;
	} else if (!json_is_object(c->json) || one_request(c, c->json) != 0) {
		return -1;
	}
	c->gql_state = 1;
	return 1;
}

int
policy_cond_gql_eval(struct policy_ctx *c, const struct policy_gql_cond *g, int all)
{
	static const char *const tnames[] = {"", "query", "mutation", "", "subscription"};
	int r = TV_T, x;
	size_t i;

	if (gql_load(c) < 0) {
		policy_ctx_why(c, "graphql: cannot judge: %s", c->cant);
		return TV_U;
	}
	if (g->types != 0) {
		x = all ? TV_T : TV_F;
		for (i = 0; i < c->gql->nops; i++) {
			int ok = (c->gql->ops[i].type & g->types) != 0;

			x = all ? policy_tv_and(x, ok ? TV_T : TV_F) : policy_tv_or(x, ok ? TV_T : TV_F);
			if (all && !ok)
				policy_ctx_why(c, "graphql: operation %zu is a %s", i + 1, tnames[c->gql->ops[i].type]);
		}
		r = policy_tv_and(r, x);
	}
	if (g->has_name && r != TV_F) {
		x = all ? TV_T : TV_F;
		for (i = 0; i < c->gql->nops; i++) {
			struct policy_gql_field nm = {c->gql->ops[i].name, c->gql->ops[i].name_len};
			int y = policy_test_strings(c, &g->name, "graphql", "operation name", &nm, nm.s != NULL, all);

			x = all ? policy_tv_and(x, y) : policy_tv_or(x, y);
		}
		r = policy_tv_and(r, x);
	}
	if (g->has_fields && r != TV_F)
		r = policy_tv_and(r, policy_test_strings(c, &g->fields, "graphql", "root field", c->gql->fields, c->gql->nfields, all));
	if (c->cap != NULL)
		for (i = 0; i < c->gql->nops && c->cap->nfields < POLICY_FIELDS_MAX; i++) {
			struct policy_val v = {.kind = V_STR, .s = c->gql->ops[i].name, .len = c->gql->ops[i].name_len};

			if (v.s == NULL) {
				v.s = "(anonymous)";
				v.len = strlen(v.s);
			}
			policy_ctx_capture(c, "graphql", tnames[c->gql->ops[i].type], &v);
		}
	return r;
}
