/*
 * proxy/net/deadline.c - connection deadlines: one min-heap per worker, ordered by
 * when each connection's current limit runs out, and one libevent timer for
 * the earliest.
 *
 * Why not an evtimer per connection: that is a struct event (~160 bytes with
 * its malloc header) that every connection, idle ones included, carries for
 * its whole life.  Here a connection carries a deadline and its heap slot
 * (12 bytes); the heap is an array of pointers.  Arming is O(log n), as it is
 * inside libevent.
 */
#include <stdlib.h>
#include <time.h>
#include "common/clock.h"
#include "common/sluice.h"
#include "proxy/core/conn.h"
#include "proxy/net/net.h"
#include "proxy/core/context.h"

static void
place(struct worker *w, size_t i, struct conn *c)
{
	w->dl[i] = c;
	c->dl_pos = (unsigned)i + 1;
}

static void
sift_up(struct worker *w, size_t i)
{
	struct conn *c = w->dl[i];

	while (i > 0 && w->dl[(i - 1) / 2]->deadline > c->deadline) {
		place(w, i, w->dl[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(w, i, c);
}

static void
sift_down(struct worker *w, size_t i)
{
	struct conn *c = w->dl[i];
	size_t k;

	for (;;) {
		k = 2 * i + 1;
		if (k >= w->ndl)
			break;
		if (k + 1 < w->ndl && w->dl[k + 1]->deadline < w->dl[k]->deadline)
			k++;
		if (w->dl[k]->deadline >= c->deadline)
			break;
		place(w, i, w->dl[k]);
		i = k;
	}
	place(w, i, c);
}

/* Points the worker's timer at the earliest deadline (or stops it). */
static void
schedule(struct worker *w)
{
	uint64_t now, at;
	struct timeval tv;

	if (w->ndl == 0) {
		evtimer_del(w->dl_ev);
		w->dl_at = 0;
		return;
	}
	at = w->dl[0]->deadline;
	if (at == w->dl_at)
		return;
	w->dl_at = at;
	now = clock_mono_ms();
	at = at > now ? at - now : 0;
	tv.tv_sec = (time_t)(at / 1000);
	tv.tv_usec = (suseconds_t)(at % 1000) * 1000;
	evtimer_add(w->dl_ev, &tv);
}

static void
unlink_conn(struct worker *w, struct conn *c)
{
	size_t i = c->dl_pos - 1;
	struct conn *last = w->dl[--w->ndl];

	c->dl_pos = 0;
	if (i == w->ndl)
		return;
	place(w, i, last);
	sift_up(w, i);
	sift_down(w, last->dl_pos - 1);
}

void
conn_arm_timer(struct conn *c, unsigned ms)
{
	struct worker *w = c->w;

	if (c->state == CONN_S_DEAD)
		return;  /* a dead connection is about to be freed: it must not stay in the heap */
	c->deadline = clock_mono_ms() + ms;
	if (c->dl_pos == 0) {
		if (w->ndl == w->dl_cap) {
			w->dl_cap = w->dl_cap ? 2 * w->dl_cap : 64;
			w->dl = xrealloc(w->dl, w->dl_cap * sizeof(*w->dl));
		}
		place(w, w->ndl++, c);
		sift_up(w, w->ndl - 1);
	} else {
		sift_up(w, c->dl_pos - 1);
		sift_down(w, c->dl_pos - 1);
	}
	schedule(w);
}

void
conn_disarm_timer(struct conn *c)
{
	if (c->dl_pos == 0)
		return;
	unlink_conn(c->w, c);
	schedule(c->w);
}

static void
fire(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	uint64_t now = clock_mono_ms();
	size_t budget = w->ndl;  /* a deadline re-armed for "now" by its handler waits for the next round */
	struct conn *c;

	(void)fd;
	(void)what;
	w->dl_at = 0;
	while (budget-- > 0 && w->ndl > 0 && w->dl[0]->deadline <= now) {
		c = w->dl[0];
		unlink_conn(w, c);
		w->net_ops->expired(c);
	}
	schedule(w);
}

void
net_ops_set(struct worker *w, const struct net_ops *ops)
{
	w->net_ops = ops;
}

int
deadline_init(struct worker *w)
{
	w->dl_ev = evtimer_new(w->base, fire, w);
	return w->dl_ev != NULL ? 0 : SLUICE_EIO;
}

void
deadline_dispose(struct worker *w)
{
	if (w->dl_ev != NULL)
		event_free(w->dl_ev);
	w->dl_ev = NULL;
	free(w->dl);
	w->dl = NULL;
	w->ndl = w->dl_cap = 0;
}
