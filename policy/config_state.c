/*
 * policy/config_state.c - the state: section of sluice.yaml (issue 22):
 * where the counters of limits and budgets live (the state file under
 * state.dir, the default, or a Redis shared by a fleet of gateways), and the
 * older top-level state_dir, still accepted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sluice.h"
#include "policy_int.h"
#include "secrets/secrets.h"

#define STATE_DIR_MAX 1024           /* bytes of state.dir (the counters file name is built from it) */
#define REDIS_HOST_MAX 253           /* a DNS name */
#define REDIS_UNIX_MAX 107           /* sun_path, with its NUL */
#define REDIS_DB_MAX 9999ul
#define REDIS_TIMEOUT_MAX_MS 10000ul /* STORE_TIMEOUT_MAX_MS */
#define REDIS_PREFIX_MAX 64          /* STORE_PREFIX_MAX */
#define GATEWAY_ID_MAX 64
#define FLEET_SIZE_MAX 10000ul

void
policy_state_defaults(struct policy_config *cfg)
{
	char host[256];

	cfg->state_dir = xstrdup(POLICY_STATE_DIR_DEFAULT);
	cfg->state_backend = POLICY_STATE_FILE;
	cfg->state_on_error = POLICY_STATE_DENY;
	cfg->fleet_size = 1;
	cfg->local_share = 0;
	cfg->redis.port = 6379;
	cfg->redis.timeout_ms = 50;
	cfg->redis.key_prefix = xstrdup("sluice:");
	/* the host name, when it is a valid gateway id; else "sluice" */
	if (gethostname(host, sizeof(host)) != 0 || policy_gateway_id_ok(host, strnlen(host, sizeof(host))) != 0)
		snprintf(host, sizeof(host), "sluice");
	cfg->gateway_id = xstrdup(host);
}

void
policy_state_free(struct policy_config *cfg)
{
	free(cfg->state_dir);
	free(cfg->gateway_id);
	free(cfg->redis.url);
	free(cfg->redis.host);
	free(cfg->redis.unix_path);
	free(cfg->redis.password);
	free(cfg->redis.key_prefix);
	free(cfg->fleet_key);
}

static int
id_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-';
}

int
policy_gateway_id_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > GATEWAY_ID_MAX)
		return -1;
	for (i = 0; i < len; i++)
		if (!id_char((unsigned char)s[i]))
			return -1;
	return 0;
}

/* An absolute directory path without control characters, at most STATE_DIR_MAX bytes, for <what>. */
int
policy_state_dir_parse(struct policy_ld *l, yaml_node_t *n, const char *what, struct policy_config *cfg)
{
	char msg[96];
	size_t i;
	int ret;

	free(cfg->state_dir);
	cfg->state_dir = NULL;
	snprintf(msg, sizeof(msg), "an absolute directory path for %s", what);
	if ((ret = policy_ld_string(l, n, msg, &cfg->state_dir)) != 0)
		return ret;
	for (i = 0; cfg->state_dir[i] != '\0'; i++)
		if ((unsigned char)cfg->state_dir[i] < 0x20 || cfg->state_dir[i] == 0x7f)
			break;
	if (cfg->state_dir[0] != '/' || cfg->state_dir[i] != '\0' || i > STATE_DIR_MAX)
		return policy_ld_error(l, n, "expected an absolute directory path for %s (at most %d bytes)", what,
		                       STATE_DIR_MAX);
	return 0;
}

/* Decimal digits <s>/<n> as a number in <lo>..<hi>: 0 and *<out>, or -1. */
static int
digits(const char *s, size_t n, unsigned long lo, unsigned long hi, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 9 || (n > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* "unix:/path[?db=N]" */
static int
redis_unix(struct policy_ld *l, yaml_node_t *n, const char *u, struct policy_state_redis *r)
{
	const char *path = u + 5, *q = strchr(path, '?');
	size_t plen = q != NULL ? (size_t)(q - path) : strlen(path), i;
	unsigned long db = 0;

	if (plen == 0 || path[0] != '/' || plen >= REDIS_UNIX_MAX)
		return policy_ld_error(l, n, "expected an absolute socket path of at most %d bytes in state.redis.url "
		                       "(\"unix:/run/redis/redis.sock?db=0\")", REDIS_UNIX_MAX - 1);
	for (i = 0; i < plen; i++)
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
			return policy_ld_error(l, n, "control character in the socket path of state.redis.url");
	if (q != NULL && (strncmp(q, "?db=", 4) != 0 || digits(q + 4, strlen(q + 4), 0, REDIS_DB_MAX, &db) != 0))
		return policy_ld_error(l, n, "expected \"?db=N\" (0 to %lu) after the socket path in state.redis.url",
		                       REDIS_DB_MAX);
	r->unix_path = xstrndup(path, plen);
	r->db = (unsigned)db;
	return 0;
}

/* "redis://host[:port][/db]"; host a DNS name, an IPv4 address or [IPv6]; no user or password in it. */
static int
redis_tcp(struct policy_ld *l, yaml_node_t *n, const char *u, struct policy_state_redis *r)
{
	const char *h = u + 8, *end = h + strcspn(h, "/"), *p, *hend;
	unsigned long port = 6379, db = 0;
	size_t i;

	if (memchr(h, '@', (size_t)(end - h)) != NULL)
		return policy_ld_error(l, n, "a user or password in state.redis.url is not allowed (the file would hold "
		                       "the secret): give state.redis.password as env:NAME or file:PATH");
	if (h[0] == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (hend == NULL || hend == h + 1)
			return policy_ld_error(l, n, "bad IPv6 address in state.redis.url; expected \"redis://[::1]:6379/0\"");
		p = hend + 1;
		h++;
		for (i = 0; h + i < hend; i++)
			if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f') || (h[i] >= 'A' && h[i] <= 'F') ||
			      h[i] == ':' || h[i] == '.'))
				return policy_ld_error(l, n, "bad IPv6 address in state.redis.url");
	} else {
		hend = h + strcspn(h, ":/");
		p = hend;
		for (i = 0; h + i < hend; i++)
			if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
			      h[i] == '.' || h[i] == '-'))
				return policy_ld_error(l, n, "bad host in state.redis.url; expected a DNS name or an IP address");
	}
	if (hend == h || hend - h > REDIS_HOST_MAX)
		return policy_ld_error(l, n, "missing or overlong host in state.redis.url; expected \"redis://host:6379/0\"");
	if (*p == ':' && digits(p + 1, (size_t)(end - p - 1), 1, 65535, &port) != 0)
		return policy_ld_error(l, n, "expected a port (1 to 65535) after the host in state.redis.url");
	if (*p != ':' && p != end)
		return policy_ld_error(l, n, "unexpected text after the host in state.redis.url");
	if (*end == '/' && end[1] != '\0' && digits(end + 1, strlen(end + 1), 0, REDIS_DB_MAX, &db) != 0)
		return policy_ld_error(l, n, "expected a database number (0 to %lu) after the '/' in state.redis.url",
		                       REDIS_DB_MAX);
	r->host = xstrndup(h, (size_t)(hend - h));
	r->port = (unsigned)port;
	r->db = (unsigned)db;
	return 0;
}

/* A secret's source spec for <what> (env:VAR or file:/path; exec: is refused), kept as text in *<out>. */
static int
source_spec(struct policy_ld *l, yaml_node_t *n, const char *what, const char *noun, char **out)
{
	struct secret_source src;
	const char *err = NULL;
	char msg[96];
	int ret;

	snprintf(msg, sizeof(msg), "a %s source (env:VAR or file:/path) for %s", noun, what);
	if ((ret = policy_ld_string(l, n, msg, out)) != 0)
		return ret;
	if (secret_source_parse(*out, &src, &err) != 0)
		return policy_ld_error(l, n, "bad %s source for %s: %s", noun, what, err);
	ret = src.kind == SECRET_SRC_EXEC;
	secret_source_dispose(&src);
	if (ret)
		return policy_ld_error(l, n, "bad %s source for %s: expected env:VAR or file:/path (exec: is not "
		                       "supported here)", noun, what);
	return 0;
}

static int
parse_redis(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const redis_keys[] = {"url", "password", "timeout", "key_prefix"};
	static const struct policy_unit units[] = {{"ms", 1}, {"s", 1000}, {NULL, 0}};
	struct policy_state_redis *r = &cfg->redis;
	yaml_node_t *v[4];
	unsigned long x;
	size_t i;
	int ret;

	if ((ret = policy_ld_fields(l, map, "state.redis", "a map with url, password, timeout and key_prefix",
	                            redis_keys, 4, v, NULL)) != 0)
		return ret;
	if (v[0] == NULL)
		return policy_ld_error(l, map, "missing required key 'url' in state.redis");
	if ((ret = policy_ld_string(l, v[0], "\"redis://host:port/db\" or \"unix:/path?db=N\" for state.redis.url",
	                            &r->url)) != 0)
		return ret;
	if (strncmp(r->url, "redis://", 8) == 0)
		ret = redis_tcp(l, v[0], r->url, r);
	else if (strncmp(r->url, "unix:", 5) == 0)
		ret = redis_unix(l, v[0], r->url, r);
	else
		ret = policy_ld_error(l, v[0], "expected \"redis://host:port/db\" or \"unix:/path?db=N\" for state.redis.url "
		                      "(rediss:// is not supported: hiredis 0.14 has no TLS)");
	if (ret != 0)
		return ret;
	if (v[1] != NULL && (ret = source_spec(l, v[1], "state.redis.password", "password", &r->password)) != 0)
		return ret;
	if (v[2] != NULL) {
		if (policy_ld_scaled(v[2], units, REDIS_TIMEOUT_MAX_MS, &x) != 0 || x < 1)
			return policy_ld_error(l, v[2], "expected a duration for state.redis.timeout (\"50ms\", \"1s\"; 1ms to "
			                       "%lus)", REDIS_TIMEOUT_MAX_MS / 1000);
		r->timeout_ms = (unsigned)x;
	}
	if (v[3] != NULL) {
		free(r->key_prefix);
		r->key_prefix = NULL;
		if ((ret = policy_ld_string(l, v[3], "a string for state.redis.key_prefix", &r->key_prefix)) != 0)
			return ret;
		for (i = 0; r->key_prefix[i] != '\0'; i++)
			if ((unsigned char)r->key_prefix[i] <= 0x20 || (unsigned char)r->key_prefix[i] >= 0x7f)
				break;
		if (r->key_prefix[i] != '\0' || i > REDIS_PREFIX_MAX)
			return policy_ld_error(l, v[3], "expected at most %d printable characters without blanks for "
			                       "state.redis.key_prefix", REDIS_PREFIX_MAX);
	}
	return 0;
}

static int
scalar_eq(const yaml_node_t *n, const char *lit)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(lit) &&
	       memcmp(n->data.scalar.value, lit, n->data.scalar.length) == 0;
}

static int
parse_state(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const state_keys[] = {"backend", "dir", "redis", "gateway_id", "fleet_size", "on_error",
	                                         "local_share", "fleet_key"};
	struct policy_dec d;
	yaml_node_t *v[8];
	unsigned long x;
	int64_t share;
	int ret;

	if ((ret = policy_ld_fields(l, map, "state", "a map of state settings", state_keys, 8, v, NULL)) != 0)
		return ret;
	if (v[0] != NULL) {
		if (scalar_eq(v[0], "file"))
			cfg->state_backend = POLICY_STATE_FILE;
		else if (scalar_eq(v[0], "redis"))
			cfg->state_backend = POLICY_STATE_REDIS;
		else
			return policy_ld_error(l, v[0], "expected 'file' or 'redis' for state.backend");
	}
	if (v[1] != NULL && (ret = policy_state_dir_parse(l, v[1], "state.dir", cfg)) != 0)
		return ret;
	if (v[2] != NULL && (ret = parse_redis(l, v[2], cfg)) != 0)
		return ret;
	if (cfg->state_backend == POLICY_STATE_REDIS && v[2] == NULL)
		return policy_ld_error(l, map, "state.backend is redis but state.redis (its url) is missing");
	if (v[3] != NULL) {
		if (v[3]->type != YAML_SCALAR_NODE ||
		    policy_gateway_id_ok((const char *)v[3]->data.scalar.value, v[3]->data.scalar.length) != 0)
			return policy_ld_error(l, v[3], "expected 1 to %d letters, digits, '.', '_' or '-' for state.gateway_id",
			                       GATEWAY_ID_MAX);
		free(cfg->gateway_id);
		cfg->gateway_id = xstrndup((const char *)v[3]->data.scalar.value, v[3]->data.scalar.length);
	}
	if (v[4] != NULL) {
		if ((ret = policy_ld_uint(l, v[4], "state.fleet_size (the number of gateways)", 1, FLEET_SIZE_MAX, &x)) != 0)
			return ret;
		cfg->fleet_size = (unsigned)x;
	}
	if (v[5] != NULL) {
		if (scalar_eq(v[5], "deny"))
			cfg->state_on_error = POLICY_STATE_DENY;
		else if (scalar_eq(v[5], "local"))
			cfg->state_on_error = POLICY_STATE_LOCAL;
		else
			return policy_ld_error(l, v[5], "expected 'deny' or 'local' for state.on_error");
	}
	if (v[6] != NULL) {
		if (v[6]->type != YAML_SCALAR_NODE ||
		    policy_dec_parse((const char *)v[6]->data.scalar.value, v[6]->data.scalar.length, 0, &d) != 0 ||
		    policy_dec_amount(&d, &share) != 0 || share <= 0 || share > POLICY_AMOUNT_SCALE)
			return policy_ld_error(l, v[6], "expected a number above 0 and at most 1 for state.local_share "
			                       "(each gateway's share of a cap while the store is unreachable)");
		cfg->local_share = (uint32_t)share;
	}
	if (v[7] != NULL && (ret = source_spec(l, v[7], "state.fleet_key", "key", &cfg->fleet_key)) != 0)
		return ret;
	if (v[7] != NULL && cfg->state_backend != POLICY_STATE_REDIS)
		return policy_ld_error(l, v[7], "state.fleet_key is for state.backend: redis (approvals shared by a fleet)");
	return 0;
}

int
policy_state_parse(struct policy_ld *l, yaml_node_t *state, yaml_node_t *state_dir, struct policy_config *cfg)
{
	int ret;

	if (state_dir != NULL && state != NULL && state->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *pair;

		for (pair = state->data.mapping.pairs.start; pair < state->data.mapping.pairs.top; pair++) {
			yaml_node_t *k = policy_ld_node(l, pair->key);

			if (k != NULL && scalar_eq(k, "dir"))
				return policy_ld_error(l, state_dir, "state_dir and state.dir are both given: write only "
				                       "state.dir (state_dir is its older name)");
		}
	}
	if (state_dir != NULL && (ret = policy_state_dir_parse(l, state_dir, "state_dir", cfg)) != 0)
		return ret;
	if (state != NULL)
		return parse_state(l, state, cfg);
	return 0;
}
