/*
 * proxy/gateway.c - the gateway process: listeners, privileges, workers,
 * signals (SIGTERM drains, SIGHUP reloads) and the admin socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <systemd/sd-daemon.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"
#include "gateway_int.h"
#include "proxy/h2/h2.h"
#include "proxy/judge/mcp_peer.h"

#define PROXY_DEFAULT_LISTEN "127.0.0.1:3128"

/* audit_open's counter: each record the log is given feeds /metrics. */
static void
count_audit(void *arg, const struct audit_rec *rec)
{
	metrics_audit(arg, rec);
}

static int
bind_listener(const struct netaddr_listen *la, const char **err)
{
	int fd, one = 1, zero = 0;

	fd = socket(la->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		*err = "socket";
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
	    (la->family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) == -1)) {
		*err = "setsockopt";
		close(fd);
		return -1;
	}
	if (bind(fd, (const struct sockaddr *)&la->ss, la->sslen) == -1) {
		*err = "cannot bind a listener (address in use, or not allowed?)";
		close(fd);
		return -1;
	}
	if (listen(fd, 1024) == -1) {
		*err = "listen";
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * One gateway per configuration.  Listeners use SO_REUSEPORT (one socket per
 * worker), so a second gateway on the same addresses would silently share
 * them with the first; and the admin socket of a running gateway would be
 * unlinked as if it were stale.  Two guards, both before anything is bound:
 * an flock on <admin>.gateway.lock (sluice run's <admin>.lock is its own), held for the life of the process (the kernel
 * releases it when the process dies, so a crash leaves nothing to clean),
 * and a bind() of each listener address without SO_REUSEPORT: EADDRINUSE
 * means something already serves it.  (A probe is closed before the real
 * bind; two gateways started in the same instant with different admin
 * sockets could both pass it: the lock covers the usual case of one
 * configuration started twice.)
 */
static int
lock_admin(const char *path, const char **err)
{
	char lock[sizeof(((struct sockaddr_un *)0)->sun_path) + 16];
	int fd, n;

	n = snprintf(lock, sizeof(lock), "%s.gateway.lock", path);
	if (n < 0 || (size_t)n >= sizeof(lock)) {
		*err = "admin socket path too long";
		return -1;
	}
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		log_warn("%s", lock);
		*err = "cannot open the admin socket's lock file";
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK) {
			log_warnx("another gateway is running with the admin socket %s (it holds %s); "
			          "it is left untouched", path, lock);
			*err = "another gateway is already running for this configuration (listen.admin is in use)";
		} else {
			log_warn("flock %s", lock);
			*err = "cannot lock the admin socket's lock file";
		}
		close(fd);
		return -1;
	}
	return fd;
}

static int
probe_free(const struct netaddr_listen *la, const char *key, const char *spec, const char **err)
{
	int fd, one = 1, zero = 0, ret = 0;

	fd = socket(la->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return 0;  /* the real bind reports it */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  /* TIME_WAIT is not "served" */
	if (la->family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (const struct sockaddr *)&la->ss, la->sslen) == -1 && errno == EADDRINUSE) {
		log_warnx("%s %s is already served by another process (another gateway?): not starting", key, spec);
		*err = "a listener address is already in use (is another gateway running for this configuration?)";
		ret = -1;
	}
	close(fd);
	return ret;
}

static int
bind_admin(const char *path, const char **err)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd;

	if (strlen(path) >= sizeof(un.sun_path)) {
		*err = "admin socket path too long";
		return -1;
	}
	memcpy(un.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);  /* a stale socket from a previous run */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		*err = "admin socket";
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&un, sizeof(un)) == -1) {
		umask(old);
		*err = "cannot bind the admin socket";
		close(fd);
		return -1;
	}
	umask(old);
	chmod(path, 0600);
	if (listen(fd, 16) == -1) {
		*err = "admin listen";
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The client's ALPN list: what it offers of h2 and http/1.1 is noted on the
 * connection (the upstream is offered only that overlap).  With listen.http2
 * the client gets h2 when it offers it, unless the host answered HTTP/1.1
 * only when last offered h2 (upstream_alpn_memo): then both sides speak the
 * same protocol and nothing needs translating.
 */
static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in, unsigned inlen,
            void *arg)
{
	struct conn *c = SSL_get_app_data(ssl);
	unsigned i, n;
	int h1 = 0, h2 = 0;

	for (i = 0; i < inlen; i += 1 + n) {
		n = in[i];
		if (i + 1 + n > inlen)
			return SSL_TLSEXT_ERR_NOACK;
		h2 |= n == 2 && memcmp(in + i + 1, "h2", 2) == 0;
		h1 |= n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0;
	}
	if (c != NULL) {
		c->alpn_h1 = h1;
		c->alpn_h2 = h2;
	}
	if (h2 && arg != NULL &&
	    (c == NULL || !h1 || upstream_alpn_memo(c->w, c->host, c->port) != UPSTREAM_ALPN_H1)) {
		*out = (const unsigned char *)"h2";
		*outlen = 2;
		return SSL_TLSEXT_ERR_OK;
	}
	if (h1) {
		*out = (const unsigned char *)"http/1.1";
		*outlen = 8;
		return SSL_TLSEXT_ERR_OK;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

static SSL_CTX *
server_ctx_create(int http2, const char **err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		*err = "cannot create the client-facing TLS context";
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* cio.c retries a partial SSL_write with the same bytes, which may have moved in its buffer */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
	                      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
	/* one read(2) takes what the socket holds, not a record header and then its body (cio.c reads to WANT_READ) */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, http2 ? (void *)ctx : NULL);  /* any non-NULL: h2 */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
	SSL_CTX_sess_set_cache_size(ctx, 20000);
	return ctx;
}

/*
 * Every outcome of a held request (approvals.h's note hook) becomes its
 * `approval` audit record (admin.c).  The operator's listing shows the path
 * with its query (it is part of what is approved); the audit record keeps
 * the query only with audit.log_query, as every other record does.
 */
static void
approval_note(void *arg, const char *id, const struct approval_info *info, enum approval_decision decision,
              const char *by)
{
	struct gateway *gw = arg;
	struct approval_info cut;
	const char *q = info->path != NULL ? strchr(info->path, '?') : NULL;
	char *path;

	if (q == NULL || gw->cfg->audit_log_query) {
		admin_approval_note(arg, id, info, decision, by);
		return;
	}
	cut = *info;
	path = xstrndup(info->path, (size_t)(q - info->path));
	cut.path = path;
	admin_approval_note(arg, id, &cut, decision, by);
	free(path);
}

/*
 * With state.backend: redis, holds are shared by the fleet when the fleet key is set; without it they stay
 * this gateway's (a remote decision could not be authenticated).
 */
static void
fleet_start(struct gateway *gw)
{
	const char *err = NULL;

	if (gw->store_opts == NULL)
		return;
	if (gw->fleet_key == NULL) {
		log_warnx("state.fleet_key is not set: holds are decided on this gateway only, not across the fleet");
		return;
	}
	gw->approvals_fleet = approvals_fleet_start(gw->approvals, gw->base, gw->store_opts, gw->cfg->gateway_id,
	                                            gw->fleet_key, approval_note, gw, &err);
	if (gw->approvals_fleet == NULL)
		log_warnx("approvals across the fleet are off: %s", err);
	else
		log_info("approvals: holds shared with the fleet as gateway %s", gw->cfg->gateway_id);
	secret_buf_free(gw->fleet_key);   /* the client keeps its own copy */
	gw->fleet_key = NULL;
}

struct gateway *
gateway_create(const char *config_path, const struct policy_config *cfg, struct policy *pol, struct ca *ca,
               const char **err)
{
	struct gateway *gw = xcalloc(1, sizeof(*gw));
	const char *proxy_addr;
	struct audit_opts aopts;
	struct netaddr_listen la_admin;
	long ncpu;
	unsigned i;

	/*
	 * TLS record buffers (~17 KiB, taken and given back on every read and
	 * write of an idle-capable connection) come from mmap, not the heap: in
	 * the heap, long-lived connection state ends up in the holes they leave,
	 * and partly used pages stay resident.  Measured: -0.2 KiB per idle
	 * connection and a steadier figure (docs/performance.md).
	 */
	mallopt(M_MMAP_THRESHOLD, PROXY_MMAP_THRESHOLD);
	gw->config_path = config_path;
	gw->cfg = cfg;
	gw->ca = ca;
	gw->h2_ops = &conn_ops_h2_conn;
	gw->up_mux = &h2up_mux;
	gw->pol = pol;
	gw->metrics = metrics_create(pol);
	gw->admin_fd = -1;
	gw->lock_fd = -1;
	pthread_mutex_init(&gw->clients_mu, NULL);
	pthread_mutex_init(&gw->memo_mu, NULL);
	gw->sbx = sbxreg_new();
	gw->approvals = approvals_new(APPROVALS_MAX_PENDING);
	approvals_set_note(gw->approvals, approval_note, gw);
	if ((gw->mcp_peers = mcp_peers_create()) == NULL)  /* without it every client-posted MCP answer is refused */
		log_warnx("out of memory for the table of MCP server requests: answers to them are refused");
	gw->synth = synth_new();
	gw->dns_fd = -1;
	for (i = 0; i < PROXY_MAX_WORKERS; i++)
		gw->fd_transparent[i] = gw->fd_proxy[i] = -1;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	gw->nworkers = cfg->workers ? cfg->workers : (ncpu > 0 ? (unsigned)ncpu : 1);
	if (gw->nworkers > PROXY_MAX_WORKERS)
		gw->nworkers = PROXY_MAX_WORKERS;
	/* with no listener configured, the explicit proxy serves loopback only */
	proxy_addr = cfg->listen_proxy;
	if (cfg->listen_transparent == NULL && proxy_addr == NULL) {
		proxy_addr = PROXY_DEFAULT_LISTEN;
		log_info("no listen section: explicit proxy on %s", proxy_addr);
	}
	if (cfg->listen_transparent != NULL && netaddr_listen_parse(cfg->listen_transparent, &gw->la_transparent) != 0) {
		*err = "listen.transparent is not an address";
		goto fail;
	}
	if (proxy_addr != NULL && netaddr_listen_parse(proxy_addr, &gw->la_proxy) != 0) {
		*err = "listen.proxy is not an address";
		goto fail;
	}
	if (cfg->listen_admin != NULL) {
		if (netaddr_listen_parse(cfg->listen_admin, &la_admin) != 0 || la_admin.family != AF_UNIX) {
			*err = "listen.admin must be unix:/path";
			goto fail;
		}
		if ((gw->lock_fd = lock_admin(la_admin.path, err)) == -1)
			goto fail;
	}
	/* nothing is created before every listener address is known to be free */
	if ((cfg->listen_transparent != NULL &&
	     probe_free(&gw->la_transparent, "listen.transparent", cfg->listen_transparent, err) != 0) ||
	    (proxy_addr != NULL && probe_free(&gw->la_proxy, "listen.proxy", proxy_addr, err) != 0))
		goto fail;
	if (cfg->listen_admin != NULL && (gw->admin_fd = bind_admin(la_admin.path, err)) == -1)
		goto fail;
	for (i = 0; i < gw->nworkers; i++) {
		if (cfg->listen_transparent != NULL &&
		    (gw->fd_transparent[i] = bind_listener(&gw->la_transparent, err)) == -1)
			goto fail;
		if (proxy_addr != NULL && (gw->fd_proxy[i] = bind_listener(&gw->la_proxy, err)) == -1)
			goto fail;
	}
	if (cfg->listen_dns != NULL && gwdns_bind(gw, cfg->listen_dns, err) != 0)
		goto fail;
	policy_audit_opts(cfg, &aopts);
	gw->audit = audit_open(&aopts, config_path, count_audit, gw->metrics, err);
	if (gw->audit == NULL)
		goto fail;
	if (cfg->audit_file == NULL)
		log_warnx("no audit.file configured: requests are not audited");
	if ((gw->srv_ctx = server_ctx_create(cfg->http2, err)) == NULL || (gw->up_ctx = upstream_ctx_create(cfg, err)) == NULL)
		goto fail;
	/* before the privilege drop: secret files may be readable by root only */
	if ((gw->creds = cred_store_create(cfg->ca_dir, err)) == NULL)
		goto fail;
	cred_store_sync(gw->creds, pol);
	/* as root: state_dir is made for the user the gateway will run as; a counters file that does not parse stops here */
	if (reload_init(gw, err) != 0)
		goto fail;
	return gw;
fail:
	gateway_destroy(gw);
	return NULL;
}

int
gateway_drop_privileges(struct gateway *gw, const char *user, const char **err)
{
	struct passwd *pw;

	(void)gw;
	if (geteuid() != 0) {
		/* started as its own user (systemd's User=): nothing to drop, and no way to switch */
		log_info("not started as root: running as uid %d, user: '%s' has no effect", (int)geteuid(),
		         user != NULL ? user : "root");
	} else if (user == NULL || strcmp(user, "root") == 0) {
		log_warnx("running as root (user: root): the gateway keeps every privilege");
	} else {
		pw = getpwnam(user);
		if (pw == NULL) {
			*err = "unknown user";
			return SLUICE_ENOENT;
		}
		if (setgroups(1, &pw->pw_gid) == -1 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1) {
			*err = "cannot switch user";
			return SLUICE_EIO;
		}
		if (setuid(0) != -1) {
			*err = "could regain root after dropping privileges";
			return SLUICE_EIO;
		}
	}
	/* no core dumps, and no ptrace or /proc/PID/mem from other processes of this user;
	 * and nothing this process could exec may gain privileges again */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		*err = "prctl(PR_SET_DUMPABLE)";
		return SLUICE_EIO;
	}
	return 0;
}

static void
drain_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	unsigned i;

	(void)fd;
	(void)what;
	log_warnx("drain time (limits.drain) is over: closing the remaining connections");
	for (i = 0; i < gw->nworkers; i++)
		worker_stop(&gw->workers[i]);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct gateway *gw = arg;
	unsigned i;
	unsigned ms = gw->cfg->limits.drain_ms;

	(void)what;
	if (sig == SIGHUP) {
		gateway_reload(gw, "SIGHUP");  /* reload.c; with reload.watch a change of the file does the same */
		return;
	}
	if (sig == SIGUSR1) {  /* logrotate: the audit file is rotated (or reopened), the chain goes on */
		audit_rotate(gw->audit);
		return;
	}
	if (gw->stopping)
		return;
	gw->stopping = 1;
	log_info("signal %d: draining open requests (up to %u ms)", (int)sig, ms);
	sd_notify(0, "STOPPING=1\nSTATUS=draining");
	/* requests waiting for an operator are answered now (503), not at the drain deadline */
	approvals_shutdown(gw->approvals);
	for (i = 0; i < gw->nworkers; i++)
		worker_post(&gw->workers[i], NULL, 0, 0, 1);
	event_base_once(gw->base, -1, EV_TIMEOUT, drain_deadline, gw, &(struct timeval){ms / 1000, (ms % 1000) * 1000});
}

static void
worker_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	unsigned i, done = 0;

	(void)fd;
	(void)what;
	/* activations from several threads may coalesce: count the flags */
	for (i = 0; i < gw->nstarted; i++)
		if (atomic_load(&gw->workers[i].finished))
			done++;
	if (done == gw->nstarted)
		event_base_loopexit(gw->base, NULL);
}

/*
 * Every TLS handshake allocates and frees tens of KiB; what it frees sits in
 * holes between long-lived connection state and still counts as resident.
 * Returning those pages now and then keeps an idle gateway small.  The same
 * tick re-runs exec: secret sources whose ttl ran out (cred.c).
 */
static void
trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cred_store_refresh(((struct gateway *)arg)->creds);
	malloc_trim(0);
}

int
gateway_run(struct gateway *gw)
{
	struct event *sigs[5];
	static const int signums[5] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, 0};
	const char *err = NULL;
	unsigned i, started = 0;
	int ret = 0;

	signal(SIGPIPE, SIG_IGN);
	gw->base = event_base_new();
	if (gw->base == NULL)
		return SLUICE_EIO;
	gw->done_ev = event_new(gw->base, -1, 0, worker_done_cb, gw);
	gw->trim_ev = event_new(gw->base, -1, EV_PERSIST, trim_cb, gw);
	event_add(gw->trim_ev, &(struct timeval){PROXY_TRIM_SECONDS, 0});
	for (i = 0; signums[i] != 0; i++) {
		sigs[i] = evsignal_new(gw->base, signums[i], signal_cb, gw);
		event_add(sigs[i], NULL);
	}
	/* the start record is the first of this run: before any worker or DNS answer can queue one */
	if (audit_start(gw->audit, &err) != 0) {
		log_warnx("%s", err);
		for (i = 0; signums[i] != 0; i++)
			event_free(sigs[i]);
		return SLUICE_EIO;
	}
	/* policy warnings, the counters' one-second save timer, the config file watch (reload.c) */
	reload_start(gw);
	if (gw->admin_fd != -1)
		admin_start(gw);
	fleet_start(gw);
	gwdns_start(gw);
	for (i = 0; i < gw->nworkers; i++) {
		gw->workers[i].idx = i;
		gw->workers[i].gw = gw;
		if (worker_start(&gw->workers[i]) != 0) {
			log_warnx("cannot start worker %u", i);
			ret = SLUICE_EIO;
			break;
		}
		started++;
	}
	gw->nstarted = started;
	if (ret == 0) {
		log_info("serving with %u workers", gw->nworkers);
		/* systemd (Type=notify): every listener is bound and the policy loaded; a no-op without NOTIFY_SOCKET */
		sd_notifyf(0, "READY=1\nSTATUS=serving with %u workers", gw->nworkers);
		event_base_dispatch(gw->base);  /* until every worker has finished */
	} else {
		for (i = 0; i < started; i++)
			worker_post(&gw->workers[i], NULL, 0, 0, 1);
		for (i = 0; i < started; i++)
			worker_stop(&gw->workers[i]);
	}
	for (i = 0; i < started; i++)
		worker_join(&gw->workers[i]);
	for (i = 0; signums[i] != 0; i++)
		event_free(sigs[i]);
	approvals_fleet_stop(gw->approvals_fleet);  /* its events are on gw->base; no worker holds anything now */
	gw->approvals_fleet = NULL;
	reload_stop(gw);  /* the workers are gone: the counters they changed last are saved */
	/* the workers are gone: the stop record is the run's last, then everything is fsynced */
	audit_stop(gw->audit, gw->stopping ? "signal" : ret != 0 ? "error" : "exit");
	log_info("stopped");
	return ret;
}

void
gateway_destroy(struct gateway *gw)
{
	struct client_slot *s;
	unsigned i;

	if (gw == NULL)
		return;
	for (i = 0; i < PROXY_MAX_WORKERS; i++) {
		if (gw->fd_transparent[i] != -1)
			close(gw->fd_transparent[i]);
		if (gw->fd_proxy[i] != -1)
			close(gw->fd_proxy[i]);
	}
	gwdns_stop(gw);
	if (gw->admin != NULL)
		evhttp_free(gw->admin);
	else if (gw->admin_fd != -1)
		close(gw->admin_fd);
	if (gw->done_ev != NULL)
		event_free(gw->done_ev);
	if (gw->trim_ev != NULL)
		event_free(gw->trim_ev);
	reload_free(gw);  /* its events, before their base; saves the counters if they changed */
	if (gw->base != NULL)
		event_base_free(gw->base);
	approvals_free(gw->approvals);  /* before the audit closes; the workers' connections cancelled every hold */
	mcp_peers_destroy(gw->mcp_peers);
	audit_close(gw->audit);
	sbxreg_free(gw->sbx);
	synth_free(gw->synth);
	cred_store_destroy(gw->creds);
	metrics_destroy(gw->metrics);
	SSL_CTX_free(gw->srv_ctx);
	SSL_CTX_free(gw->up_ctx);
	policy_unref(gw->pol);
	for (i = 0; i < PROXY_CLIENT_SLOTS; i++)
		while ((s = gw->clients[i]) != NULL) {
			gw->clients[i] = s->next;
			free(s);
		}
	pthread_mutex_destroy(&gw->clients_mu);
	pthread_mutex_destroy(&gw->memo_mu);
	free(gw->memo);
	if (gw->lock_fd != -1)
		close(gw->lock_fd);  /* last: the next gateway may take the admin socket only now */
	free(gw);
}
