/*
 * proxy/store/store_config.c - a store's options from the loaded state:
 * section (policy.h's struct policy_state_redis), the password read from
 * its source as secrets are.
 */
#include <string.h>

#include "proxy/store/fleet.h"
#include "proxy/store/store.h"
#include "secrets/secrets.h"

/* The secret named by the source <spec> (env:VAR or file:/path) into *<out> (taken): 0, or SLUICE_E* with *<err>. */
static int
source_read(const char *spec, struct secret_buf **out, const char **err)
{
	struct secret_source src;
	int ret;

	if ((ret = secret_source_parse(spec, &src, err)) != 0)
		return ret;
	ret = secret_fetch(&src, 0, out, err);
	secret_source_dispose(&src);
	return ret;
}

int
store_opts_from_config(const struct policy_config *cfg, struct store_opts *o, struct secret_buf **pw,
                       const char **err)
{
	const struct policy_state_redis *r = &cfg->redis;
	int ret;

	memset(o, 0, sizeof(*o));
	*pw = NULL;
	if (r->url == NULL) {
		*err = "state.redis.url is not set";
		return SLUICE_EINVAL;
	}
	o->host = r->host;
	o->port = r->port;
	o->unix_path = r->unix_path;
	o->db = r->db;
	o->timeout_ms = r->timeout_ms;
	o->key_prefix = r->key_prefix;
	if (r->password == NULL)
		return 0;
	if ((ret = source_read(r->password, pw, err)) != 0)
		return ret;
	o->password = *pw;
	return 0;
}

int
store_fleet_key_from_config(const struct policy_config *cfg, struct secret_buf **key, const char **err)
{
	int ret;

	*key = NULL;
	if (cfg->fleet_key == NULL)
		return 0;
	if ((ret = source_read(cfg->fleet_key, key, err)) != 0)
		return ret;
	if ((*key)->len < FLEET_KEY_MIN) {
		secret_buf_free(*key);
		*key = NULL;
		*err = "state.fleet_key is shorter than 32 bytes";
		return SLUICE_EINVAL;
	}
	return 0;
}
