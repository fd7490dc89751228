/*
 * tests/unit/proxy/credfake.c - the fake secret store, the recording session
 * and the per-case conn/req of the proxy/cred/ unit tests (credfake.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "tests/unit/proxy/credfake.h"
#include "tests/unit/proxy/sessfake.h"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"hosts:\n"
	"  api.example.test: {}\n"
	"  plain.test:\n"
	"    allow_plaintext: true\n"
	"    ports: [80]\n"
	"  other.test: {}\n"
	"secrets:\n"
	"  tok:\n"
	"    source: env:UNIT_TOK\n"
	"    placeholder: " PH "\n"
	"    hosts: [api.example.test, plain.test]\n"
	"    inject: [header:Authorization, query:key, basic, \"json:$.auth.token\", form:password]\n"
	"    sandboxes: [agent-1]\n"
	"  other:\n"
	"    source: env:UNIT_OTHER\n"
	"    placeholder: " PH_OTHER "\n"
	"    hosts: [other.test]\n"
	"    inject: [header:X-Api-Key]\n"
	"sandboxes:\n"
	"  agent-1:\n"
	"    addresses: [10.200.1.2/32]\n"
	"  agent-2:\n"
	"    addresses: [10.200.1.3/32]\n";

struct cred_value cf_val_tok = {(const uint8_t *)VAL, sizeof(VAL) - 1, 0};
struct cred_value cf_val_other = {(const uint8_t *)VAL_OTHER, sizeof(VAL_OTHER) - 1, 0};
struct cred_store cf_store;

/* ---- the fake secret store: what cred.c would give ---- */

const struct cred_entry *
cred_entry_of(struct cred_store *st, const struct policy_secret *s)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (strcmp(st->e[i].name, s->name) == 0)
			return &st->e[i];
	return NULL;
}

const char *
cred_placeholder(const struct cred_entry *e)
{
	return e->placeholder;
}

struct cred_value *
cred_value_take(struct cred_store *st, const struct cred_entry *e, char *why, size_t cap)
{
	(void)st;
	if (e->val == NULL) {
		snprintf(why, cap, "not fetched yet");
		return NULL;
	}
	e->val->refs++;
	return e->val;
}

void
cred_value_drop(struct cred_value *v)
{
	if (v != NULL)
		v->refs--;
}

const uint8_t *
cred_value_bytes(const struct cred_value *v, size_t *len)
{
	*len = v->len;
	return v->p;
}

struct cred_value *
cred_prev_value_take(struct cred_store *st, const struct cred_entry *e)
{
	(void)st, (void)e;
	return NULL;   /* no value was rotated */
}

unsigned
cred_store_gen(struct cred_store *st)
{
	(void)st;
	return 1;
}

int
cred_proxy_auth(struct cred_store *st, const struct policy *p, const char *user, size_t ulen, const char *pw,
                size_t pwlen, const char **sandbox)
{
	(void)st, (void)p, (void)user, (void)ulen, (void)pw, (void)pwlen, (void)sandbox;
	return -1;
}

/* ---- a registered sandbox: none here ---- */

int
sbxreg_secret_allowed(const struct sbx_entry *e, const char *name)
{
	(void)e, (void)name;
	fail_msg("no registered sandbox in these tests");
	return 0;
}

/* credreq.c's cred_release calls it; a test that links credresp.c gets the real one */
__attribute__((weak)) void
cred_resp_free(struct req *r)
{
	(void)r;
}

/* ---- fixture: one policy; a conn and req per case ---- */

int
cf_setup(void **state)
{
	struct cf *f = calloc(1, sizeof(*f));

	if (f == NULL || fake_policy(yaml, &f->cfg, &f->pol) != 0) {
		free(f);
		return -1;
	}
	f->gw = calloc(1, sizeof(*f->gw));
	if (f->gw == NULL)
		return -1;
	cf_store.e[0] = (struct cred_entry){"tok", PH, &cf_val_tok};
	cf_store.e[1] = (struct cred_entry){"other", PH_OTHER, &cf_val_other};
	f->gw->creds = &cf_store;
	f->w.gw = f->gw;
	*state = f;
	return 0;
}

int
cf_teardown(void **state)
{
	struct cf *f = *state;

	policy_unref(f->pol);
	policy_config_free(f->cfg);
	free(f->gw);
	free(f);
	return 0;
}

struct conn *
cf_conn(struct cf *f, const char *sandbox, const char *host, int tls, const char *head)
{
	struct policy_conn_decision d;
	size_t i;

	memset(&f->c, 0, sizeof(f->c));
	memset(&f->r, 0, sizeof(f->r));
	f->r.cred = cred_req_new();
	fake_answer_reset();
	cf_store.e[0].val = &cf_val_tok;
	cf_val_tok.refs = cf_val_other.refs = 0;   /* a failed case before does not fail the next */
	f->c.w = &f->w;
	f->c.ops = sessfake_ops;
	f->c.pol = f->pol;
	f->c.tls = tls ? 1 : 0;
	f->c.sandbox = NULL;
	for (i = 0; sandbox != NULL && i < policy_sandbox_count(f->pol); i++)
		if (strcmp(policy_sandbox_get(f->pol, i)->name, sandbox) == 0)
			f->c.sandbox = policy_sandbox_get(f->pol, i)->name;   /* borrowed from pol, as http.c does */
	if (sandbox != NULL)
		assert_non_null(f->c.sandbox);
	snprintf(f->host, sizeof(f->host), "%s", host);
	f->c.host = f->host;
	policy_decide_conn(f->pol, host, tls ? 443 : 80, &d);
	f->c.entry = d.host;
	f->c.req = &f->r;
	f->r.up_head = evbuffer_new();
	assert_non_null(f->r.up_head);
	evbuffer_add(f->r.up_head, head, strlen(head));
	return &f->c;
}

char *
cf_head(struct cf *f)
{
	size_t n = evbuffer_get_length(f->r.up_head);
	char *s = malloc(n + 1);

	assert_non_null(s);
	evbuffer_copyout(f->r.up_head, s, n);
	s[n] = '\0';
	return s;
}

void
cf_done(struct cf *f)
{
	cred_release(&f->r);
	/* every value reference taken for the request is given back */
	assert_int_equal(cf_val_tok.refs, 0);
	assert_int_equal(cf_val_other.refs, 0);
	evbuffer_free(f->r.up_head);
	f->r.up_head = NULL;
}

int
cf_has(struct evbuffer *b, const char *s)
{
	return evbuffer_search(b, s, strlen(s), NULL).pos != -1;
}
