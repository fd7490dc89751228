/*
 * proxy/net/cio.c - the client socket's bytes: plain or TLS (as the server), two
 * buffers and the connection's one edge-triggered event.
 *
 * Why not bufferevent_openssl: an idle intercepted connection is mostly its
 * SSL object, and a bufferevent around it costs another ~1.3 KiB (two
 * events, two buffers, their callbacks).  Here the connection's single event
 * (EV_READ|EV_WRITE|EV_ET, registered once at accept) drives SSL_read and
 * SSL_write directly, and the two buffers exist only while bytes are in
 * flight: an idle keep-alive connection holds its SSL, one event, one timer.
 *
 * Edge-triggered means every wake-up does all the I/O it can (write what is
 * queued, read up to the bound) until the socket or TLS says "would block";
 * whatever stops short of that (a full input buffer, reading switched off)
 * re-arms itself with a "kick" (event_active) when it can go on.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "proxy/core/conn.h"
#include "proxy/net/net.h"
#include "proxy/core/context.h"

#define IO_CHUNK 16384   /* bytes per read or TLS write: one full TLS record */
#define IO_ROUNDS 8      /* I/O-then-pump rounds per wake-up before yielding to other connections */
/*
 * A kick's wake-up, told apart from the socket's edges: after a read or a
 * write would have blocked, only an edge of that direction makes the socket
 * worth trying again (a read(2) that says EAGAIN is most of a small
 * request's system calls otherwise).
 */
#define CIO_KICK EV_TIMEOUT

/* The client's read bound: a whole request head must fit, or a large one would stall instead of failing. */
static size_t
read_high(const struct conn *c)
{
	size_t head = (size_t)c->w->gw->cfg->limits.header_bytes + 1;

	return head > PROXY_HIGH_WATER ? head : PROXY_HIGH_WATER;
}

/* Schedules one I/O round (new output to send, room to read again); a no-op inside cio_event. */
static void
kick(struct conn *c)
{
	if (c->io_kicked || !c->io_on || c->state == CONN_S_DEAD || c->ev == NULL)  /* no event: a virtual connection */
		return;
	c->io_kicked = 1;
	event_active(c->ev, CIO_KICK, 0);
}

static void
out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	(void)buf;
	if (info->n_added > 0)
		kick(arg);
}

static void
in_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;

	(void)buf;
	if (info->n_deleted > 0 && c->io_full)
		kick(c);
}

/* A buffer of the connection, made on first use with its callback. */
static struct evbuffer *
buffer(struct conn *c, struct evbuffer **b, evbuffer_cb_func cb)
{
	if (*b == NULL) {
		*b = evbuffer_new();
		if (*b == NULL)
			fatalx("out of memory");
		evbuffer_add_cb(*b, cb, c);
	}
	return *b;
}

void
cio_kick(struct conn *c)
{
	kick(c);
}

struct evbuffer *
cio_in(struct conn *c)
{
	return buffer(c, &c->in, in_cb);
}

struct evbuffer *
cio_out(struct conn *c)
{
	return buffer(c, &c->out, out_cb);
}

size_t
cio_out_len(const struct conn *c)
{
	return c->out != NULL ? evbuffer_get_length(c->out) : 0;
}

size_t
cio_in_len(const struct conn *c)
{
	return c->in != NULL ? evbuffer_get_length(c->in) : 0;
}

void
cio_read(struct conn *c, int on)
{
	if (!on) {
		c->io_reading = 0;
		return;
	}
	/* edges that came while reading was off are gone: look at the socket again */
	if (!c->io_reading || c->io_full)
		kick(c);
	c->io_reading = 1;
}

void
cio_start(struct conn *c, SSL *ssl)
{
	c->ssl = ssl;
	c->tls = ssl != NULL;
	c->io_on = 1;
	c->io_reading = 1;
	/* the peek consumed the edge of the bytes already waiting */
	kick(c);
}

/* The client side cannot be used any more (reset, TLS alert): no more I/O, queued output is dropped. */
static void
fail(struct conn *c)
{
	c->client_eof = 1;
	c->io_dead = 1;
	c->io_wpending = 0;
	if (c->out != NULL)
		evbuffer_drain(c->out, evbuffer_get_length(c->out));
	ERR_clear_error();
}

/*
 * The first <n> bytes of <out> in one piece, for one TLS record: where they
 * are when the first chain holds them, else copied into the worker's scratch
 * (evbuffer_pullup would allocate a chain of up to 16 KiB each time, an mmap).
 */
static const void *
out_bytes(struct conn *c, size_t n)
{
	struct evbuffer_iovec v;

	if (evbuffer_peek(c->out, -1, NULL, &v, 1) >= 1 && v.iov_len >= n)
		return v.iov_base;
	evbuffer_copyout(c->out, c->w->scratch, n);
	return c->w->scratch;
}

/* Sends what is queued; 1 when something moved (bytes out, or the side failed). */
static int
flush(struct conn *c)
{
	size_t len, n;
	int r, moved = 0;

	while ((len = cio_out_len(c)) > 0) {
		if (c->io_dead) {
			evbuffer_drain(c->out, len);
			return 1;
		}
		if (c->io_wblocked)
			break;
		if (c->ssl == NULL) {
			r = evbuffer_write(c->out, c->fd);
			if (r > 0) {
				moved = 1;
				continue;
			}
			if (r == -1 && errno == EINTR)
				continue;
			if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				c->io_wblocked = 1;
				break;
			}
			fail(c);
			return 1;
		}
		/* a retried SSL_write must offer the same bytes again: they stay first in <out> until sent */
		n = c->io_wpending ? c->io_wpending : len < IO_CHUNK ? len : IO_CHUNK;
		ERR_clear_error();
		r = SSL_write(c->ssl, out_bytes(c, n), (int)n);
		if (r > 0) {
			c->io_wpending = 0;
			evbuffer_drain(c->out, (size_t)r);
			moved = 1;
			continue;
		}
		r = SSL_get_error(c->ssl, r);
		if (r == SSL_ERROR_WANT_WRITE || r == SSL_ERROR_WANT_READ) {
			c->io_wpending = n;
			c->io_wblocked = r == SSL_ERROR_WANT_WRITE;
			break;
		}
		fail(c);
		return 1;
	}
	return moved;
}

/* Reads up to the bound; 1 when something moved (bytes in, EOF, or the side failed). */
static int
fill(struct conn *c)
{
	size_t have, want, high = read_high(c);
	int n, e, moved = 0;

	c->io_full = 0;
	while (c->io_reading && !c->client_eof && !c->io_dead && !c->io_rblocked) {
		have = cio_in_len(c);
		if (have >= high) {
			c->io_full = 1;  /* in_cb kicks when the consumer makes room */
			break;
		}
		want = high - have < IO_CHUNK ? high - have : IO_CHUNK;
		if (c->ssl == NULL) {
			n = evbuffer_read(cio_in(c), c->fd, (int)want);
			if (n > 0) {
				moved = 1;
				if ((size_t)n < want) {
					c->io_rblocked = 1;  /* the socket is empty: the next segment brings a new edge */
					break;
				}
				continue;
			}
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				c->io_rblocked = 1;
				break;
			}
			c->client_eof = 1;  /* EOF: our side may still answer (half-close) */
			if (n == -1)
				fail(c);
			return 1;
		}
		/*
		 * Through the worker's scratch buffer, so <in> grows by what arrived
		 * (a small request costs a small chain), not by a reserved record.
		 */
		if (want > c->w->scratch_cap)
			want = c->w->scratch_cap;
		ERR_clear_error();
		n = SSL_read(c->ssl, c->w->scratch, (int)want);
		if (n > 0) {
			evbuffer_add(cio_in(c), c->w->scratch, (size_t)n);
			moved = 1;
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			/* with read-ahead and auto-retry, WANT_READ means the socket said EAGAIN */
			c->io_rblocked = e == SSL_ERROR_WANT_READ;
			break;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {  /* close_notify: the client is done sending */
			c->client_eof = 1;
			return 1;
		}
		fail(c);
		return 1;
	}
	return moved;
}

/* Finishes the TLS handshake; 1 when done, 0 to wait, -1 when it failed (the connection is closed). */
static int
handshake(struct conn *c)
{
	unsigned long e;
	char ebuf[120];
	int r;

	ERR_clear_error();
	r = SSL_do_handshake(c->ssl);
	if (r == 1)
		return 1;
	r = SSL_get_error(c->ssl, r);
	if (r == SSL_ERROR_WANT_READ || r == SSL_ERROR_WANT_WRITE)
		return 0;
	e = ERR_get_error();
	if (e != 0)
		ERR_error_string_n(e, ebuf, sizeof(ebuf));
	else
		snprintf(ebuf, sizeof(ebuf), "client closed during the handshake");
	ERR_clear_error();
	c->w->net_ops->tls_failed(c, ebuf);
	return -1;
}

/* An idle keep-alive connection gives its (empty) buffers back: they cost ~0.4 KiB each connection. */
static void
trim(struct conn *c)
{
	if (c->state != CONN_S_REQ_HEAD || c->req != NULL || cio_in_len(c) > 0 || cio_out_len(c) > 0)
		return;
	if (c->in != NULL)
		evbuffer_free(c->in);
	if (c->out != NULL)
		evbuffer_free(c->out);
	c->in = c->out = NULL;
}

void
cio_event(struct conn *c, short what)
{
	int round, moved = 1;

	/* edge-triggered: do all the I/O there is, in each direction that has not said "would block" since its last edge */
	if (what & EV_READ)
		c->io_rblocked = 0;
	if (what & EV_WRITE)
		c->io_wblocked = 0;
	c->io_kicked = 1;  /* the rounds below see every change the pump makes */
	if (c->state == CONN_S_TLS_ACCEPT) {
		if (handshake(c) <= 0) {
			moved = 0;  /* wait for the next edge */
			goto out;
		}
		c->w->net_ops->start_requests(c);
	}
	for (round = 0; moved && round < IO_ROUNDS && c->state != CONN_S_DEAD; round++) {
		moved = flush(c);
		moved |= fill(c);
		/* an HTTP/2 connection is also kicked by its streams, with no bytes moved: what it queues is sent next round */
		if (moved || (round == 0 && c->ops->pump_each_round)) {
			c->w->net_ops->pump(c);
			moved |= c->ops->pump_each_round && cio_out_len(c) > 0;
		}
	}
out:
	if (c->state == CONN_S_DEAD)
		return;
	c->io_kicked = 0;
	if (moved)
		kick(c);  /* more to do: yield to the other connections first */
	else
		trim(c);
}

void
cio_shutdown(struct conn *c)
{
	if (c->ssl != NULL && !c->io_dead && c->state != CONN_S_TLS_ACCEPT) {
		/* close_notify before the FIN, so the client can tell an answer's end from a truncation */
		ERR_clear_error();
		SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
}

void
cio_free(struct conn *c)
{
	if (c->in != NULL)
		evbuffer_free(c->in);
	if (c->out != NULL)
		evbuffer_free(c->out);
	c->in = c->out = NULL;
	if (c->ssl != NULL)
		SSL_free(c->ssl);
	c->ssl = NULL;
	c->io_on = 0;
}
