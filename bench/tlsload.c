/*
 * bench/tlsload.c - a small TLS load generator for Sluice's benchmark.
 *
 * Why not wrk for new connections: wrk resumes TLS sessions and busy-loops
 * while a handshake is pending, which burns the client's CPU and understates
 * the rate a TLS-intercepting proxy can sustain.  This tool forces a full
 * handshake on every connection (no tickets, no session cache, a new SSL each
 * time), verifies the server certificate, and always waits in epoll.
 *
 * Modes:
 *   newconn  -C slots, each: connect, full handshake, one GET with
 *            "Connection: close", read to EOF, check 200, close, repeat.
 *   latency  one keep-alive connection, sequential GETs; per-request latency.
 *   idle     open -N keep-alive connections (handshake + one GET each, -C at
 *            a time), print "ready ...", then hold them until -t seconds
 *            pass or SIGTERM/SIGINT/SIGUSR1 arrives.
 *
 * Every loop is bounded by time (-d, -t) and count (-N); the tool exits by
 * itself.  Output is one line of key=value pairs (plus "ready" in idle mode).
 *
 * This file is the event loop, the connection slots and TLS.  The command
 * line, usage text, error lines, latency samples, percentiles and result
 * lines are in tlsload_report.c; tlsload.h is what the two share.
 *
 * Build: cc -O2 -o tlsload bench/tlsload.c bench/tlsload_report.c -lssl -lcrypto
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tlsload.h"

#define RESP_HEAD_MAX 8192       /* response head bytes kept for parsing */
#define REQ_MAX 1024             /* request line + headers */
#define OP_TIMEOUT_NS (10ull * 1000000000ull) /* one connection or request */
#define DRAIN_CHUNK 65536
#define ERROR_BACKOFF_NS 10000000ull /* a failed slot waits 10 ms */

enum state {
	ST_FREE = 0,
	ST_CONNECT,
	ST_HANDSHAKE,
	ST_WRITE,
	ST_READ,
	ST_IDLE,
};

static const char *const state_name[] = {
	"free", "connect", "handshake", "write", "read", "idle",
};

struct slot {
	int fd;
	SSL *ssl;
	enum state st;
	uint32_t events;          /* currently registered with epoll */
	uint64_t t_start;         /* connection (newconn) or request start */
	uint64_t t_op;            /* start of the current operation, for timeouts */
	uint64_t not_before;      /* after an error: no new connection before this */
	size_t req_off;
	char head[RESP_HEAD_MAX];
	size_t head_len;
	size_t head_end;          /* 0 until the blank line is seen */
	long long clen;           /* -1 unknown */
	int close_after;          /* the response said "Connection: close" */
	uint64_t body;
	int requests;             /* on this connection */
};

static struct tl_opts o;
static SSL_CTX *ctx;
static int ep = -1;
static struct slot *slots;
static char req[REQ_MAX];
static size_t req_len;
static struct tl_counts cnt;
static volatile sig_atomic_t stop_flag;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void
fail_op(struct slot *s, const char *what)
{
	cnt.err++;
	/* Keep a failing target from turning the run into a connect storm. */
	s->not_before = now_ns() + ERROR_BACKOFF_NS;
	report_error(state_name[s->st], what);
}

static void
slot_close(struct slot *s)
{
	if (s->ssl != NULL)
		SSL_free(s->ssl);
	s->ssl = NULL;
	if (s->fd != -1)
		close(s->fd);    /* also removes it from the epoll set */
	s->fd = -1;
	s->st = ST_FREE;
	s->events = 0;
}

static int
want(struct slot *s, uint32_t ev)
{
	struct epoll_event e;

	if (s->events == ev)
		return 0;
	memset(&e, 0, sizeof(e));
	e.events = ev;
	e.data.ptr = s;
	if (epoll_ctl(ep, s->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD,
	    s->fd, &e) == -1)
		return -1;
	s->events = ev;
	return 0;
}

static void
resp_reset(struct slot *s)
{
	s->head_len = 0;
	s->head_end = 0;
	s->clen = -1;
	s->close_after = 0;
	s->body = 0;
	s->req_off = 0;
}

/* Starts a new connection in <s>.  Returns 0, or -1 (counted as an error). */
static int
slot_open(struct slot *s)
{
	int one = 1;

	resp_reset(s);
	s->requests = 0;
	s->events = 0;
	s->ssl = NULL;
	s->t_start = s->t_op = now_ns();
	cnt.started++;
	s->fd = socket(o.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1) {
		s->st = ST_CONNECT;
		fail_op(s, strerror(errno));
		slot_close(s);
		return -1;
	}
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s->st = ST_CONNECT;
	if (connect(s->fd, (struct sockaddr *)&o.addr, o.addrlen) == -1 &&
	    errno != EINPROGRESS) {
		fail_op(s, strerror(errno));
		slot_close(s);
		return -1;
	}
	if (want(s, EPOLLOUT) == -1) {
		fail_op(s, "epoll_ctl");
		slot_close(s);
		return -1;
	}
	return 0;
}

/* Finds the end of the head and the Content-Length.  0, 1 (complete), -1. */
static int
parse_head(struct slot *s)
{
	const char *p, *end, *line, *eol;
	char num[32];
	size_t n;
	char *ep_;
	unsigned long long v;

	p = memmem(s->head, s->head_len, "\r\n\r\n", 4);
	if (p == NULL)
		return s->head_len >= sizeof(s->head) ? -1 : 0;
	s->head_end = (size_t)(p - s->head) + 4;
	if (s->head_end < 12 || memcmp(s->head, "HTTP/1.1 200", 12) != 0)
		return -1;
	end = s->head + s->head_end - 2;
	line = memchr(s->head, '\n', s->head_end);
	while (line != NULL && line + 1 < end) {
		line++;
		eol = memchr(line, '\r', (size_t)(end - line));
		if (eol == NULL)
			break;
		n = (size_t)(eol - line);
		if (n > 15 && strncasecmp(line, "content-length:", 15) == 0) {
			const char *v0 = line + 15;

			while (v0 < eol && (*v0 == ' ' || *v0 == '\t'))
				v0++;
			n = (size_t)(eol - v0);
			if (n == 0 || n >= sizeof(num))
				return -1;
			memcpy(num, v0, n);
			num[n] = '\0';
			errno = 0;
			v = strtoull(num, &ep_, 10);
			if (errno != 0 || *ep_ != '\0' || num[0] == '-' ||
			    v > (1ull << 40))
				return -1;
			s->clen = (long long)v;
		} else if (n > 11 && strncasecmp(line, "connection:", 11) == 0 &&
		    memmem(line + 11, n - 11, "close", 5) != NULL) {
			s->close_after = 1;
		}
		line = eol + 1;
	}
	/* Bytes read past the head are body. */
	s->body = s->head_len - s->head_end;
	return 1;
}

static void response_done(struct slot *s);

/* Reads what is available.  Returns 0 to keep waiting, -1 after closing. */
static int
do_read(struct slot *s)
{
	static char drain[DRAIN_CHUNK];
	char *buf;
	size_t cap;
	int r, e, ph;

	for (;;) {
		if (s->head_end == 0) {
			buf = s->head + s->head_len;
			cap = sizeof(s->head) - s->head_len;
		} else {
			buf = drain;
			cap = sizeof(drain);
		}
		r = SSL_read(s->ssl, buf, (int)cap);
		if (r > 0) {
			cnt.bytes_in += (uint64_t)r;
			if (s->head_end == 0) {
				s->head_len += (size_t)r;
				ph = parse_head(s);
				if (ph < 0) {
					char first[64];
					size_t k = 0;

					while (k < s->head_len && k < sizeof(first) - 1 &&
					    s->head[k] >= 0x20 && s->head[k] < 0x7f) {
						first[k] = s->head[k];
						k++;
					}
					first[k] = '\0';
					fail_op(s, first);
					slot_close(s);
					return -1;
				}
			} else {
				s->body += (uint64_t)r;
			}
			if (s->head_end != 0 && s->clen >= 0 &&
			    s->body > (uint64_t)s->clen) {
				fail_op(s, "more body than Content-Length");
				slot_close(s);
				return -1;
			}
			if (o.mode != TL_MODE_NEWCONN && s->head_end != 0) {
				if (s->clen < 0) {
					fail_op(s, "keep-alive response without Content-Length");
					slot_close(s);
					return -1;
				}
				if (s->body == (uint64_t)s->clen) {
					response_done(s);
					return 0;
				}
			}
			continue;
		}
		e = SSL_get_error(s->ssl, r);
		if (e == SSL_ERROR_WANT_READ)
			return want(s, EPOLLIN) == -1 ? -1 : 0;
		if (e == SSL_ERROR_WANT_WRITE)
			return want(s, EPOLLOUT) == -1 ? -1 : 0;
		if (e == SSL_ERROR_ZERO_RETURN ||
		    (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && r == 0)) {
			/* EOF (SSL_OP_IGNORE_UNEXPECTED_EOF makes a bare FIN one). */
			if (o.mode == TL_MODE_NEWCONN && s->head_end != 0 &&
			    (s->clen < 0 || s->body == (uint64_t)s->clen)) {
				response_done(s);
				return -1;
			}
			if (s->st == ST_IDLE) {
				slot_close(s);   /* peer closed an idle connection */
				return -1;
			}
			fail_op(s, "connection closed before the response was complete");
			slot_close(s);
			return -1;
		}
		fail_op(s, e == SSL_ERROR_SYSCALL ? strerror(errno) : "SSL_read");
		slot_close(s);
		return -1;
	}
}

static int
do_write(struct slot *s)
{
	int r, e;

	while (s->req_off < req_len) {
		r = SSL_write(s->ssl, req + s->req_off, (int)(req_len - s->req_off));
		if (r > 0) {
			s->req_off += (size_t)r;
			continue;
		}
		e = SSL_get_error(s->ssl, r);
		if (e == SSL_ERROR_WANT_WRITE)
			return want(s, EPOLLOUT);
		if (e == SSL_ERROR_WANT_READ)
			return want(s, EPOLLIN);
		fail_op(s, e == SSL_ERROR_SYSCALL ? strerror(errno) : "SSL_write");
		slot_close(s);
		return -1;
	}
	s->st = ST_READ;
	s->t_op = now_ns();
	if (want(s, EPOLLIN) == -1)
		return -1;
	return do_read(s);
}

static int
start_request(struct slot *s)
{
	resp_reset(s);
	s->st = ST_WRITE;
	s->t_op = now_ns();
	if (o.mode != TL_MODE_NEWCONN)
		s->t_start = s->t_op;
	s->requests++;
	return do_write(s);
}

static int
do_handshake(struct slot *s)
{
	int r, e;

	r = SSL_connect(s->ssl);
	if (r == 1)
		return start_request(s);
	e = SSL_get_error(s->ssl, r);
	if (e == SSL_ERROR_WANT_READ)
		return want(s, EPOLLIN);
	if (e == SSL_ERROR_WANT_WRITE)
		return want(s, EPOLLOUT);
	if (SSL_get_verify_result(s->ssl) != X509_V_OK)
		fail_op(s, X509_verify_cert_error_string(SSL_get_verify_result(s->ssl)));
	else
		fail_op(s, e == SSL_ERROR_SYSCALL ? "handshake: connection reset or closed" :
		    "handshake");
	slot_close(s);
	return -1;
}

static int
do_connected(struct slot *s)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
		fail_op(s, strerror(err != 0 ? err : errno));
		slot_close(s);
		return -1;
	}
	s->ssl = SSL_new(ctx);
	if (s->ssl == NULL || SSL_set_fd(s->ssl, s->fd) != 1 ||
	    SSL_set_tlsext_host_name(s->ssl, o.name) != 1 ||
	    SSL_set1_host(s->ssl, o.name) != 1) {
		fail_op(s, "SSL_new");
		slot_close(s);
		return -1;
	}
	s->st = ST_HANDSHAKE;
	return do_handshake(s);
}

static void
response_done(struct slot *s)
{
	uint64_t t = now_ns();

	cnt.ok++;
	switch (o.mode) {
	case TL_MODE_NEWCONN:
		report_sample_add(t - s->t_start);
		slot_close(s);
		break;
	case TL_MODE_LATENCY:
		/* The first request also paid for the handshake: not a sample. */
		if (s->requests > 1)
			report_sample_add(t - s->t_start);
		s->st = ST_IDLE;
		if (s->close_after)
			slot_close(s);   /* e.g. nginx's keepalive_requests: reconnect */
		break;
	case TL_MODE_IDLE:
		if (s->close_after) {
			slot_close(s);   /* not kept: counted as not alive */
			break;
		}
		resp_reset(s);
		s->st = ST_IDLE;
		want(s, EPOLLIN);
		break;
	}
}

static void
on_event(struct slot *s, uint32_t ev)
{
	switch (s->st) {
	case ST_CONNECT:
		do_connected(s);
		break;
	case ST_HANDSHAKE:
		do_handshake(s);
		break;
	case ST_WRITE:
		do_write(s);
		break;
	case ST_READ:
		do_read(s);
		break;
	case ST_IDLE:
		if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
			do_read(s);   /* closes on EOF; unexpected data is an error */
		if (s->st == ST_IDLE && s->head_len != 0) {
			fail_op(s, "data on an idle connection");
			slot_close(s);
		}
		break;
	case ST_FREE:
		break;
	}
}

static int
setup(void)
{
	struct rlimit rl;
	unsigned nslots;
	int n;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_signal);

	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL)
		return -1;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* Full handshakes only: no tickets, no client session cache. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_load_verify_locations(ctx, o.cafile, NULL) != 1) {
		fprintf(stderr, "tlsload: cannot load CA file %s\n", o.cafile);
		return -1;
	}
	if (SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1", 9) != 0)
		return -1;

	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: %s\r\n%s%s\r\n",
	    o.path, o.name, o.mode == TL_MODE_NEWCONN ? "close" : "keep-alive", o.header != NULL ? o.header : "",
	    o.header != NULL ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(req)) {
		fprintf(stderr, "tlsload: request too long\n");
		return -1;
	}
	req_len = (size_t)n;

	nslots = o.mode == TL_MODE_IDLE ? (unsigned)o.count : o.conc;
	slots = calloc(nslots, sizeof(*slots));
	if (slots == NULL || report_samples_init() == -1)
		return -1;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep == -1)
		return -1;
	for (unsigned i = 0; i < nslots; i++) {
		slots[i].fd = -1;
		slots[i].st = ST_FREE;
	}
	return 0;
}

/*
 * Runs the event loop until <deadline>, a stop signal, or <done>() says so.
 * Every <tick> it times out stuck operations and refills free slots.
 */
static void
loop(uint64_t deadline, unsigned nslots, int (*done)(void), int (*refill)(void))
{
	struct epoll_event evs[256];
	uint64_t t, last_tick = 0;
	int n, ms, pending;

	while (!stop_flag && !done()) {
		t = now_ns();
		if (t >= deadline)
			break;
		if (t - last_tick > 100000000ull) {
			last_tick = t;
			for (unsigned i = 0; i < nslots; i++) {
				struct slot *s = &slots[i];

				if (s->st != ST_FREE && s->st != ST_IDLE &&
				    t - s->t_op > OP_TIMEOUT_NS) {
					fail_op(s, "timed out");
					slot_close(s);
				}
			}
		}
		/* A request can complete inside refill(): then do not sleep. */
		pending = refill();
		ms = (int)((deadline - t) / 1000000ull) + 1;
		if (ms > 100)
			ms = 100;
		if (pending)
			ms = 0;
		n = epoll_wait(ep, evs, 256, ms);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			perror("tlsload: epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++)
			on_event(evs[i].data.ptr, evs[i].events);
	}
}

static int
never(void)
{
	return 0;
}

static int
count_reached(void)
{
	return o.count != 0 && cnt.ok + cnt.err >= o.count;
}

/*
 * Refill functions start work in free slots.  They return 1 when a slot is
 * ready for more work already (so the loop must not sleep), else 0.  A slot
 * whose connect failed at once stays free until the next pass: no spinning.
 */
static int
refill_newconn(void)
{
	uint64_t t = now_ns();

	for (unsigned i = 0; i < o.conc; i++) {
		if (slots[i].st != ST_FREE || slots[i].not_before > t)
			continue;
		if (o.count != 0 && cnt.started >= o.count)
			return 0;
		slot_open(&slots[i]);
	}
	return 0;
}

static int
refill_latency(void)
{
	struct slot *s = &slots[0];

	if (count_reached())
		return 0;
	if (s->st == ST_FREE && s->not_before <= now_ns())
		slot_open(s);
	else if (s->st == ST_IDLE)
		start_request(s);
	return s->st == ST_IDLE && !count_reached();
}

static unsigned long idle_next;

static int
refill_idle(void)
{
	unsigned inflight = 0;

	for (unsigned i = 0; i < idle_next; i++)
		if (slots[i].st != ST_FREE && slots[i].st != ST_IDLE)
			inflight++;
	while (inflight < o.conc && idle_next < o.count) {
		slot_open(&slots[idle_next++]);
		inflight++;
	}
	return 0;
}

static int
idle_all_opened(void)
{
	return idle_next >= o.count && cnt.ok + cnt.err >= o.count;
}

static unsigned
count_alive(void)
{
	unsigned alive = 0;

	for (unsigned long i = 0; i < o.count; i++)
		if (slots[i].st == ST_IDLE)
			alive++;
	return alive;
}

int
main(int argc, char **argv)
{
	uint64_t t0, t1;
	double el;

	report_opts_parse(argc, argv, &o);
	if (setup() == -1) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	t0 = now_ns();
	switch (o.mode) {
	case TL_MODE_NEWCONN:
		loop(t0 + (uint64_t)(o.dur * 1e9), o.conc, count_reached, refill_newconn);
		break;
	case TL_MODE_LATENCY:
		loop(t0 + (uint64_t)(o.dur * 1e9), 1, count_reached, refill_latency);
		break;
	case TL_MODE_IDLE:
		loop(t0 + (uint64_t)(o.dur * 1e9), (unsigned)o.count, idle_all_opened,
		    refill_idle);
		t1 = now_ns();
		report_ready_print(&cnt, count_alive(), (double)(t1 - t0) / 1e9);
		/* Hold: only EOFs from the peer are processed now. */
		loop(t1 + (uint64_t)(o.hold * 1e9), (unsigned)o.count, never, refill_idle);
		report_idle_print(&cnt, count_alive());
		return cnt.err != 0 || count_alive() != o.count;
	}
	t1 = now_ns();
	el = (double)(t1 - t0) / 1e9;
	if (o.mode == TL_MODE_NEWCONN)
		report_newconn_print(&cnt, el);
	else
		report_latency_print(&cnt, el);
	return cnt.ok == 0;
}
