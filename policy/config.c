/*
 * policy/config.c - the non-policy part of sluice.yaml (struct policy_config):
 * listen addresses, identities, upstream trust, audit, workers and limits.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/host.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "audit/writer.h"
#include "policy_int.h"

#define LEAF_CACHE_MAX 10000000ul
#define WORKERS_MAX 64ul            /* PROXY_MAX_WORKERS */
#define DURATION_MAX_MS 86400000ul   /* one day */
#define CONNS_PER_CLIENT_MAX 1048576ul
#define HEADER_COUNT_MAX 256ul       /* H1_MAX_HEADERS */
#define HEADER_BYTES_MIN 1024ul
#define HEADER_BYTES_MAX 1048576ul
#define REQUEST_LINE_MIN 256ul
#define SANDBOX_MEMORY_MIN_MIB 64      /* sandbox.qemu.memory bounds */
#define SANDBOX_MEMORY_MAX_MIB 65536
#define AUDIT_DURATION_MAX_MS (7ul * 86400000ul)  /* audit.rotate.every, checkpoint_interval: a week */
#define AUDIT_ROTATE_SIZE_MIN (64ul * 1024)
#define AUDIT_ROTATE_SIZE_MAX (1024ul * 1073741824ul)
#define AUDIT_QUEUE_MIN 16ul
#define AUDIT_QUEUE_MAX 16777216ul

void
policy_config_defaults(struct policy_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->user = xstrdup("nobody");
	cfg->leaf_cache = 10000;
	cfg->workers = 0;
	cfg->http2 = 1;
	cfg->limits.tls_handshake_ms = 10000;
	cfg->limits.request_head_ms = 10000;
	cfg->limits.idle_ms = 60000;
	cfg->limits.body_ms = 30000;
	cfg->limits.upstream_connect_ms = 10000;
	cfg->limits.drain_ms = 10000;
	cfg->limits.conns_per_client = 256;
	cfg->limits.header_count = 100;
	cfg->limits.header_bytes = 32768;
	cfg->limits.request_line_bytes = 8192;
	cfg->sandbox_backend = xstrdup("netns");
	cfg->sandbox_uid = 1000;
	cfg->qemu_memory_mib = 256;
	cfg->audit_fsync_ms = 1000;
	cfg->audit_checkpoint_ms = 10000;
	cfg->audit_queue = 65536;
	cfg->audit_syslog_address = xstrdup("local");
	policy_state_defaults(cfg);
	cfg->reload_watch = 1;
	cfg->proxy_clients = xcalloc(2, sizeof(*cfg->proxy_clients));
	cfg->nproxy_clients = 2;
	cfg->proxy_clients[0].family = AF_INET;
	cfg->proxy_clients[0].addr[0] = 127;
	cfg->proxy_clients[0].prefix = 8;
	cfg->proxy_clients[1].family = AF_INET6;
	cfg->proxy_clients[1].addr[15] = 1;
	cfg->proxy_clients[1].prefix = 128;
}

void
policy_config_free(struct policy_config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	free(cfg->listen_transparent);
	free(cfg->listen_proxy);
	free(cfg->listen_admin);
	free(cfg->listen_dns);
	free(cfg->proxy_clients);
	free(cfg->nat64_prefixes);
	free(cfg->user);
	free(cfg->ca_dir);
	free(cfg->ca_bundle);
	for (i = 0; i < cfg->nresolve; i++) {
		free(cfg->resolve[i].name);
		free(cfg->resolve[i].addr);
	}
	free(cfg->resolve);
	free(cfg->audit_file);
	free(cfg->audit_key_file);
	free(cfg->audit_checkpoint_file);
	free(cfg->audit_syslog_enterprise);
	free(cfg->audit_ocsf_file);
	free(cfg->audit_syslog_address);
	free(cfg->sandbox_backend);
	free(cfg->qemu_kernel);
	free(cfg->qemu_initrd);
	policy_state_free(cfg);
	free(cfg);
}

/* Reads a listen address; <unix_only> 1 for admin (must be "unix:"), 0 for IP listeners. */
static int
listen_addr(struct policy_ld *l, yaml_node_t *n, const char *key, int unix_only, char **out)
{
	struct netaddr_listen la;
	char what[64];
	int ret;

	snprintf(what, sizeof(what), "a listen address string for listen.%s", key);
	ret = policy_ld_string(l, n, what, out);
	if (ret != 0)
		return ret;
	if (unix_only && strncmp(*out, "unix:", 5) != 0)
		return policy_ld_error(l, n, "expected \"unix:/path\" for listen.%s", key);
	if (netaddr_listen_parse(*out, &la) != 0)
		return policy_ld_error(l, n, "bad listen address for listen.%s; expected %s", key,
		                       unix_only ? "\"unix:/path\"" : "\"host:port\" or \"[v6]:port\"");
	if (!unix_only && la.family == AF_UNIX)
		return policy_ld_error(l, n, "expected an IP address and port for listen.%s", key);
	return 0;
}

/*
 * A list of CIDR blocks at <seq> for <what> (<example> in messages) into *<out> and *<n> (xcalloc'd, owned by the
 * configuration); with <nat64>, each must be an IPv6 prefix of a length RFC 6052 allows.  0, or the error.
 */
static int
cidr_list(struct policy_ld *l, yaml_node_t *seq, const char *what, const char *example, int nat64,
          struct netaddr_cidr **out, size_t *n)
{
	yaml_node_item_t *it;
	char msg[128];
	size_t cap;
	int ret;

	if (seq->type != YAML_SEQUENCE_NODE)
		return policy_ld_error(l, seq, "expected a list of %s for %s", nat64 ? "IPv6 prefixes" : "CIDR blocks", what);
	cap = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (cap > 0)
		*out = xcalloc(cap, sizeof(**out));
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *c = policy_ld_node(l, *it);
		struct netaddr_cidr *p;
		char *s;

		if (c == NULL)
			continue;
		snprintf(msg, sizeof(msg), "a CIDR block (%s) in %s", example, what);
		if ((ret = policy_ld_string(l, c, msg, &s)) != 0)
			return ret;
		p = &(*out)[*n];
		ret = !nat64 || strchr(s, '/') != NULL ? netaddr_cidr_parse(s, p) : -1;
		free(s);
		if (nat64 && (ret != 0 || p->family != AF_INET6 || !netaddr_nat64_len_ok(p->prefix)))
			return policy_ld_error(l, c, "expected an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 in %s", what);
		if (ret != 0)
			return policy_ld_error(l, c, "bad CIDR block in %s", what);
		(*n)++;
	}
	return 0;
}

static int
parse_listen(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"transparent", "proxy", "admin", "dns", "proxy_clients", "http2"};
	yaml_node_t *v[6];
	int ret;

	ret = policy_ld_fields(l, map, "listen", "a map of listen addresses", keys, 6, v, NULL);
	if (ret != 0)
		return ret;
	if (v[5] != NULL && (ret = policy_ld_bool(l, v[5], "listen.http2", &cfg->http2)) != 0)
		return ret;
	if (v[0] != NULL && (ret = listen_addr(l, v[0], "transparent", 0, &cfg->listen_transparent)) != 0)
		return ret;
	if (v[1] != NULL && (ret = listen_addr(l, v[1], "proxy", 0, &cfg->listen_proxy)) != 0)
		return ret;
	if (v[2] != NULL && (ret = listen_addr(l, v[2], "admin", 1, &cfg->listen_admin)) != 0)
		return ret;
	if (v[3] != NULL && (ret = listen_addr(l, v[3], "dns", 0, &cfg->listen_dns)) != 0)
		return ret;
	if (v[4] == NULL)
		return 0;
	free(cfg->proxy_clients);
	cfg->proxy_clients = NULL;
	cfg->nproxy_clients = 0;
	return cidr_list(l, v[4], "listen.proxy_clients", "\"10.0.0.0/8\"", 0, &cfg->proxy_clients, &cfg->nproxy_clients);
}

static int
parse_resolve(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	yaml_node_pair_t *pair;
	size_t n;

	if (map->type != YAML_MAPPING_NODE)
		return policy_ld_error(l, map, "expected a map of host names to IP addresses for upstream.resolve");
	n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	if (n == 0)
		return 0;
	cfg->resolve = xcalloc(n, sizeof(*cfg->resolve));
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key), *v = policy_ld_node(l, pair->value);
		char host[HOST_BUF], addr[INET6_ADDRSTRLEN];
		unsigned char bin[16];
		const char *err = NULL;
		char *s;
		size_t i;
		int ret;

		if (k == NULL || v == NULL)
			return policy_ld_error(l, map, "bad entry in upstream.resolve");
		if (k->type != YAML_SCALAR_NODE ||
		    memchr(k->data.scalar.value, '\0', k->data.scalar.length) != NULL ||
		    host_canon((const char *)k->data.scalar.value, k->data.scalar.length, host, &err) != HOST_DNS)
			return policy_ld_error(l, k, "expected a DNS host name in upstream.resolve%s%s",
			                       err != NULL ? ": " : "", err != NULL ? err : "");
		for (i = 0; i < cfg->nresolve; i++)
			if (strcmp(cfg->resolve[i].name, host) == 0)
				return policy_ld_error(l, k, "duplicate host '%s' in upstream.resolve", host);
		ret = policy_ld_string(l, v, "an IP address in upstream.resolve", &s);
		if (ret != 0)
			return ret;
		if (inet_pton(AF_INET, s, bin) == 1)
			ret = inet_ntop(AF_INET, bin, addr, sizeof(addr)) != NULL ? 0 : -1;
		else if (inet_pton(AF_INET6, s, bin) == 1)
			ret = inet_ntop(AF_INET6, bin, addr, sizeof(addr)) != NULL ? 0 : -1;
		else
			ret = -1;
		free(s);
		if (ret != 0)
			return policy_ld_error(l, v, "expected an IPv4 or IPv6 address in upstream.resolve");
		cfg->resolve[cfg->nresolve].name = xstrdup(host);
		cfg->resolve[cfg->nresolve].addr = xstrdup(addr);
		cfg->nresolve++;
	}
	return 0;
}

static int
parse_upstream(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"ca_bundle", "resolve", "nat64_prefixes"};
	yaml_node_t *v[3];
	int ret;

	ret = policy_ld_fields(l, map, "upstream", "a map of upstream settings", keys, 3, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL &&
	    (ret = policy_ld_string(l, v[0], "a file name for upstream.ca_bundle", &cfg->ca_bundle)) != 0)
		return ret;
	if (v[2] != NULL && (ret = cidr_list(l, v[2], "upstream.nat64_prefixes", "\"64:ff9b:1::/48\"", 1,
	                                     &cfg->nat64_prefixes, &cfg->nnat64_prefixes)) != 0)
		return ret;
	if (v[1] != NULL)
		return parse_resolve(l, v[1], cfg);
	return 0;
}

/* An audit duration: "<n>ms", "<n>s", "<n>m", "<n>h", "<n>d" or integer seconds, <min>..<max> ms. */
static int
audit_duration(struct policy_ld *l, yaml_node_t *n, const char *key, unsigned long min, unsigned long max,
               unsigned *out)
{
	static const struct policy_unit units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000},
	                                          {"h", 3600000}, {"d", 86400000}, {NULL, 0}};
	unsigned long x;

	if (policy_ld_scaled(n, units, max, &x) != 0 || x < min)
		return policy_ld_error(l, n, "expected a duration for audit.%s (\"500ms\", \"10s\", \"5m\", \"24h\"; %lums to %lus)",
		                       key, min, max / 1000);
	*out = (unsigned)x;
	return 0;
}

static int
scalar_is(const yaml_node_t *n, const char *lit)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(lit) &&
	       memcmp(n->data.scalar.value, lit, strlen(lit)) == 0;
}

static int
parse_audit_rotate(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"size", "every"};
	static const struct policy_unit sizes[] = {{"", 1}, {"K", 1024}, {"KiB", 1024}, {"M", 1048576},
	                                          {"MiB", 1048576}, {"G", 1073741824}, {"GiB", 1073741824},
	                                          {NULL, 0}};
	yaml_node_t *v[2];
	unsigned long x;
	int ret;

	ret = policy_ld_fields(l, map, "audit.rotate", "a map with size and/or every", keys, 2, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL) {
		if (policy_ld_scaled(v[0], sizes, AUDIT_ROTATE_SIZE_MAX, &x) != 0 || x < AUDIT_ROTATE_SIZE_MIN)
			return policy_ld_error(l, v[0], "expected a size for audit.rotate.size (\"100M\", \"1G\"; 64K to 1024G)");
		cfg->audit_rotate_size = x;
	}
	if (v[1] != NULL)
		return audit_duration(l, v[1], "rotate.every", 1000, AUDIT_DURATION_MAX_MS, &cfg->audit_rotate_ms);
	return 0;
}

static int
parse_audit_ocsf(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"file"};
	yaml_node_t *v[1];
	int ret;

	ret = policy_ld_fields(l, map, "audit.ocsf", "a map of OCSF export settings", keys, 1, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL) {
		free(cfg->audit_ocsf_file);
		cfg->audit_ocsf_file = NULL;
		return policy_ld_string(l, v[0], "a file name for audit.ocsf.file", &cfg->audit_ocsf_file);
	}
	return 0;
}

static int
parse_audit_syslog(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"enabled", "address", "format", "enterprise"};
	yaml_node_t *v[4];
	int ret;

	ret = policy_ld_fields(l, map, "audit.syslog", "a map of syslog export settings", keys, 4, v, NULL);
	if (ret != 0)
		return ret;
	if (v[1] != NULL && v[0] == NULL)
		cfg->audit_syslog = 1;  /* an address alone turns the copy on; enabled: false still turns it off */
	if (v[0] != NULL && (ret = policy_ld_bool(l, v[0], "audit.syslog.enabled", &cfg->audit_syslog)) != 0)
		return ret;
	if (v[3] != NULL) {
		free(cfg->audit_syslog_enterprise);
		cfg->audit_syslog_enterprise = NULL;
		if ((ret = policy_ld_string(l, v[3], "an enterprise number for audit.syslog.enterprise",
		                            &cfg->audit_syslog_enterprise)) != 0)
			return ret;
		if (audit_sd_enterprise_ok(cfg->audit_syslog_enterprise) != 0)
			return policy_ld_error(l, v[3], "expected an enterprise number (\"32473\", \"32473.1\"; at most 25 "
			                                "characters) for audit.syslog.enterprise");
	}
	if (v[1] != NULL) {
		free(cfg->audit_syslog_address);
		cfg->audit_syslog_address = NULL;
		ret = policy_ld_string(l, v[1], "\"local\", \"udp://host:port\" or \"tcp://host:port\" for audit.syslog.address",
		                       &cfg->audit_syslog_address);
		if (ret != 0)
			return ret;
		if (strcmp(cfg->audit_syslog_address, "local") != 0 && strncmp(cfg->audit_syslog_address, "udp://", 6) != 0 &&
		    strncmp(cfg->audit_syslog_address, "tcp://", 6) != 0 &&
		    (strncmp(cfg->audit_syslog_address, "unix:/", 6) != 0 || strlen(cfg->audit_syslog_address) > 100))
			return policy_ld_error(l, v[1], "expected \"local\", \"unix:/path\", \"udp://host:port\" or "
			                                "\"tcp://host:port\" for audit.syslog.address");
	}
	if (v[2] != NULL && !scalar_is(v[2], "rfc5424"))
		return policy_ld_error(l, v[2], "expected rfc5424 for audit.syslog.format (the only format)");
	return 0;
}

static int
parse_audit(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"file", "log_query", "key_file", "fsync", "checkpoint_interval",
	                                   "checkpoint_file", "rotate", "syslog", "queue", "ocsf"};
	yaml_node_t *v[10];
	unsigned long x;
	int ret;

	ret = policy_ld_fields(l, map, "audit", "a map of audit settings", keys, 10, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL && (ret = policy_ld_string(l, v[0], "a file name for audit.file", &cfg->audit_file)) != 0)
		return ret;
	if (v[1] != NULL && (ret = policy_ld_bool(l, v[1], "audit.log_query", &cfg->audit_log_query)) != 0)
		return ret;
	if (v[2] != NULL && (ret = policy_ld_string(l, v[2], "a file name for audit.key_file", &cfg->audit_key_file)) != 0)
		return ret;
	if (v[3] != NULL) {
		if (scalar_is(v[3], "record"))
			cfg->audit_fsync_ms = 0;
		else if ((ret = audit_duration(l, v[3], "fsync (or record: after every write)", 1, 3600000,
		                               &cfg->audit_fsync_ms)) != 0)
			return ret;
	}
	if (v[4] != NULL &&
	    (ret = audit_duration(l, v[4], "checkpoint_interval", 100, AUDIT_DURATION_MAX_MS, &cfg->audit_checkpoint_ms)) != 0)
		return ret;
	if (v[5] != NULL &&
	    (ret = policy_ld_string(l, v[5], "a file name for audit.checkpoint_file", &cfg->audit_checkpoint_file)) != 0)
		return ret;
	if (v[6] != NULL && (ret = parse_audit_rotate(l, v[6], cfg)) != 0)
		return ret;
	if (v[7] != NULL && (ret = parse_audit_syslog(l, v[7], cfg)) != 0)
		return ret;
	if (v[8] != NULL) {
		if ((ret = policy_ld_uint(l, v[8], "audit.queue", AUDIT_QUEUE_MIN, AUDIT_QUEUE_MAX, &x)) != 0)
			return ret;
		cfg->audit_queue = (unsigned)x;
	}
	if (v[9] != NULL && (ret = parse_audit_ocsf(l, v[9], cfg)) != 0)
		return ret;
	return 0;
}

/* A duration: integer seconds, or "<n>ms", "<n>s", "<n>m". */
static int
duration(struct policy_ld *l, yaml_node_t *n, const char *key, unsigned long min, unsigned *out)
{
	static const struct policy_unit units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {NULL, 0}};
	unsigned long x;

	if (policy_ld_scaled(n, units, DURATION_MAX_MS, &x) != 0 || x < min)
		return policy_ld_error(l, n,
		                       "expected a duration for limits.%s (seconds, or \"500ms\", \"10s\", \"2m\"; %lums to %lus)",
		                       key, min, DURATION_MAX_MS / 1000);
	*out = (unsigned)x;
	return 0;
}

static int
parse_limits(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {
		"tls_handshake", "request_head", "idle", "body", "upstream_connect", "drain",
		"conns_per_client", "header_count", "header_bytes", "request_line",
	};
	struct policy_limits *lim = &cfg->limits;
	unsigned *durs[6] = {&lim->tls_handshake_ms, &lim->request_head_ms, &lim->idle_ms,
	                     &lim->body_ms, &lim->upstream_connect_ms, &lim->drain_ms};
	yaml_node_t *v[10];
	unsigned long x;
	size_t i;
	int ret;

	ret = policy_ld_fields(l, map, "limits", "a map of limits", keys, 10, v, NULL);
	if (ret != 0)
		return ret;
	for (i = 0; i < 6; i++) {
		/* drain may be 0: stop at once */
		if (v[i] != NULL && (ret = duration(l, v[i], keys[i], i == 5 ? 0 : 1, durs[i])) != 0)
			return ret;
	}
	if (v[6] != NULL) {
		if ((ret = policy_ld_uint(l, v[6], "limits.conns_per_client", 1, CONNS_PER_CLIENT_MAX, &x)) != 0)
			return ret;
		lim->conns_per_client = (unsigned)x;
	}
	if (v[7] != NULL) {
		if ((ret = policy_ld_uint(l, v[7], "limits.header_count", 1, HEADER_COUNT_MAX, &x)) != 0)
			return ret;
		lim->header_count = (unsigned)x;
	}
	if (v[8] != NULL) {
		ret = policy_ld_uint(l, v[8], "limits.header_bytes", HEADER_BYTES_MIN, HEADER_BYTES_MAX, &x);
		if (ret != 0)
			return ret;
		lim->header_bytes = (unsigned)x;
	}
	if (v[9] != NULL) {
		ret = policy_ld_uint(l, v[9], "limits.request_line (at most limits.header_bytes)",
		                     REQUEST_LINE_MIN, lim->header_bytes, &x);
		if (ret != 0)
			return ret;
		lim->request_line_bytes = (unsigned)x;
	} else if (lim->request_line_bytes > lim->header_bytes) {
		lim->request_line_bytes = lim->header_bytes;
	}
	return 0;
}

/* Value of <key> in the already validated map <map>, or NULL. */
static yaml_node_t *
get(struct policy_ld *l, yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *pair;

	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = policy_ld_node(l, pair->key);

		if (k != NULL && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
		    memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
			return policy_ld_node(l, pair->value);
	}
	return NULL;
}

/* An absolute path without control characters, for sandbox.qemu.<key>. */
static int
abs_path(struct policy_ld *l, yaml_node_t *n, const char *key, char **out)
{
	char what[64];
	size_t i;
	int ret;

	snprintf(what, sizeof(what), "an absolute path for sandbox.qemu.%s", key);
	if ((ret = policy_ld_string(l, n, what, out)) != 0)
		return ret;
	for (i = 0; (*out)[i] != '\0'; i++)
		if ((unsigned char)(*out)[i] < 0x20 || (*out)[i] == 0x7f)
			break;
	if ((*out)[0] != '/' || (*out)[i] != '\0')
		return policy_ld_error(l, n, "expected %s", what);
	return 0;
}

static int
parse_qemu(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"kernel", "initrd", "accel", "memory"};
	static const struct policy_unit mib[] = {{"M", 1}, {"MiB", 1}, {"G", 1024}, {"GiB", 1024}, {NULL, 0}};
	yaml_node_t *v[4];
	unsigned long x;
	int ret;

	ret = policy_ld_fields(l, map, "sandbox.qemu", "a map of QEMU settings", keys, 4, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL && (ret = abs_path(l, v[0], "kernel", &cfg->qemu_kernel)) != 0)
		return ret;
	if (v[1] != NULL && (ret = abs_path(l, v[1], "initrd", &cfg->qemu_initrd)) != 0)
		return ret;
	if (v[2] != NULL) {
		if (v[2]->type == YAML_SCALAR_NODE && v[2]->data.scalar.length == 3 &&
		    memcmp(v[2]->data.scalar.value, "kvm", 3) == 0)
			cfg->qemu_kvm = 1;
		else if (v[2]->type == YAML_SCALAR_NODE && v[2]->data.scalar.length == 3 &&
		         memcmp(v[2]->data.scalar.value, "tcg", 3) == 0)
			cfg->qemu_kvm = 0;
		else
			return policy_ld_error(l, v[2], "expected 'tcg' or 'kvm' for sandbox.qemu.accel");
	}
	if (v[3] != NULL) {
		if (policy_ld_scaled(v[3], mib, SANDBOX_MEMORY_MAX_MIB, &x) != 0 || x < SANDBOX_MEMORY_MIN_MIB)
			return policy_ld_error(l, v[3], "expected a size for sandbox.qemu.memory (\"256M\", \"1G\"; %dM to %dG)",
			                       SANDBOX_MEMORY_MIN_MIB, SANDBOX_MEMORY_MAX_MIB / 1024);
		cfg->qemu_memory_mib = (unsigned)x;
	}
	return 0;
}

static int
parse_sandbox(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"backend", "uid", "qemu"};
	static const char *const backends[] = {"netns", "qemu", "firecracker"};
	yaml_node_t *v[3];
	unsigned long x;
	size_t i;
	int ret;

	ret = policy_ld_fields(l, map, "sandbox", "a map of sandbox settings", keys, 3, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL) {
		for (i = 0; i < 3; i++)
			if (v[0]->type == YAML_SCALAR_NODE && v[0]->data.scalar.length == strlen(backends[i]) &&
			    memcmp(v[0]->data.scalar.value, backends[i], strlen(backends[i])) == 0)
				break;
		if (i == 3)
			return policy_ld_error(l, v[0], "expected 'netns', 'qemu' or 'firecracker' for sandbox.backend");
		free(cfg->sandbox_backend);
		cfg->sandbox_backend = xstrdup(backends[i]);
	}
	if (v[1] != NULL) {
		/* 0 is root: a sandbox never runs as root */
		if ((ret = policy_ld_uint(l, v[1], "sandbox.uid (never 0)", 1, 4294967294ul, &x)) != 0)
			return ret;
		cfg->sandbox_uid = (unsigned)x;
	}
	if (v[2] != NULL)
		return parse_qemu(l, v[2], cfg);
	return 0;
}

static int
parse_reload(struct policy_ld *l, yaml_node_t *map, struct policy_config *cfg)
{
	static const char *const keys[] = {"watch"};
	yaml_node_t *v[1];
	int ret;

	ret = policy_ld_fields(l, map, "reload", "a map of reload settings", keys, 1, v, NULL);
	if (ret != 0)
		return ret;
	if (v[0] != NULL && (ret = policy_ld_bool(l, v[0], "reload.watch", &cfg->reload_watch)) != 0)
		return ret;
	return 0;
}

int
policy_config_parse(struct policy_ld *l, yaml_node_t *root, struct policy_config *cfg)
{
	yaml_node_t *n;
	unsigned long x;
	int ret;

	policy_config_defaults(cfg);
	if ((n = get(l, root, "listen")) != NULL && (ret = parse_listen(l, n, cfg)) != 0)
		return ret;
	if ((n = get(l, root, "user")) != NULL) {
		free(cfg->user);
		cfg->user = NULL;
		if ((ret = policy_ld_string(l, n, "a user name for user", &cfg->user)) != 0)
			return ret;
	}
	n = get(l, root, "ca");
	if (n == NULL)
		return policy_ld_error(l, root, "missing required key 'ca' (the CA directory)");
	if ((ret = policy_ld_string(l, n, "a directory name for ca", &cfg->ca_dir)) != 0)
		return ret;
	if ((n = get(l, root, "leaf_cache")) != NULL) {
		if ((ret = policy_ld_uint(l, n, "leaf_cache", 1, LEAF_CACHE_MAX, &x)) != 0)
			return ret;
		cfg->leaf_cache = x;
	}
	if ((n = get(l, root, "upstream")) != NULL && (ret = parse_upstream(l, n, cfg)) != 0)
		return ret;
	if ((n = get(l, root, "audit")) != NULL && (ret = parse_audit(l, n, cfg)) != 0)
		return ret;
	if ((n = get(l, root, "workers")) != NULL) {
		if ((ret = policy_ld_uint(l, n, "workers", 0, WORKERS_MAX, &x)) != 0)
			return ret;
		cfg->workers = (unsigned)x;
	}
	if ((n = get(l, root, "limits")) != NULL && (ret = parse_limits(l, n, cfg)) != 0)
		return ret;
	if ((n = get(l, root, "sandbox")) != NULL && (ret = parse_sandbox(l, n, cfg)) != 0)
		return ret;
	if ((ret = policy_state_parse(l, get(l, root, "state"), get(l, root, "state_dir"), cfg)) != 0)
		return ret;
	if ((n = get(l, root, "reload")) != NULL && (ret = parse_reload(l, n, cfg)) != 0)
		return ret;
	return 0;
}

void
policy_audit_opts(const struct policy_config *cfg, struct audit_opts *out)
{
	*out = (struct audit_opts){
		.file = cfg->audit_file,
		.key_file = cfg->audit_key_file,
		.checkpoint_file = cfg->audit_checkpoint_file,
		.fsync_ms = cfg->audit_fsync_ms,
		.checkpoint_ms = cfg->audit_checkpoint_ms,
		.rotate_size = cfg->audit_rotate_size,
		.rotate_ms = cfg->audit_rotate_ms,
		.syslog = cfg->audit_syslog,
		.syslog_address = cfg->audit_syslog_address,
		.syslog_enterprise = cfg->audit_syslog_enterprise,
		.ocsf_file = cfg->audit_ocsf_file,
		.queue = cfg->audit_queue,
	};
}
