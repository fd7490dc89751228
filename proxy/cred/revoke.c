/*
 * proxy/cred/revoke.c - revocation reaches the connections that are open, and
 * whose requests an upstream connection may carry (issue 17).
 *
 * A connection remembers the facts it was judged under: its policy snapshot
 * and that snapshot's generation (pol_gen), the generation of the policy's
 * secrets and sandboxes (revoke_gen: a reload bumps it only when those
 * differ), and the sandbox registration (sbx, and its id sbx_id: an address
 * registered again is another id).  Three checks use them:
 *
 *  - the sweep (revoke_sweep), on the worker's thread as soon as a reload's
 *    policy or a removal reaches it by mail: every connection whose secrets
 *    and sandboxes generation is older, or whose registration was removed, is
 *    revoked (revoke_conn): an idle HTTP/1.1 connection closes at once, a busy
 *    one after the request in flight (its answer says Connection: close), an
 *    HTTP/2 connection gets GOAWAY (its open streams finish, no new one
 *    starts), and a WebSocket tunnel whose upgrade carried an injected value
 *    closes.  Each is audited (type "revocation").
 *  - the start of every request (revoke_request_start): a revoked connection
 *    answers 421 and closes; a connection whose policy is older than its
 *    worker's adopts the newest (identity, host verdict) first, so a new deny
 *    rule applies to the next request on a kept-alive connection too.
 *  - the moment injected values would leave (revoke_stale, from relay.c): a
 *    request judged before the revocation and still waiting (for its body, or
 *    for the upstream) is refused instead of sent.  It reads the gateway's
 *    generation and the registration directly, so it holds even before the
 *    worker has read its mail.
 *
 * conn_tenant() names whose requests an upstream connection carries: pooled
 * connections and shared HTTP/2 sessions are matched on it (upstream.c,
 * h2up.c), so two sandboxes never share one.
 */
#include <stdio.h>
#include <string.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"
#include "proxy/core/context.h"
#include "audit/writer.h"

static int
str_eq(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
strs_eq(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (!str_eq(a[i], b[i]))
			return 0;
	return 1;
}

static int
secret_eq(const struct policy_secret *a, const struct policy_secret *b)
{
	size_t i;

	if (b == NULL || !str_eq(a->source, b->source) || a->ttl_s != b->ttl_s || !str_eq(a->format, b->format) ||
	    !str_eq(a->placeholder, b->placeholder) || !strs_eq(a->hosts, a->nhosts, b->hosts, b->nhosts) ||
	    !strs_eq(a->sandboxes, a->nsandboxes, b->sandboxes, b->nsandboxes) || a->ninject != b->ninject)
		return 0;
	for (i = 0; i < a->ninject; i++)
		if (a->inject[i].kind != b->inject[i].kind || !str_eq(a->inject[i].arg, b->inject[i].arg))
			return 0;
	return 1;
}

static int
cidr_eq(const struct netaddr_cidr *a, const struct netaddr_cidr *b)
{
	return a->family == b->family && a->prefix == b->prefix && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static int
sandbox_eq(const struct policy_sandbox *a, const struct policy_sandbox *b)
{
	size_t i;

	if (!str_eq(a->name, b->name) || a->naddrs != b->naddrs || !str_eq(a->proxy_user, b->proxy_user) ||
	    !str_eq(a->proxy_password, b->proxy_password))
		return 0;
	for (i = 0; i < a->naddrs; i++)
		if (!cidr_eq(&a->addrs[i], &b->addrs[i]))
			return 0;
	return 1;
}

int
revoke_policies_differ(const struct policy *a, const struct policy *b)
{
	size_t i, n = policy_secret_count(a);

	if (n != policy_secret_count(b) || policy_sandbox_count(a) != policy_sandbox_count(b))
		return 1;
	for (i = 0; i < n; i++) {
		const struct policy_secret *s = policy_secret_get(a, i);

		if (!secret_eq(s, policy_secret_find(b, s->name)))
			return 1;
	}
	for (i = 0; i < policy_sandbox_count(a); i++)
		if (!sandbox_eq(policy_sandbox_get(a, i), policy_sandbox_get(b, i)))
			return 1;
	return 0;
}

const char *
conn_tenant(const struct conn *c, char *buf)
{
	char addr[CONN_ADDR_STR];
	int n;

	if (c->sbx != NULL && c->sandbox == c->sbx->name)
		n = snprintf(buf, UPSTREAM_TENANT_MAX, "r%llu", (unsigned long long)c->sbx_id);
	else if (c->sandbox != NULL)
		n = snprintf(buf, UPSTREAM_TENANT_MAX, "s%s", c->sandbox);
	else  /* not a known sandbox: its address is who it is */
		n = snprintf(buf, UPSTREAM_TENANT_MAX, "a%s", netaddr_format(&c->peer.sa, 0, addr, sizeof(addr)));
	if (n < 0 || n >= UPSTREAM_TENANT_MAX)  /* a name too long to be a key: this connection shares with no one */
		snprintf(buf, UPSTREAM_TENANT_MAX, "c%llu", (unsigned long long)c->id);
	return buf;
}

/* The registration <c> was judged under was removed (DELETE /sandboxes/<name>). */
static int
sbx_gone(const struct conn *c)
{
	return c->sbx != NULL && !sbxreg_entry_current(c->sbx, c->sbx_id);
}

static const char why_sbx[] = "its sandbox registration was removed";
static const char why_gen[] = "a reload changed the policy's secrets or sandboxes";

const char *
revoke_stale(const struct conn *c)
{
	if (c->revoked != NULL)
		return c->revoked;
	if (sbx_gone(c))
		return why_sbx;
	if (c->revoke_gen != atomic_load(&c->w->gw->revoke_gen))
		return why_gen;
	return NULL;
}

void
revoke_audit(struct conn *c, const char *action, const char *why)
{
	char peer[CONN_ADDR_STR];
	struct audit_rec r = AUDIT_REC_INIT(AUDIT_KIND_REVOCATION);
	char esc[200];

	r.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	r.id = c->req != NULL && c->req->audit_id[0] != '\0' ? c->req->audit_id : NULL;
	r.client = conn_peer_str(c, peer);
	r.host = c->host[0] ? c->host : NULL;
	r.result = action;
	r.reason = why;
	r.generation = (int64_t)c->w->pol_gen;
	r.rule = "revocation";
	r.conn_id = c->id;

	log_info("c%llu: revoked (%s): %s (%s)", (unsigned long long)c->id, action, why,
	         log_escape(esc, sizeof(esc), c->host, strlen(c->host)));
	audit_write(c->w->gw->audit, &r);
}

const char *
revoke_why(const struct conn *c)
{
	if (c->revoke_gen != c->w->revoke_gen)
		return why_gen;
	if (sbx_gone(c))
		return why_sbx;
	return NULL;
}

/* Who <c> is under <np>: as conn_accept() tells (the policy's sandboxes first, then the registrations). */
static const char *
identify(const struct conn *c, const struct policy *np)
{
	const struct policy_sandbox *was = policy_sandbox_by_addr(c->pol, &c->peer.sa);
	const struct policy_sandbox *sb = policy_sandbox_by_addr(np, &c->peer.sa);
	size_t i;

	if (sb != NULL)
		return sb->name;
	if (c->sbx != NULL && !sbx_gone(c))
		return c->sbx->name;
	if (c->sandbox == NULL || (was != NULL && was->name == c->sandbox) ||
	    (c->sbx != NULL && c->sandbox == c->sbx->name))
		return NULL;
	/* an explicit-proxy client that authenticated: the same sandbox, if its proxy_auth is unchanged */
	for (i = 0; i < policy_sandbox_count(np); i++) {
		const struct policy_sandbox *s = policy_sandbox_get(np, i);

		if (strcmp(s->name, c->sandbox) == 0) {
			for (size_t k = 0; k < policy_sandbox_count(c->pol); k++) {
				const struct policy_sandbox *o = policy_sandbox_get(c->pol, k);

				if (o->name == c->sandbox && sandbox_eq(o, s))
					return s->name;
			}
			return NULL;
		}
	}
	return NULL;
}

/* Moves <c> to its worker's policy: who it is and what its host's verdict is.  0, or -1 refused (<rf>). */
static int
adopt(struct conn *c, struct refusal *rf)
{
	struct worker *w = c->w;
	struct policy_conn_decision d;
	const char *name = identify(c, w->pol);

	policy_unref(c->pol);
	c->pol = policy_ref(w->pol);
	c->pol_gen = w->pol_gen;
	c->revoke_gen = w->revoke_gen;
	c->sandbox = name;
	if (!c->judged || c->host[0] == '\0')
		return 0;  /* plain HTTP not yet judged: request_host() judges it */
	policy_decide_conn(c->pol, c->host, c->port, &d);
	c->entry = d.host;
	if (d.verdict == POLICY_DENY)
		return refusal_close(rf, 403, REFUSAL_DENIED, d.rule, d.reason);
	if (d.verdict == POLICY_PASSTHROUGH && c->tls)
		return refusal_close(rf, 421, REFUSAL_MISDIRECTED, "revocation",
		                     "the host is passthrough under the new policy: reconnect");
	return 0;
}

int
revoke_request_start(struct conn *c, struct refusal *rf)
{
	if (c->revoked == NULL && sbx_gone(c))
		c->revoked = why_sbx;  /* removed, and the sweep has not run yet */
	if (c->revoked != NULL) {
		revoke_audit(c, "request_refused", c->revoked);
		return refusal_close(rf, 421, REFUSAL_MISDIRECTED, "revocation", c->revoked);
	}
	if (c->pol_gen != c->w->pol_gen)
		return adopt(c, rf);
	return 0;
}

int
revoke_send_check(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	const char *why;

	if (r == NULL || r->cred->nuses == 0 || (why = revoke_stale(c)) == NULL)
		return 0;
	if (c->revoked == NULL)
		c->revoked = why;
	revoke_audit(c, "request_refused", why);
	return refusal_close(rf, 503, REFUSAL_SECRET_REVOKED, "revocation", why);  /* c->up: freed by the answer */
}
