/*
 * tests/unit/proxy/test_linger.c - the one lingering close (proxy/net/linger.c)
 * over a real socket pair: the peer gets our FIN, what it still sends is
 * discarded, the socket closes on its EOF or at the deadline even while it
 * keeps sending, and <done> runs exactly once after the close.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <event2/event.h>

#include "proxy/net/linger.h"

struct seen {
	int done;
	int fd;
};

static void
on_done(void *arg)
{
	struct seen *s = arg;

	s->done++;
	/* the socket is closed before <done> runs */
	assert_int_equal(fcntl(s->fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
}

static void
pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
}

/* The peer reads our FIN, sends more, closes: the socket is closed on that EOF, long before the deadline. */
static void
test_closes_on_eof(void **state)
{
	struct event_base *base = event_base_new();
	struct seen s = {0, -1};
	char buf[16];
	int sv[2];

	(void)state;
	pair(sv);
	s.fd = sv[0];
	assert_int_equal(write(sv[1], "unread body", 11), 11);  /* waiting when the linger starts */
	net_linger(base, sv[0], 60000, on_done, &s);
	assert_int_equal(read(sv[1], buf, sizeof(buf)), 0);      /* our side is shut: EOF for the peer */
	assert_int_equal(write(sv[1], "more", 4), 4);            /* still accepted, and discarded */
	close(sv[1]);
	assert_int_equal(event_base_dispatch(base), 1);          /* 1: nothing is pending any more */
	assert_int_equal(s.done, 1);
	event_base_free(base);
}

/* A peer that never closes: the socket closes at the deadline. */
static void
test_closes_at_deadline(void **state)
{
	struct event_base *base = event_base_new();
	struct seen s = {0, -1};
	int sv[2];

	(void)state;
	pair(sv);
	s.fd = sv[0];
	net_linger(base, sv[0], 50, on_done, &s);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(event_base_dispatch(base), 1);
	assert_int_equal(s.done, 1);
	close(sv[1]);
	event_base_free(base);
}

/* A peer that keeps sending: reads do not move the deadline (it would never close otherwise). */
static void
trickle(evutil_socket_t fd, short what, void *arg)
{
	struct seen *s = arg;

	(void)what;
	if (s->done == 0 && write((int)fd, "y", 1) != 1)
		fail_msg("the peer's trickle could not be written");
}

static void
test_trickle_does_not_extend(void **state)
{
	struct event_base *base = event_base_new();
	struct seen s = {0, -1};
	struct timeval tick = {0, 5000};
	struct event *ev;
	int sv[2];

	(void)state;
	pair(sv);
	s.fd = sv[0];
	ev = event_new(base, sv[1], EV_PERSIST, trickle, &s);
	assert_int_equal(event_add(ev, &tick), 0);
	net_linger(base, sv[0], 100, on_done, &s);
	while (s.done == 0)
		assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
	assert_int_equal(s.done, 1);
	event_free(ev);
	close(sv[1]);
	event_base_free(base);
}

/* No wait at all: closed at once, <done> before the return; and <done> may be NULL. */
static void
test_zero_and_null_done(void **state)
{
	struct event_base *base = event_base_new();
	struct seen s = {0, -1};
	char buf[4];
	int sv[2];

	(void)state;
	pair(sv);
	s.fd = sv[0];
	net_linger(base, sv[0], 0, on_done, &s);
	assert_int_equal(s.done, 1);
	assert_int_equal(read(sv[1], buf, sizeof(buf)), 0);
	close(sv[1]);
	pair(sv);
	net_linger(base, sv[0], 60000, NULL, NULL);
	close(sv[1]);
	assert_int_equal(event_base_dispatch(base), 1);
	event_base_free(base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_closes_on_eof),
		cmocka_unit_test(test_closes_at_deadline),
		cmocka_unit_test(test_trickle_does_not_extend),
		cmocka_unit_test(test_zero_and_null_done),
	};

	return cmocka_run_group_tests_name("proxy/linger", tests, NULL, NULL);
}
