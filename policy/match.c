/*
 * policy/match.c - the compiled snapshot: host index, connection and request
 * decisions, reference counting.
 *
 * Deciding takes no lock, does no I/O and, on the hot path, allocates
 * nothing: host lookup is a hash probe for the exact name and then one probe
 * per label suffix for wildcards (longest first), so its cost grows with the
 * number of labels in the name, not with the number of entries.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "policy_int.h"

static uint64_t
hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

/* The text a table indexes for host <h>: the key, or the suffix of a wildcard. */
static const char *
index_text(const struct policy_host *h)
{
	return h->kind == POLICY_HOST_WILDCARD ? h->key + 2 : h->key;
}

/* Returns the host index + 1 for <s>/<n> in <t>, or 0. */
static uint32_t
htab_find(const struct policy *p, const struct policy_htab *t, const char *s, size_t n)
{
	size_t i;

	if (t->slots == NULL)
		return 0;
	for (i = hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
		uint32_t v = t->slots[i];
		const char *k;

		if (v == 0)
			return 0;
		k = index_text(&p->hosts[v - 1]);
		if (strlen(k) == n && memcmp(k, s, n) == 0)
			return v;
	}
}

const struct policy_host *
policy_wild_find(const struct policy *p, const char *suffix, size_t n)
{
	uint32_t v = htab_find(p, &p->wild, suffix, n);

	return v != 0 ? &p->hosts[v - 1] : NULL;
}

static void
htab_init(struct policy_htab *t, size_t n)
{
	size_t cap = 8;

	while (cap < n * 2 + 1)
		cap *= 2;
	t->slots = xcalloc(cap, sizeof(*t->slots));
	t->mask = cap - 1;
}

int
policy_index_build(struct policy_ld *l, struct policy *p)
{
	size_t i, nexact = 0, nwild = 0;

	for (i = 0; i < p->nhosts; i++) {
		if (p->hosts[i].kind == POLICY_HOST_WILDCARD)
			nwild++;
		else
			nexact++;
	}
	htab_init(&p->exact, nexact);
	htab_init(&p->wild, nwild);
	for (i = 0; i < p->nhosts; i++) {
		struct policy_host *h = &p->hosts[i];
		struct policy_htab *t = h->kind == POLICY_HOST_WILDCARD ? &p->wild : &p->exact;
		const char *k = index_text(h);
		size_t n = strlen(k), j;
		uint32_t dup = htab_find(p, t, k, n);

		if (dup != 0) {
			yaml_mark_t m = {0, h->line - 1, h->col - 1};

			return policy_ld_error_at(l, m, "duplicate host '%s' in hosts (also at line %u)",
			                          h->key, p->hosts[dup - 1].line);
		}
		for (j = hash_bytes(k, n) & t->mask; t->slots[j] != 0; j = (j + 1) & t->mask)
			;
		t->slots[j] = (uint32_t)(i + 1);
	}
	return 0;
}

struct policy *
policy_alloc(void)
{
	struct policy *p = xcalloc(1, sizeof(*p));

	atomic_init(&p->refs, 1);
	return p;
}

void
policy_rule_dispose(struct policy_rule *r)
{
	size_t i;

	for (i = 0; i < r->nmethods; i++)
		free(r->methods[i]);
	free(r->methods);
	free(r->path_src);
	policy_glob_dispose(&r->glob);
	pcre2_code_free(r->re);
	free(r->id);
	free(r->where);
	policy_cond_dispose(r);
	memset(r, 0, sizeof(*r));
}

static void
policy_free(struct policy *p)
{
	size_t i, j;

	for (i = 0; i < p->nhosts; i++) {
		struct policy_host *h = &p->hosts[i];

		for (j = 0; j < h->nrules; j++)
			policy_rule_dispose(&h->rules[j]);
		free(h->rules);
		free(h->ports);
		free(h->key);
		free(h->mcp_endpoint);
	}
	free(p->hosts);
	for (i = 0; i < p->nwarnings; i++)
		free(p->warnings[i]);
	free(p->warnings);
	for (i = 0; i < p->nslimits; i++) {
		free(p->slimits[i].name);
		free(p->slimits[i].lim.key);
	}
	free(p->slimits);
	free(p->exact.slots);
	free(p->wild.slots);
	pcre2_match_context_free(p->mctx);
	free(p);
}

struct policy *
policy_ref(struct policy *p)
{
	if (p != NULL)
		atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
	return p;
}

void
policy_unref(struct policy *p)
{
	if (p == NULL)
		return;
	if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
		policy_free(p);
}

/*
 * Per-thread match data (ovector of one pair: no captures are used), so that
 * matching allocates nothing after a thread's first regex; freed by a
 * pthread key destructor when the thread exits.
 */
static _Thread_local pcre2_match_data *tl_md;
static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static int md_key_ok;

static void
md_destroy(void *md)
{
	pcre2_match_data_free(md);
}

static void
md_key_init(void)
{
	md_key_ok = pthread_key_create(&md_key, md_destroy) == 0;
}

static pcre2_match_data *
match_data(void)
{
	if (tl_md != NULL)
		return tl_md;
	pthread_once(&md_once, md_key_init);
	if (!md_key_ok)
		return NULL;
	tl_md = pcre2_match_data_create(1, NULL);
	if (tl_md != NULL && pthread_setspecific(md_key, tl_md) != 0) {
		pcre2_match_data_free(tl_md);
		tl_md = NULL;
	}
	return tl_md;
}

int
policy_regex_match(const struct policy *p, const pcre2_code *re, const char *s, size_t len)
{
	pcre2_match_data *md = match_data();
	int rc;

	if (md == NULL)
		return -1;
	rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, p->mctx);
	if (rc >= 0)
		return 1; /* 0: matched, ovector too small for captures */
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	return -1;
}

/* 1 if the canonical <host> is an IP literal: IPv6 has ':', IPv4 an all-digit last label. */
static int
host_is_ip(const char *host, size_t n)
{
	size_t i = n;

	if (memchr(host, ':', n) != NULL)
		return 1;
	if (n == 0)
		return 0;
	while (i > 0 && host[i - 1] != '.') {
		if (host[i - 1] < '0' || host[i - 1] > '9')
			return 0;
		i--;
	}
	return i < n;
}

static const struct policy_host *
host_lookup(const struct policy *p, const char *host)
{
	size_t n = strlen(host), i;
	uint32_t v;

	v = htab_find(p, &p->exact, host, n);
	if (v != 0)
		return &p->hosts[v - 1];
	if (host_is_ip(host, n))
		return NULL;
	/* Longest suffix first: the one after the first dot, then the next... */
	for (i = 0; i < n; i++) {
		if (host[i] != '.')
			continue;
		v = htab_find(p, &p->wild, host + i + 1, n - i - 1);
		if (v != 0)
			return &p->hosts[v - 1];
	}
	return NULL;
}

void
policy_decide_conn(const struct policy *p, const char *host, unsigned port,
                   struct policy_conn_decision *out)
{
	const struct policy_host *h;
	size_t i;

	out->host = NULL;
	out->rule = "default";
	out->reason = NULL;
	if (p == NULL || host == NULL) {
		out->verdict = POLICY_DENY;
		out->reason = "no policy";
		return;
	}
	h = host_lookup(p, host);
	if (h == NULL) {
		if (p->default_allow) {
			out->verdict = POLICY_INTERCEPT;
		} else {
			out->verdict = POLICY_DENY;
			out->reason = "host not in policy";
		}
		return;
	}
	out->host = h;
	out->rule = h->key;
	for (i = 0; i < h->nports; i++)
		if (h->ports[i] == port)
			break;
	if (i == h->nports) {
		out->verdict = POLICY_DENY;
		out->reason = "port not allowed";
		return;
	}
	out->verdict = h->verdict;
	if (h->verdict == POLICY_DENY)
		out->reason = "host denied by policy";
}

const char *
policy_host_key(const struct policy_host *h)
{
	return h->key;
}

int
policy_host_allow_private(const struct policy_host *h)
{
	return h->allow_private;
}

int
policy_host_keep_encoded_slashes(const struct policy_host *h)
{
	return h->keep_slashes;
}

enum policy_path_params
policy_host_path_params(const struct policy_host *h)
{
	return h != NULL ? h->path_params : POLICY_PATH_PARAMS_KEEP;
}

int
policy_host_get_bodies(const struct policy_host *h)
{
	return h != NULL && h->get_bodies;
}

enum policy_mode
policy_host_mode(const struct policy_host *h)
{
	return h->mode;
}

size_t
policy_warning_count(const struct policy *p)
{
	return p->nwarnings;
}

const char *
policy_warning_get(const struct policy *p, size_t i)
{
	return i < p->nwarnings ? p->warnings[i] : NULL;
}

size_t
policy_lint_errors(const struct policy *p)
{
	return p->nlint_errors;
}

const struct policy_limit *
policy_secret_limit(const struct policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nslimits; i++)
		if (strcmp(p->slimits[i].name, name) == 0)
			return &p->slimits[i].lim;
	return NULL;
}
