/*
 * proxy/cred/credscrub.c - the scrub set of a host: the echo forms of the value
 * of every secret bound to it, each mapped to its placeholder's, so that
 * every response from the host is scrubbed, whether or not its request
 * injected anything.  A value the bound service stored (in an object, a log,
 * a profile field) would otherwise be read back in clear by a later request
 * that carries no placeholder.
 *
 * Building a set of a hundred secrets costs about a millisecond (a dozen
 * forms each, indexed once), so each worker keeps the sets it built, one per
 * (policy snapshot, host), most recently used first, at most
 * HOST_SCRUB_CACHE of them.  A set is stale when the secret store's
 * generation moved since it was built (a value fetched, refreshed on its ttl
 * or after a 401, an entry added by a reload) or its policy is not the
 * connection's: it is built again, and the old one goes when the last
 * response using it ends.  Only the worker's thread touches its cache, so
 * the reference counts are plain integers.
 */
#include <stdlib.h>
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
#include "secrets/scrub.h"

#define HOST_SCRUB_CACHE 64   /* sets one worker keeps */

_Static_assert(SECRET_MIN_BYTES == SCRUB_FORM_MIN, "a value the gateway injects must be one the scrubber scrubs");
_Static_assert(SCRUB_TAGS >= PH_STREAM_MAX, "every secret of a policy needs a tag of its own");

struct host_scrub {
	int refs;                     /* the cache's, and each request's */
	struct policy *pol;           /* the snapshot it was built under (a reference) */
	unsigned gen;                 /* cred_store_gen() before it was built */
	char host[HOST_BUF];
	struct scrub_set *set;
	struct cred_value **vals;     /* the values it holds, referenced (host_scrub_has_value) */
	size_t nvals;
	struct host_scrub *next;      /* the worker's cache */
};

static void
hs_free(struct host_scrub *h)
{
	size_t i;

	scrub_set_free(h->set);
	for (i = 0; i < h->nvals; i++)
		cred_value_drop(h->vals[i]);
	free(h->vals);
	policy_unref(h->pol);
	free(h);
}

void
host_scrub_drop(struct host_scrub *h)
{
	if (h != NULL && --h->refs == 0)
		hs_free(h);
}

const struct scrub_set *
host_scrub_set(const struct host_scrub *h)
{
	return h->set;
}

int
host_scrub_has_value(const struct host_scrub *h, const struct cred_value *v)
{
	size_t i;

	for (i = 0; i < h->nvals; i++)
		if (h->vals[i] == v)
			return 1;
	return 0;
}

/* 1 if any secret of <pol> is bound to <host>. */
static int
host_bound(const struct policy *pol, const char *host)
{
	size_t i;

	for (i = 0; i < policy_secret_count(pol); i++)
		if (policy_secret_host_bound(policy_secret_get(pol, i), host))
			return 1;
	return 0;
}

/*
 * A new set for <host> under <pol>: every bound secret's value now, and
 * the value it replaced at its last change, tagged with its index in <pol>.
 * A secret without a value (not fetched, failed, too short) is injected
 * nowhere; its previous value, if any, is still scrubbed.  NULL when the set
 * cannot be built.
 */
static struct host_scrub *
build(struct cred_store *st, struct policy *pol, const char *host, unsigned gen)
{
	size_t n = policy_secret_count(pol), i, k = 0, len;
	struct host_scrub *h = xcalloc(1, sizeof(*h));
	struct scrub_secret *v = xcalloc(2 * n + 1, sizeof(*v));
	const struct policy_secret *s;
	const struct cred_entry *e;
	struct cred_value *cv;
	char why[160];
	int ret;

	h->refs = 1;
	h->pol = policy_ref(pol);
	h->gen = gen;
	snprintf(h->host, sizeof(h->host), "%s", host);
	h->set = scrub_set_new();
	h->vals = xcalloc(2 * n + 1, sizeof(*h->vals));
	for (i = 0; i < n; i++) {
		s = policy_secret_get(pol, i);
		if (!policy_secret_host_bound(s, host) || (e = cred_entry_of(st, s)) == NULL)
			continue;
		/* the current value, and the one it replaced (a rotated token may still be valid and stored) */
		for (int which = 0; which < 2; which++) {
			cv = which == 0 ? cred_value_take(st, e, why, sizeof(why)) : cred_prev_value_take(st, e);
			if (cv == NULL)
				continue;
			h->vals[h->nvals++] = cv;
			v[k].value = cred_value_bytes(cv, &len);
			v[k].len = len;
			v[k].placeholder = cred_placeholder(e);
			v[k].tag = (unsigned)i;
			k++;
		}
	}
	ret = scrub_set_add_secrets(h->set, v, k);
	free(v);
	if (ret != 0) {
		log_warnx("cannot build the scrub set of %s: %s", host, sluice_strerror(ret));
		hs_free(h);
		return NULL;
	}
	return h;
}

int
cred_host_scrub(struct conn *c)
{
	struct worker *w = c->w;
	struct host_scrub *h, **pp, *prev = NULL;
	unsigned gen;

	c->req->cred->hscrub = NULL;
	if (policy_secret_count(c->pol) == 0)
		return 0;
	gen = cred_store_gen(w->gw->creds);
	for (pp = &w->hscrubs; (h = *pp) != NULL; prev = h, pp = &h->next)
		if (h->pol == c->pol && strcmp(h->host, c->host) == 0)
			break;
	if (h != NULL && h->gen == gen) {
		if (prev != NULL) {  /* to the front */
			*pp = h->next;
			h->next = w->hscrubs;
			w->hscrubs = h;
		}
		h->refs++;
		c->req->cred->hscrub = h;
		return 0;
	}
	if (h != NULL) {  /* stale: out of the cache; requests still using it keep it */
		*pp = h->next;
		w->nhscrubs--;
		host_scrub_drop(h);
	}
	if (!host_bound(c->pol, c->host))
		return 0;
	if ((h = build(w->gw->creds, c->pol, c->host, gen)) == NULL)
		return -1;
	if (w->nhscrubs == HOST_SCRUB_CACHE) {  /* drop the least recently used */
		for (pp = &w->hscrubs; (*pp)->next != NULL; pp = &(*pp)->next)
			;
		host_scrub_drop(*pp);
		*pp = NULL;
		w->nhscrubs--;
	}
	h->next = w->hscrubs;
	w->hscrubs = h;
	w->nhscrubs++;
	h->refs++;
	c->req->cred->hscrub = h;
	return 0;
}

void
cred_scrub_cache_free(struct worker *w)
{
	struct host_scrub *h, *next;

	for (h = w->hscrubs; h != NULL; h = next) {
		next = h->next;
		host_scrub_drop(h);
	}
	w->hscrubs = NULL;
	w->nhscrubs = 0;
}
