/*
 * proxy/net/linger.c - shut, discard, close (linger.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/sluice.h"
#include "proxy/net/linger.h"

#define LINGER_READ 4096  /* bytes discarded per read */

struct lingering {
	struct event *ev;
	uint64_t deadline_ms;  /* absolute: a peer that trickles bytes does not extend it */
	int fd;
	net_linger_done_fn *done;
	void *arg;
};

static void
finish(struct lingering *l)
{
	net_linger_done_fn *done = l->done;
	void *arg = l->arg;

	if (l->ev != NULL)
		event_free(l->ev);
	close(l->fd);
	free(l);
	if (done != NULL)
		done(arg);
}

/* Waits for input until the deadline: 0, or -1 when the time is up or no event could be added. */
static int
arm(struct lingering *l)
{
	uint64_t now = clock_mono_ms(), left;
	struct timeval tv;

	if (now >= l->deadline_ms)
		return -1;
	left = l->deadline_ms - now;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	return event_add(l->ev, &tv) == 0 ? 0 : -1;
}

static void
linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lingering *l = arg;
	char buf[LINGER_READ];
	ssize_t n;

	if (what & EV_TIMEOUT) {
		finish(l);
		return;
	}
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0)
			continue;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK) && arm(l) == 0)
			return;  /* more may come: wait for it or the deadline */
		finish(l);   /* EOF, an error, or the time is up */
		return;
	}
}

void
net_linger(struct event_base *base, int fd, unsigned ms, net_linger_done_fn *done, void *arg)
{
	struct lingering *l = malloc(sizeof(*l));

	shutdown(fd, SHUT_WR);
	if (l == NULL) {
		close(fd);
		if (done != NULL)
			done(arg);
		return;
	}
	l->fd = fd;
	l->done = done;
	l->arg = arg;
	l->deadline_ms = clock_mono_ms() + ms;
	l->ev = event_new(base, fd, EV_READ, linger_cb, l);
	if (l->ev == NULL || arm(l) != 0)
		finish(l);
}
