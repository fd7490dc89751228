/*
 * proxy/store/store_ev.c - hiredis's asynchronous context on a libevent
 * base, with a bound on what Redis may leave unread in the reader.
 *
 * hiredis 0.14's own adapter (adapters/libevent.h) does not check its
 * allocation and lets the reader's buffer grow without end: a reply is
 * kept until it is whole, so a Redis that declares a bulk of 2 GB, or sends
 * a status line with no end, makes the gateway buffer all it sends.  Here,
 * before each read, the bytes the reader holds unparsed are compared with
 * the bound; over it, the owner's <overflow> drops the connection (fail
 * closed) instead of reading more.  One read adds at most hiredis's 16 KiB,
 * so the reader never holds more than the bound plus 16 KiB.
 *
 * Writes.  hiredis asks for the write event whenever a command is queued,
 * and writes when the socket is reported writable: a loop round (an
 * epoll_ctl, an epoll_wait, an epoll_ctl back) between a request's counter
 * operation and its going to Redis.  On a connected context the write is
 * made at the end of the current loop round instead (an event made active,
 * so the commands of one round still share one write(2)); only what the
 * socket does not take waits for the write event.
 *
 * Reads.  hiredis asks for the read event again after every read and every
 * write.  The read event here persists, so that asking is a no-op for an
 * event already pending; a read event that fired and was asked for again
 * would cost an epoll_ctl to remove it and one to put it back, each reply.
 */
#include <stdlib.h>

#include <event2/event.h>

#include "store_int.h"

struct store_ev {
	redisAsyncContext *ac;
	struct event *rev, *wev;
	struct event *flush;      /* the end of this loop round: write what is queued */
	int flush_armed;
	int in_flush;             /* inside on_flush's write: hiredis asking for more waits for the write event */
	int *alive;               /* on_flush's: cleared when the context (and this) is freed under it */
	size_t max_unread;
	store_ev_overflow_fn *overflow;
	void *arg;
};

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct store_ev *e = arg;
	const redisReader *r = e->ac->c.reader;

	(void)fd;
	(void)what;
	if (r != NULL && r->len > r->pos && r->len - r->pos > e->max_unread) {
		e->overflow(e->ac, e->arg);  /* frees the context, and with it <e>: touch neither after */
		return;
	}
	redisAsyncHandleRead(e->ac);
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	struct store_ev *e = arg;

	(void)fd;
	(void)what;
	redisAsyncHandleWrite(e->ac);
}

static void
add_read(void *p)
{
	event_add(((struct store_ev *)p)->rev, NULL);
}

static void
del_read(void *p)
{
	event_del(((struct store_ev *)p)->rev);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct store_ev *e = arg;
	int alive = 1;

	(void)fd;
	(void)what;
	e->flush_armed = 0;
	e->in_flush = 1;
	e->alive = &alive;
	/* writes what the socket takes; asks (add_write, in_flush) for the write event for the rest; a failed
	 * write frees the context, and <e> with it (cleanup clears <alive>) */
	redisAsyncHandleWrite(e->ac);
	if (!alive)
		return;
	e->alive = NULL;
	e->in_flush = 0;
}

static void
add_write(void *p)
{
	struct store_ev *e = p;

	if (e->in_flush || !(e->ac->c.flags & REDIS_CONNECTED)) {
		event_add(e->wev, NULL);  /* the rest of a write, or connecting: writable means connected */
		return;
	}
	if (!e->flush_armed) {
		e->flush_armed = 1;
		event_active(e->flush, EV_TIMEOUT, 1);
	}
}

static void
del_write(void *p)
{
	event_del(((struct store_ev *)p)->wev);
}

static void
cleanup(void *p)
{
	struct store_ev *e = p;

	if (e == NULL)
		return;
	if (e->alive != NULL)
		*e->alive = 0;
	if (e->rev != NULL)
		event_free(e->rev);
	if (e->wev != NULL)
		event_free(e->wev);
	if (e->flush != NULL)
		event_free(e->flush);
	free(e);
}

int
store_ev_attach(redisAsyncContext *ac, struct event_base *base, size_t max_unread, store_ev_overflow_fn *overflow,
                void *arg)
{
	struct store_ev *e;

	if (ac == NULL || base == NULL || overflow == NULL || ac->ev.data != NULL)
		return -1;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return -1;
	e->ac = ac;
	e->max_unread = max_unread;
	e->overflow = overflow;
	e->arg = arg;
	e->rev = event_new(base, ac->c.fd, EV_READ | EV_PERSIST, on_read, e);
	e->wev = event_new(base, ac->c.fd, EV_WRITE, on_write, e);
	e->flush = event_new(base, -1, 0, on_flush, e);
	if (e->rev == NULL || e->wev == NULL || e->flush == NULL) {
		cleanup(e);
		return -1;
	}
	ac->ev.addRead = add_read;
	ac->ev.delRead = del_read;
	ac->ev.addWrite = add_write;
	ac->ev.delWrite = del_write;
	ac->ev.cleanup = cleanup;
	ac->ev.data = e;
	event_add(e->rev, NULL);
	event_add(e->wev, NULL);
	return 0;
}
