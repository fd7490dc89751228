/*
 * cli/sandboxes.c - `sluice sandboxes -c FILE`: the sandboxes registered with
 * the running gateway (GET /sandboxes on its admin socket), one per line.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include "common/admin_client.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "sandbox-glue/run.h"

#define EXIT_USAGE 2
#define LIST_MAX (1024 * 1024)  /* the listing of SBXREG_MAX sandboxes fits */

static const char usage_sandboxes[] =
	"usage: sluice sandboxes -c FILE [--json]\n"
	"Lists the sandboxes registered with the gateway running for FILE (its listen.admin socket):\n"
	"name, backend, addresses, start time, requests and denied requests. --json prints the gateway's answer.\n";

static void
print_row(json_t *o)
{
	json_t *addrs = json_object_get(o, "addresses"), *v;
	time_t started = (time_t)json_integer_value(json_object_get(o, "started"));
	char when[32] = "-", list[512] = "";
	size_t i, len = 0;
	struct tm tm;

	if (gmtime_r(&started, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_array_foreach(addrs, i, v) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", json_string_value(v));

		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break;
		len += (size_t)n;
	}
	printf("%-24s %-12s %-40s %-20s %8lld %8lld\n", json_string_value(json_object_get(o, "name")),
	       json_string_value(json_object_get(o, "backend")), list, when,
	       (long long)json_integer_value(json_object_get(o, "requests")),
	       (long long)json_integer_value(json_object_get(o, "denied")));
}

int
cmd_sandboxes(int argc, char **argv)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct netaddr_listen la;
	static char resp[LIST_MAX];
	char errbuf[512];
	const char *path = NULL;
	json_t *j = NULL, *o;
	size_t i;
	int status = 0, as_json = 0, ret = 1, k;

	for (k = 1; k < argc; k++) {
		if ((strcmp(argv[k], "-c") == 0 || strcmp(argv[k], "--config") == 0) && k + 1 < argc)
			path = argv[++k];
		else if (strcmp(argv[k], "--json") == 0)
			as_json = 1;
		else if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
			fputs(usage_sandboxes, stdout);
			return 0;
		} else {
			fputs(usage_sandboxes, stderr);
			return EXIT_USAGE;
		}
	}
	if (path == NULL) {
		fputs(usage_sandboxes, stderr);
		return EXIT_USAGE;
	}
	if (policy_load_file(path, &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "sluice sandboxes: %s\n", errbuf);
		return 1;
	}
	if (cfg->listen_admin == NULL || netaddr_listen_parse(cfg->listen_admin, &la) != 0 || la.family != AF_UNIX) {
		fprintf(stderr, "sluice sandboxes: %s has no listen.admin unix socket\n", path);
		goto out;
	}
	if (admin_client_call(la.path, "GET", "/sandboxes", NULL, &status, resp, sizeof(resp), errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "sluice sandboxes: the gateway's admin socket %s: %s\n", la.path, errbuf);
		goto out;
	}
	if (status != 200 || (j = json_loads(resp, 0, NULL)) == NULL || !json_is_array(j)) {
		fprintf(stderr, "sluice sandboxes: unexpected answer from the gateway (HTTP %d)\n", status);
		goto out;
	}
	if (as_json) {
		fputs(resp, stdout);
	} else {
		printf("%-24s %-12s %-40s %-20s %8s %8s\n", "NAME", "BACKEND", "ADDRESSES", "STARTED", "REQUESTS", "DENIED");
		json_array_foreach(j, i, o)
			print_row(o);
	}
	ret = 0;
out:
	json_decref(j);
	policy_unref(pol);
	policy_config_free(cfg);
	return ret;
}
