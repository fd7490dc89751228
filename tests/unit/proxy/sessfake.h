/*
 * tests/unit/proxy/sessfake.h - the session above the cred/ and judge/ modules
 * in their unit tests (sessfake.c).  These modules never answer: they fill the
 * struct refusal their caller passes (proxy/session/refusal.h) and return.
 * The tests pass fake_rf and hand each call's return value to fake_ret,
 * which records a filled refusal in fake_ans as the session would answer it
 * (a closing one clears the request's client_keep_alive, as http_refuse
 * does, and nothing is freed); http_refuse (the one answer, reached from the
 * async callbacks, e.g. an operator's decision) records it the same way.
 * sessfake_ops (each fixture sets it as c->ops) is an HTTP/1.1 connection's operations (no held-bytes count
 * shared with siblings; trailers, aborts and the rest fail the test), and
 * conn_peer_str a fixed sandbox address.  Every refusal these modules give
 * must be audited: a quiet one fails the test, and so does a call that
 * returns -1 without filling fake_rf.
 *
 * struct fake_fx is the fixture of the judge/ tests (one policy, a gateway
 * and a worker each test gives what its module reads, and the conn and
 * req of the current case).
 */
#ifndef SLUICE_TESTS_SESSFAKE_H
#define SLUICE_TESTS_SESSFAKE_H

#include "proxy/session/session.h"
#include "proxy/core/context.h"

struct fake_answer {
	int n;              /* answers written since fake_answer_reset (one at most, or the code answered twice) */
	int status;
	char error[64];
	char rule[64];
	char reason[512];
	int close;          /* the connection closes after the answer */
};
extern struct fake_answer fake_ans;

void fake_answer_reset(void);

struct conn_ops;
/* The operations a fixture sets as c->ops of its connections. */
extern const struct conn_ops *const sessfake_ops;

struct conn;
struct refusal;
/* The refusal the tests pass to the module under test (cleared by fake_ret and fake_answer_reset). */
extern struct refusal fake_rf;
/*
 * The return value <ret> of a call on <c>: records fake_rf in fake_ans when
 * it was filled (fails the test when <ret> is -1 and it was not, or when it
 * is quiet), clears it, and returns <ret>.
 */
int fake_ret(struct conn *c, int ret);

struct policy_config;
struct policy;
/* Loads the policy <yaml> (NUL-terminated) as the gateway would: 0, or -1 with the loader's error on stderr. */
int fake_policy(const char *yaml, struct policy_config **cfg, struct policy **pol);

struct fake_fx {
	struct policy_config *cfg;
	struct policy *pol;
	struct gateway gw;        /* zeroed: the test sets what its module reads (limits, held bytes) */
	struct worker w;          /* w.gw is &gw */
	struct conn c;            /* the current case's (fake_fx_conn) */
	struct req r;
	char host[64];
};
/* A fixture with the policy <yaml> loaded (fake_policy): NULL on failure.  fake_fx_free frees it and the policy. */
struct fake_fx *fake_fx_new(const char *yaml);
void fake_fx_free(struct fake_fx *f);
/*
 * A new case: f->c and f->r zeroed (what r held is the caller's to free first) and fake_ans reset; c is a TLS
 * connection in REQ_HEAD of the policy's first sandbox (NULL when it has none) to <host>:443, which the policy
 * must intercept, with c.req = &f->r.  Returns &f->c.
 */
struct conn *fake_fx_conn(struct fake_fx *f, const char *host);

#endif
