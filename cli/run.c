/*
 * cli/run.c - `sluice run`: options and configuration, then
 * sandbox-glue/run.h does the rest.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include "common/clock.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "cli/cli.h"
#include "cli/embed.h"
#include "policy/policy.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/run.h"
#include "sandbox-glue/sandbox.h"
#include "secrets/secrets.h"

#define EXIT_USAGE 2
#define RUN_USER_ENV_MAX 64   /* --env options */
#define RUN_HIDE_MAX NETNS_HIDE_MAX

static const char usage_run[] =
	"usage: sluice run [-c FILE] [--name N] [--workspace DIR] [--uid U] [--backend netns|qemu|firecracker]\n"
	"                  [--env NAME[=VALUE]]... [--timing] -- COMMAND...\n"
	"Runs COMMAND in a new sandbox (a network namespace and bubblewrap, or a microVM on a tap) whose only way\n"
	"out is the gateway for FILE, and exits with COMMAND's status (128+N when signal N killed it; 1 when the\n"
	"sandbox could not be made). When no gateway answers on FILE's listen.admin, starts one for the run (the\n"
	"last run out stops it). Needs root.\n"
	"  -c, --config FILE     the gateway's configuration (sluice.yaml); without it, the built-in default in\n"
	"                        $SLUICE_STATE_DIR, else $XDG_STATE_HOME/sluice, else (as root)\n"
	"                        /var/lib/sluice-run, else ~/.local/state/sluice: its own CA and a deny-all\n"
	"                        policy\n"
	"  --name N              the sandbox's name at the gateway (default sbx-<id>)\n"
	"  --workspace DIR       bind DIR read-write on /workspace and start there (netns only)\n"
	"  --uid U               run as uid and gid U (default sandbox.uid, else 1000; never 0)\n"
	"  --backend B           netns, qemu or firecracker (default: sandbox.backend, else netns); the VMs boot\n"
	"                        sandbox.qemu.kernel and .initrd (build them with scripts/vm-image.sh DIR)\n"
	"  --env NAME[=VALUE]    pass NAME (from this environment, or with VALUE); repeatable\n"
	"  --timing              print the time from start to the command's exec (or SLUICE_RUN_TIMING=1)\n";

static uint16_t
listen_port(const char *spec)
{
	struct netaddr_listen la;

	if (spec == NULL || netaddr_listen_parse(spec, &la) != 0)
		return 0;
	if (la.family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)&la.ss)->sin_port);
	if (la.family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)&la.ss)->sin6_port);
	return 0;
}

/* path components of an absolute path ("/etc" 1, "/etc/sluice" 2) */
static int
depth(const char *p)
{
	int n = 0;

	for (; *p != '\0'; p++)
		if (*p == '/' && p[1] != '\0' && p[1] != '/')
			n++;
	return n;
}

struct hides {
	char *v[RUN_HIDE_MAX];
	size_t n;
};

/* hides <path> (canonical); <dir_too>: its directory instead, unless that is a top-level one like /etc */
static void
hide_add(struct hides *h, const char *path, int dir_too)
{
	char *real = path != NULL ? realpath(path, NULL) : NULL, *d, *dn;

	if (real == NULL)
		return;
	if (dir_too) {
		d = xstrdup(real);
		dn = dirname(d);
		if (depth(dn) >= 2) {
			free(real);
			real = xstrdup(dn);
		}
		free(d);
	}
	if (h->n < RUN_HIDE_MAX)
		h->v[h->n++] = real;
	else
		free(real);
}

/* The file of a "file:" source <spec> into *<out> (xmalloc'd): 1, or 0 for any other source. */
static size_t
secret_file(const char *spec, const char **out)
{
	struct secret_source src;
	const char *err = NULL;
	size_t n = 0;

	if (spec == NULL || secret_source_parse(spec, &src, &err) != 0)
		return 0;
	if (src.kind == SECRET_SRC_FILE) {
		*out = xstrdup(src.arg);
		n = 1;
	}
	secret_source_dispose(&src);
	return n;
}

static void
hide_secret_files(struct hides *h, const char *spec)
{
	const char *f;

	if (secret_file(spec, &f)) {
		hide_add(h, f, 0);
		free(SLUICE_DECONST(char *, f)); /* secret_file's copy */
	}
}

/* "NAME" -> "NAME=<our value>" (xmalloc'd), "NAME=VALUE" copied; NULL when NAME is invalid or unset */
static char *
user_env(const char *spec)
{
	const char *eq = strchr(spec, '='), *v;
	size_t nl = eq != NULL ? (size_t)(eq - spec) : strlen(spec);
	char *e;

	if (!run_env_name_valid(spec, nl))
		return NULL;
	if (eq != NULL)
		return xstrdup(spec);
	v = getenv(spec);
	if (v == NULL)
		return NULL;
	e = xmalloc(nl + strlen(v) + 2);
	memcpy(e, spec, nl);
	e[nl] = '=';
	memcpy(e + nl + 1, v, strlen(v) + 1);
	return e;
}

static int
placeholders(const struct policy_config *cfg, const struct policy *pol, char **env, size_t *nenv, size_t max,
             const char **secrets, size_t *nsecrets)
{
	uint8_t key[SECRET_KEY_BYTES];
	const char *err = NULL;
	char ph[SECRET_PLACEHOLDER_MAX];
	size_t i, n = policy_sandbox_env_count(pol);
	int have_key, derived, ret = 0;

	/* create nothing: a running gateway already made the key its placeholders come from */
	have_key = secret_key_load(cfg->ca_dir, 0, key, &err) == 0;
	for (i = 0; i < n; i++) {
		const char *var, *name;
		const struct policy_secret *s;
		size_t vl;
		char *e;

		policy_sandbox_env_get(pol, i, &var, &name);
		s = policy_secret_find(pol, name);
		if (s == NULL || cli_placeholder(s, have_key ? key : NULL, ph, sizeof(ph), &derived) != 0) {
			fprintf(stderr, "sluice run: sandbox_env %s: no placeholder for secret '%s'%s%s\n", var, name,
			        have_key ? "" : ": ", have_key ? "" : (err != NULL ? err : "no placeholder key"));
			ret = SLUICE_EINVAL;
			break;
		}
		if (*nenv >= max || *nsecrets >= max) {
			ret = SLUICE_ETOOBIG;
			break;
		}
		vl = strlen(var);
		e = xmalloc(vl + strlen(ph) + 2);
		memcpy(e, var, vl);
		e[vl] = '=';
		memcpy(e + vl + 1, ph, strlen(ph) + 1);
		env[(*nenv)++] = e;
		secrets[(*nsecrets)++] = name;
	}
	sluice_wipe(key, sizeof(key));
	return ret;
}

/* a file the VM backends need: absolute, a regular file; else a message naming <key> and the image script */
static int
vm_file(const char *path, const char *key, const char *cfgpath)
{
	struct stat st;

	if (path == NULL) {
		fprintf(stderr, "sluice run: %s sets no %s: build a kernel and initrd with `scripts/vm-image.sh DIR` "
		        "and set sandbox.qemu.kernel: DIR/vmlinux and sandbox.qemu.initrd: DIR/initrd.gz\n", cfgpath, key);
		return -1;
	}
	if (stat(path, &st) == -1) {
		fprintf(stderr, "sluice run: %s %s: %s (build it with `scripts/vm-image.sh DIR`)\n", key, path,
		        strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "sluice run: %s %s: not a regular file\n", key, path);
		return -1;
	}
	if ((st.st_mode & 0004) == 0)
		fprintf(stderr, "sluice run: warning: %s %s is not world-readable: the VM runs as the sandbox's uid and "
		        "must be able to read it\n", key, path);
	return 0;
}

/*
 * The configuration mistakes users make that `sluice run` can see before the sandbox starts (issue 24):
 * warnings only, the run goes on.  A configuration without listen.dns resolves no name inside; one
 * without a listen.admin socket has no gateway the launcher can find or start.
 */
static void
warn_config(const struct policy_config *cfg, const char *path, const char *admin_path)
{
	if (cfg->listen_dns == NULL)
		fprintf(stderr,
		        "sluice run: warning: %s has no listen.dns: no name resolves inside the sandbox (every lookup "
		        "fails); add listen.dns (e.g. \"127.0.0.1:5353\") so the gateway answers the names its policy allows\n",
		        path);
	if (admin_path == NULL)
		fprintf(stderr,
		        "sluice run: warning: %s has no listen.admin (a unix: socket): no gateway for it can be found or "
		        "started, so the sandbox's traffic reaches one only if it is already running; add listen.admin "
		        "(e.g. \"unix:/run/sluice/admin.sock\")\n",
		        path);
}

/*
 * --workspace <dir> that uid and gid <uid> cannot write, by its owner and mode (the README's
 * `--workspace "$PWD"` from a root-owned directory): a warning naming the uid and the owner.  Kept apart
 * from the check of what the workspace may overlap, which refuses.
 */
static void
warn_workspace(const char *dir, uid_t uid)
{
	struct stat st;
	struct passwd *pw;
	int w;

	if (dir == NULL || stat(dir, &st) == -1)
		return;
	w = (st.st_uid == uid && (st.st_mode & S_IWUSR)) || (st.st_gid == (gid_t)uid && (st.st_mode & S_IWGRP)) ||
	    (st.st_mode & S_IWOTH);
	if (w && (st.st_uid == uid || (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))))
		return;
	pw = getpwuid(st.st_uid);
	fprintf(stderr,
	        "sluice run: warning: --workspace %s is owned by %s (uid %u, mode %04o): the sandbox runs as uid %u, "
	        "which cannot write it (writes inside fail with \"Permission denied\"); chown %u %s",
	        dir, pw != NULL ? pw->pw_name : "?", (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)uid,
	        (unsigned)uid, dir);
	if (st.st_uid != 0)
		fprintf(stderr, ", or run it as its owner (--uid %u)", (unsigned)st.st_uid);
	fputc('\n', stderr);
}

/* the backend and, for the VMs, the sandbox.qemu settings; 0 or -1 (message printed) */
static int
vm_opts(const struct policy_config *cfg, const char *cfgpath, const char *backend, const char *workspace,
        struct run_opts *o)
{
	if (strcmp(backend, "netns") == 0) {
		o->backend = RUN_BACKEND_NETNS;
		return 0;
	}
	o->backend = strcmp(backend, "qemu") == 0 ? RUN_BACKEND_QEMU : RUN_BACKEND_FIRECRACKER;
	if (workspace != NULL) {
		fprintf(stderr, "sluice run: --workspace is for the netns backend: a VM shares no host directory\n");
		return -1;
	}
	if (vm_file(cfg->qemu_kernel, "sandbox.qemu.kernel", cfgpath) != 0 ||
	    vm_file(cfg->qemu_initrd, "sandbox.qemu.initrd", cfgpath) != 0)
		return -1;
	o->vm_kernel = cfg->qemu_kernel;
	o->vm_initrd = cfg->qemu_initrd;
	o->vm_kvm = cfg->qemu_kvm;
	o->vm_memory_mib = cfg->qemu_memory_mib;
	o->vm_binary = NULL;  /* PATH: the configuration has no sandbox.*.binary key yet */
	return 0;
}

int
cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"name", required_argument, NULL, 'n'},
		{"workspace", required_argument, NULL, 'w'},
		{"uid", required_argument, NULL, 'u'},
		{"backend", required_argument, NULL, 'b'},
		{"env", required_argument, NULL, 'e'},
		{"timing", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct run_opts o;
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct netaddr_listen la;
	struct hides h;
	struct embed_gateway eg = {-1, ""};
	char defpath[EMBED_PATH_MAX];
	const char *path = NULL, *userenv[RUN_USER_ENV_MAX], *secrets[RUN_ENV_MAX], *tv;
	char *env[RUN_ENV_MAX], *workspace = NULL, *ca_pem = NULL, *admin_path = NULL, errbuf[1024], *end;
	size_t nuser = 0, nenv = 0, nsecrets = 0, i;
	unsigned long uid = 0;  /* 0: not given, the configuration's sandbox.uid */
	const char *backend = NULL;
	struct stat st;
	struct timespec rt;
	char regname[SANDBOX_NAME_MAX + 1] = "";
	int ch, ret = 1;

	memset(&o, 0, sizeof(o));
	o.workspace_fd = -1;
	memset(&h, 0, sizeof(h));
	o.t0_ns = clock_mono_ns();
	tv = getenv("SLUICE_RUN_TIMING");
	o.timing = tv != NULL && strcmp(tv, "1") == 0;
	optind = 1;
	/* "+": options stop at the command, so its own options are left alone */
	while ((ch = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'n':
			if (!sandbox_name_valid(optarg)) {
				fprintf(stderr, "sluice run: --name: 1..%d of [A-Za-z0-9_.-], not starting with '.' or '-'\n",
				        SANDBOX_NAME_MAX);
				return EXIT_USAGE;
			}
			o.name = optarg;
			break;
		case 'w':
			free(workspace);
			workspace = realpath(optarg, NULL);
			if (workspace == NULL || stat(workspace, &st) == -1 || !S_ISDIR(st.st_mode)) {
				fprintf(stderr, "sluice run: --workspace %s: not a directory\n", optarg);
				free(workspace);
				return EXIT_USAGE;
			}
			break;
		case 'u':
			errno = 0;
			uid = strtoul(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || uid == 0 || uid >= 0xfffffffful) {
				fprintf(stderr, "sluice run: --uid: a number from 1 to 4294967294 (never root)\n");
				free(workspace);
				return EXIT_USAGE;
			}
			break;
		case 'b':
			if (strcmp(optarg, "netns") != 0 && strcmp(optarg, "qemu") != 0 && strcmp(optarg, "firecracker") != 0) {
				fprintf(stderr, "sluice run: --backend: netns, qemu or firecracker\n");
				free(workspace);
				return EXIT_USAGE;
			}
			backend = optarg;
			break;
		case 'e':
			if (nuser >= RUN_USER_ENV_MAX) {
				fprintf(stderr, "sluice run: at most %d --env\n", RUN_USER_ENV_MAX);
				free(workspace);
				return EXIT_USAGE;
			}
			userenv[nuser++] = optarg;
			break;
		case 't':
			o.timing = 1;
			break;
		case 'h':
			fputs(usage_run, stdout);
			free(workspace);
			return 0;
		default:
			fputs(usage_run, stderr);
			free(workspace);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc || argc - optind > NETNS_ARGV_MAX) {
		fputs(usage_run, stderr);
		free(workspace);
		return EXIT_USAGE;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "sluice run: needs root (network namespaces and nftables)\n");
		goto out;
	}
	if (path == NULL) {
		if (embed_default_config(defpath, sizeof(defpath)) != 0)
			goto out;
		path = defpath;
	}
	if (policy_load_file(path, &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "sluice run: %s\n", errbuf);
		goto out;
	}
	if (backend == NULL)
		backend = cfg->sandbox_backend;
	if (vm_opts(cfg, path, backend, workspace, &o) != 0)
		goto out;
	o.transparent_port = listen_port(cfg->listen_transparent);
	if (o.transparent_port == 0 || o.transparent_port == 53) {
		fprintf(stderr, "sluice run: %s has no usable listen.transparent: the sandbox's TCP must go there\n", path);
		goto out;
	}
	o.dns_port = listen_port(cfg->listen_dns);  /* 0: no responder yet (run.h says what happens) */
	if (cfg->listen_admin != NULL && netaddr_listen_parse(cfg->listen_admin, &la) == 0 && la.family == AF_UNIX)
		o.admin_path = admin_path = xstrdup(la.path);
	if (placeholders(cfg, pol, env, &nenv, RUN_ENV_MAX - RUN_USER_ENV_MAX, secrets, &nsecrets) != 0)
		goto out;
	for (i = 0; i < nuser; i++) {
		char *e = user_env(userenv[i]);

		if (e == NULL) {
			fprintf(stderr, "sluice run: --env %s: not a valid name, or not set here\n", userenv[i]);
			goto out;
		}
		env[nenv++] = e;
	}
	ca_pem = xmalloc(strlen(cfg->ca_dir) + 8);
	memcpy(ca_pem, cfg->ca_dir, strlen(cfg->ca_dir));
	memcpy(ca_pem + strlen(cfg->ca_dir), "/ca.pem", sizeof("/ca.pem"));
	/* what protects the sandbox, in case it lives under /etc or /usr (the only host trees it sees) */
	hide_add(&h, path, 1);
	hide_add(&h, cfg->ca_dir, 0);
	hide_add(&h, cfg->audit_file, 0);
	hide_add(&h, o.admin_path, 0);
	for (i = 0; i < policy_secret_count(pol); i++)
		hide_secret_files(&h, policy_secret_get(pol, i)->source);
	for (i = 0; i < policy_sandbox_count(pol); i++)
		hide_secret_files(&h, policy_sandbox_get(pol, i)->proxy_password);
	o.workspace = workspace;
	if (workspace != NULL) {
		/* the paths it hides, as configured (resolved and compared by inode there) */
		const char *hidden[RUN_HIDE_MAX + 3];
		size_t nh = 0;

		hidden[nh++] = cfg->ca_dir;
		hidden[nh++] = cfg->audit_file;
		hidden[nh++] = o.admin_path;
		for (i = 0; i < policy_secret_count(pol) && nh < sizeof(hidden) / sizeof(hidden[0]); i++)
			nh += secret_file(policy_secret_get(pol, i)->source, &hidden[nh]);
		for (i = 0; i < policy_sandbox_count(pol) && nh < sizeof(hidden) / sizeof(hidden[0]); i++)
			nh += secret_file(policy_sandbox_get(pol, i)->proxy_password, &hidden[nh]);
		ret = run_workspace_open(workspace, hidden, nh, &o.workspace_fd, errbuf, sizeof(errbuf));
		for (i = 3; i < nh; i++)
			free(SLUICE_DECONST(char *, hidden[i])); /* secret_file's copies */
		if (ret != 0) {
			fprintf(stderr, "sluice run: %s\n", errbuf);
			ret = 1;
			goto out;
		}
	}
	o.uid = (uid_t)(uid != 0 ? uid : cfg->sandbox_uid);
	warn_config(cfg, path, o.admin_path);
	warn_workspace(workspace, o.uid);
	o.ca_pem = ca_pem;
	o.env = (const char *const *)env;
	o.nenv = nenv;
	o.secrets = secrets;
	o.nsecrets = nsecrets;
	o.hide = (const char *const *)h.v;
	o.nhide = h.n;
	o.argv = argv + optind;
	if (o.admin_path != NULL && embed_gateway_ensure(&eg, path, o.admin_path) != 0)
		goto out;
	o.name_out = regname;
	clock_wall(&rt);
	ret = run_sandbox(&o);
	/* a failed command: what the gateway refused for it, from the audit (a name out of the policy shows only
	 * as "Could not resolve host" inside) */
	if (ret != 0)
		run_refusals_print(cfg->audit_file, regname, (int64_t)rt.tv_sec * 1000 + rt.tv_nsec / 1000000, ret);
	embed_gateway_release(&eg);
out:
	for (i = 0; i < nenv; i++)
		sluice_free_secret(env[i]);
	for (i = 0; i < h.n; i++)
		free(h.v[i]);
	if (o.workspace_fd >= 0)
		close(o.workspace_fd);
	free(admin_path);
	free(ca_pem);
	free(workspace);
	policy_unref(pol);
	policy_config_free(cfg);
	return ret;
}
