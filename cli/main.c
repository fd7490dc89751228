/*
 * cli/main.c - the one command, `sluice`, and its subcommands.
 *
 * Exit status: 0 success, 1 the thing was refused or failed, 2 bad usage.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <event2/thread.h>
#include "common/log.h"
#include "common/sluice.h"
#include "ca/ca.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "proxy/net/tlsbuf.h"
#include "secrets/secrets.h"
#include "cli/cli.h"

#define EXIT_USAGE 2

static const char usage_main[] =
	"usage: sluice <command> [options]\n"
	"\n"
	"commands:\n"
	"  ca init --dir DIR [--force | --if-missing]  create the gateway's CA (ca.pem, ca.key)\n"
	"  ca show --dir DIR             print the CA's fingerprint, validity and PEM path\n"
	"  serve -c FILE [-v]            run the gateway\n"
	"  policy check [--strict] FILE  validate a configuration and its policy\n"
	"  policy test FILE CASES.yaml   run request cases against a policy\n"
	"  policy explain FILE --url URL ...  show which rules a request meets, and why\n"
	"  secrets list -c FILE          show each secret's placeholder, bindings and source status\n"
	"  run [-c FILE] [OPTIONS] -- COMMAND...  run COMMAND in a sandbox whose only way out is the gateway\n"
	"  sandboxes -c FILE             list the sandboxes registered with the running gateway\n"
	"  approvals list|approve|reject -c FILE [ID]  requests held for an operator's approval, and deciding them\n"
	"  audit verify|query|tail|summary|keygen ...  check and read the audit log (sluice audit --help)\n"
	"  version                       print the version\n"
	"\n"
	"Every command has --help. Exit status: 0 ok, 1 refused or failed, 2 bad usage.\n";

static const char usage_ca_init[] =
	"usage: sluice ca init --dir DIR [--force | --if-missing]\n"
	"Creates an ECDSA P-256 CA in DIR: ca.pem (what sandboxes trust) and ca.key (mode 0600).\n"
	"Refuses to overwrite an existing CA unless --force is given.\n"
	"  --force        replace an existing CA (every sandbox must then trust the new ca.pem)\n"
	"  --if-missing   keep a CA DIR already has and succeed (a service's first start); a CA with\n"
	"                 only one of its two files is still refused\n";

static const char usage_ca_show[] =
	"usage: sluice ca show --dir DIR\n"
	"Prints the CA's SHA-256 fingerprint, its validity, and the path of the PEM sandboxes must trust.\n";

static const char usage_serve[] =
	"usage: sluice serve -c FILE [-v]\n"
	"Runs the gateway with the configuration FILE (see docs/policy.md).\n"
	"SIGHUP reloads the policy; SIGTERM drains open requests, then stops.\n"
	"  -c, --config FILE   configuration (sluice.yaml)\n"
	"  -v, --verbose       debug logging\n";

static const char usage_secrets_list[] =
	"usage: sluice secrets list -c FILE\n"
	"For each secret FILE declares: its placeholder (what sandboxes hold), the hosts, places and sandboxes\n"
	"it is bound to, and whether its source can be read now. Never prints a value.\n";

/* What `ca init` does with a CA that is already there. */
enum ca_existing {
	CA_EXISTING_REFUSE = 0,
	CA_EXISTING_REPLACE = 1,  /* --force */
	CA_EXISTING_KEEP = 2,     /* --if-missing */
};

/* Parses "--dir DIR [--force | --if-missing]" for the ca subcommands (<allow_flags> 0: only --dir). */
static int
ca_args(int argc, char **argv, const char *usage, const char **dir, enum ca_existing *existing, int allow_flags)
{
	static const struct option opts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"force", no_argument, NULL, 'f'},
		{"if-missing", no_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	*dir = NULL;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "d:f", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			*dir = optarg;
			break;
		case 'f':
		case 'm':
			if (!allow_flags || *existing != CA_EXISTING_REFUSE)
				goto bad;
			*existing = ch == 'f' ? CA_EXISTING_REPLACE : CA_EXISTING_KEEP;
			break;
		default:
			goto bad;
		}
	}
	if (*dir == NULL || optind != argc)
		goto bad;
	return 0;
bad:
	fputs(usage, stderr);
	return -1;
}

static const char usage_ca[] =
	"usage: sluice ca init --dir DIR [--force | --if-missing]\n"
	"       sluice ca show --dir DIR\n";

static const char usage_version[] =
	"usage: sluice version\n"
	"Prints the version of sluice.\n";

/* 1 when <dir> has both CA files, 0 when it has neither (or is missing), -1 when it has one. */
static int
ca_dir_complete(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	int have = 0;

	if (snprintf(p, sizeof(p), "%s/ca.pem", dir) < (int)sizeof(p) && lstat(p, &st) == 0)
		have++;
	if (snprintf(p, sizeof(p), "%s/ca.key", dir) < (int)sizeof(p) && lstat(p, &st) == 0)
		have++;
	return have == 2 ? 1 : have == 0 ? 0 : -1;
}

static int
cmd_ca(int argc, char **argv)
{
	const char *dir, *err = NULL;
	enum ca_existing existing = CA_EXISTING_REFUSE;
	int r, kept = 0;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage_ca, stdout);
		return 0;
	}
	if (argc < 2) {
		fputs(usage_ca, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "init") == 0) {
		if (cli_wants_help(argc - 1, argv + 1)) {
			fputs(usage_ca_init, stdout);
			return 0;
		}
		if (ca_args(argc - 1, argv + 1, usage_ca_init, &dir, &existing, 1) == -1)
			return EXIT_USAGE;
		if (existing == CA_EXISTING_KEEP && (r = ca_dir_complete(dir)) != 0) {
			if (r < 0) {
				fprintf(stderr, "sluice ca init: %s: the CA is incomplete (one of ca.pem and ca.key is missing): "
				                "restore it, or replace it with --force\n", dir);
				return 1;
			}
			kept = 1;
		}
		r = kept ? 0 : ca_init_dir(dir, existing == CA_EXISTING_REPLACE, &err);
		if (r != 0) {
			fprintf(stderr, "sluice ca init: %s: %s\n", dir, err ? err : sluice_strerror(r));
			return 1;
		}
		{
			/* the key placeholders derive from: made once, kept by --force, so placeholders never change */
			uint8_t key[SECRET_KEY_BYTES];
			if (secret_key_load(dir, 1, key, &err) != 0) {
				fprintf(stderr, "sluice ca init: %s: %s\n", dir, err);
				return 1;
			}
			sluice_wipe(key, sizeof(key));
		}
		printf("%s CA in %s; sandboxes must trust %s/ca.pem\n", kept ? "kept the" : "created a", dir, dir);
		return 0;
	}
	if (strcmp(argv[1], "show") == 0) {
		if (cli_wants_help(argc - 1, argv + 1)) {
			fputs(usage_ca_show, stdout);
			return 0;
		}
		if (ca_args(argc - 1, argv + 1, usage_ca_show, &dir, &existing, 0) == -1)
			return EXIT_USAGE;
		r = ca_show(dir, stdout, &err);
		if (r != 0) {
			fprintf(stderr, "sluice ca show: %s: %s\n", dir, err ? err : sluice_strerror(r));
			return 1;
		}
		return 0;
	}
	fputs(usage_ca, stderr);
	return EXIT_USAGE;
}

/* `sluice policy check|test|explain` (cli/policy.c). */
int cli_policy_main(int argc, char **argv);

static int
cmd_policy(int argc, char **argv)
{
	return cli_policy_main(argc, argv);
}

static void
print_list(const char *label, const char *const *v, size_t n, const char *none)
{
	size_t i;

	printf("  %s: ", label);
	if (n == 0)
		fputs(none, stdout);
	for (i = 0; i < n; i++)
		printf("%s%s", i ? ", " : "", v[i]);
	putchar('\n');
}

static int
cmd_secrets(int argc, char **argv)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	const struct policy_secret *s;
	struct secret_source src;
	struct secret_buf *b;
	uint8_t key[SECRET_KEY_BYTES];
	char errbuf[1024], ph[SECRET_PLACEHOLDER_MAX], ibuf[160];
	const char *err = NULL;
	char *places[16];
	size_t i, k;
	int r, derived;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_secrets_list, stdout);
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "list") != 0 || (strcmp(argv[2], "-c") != 0 && strcmp(argv[2], "--config") != 0)) {
		fputs(usage_secrets_list, stderr);
		return EXIT_USAGE;
	}
	if (policy_load_file(argv[3], &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "%s\n", errbuf);
		return 1;
	}
	/* the same key `serve` uses (made now if missing), so these are the placeholders sandboxes get */
	r = secret_key_load(cfg->ca_dir, 1, key, &err);
	if (r != 0 && policy_secret_count(pol) > 0)
		fprintf(stderr, "sluice secrets list: %s: %s\n", cfg->ca_dir, err);
	if (policy_secret_count(pol) == 0)
		printf("no secrets declared in %s\n", argv[3]);
	for (i = 0; i < policy_secret_count(pol); i++) {
		s = policy_secret_get(pol, i);
		printf("%s\n", s->name);
		if (cli_placeholder(s, r == 0 ? key : NULL, ph, sizeof(ph), &derived) != 0)
			printf("  placeholder: (cannot derive: no placeholder key)\n");
		else if (!derived)
			printf("  placeholder: %s\n", ph);
		else
			printf("  placeholder: %s (derived%s%s)\n", ph, s->format ? ", format " : "", s->format ? s->format : "");
		print_list("hosts", s->hosts, s->nhosts, "(none)");
		for (k = 0; k < s->ninject && k < 16; k++)
			places[k] = xstrdup(policy_inject_format(&s->inject[k], ibuf, sizeof(ibuf)));
		print_list("inject", (const char *const *)places, k, "(none)");
		while (k-- > 0)
			free(places[k]);
		print_list("sandboxes", s->sandboxes, s->nsandboxes, "every known sandbox");
		if (s->ttl_s > 0)
			printf("  ttl: %us\n", s->ttl_s);
		err = NULL;
		b = NULL;
		if (secret_source_parse(s->source, &src, &err) == 0) {
			if (secret_fetch(&src, 0, &b, &err) == 0 && secret_value_check(b, &err) == 0)
				err = NULL;
			secret_source_dispose(&src);
		}
		secret_buf_free(b);  /* only the status is shown, never the value */
		printf("  source: %s (%s%s)\n", s->source, err == NULL ? "ok" : "unavailable: ", err == NULL ? "" : err);
	}
	sluice_wipe(key, sizeof(key));
	policy_unref(pol);
	policy_config_free(cfg);
	return 0;
}

static int
cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"verbose", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct gateway *gw = NULL;
	struct ca *ca = NULL;
	const char *path = NULL, *err = NULL;
	char errbuf[1024];
	int ch, verbose = 0, ret = 1;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_serve, stdout);
		return 0;
	}
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:v", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			fputs(usage_serve, stderr);
			return EXIT_USAGE;
		}
	}
	if (path == NULL || optind != argc) {
		fputs(usage_serve, stderr);
		return EXIT_USAGE;
	}
	log_init("sluice", verbose);
	if (evthread_use_pthreads() != 0)
		fatalx("libevent has no pthreads support");
	if (policy_load_file(path, &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		log_warnx("not serving: %s", errbuf);
		return 1;
	}
	ca = ca_load(cfg->ca_dir, cfg->leaf_cache, &err);
	if (ca == NULL) {
		log_warnx("not serving: CA in %s: %s", cfg->ca_dir, err ? err : "cannot load");
		policy_unref(pol);
		goto out;
	}
	gw = gateway_create(path, cfg, pol, ca, &err);  /* takes pol */
	if (gw == NULL) {
		log_warn("not serving: %s", err ? err : "cannot start");
		goto out;
	}
	if (gateway_drop_privileges(gw, cfg->user, &err) != 0) {
		log_warn("not serving: cannot drop privileges to '%s': %s", cfg->user, err ? err : "?");
		goto out;
	}
	ret = gateway_run(gw) == 0 ? 0 : 1;
out:
	gateway_destroy(gw);
	ca_destroy(ca);
	policy_config_free(cfg);
	tlsbuf_thread_flush();
	return ret;
}

int
main(int argc, char **argv)
{
	/* before anything allocates through OpenSSL; failing only means no cache */
	(void)tlsbuf_init();
	if (argc < 2) {
		fputs(usage_main, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
			fputs(usage_version, stdout);
			return 0;
		}
		if (argc != 2) {
			fputs(usage_version, stderr);
			return EXIT_USAGE;
		}
		printf("sluice %s\n", SLUICE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "ca") == 0)
		return cmd_ca(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "policy") == 0)
		return cmd_policy(argc - 1, argv + 1);
	if (strcmp(argv[1], "secrets") == 0)
		return cmd_secrets(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "sandboxes") == 0)
		return cmd_sandboxes(argc - 1, argv + 1);
	if (strcmp(argv[1], "approvals") == 0)
		return cmd_approvals(argc - 1, argv + 1);
	if (strcmp(argv[1], "audit") == 0)
		return cmd_audit(argc - 1, argv + 1);
	fprintf(stderr, "sluice: unknown command '%s'\n\n%s", argv[1], usage_main);
	return EXIT_USAGE;
}
