/*
 * policy/load.c - reading sluice.yaml: YAML plumbing, error messages with
 * file:line:column, scalar readers, and the top-level map.
 *
 * The document is scanned once with the event API before it is loaded:
 * aliases are refused (the document loader resolves them into shared nodes,
 * which can form cycles and multiply work) and nesting is bounded (libyaml
 * 0.2's loader recurses once per level).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hex.h"
#include "common/host.h"
#include "common/log.h"
#include "common/sluice.h"
#include "policy_int.h"

static void __attribute__((format(printf, 3, 0)))
vformat(struct policy_ld *l, yaml_mark_t mark, const char *fmt, va_list ap)
{
	int n;

	if (l->err == NULL || l->errlen == 0)
		return;
	n = snprintf(l->err, l->errlen, "%s:%zu:%zu: ", l->name, mark.line + 1, mark.column + 1);
	if (n < 0 || (size_t)n >= l->errlen)
		return;
	vsnprintf(l->err + n, l->errlen - (size_t)n, fmt, ap);
}

int
policy_ld_error_at(struct policy_ld *l, yaml_mark_t mark, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vformat(l, mark, fmt, ap);
	va_end(ap);
	return SLUICE_EINVAL;
}

int
policy_ld_error(struct policy_ld *l, const yaml_node_t *node, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vformat(l, node->start_mark, fmt, ap);
	va_end(ap);
	return SLUICE_EINVAL;
}

const char *
policy_ld_esc(char *out, size_t cap, const yaml_char_t *s, size_t len)
{
	size_t i, o = 0;

	if (cap == 0)
		return out;
	for (i = 0; i < len; i++) {
		unsigned c = s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)c;
		} else {
			if (o + 4 >= cap)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			hex_pair(out + o, (unsigned char)c, 0);
			o += 2;
		}
	}
	if (i < len && cap >= 4) {
		while (o + 4 > cap)
			o--;
		memcpy(out + o, SLUICE_LIT("..."));
		o += 3;
	}
	out[o] = '\0';
	return out;
}

yaml_node_t *
policy_ld_node(struct policy_ld *l, int id)
{
	return yaml_document_get_node(l->doc, id);
}

int
policy_ld_is_null(const yaml_node_t *n)
{
	const char *v;
	size_t len;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	return len == 0 || (len == 1 && v[0] == '~') ||
	       (len == 4 && (memcmp(v, "null", 4) == 0 || memcmp(v, "Null", 4) == 0 ||
	                     memcmp(v, "NULL", 4) == 0));
}

int
policy_ld_fields(struct policy_ld *l, yaml_node_t *map, const char *where, const char *what,
                 const char *const *keys, size_t nkeys, yaml_node_t **vals, yaml_node_t **knodes)
{
	yaml_node_pair_t *pair;
	size_t i;

	for (i = 0; i < nkeys; i++) {
		vals[i] = NULL;
		if (knodes != NULL)
			knodes[i] = NULL;
	}
	if (map->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, map, "expected %s", what);
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key);
		char esc[128];

		if (k == NULL || k->type != YAML_SCALAR_NODE)
			return policy_ld_error(l, k != NULL ? k : map, "expected a plain key in %s", where);
		for (i = 0; i < nkeys; i++)
			if (strlen(keys[i]) == k->data.scalar.length &&
			    memcmp(keys[i], k->data.scalar.value, k->data.scalar.length) == 0)
				break;
		if (i == nkeys) {
			char list[512];
			size_t j, o = 0;

			list[0] = '\0';
			for (j = 0; j < nkeys && o < sizeof(list); j++) {
				int n = snprintf(list + o, sizeof(list) - o, "%s%s", j ? ", " : "", keys[j]);

				if (n < 0)
					break;
				o += (size_t)n;
			}
			return policy_ld_error(l, k, "unknown key '%s' in %s; expected one of: %s",
			                       policy_ld_esc(esc, sizeof(esc), k->data.scalar.value,
			                                     k->data.scalar.length),
			                       where, list);
		}
		if (vals[i] != NULL)
			return policy_ld_error(l, k, "duplicate key '%s' in %s", keys[i], where);
		vals[i] = policy_ld_node(l, pair->value);
		if (vals[i] == NULL)
			return policy_ld_error(l, k, "missing value for '%s' in %s", keys[i], where);
		if (knodes != NULL)
			knodes[i] = k;
	}
	return 0;
}

int
policy_ld_string(struct policy_ld *l, yaml_node_t *n, const char *what, char **out)
{
	if (n->type != YAML_SCALAR_NODE || policy_ld_is_null(n))
		return policy_ld_error(l, n, "expected %s", what);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
		return policy_ld_error(l, n, "NUL byte in %s", what);
	*out = xstrndup((const char *)n->data.scalar.value, n->data.scalar.length);
	return 0;
}

int
policy_ld_bool(struct policy_ld *l, yaml_node_t *n, const char *what, int *out)
{
	if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		if (n->data.scalar.length == 4 && memcmp(n->data.scalar.value, "true", 4) == 0) {
			*out = 1;
			return 0;
		}
		if (n->data.scalar.length == 5 && memcmp(n->data.scalar.value, "false", 5) == 0) {
			*out = 0;
			return 0;
		}
	}
	return policy_ld_error(l, n, "expected true or false for %s", what);
}

int
policy_ld_uint(struct policy_ld *l, yaml_node_t *n, const char *what, unsigned long min,
               unsigned long max, unsigned long *out)
{
	const char *v;
	size_t len, i;
	unsigned long x = 0;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		goto bad;
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	if (len == 0 || len > 10)
		goto bad;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			goto bad;
		x = x * 10 + (unsigned long)(v[i] - '0');
	}
	if (x < min || x > max)
		goto bad;
	*out = x;
	return 0;
bad:
	return policy_ld_error(l, n, "expected %s (an integer from %lu to %lu)", what, min, max);
}

/* Formats a libyaml parser error. */
static int
yaml_error(struct policy_ld *l, yaml_parser_t *parser)
{
	yaml_mark_t m = parser->problem_mark;
	const char *problem = parser->problem != NULL ? parser->problem : "cannot parse";

	if (parser->error == YAML_MEMORY_ERROR) {
		m.line = m.column = 0;
		policy_ld_error_at(l, m, "out of memory while parsing YAML");
		return SLUICE_ENOMEM;
	}
	if (parser->context != NULL)
		policy_ld_error_at(l, m, "YAML syntax error: %s %s (line %zu column %zu)", problem,
		                   parser->context, parser->context_mark.line + 1,
		                   parser->context_mark.column + 1);
	else
		policy_ld_error_at(l, m, "YAML syntax error: %s", problem);
	return SLUICE_EPARSE;
}

/* The event pre-scan: syntax, one document, no aliases, bounded depth. */
static int
prescan(struct policy_ld *l, const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, docs = 0, ret = 0, done = 0;

	if (!yaml_parser_initialize(&parser))
		return SLUICE_ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			ret = yaml_error(l, &parser);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1)
				ret = policy_ld_error_at(l, ev.start_mark,
				                         "expected a single YAML document");
			break;
		case YAML_ALIAS_EVENT:
			ret = policy_ld_error_at(l, ev.start_mark, "YAML aliases are not supported");
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > POLICY_YAML_DEPTH_MAX)
				ret = policy_ld_error_at(l, ev.start_mark, "YAML nested too deeply (over %d levels)",
				                         POLICY_YAML_DEPTH_MAX);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		if (ret != 0)
			break;
	}
	yaml_parser_delete(&parser);
	return ret;
}

static const char *const top_keys[] = {
	"listen", "user", "ca", "leaf_cache", "upstream", "audit", "workers", "limits", "default", "hosts",
	"secrets", "sandboxes", "sandbox_env", "sandbox", "state_dir", "reload", "state",
};
enum { TOP_DEFAULT = 8, TOP_HOSTS = 9, TOP_SECRETS = 10, TOP_SANDBOXES = 11, TOP_SANDBOX_ENV = 12, NTOP = 17 };

/*
 * secrets.<name>.limit is the policy's (a rate limit per secret): taken out
 * of each secret's map before secrets.c validates the rest, compiled into
 * *<out> (<nout>).  A secrets node that is not a map of maps is left for
 * secrets.c to report.
 */
static int
secret_limits(struct policy_ld *l, yaml_node_t *secrets, struct policy_slimit **out, size_t *nout)
{
	yaml_node_pair_t *pair, *q;
	char where[POLICY_WHERE_MAX], esc[POLICY_NAME_MAX * 4 + 8];
	int ret;

	*out = NULL;
	*nout = 0;
	if (secrets == NULL || secrets->type != YAML_MAPPING_NODE)
		return 0;
	for (pair = secrets->data.mapping.pairs.start; pair < secrets->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);

		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE || v->type != YAML_MAPPING_NODE)
			continue;
		for (q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
			yaml_node_t *qk = policy_ld_node(l, q->key), *qv = policy_ld_node(l, q->value);
			struct policy_slimit *sl;
			size_t n;

			if (qk == NULL || qv == NULL || qk->type != YAML_SCALAR_NODE || qk->data.scalar.length != 5 ||
			    memcmp(qk->data.scalar.value, "limit", 5) != 0)
				continue;
			snprintf(where, sizeof(where), "secrets.%s",
			         policy_ld_esc(esc, sizeof(esc), k->data.scalar.value, k->data.scalar.length));
			*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
			sl = &(*out)[(*nout)++];
			memset(sl, 0, sizeof(*sl));
			sl->name = xstrndup((const char *)k->data.scalar.value, k->data.scalar.length);
			n = strlen(sl->name) + 8;
			sl->lim.key = xmalloc(n);
			snprintf(sl->lim.key, n, "secret:%s", sl->name);
			if ((ret = policy_limit_parse(l, qv, where, &sl->lim)) != 0)
				return ret;
			/* remove the pair: secrets.c sees the secret without it (a second one is still a duplicate) */
			memmove(q, q + 1, (size_t)(v->data.mapping.pairs.top - q - 1) * sizeof(*q));
			v->data.mapping.pairs.top--;
			break;
		}
	}
	return 0;
}

static void
slimits_free(struct policy_slimit *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].lim.key);
	}
	free(v);
}

/* The first lint error goes to the error buffer (it is already "file:line:col: error: ..."). */
static int
lint_refuse(struct policy_ld *l, const struct policy *pol)
{
	size_t i;

	for (i = 0; i < pol->nwarnings; i++)
		if (strstr(pol->warnings[i], ": error: ") != NULL)
			break;
	if (l->err != NULL && l->errlen > 0)
		snprintf(l->err, l->errlen, "%s%s", i < pol->nwarnings ? pol->warnings[i] : "lint error",
		         pol->nlint_errors > 1 ? " (and more: `sluice policy check` lists them)" : "");
	return SLUICE_EINVAL;
}

static int
load_document(struct policy_ld *l, struct policy_config **cfgp, struct policy **polp)
{
	yaml_node_t *root = yaml_document_get_root_node(l->doc), *vals[NTOP];
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct policy_slimit *sl = NULL;
	size_t nsl = 0;
	int ret;

	if (root == NULL) {
		yaml_mark_t m = {0, 0, 0};

		return policy_ld_error_at(l, m, "empty configuration; expected a map with at least 'ca'");
	}
	ret = policy_ld_fields(l, root, "the top level", "a map at the top level", top_keys, NTOP,
	                       vals, NULL);
	if (ret != 0)
		return ret;

	cfg = xcalloc(1, sizeof(*cfg));
	ret = policy_config_parse(l, root, cfg);
	if (ret != 0)
		goto out;

	pol = policy_alloc();
	if (vals[TOP_DEFAULT] != NULL) {
		yaml_node_t *d = vals[TOP_DEFAULT];

		if (d->type == YAML_SCALAR_NODE && d->data.scalar.length == 4 &&
		    memcmp(d->data.scalar.value, "deny", 4) == 0) {
			pol->default_allow = 0;
		} else if (d->type == YAML_SCALAR_NODE && d->data.scalar.length == 5 &&
		           memcmp(d->data.scalar.value, "allow", 5) == 0) {
			pol->default_allow = 1;
		} else {
			ret = policy_ld_error(l, d, "expected 'deny' or 'allow' for default");
			goto out;
		}
	}
	if (vals[TOP_HOSTS] != NULL) {
		ret = policy_hosts_parse(l, vals[TOP_HOSTS], pol);
		if (ret != 0)
			goto out;
	}
	ret = policy_index_build(l, pol);
	if (ret != 0)
		goto out;
	ret = secret_limits(l, vals[TOP_SECRETS], &sl, &nsl);
	if (ret != 0)
		goto out;
	/* may move pol: it is still private here */
	ret = policy_secrets_parse(l, vals[TOP_SECRETS], vals[TOP_SANDBOXES], vals[TOP_SANDBOX_ENV], &pol);
	if (ret != 0)
		goto out;
	pol->slimits = sl;
	pol->nslimits = nsl;
	sl = NULL;
	nsl = 0;
	policy_lint(l, vals[TOP_SECRETS], pol);
	if (pol->nlint_errors > 0 && !(l->flags & POLICY_LOAD_LINT_ERRORS_OK)) {
		ret = lint_refuse(l, pol);
		goto out;
	}
	pol->mctx = pcre2_match_context_create(NULL);
	if (pol->mctx == NULL)
		fatalx("out of memory");
	pcre2_set_match_limit(pol->mctx, POLICY_REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(pol->mctx, POLICY_REGEX_DEPTH_LIMIT);
	pcre2_set_heap_limit(pol->mctx, POLICY_REGEX_HEAP_LIMIT);

	if (cfgp != NULL) {
		*cfgp = cfg;
		cfg = NULL;
	}
	if (polp != NULL) {
		*polp = pol;
		pol = NULL;
	}
out:
	slimits_free(sl, nsl);
	policy_config_free(cfg);
	policy_unref(pol);
	return ret;
}

int
policy_load_buffer(const char *name, const char *buf, size_t len, struct policy_config **cfg,
                   struct policy **pol, char *errbuf, size_t errlen)
{
	return policy_load_buffer_flags(name, buf, len, 0, cfg, pol, errbuf, errlen);
}

int
policy_load_buffer_flags(const char *name, const char *buf, size_t len, unsigned flags,
                         struct policy_config **cfg, struct policy **pol, char *errbuf, size_t errlen)
{
	struct policy_ld l = {name != NULL ? name : "<buffer>", NULL, errbuf, errlen, flags};
	yaml_parser_t parser;
	yaml_document_t doc;
	int ret;

	if (cfg != NULL)
		*cfg = NULL;
	if (pol != NULL)
		*pol = NULL;
	if (errbuf != NULL && errlen > 0)
		errbuf[0] = '\0';
	if (buf == NULL) {
		/* libyaml asserts on a NULL input */
		buf = "";
		len = 0;
	}
	if (len > POLICY_FILE_MAX) {
		yaml_mark_t m = {0, 0, 0};

		policy_ld_error_at(&l, m, "configuration larger than %u bytes", POLICY_FILE_MAX);
		return SLUICE_ETOOBIG;
	}
	ret = prescan(&l, buf, len);
	if (ret != 0)
		return ret;
	if (!yaml_parser_initialize(&parser))
		return SLUICE_ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		ret = yaml_error(&l, &parser);
		yaml_parser_delete(&parser);
		return ret;
	}
	yaml_parser_delete(&parser);
	l.doc = &doc;
	ret = load_document(&l, cfg, pol);
	yaml_document_delete(&doc);
	return ret;
}

int
policy_load_file(const char *path, struct policy_config **cfg, struct policy **pol,
                 char *errbuf, size_t errlen)
{
	return policy_load_file_flags(path, 0, cfg, pol, errbuf, errlen);
}

int
policy_load_file_flags(const char *path, unsigned flags, struct policy_config **cfg, struct policy **pol,
                       char *errbuf, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0, cap;
	int fd, ret;

	if (cfg != NULL)
		*cfg = NULL;
	if (pol != NULL)
		*pol = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		ret = errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
		if (errbuf != NULL && errlen > 0)
			snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (errbuf != NULL && errlen > 0)
			snprintf(errbuf, errlen, "%s: not a regular file", path);
		ret = SLUICE_EIO;
		goto out;
	}
	if ((unsigned long long)st.st_size > POLICY_FILE_MAX) {
		if (errbuf != NULL && errlen > 0)
			snprintf(errbuf, errlen, "%s: larger than %u bytes", path, POLICY_FILE_MAX);
		ret = SLUICE_ETOOBIG;
		goto out;
	}
	/* Read to EOF with a bound: the file may grow under us. */
	cap = (size_t)st.st_size + 1;
	buf = xmalloc(cap);
	for (;;) {
		ssize_t n;

		if (got == cap) {
			if (cap > POLICY_FILE_MAX) {
				if (errbuf != NULL && errlen > 0)
					snprintf(errbuf, errlen, "%s: larger than %u bytes", path,
					         POLICY_FILE_MAX);
				ret = SLUICE_ETOOBIG;
				goto out;
			}
			cap = cap * 2 > POLICY_FILE_MAX + 1u ? POLICY_FILE_MAX + 1u : cap * 2;
			buf = xrealloc(buf, cap);
		}
		n = read(fd, buf + got, cap - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			if (errbuf != NULL && errlen > 0)
				snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
			ret = SLUICE_EIO;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	ret = policy_load_buffer_flags(path, buf, got, flags, cfg, pol, errbuf, errlen);
out:
	free(buf);
	close(fd);
	return ret;
}

int
policy_ld_scaled(const yaml_node_t *n, const struct policy_unit *units, unsigned long max, unsigned long *out)
{
	const char *v;
	size_t len, i, k;
	unsigned long x = 0;

	if (n->type != YAML_SCALAR_NODE)
		return -1;
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	for (i = 0; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
		if (i >= 9)
			return -1;
		x = x * 10 + (unsigned long)(v[i] - '0');
	}
	if (i == 0)
		return -1;
	for (k = 0; units[k].suffix != NULL; k++)
		if (strlen(units[k].suffix) == len - i && memcmp(v + i, units[k].suffix, len - i) == 0)
			break;
	if (units[k].suffix == NULL || x > max / units[k].mul)
		return -1;
	*out = x * units[k].mul;
	return 0;
}
