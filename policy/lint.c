/*
 * policy/lint.c - what `sluice policy check` reports beyond load errors:
 * rules that can never match because an earlier one always matches first,
 * wildcard entries that a more specific entry overrides, and secrets bound
 * to hosts the policy never lets them reach.  Every finding is sound: a
 * rule is called shadowed only when the earlier rule certainly matches
 * every request it could (no conditions, a method superset, a path that
 * certainly covers its path).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "policy_int.h"

#define LINT_MAX 1000 /* findings kept */
#define LINT_TEXT_MAX 1024

static void
note(struct policy_ld *l, struct policy *p, unsigned line, unsigned col, int error, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void
note(struct policy_ld *l, struct policy *p, unsigned line, unsigned col, int error, const char *fmt, ...)
{
	char buf[LINT_TEXT_MAX];
	va_list ap;
	int n;

	if (p->nwarnings >= LINT_MAX)
		return;
	n = snprintf(buf, sizeof(buf), "%s:%u:%u: %s: ", l->name, line, col, error ? "error" : "warning");
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	p->warnings = xrealloc(p->warnings, (p->nwarnings + 1) * sizeof(*p->warnings));
	p->warnings[p->nwarnings++] = xstrdup(buf);
	if (error)
		p->nlint_errors++;
}

/* 1 if every method of <b> is one of <a>'s. */
static int
methods_cover(const struct policy_rule *a, const struct policy_rule *b)
{
	size_t i, j;

	if (a->nmethods == 0)
		return 1;
	if (b->nmethods == 0)
		return 0;
	for (i = 0; i < b->nmethods; i++) {
		for (j = 0; j < a->nmethods; j++)
			if (strcmp(a->methods[j], b->methods[i]) == 0)
				break;
		if (j == a->nmethods)
			return 0;
	}
	return 1;
}

/*
 * 1 if glob <a> certainly matches every path glob <b> matches: the same
 * text, or <a> is a star-free prefix P followed by "**" and <b> starts with P.
 */
static int
glob_covers(const char *a, const char *b)
{
	size_t n = strlen(a), plen;

	if (strcmp(a, b) == 0)
		return 1;
	if (n < 2 || a[n - 1] != '*' || a[n - 2] != '*')
		return 0;
	plen = n;
	while (plen > 0 && a[plen - 1] == '*')
		plen--;
	if (memchr(a, '*', plen) != NULL)
		return 0;
	return strncmp(a, b, plen) == 0;
}

static int
path_covers(const struct policy_rule *a, const struct policy_rule *b)
{
	const char *bp;

	if (a->path_kind == POLICY_PATH_ANY)
		return 1;
	if (a->path_kind == POLICY_PATH_REGEX)
		/* a regex that hits its limits fails an allow and matches a deny: only then is it the same */
		return b->path_kind == POLICY_PATH_REGEX && strcmp(a->path_src, b->path_src) == 0 &&
		       !(a->verdict == POLICY_REQ_ALLOW && b->verdict != POLICY_REQ_ALLOW);
	if (b->path_kind == POLICY_PATH_REGEX)
		return strcmp(a->path_src, "/**") == 0;
	bp = b->path_kind == POLICY_PATH_ANY ? "/**" : b->path_src;
	return glob_covers(a->path_src, bp);
}

static int
unconditional(const struct policy_rule *r)
{
	return r->nconds == 0 && r->gql == NULL && r->git == NULL && r->sum == NULL && r->mcp == NULL;
}

static void
lint_rules(struct policy_ld *l, struct policy *p, const struct policy_host *h)
{
	size_t i, j;

	for (j = 1; j < h->nrules; j++) {
		const struct policy_rule *b = &h->rules[j];

		if (b->mode == POLICY_MODE_OFF)
			continue;
		for (i = 0; i < j; i++) {
			const struct policy_rule *a = &h->rules[i];

			if (a->mode != POLICY_MODE_ENFORCE || !unconditional(a) || !methods_cover(a, b) ||
			    !path_covers(a, b))
				continue;
			note(l, p, b->line, b->col, 0,
			     "rule '%s' (%s) can never match: rule '%s' (line %u) matches every request it would",
			     b->id, b->where, a->id, a->line);
			break;
		}
	}
}

/* Wildcard entries that cover <h>'s names, where <h>'s own entry wins. */
static void
lint_overlap(struct policy_ld *l, struct policy *p, const struct policy_host *h)
{
	const char *name = h->kind == POLICY_HOST_WILDCARD ? h->key + 2 : h->key;
	size_t n = strlen(name), i;

	if (h->kind == POLICY_HOST_IP)
		return;
	/* every shorter suffix "b.c", "c" of "a.b.c": a "*.b.c" entry would cover h */
	for (i = 0; i < n; i++) {
		const struct policy_host *w;

		if (name[i] != '.')
			continue;
		w = policy_wild_find(p, name + i + 1, n - i - 1);
		if (w != NULL)
			note(l, p, w->line, w->col, 0,
			     "host entry '%s' also covers '%s' (line %u), whose more specific entry wins: the rules of "
			     "'%s' do not apply there", w->key, h->key, h->line, w->key);
	}
}

/* The entry that serves secret host pattern <pat> (as host entries are written), or NULL. */
static const struct policy_host *
entry_for(const struct policy *p, const char *pat)
{
	struct policy_conn_decision cd;
	size_t n, i;

	if (pat[0] == '*' && pat[1] == '.') {
		n = strlen(pat + 2);
		for (i = 0; i <= n; i++)
			if (i == 0 || pat[2 + i - 1] == '.') {
				const struct policy_host *w = policy_wild_find(p, pat + 2 + i, n - i);

				if (w != NULL)
					return w;
			}
		return NULL;
	}
	policy_decide_conn(p, pat, 443, &cd);
	return cd.host;
}

static int
has_allow(const struct policy_host *h)
{
	size_t i;

	if (!h->has_rules)
		return 1;
	for (i = 0; i < h->nrules; i++)
		if (h->rules[i].verdict != POLICY_REQ_DENY && h->rules[i].mode != POLICY_MODE_OFF)
			return 1;
	return 0;
}

/* The node of secrets.<name>.hosts[<i>], or of the secret's key, or NULL. */
static yaml_node_t *
secret_node(struct policy_ld *l, yaml_node_t *secrets, const char *name, size_t i)
{
	yaml_node_pair_t *pair, *q;

	if (secrets == NULL || secrets->type != YAML_MAPPING_NODE)
		return NULL;
	for (pair = secrets->data.mapping.pairs.start; pair < secrets->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);

		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE || k->data.scalar.length != strlen(name) ||
		    memcmp(k->data.scalar.value, name, k->data.scalar.length) != 0)
			continue;
		if (v->type != YAML_MAPPING_NODE)
			return k;
		for (q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
			yaml_node_t *qk = policy_ld_node(l, q->key), *qv = policy_ld_node(l, q->value);

			if (qk != NULL && qv != NULL && qk->type == YAML_SCALAR_NODE && qk->data.scalar.length == 5 &&
			    memcmp(qk->data.scalar.value, "hosts", 5) == 0 && qv->type == YAML_SEQUENCE_NODE &&
			    (size_t)(qv->data.sequence.items.top - qv->data.sequence.items.start) > i) {
				yaml_node_t *e = policy_ld_node(l, qv->data.sequence.items.start[i]);

				return e != NULL ? e : k;
			}
		}
		return k;
	}
	return NULL;
}

static void
lint_secrets(struct policy_ld *l, yaml_node_t *secrets, struct policy *p)
{
	size_t i, j;

	for (i = 0; i < p->nsecrets; i++) {
		const struct policy_secret *s = &p->secrets[i];

		for (j = 0; j < s->nhosts; j++) {
			const struct policy_host *h = entry_for(p, s->hosts[j]);
			yaml_node_t *n = secret_node(l, secrets, s->name, j);
			unsigned line = n != NULL ? (unsigned)n->start_mark.line + 1 : 1;
			unsigned col = n != NULL ? (unsigned)n->start_mark.column + 1 : 1;

			if (h == NULL) {
				if (!p->default_allow)
					note(l, p, line, col, 1, "secret '%s' is bound to host '%s', which has no entry in "
					     "hosts (and default is deny): it can never be used", s->name, s->hosts[j]);
			} else if (h->verdict == POLICY_DENY) {
				note(l, p, line, col, 0, "secret '%s' is bound to host '%s', whose entry '%s' says "
				     "verdict: deny", s->name, s->hosts[j], h->key);
			} else if (h->verdict == POLICY_PASSTHROUGH) {
				note(l, p, line, col, 0, "secret '%s' is bound to host '%s', whose entry '%s' is "
				     "passthrough: nothing is injected into traffic the gateway does not read",
				     s->name, s->hosts[j], h->key);
			} else if (!has_allow(h) && !p->default_allow) {
				note(l, p, line, col, 0, "secret '%s' is bound to host '%s', whose entry '%s' has no allow "
				     "rule", s->name, s->hosts[j], h->key);
			}
		}
	}
}

void
policy_lint(struct policy_ld *l, yaml_node_t *secrets, struct policy *p)
{
	size_t i;

	for (i = 0; i < p->nhosts; i++) {
		lint_rules(l, p, &p->hosts[i]);
		lint_overlap(l, p, &p->hosts[i]);
	}
	lint_secrets(l, secrets, p);
}
