/*
 * policy/secrets.c - secrets:, sandboxes: and sandbox_env: of sluice.yaml
 * (issue 3): validation (packing is in secrets_pack.c).  The accessors the gateway uses to
 * decide who may use a secret, toward which hosts, are in secrets_match.c.
 *
 * Only names and source specifications live here, never a value.  Entries
 * are first built on the heap while the YAML is validated, then packed into
 * one block appended to the snapshot's own allocation: the snapshot stays a
 * single immutable object, and its destructor (match.c) frees them with it.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "policy_int.h"
#include "secrets_int.h"
#include "secrets/secrets.h"

#define WHERE_MAX (POLICY_NAME_MAX + 32) /* "secrets.<name>" / "sandboxes.<name>" */

static const char *const secret_keys[] = {"source", "ttl", "format", "placeholder", "hosts", "inject", "sandboxes"};
enum { S_SOURCE, S_TTL, S_FORMAT, S_PLACEHOLDER, S_HOSTS, S_INJECT, S_SANDBOXES, NSECRET_KEYS };
static const char *const sandbox_keys[] = {"addresses", "proxy_auth"};
static const char *const auth_keys[] = {"user", "password"};

/*
 * Headers that frame, route or authenticate the hop itself: a secret in one
 * of them would change how the request is delimited or where it goes, or be
 * consumed by the gateway rather than the upstream.
 */
static const char *const refused_headers[] = {
	"host", "content-length", "transfer-encoding", "connection", "proxy-authorization",
	"te", "trailer", "upgrade", "keep-alive", "proxy-connection",
};

static void
build_free(struct build *b)
{
	size_t i, j;

	for (i = 0; i < b->nsec; i++) {
		struct b_secret *s = &b->sec[i];

		free(s->name);
		free(s->source);
		free(s->format);
		free(s->placeholder);
		for (j = 0; j < s->nhosts; j++)
			free(s->hosts[j]);
		free(s->hosts);
		for (j = 0; j < s->ninject; j++)
			free(s->inject[j].arg);
		free(s->inject);
		for (j = 0; j < s->nsandboxes; j++)
			free(s->sandboxes[j]);
		free(s->sandboxes);
	}
	free(b->sec);
	for (i = 0; i < b->nsb; i++) {
		free(b->sb[i].name);
		free(b->sb[i].addrs);
		free(b->sb[i].user);
		free(b->sb[i].password);
	}
	free(b->sb);
	for (i = 0; i < b->nenv; i++) {
		free(b->env[i].var);
		free(b->env[i].secret);
	}
	free(b->env);
}

static size_t
seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static size_t
map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

static int
is_name_char(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '.' || c == '-';
}

/* 1 if <s>/<len> is <min>..<max> bytes of [A-Za-z0-9_.-]. */
static int
name_ok(const char *s, size_t len, size_t min, size_t max)
{
	size_t i;

	if (len < min || len > max)
		return 0;
	for (i = 0; i < len; i++)
		if (!is_name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/* RFC 9110 tchar */
static int
is_tchar(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", (int)c) != NULL);
}

/* A secret's or a sandbox's name: the key <k> of an entry. */
static int
entry_name(struct policy_ld *l, yaml_node_t *k, const char *what, char **out)
{
	char esc[128];

	if (k->type != YAML_SCALAR_NODE ||
	    !name_ok((const char *)k->data.scalar.value, k->data.scalar.length, 1, POLICY_NAME_MAX))
		return policy_ld_error(l, k, "bad %s name '%s'; expected 1 to %d characters of A-Z a-z 0-9 _ . -",
		                       what,
		                       k->type == YAML_SCALAR_NODE ?
		                               policy_ld_esc(esc, sizeof(esc), k->data.scalar.value, k->data.scalar.length) :
		                               "(not a string)",
		                       POLICY_NAME_MAX);
	*out = xstrndup((const char *)k->data.scalar.value, k->data.scalar.length);
	return 0;
}

/* A ttl: seconds, or "<n>s", "<n>m", "<n>h"; 1s to 24h. */
static int
parse_ttl(struct policy_ld *l, yaml_node_t *n, const char *where, unsigned *out)
{
	static const struct policy_unit units[] = {{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {NULL, 0}};
	unsigned long x;

	if (policy_ld_scaled(n, units, POLICY_TTL_MAX_S, &x) != 0 || x == 0)
		return policy_ld_error(l, n, "expected a duration for %s.ttl (seconds, or \"90s\", \"50m\", \"1h\"; 1s to 24h)",
		                       where);
	*out = (unsigned)x;
	return 0;
}

/* One hosts: item: a canonical host, "*." + a canonical DNS suffix, or an IP literal. */
static int
secret_host(struct policy_ld *l, yaml_node_t *n, const char *where, char **out)
{
	char canon[HOST_BUF + 2], esc[128];
	const char *err = NULL;

	if (n->type != YAML_SCALAR_NODE || policy_ld_is_null(n))
		return policy_ld_error(l, n, "expected a host name in %s.hosts", where);
	if (policy_host_pattern((const char *)n->data.scalar.value, n->data.scalar.length, canon, &err) < 0)
		return policy_ld_error(l, n, "bad host '%s' in %s.hosts%s%s; expected a host name, \"*.suffix\" or an IP address",
		                       policy_ld_esc(esc, sizeof(esc), n->data.scalar.value, n->data.scalar.length), where,
		                       err != NULL ? ": " : "", err != NULL ? err : "");
	*out = xstrdup(canon);
	return 0;
}

/* 1 if <a>/<len> is 1..<max> bytes, none a control, DEL, or in <forbid>. */
static int
arg_ok(const char *a, size_t len, size_t max, const char *forbid)
{
	size_t i;

	if (len == 0 || len > max)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned c = (unsigned char)a[i];

		if (c < 0x20 || c == 0x7f || (forbid != NULL && strchr(forbid, (int)c) != NULL))
			return 0;
	}
	return 1;
}

static int
has_prefix(const char *s, size_t len, const char *pre, size_t *plen)
{
	*plen = strlen(pre);
	return len >= *plen && memcmp(s, pre, *plen) == 0;
}

/* One inject: item into <out> (its arg is heap even when an error follows). */
static int
parse_inject(struct policy_ld *l, yaml_node_t *n, const char *where, struct b_inject *out)
{
	char esc[160];
	const char *s, *a;
	size_t len, alen, pl, i;

	if (n->type != YAML_SCALAR_NODE || policy_ld_is_null(n))
		return policy_ld_error(l, n, "expected a place (header:<Name>, basic, query:<param>, json:$.<path> or form:<field>) in %s.inject",
		                       where);
	s = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	policy_ld_esc(esc, sizeof(esc), n->data.scalar.value, len);
	if (len == 5 && memcmp(s, "basic", 5) == 0) {
		out->kind = POLICY_INJECT_BASIC;
		return 0;
	}
	if (has_prefix(s, len, "header:", &pl)) {
		a = s + pl;
		alen = len - pl;
		for (i = 0; i < alen; i++)
			if (!is_tchar((unsigned char)a[i]))
				break;
		if (alen == 0 || alen > POLICY_INJECT_ARG_MAX || i < alen)
			return policy_ld_error(l, n, "bad place '%s' in %s.inject; expected header:<Name> with a header name token of 1 to %d characters",
			                       esc, where, POLICY_INJECT_ARG_MAX);
		out->kind = POLICY_INJECT_HEADER;
		out->arg = xstrndup(a, alen);
		for (i = 0; i < alen; i++)
			if (out->arg[i] >= 'A' && out->arg[i] <= 'Z')
				out->arg[i] = (char)(out->arg[i] - 'A' + 'a');
		for (i = 0; i < sizeof(refused_headers) / sizeof(refused_headers[0]); i++)
			if (strcmp(out->arg, refused_headers[i]) == 0)
				return policy_ld_error(l, n, "refused place '%s' in %s.inject: a secret may not go into the %s header (it frames, routes or authenticates the hop)",
				                       esc, where, refused_headers[i]);
		return 0;
	}
	if (has_prefix(s, len, "query:", &pl)) {
		if (!arg_ok(s + pl, len - pl, POLICY_INJECT_ARG_MAX, "&=# "))
			return policy_ld_error(l, n, "bad place '%s' in %s.inject; expected query:<param> with 1 to %d characters, no '&', '=', '#' or space",
			                       esc, where, POLICY_INJECT_ARG_MAX);
		out->kind = POLICY_INJECT_QUERY;
		out->arg = xstrndup(s + pl, len - pl);
		return 0;
	}
	if (has_prefix(s, len, "json:", &pl)) {
		if (!policy_json_path_ok(s + pl, len - pl))
			return policy_ld_error(l, n, "bad place '%s' in %s.inject; expected json:$<path> (\"$\" then steps .name, ['name'], [N] or [*], at most %d characters)",
			                       esc, where, POLICY_JSON_PATH_MAX);
		out->kind = POLICY_INJECT_JSON;
		out->arg = xstrndup(s + pl, len - pl);
		return 0;
	}
	if (has_prefix(s, len, "form:", &pl)) {
		if (!arg_ok(s + pl, len - pl, POLICY_INJECT_ARG_MAX, NULL))
			return policy_ld_error(l, n, "bad place '%s' in %s.inject; expected form:<field> with 1 to %d characters",
			                       esc, where, POLICY_INJECT_ARG_MAX);
		out->kind = POLICY_INJECT_FORM;
		out->arg = xstrndup(s + pl, len - pl);
		return 0;
	}
	return policy_ld_error(l, n, "bad place '%s' in %s.inject; expected header:<Name>, basic, query:<param>, json:$.<path> or form:<field>",
	                       esc, where);
}

static int
parse_injects(struct policy_ld *l, yaml_node_t *n, const char *where, struct b_secret *s)
{
	yaml_node_item_t *it;
	size_t cnt = n->type == YAML_SEQUENCE_NODE ? seq_len(n) : 0, j;
	int ret;

	if (cnt == 0 || cnt > POLICY_SECRET_INJECT_MAX)
		return policy_ld_error(l, n, "expected a list of 1 to %d places in %s.inject", POLICY_SECRET_INJECT_MAX,
		                       where);
	s->inject = xcalloc(cnt, sizeof(*s->inject));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *c = policy_ld_node(l, *it);
		struct b_inject *in;

		if (c == NULL)
			return policy_ld_error(l, n, "bad place in %s.inject", where);
		in = &s->inject[s->ninject++];
		if ((ret = parse_inject(l, c, where, in)) != 0)
			return ret;
		for (j = 0; j + 1 < s->ninject; j++)
			if (s->inject[j].kind == in->kind &&
			    (in->arg == NULL || strcmp(s->inject[j].arg, in->arg) == 0))
				return policy_ld_error(l, c, "duplicate place in %s.inject", where);
	}
	return 0;
}

static int
parse_hosts(struct policy_ld *l, yaml_node_t *n, const char *where, struct b_secret *s)
{
	yaml_node_item_t *it;
	size_t cnt = n->type == YAML_SEQUENCE_NODE ? seq_len(n) : 0, j;
	int ret;

	if (cnt == 0 || cnt > POLICY_SECRET_HOSTS_MAX)
		return policy_ld_error(l, n, "expected a list of 1 to %d hosts in %s.hosts", POLICY_SECRET_HOSTS_MAX,
		                       where);
	s->hosts = xcalloc(cnt, sizeof(*s->hosts));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *c = policy_ld_node(l, *it);
		char **h;

		if (c == NULL)
			return policy_ld_error(l, n, "bad host in %s.hosts", where);
		h = &s->hosts[s->nhosts++];
		if ((ret = secret_host(l, c, where, h)) != 0)
			return ret;
		for (j = 0; j + 1 < s->nhosts; j++)
			if (strcmp(s->hosts[j], *h) == 0)
				return policy_ld_error(l, c, "duplicate host '%s' in %s.hosts", *h, where);
	}
	return 0;
}

static const struct b_sandbox *
find_sandbox(const struct build *b, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < b->nsb; i++)
		if (strlen(b->sb[i].name) == len && memcmp(b->sb[i].name, s, len) == 0)
			return &b->sb[i];
	return NULL;
}

static const struct b_secret *
find_secret(const struct build *b, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < b->nsec; i++)
		if (strlen(b->sec[i].name) == len && memcmp(b->sec[i].name, s, len) == 0)
			return &b->sec[i];
	return NULL;
}

static int
parse_secret_sandboxes(struct policy_ld *l, const struct build *b, yaml_node_t *n, const char *where,
                       struct b_secret *s)
{
	yaml_node_item_t *it;
	size_t cnt = n->type == YAML_SEQUENCE_NODE ? seq_len(n) : 0, j;
	char esc[128];

	if (cnt == 0 || cnt > POLICY_SANDBOXES_MAX)
		return policy_ld_error(l, n, "expected a list of 1 to %d sandbox names in %s.sandboxes (leave it out for every sandbox)",
		                       POLICY_SANDBOXES_MAX, where);
	s->sandboxes = xcalloc(cnt, sizeof(*s->sandboxes));
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *c = policy_ld_node(l, *it);
		const struct b_sandbox *sb;

		if (c == NULL || c->type != YAML_SCALAR_NODE)
			return policy_ld_error(l, c != NULL ? c : n, "expected a sandbox name in %s.sandboxes", where);
		sb = find_sandbox(b, (const char *)c->data.scalar.value, c->data.scalar.length);
		if (sb == NULL)
			return policy_ld_error(l, c, "unknown sandbox '%s' in %s.sandboxes; expected a name under sandboxes:",
			                       policy_ld_esc(esc, sizeof(esc), c->data.scalar.value, c->data.scalar.length),
			                       where);
		for (j = 0; j < s->nsandboxes; j++)
			if (strcmp(s->sandboxes[j], sb->name) == 0)
				return policy_ld_error(l, c, "duplicate sandbox '%s' in %s.sandboxes", sb->name, where);
		s->sandboxes[s->nsandboxes++] = xstrdup(sb->name);
	}
	return 0;
}

static int
parse_secret(struct policy_ld *l, const struct build *b, yaml_node_t *k, yaml_node_t *val, struct b_secret *s)
{
	char where[WHERE_MAX], what[WHERE_MAX + 96], esc[128];
	yaml_node_t *v[NSECRET_KEYS];
	struct secret_source src;
	enum secret_source_kind kind;
	const char *err = NULL;
	size_t len;
	int ret;

	snprintf(where, sizeof(where), "secrets.%s", s->name);
	ret = policy_ld_fields(l, val, where, "a map of secret settings (source, hosts, inject...)", secret_keys,
	                       NSECRET_KEYS, v, NULL);
	if (ret != 0)
		return ret;
	if (v[S_SOURCE] == NULL)
		return policy_ld_error(l, k, "missing required key 'source' in %s", where);
	if (v[S_HOSTS] == NULL)
		return policy_ld_error(l, k, "missing required key 'hosts' in %s", where);

	snprintf(what, sizeof(what), "a source (env:VAR, file:/path or exec:program) for %s.source", where);
	if ((ret = policy_ld_string(l, v[S_SOURCE], what, &s->source)) != 0)
		return ret;
	if (secret_source_parse(s->source, &src, &err) != 0)
		return policy_ld_error(l, v[S_SOURCE], "bad source for %s: %s", where, err);
	kind = src.kind;
	secret_source_dispose(&src);

	/* ttl: an exec: source is re-run, a file: re-read (rotated files), an env: re-read (same value) */
	(void)kind;
	if (v[S_TTL] != NULL && (ret = parse_ttl(l, v[S_TTL], where, &s->ttl_s)) != 0)
		return ret;
	if (v[S_FORMAT] != NULL && v[S_PLACEHOLDER] != NULL)
		return policy_ld_error(l, v[S_PLACEHOLDER], "format and placeholder are exclusive in %s", where);
	if (v[S_FORMAT] != NULL) {
		snprintf(what, sizeof(what), "a placeholder format for %s.format", where);
		if ((ret = policy_ld_string(l, v[S_FORMAT], what, &s->format)) != 0)
			return ret;
		if (!secret_format_known(s->format))
			return policy_ld_error(l, v[S_FORMAT], "unknown format '%s' for %s; expected github, openai, anthropic, slack or stripe",
			                       policy_ld_esc(esc, sizeof(esc), (const yaml_char_t *)s->format,
			                                     strlen(s->format)),
			                       where);
	}
	if (v[S_PLACEHOLDER] != NULL) {
		snprintf(what, sizeof(what), "a placeholder string for %s.placeholder", where);
		if ((ret = policy_ld_string(l, v[S_PLACEHOLDER], what, &s->placeholder)) != 0)
			return ret;
		len = strlen(s->placeholder);
		if (!name_ok(s->placeholder, len, POLICY_PLACEHOLDER_MIN, POLICY_PLACEHOLDER_MAX))
			return policy_ld_error(l, v[S_PLACEHOLDER], "bad placeholder for %s; expected %d to %d characters of A-Z a-z 0-9 _ . -",
			                       where, POLICY_PLACEHOLDER_MIN, POLICY_PLACEHOLDER_MAX);
		s->ph_node = v[S_PLACEHOLDER];
	}
	if ((ret = parse_hosts(l, v[S_HOSTS], where, s)) != 0)
		return ret;
	if (v[S_INJECT] != NULL) {
		if ((ret = parse_injects(l, v[S_INJECT], where, s)) != 0)
			return ret;
	} else {
		s->inject = xcalloc(1, sizeof(*s->inject));
		s->inject[0].kind = POLICY_INJECT_HEADER;
		s->inject[0].arg = xstrdup("authorization");
		s->ninject = 1;
	}
	if (v[S_SANDBOXES] != NULL)
		return parse_secret_sandboxes(l, b, v[S_SANDBOXES], where, s);
	return 0;
}

/*
 * Placeholders are found by substring search in requests: two that are equal,
 * or one inside the other, would make which secret a match means ambiguous.
 */
static int
check_placeholders(struct policy_ld *l, const struct build *b)
{
	size_t i, j;

	for (i = 0; i < b->nsec; i++) {
		const struct b_secret *s = &b->sec[i];

		if (s->placeholder == NULL)
			continue;
		for (j = 0; j < i; j++) {
			const struct b_secret *o = &b->sec[j];

			if (o->placeholder == NULL)
				continue;
			if (strstr(s->placeholder, o->placeholder) != NULL || strstr(o->placeholder, s->placeholder) != NULL)
				return policy_ld_error(l, s->ph_node, "placeholder of secrets.%s overlaps the placeholder of secrets.%s (line %zu): placeholders must differ and neither may contain the other",
				                       s->name, o->name, o->ph_node->start_mark.line + 1);
		}
	}
	return 0;
}

static int
parse_secrets(struct policy_ld *l, yaml_node_t *map, struct build *b)
{
	yaml_node_pair_t *pair;
	size_t n;
	int ret;

	if (map->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, map, "expected a map of secrets (name: settings) for secrets");
	n = map_len(map);
	if (n > POLICY_SECRETS_MAX)
		return policy_ld_error(l, map, "too many secrets (at most %d)", POLICY_SECRETS_MAX);
	if (n == 0)
		return 0;
	b->sec = xcalloc(n, sizeof(*b->sec));
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);
		struct b_secret *s;
		char *name;

		if (k == NULL || v == NULL)
			return policy_ld_error(l, map, "bad entry in secrets");
		if ((ret = entry_name(l, k, "secret", &name)) != 0)
			return ret;
		if (find_secret(b, name, strlen(name)) != NULL) {
			ret = policy_ld_error(l, k, "duplicate secret '%s' in secrets", name);
			free(name);
			return ret;
		}
		s = &b->sec[b->nsec++];
		s->name = name;
		if ((ret = parse_secret(l, b, k, v, s)) != 0)
			return ret;
	}
	return check_placeholders(l, b);
}

static int
parse_addresses(struct policy_ld *l, yaml_node_t *n, const char *where, struct b_sandbox *sb)
{
	yaml_node_item_t *it;
	size_t cnt;
	char what[WHERE_MAX + 64], esc[128];
	int ret;

	if (n->type != YAML_SEQUENCE_NODE || seq_len(n) > POLICY_SANDBOX_ADDRS_MAX)
		return policy_ld_error(l, n, "expected a list of at most %d CIDR blocks (\"10.200.1.2/32\") in %s.addresses",
		                       POLICY_SANDBOX_ADDRS_MAX, where);
	cnt = seq_len(n);
	if (cnt == 0)
		return 0;
	sb->addrs = xcalloc(cnt, sizeof(*sb->addrs));
	snprintf(what, sizeof(what), "a CIDR block (\"10.200.1.2/32\") in %s.addresses", where);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *c = policy_ld_node(l, *it);
		char *s;

		if (c == NULL)
			return policy_ld_error(l, n, "bad entry in %s.addresses", where);
		if ((ret = policy_ld_string(l, c, what, &s)) != 0)
			return ret;
		ret = netaddr_cidr_parse(s, &sb->addrs[sb->naddrs]);
		free(s);
		if (ret != 0)
			return policy_ld_error(l, c, "bad CIDR block '%s' in %s.addresses; expected \"10.200.1.2/32\" or \"fd00::2/128\"",
			                       policy_ld_esc(esc, sizeof(esc), c->data.scalar.value, c->data.scalar.length),
			                       where);
		sb->naddrs++;
	}
	return 0;
}

static int
parse_proxy_auth(struct policy_ld *l, const struct build *b, yaml_node_t *n, const char *where,
                 struct b_sandbox *sb)
{
	yaml_node_t *v[2];
	struct secret_source src;
	const char *err = NULL;
	char awhere[WHERE_MAX + 16], what[WHERE_MAX + 96], esc[160];
	size_t i, len;
	int ret;

	snprintf(awhere, sizeof(awhere), "%s.proxy_auth", where);
	if ((ret = policy_ld_fields(l, n, awhere, "a map with user and password", auth_keys, 2, v, NULL)) != 0)
		return ret;
	if (v[0] == NULL || v[1] == NULL)
		return policy_ld_error(l, n, "missing required key '%s' in %s", v[0] == NULL ? "user" : "password",
		                       awhere);
	snprintf(what, sizeof(what), "a user name for %s.user", awhere);
	if ((ret = policy_ld_string(l, v[0], what, &sb->user)) != 0)
		return ret;
	len = strlen(sb->user);
	/* RFC 7617: the user-id of a Basic credential cannot contain ':' */
	if (!arg_ok(sb->user, len, POLICY_PROXY_USER_MAX, ":"))
		return policy_ld_error(l, v[0], "bad user in %s; expected 1 to %d characters, no ':' or control characters",
		                       awhere, POLICY_PROXY_USER_MAX);
	for (i = 0; i < b->nsb; i++)
		if (&b->sb[i] != sb && b->sb[i].user != NULL && strcmp(b->sb[i].user, sb->user) == 0)
			return policy_ld_error(l, v[0], "duplicate proxy_auth user '%s' in %s (also in sandboxes.%s)",
			                       policy_ld_esc(esc, sizeof(esc), (const yaml_char_t *)sb->user, len), awhere,
			                       b->sb[i].name);
	snprintf(what, sizeof(what), "a password source (env:VAR or file:/path) for %s.password", awhere);
	if ((ret = policy_ld_string(l, v[1], what, &sb->password)) != 0)
		return ret;
	if (secret_source_parse(sb->password, &src, &err) != 0)
		return policy_ld_error(l, v[1], "bad password source for %s: %s", awhere, err);
	ret = src.kind == SECRET_SRC_EXEC;
	secret_source_dispose(&src);
	if (ret)
		return policy_ld_error(l, v[1], "bad password source for %s: expected env:VAR or file:/path (exec: is not supported here)",
		                       awhere);
	return 0;
}

static int
parse_sandboxes(struct policy_ld *l, yaml_node_t *map, struct build *b)
{
	yaml_node_pair_t *pair;
	size_t n;
	int ret;

	if (map->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, map, "expected a map of sandboxes (name: settings) for sandboxes");
	n = map_len(map);
	if (n > POLICY_SANDBOXES_MAX)
		return policy_ld_error(l, map, "too many sandboxes (at most %d)", POLICY_SANDBOXES_MAX);
	if (n == 0)
		return 0;
	b->sb = xcalloc(n, sizeof(*b->sb));
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *val = policy_ld_node(l, pair->value), *v[2];
		struct b_sandbox *sb;
		char where[WHERE_MAX], *name;

		if (k == NULL || val == NULL)
			return policy_ld_error(l, map, "bad entry in sandboxes");
		if ((ret = entry_name(l, k, "sandbox", &name)) != 0)
			return ret;
		if (find_sandbox(b, name, strlen(name)) != NULL) {
			ret = policy_ld_error(l, k, "duplicate sandbox '%s' in sandboxes", name);
			free(name);
			return ret;
		}
		sb = &b->sb[b->nsb++];
		sb->name = name;
		snprintf(where, sizeof(where), "sandboxes.%s", name);
		ret = policy_ld_fields(l, val, where, "a map with addresses and/or proxy_auth", sandbox_keys, 2, v, NULL);
		if (ret != 0)
			return ret;
		if (v[0] != NULL && (ret = parse_addresses(l, v[0], where, sb)) != 0)
			return ret;
		if (v[1] != NULL && (ret = parse_proxy_auth(l, b, v[1], where, sb)) != 0)
			return ret;
		if (sb->naddrs == 0 && sb->user == NULL)
			return policy_ld_error(l, k, "%s needs addresses or proxy_auth (or both): otherwise no client can be recognised as it",
			                       where);
	}
	return 0;
}

static int
parse_env(struct policy_ld *l, yaml_node_t *map, struct build *b)
{
	yaml_node_pair_t *pair;
	size_t n, i, j;
	char esc[160], esc2[128];

	if (map->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, map, "expected a map of VARIABLE: secret-name for sandbox_env");
	n = map_len(map);
	if (n > POLICY_SANDBOX_ENV_MAX)
		return policy_ld_error(l, map, "too many entries in sandbox_env (at most %d)", POLICY_SANDBOX_ENV_MAX);
	if (n == 0)
		return 0;
	b->env = xcalloc(n, sizeof(*b->env));
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);
		const struct b_secret *s;
		const char *ks;
		size_t klen;
		int ok;

		if (k == NULL || v == NULL)
			return policy_ld_error(l, map, "bad entry in sandbox_env");
		ok = k->type == YAML_SCALAR_NODE;
		ks = ok ? (const char *)k->data.scalar.value : "";
		klen = ok ? k->data.scalar.length : 0;
		ok = ok && klen >= 1 && klen <= POLICY_ENV_VAR_MAX &&
		     ((ks[0] >= 'A' && ks[0] <= 'Z') || (ks[0] >= 'a' && ks[0] <= 'z') || ks[0] == '_');
		for (i = 1; ok && i < klen; i++)
			ok = (ks[i] >= 'A' && ks[i] <= 'Z') || (ks[i] >= 'a' && ks[i] <= 'z') ||
			     (ks[i] >= '0' && ks[i] <= '9') || ks[i] == '_';
		if (!ok)
			return policy_ld_error(l, k, "bad variable name '%s' in sandbox_env; expected [A-Za-z_][A-Za-z0-9_]* (at most %d characters)",
			                       policy_ld_esc(esc, sizeof(esc), (const yaml_char_t *)ks, klen),
			                       POLICY_ENV_VAR_MAX);
		for (j = 0; j < b->nenv; j++)
			if (strlen(b->env[j].var) == klen && memcmp(b->env[j].var, ks, klen) == 0)
				return policy_ld_error(l, k, "duplicate variable '%s' in sandbox_env", b->env[j].var);
		if (v->type != YAML_SCALAR_NODE ||
		    (s = find_secret(b, (const char *)v->data.scalar.value, v->data.scalar.length)) == NULL)
			return policy_ld_error(l, v, "unknown secret '%s' for sandbox_env.%s; expected a name under secrets:",
			                       v->type == YAML_SCALAR_NODE ?
			                               policy_ld_esc(esc2, sizeof(esc2), v->data.scalar.value,
			                                             v->data.scalar.length) :
			                               "(not a string)",
			                       policy_ld_esc(esc, sizeof(esc), (const yaml_char_t *)ks, klen));
		b->env[b->nenv].var = xstrndup(ks, klen);
		b->env[b->nenv].secret = xstrdup(s->name);
		b->nenv++;
	}
	return 0;
}

int
policy_secrets_parse(struct policy_ld *l, yaml_node_t *secrets, yaml_node_t *sandboxes, yaml_node_t *env,
                     struct policy **pp)
{
	struct build b;
	int ret = 0;

	memset(&b, 0, sizeof(b));
	/* sandboxes first: secrets name them */
	if (sandboxes != NULL)
		ret = parse_sandboxes(l, sandboxes, &b);
	if (ret == 0 && secrets != NULL)
		ret = parse_secrets(l, secrets, &b);
	if (ret == 0 && env != NULL)
		ret = parse_env(l, env, &b);
	if (ret == 0)
		policy_secrets_attach(&b, pp);
	build_free(&b);
	return ret;
}
