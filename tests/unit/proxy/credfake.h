/*
 * tests/unit/proxy/credfake.h - what the proxy/cred/ unit tests share
 * (credfake.c): one policy with two secrets, a fake secret store behind the
 * cred.c interface of proxy/cred/cred.h (fixed placeholders and fake values, with
 * reference counts), and a struct conn / struct req built per case; the
 * session above is sessfake.h's.  No gateway, no socket, no event loop.
 *
 * Secret "tok": placeholder PH, value VAL, bound to api.example.test and
 * plain.test (allow_plaintext) in header:Authorization, query:key, basic,
 * json:$.auth.token and form:password, for sandbox agent-1 only.  Secret
 * "other": PH_OTHER, VAL_OTHER, other.test, header:X-Api-Key.
 */
#ifndef SLUICE_TESTS_CREDFAKE_H
#define SLUICE_TESTS_CREDFAKE_H

#include <stddef.h>
#include <stdint.h>
#include <event2/buffer.h>
#include "policy/policy.h"
#include "proxy/session/session.h"
#include "proxy/core/context.h"
#include "tests/unit/proxy/sessfake.h"

#define PH "sluice_ph_UnitTok0123456789abcdefghij"
#define PH_OTHER "sluice_ph_UnitOther0123456789abcdefgh"
#define VAL "v&l=1 x/%"     /* needs percent-encoding in a query or form, no escaping in JSON */
#define VAL_OTHER "other-value-42"

/* The fake store's values: refs counts the references a request holds. */
struct cred_value {
	const uint8_t *p;
	size_t len;
	int refs;
};
struct cred_entry {
	const char *name;
	const char *placeholder;
	struct cred_value *val;   /* NULL: unavailable (cred_value_take fails: "not fetched yet") */
};
struct cred_store {
	struct cred_entry e[2];
};
extern struct cred_value cf_val_tok, cf_val_other;
extern struct cred_store cf_store;

struct cf {
	struct policy_config *cfg;
	struct policy *pol;
	struct gateway *gw;
	struct worker w;
	struct conn c;
	struct req r;
	char host[64];
};

/* cmocka group setup/teardown: *state is a struct cf with the policy loaded. */
int cf_setup(void **state);
int cf_teardown(void **state);
/*
 * A new case: connection of <sandbox> (NULL: no known client) to <host>, TLS when <tls>, whose request head
 * as built is <head> (in r->up_head); values available, references and fake_ans reset.
 */
struct conn *cf_conn(struct cf *f, const char *sandbox, const char *host, int tls, const char *head);
/* r->up_head as a string (malloc'd). */
char *cf_head(struct cf *f);
/* Ends a case: cred_release, and every value reference taken must have been given back. */
void cf_done(struct cf *f);
/* 1 when <b> holds <s>. */
int cf_has(struct evbuffer *b, const char *s);

#endif
