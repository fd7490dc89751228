/*
 * proxy/cred/cred.c - the gateway's secret store: for each secret the policy
 * declares, its placeholder and its current value, shared by the workers.
 *
 * Values are fetched on the main thread (at start, on reload, and when an
 * exec: source's ttl runs out), never by a worker: an exec: program may take
 * seconds.  A worker takes a reference to a value for the request that
 * injects it; a refresh swaps the value and the old one is wiped when its
 * last request ends.  Entries are never freed before the gateway stops, so
 * a worker may keep a pointer to one: a changed declaration gets a new entry.
 */
#include <stdatomic.h>
#include <pthread.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/crypto.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/cred/cred.h"
#include "secrets/scrub.h"

struct cred_value {
	atomic_int refs;
	struct secret_buf *buf;
};

struct cred_entry {
	char *name;
	char *source;
	char *format;                /* NULL: none */
	char *given;                 /* the placeholder as written, NULL: derived */
	unsigned ttl_s;
	char placeholder[SECRET_PLACEHOLDER_MAX];
	struct cred_value *val;      /* NULL while unavailable */
	struct cred_value *prev;     /* the value <val> replaced: still scrubbed (the service may keep echoing it) */
	char why[160];               /* why it is unavailable */
	time_t fetched;
	atomic_int stale;            /* an upstream answered 401 to it: re-run an exec: source at the next tick */
	struct cred_entry *next;
};

struct cred_store {
	pthread_mutex_t mu;
	uint8_t key[SECRET_KEY_BYTES];
	struct cred_entry *list;     /* newest first */
	atomic_uint gen;             /* bumped whenever an entry's value changes (credscrub.c rebuilds its sets) */
};

static int
streq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
value_drop(struct cred_value *v)
{
	if (v == NULL || atomic_fetch_sub(&v->refs, 1) != 1)
		return;
	secret_buf_free(v->buf);
	free(v);
}

void
cred_value_drop(struct cred_value *v)
{
	value_drop(v);
}

void
cred_entry_rejected(const struct cred_entry *ce)
{
	/* stale is the one field a holder of the const handle sets: an atomic, read by the main thread's refresh */
	struct cred_entry *e = SLUICE_DECONST(struct cred_entry *, ce);

	/* only a program can mint a new value; env: and file: would give the same one */
	if (strncmp(e->source, "exec:", 5) == 0)
		atomic_store(&e->stale, 1);
}

unsigned
cred_store_gen(struct cred_store *st)
{
	return atomic_load(&st->gen);
}

const uint8_t *
cred_value_bytes(const struct cred_value *v, size_t *len)
{
	*len = v->buf->len;
	return v->buf->p;
}

/* Fetches <e>'s value (main thread) and installs it; the old one goes when its last user does. */
static void
fetch(struct cred_store *st, struct cred_entry *e)
{
	struct secret_source src;
	struct secret_buf *b = NULL;
	struct cred_value *v = NULL, *old;
	const char *err = NULL;
	int r, unusable = 0;

	r = secret_source_parse(e->source, &src, &err);
	if (r == 0) {
		r = secret_fetch(&src, 0, &b, &err);
		secret_source_dispose(&src);
	}
	/*
	 * A secret's value (not a sandbox's proxy password, which has no
	 * placeholder) must be scrubbable from responses: one too short is
	 * refused at every fetch, so an exec: or file: source that starts giving
	 * one makes the secret unavailable rather than unscrubbed.
	 */
	if (r == 0 && e->placeholder[0] != '\0' && (r = secret_value_check(b, &err)) != 0) {
		unusable = 1;
		secret_buf_free(b);
		b = NULL;
	}
	if (r == 0) {
		v = xcalloc(1, sizeof(*v));
		atomic_init(&v->refs, 1);
		v->buf = b;
	} else {
		log_warnx("secret '%s': %s", e->name, err != NULL ? err : sluice_strerror(r));
	}
	pthread_mutex_lock(&st->mu);
	old = e->val;
	if (v != NULL && old != NULL && old->buf->len == v->buf->len &&
	    CRYPTO_memcmp(old->buf->p, v->buf->p, v->buf->len) == 0) {
		/* the same value again (a file re-read on its ttl): nothing changed, no scrub set to rebuild */
		e->fetched = time(NULL);
		pthread_mutex_unlock(&st->mu);
		value_drop(v);
		return;
	}
	/*
	 * a failed refresh keeps serving the last good value until the next try;
	 * a value that came but cannot be used (too short) withdraws the old one
	 */
	if (v != NULL || old == NULL || unusable) {
		e->val = v;
		snprintf(e->why, sizeof(e->why), "%s", v != NULL ? "" : err != NULL ? err : sluice_strerror(r));
		if (old != NULL) {
			/*
			 * a rotated token may stay valid, and stored, for a while: the
			 * responses of its hosts go on being scrubbed of it until the next
			 * change (credscrub.c); it is never injected again
			 */
			struct cred_value *t = e->prev;
			e->prev = old;
			old = t;
		}
	} else {
		old = NULL;
	}
	e->fetched = time(NULL);
	if (e->val != old || v != NULL)
		atomic_fetch_add(&st->gen, 1);
	pthread_mutex_unlock(&st->mu);
	value_drop(old);
}

static struct cred_entry *
find(struct cred_store *st, const struct policy_secret *s)
{
	struct cred_entry *e;

	for (e = st->list; e != NULL; e = e->next)
		if (strcmp(e->name, s->name) == 0 && streq(e->source, s->source) && streq(e->format, s->format) &&
		    streq(e->given, s->placeholder) && e->ttl_s == s->ttl_s)
			return e;
	return NULL;
}

struct cred_store *
cred_store_create(const char *ca_dir, const char **err)
{
	struct cred_store *st = xcalloc(1, sizeof(*st));
	int r;

	r = secret_key_load(ca_dir, 1, st->key, err);
	if (r != 0) {
		free(st);
		return NULL;
	}
	pthread_mutex_init(&st->mu, NULL);
	return st;
}

/* A sandbox's proxy password is kept like a secret, under a name no secret can have. */
static void
sandbox_secret(const struct policy_sandbox *sb, char *name, size_t cap, struct policy_secret *out)
{
	snprintf(name, cap, "sandbox:%s", sb->name);
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->source = sb->proxy_password;
}

static void
sync_one(struct cred_store *st, const struct policy_secret *s, int derive)
{
	struct cred_entry *e;
	const char *err = NULL;

	pthread_mutex_lock(&st->mu);
	e = find(st, s);
	pthread_mutex_unlock(&st->mu);
	if (e != NULL)
		return;
	e = xcalloc(1, sizeof(*e));
	e->name = xstrdup(s->name);
	e->source = xstrdup(s->source);
	e->format = s->format != NULL ? xstrdup(s->format) : NULL;
	e->given = s->placeholder != NULL ? xstrdup(s->placeholder) : NULL;
	e->ttl_s = s->ttl_s;
	if (e->given != NULL)
		snprintf(e->placeholder, sizeof(e->placeholder), "%s", e->given);
	else if (derive && secret_placeholder(st->key, e->name, e->format, e->placeholder, sizeof(e->placeholder), &err) != 0)
		fatalx("secret '%s': %s", e->name, err);  /* the loader validated name and format */
	fetch(st, e);
	pthread_mutex_lock(&st->mu);
	e->next = st->list;
	st->list = e;
	atomic_fetch_add(&st->gen, 1);
	pthread_mutex_unlock(&st->mu);
}

void
cred_store_sync(struct cred_store *st, const struct policy *pol)
{
	const struct policy_sandbox *sb;
	struct policy_secret fake;
	char name[96];
	size_t i;

	for (i = 0; i < policy_secret_count(pol); i++)
		sync_one(st, policy_secret_get(pol, i), 1);
	for (i = 0; i < policy_sandbox_count(pol); i++) {
		sb = policy_sandbox_get(pol, i);
		if (sb->proxy_password == NULL)
			continue;
		sandbox_secret(sb, name, sizeof(name), &fake);
		sync_one(st, &fake, 0);
	}
}

int
cred_proxy_auth(struct cred_store *st, const struct policy *p, const char *user, size_t ulen, const char *pw,
                size_t pwlen, const char **sandbox)
{
	const struct policy_sandbox *sb = policy_sandbox_by_proxy_user(p, user, ulen);
	struct policy_secret fake;
	const struct cred_entry *e;
	struct cred_value *v;
	const uint8_t *val;
	char name[96], why[160];
	size_t vlen;
	int ok;

	if (sb == NULL || sb->proxy_password == NULL)
		return -1;
	sandbox_secret(sb, name, sizeof(name), &fake);
	e = cred_entry_of(st, &fake);
	if (e == NULL || (v = cred_value_take(st, e, why, sizeof(why))) == NULL)
		return -1;
	val = cred_value_bytes(v, &vlen);
	ok = vlen == pwlen && CRYPTO_memcmp(val, pw, vlen) == 0;
	cred_value_drop(v);
	if (!ok)
		return -1;
	*sandbox = sb->name;
	return 0;
}

void
cred_store_refresh(struct cred_store *st)
{
	struct cred_entry *e;
	time_t now = time(NULL);

	pthread_mutex_lock(&st->mu);
	e = st->list;
	pthread_mutex_unlock(&st->mu);
	/* entries are only prepended: walking from a snapshot of the head is safe */
	for (; e != NULL; e = e->next)
		if ((e->ttl_s > 0 && now - e->fetched >= (time_t)e->ttl_s) || atomic_exchange(&e->stale, 0) != 0)
			fetch(st, e);
}

void
cred_store_destroy(struct cred_store *st)
{
	struct cred_entry *e, *next;

	if (st == NULL)
		return;
	for (e = st->list; e != NULL; e = next) {
		next = e->next;
		value_drop(e->val);
		value_drop(e->prev);
		free(e->name);
		free(e->source);
		free(e->format);
		free(e->given);
		free(e);
	}
	pthread_mutex_destroy(&st->mu);
	sluice_wipe(st->key, sizeof(st->key));
	free(st);
}

const struct cred_entry *
cred_entry_of(struct cred_store *st, const struct policy_secret *s)
{
	struct cred_entry *e;

	pthread_mutex_lock(&st->mu);
	e = find(st, s);
	pthread_mutex_unlock(&st->mu);
	return e;
}

const char *
cred_placeholder(const struct cred_entry *e)
{
	return e->placeholder;
}

struct cred_value *
cred_value_take(struct cred_store *st, const struct cred_entry *e, char *why, size_t cap)
{
	struct cred_value *v;

	pthread_mutex_lock(&st->mu);
	v = e->val;
	if (v != NULL)
		atomic_fetch_add(&v->refs, 1);
	else
		snprintf(why, cap, "%s", e->why[0] ? e->why : "not fetched yet");
	pthread_mutex_unlock(&st->mu);
	return v;
}

struct cred_value *
cred_prev_value_take(struct cred_store *st, const struct cred_entry *e)
{
	struct cred_value *v;

	pthread_mutex_lock(&st->mu);
	v = e->prev;
	if (v != NULL)
		atomic_fetch_add(&v->refs, 1);
	pthread_mutex_unlock(&st->mu);
	return v;
}
