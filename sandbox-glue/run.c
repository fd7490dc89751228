/*
 * sandbox-glue/run.c - `sluice run`, the part every backend shares (see
 * run.h): the workload's environment, the admin socket (health, registration),
 * the claim of a sandbox, signals, and teardown.  The backends: run_netns.c
 * (bubblewrap in a namespace) and run_vm.c (QEMU or Firecracker on a tap).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>
#include "common/admin_client.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/sluice.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/run.h"
#include "run_int.h"
#include "sandbox-glue/sandbox.h"

#define REG_BODY_MAX 16384     /* the registration JSON */
#define REG_SECRETS_MAX 256    /* secret names in it */

static const char *const ca_vars[] = {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                      "GIT_SSL_CAINFO", "PIP_CERT", "npm_config_cafile"};

void
run_say(const char *fmt, ...)
{
	va_list ap;

	fputs("sluice run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

double
run_ms(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* ---------------------------------------------------------------- environment */

int
run_env_name_valid(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len > 255 || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

/* a value from our own environment that is safe to pass on: printable, bounded */
static const char *
sane_getenv(const char *name)
{
	const char *v = getenv(name);
	size_t i;

	if (v == NULL || v[0] == '\0' || strlen(v) > 64)
		return NULL;
	for (i = 0; v[i] != '\0'; i++)
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f)
			return NULL;
	return v;
}

/* sets NAME=VALUE (<e>, <nlen> = length of NAME), replacing an entry of the same name */
static int
env_put(char **envp, size_t *n, size_t max, char *e, size_t nlen)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strncmp(envp[i], e, nlen + 1) == 0) {
			free(envp[i]);
			envp[i] = e;
			return 0;
		}
	if (*n + 1 >= max) {
		free(e);
		return SLUICE_ETOOBIG;
	}
	envp[(*n)++] = e;
	envp[*n] = NULL;
	return 0;
}

static int
env_putf(char **envp, size_t *n, size_t max, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	char *e = xmalloc(nl + vl + 2);

	memcpy(e, name, nl);
	e[nl] = '=';
	memcpy(e + nl + 1, value, vl + 1);
	return env_put(envp, n, max, e, nl);
}

int
run_env_make(const char *const *extra, size_t nextra, int workspace, char **envp, size_t max)
{
	const char *v;
	size_t n = 0, i;
	int ret = SLUICE_ETOOBIG;

	if (max == 0)
		return SLUICE_ETOOBIG;
	envp[0] = NULL;
	if (env_putf(envp, &n, max, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") != 0 ||
	    env_putf(envp, &n, max, "HOME", workspace ? "/workspace" : "/tmp") != 0)
		goto bad;
	if ((v = sane_getenv("TERM")) != NULL && env_putf(envp, &n, max, "TERM", v) != 0)
		goto bad;
	if (env_putf(envp, &n, max, "LANG", (v = sane_getenv("LANG")) != NULL ? v : "C.UTF-8") != 0)
		goto bad;
	for (i = 0; i < sizeof(ca_vars) / sizeof(ca_vars[0]); i++)
		if (env_putf(envp, &n, max, ca_vars[i], NETNS_CA_PATH) != 0)
			goto bad;
	for (i = 0; i < nextra; i++) {
		const char *eq = strchr(extra[i], '=');
		size_t len = strlen(extra[i]);

		if (eq == NULL || len > RUN_ENV_ENTRY_MAX || !run_env_name_valid(extra[i], (size_t)(eq - extra[i]))) {
			ret = SLUICE_EINVAL;
			goto bad;
		}
		if (env_put(envp, &n, max, xstrdup(extra[i]), (size_t)(eq - extra[i])) != 0)
			goto bad;
	}
	return (int)n;
bad:
	run_env_free(envp);
	return ret;
}

void
run_env_free(char **envp)
{
	size_t i;

	for (i = 0; envp[i] != NULL; i++) {
		free(envp[i]);
		envp[i] = NULL;
	}
}

/* ---------------------------------------------------------------- registration */

int
run_register(struct run_common *c)
{
	const struct run_opts *o = c->o;
	const char *addrs[2];
	char a4[32], a6[64], body[REG_BODY_MAX], resp[256], err[NETNS_ERR_MAX];
	struct jbuf jb;
	int status = 0;
	size_t ns = o->nsecrets < REG_SECRETS_MAX ? o->nsecrets : REG_SECRETS_MAX;

	if (o->admin_path == NULL) {
		c->t_reg = clock_mono_ns();
		return 0;
	}
	snprintf(a4, sizeof(a4), "%s/32", c->sb.net.sbx_v4);
	snprintf(a6, sizeof(a6), "%s/128", c->sb.net.sbx_v6);
	addrs[0] = a4;
	addrs[1] = a6;
	jb_init(&jb, body, sizeof(body));
	jb_str(&jb, "name", c->sb.name);
	jb_str(&jb, "backend", c->backend);
	jb_pairs(&jb, "addresses", NULL, addrs, NULL, NULL, 2);
	jb_pairs(&jb, "secrets", NULL, (const char *const *)o->secrets, NULL, NULL, ns);
	if (ns == 0)
		jb_empty_array(&jb, "secrets");  /* jb_pairs writes nothing for none: the key must still be there */
	if (jb_finish(&jb, 0) < 0 || ns < o->nsecrets) {
		run_say("the registration of %s does not fit %u bytes", c->sb.name, (unsigned)REG_BODY_MAX);
		return SLUICE_ETOOBIG;
	}
	if (admin_client_call(o->admin_path, "POST", "/sandboxes", body, &status, resp, sizeof(resp), err,
	                   sizeof(err)) != 0) {
		run_say("cannot register the sandbox with the gateway: %s", err);
		return SLUICE_EIO;
	}
	c->t_reg = clock_mono_ns();
	if (status >= 200 && status < 300) {
		c->registered = 1;
		return 0;
	}
	if (status == 404 || status == 405 || status == 501) {
		run_say("warning: this gateway has no POST /sandboxes (HTTP %d): %s runs unregistered, so the audit will "
		        "not name it and no secret is bound to it by name", status, c->sb.name);
		return 0;
	}
	run_say("the gateway refused to register %s: HTTP %d %s", c->sb.name, status, resp);
	return SLUICE_EDENIED;
}

static void
unregister_sandbox(struct run_common *c)
{
	char path[64], err[NETNS_ERR_MAX];
	int status = 0;

	if (!c->registered)
		return;
	c->registered = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s", c->sb.name);
	if (admin_client_call(c->o->admin_path, "DELETE", path, NULL, &status, NULL, 0, err, sizeof(err)) != 0)
		run_say("warning: cannot remove %s from the gateway: %s", c->sb.name, err);
	else if (status < 200 || status >= 300)
		run_say("warning: the gateway answered HTTP %d to removing %s", status, c->sb.name);
}

/* the registrations of dead sandboxes at our gateway: gone with them */
static void
unregister_stale(const struct run_opts *o, const struct netns_stale *stale, size_t n)
{
	char path[64], err[NETNS_ERR_MAX];
	size_t i;
	int status;

	for (i = 0; o->admin_path != NULL && i < n; i++) {
		if (strcmp(stale[i].admin, o->admin_path) != 0)
			continue;
		snprintf(path, sizeof(path), "/sandboxes/%s", stale[i].name);
		if (admin_client_call(o->admin_path, "DELETE", path, NULL, &status, NULL, 0, err, sizeof(err)) != 0)
			run_say("warning: cannot remove the dead sandbox %s from the gateway: %s", stale[i].name, err);
	}
}

/* ---------------------------------------------------------------- the claim */

/* binds a dual-stack UDP socket on an ephemeral port, connected to [::1]:9: its port, or 0 */
static uint16_t
dns_sink(int *fd)
{
	struct sockaddr_in6 sa;
	socklen_t len = sizeof(sa);
	uint16_t port;
	int off = 0, small = 1024;

	*fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	if (*fd == -1 || setsockopt(*fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == -1 ||
	    setsockopt(*fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == -1 ||
	    bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 || getsockname(*fd, (struct sockaddr *)&sa, &len) == -1) {
		run_say("a UDP port for the missing DNS responder: %s", strerror(errno));
		return 0;
	}
	port = ntohs(sa.sin6_port);
	/* connected elsewhere, it matches no datagram from the sandbox: those get port unreachable (rejected) */
	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_addr = in6addr_loopback;
	sa.sin6_port = htons(9);
	if (connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		run_say("a UDP port for the missing DNS responder: %s", strerror(errno));
		return 0;
	}
	return port;
}

int
run_claim(struct run_common *c)
{
	const struct run_opts *o = c->o;
	struct netns_stale stale[NETNS_STALE_REG_MAX];
	char err[NETNS_ERR_MAX];
	size_t nstale = 0;
	unsigned removed = 0;
	uint16_t dns_port = o->dns_port;

	if (dns_port == 0 && (dns_port = dns_sink(&c->dns_sink)) == 0)
		return SLUICE_EIO;
	if (netns_claim(&c->sb, o->name, o->admin_path, o->transparent_port, dns_port, &removed, stale,
	                NETNS_STALE_REG_MAX, &nstale, err, sizeof(err)) != 0) {
		run_say("%s", err);
		return SLUICE_EIO;
	}
	if (removed > 0)
		run_say("removed the leftovers of %u earlier sandbox%s", removed, removed == 1 ? "" : "es");
	if (o->name_out != NULL)
		snprintf(o->name_out, SANDBOX_NAME_MAX + 1, "%s", c->sb.name);
	unregister_stale(o, stale, nstale);
	c->t_claim = clock_mono_ns();
	return 0;
}

int
run_pending_signal(void)
{
	sigset_t pending;

	if (sigpending(&pending) != 0)
		return 0;
	if (sigismember(&pending, SIGINT))
		return 130;
	if (sigismember(&pending, SIGTERM))
		return 143;
	return sigismember(&pending, SIGHUP) ? 129 : 0;
}

/* ---------------------------------------------------------------- the run */

int
run_sandbox(const struct run_opts *o)
{
	struct run_common c;
	sigset_t mask;
	char err[NETNS_ERR_MAX];
	int ret = 1, hs = 0;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.sfd = c.dns_sink = -1;
	c.t_in = clock_mono_ns();
	c.backend = o->backend == RUN_BACKEND_QEMU ? "qemu" : o->backend == RUN_BACKEND_FIRECRACKER ? "firecracker"
	                                                                                          : "netns";
	netns_init(&c.sb);
	/* signals wait in the signalfd: setup is never cut in half, and what arrives is forwarded later */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	c.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c.sfd == -1) {
		run_say("signalfd: %s", strerror(errno));
		goto out;
	}
	if (o->admin_path != NULL) {
		if (admin_client_call(o->admin_path, "GET", "/health", NULL, &hs, NULL, 0, err, sizeof(err)) != 0 ||
		    hs != 200) {
			run_say("the gateway is not running for this configuration (GET /health on %s: %s); start it with "
			        "`sluice serve -c FILE` first",
			        o->admin_path, hs != 0 ? "not 200" : err);
			goto out;
		}
	}
	ret = o->backend == RUN_BACKEND_NETNS ? run_netns(&c) : run_vm(&c);
out:
	unregister_sandbox(&c);
	netns_teardown(&c.sb);
	if (c.sfd != -1)
		close(c.sfd);
	if (c.dns_sink != -1)
		close(c.dns_sink);
	/* the signal mask stays: a signal still pending would only kill us before we return the status */
	return ret;
}
