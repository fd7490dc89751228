/*
 * tests/unit/proxy/netfake.h - a fake proxy/net/ under the real session
 * (netfake.c), so that the connection and request state machine runs in a
 * unit test: the real proxy/session, cred, judge, h2, codec and policy
 * objects over in-memory buffers instead of sockets, TLS and a dialler.
 *
 * What it provides is what proxy/net/net.h declares and the session uses:
 * cio_* (the client's two buffers; cio_start "completes" a TLS handshake
 * at once), the deadline calls (armed deadlines are recorded; one of 0 ms
 * passes at the next round, others when the test says), upstream_* (a
 * struct upstream on one end of a libevent bufferevent pair whose other end
 * is the test's), net_linger (the socket is closed at once) and
 * net_ops_set.  It reports upward only as the real net does: through
 * w->net_ops (start_requests, pump, expired) and the upstream's callbacks.
 *
 * A world (nf_new) is one gateway and one worker on a real event base with
 * the policy of a YAML string, a CA in a temporary directory (for the leaf
 * of a CONNECT), the real secret store, counters, approvals registry and an
 * audit log that is off but counted: every record is kept in nf->rec.
 *
 * A client (nf_accept) is accepted by the real conn_accept on one end of a
 * socketpair in explicit-proxy mode from a fixed address; its proxy head
 * (the CONNECT, or an absolute-form first request) goes into that socket
 * for the session's own peek, and everything after it is written with
 * nf_send into what cio_in gives, as the TLS layer would.  What the session
 * writes toward the client is moved into cl->rx.  nf_run drives the event
 * loop and the I/O rounds until nothing moves.
 *
 * Ownership: the world owns every client and upstream record until
 * nf_free; the struct conn is the session's (cl->c is NULL once the
 * session freed its I/O, that is once it closed the connection).
 */
#ifndef SLUICE_TESTS_NETFAKE_H
#define SLUICE_TESTS_NETFAKE_H

#include <stddef.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "policy/policy.h"
#include "proxy/session/session.h"
#include "proxy/core/context.h"

#define NF_CLIENTS_MAX 8
#define NF_UPS_MAX 32
#define NF_RECS_MAX 128
#define NF_TEXT_MAX 128

struct nf_client {
	struct conn *c;          /* the session's connection; NULL once it was closed (cio_free) */
	int fd;                  /* the test's end of the socketpair (the proxy head, the CONNECT's 200) */
	int sfd;                 /* the session's end (closed by the session) */
	struct evbuffer *tx;     /* bytes the client sent that the session has not read yet */
	struct evbuffer *rx;     /* bytes the session wrote toward the client */
	int eof;                 /* the client sent its last byte (delivered once tx is read) */
	int shutdown;            /* the session ended its sending side (cio_shutdown) */
	int lingered;            /* its socket went to the lingering close (net_linger) */
	int closed;              /* the session closed the connection */
};

enum nf_dial {
	NF_DIAL_POOL = 0,        /* an idle pooled upstream of the same tenant and destination if any, else READY */
	NF_DIAL_READY,           /* a fresh upstream, connected at once */
	NF_DIAL_LATER,           /* connecting: the test finishes it with nf_up_connect */
	NF_DIAL_FAIL,            /* failed at once: up->errbuf says why */
};

struct nf_up {
	struct upstream *up;     /* the session's; NULL once upstream_free / upstream_release took it */
	struct bufferevent *peer;/* the test's end: its input is what the session sent up */
	struct bufferevent *mine;/* the session's end (up->bev) */
	char host[HOST_BUF];
	unsigned port;
	int tls;
	int released;            /* given back to the pool (upstream_release) */
	int freed;               /* upstream_free */
	int reused;              /* handed out again from the pool */
	bufferevent_event_cb eventcb;
	void *cbarg;
};

/* One audit record as the gateway would have written it (the members the tests compare). */
struct nf_rec {
	enum audit_kind kind;
	enum audit_verdict verdict;
	int status;
	char id[32];
	char rule[NF_TEXT_MAX];
	char reason[NF_TEXT_MAX];
	char path[NF_TEXT_MAX];
};

struct nf {
	struct policy_config *cfg;
	struct policy *pol;
	struct gateway gw;
	struct worker w;
	char ca_dir[64];
	struct nf_client cl[NF_CLIENTS_MAX];
	size_t ncl;
	struct nf_up ups[NF_UPS_MAX];
	size_t nups;
	enum nf_dial next_dial;  /* how the next dial goes (then back to NF_DIAL_POOL) */
	struct nf_rec rec[NF_RECS_MAX];
	size_t nrec;
};

/* The world for the policy <yaml>, or NULL (the error on stderr).  One at a time. */
struct nf *nf_new(const char *yaml);
/* Closes what is still open, reaps, and frees everything the world made, and the world. */
void nf_free(struct nf *nf);
/*
 * A client of the explicit proxy from 127.0.0.2:40000 whose first bytes, <head> (a CONNECT, or an
 * absolute-form request), wait in its socket for the session's peek; the world is run.  Never NULL.
 */
struct nf_client *nf_accept(struct nf *nf, const char *head);
/* The client sends <s> (after its proxy head: as the TLS layer would hand it over); not run yet. */
void nf_send(struct nf_client *cl, const char *s);
/* Runs the event loop and the I/O rounds until nothing moves (bounded). */
void nf_run(struct nf *nf);
/* The deadline armed for <cl> in ms, or -1 when none. */
long nf_deadline(const struct nf_client *cl);
/* <cl>'s deadline passes now (the test stands for the clock); then the world is run. */
void nf_expire(struct nf *nf, struct nf_client *cl);

/* The upstream dialled <i>-th (0 first); fails the test when there is none. */
struct nf_up *nf_up(struct nf *nf, size_t i);
/* The upstream <cl>'s connection holds now; fails the test when it holds none. */
struct nf_up *nf_up_held(struct nf_client *cl);
/* What the session sent up on <u> (malloc'd, NUL-terminated), drained from its end. */
char *nf_up_take(struct nf_up *u);
/* The upstream answers <s> (not run yet). */
void nf_up_send(struct nf_up *u, const char *s);
/* The upstream closes its side (EOF, or an error when <error>): reported through the owner's event callback. */
void nf_up_close(struct nf *nf, struct nf_up *u, int error);
/* An NF_DIAL_LATER dial ends: connected (<err> NULL) or failed with <err>; reported through its upstream_cb. */
void nf_up_connect(struct nf *nf, struct nf_up *u, const char *err);

/* What the session wrote toward the client (malloc'd, NUL-terminated), drained. */
char *nf_rx_take(struct nf_client *cl);
/* The records of kind <k> so far. */
size_t nf_recs(const struct nf *nf, enum audit_kind k);
/*
 * Every request recorded ended once: for each request id, one request record, and one final record (its
 * response record, or its request record when that is a deny).  Fails the test otherwise.
 */
void nf_assert_ended_once(const struct nf *nf);
/* The last record of kind <k>; fails the test when there is none. */
const struct nf_rec *nf_rec_last(const struct nf *nf, enum audit_kind k);

#endif
