/*
 * cli/approvals.c - `sluice approvals list|approve|reject -c FILE [--json] [ID]`:
 * the requests the running gateway holds for an operator (GET /approvals on
 * its admin socket), and deciding one (POST /approvals/<id>/approve|reject).
 *
 * What the gateway lists came from a sandbox: every value is printed
 * terminal-safe.  The gateway's JSON escapes each byte >= 0x80 as \u00XX, so
 * each code point read back up to U+00FF is one byte of the request; bytes
 * outside printable ASCII are printed as \xNN (and a backslash as \\), so no
 * escape sequence, control byte, bidi override or look-alike reaches the
 * terminal, and what is shown is exactly what will be sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "common/admin_client.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "proxy/judge/approvals.h"
#include "sandbox-glue/run.h"

#define EXIT_USAGE 2
#define REPLY_MAX (64u * 1024 * 1024)   /* the gateway's answer, head and body: 1024 large approvals fit */

static const char usage_approvals[] =
	"usage: sluice approvals list -c FILE [--json]\n"
	"       sluice approvals approve -c FILE [--json] ID\n"
	"       sluice approvals reject -c FILE [--json] ID\n"
	"Requests a `hold` rule keeps waiting, at the gateway running for FILE (its listen.admin socket).\n"
	"list: id, age, time left, sandbox, method, host, rule and path, then the fields the rule read and the\n"
	"SHA-256 of the body held (bytes outside printable ASCII are shown as \\xNN). approve / reject: decide\n"
	"one; the gateway audits who decided. Exit 1 when ID is unknown or already decided.\n"
	"With state.backend: redis and state.fleet_key, the list also shows the other gateways' holds (a line\n"
	"\"gateway = NAME (STATE)\" below each; STATE pending, expired, gateway_gone or unverified), and approve /\n"
	"reject of one of them sends the signed decision to its gateway (exit 0; 503: the store is unreachable).\n";

/* One request to the admin socket <sock>: 0 with *<status> and <body> (the caller frees it), or -1 (stderr says why). */
static int
admin_call(const char *sock, const char *method, const char *path, int *status, char **body)
{
	char err[512];

	if (admin_client_request(sock, method, path, NULL, REPLY_MAX, status, body, err, sizeof(err)) != 0) {
		fprintf(stderr, "sluice approvals: the gateway's admin socket %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * <s> (UTF-8 from the gateway's JSON) for a terminal: printable ASCII as
 * is, a backslash as \\, every other byte as \xNN; a code point above U+00FF
 * (never from this gateway) as \u{N}.  Returns an xmalloc'd string.
 */
static char *
safe(const char *s)
{
	size_t len = s != NULL ? strlen(s) : 0, i, o = 0;
	char *out = xmalloc(len * 6 + 2);

	if (s == NULL) {
		out[0] = '-';
		out[1] = '\0';
		return out;
	}
	for (i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		unsigned long cp;
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			out[o++] = (char)c;
			i++;
			continue;
		}
		if (c == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
			i++;
			continue;
		}
		/* a UTF-8 sequence (jansson hands out valid UTF-8 only); a stray byte stands for itself */
		n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (n == 1 || i + n > len) {
			cp = c;
			n = 1;
		} else {
			cp = c & (0x7fu >> n);
			for (size_t k = 1; k < n; k++)
				cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3fu);
		}
		if (cp <= 0xff)
			o += (size_t)snprintf(out + o, 5, "\\x%02lx", cp);
		else
			o += (size_t)snprintf(out + o, 6 * n + 1, "\\u{%lx}", cp);
		i += n;
	}
	out[o] = '\0';
	return out;
}

static void
duration(long long ms, char *out, size_t cap)
{
	long long s = ms / 1000;

	if (s < 60)
		snprintf(out, cap, "%llds", s);
	else if (s < 3600)
		snprintf(out, cap, "%lldm%02llds", s / 60, s % 60);
	else
		snprintf(out, cap, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
}

enum { COL_ID, COL_AGE, COL_LEFT, COL_SANDBOX, COL_METHOD, COL_HOST, COL_RULE, COL_PATH, NCOLS };

static const char *const col_names[NCOLS] = {"ID", "AGE", "LEFT", "SANDBOX", "METHOD", "HOST", "RULE", "PATH"};
static const char *const col_keys[NCOLS] = {"id", NULL, NULL, "sandbox", "method", "host", "rule", "path"};

/* One line of the table: every column padded to its width but the last (PATH: never padded, never cut). */
static void
print_row(const char *const *cells, const size_t *w)
{
	size_t c;

	for (c = 0; c + 1 < NCOLS; c++)
		printf("%-*s  ", (int)w[c], cells[c]);
	printf("%s\n", cells[NCOLS - 1]);
}

static void
print_table(json_t *list)
{
	size_t n = json_array_size(list), i, c, w[NCOLS], k;
	char ***cells = xcalloc(n > 0 ? n : 1, sizeof(*cells)), tbuf[32];
	json_t *o, *f;

	if (n == 0) {
		printf("no requests are waiting for approval\n");
		free(cells);
		return;
	}
	for (c = 0; c < NCOLS; c++)
		w[c] = strlen(col_names[c]);
	json_array_foreach(list, i, o) {
		cells[i] = xcalloc(NCOLS, sizeof(char *));
		for (c = 0; c < NCOLS; c++) {
			if (col_keys[c] != NULL) {
				cells[i][c] = safe(json_string_value(json_object_get(o, col_keys[c])));
			} else {
				duration(json_integer_value(json_object_get(o, c == COL_AGE ? "age_ms" : "timeout_left_ms")),
				         tbuf, sizeof(tbuf));
				cells[i][c] = xstrdup(tbuf);
			}
			if (strlen(cells[i][c]) > w[c])
				w[c] = strlen(cells[i][c]);
		}
	}
	print_row(col_names, w);
	json_array_foreach(list, i, o) {
		print_row((const char *const *)cells[i], w);
		if (json_object_get(o, "state") != NULL) {
			/* another gateway's hold (state.backend: redis): where it waits, and whether it can be decided */
			char *g = safe(json_string_value(json_object_get(o, "gateway")));
			char *st = safe(json_string_value(json_object_get(o, "state")));

			printf("    gateway = %s (%s)\n", g, st);
			free(g);
			free(st);
		}
		json_array_foreach(json_object_get(o, "fields"), k, f) {
			char *pl = safe(json_string_value(json_object_get(f, "place")));
			char *v = safe(json_string_value(json_object_get(f, "value")));

			printf("    %s = %s\n", pl, v);
			free(pl);
			free(v);
		}
		{
			char *sha = safe(json_string_value(json_object_get(o, "body_sha256")));

			printf("    body sha256 = %s\n", sha);
			free(sha);
		}
		for (c = 0; c < NCOLS; c++)
			free(cells[i][c]);
		free(cells[i]);
	}
	free(cells);
}

int
cmd_approvals(int argc, char **argv)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct netaddr_listen la;
	char errbuf[512], path[64];
	const char *cfgpath = NULL, *verb, *id = NULL;
	char *body = NULL;
	json_t *j = NULL;
	int status = 0, as_json = 0, ret = 1, k;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage_approvals, stdout);
		return 0;
	}
	if (argc < 2 || (strcmp(argv[1], "list") != 0 && strcmp(argv[1], "approve") != 0 &&
	                 strcmp(argv[1], "reject") != 0)) {
		fputs(usage_approvals, stderr);
		return EXIT_USAGE;
	}
	verb = argv[1];
	for (k = 2; k < argc; k++) {
		if ((strcmp(argv[k], "-c") == 0 || strcmp(argv[k], "--config") == 0) && k + 1 < argc) {
			cfgpath = argv[++k];
		} else if (strcmp(argv[k], "--json") == 0) {
			as_json = 1;
		} else if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
			fputs(usage_approvals, stdout);
			return 0;
		} else if (argv[k][0] != '-' && id == NULL && strcmp(verb, "list") != 0) {
			id = argv[k];
		} else {
			fputs(usage_approvals, stderr);
			return EXIT_USAGE;
		}
	}
	if (cfgpath == NULL || (strcmp(verb, "list") != 0 && id == NULL)) {
		fputs(usage_approvals, stderr);
		return EXIT_USAGE;
	}
	if (id != NULL && !approvals_id_valid(id)) {
		char *shown = safe(id);

		/* never put it in a request line: it is not an id, so no approval has it */
		fprintf(stderr, "sluice approvals: no pending approval %s (an id is %d hex digits)\n", shown,
		        APPROVALS_ID_LEN);
		free(shown);
		return 1;
	}
	if (policy_load_file(cfgpath, &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "sluice approvals: %s\n", errbuf);
		return 1;
	}
	if (cfg->listen_admin == NULL || netaddr_listen_parse(cfg->listen_admin, &la) != 0 || la.family != AF_UNIX) {
		fprintf(stderr, "sluice approvals: %s has no listen.admin unix socket\n", cfgpath);
		goto out;
	}
	if (id == NULL) {
		if (admin_call(la.path, "GET", "/approvals", &status, &body) != 0)
			goto out;
		if (status != 200 || (j = json_loads(body, JSON_ALLOW_NUL, NULL)) == NULL || !json_is_array(j)) {
			fprintf(stderr, "sluice approvals: unexpected answer from the gateway (HTTP %d)\n", status);
			goto out;
		}
		if (as_json)
			fputs(body, stdout);   /* the gateway's JSON is ASCII: every other byte is \u00XX */
		else
			print_table(j);
		ret = 0;
		goto out;
	}
	snprintf(path, sizeof(path), "/approvals/%s/%s", id, verb);
	if (admin_call(la.path, "POST", path, &status, &body) != 0)
		goto out;
	if (status == 204) {
		if (as_json)
			printf("{\"id\":\"%s\",\"decision\":\"%s\"}\n", id, verb[0] == 'a' ? "approved" : "rejected");
		else
			printf("%s %s\n", verb[0] == 'a' ? "approved" : "rejected", id);
		ret = 0;
	} else if (status == 202) {
		/* another gateway's hold: the decision took it (the first fleet-wide), signed and sent to that gateway */
		json_t *a = json_loads(body, 0, NULL);
		char *g = safe(json_string_value(json_object_get(a, "gateway")));

		if (as_json)
			printf("{\"id\":\"%s\",\"decision\":\"%s\",\"gateway\":\"%s\"}\n", id,
			       verb[0] == 'a' ? "approved" : "rejected", g);
		else
			printf("%s %s (held by gateway %s: the signed decision was sent to it)\n",
			       verb[0] == 'a' ? "approved" : "rejected", id, g);
		free(g);
		json_decref(a);
		ret = 0;
	} else if (status == 404) {
		fprintf(stderr, "sluice approvals: no pending approval %s (unknown, already decided, or timed out)\n", id);
	} else {
		char *shown = safe(body);

		fprintf(stderr, "sluice approvals: the gateway answered HTTP %d: %.300s\n", status, shown);
		free(shown);
	}
out:
	json_decref(j);
	free(body);
	policy_unref(pol);
	policy_config_free(cfg);
	return ret;
}
