/*
 * sandbox-glue/run.c - `sluice run` with the netns backend (see run.h).
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common/json.h"
#include "common/sluice.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/run.h"
#include "sandbox-glue/sandbox.h"

#define STATUS_MAX 4096        /* what bwrap writes on its status fd */
#define REG_BODY_MAX 16384     /* the registration JSON */
#define REG_SECRETS_MAX 256    /* secret names in it */

static const char *const ca_vars[] = {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                      "GIT_SSL_CAINFO", "PIP_CERT", "npm_config_cafile"};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
	va_list ap;

	fputs("sluice run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double
ms(uint64_t a, uint64_t b)
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

/* ---------------------------------------------------------------- admin socket */

int
run_admin_call(const char *sock, const char *method, const char *path, const char *body, int *status, char *resp,
               size_t cap, char *err, size_t errcap)
{
	struct sockaddr_un sa;
	struct timeval tv = {RUN_ADMIN_TIMEOUT_MS / 1000, (RUN_ADMIN_TIMEOUT_MS % 1000) * 1000};
	char head[512], *in = NULL, *p, *end;
	size_t hl, bl = body != NULL ? strlen(body) : 0, got = 0, off;
	unsigned long code;
	int fd = -1, ret = SLUICE_EIO;

	*status = 0;
	if (resp != NULL && cap > 0)
		resp[0] = '\0';
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		snprintf(err, errcap, "admin socket path too long");
		return SLUICE_EINVAL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		snprintf(err, errcap, "%s: %s", sock, strerror(errno));
		goto out;
	}
	hl = (size_t)snprintf(head, sizeof(head),
	                      "%s %s HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n%sContent-Length: %zu\r\n\r\n",
	                      method, path, body != NULL ? "Content-Type: application/json\r\n" : "", bl);
	if (hl >= sizeof(head)) {
		snprintf(err, errcap, "request path too long");
		ret = SLUICE_EINVAL;
		goto out;
	}
	for (off = 0; off < hl + bl;) {
		const char *src = off < hl ? head + off : body + (off - hl);
		size_t len = off < hl ? hl - off : bl - (off - hl);
		ssize_t w = send(fd, src, len, MSG_NOSIGNAL);

		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, errcap, "%s: sending: %s", sock, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	in = xmalloc(RUN_HTTP_MAX + 1);
	for (;;) {
		ssize_t r = recv(fd, in + got, RUN_HTTP_MAX + 1 - got, 0);

		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errcap, "%s: reading: %s", sock, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > RUN_HTTP_MAX) {
			snprintf(err, errcap, "%s: reply over %u bytes", sock, (unsigned)RUN_HTTP_MAX);
			ret = SLUICE_ETOOBIG;
			goto out;
		}
	}
	in[got] = '\0';
	ret = SLUICE_EPARSE;
	if (got < 12 || memcmp(in, "HTTP/1.", 7) != 0 || (in[7] != '0' && in[7] != '1') || in[8] != ' ') {
		snprintf(err, errcap, "%s: not an HTTP reply", sock);
		goto out;
	}
	errno = 0;
	code = strtoul(in + 9, &end, 10);
	if (errno != 0 || end != in + 12 || code < 100 || code > 599) {
		snprintf(err, errcap, "%s: bad HTTP status line", sock);
		goto out;
	}
	*status = (int)code;
	if (resp != NULL && cap > 0 && (p = strstr(in, "\r\n\r\n")) != NULL) {
		size_t n = got - (size_t)(p + 4 - in);

		if (n >= cap)
			n = cap - 1;
		memcpy(resp, p + 4, n);
		resp[n] = '\0';
	}
	ret = 0;
out:
	free(in);
	if (fd != -1)
		close(fd);
	return ret;
}

/* ---------------------------------------------------------------- bwrap's status */

static int
json_int(const char *buf, const char *key, long lo, long hi, long *out)
{
	const char *p = strstr(buf, key), *q;
	char *end;
	long v;

	if (p == NULL)
		return 0;
	q = p + strlen(key);
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q != ':')
		return 0;
	q++;
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q < '0' || *q > '9')
		return 0;
	errno = 0;
	v = strtol(q, &end, 10);
	if (errno != 0 || v < lo || v > hi)
		return 0;
	*out = v;
	return 1;
}

void
run_status_parse(const char *buf, pid_t *child_pid, int *exit_code)
{
	long v;

	if (json_int(buf, "\"child-pid\"", 1, INT32_MAX, &v))
		*child_pid = (pid_t)v;
	if (json_int(buf, "\"exit-code\"", 0, 255, &v))
		*exit_code = (int)v;
}

/* ---------------------------------------------------------------- files */

/* appends the file <path> (at most <max> bytes) to <buf>; 0 or -1 with errno */
static int
file_append(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	size_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		if (errno == 0 || S_ISREG(st.st_mode))
			errno = EFBIG;
		close(fd);
		return -1;
	}
	*buf = xrealloc(*buf, *len + (size_t)st.st_size + 2);
	got = proc_read_upto(fd, *buf + *len, (size_t)st.st_size);
	close(fd);
	*len += got;
	if (*len > 0 && (*buf)[*len - 1] != '\n')
		(*buf)[(*len)++] = '\n';
	(*buf)[*len] = '\0';
	return 0;
}

/* ---------------------------------------------------------------- the run */

struct run {
	const struct run_opts *o;
	struct netns_sandbox sb;
	char name[SANDBOX_NAME_MAX + 1];
	int registered;
	int sfd;              /* signalfd */
	int status_fd;        /* bwrap's JSON status */
	int dns_sink;         /* the UDP socket standing in for a missing DNS responder, or -1 */
	pid_t bwrap;
	pid_t child_pid;      /* the sandbox's pid 1, from bwrap */
	int exit_code;        /* from bwrap, -1 until known */
	char status[STATUS_MAX];
	size_t status_len;
	uint64_t t_spawn;     /* bwrap started */
	uint64_t t_exec;      /* the command's exec seen (--timing) */
};

static int
register_sandbox(struct run *r)
{
	const char *addrs[2];
	char a4[32], a6[64], body[REG_BODY_MAX], resp[256], err[NETNS_ERR_MAX];
	struct jbuf jb;
	int status = 0;
	size_t ns = r->o->nsecrets < REG_SECRETS_MAX ? r->o->nsecrets : REG_SECRETS_MAX;

	snprintf(a4, sizeof(a4), "%s/32", r->sb.net.sbx_v4);
	snprintf(a6, sizeof(a6), "%s/128", r->sb.net.sbx_v6);
	addrs[0] = a4;
	addrs[1] = a6;
	jb_init(&jb, body, sizeof(body));
	jb_str(&jb, "name", r->name);
	jb_str(&jb, "backend", "netns");
	jb_pairs(&jb, "addresses", NULL, addrs, NULL, NULL, 2);
	jb_pairs(&jb, "secrets", NULL, (const char *const *)r->o->secrets, NULL, NULL, ns);
	if (ns == 0) {
		/* jb_pairs writes nothing for none: the key must still be there */
		if (jb.len + 16 < jb.cap) {
			memcpy(jb.buf + jb.len, jb.nfields ? ",\"secrets\":[]" : "\"secrets\":[]",
			       jb.nfields ? 13 : 12);
			jb.len += jb.nfields ? 13 : 12;
			jb.buf[jb.len] = '\0';
		}
	}
	if (jb_finish(&jb, 0) < 0 || ns < r->o->nsecrets) {
		say("the registration of %s does not fit %u bytes", r->name, (unsigned)REG_BODY_MAX);
		return SLUICE_ETOOBIG;
	}
	if (run_admin_call(r->o->admin_path, "POST", "/sandboxes", body, &status, resp, sizeof(resp), err,
	                   sizeof(err)) != 0) {
		say("cannot register the sandbox with the gateway: %s", err);
		return SLUICE_EIO;
	}
	if (status >= 200 && status < 300) {
		r->registered = 1;
		return 0;
	}
	if (status == 404 || status == 405 || status == 501) {
		say("warning: this gateway has no POST /sandboxes (HTTP %d): %s runs unregistered, so the audit will not "
		    "name it and no secret is bound to it by name", status, r->name);
		return 0;
	}
	say("the gateway refused to register %s: HTTP %d %s", r->name, status, resp);
	return SLUICE_EDENIED;
}

static void
unregister_sandbox(struct run *r)
{
	char path[64], err[NETNS_ERR_MAX];
	int status = 0;

	if (!r->registered)
		return;
	r->registered = 0;
	snprintf(path, sizeof(path), "/sandboxes/%s", r->name);
	if (run_admin_call(r->o->admin_path, "DELETE", path, NULL, &status, NULL, 0, err, sizeof(err)) != 0)
		say("warning: cannot remove %s from the gateway: %s", r->name, err);
	else if (status < 200 || status >= 300)
		say("warning: the gateway answered HTTP %d to removing %s", status, r->name);
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
		if (run_admin_call(o->admin_path, "DELETE", path, NULL, &status, NULL, 0, err, sizeof(err)) != 0)
			say("warning: cannot remove the dead sandbox %s from the gateway: %s", stale[i].name, err);
	}
}

/* reads what bwrap wrote; 1 at EOF */
static int
status_read(struct run *r)
{
	char tmp[512];
	ssize_t got = read(r->status_fd, tmp, sizeof(tmp));

	if (got == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0)
		return 1;
	if (r->status_len + (size_t)got < sizeof(r->status)) {
		memcpy(r->status + r->status_len, tmp, (size_t)got);
		r->status_len += (size_t)got;
		r->status[r->status_len] = '\0';
	}
	run_status_parse(r->status, &r->child_pid, &r->exit_code);
	return 0;
}

static void
forward(struct run *r, int sig)
{
	pid_t cmd = r->child_pid > 0 ? netns_command_pid(r->child_pid, 0) : 0;

	if (cmd > 0)
		kill(cmd, sig);
	else
		kill(r->bwrap, SIGKILL);  /* nothing started yet: stop the sandbox */
}

/* waits for bwrap, forwarding signals; returns its wait status */
static int
supervise(struct run *r)
{
	uint64_t deadline = 0;
	int status = 0, eof = 0, signals = 0;

	for (;;) {
		struct pollfd pf[2] = {{r->sfd, POLLIN, 0}, {eof ? -1 : r->status_fd, POLLIN, 0}};
		int timeout = -1;
		pid_t w;

		/* watching for the exec costs a wake-up per ms: only with --timing, and for 5 s at most */
		if (r->o->timing && r->t_exec == 0 && now_ns() - r->t_spawn < 5000000000u)
			timeout = 1;
		if (deadline != 0) {
			uint64_t now = now_ns();
			int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;

			timeout = timeout == -1 || left < timeout ? left : timeout;
		}
		if (poll(pf, 2, timeout) == -1 && errno != EINTR)
			kill(r->bwrap, SIGKILL);
		if (pf[1].revents != 0 && status_read(r))
			eof = 1;
		if (r->o->timing && r->t_exec == 0 && r->child_pid > 0 && netns_command_pid(r->child_pid, 1) > 0)
			r->t_exec = now_ns();
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo != SIGCHLD) {
				if (signals++ == 0) {
					forward(r, (int)si.ssi_signo);
					deadline = now_ns() + (uint64_t)RUN_GRACE_MS * 1000000u;
				} else {
					kill(r->bwrap, SIGKILL);
				}
			}
		}
		if (deadline != 0 && now_ns() >= deadline) {
			kill(r->bwrap, SIGKILL);
			deadline = 0;
		}
		w = waitpid(r->bwrap, &status, WNOHANG);
		if (w == r->bwrap)
			break;
	}
	r->bwrap = -1;
	/* the last status line may still be in the pipe */
	while (!eof && status_read(r) == 0 && r->exit_code < 0)
		;
	return status;
}

static int
bundle_make(const struct run_opts *o, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	if (file_append(RUN_SYSTEM_BUNDLE, RUN_BUNDLE_MAX, buf, len) == -1 && errno != ENOENT) {
		say("%s: %s", RUN_SYSTEM_BUNDLE, strerror(errno));
		return SLUICE_EIO;
	}
	if (file_append(o->ca_pem, RUN_CA_MAX, buf, len) == -1) {
		say("the gateway's CA certificate %s: %s", o->ca_pem, strerror(errno));
		return SLUICE_EIO;
	}
	return 0;
}

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
		say("a UDP port for the missing DNS responder: %s", strerror(errno));
		return 0;
	}
	port = ntohs(sa.sin6_port);
	/* connected elsewhere, it matches no datagram from the sandbox: those get port unreachable (rejected) */
	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_addr = in6addr_loopback;
	sa.sin6_port = htons(9);
	if (connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		say("a UDP port for the missing DNS responder: %s", strerror(errno));
		return 0;
	}
	return port;
}

int
run_sandbox(const struct run_opts *o)
{
	struct run r;
	struct netns_exec x;
	sigset_t mask, pending;
	char err[NETNS_ERR_MAX], resolv[64], *bundle = NULL, *envp[RUN_ENV_MAX + 1];
	size_t bundle_len = 0;
	uint64_t t_in = now_ns(), t_claim = 0, t_net = 0, t_reg = 0, t_spawn = 0;
	struct netns_stale stale[NETNS_STALE_REG_MAX];
	size_t nstale = 0;
	unsigned removed = 0;
	uint16_t dns_port;
	int ret = 1, st, hs = 0, n;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.sfd = r.status_fd = r.dns_sink = -1;
	r.bwrap = -1;
	r.exit_code = -1;
	envp[0] = NULL;
	netns_init(&r.sb);
	/* signals wait in the signalfd: setup is never cut in half, and what arrives is forwarded later */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	r.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r.sfd == -1) {
		say("signalfd: %s", strerror(errno));
		goto out;
	}
	if (o->admin_path != NULL) {
		if (run_admin_call(o->admin_path, "GET", "/health", NULL, &hs, NULL, 0, err, sizeof(err)) != 0 ||
		    hs != 200) {
			say("the gateway is not running for this configuration (GET /health on %s: %s); start it with "
			    "`sluice serve -c FILE` first",
			    o->admin_path, hs != 0 ? "not 200" : err);
			goto out;
		}
	}
	if (bundle_make(o, &bundle, &bundle_len) != 0)
		goto out;
	n = run_env_make(o->env, o->nenv, o->workspace != NULL, envp, RUN_ENV_MAX + 1);
	if (n < 0) {
		say("the environment: %s", sluice_strerror(n));
		goto out;
	}
	dns_port = o->dns_port;
	if (dns_port == 0 && (dns_port = dns_sink(&r.dns_sink)) == 0)
		goto out;
	if (netns_claim(&r.sb, o->name, o->admin_path, o->transparent_port, dns_port, &removed, stale,
	                NETNS_STALE_REG_MAX, &nstale, err, sizeof(err)) != 0) {
		say("%s", err);
		goto out;
	}
	if (removed > 0)
		say("removed the leftovers of %u earlier sandbox%s", removed, removed == 1 ? "" : "es");
	unregister_stale(o, stale, nstale);
	t_claim = now_ns();
	memcpy(r.name, r.sb.name, sizeof(r.name));
	if (netns_setup(&r.sb, err, sizeof(err)) != 0) {
		say("%s", err);
		goto out;
	}
	t_net = now_ns();
	if (o->admin_path != NULL && register_sandbox(&r) != 0)
		goto out;
	t_reg = now_ns();
	/* a SIGINT/SIGTERM during setup: the command never starts */
	if (sigpending(&pending) == 0 &&
	    (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) || sigismember(&pending, SIGHUP))) {
		ret = sigismember(&pending, SIGINT) ? 130 : sigismember(&pending, SIGTERM) ? 143 : 129;
		goto out;
	}
	snprintf(resolv, sizeof(resolv), "nameserver %s\n", r.sb.net.host_v4);
	memset(&x, 0, sizeof(x));
	x.argv = o->argv;
	x.envp = envp;
	x.uid = o->uid;
	x.gid = (gid_t)o->uid;
	x.workspace = o->workspace;
	x.resolv = resolv;
	x.resolv_len = strlen(resolv);
	x.bundle = bundle;
	x.bundle_len = bundle_len;
	x.hide = o->hide;
	x.nhide = o->nhide;
	if (netns_spawn(&r.sb, &x, &r.bwrap, &r.status_fd, err, sizeof(err)) != 0) {
		say("%s", err);
		goto out;
	}
	t_spawn = r.t_spawn = now_ns();
	st = supervise(&r);
	if (r.exit_code >= 0)
		ret = r.exit_code;
	else if (WIFEXITED(st))
		ret = WEXITSTATUS(st);
	else
		ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
	if (o->timing) {
		if (r.t_exec != 0)
			say("timing: %.1f ms from start to the command's exec (config %.1f, stale check and claim %.1f, "
			    "network %.1f, registration %.1f, bubblewrap %.1f)",
			    ms(o->t0_ns, r.t_exec), ms(o->t0_ns, t_in), ms(t_in, t_claim), ms(t_claim, t_net),
			    ms(t_net, t_reg), ms(t_reg, r.t_exec));
		else
			say("timing: the command's exec was not observed (%.1f ms to bubblewrap's start)",
			    ms(o->t0_ns, t_spawn));
	}
out:
	if (r.bwrap > 0) {
		int s;

		kill(r.bwrap, SIGKILL);
		waitpid(r.bwrap, &s, 0);
	}
	unregister_sandbox(&r);
	netns_teardown(&r.sb);
	if (r.status_fd != -1)
		close(r.status_fd);
	if (r.sfd != -1)
		close(r.sfd);
	if (r.dns_sink != -1)
		close(r.dns_sink);
	run_env_free(envp);
	free(bundle);
	/* the signal mask stays: a signal still pending would only kill us before we return the status */
	return ret;
}
