/*
 * tests/unit/proxy/netfake.c - the fake proxy/net/ under the real session, and
 * the world it runs in (netfake.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <openssl/ssl.h>
#include "common/sluice.h"
#include "ca/ca.h"
#include "proxy/net/net.h"
#include "proxy/net/linger.h"
#include "proxy/metrics.h"
#include "proxy/sbxreg.h"
#include "audit/writer.h"
#include "proxy/cred/cred.h"
#include "proxy/judge/limits.h"
#include "proxy/judge/approvals.h"
#include "proxy/judge/mcp_peer.h"
#include "tests/unit/proxy/netfake.h"

#define NF_ROUNDS 16      /* I/O rounds of one client per run step, as cio_event's IO_ROUNDS */
#define NF_STEPS 2000     /* run steps of nf_run at most: a session that never settles fails the test */
#define NF_ARMED_MAX 64

static struct nf *world;                  /* the one world of the running test */
static struct conn *armed[NF_ARMED_MAX];  /* conns with a deadline: c->deadline is its ms, c->dl_pos 1 + its slot */

static struct nf_client *
client_of(const struct conn *c)
{
	size_t i;

	for (i = 0; world != NULL && i < world->ncl; i++)
		if (world->cl[i].c == c && c != NULL)
			return &world->cl[i];
	return NULL;
}

static struct nf_up *
up_of(const struct upstream *up)
{
	size_t i;

	for (i = 0; world != NULL && i < world->nups; i++)
		if (world->ups[i].up == up && up != NULL)
			return &world->ups[i];
	fail_msg("an upstream the fake net never gave out");
	return NULL;
}

/* ---- cio.c ---- */

void
cio_start(struct conn *c, SSL *ssl)
{
	struct nf_client *cl = client_of(c);
	char buf[4096];
	ssize_t n;

	c->ssl = ssl;
	c->tls = ssl != NULL;
	c->io_on = 1;
	c->io_reading = 1;
	/* what followed the peeked head in the socket is the client's: it is read from now on */
	assert_non_null(cl);
	while ((n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		evbuffer_add(cl->tx, buf, (size_t)n);
}

static struct evbuffer *
buffer(struct evbuffer **b)
{
	if (*b == NULL)
		*b = evbuffer_new();
	assert_non_null(*b);
	return *b;
}

struct evbuffer *
cio_in(struct conn *c)
{
	return buffer(&c->in);
}

struct evbuffer *
cio_out(struct conn *c)
{
	return buffer(&c->out);
}

size_t
cio_in_len(const struct conn *c)
{
	return c->in != NULL ? evbuffer_get_length(c->in) : 0;
}

size_t
cio_out_len(const struct conn *c)
{
	return c->out != NULL ? evbuffer_get_length(c->out) : 0;
}

void
cio_read(struct conn *c, int on)
{
	c->io_reading = on ? 1 : 0;
}

void
cio_kick(struct conn *c)
{
	(void)c;   /* every run step looks at every client */
}

void
cio_event(struct conn *c, short what)
{
	(void)c, (void)what;   /* the socket's edges: the fake's I/O is nf_run's */
}

void
cio_shutdown(struct conn *c)
{
	struct nf_client *cl = client_of(c);

	if (cl != NULL)
		cl->shutdown = 1;
}

void
cio_free(struct conn *c)
{
	struct nf_client *cl = client_of(c);

	if (c->in != NULL)
		evbuffer_free(c->in);
	if (c->out != NULL)
		evbuffer_free(c->out);
	c->in = c->out = NULL;
	if (c->ssl != NULL)
		SSL_free(c->ssl);
	c->ssl = NULL;
	c->io_on = 0;
	if (cl != NULL) {
		cl->c = NULL;
		cl->closed = 1;
	}
}

void
net_ops_set(struct worker *w, const struct net_ops *ops)
{
	w->net_ops = ops;
}

void
net_linger(struct event_base *base, int fd, unsigned ms, net_linger_done_fn *done, void *arg)
{
	size_t i;

	(void)base, (void)ms;
	for (i = 0; i < world->ncl; i++)
		if (world->cl[i].sfd == fd)
			world->cl[i].lingered = 1;
	close(fd);
	if (done != NULL)
		done(arg);
}

/* ---- deadline.c ---- */

void
conn_arm_timer(struct conn *c, unsigned ms)
{
	size_t i;

	if (c->dl_pos == 0) {
		for (i = 0; i < NF_ARMED_MAX && armed[i] != NULL; i++)
			;
		assert_true(i < NF_ARMED_MAX);
		armed[i] = c;
		c->dl_pos = (unsigned)i + 1;
	}
	c->deadline = ms;
}

void
conn_disarm_timer(struct conn *c)
{
	if (c->dl_pos != 0)
		armed[c->dl_pos - 1] = NULL;
	c->dl_pos = 0;
}

long
nf_deadline(const struct nf_client *cl)
{
	return cl->c != NULL && cl->c->dl_pos != 0 ? (long)cl->c->deadline : -1;
}

static void
expire(struct conn *c)
{
	conn_disarm_timer(c);
	c->w->net_ops->expired(c);
}

void
nf_expire(struct nf *nf, struct nf_client *cl)
{
	assert_non_null(cl->c);
	assert_int_not_equal(cl->c->dl_pos, 0);
	expire(cl->c);
	nf_run(nf);
}

/* ---- upstream.c ---- */

struct upstream *
upstream_dial(struct worker *w, const char *tenant, const char *host, unsigned port, int tls, int allow_private,
              unsigned alpn, upstream_cb cb, void *arg)
{
	struct bufferevent *pair[2];
	struct upstream *up;
	struct nf_up *u;
	size_t i;

	/* the pool: an idle upstream of the same tenant, host, port and TLS (unless the test wants a fresh dial) */
	for (i = 0; world->next_dial == NF_DIAL_POOL && i < world->nups; i++) {
		u = &world->ups[i];
		up = u->up;
		if (up != NULL && up->state == UP_S_POOLED && strcmp(up->tenant, tenant) == 0 &&
		    strcmp(up->host, host) == 0 && up->port == port && up->tls == tls) {
			up->state = UP_S_READY;
			up->reused = 1;
			up->cb = cb;
			up->cb_arg = arg;
			u->released = 0;
			u->reused++;
			return up;
		}
	}
	assert_true(world->nups < NF_UPS_MAX);
	u = &world->ups[world->nups++];
	memset(u, 0, sizeof(*u));
	up = xcalloc(1, sizeof(*up));
	up->w = w;
	snprintf(up->tenant, sizeof(up->tenant), "%s", tenant);
	snprintf(up->host, sizeof(up->host), "%s", host);
	up->port = port;
	up->tls = tls;
	up->allow_private = allow_private;
	up->alpn = alpn;
	up->cb = cb;
	up->cb_arg = arg;
	snprintf(up->addr_str, sizeof(up->addr_str), "10.200.0.9:%u", port);
	assert_int_equal(bufferevent_pair_new(w->base, BEV_OPT_DEFER_CALLBACKS, pair), 0);
	up->bev = u->mine = pair[0];
	u->peer = pair[1];
	bufferevent_enable(u->peer, EV_READ | EV_WRITE);
	u->up = up;
	snprintf(u->host, sizeof(u->host), "%s", host);
	u->port = port;
	u->tls = tls;
	switch (world->next_dial) {
	case NF_DIAL_POOL:
	case NF_DIAL_READY:
		up->state = UP_S_READY;
		break;
	case NF_DIAL_LATER:
		up->state = UP_S_CONNECTING;
		break;
	case NF_DIAL_FAIL:
		up->state = UP_S_FAILED;
		snprintf(up->errbuf, sizeof(up->errbuf), "connect to %s: connection refused (fake net)", up->addr_str);
		break;
	}
	world->next_dial = NF_DIAL_POOL;
	return up;
}

void
upstream_set_owner(struct upstream *up, bufferevent_data_cb readcb, bufferevent_data_cb writecb,
                   bufferevent_event_cb eventcb, void *arg)
{
	struct nf_up *u = up_of(up);

	u->eventcb = eventcb;
	u->cbarg = arg;
	bufferevent_setcb(up->bev, readcb, writecb, eventcb, arg);
	bufferevent_enable(up->bev, EV_READ | EV_WRITE);
}

void
upstream_release(struct upstream *up)
{
	struct nf_up *u = up_of(up);

	/* as upstream.c: only an idle, READY, empty connection goes back to the pool */
	if (up->state != UP_S_READY || evbuffer_get_length(bufferevent_get_input(up->bev)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(up->bev)) > 0) {
		upstream_free(up);
		return;
	}
	up->state = UP_S_POOLED;
	up->cb = NULL;
	bufferevent_setcb(up->bev, NULL, NULL, NULL, NULL);
	u->eventcb = NULL;
	u->released = 1;
}

void
upstream_free(struct upstream *up)
{
	struct nf_up *u;

	if (up == NULL)
		return;
	u = up_of(up);
	bufferevent_free(up->bev);
	free(up);
	u->up = NULL;
	u->mine = NULL;
	u->eventcb = NULL;
	u->freed++;
}

static void
unexpected(const char *what)
{
	fail_msg("the session called %s (HTTP/2 upstreams only)", what);
}

struct upstream *
upstream_new(struct worker *w, const char *tenant, const char *host, unsigned port, int tls, int allow_private,
             unsigned alpn, upstream_cb cb, void *arg)
{
	(void)w, (void)tenant, (void)host, (void)port, (void)tls, (void)allow_private, (void)alpn, (void)cb, (void)arg;
	unexpected("upstream_new");
	return NULL;
}

void
upstream_redial(struct upstream *up, unsigned alpn)
{
	(void)up, (void)alpn;
	unexpected("upstream_redial");
}

void
upstream_adopt(struct upstream *up, struct upstream *from)
{
	(void)up, (void)from;
	unexpected("upstream_adopt");
}

void
upstream_alpn_remember(struct worker *w, const char *host, unsigned port, unsigned proto)
{
	(void)w, (void)host, (void)port, (void)proto;
}

struct nf_up *
nf_up(struct nf *nf, size_t i)
{
	assert_true(i < nf->nups);
	return &nf->ups[i];
}

struct nf_up *
nf_up_held(struct nf_client *cl)
{
	assert_non_null(cl->c);
	assert_non_null(cl->c->up);
	return up_of(cl->c->up);
}

static char *
take(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = xmalloc(n + 1);

	evbuffer_remove(b, s, n);
	s[n] = '\0';
	return s;
}

char *
nf_up_take(struct nf_up *u)
{
	return take(bufferevent_get_input(u->peer));
}

void
nf_up_send(struct nf_up *u, const char *s)
{
	bufferevent_write(u->peer, s, strlen(s));
}

void
nf_up_close(struct nf *nf, struct nf_up *u, int error)
{
	nf_run(nf);   /* what the upstream sent before arrives before its end */
	if (u->up != NULL && u->eventcb != NULL)
		u->eventcb(u->mine, (short)(BEV_EVENT_READING | (error ? BEV_EVENT_ERROR : BEV_EVENT_EOF)), u->cbarg);
	nf_run(nf);
}

void
nf_up_connect(struct nf *nf, struct nf_up *u, const char *err)
{
	struct upstream *up = u->up;

	assert_non_null(up);
	assert_int_equal(up->state, UP_S_CONNECTING);
	if (err == NULL) {
		up->state = UP_S_READY;
		up->cb(up, NULL, 0, up->cb_arg);
	} else {
		up->state = UP_S_FAILED;
		snprintf(up->errbuf, sizeof(up->errbuf), "%s", err);
		up->cb(up, up->errbuf, 502, up->cb_arg);
	}
	nf_run(nf);
}

/* ---- the client's side and the run loop ---- */

/* One I/O round of <cl> as cio_event does it: send, read, and pump when bytes moved.  1 when they did. */
static int
client_round(struct nf_client *cl)
{
	struct conn *c = cl->c;
	int moved = 0, m, i;
	size_t room, cap;

	if (c == NULL || !c->io_on || c->state == CONN_S_DEAD)
		return 0;
	if (c->state == CONN_S_TLS_ACCEPT) {   /* the handshake "completes" at the first round */
		c->w->net_ops->start_requests(c);
		moved = 1;
	}
	for (i = 0; i < NF_ROUNDS && cl->c != NULL && c->state != CONN_S_DEAD; i++) {
		m = 0;
		if (cio_out_len(c) > 0 && !c->io_dead) {
			evbuffer_add_buffer(cl->rx, c->out);
			m = 1;
		}
		cap = (size_t)c->w->gw->cfg->limits.header_bytes + 1;
		cap = cap > PROXY_HIGH_WATER ? cap : PROXY_HIGH_WATER;   /* cio.c's read bound */
		room = cap > cio_in_len(c) ? cap - cio_in_len(c) : 0;
		c->io_full = room == 0 && evbuffer_get_length(cl->tx) > 0;
		if (c->io_reading && room > 0 && evbuffer_get_length(cl->tx) > 0) {
			evbuffer_remove_buffer(cl->tx, cio_in(c), room);
			m = 1;
		} else if (c->io_reading && evbuffer_get_length(cl->tx) == 0 && cl->eof && !c->client_eof) {
			c->client_eof = 1;
			m = 1;
		}
		if (!m)
			break;
		moved = 1;
		c->w->net_ops->pump(c);
	}
	return moved;
}

void
nf_run(struct nf *nf)
{
	int step, quiet = 0, moved;
	size_t i;

	for (step = 0; step < NF_STEPS && quiet < 3; step++) {
		moved = 0;
		event_base_loop(nf->w.base, EVLOOP_NONBLOCK);
		for (i = 0; i < nf->ncl; i++)
			moved |= client_round(&nf->cl[i]);
		/* a deadline of 0 passes at once, as the deadline heap's timer would fire next */
		for (i = 0; i < NF_ARMED_MAX; i++)
			if (armed[i] != NULL && armed[i]->deadline == 0) {
				expire(armed[i]);
				moved = 1;
			}
		quiet = moved ? 0 : quiet + 1;
	}
	assert_true(step < NF_STEPS);
}

struct nf_client *
nf_accept(struct nf *nf, const char *head)
{
	struct sockaddr_in sa;
	struct nf_client *cl;
	unsigned before = nf->w.nconns;
	int fds[2];

	assert_true(nf->ncl < NF_CLIENTS_MAX);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	assert_int_equal(write(fds[1], head, strlen(head)), (ssize_t)strlen(head));
	cl = &nf->cl[nf->ncl++];
	memset(cl, 0, sizeof(*cl));
	cl->fd = fds[1];
	cl->sfd = fds[0];
	cl->tx = evbuffer_new();
	cl->rx = evbuffer_new();
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(40000);
	sa.sin_addr.s_addr = htonl(0x7f000002);   /* 127.0.0.2: a proxy client (loopback), never dialled */
	/* registered before the accept: a refusal at once closes it inside conn_accept */
	cl->c = NULL;
	conn_accept(&nf->w, CONN_MODE_EXPLICIT, fds[0], (const struct sockaddr *)&sa, sizeof(sa));
	if (nf->w.nconns > before)
		cl->c = LIST_FIRST(&nf->w.conns);
	else
		cl->closed = 1;
	nf_run(nf);
	return cl;
}

void
nf_send(struct nf_client *cl, const char *s)
{
	evbuffer_add(cl->tx, s, strlen(s));
}

char *
nf_rx_take(struct nf_client *cl)
{
	return take(cl->rx);
}

/* ---- the audit log, off but counted ---- */

static void
count_rec(void *arg, const struct audit_rec *r)
{
	struct nf *nf = arg;
	struct nf_rec *e;

	assert_true(nf->nrec < NF_RECS_MAX);
	e = &nf->rec[nf->nrec++];
	e->kind = r->kind;
	e->verdict = r->verdict;
	e->status = r->status;
	snprintf(e->id, sizeof(e->id), "%s", r->id != NULL ? r->id : "");
	snprintf(e->rule, sizeof(e->rule), "%s", r->rule != NULL ? r->rule : "");
	snprintf(e->reason, sizeof(e->reason), "%s", r->reason != NULL ? r->reason : "");
	snprintf(e->path, sizeof(e->path), "%s", r->path != NULL ? r->path : "");
}

size_t
nf_recs(const struct nf *nf, enum audit_kind k)
{
	size_t i, n = 0;

	for (i = 0; i < nf->nrec; i++)
		n += nf->rec[i].kind == k;
	return n;
}

void
nf_assert_ended_once(const struct nf *nf)
{
	size_t i, j, nreq, nfinal;

	for (i = 0; i < nf->nrec; i++) {
		if (nf->rec[i].kind != AUDIT_KIND_REQUEST && nf->rec[i].kind != AUDIT_KIND_RESPONSE)
			continue;
		nreq = nfinal = 0;
		for (j = 0; j < nf->nrec; j++) {
			const struct nf_rec *e = &nf->rec[j];

			if (strcmp(e->id, nf->rec[i].id) != 0)
				continue;
			nreq += e->kind == AUDIT_KIND_REQUEST;
			nfinal += e->kind == AUDIT_KIND_RESPONSE ||
			          (e->kind == AUDIT_KIND_REQUEST && e->verdict == AUDIT_VERDICT_DENY);
		}
		if (nreq != 1 || nfinal != 1)
			fail_msg("request %s: %zu request records, %zu final records", nf->rec[i].id, nreq, nfinal);
	}
}

const struct nf_rec *
nf_rec_last(const struct nf *nf, enum audit_kind k)
{
	size_t i;

	for (i = nf->nrec; i > 0; i--)
		if (nf->rec[i - 1].kind == k)
			return &nf->rec[i - 1];
	fail_msg("no %s record", audit_kind_name(k));
	return NULL;
}

/* ---- the world ---- */

static void
rm_dir(const char *dir)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d != NULL && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d != NULL)
		closedir(d);
	rmdir(dir);
}

struct nf *
nf_new(const char *yaml)
{
	struct nf *nf = xcalloc(1, sizeof(*nf));
	struct gateway *gw = &nf->gw;
	struct worker *w = &nf->w;
	const char *err = NULL;
	char ebuf[512], tmpl[] = "/tmp/sluice-netfake-XXXXXX";
	struct audit_opts aopts;

	world = nf;
	memset(armed, 0, sizeof(armed));
	pthread_mutex_init(&gw->clients_mu, NULL);
	pthread_mutex_init(&gw->memo_mu, NULL);
	if (policy_load_buffer("unit.yaml", yaml, strlen(yaml), &nf->cfg, &nf->pol, ebuf, sizeof(ebuf)) != 0) {
		err = ebuf;
		goto fail;
	}
	if (mkdtemp(tmpl) == NULL) {
		err = "mkdtemp";
		goto fail;
	}
	snprintf(nf->ca_dir, sizeof(nf->ca_dir), "%s", tmpl);   /* removed by nf_free from now on */
	if (ca_init_dir(nf->ca_dir, 0, &err) != 0 ||
	    (gw->ca = ca_load(nf->ca_dir, 16, &err)) == NULL)
		goto fail;
	gw->cfg = nf->cfg;
	gw->pol = nf->pol;
	gw->metrics = metrics_create(nf->pol);
	gw->sbx = sbxreg_new();
	gw->approvals = approvals_new(APPROVALS_MAX_PENDING);
	gw->dns_fd = -1;
	policy_audit_opts(nf->cfg, &aopts);
	if ((gw->audit = audit_open(&aopts, NULL, count_rec, nf, &err)) == NULL ||
	    (gw->creds = cred_store_create(nf->ca_dir, &err)) == NULL)
		goto fail;
	cred_store_sync(gw->creds, nf->pol);
	gw->mcp_peers = mcp_peers_create();
	if ((gw->limits = limits_open(NULL, ebuf, sizeof(ebuf))) == NULL) {
		err = "limits";
		goto fail;
	}
	gw->srv_ctx = SSL_CTX_new(TLS_server_method());
	w->gw = gw;
	w->base = event_base_new();
	if (gw->srv_ctx == NULL || w->base == NULL) {
		err = "out of memory";
		goto fail;
	}
	w->sem_hooks = &session_sem_hooks;  /* as worker_start: the judge returns an operator's decision through these */
	net_ops_set(w, &session_net_ops);   /* as worker_start: net reports to the session through these */
	w->srv_ctx = gw->srv_ctx;
	w->scratch_cap = (size_t)nf->cfg->limits.header_bytes + 1;
	w->scratch = xmalloc(w->scratch_cap);
	w->msg = xcalloc(1, sizeof(*w->msg));
	TAILQ_INIT(&w->pool);
	LIST_INIT(&w->conns);
	LIST_INIT(&w->h2up);
	w->pol = policy_ref(nf->pol);
	return nf;
fail:
	fprintf(stderr, "netfake: %s\n", err != NULL ? err : "?");
	nf_free(nf);
	return NULL;
}

void
nf_free(struct nf *nf)
{
	struct gateway *gw = &nf->gw;
	struct worker *w = &nf->w;
	size_t i;

	while (!LIST_EMPTY(&w->conns))
		conn_close(LIST_FIRST(&w->conns));
	if (w->base != NULL)
		event_base_loop(w->base, EVLOOP_NONBLOCK);   /* the reaping */
	for (i = 0; i < nf->nups; i++) {
		if (nf->ups[i].up != NULL)
			upstream_free(nf->ups[i].up);
		bufferevent_free(nf->ups[i].peer);
	}
	for (i = 0; i < nf->ncl; i++) {
		close(nf->cl[i].fd);
		evbuffer_free(nf->cl[i].tx);
		evbuffer_free(nf->cl[i].rx);
	}
	cred_scrub_cache_free(w);
	policy_unref(w->pol);
	free(w->scratch);
	free(w->msg);
	if (w->base != NULL)
		event_base_free(w->base);
	SSL_CTX_free(gw->srv_ctx);
	if (gw->limits != NULL)
		limits_close(gw->limits);
	mcp_peers_destroy(gw->mcp_peers);
	if (gw->creds != NULL)
		cred_store_destroy(gw->creds);
	if (gw->audit != NULL)
		audit_close(gw->audit);
	if (gw->approvals != NULL)
		approvals_free(gw->approvals);
	if (gw->sbx != NULL)
		sbxreg_free(gw->sbx);
	if (gw->metrics != NULL)
		metrics_destroy(gw->metrics);
	if (gw->ca != NULL)
		ca_destroy(gw->ca);
	pthread_mutex_destroy(&gw->clients_mu);
	pthread_mutex_destroy(&gw->memo_mu);
	policy_unref(nf->pol);
	policy_config_free(nf->cfg);
	if (nf->ca_dir[0] != '\0')
		rm_dir(nf->ca_dir);
	world = NULL;
	free(nf);
}
