/*
 * proxy/worker.c - one worker thread: its event loop, its listener sockets
 * (SO_REUSEPORT, so the kernel spreads connections), its policy snapshot and
 * its upstream pool.  The main thread talks to a worker only through the
 * mailbox below.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/codec/tls_hello.h"
#include "gateway_int.h"
#include "proxy/net/tlsbuf.h"
#include "proxy/store/store.h"

static void
accept_transparent(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
	(void)l;
	conn_accept(arg, CONN_MODE_TRANSPARENT, fd, sa, (socklen_t)len);
}

/*
 * The audit log cannot be written: a new explicit-proxy client is told so
 * at once (503 and a JSON reason), before it sends anything through us.
 * Transparent clients are refused request by request, inside their TLS.
 */
static void
refuse_unaudited(struct worker *w, evutil_socket_t fd, const struct sockaddr *sa)
{
	static const char reason[] = "the audit log cannot be written: new connections are refused until it can";
	struct evbuffer *out = evbuffer_new();
	char peer[CONN_ADDR_STR];

	if (out == NULL) {
		close(fd);
		return;
	}
	struct audit_rec r = {
		.kind = AUDIT_KIND_DENIAL,
		.sandbox = netaddr_format(sa, 0, peer, sizeof(peer)),
		.client = peer,
		.rule = "audit",
		.reason = reason,
		.status = 503,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
	};
	audit_write(w->gw->audit, &r);
	atomic_fetch_add(&w->gw->ndenied, 1);
	evutil_make_socket_nonblocking(fd);
	respond_json(out, 503, "audit log unavailable", NULL, "audit", reason, 1);
	(void)send(fd, evbuffer_pullup(out, -1), evbuffer_get_length(out), MSG_NOSIGNAL);
	evbuffer_free(out);
	/* closing with unread input would reset the connection and lose the answer: read what comes first */
	conn_linger_fd(w, fd);
}

static void
accept_proxy(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
	struct worker *w = arg;

	(void)l;
	(void)len;
	if (!audit_healthy(w->gw->audit) && !w->draining) {
		refuse_unaudited(w, fd, sa);
		return;
	}
	conn_accept(arg, CONN_MODE_EXPLICIT, fd, sa, (socklen_t)len);
}

static void
accept_error(struct evconnlistener *l, void *arg)
{
	(void)l;
	(void)arg;
	log_warn("accept");  /* EMFILE and friends: the listener keeps going */
}

static void
drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct conn *c, *next;

	(void)fd;
	(void)what;
	/* connections waiting between requests will not get another one */
	for (c = LIST_FIRST(&w->conns); c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		if (c->state == CONN_S_PEEK || c->state == CONN_S_TLS_ACCEPT ||
		    (c->state == CONN_S_REQ_HEAD && !c->head_started))
			conn_close(c);
	}
	worker_drain_check(w);
}

static void
mail_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct policy *pol;
	uint64_t gen, rgen;
	int drain, revoke;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&w->mail_mu);
	pol = w->mail_pol;
	w->mail_pol = NULL;
	gen = w->mail_gen;
	rgen = w->mail_revoke_gen;
	drain = w->mail_drain;
	revoke = w->mail_revoke;
	w->mail_revoke = 0;
	pthread_mutex_unlock(&w->mail_mu);
	if (pol != NULL) {
		policy_unref(w->pol);
		w->pol = pol;   /* new connections use it; open ones adopt it at their next request (revoke.c) */
		w->pol_gen = gen;
		w->revoke_gen = rgen;
	}
	if (pol != NULL || revoke)
		revoke_sweep(w);  /* connections whose secrets, sandboxes or registration were withdrawn */
	if (drain && !w->draining) {
		w->draining = 1;
		if (w->l_transparent != NULL)
			evconnlistener_free(w->l_transparent);
		if (w->l_proxy != NULL)
			evconnlistener_free(w->l_proxy);
		w->l_transparent = w->l_proxy = NULL;
		upstream_pool_clear(w);
		w->drain_ev = event_new(w->base, -1, EV_PERSIST, drain_tick, w);
		event_add(w->drain_ev, &(struct timeval){0, 100000});
		drain_tick(-1, 0, w);
	}
}

void
worker_post(struct worker *w, struct policy *pol, uint64_t gen, uint64_t rgen, int drain)
{
	pthread_mutex_lock(&w->mail_mu);
	if (pol != NULL) {
		policy_unref(w->mail_pol);
		w->mail_pol = pol;
		w->mail_gen = gen;
		w->mail_revoke_gen = rgen;
	}
	if (drain)
		w->mail_drain = 1;
	pthread_mutex_unlock(&w->mail_mu);
	event_active(w->mail_ev, EV_READ, 0);
}

void
worker_post_revoke(struct worker *w)
{
	pthread_mutex_lock(&w->mail_mu);
	w->mail_revoke = 1;
	pthread_mutex_unlock(&w->mail_mu);
	event_active(w->mail_ev, EV_READ, 0);
}

void
worker_stop(struct worker *w)
{
	event_base_loopbreak(w->base);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct conn *c;

	audit_worker_attach(w->gw->audit, w->base);
	event_base_dispatch(w->base);
	while ((c = LIST_FIRST(&w->conns)) != NULL)
		conn_close(c);
	upstream_pool_clear(w);
	/* run the deferred reaps of the connections closed above */
	event_base_loop(w->base, EVLOOP_NONBLOCK);
	audit_worker_detach();
	tlsbuf_thread_flush();
	atomic_store(&w->finished, 1);
	event_active(w->gw->done_ev, EV_READ, 0);
	return NULL;
}

int
worker_start(struct worker *w)
{
	struct gateway *gw = w->gw;
	const struct policy_limits *lim = &gw->cfg->limits;
	struct event_config *ecfg;
	int i;

	/*
	 * epoll_ctl calls are batched per loop round: an upstream's write event
	 * is added and dropped around every response otherwise.  (Unsafe only
	 * with dup()ed descriptors, which the gateway never makes.)
	 */
	ecfg = event_config_new();
	if (ecfg == NULL)
		return SLUICE_EIO;
	event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	w->base = event_base_new_with_config(ecfg);
	event_config_free(ecfg);
	if (w->base == NULL || deadline_init(w) != 0)
		return SLUICE_EIO;
	w->sem_hooks = &session_sem_hooks;  /* likewise the judge, when an operator decides */
	if (gw->store_opts != NULL) {
		const char *serr = NULL;

		/* before the thread runs; from then on only that thread touches it */
		w->store = store_create(w->base, gw->store_opts, &serr);
		if (w->store == NULL) {
			log_warnx("worker %u: the shared counters (state.redis): %s", w->idx, serr ? serr : "cannot be made");
			return SLUICE_EINVAL;
		}
	}
	net_ops_set(w, &session_net_ops);  /* net reports to the session through these, never by calling it */
	w->dns = evdns_base_new(w->base, 0);
	if (w->dns == NULL)
		return SLUICE_EIO;
	if (evdns_base_resolv_conf_parse(w->dns, DNS_OPTIONS_ALL, "/etc/resolv.conf") != 0)
		log_debug("worker %u: no usable /etc/resolv.conf; only upstream.resolve and IP literals work", w->idx);
	evdns_base_set_option(w->dns, "randomize-case:", "0");
	w->srv_ctx = gw->srv_ctx;
	w->up_ctx = gw->up_ctx;
	w->scratch_cap = (lim->header_bytes > TLS_HELLO_MAX_BYTES ? lim->header_bytes : TLS_HELLO_MAX_BYTES) + 1;
	w->scratch = xmalloc(w->scratch_cap);
	w->msg = xcalloc(1, sizeof(*w->msg));
	TAILQ_INIT(&w->pool);
	LIST_INIT(&w->conns);
	LIST_INIT(&w->h2up);
	pthread_mutex_init(&w->mail_mu, NULL);
	w->mail_ev = event_new(w->base, -1, 0, mail_cb, w);
	w->pol = policy_ref(gw->pol);
	w->pol_gen = atomic_load(&gw->pol_gen);
	w->revoke_gen = atomic_load(&gw->revoke_gen);
	i = (int)w->idx;
	if (gw->fd_transparent[i] != -1) {
		w->l_transparent = evconnlistener_new(w->base, accept_transparent, w, LEV_OPT_CLOSE_ON_FREE, 0,
		                                      gw->fd_transparent[i]);
		if (w->l_transparent == NULL)
			return SLUICE_EIO;
		evconnlistener_set_error_cb(w->l_transparent, accept_error);
		gw->fd_transparent[i] = -1;  /* the listener owns it now */
	}
	if (gw->fd_proxy[i] != -1) {
		w->l_proxy = evconnlistener_new(w->base, accept_proxy, w, LEV_OPT_CLOSE_ON_FREE, 0, gw->fd_proxy[i]);
		if (w->l_proxy == NULL)
			return SLUICE_EIO;
		evconnlistener_set_error_cb(w->l_proxy, accept_error);
		gw->fd_proxy[i] = -1;
	}
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
		return SLUICE_EIO;
	return 0;
}

void
worker_join(struct worker *w)
{
	pthread_join(w->thread, NULL);
	if (w->l_transparent != NULL)
		evconnlistener_free(w->l_transparent);
	if (w->l_proxy != NULL)
		evconnlistener_free(w->l_proxy);
	event_free(w->mail_ev);
	if (w->drain_ev != NULL)
		event_free(w->drain_ev);
	policy_unref(w->mail_pol);
	policy_unref(w->pol);
	evdns_base_free(w->dns, 0);
	deadline_dispose(w);
	store_destroy(w->store);  /* its connections are gone: no callback finds a request */
	w->store = NULL;
	event_base_free(w->base);
	pthread_mutex_destroy(&w->mail_mu);
	cred_scrub_cache_free(w);
	free(w->scratch);
	free(w->msg);
}
