/*
 * policy/rules.c - the hosts: map of sluice.yaml compiled into host entries
 * and rules (globs compiled, regexes compiled anchored and JIT-compiled).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host.h"
#include "common/sluice.h"
#include "policy_int.h"

#define PORTS_MAX 1024 /* entries in one ports: list */

static const char *const host_keys[] = {"verdict", "ports", "allow_private", "encoded_slashes", "rules",
                                        "allow_plaintext", "mode", "path_params", "get_bodies", "mcp"};
#define NHOST_KEYS 10
static const char *const item_keys[] = {"allow", "deny", "hold", "id", "mode"};
/* method, path, id, mode, then policy_cond_keys in its order */
#define NBODY (4 + POLICY_COND_KEYS)
static const char *const body_keys[NBODY] = {"method", "path", "id", "mode", "query", "headers", "json", "form",
                                             "graphql", "git", "max_body", "limit", "budget", "timeout", "mcp"};

static int
scalar_is(const yaml_node_t *n, const char *lit)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(lit) &&
	       memcmp(n->data.scalar.value, lit, n->data.scalar.length) == 0;
}

/* RFC 9110 tchar */
static int
is_tchar(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", (int)c) != NULL);
}

/* Reads one method token into <out>; *<any> is set by "*". */
static int
method_one(struct policy_ld *l, yaml_node_t *n, const char *where, char **out, int *any)
{
	size_t i, len;
	int ret;

	ret = policy_ld_string(l, n, "a method or a list of methods", out);
	if (ret != 0)
		return ret;
	len = strlen(*out);
	if (len == 1 && (*out)[0] == '*') {
		*any = 1;
		return 0;
	}
	for (i = 0; i < len; i++)
		if (!is_tchar((unsigned char)(*out)[i]))
			break;
	if (len == 0 || len > POLICY_METHOD_MAX || i < len)
		return policy_ld_error(l, n, "expected an HTTP method token (or \"*\") in %s.method", where);
	return 0;
}

static int
parse_methods(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r)
{
	yaml_node_item_t *it;
	size_t cnt;
	int any = 0, ret;

	if (n->type == YAML_SCALAR_NODE) {
		r->methods = xcalloc(1, sizeof(*r->methods));
		r->nmethods = 1;
		ret = method_one(l, n, where, &r->methods[0], &any);
	} else if (n->type == YAML_SEQUENCE_NODE) {
		cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
		if (cnt == 0)
			return policy_ld_error(l, n, "expected a non-empty list of methods in %s.method", where);
		r->methods = xcalloc(cnt, sizeof(*r->methods));
		ret = 0;
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top && ret == 0; it++) {
			yaml_node_t *m = policy_ld_node(l, *it);

			if (m == NULL)
				continue;
			if (m->type != YAML_SCALAR_NODE)
				return policy_ld_error(l, m, "expected a list of methods in %s.method", where);
			ret = method_one(l, m, where, &r->methods[r->nmethods++], &any);
		}
	} else {
		return policy_ld_error(l, n, "expected a method or a list of methods in %s.method", where);
	}
	if (ret == 0 && any) {
		/* "*" anywhere in the list: any method */
		size_t i;

		for (i = 0; i < r->nmethods; i++)
			free(r->methods[i]);
		free(r->methods);
		r->methods = NULL;
		r->nmethods = 0;
	}
	return ret;
}

/* The literal prefix of a glob (before any '*' or '%': a '%' is normalised) and what follows it. */
static void
glob_shortcut(struct policy_rule *r)
{
	const char *g = r->path_src;
	size_t n = strlen(g), p = strcspn(g, "*%"), rest = n - p;

	r->prefix_len = p;
	r->fast = POLICY_GLOB_NFA;
	if (rest == 0)
		r->fast = POLICY_GLOB_EXACT;
	else if (g[p] == '*' && strspn(g + p, "*") == rest)
		r->fast = rest >= 2 ? POLICY_GLOB_PREFIX_ANY : POLICY_GLOB_PREFIX_SEG;
}

static int
parse_path(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_rule *r)
{
	const char *err = NULL;
	int ret;

	ret = policy_ld_string(l, n, "a path glob or \"regex:<pattern>\"", &r->path_src);
	if (ret != 0)
		return ret;
	if (strncmp(r->path_src, "regex:", 6) == 0) {
		const char *pat = r->path_src + 6;
		size_t plen = strlen(pat);
		PCRE2_UCHAR msg[160];
		PCRE2_SIZE off = 0;
		int code = 0;

		if (plen > POLICY_REGEX_MAX)
			return policy_ld_error(l, n, "regex longer than %d bytes in %s.path", POLICY_REGEX_MAX, where);
		r->re = pcre2_compile((PCRE2_SPTR)pat, plen,
		                      PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_NEVER_UTF | PCRE2_NEVER_UCP,
		                      &code, &off, NULL);
		if (r->re == NULL) {
			if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
				snprintf((char *)msg, sizeof(msg), "error %d", code);
			return policy_ld_error(l, n, "bad regex in %s.path at offset %zu: %s", where,
			                       (size_t)off, (const char *)msg);
		}
		/* JIT failure is not fatal: pcre2_match falls back to the interpreter. */
		(void)pcre2_jit_compile(r->re, PCRE2_JIT_COMPLETE);
		r->path_kind = POLICY_PATH_REGEX;
		return 0;
	}
	if (policy_glob_compile(&r->glob, r->path_src, strlen(r->path_src), &err) != 0)
		return policy_ld_error(l, n, "bad path in %s.path: %s (expected a glob starting with '/' or \"regex:<pattern>\")",
		                       where, err);
	r->path_kind = POLICY_PATH_GLOB;
	glob_shortcut(r);
	return 0;
}

static int
parse_mode(struct policy_ld *l, yaml_node_t *n, const char *where, enum policy_mode *out)
{
	if (scalar_is(n, "enforce"))
		*out = POLICY_MODE_ENFORCE;
	else if (scalar_is(n, "report"))
		*out = POLICY_MODE_REPORT;
	else if (scalar_is(n, "off"))
		*out = POLICY_MODE_OFF;
	else
		return policy_ld_error(l, n, "expected enforce, report or off for %s.mode", where);
	return 0;
}

/* The counter key of a rule's limit or budget: "rule:<id>". */
static char *
counter_key(const char *id)
{
	size_t n = strlen(id) + 6;
	char *k = xmalloc(n);

	snprintf(k, n, "rule:%s", id);
	return k;
}

static int
parse_rule(struct policy_ld *l, yaml_node_t *item, const char *hwhere, const struct policy_host *h, size_t idx,
           struct policy_rule *r)
{
	char where[POLICY_WHERE_MAX + 32], rwhere[POLICY_WHERE_MAX + 48];
	static const char *const kinds[] = {"allow", "deny", "hold"};
	yaml_node_t *kv[5], *body, *v[NBODY], *idn, *moden;
	int ret, k, nverdicts;

	snprintf(where, sizeof(where), "%s.rules[%zu]", hwhere, idx);
	r->where = xstrdup(where);
	r->line = (unsigned)item->start_mark.line + 1;
	r->col = (unsigned)item->start_mark.column + 1;
	ret = policy_ld_fields(l, item, where, "a rule: a map with one key, allow or deny (or hold; and optionally id, mode)",
	                       item_keys, 5, kv, NULL);
	if (ret != 0)
		return ret;
	nverdicts = (kv[0] != NULL) + (kv[1] != NULL) + (kv[2] != NULL);
	if (nverdicts != 1)
		return policy_ld_error(l, item, "expected exactly one of allow, deny in %s, or hold", where);
	k = kv[0] != NULL ? 0 : kv[1] != NULL ? 1 : 2;
	r->verdict = k == 0 ? POLICY_REQ_ALLOW : k == 1 ? POLICY_REQ_DENY : POLICY_REQ_HOLD;
	r->allow = r->verdict == POLICY_REQ_ALLOW;
	body = kv[k];
	snprintf(rwhere, sizeof(rwhere), "%s.%s", where, kinds[k]);
	ret = policy_ld_fields(l, body, rwhere,
	                       "a map with method, path, id, mode, query, headers, json, form, graphql, git, max_body, "
	                       "limit, budget, timeout, mcp",
	                       body_keys, NBODY, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL && (ret = parse_methods(l, v[0], rwhere, r)) != 0)
		return ret;
	if (v[1] != NULL && (ret = parse_path(l, v[1], rwhere, r)) != 0)
		return ret;
	if (kv[3] != NULL && v[2] != NULL)
		return policy_ld_error(l, v[2], "id given twice in %s (once is enough)", where);
	if (kv[4] != NULL && v[3] != NULL)
		return policy_ld_error(l, v[3], "mode given twice in %s (once is enough)", where);
	idn = kv[3] != NULL ? kv[3] : v[2];
	moden = kv[4] != NULL ? kv[4] : v[3];
	r->mode = h->mode;
	if (moden != NULL) {
		if ((ret = parse_mode(l, moden, kv[4] != NULL ? where : rwhere, &r->mode)) != 0)
			return ret;
		r->has_mode = 1;
	}
	if (idn != NULL) {
		ret = policy_ld_string(l, idn, "a rule id string", &r->id);
		if (ret != 0)
			return ret;
		if (r->id[0] == '\0')
			return policy_ld_error(l, idn, "expected a non-empty rule id in %s", kv[3] != NULL ? where : rwhere);
		r->id_written = 1;
	} else {
		size_t n = strlen(h->key) + 32;

		r->id = xmalloc(n);
		snprintf(r->id, n, "%s/rules/%zu", h->key, idx);
	}
	if ((ret = policy_cond_parse(l, v + 4, rwhere, r)) != 0)
		return ret;
	if ((ret = policy_mcp_rule_check(l, h, r)) != 0)
		return ret;
	if (r->limit != NULL && r->limit->key == NULL)
		r->limit->key = counter_key(r->id);
	if (r->budget != NULL && r->budget->key == NULL)
		r->budget->key = counter_key(r->id);
	return 0;
}

static int
parse_ports(struct policy_ld *l, yaml_node_t *n, const char *where, struct policy_host *h)
{
	yaml_node_item_t *it;
	size_t cnt;

	if (n->type != YAML_SEQUENCE_NODE)
		return policy_ld_error(l, n, "expected a list of ports in %s.ports", where);
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt == 0 || cnt > PORTS_MAX)
		return policy_ld_error(l, n, "expected a list of 1 to %d ports in %s.ports", PORTS_MAX, where);
	free(h->ports);
	h->ports = xcalloc(cnt, sizeof(*h->ports));
	h->nports = 0;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *pn = policy_ld_node(l, *it);
		unsigned long x;
		int ret;

		if (pn == NULL)
			continue;
		ret = policy_ld_uint(l, pn, "a port", 1, 65535, &x);
		if (ret != 0)
			return ret;
		h->ports[h->nports++] = (unsigned)x;
	}
	return 0;
}

int
policy_host_pattern(const char *s, size_t len, char canon[HOST_BUF + 2], const char **err)
{
	int kind;

	*err = NULL;
	if (memchr(s, '\0', len) != NULL)
		return -1;
	if (len >= 2 && s[0] == '*' && s[1] == '.') {
		if (host_canon(s + 2, len - 2, canon + 2, err) != HOST_DNS)
			return -1;
		canon[0] = '*';
		canon[1] = '.';
		return POLICY_HOST_WILDCARD;
	}
	kind = host_canon(s, len, canon, err);
	if (kind == HOST_DNS)
		return POLICY_HOST_EXACT;
	if (kind == HOST_IPV4 || kind == HOST_IPV6)
		return POLICY_HOST_IP;
	return -1;
}

/* Canonicalises the host key <k> into h->key and h->kind. */
static int
host_key(struct policy_ld *l, yaml_node_t *k, struct policy_host *h)
{
	const char *err = NULL;
	size_t len = k->data.scalar.length;
	char canon[HOST_BUF + 2], esc[128];
	int kind = policy_host_pattern((const char *)k->data.scalar.value, len, canon, &err);

	if (kind < 0)
		return policy_ld_error(l, k, "bad host '%s' in hosts%s%s; expected a host name, \"*.suffix\" or an IP address",
		                       policy_ld_esc(esc, sizeof(esc), k->data.scalar.value, len),
		                       err != NULL ? ": " : "", err != NULL ? err : "");
	h->kind = kind;
	h->key = xstrdup(canon);
	return 0;
}

static int
parse_host(struct policy_ld *l, yaml_node_t *k, yaml_node_t *val, struct policy_host *h)
{
	char where[POLICY_WHERE_MAX], esc[200];
	yaml_node_t *v[NHOST_KEYS];
	yaml_node_item_t *it;
	size_t i;
	int ret;

	h->verdict = POLICY_INTERCEPT;
	h->ports = xcalloc(2, sizeof(*h->ports));
	h->ports[0] = 443;
	h->ports[1] = 80;
	h->nports = 2;
	h->line = (unsigned)k->start_mark.line + 1;
	h->col = (unsigned)k->start_mark.column + 1;
	if (k->type != YAML_SCALAR_NODE)
		return policy_ld_error(l, k, "expected a host name as a key of hosts");
	if ((ret = host_key(l, k, h)) != 0)
		return ret;
	snprintf(where, sizeof(where), "hosts.%s",
	         policy_ld_esc(esc, sizeof(esc), k->data.scalar.value, k->data.scalar.length));
	ret = policy_ld_fields(l, val, where, "a map of host settings", host_keys, NHOST_KEYS, v, NULL);
	if (ret != 0)
		return ret;
	if (v[6] != NULL && (ret = parse_mode(l, v[6], where, &h->mode)) != 0)
		return ret;
	if (v[0] != NULL) {
		if (scalar_is(v[0], "intercept"))
			h->verdict = POLICY_INTERCEPT;
		else if (scalar_is(v[0], "passthrough"))
			h->verdict = POLICY_PASSTHROUGH;
		else if (scalar_is(v[0], "deny"))
			h->verdict = POLICY_DENY;
		else
			return policy_ld_error(l, v[0], "expected intercept, passthrough or deny for %s.verdict", where);
	}
	if (v[1] != NULL && (ret = parse_ports(l, v[1], where, h)) != 0)
		return ret;
	if (v[2] != NULL) {
		char what[POLICY_WHERE_MAX + 16];

		snprintf(what, sizeof(what), "%s.allow_private", where);
		if ((ret = policy_ld_bool(l, v[2], what, &h->allow_private)) != 0)
			return ret;
	}
	if (v[5] != NULL) {
		char what[POLICY_WHERE_MAX + 16];

		snprintf(what, sizeof(what), "%s.allow_plaintext", where);
		if ((ret = policy_ld_bool(l, v[5], what, &h->allow_plaintext)) != 0)
			return ret;
	}
	if (v[3] != NULL) {
		if (scalar_is(v[3], "reject"))
			h->keep_slashes = 0;
		else if (scalar_is(v[3], "keep"))
			h->keep_slashes = 1;
		else
			return policy_ld_error(l, v[3], "expected reject or keep for %s.encoded_slashes", where);
	}
	if (v[7] != NULL) {
		if (scalar_is(v[7], "keep"))
			h->path_params = POLICY_PATH_PARAMS_KEEP;
		else if (scalar_is(v[7], "strip"))
			h->path_params = POLICY_PATH_PARAMS_STRIP;
		else if (scalar_is(v[7], "refuse"))
			h->path_params = POLICY_PATH_PARAMS_REFUSE;
		else
			return policy_ld_error(l, v[7], "expected keep, strip or refuse for %s.path_params", where);
	}
	if (v[8] != NULL) {
		if (scalar_is(v[8], "refuse"))
			h->get_bodies = 0;
		else if (scalar_is(v[8], "allow"))
			h->get_bodies = 1;
		else
			return policy_ld_error(l, v[8], "expected refuse or allow for %s.get_bodies", where);
	}
	if (v[9] != NULL && (ret = policy_mcp_host_parse(l, v[9], where, h)) != 0)
		return ret;
	if (v[4] == NULL)
		return 0;
	if (v[4]->type != YAML_SEQUENCE_NODE)
		return policy_ld_error(l, v[4], "expected a list of rules in %s.rules", where);
	h->has_rules = 1;
	h->nrules = (size_t)(v[4]->data.sequence.items.top - v[4]->data.sequence.items.start);
	if (h->nrules == 0)
		return 0;
	/* Zeroed rules are safe to dispose, so nrules is set before they are filled. */
	h->rules = xcalloc(h->nrules, sizeof(*h->rules));
	for (i = 0, it = v[4]->data.sequence.items.start; it < v[4]->data.sequence.items.top; it++, i++) {
		yaml_node_t *item = policy_ld_node(l, *it);

		if (item == NULL)
			return policy_ld_error(l, v[4], "bad rule in %s.rules", where);
		ret = parse_rule(l, item, where, h, i, &h->rules[i]);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/*
 * Counters of limits and budgets are kept by key: the rule id (a counter
 * survives a reload that keeps the id), or the name: several rules share.
 * Two rules may not share a rule-id key, and rules sharing a name must
 * declare the same counter.
 */
static int
counter_clash(struct policy_ld *l, const struct policy_rule *r, const struct policy_rule *q)
{
	yaml_mark_t m = {0, r->line - 1, r->col - 1};
	const char *key = NULL;
	int differ = 0;

	if (r->limit != NULL && q->limit != NULL && strcmp(r->limit->key, q->limit->key) == 0) {
		key = r->limit->key;
		differ = r->limit->count != q->limit->count || r->limit->period_s != q->limit->period_s ||
		         r->limit->scope != q->limit->scope;
	} else if (r->budget != NULL && q->budget != NULL && strcmp(r->budget->key, q->budget->key) == 0) {
		key = r->budget->key;
		differ = r->budget->max != q->budget->max || r->budget->period_s != q->budget->period_s ||
		         r->budget->scope != q->budget->scope;
	}
	if (key == NULL)
		return 0;
	if (strncmp(key, "rule:", 5) == 0)
		return policy_ld_error_at(l, m, "duplicate rule id '%s' (also at line %u): rules with limit or budget need "
		                          "their own ids, their counters are kept by id", r->id, q->line);
	if (differ)
		return policy_ld_error_at(l, m, "counter '%s' is declared differently at line %u: rules that share a "
		                          "name share one counter", key, q->line);
	return 0;
}

static int
unique_counter_ids(struct policy_ld *l, const struct policy *p)
{
	size_t i, j, a, b;
	int ret;

	for (i = 0; i < p->nhosts; i++)
		for (j = 0; j < p->hosts[i].nrules; j++) {
			const struct policy_rule *r = &p->hosts[i].rules[j];

			if (r->limit == NULL && r->budget == NULL)
				continue;
			for (a = 0; a <= i; a++)
				for (b = 0; b < p->hosts[a].nrules && (a < i || b < j); b++)
					if ((ret = counter_clash(l, r, &p->hosts[a].rules[b])) != 0)
						return ret;
		}
	return 0;
}

int
policy_hosts_parse(struct policy_ld *l, yaml_node_t *hosts, struct policy *p)
{
	yaml_node_pair_t *pair;
	size_t n;

	if (hosts->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, hosts, "expected a map of hosts");
	n = (size_t)(hosts->data.mapping.pairs.top - hosts->data.mapping.pairs.start);
	if (n > UINT32_MAX / 4)
		return policy_ld_error(l, hosts, "too many hosts");
	if (n == 0)
		return 0;
	p->hosts = xcalloc(n, sizeof(*p->hosts));
	for (pair = hosts->data.mapping.pairs.start; pair < hosts->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);
		struct policy_host *h = &p->hosts[p->nhosts++];

		if (k == NULL || v == NULL)
			return policy_ld_error(l, hosts, "bad entry in hosts");
		if (parse_host(l, k, v, h) != 0)
			return SLUICE_EINVAL;
	}
	return unique_counter_ids(l, p);
}
