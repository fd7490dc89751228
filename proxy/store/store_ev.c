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
 */
#include <stdlib.h>

#include <event2/event.h>

#include "store_int.h"

struct store_ev {
	redisAsyncContext *ac;
	struct event *rev, *wev;
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
add_write(void *p)
{
	event_add(((struct store_ev *)p)->wev, NULL);
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
	if (e->rev != NULL)
		event_free(e->rev);
	if (e->wev != NULL)
		event_free(e->wev);
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
	e->rev = event_new(base, ac->c.fd, EV_READ, on_read, e);
	e->wev = event_new(base, ac->c.fd, EV_WRITE, on_write, e);
	if (e->rev == NULL || e->wev == NULL) {
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
