/*
 * policy/secrets_pack.c - packs the secrets, sandboxes and sandbox_env
 * entries policy/secrets.c built into one block appended to the snapshot's
 * own allocation: the snapshot stays a single immutable object, and its
 * destructor (match.c) frees them with it.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/netaddr.h"
#include "common/sluice.h"
#include "secrets_int.h"

/* Packing: a first pass with base NULL measures, a second writes. */
struct pack {
	char *base;
	size_t off;
};

static void *
take(struct pack *pk, size_t n, size_t align)
{
	void *r;

	if (n == 0)
		return NULL;
	pk->off = (pk->off + align - 1) & ~(align - 1);
	r = pk->base != NULL ? pk->base + pk->off : NULL;
	pk->off += n;
	return r;
}

static const char *
str(struct pack *pk, const char *s)
{
	size_t n;
	char *d;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	d = take(pk, n, 1);
	if (d != NULL)
		memcpy(d, s, n);
	return d;
}

static const char *const *
strs(struct pack *pk, char *const *v, size_t n)
{
	const char **d = take(pk, n * sizeof(*d), alignof(const char *));
	size_t i;

	for (i = 0; i < n; i++) {
		const char *s = str(pk, v[i]);

		if (d != NULL)
			d[i] = s;
	}
	return d;
}

static struct policy_secret
pack_secret(struct pack *pk, const struct b_secret *bs)
{
	struct policy_secret s;
	struct policy_inject *inj;
	size_t j;

	memset(&s, 0, sizeof(s));
	s.name = str(pk, bs->name);
	s.source = str(pk, bs->source);
	s.ttl_s = bs->ttl_s;
	s.format = str(pk, bs->format);
	s.placeholder = str(pk, bs->placeholder);
	s.hosts = strs(pk, bs->hosts, bs->nhosts);
	s.nhosts = bs->nhosts;
	inj = take(pk, bs->ninject * sizeof(*inj), alignof(struct policy_inject));
	for (j = 0; j < bs->ninject; j++) {
		const char *a = str(pk, bs->inject[j].arg);

		if (inj != NULL) {
			inj[j].kind = bs->inject[j].kind;
			inj[j].arg = a;
		}
	}
	s.inject = inj;
	s.ninject = bs->ninject;
	s.sandboxes = strs(pk, bs->sandboxes, bs->nsandboxes);
	s.nsandboxes = bs->nsandboxes;
	return s;
}

/* Lays out <b> at pk->base (or only measures, base NULL); fills <p>'s fields when not NULL. */
static void
pack(struct pack *pk, const struct build *b, struct policy *p)
{
	struct policy_secret *sec = take(pk, b->nsec * sizeof(*sec), alignof(struct policy_secret));
	struct policy_sandbox *sb = take(pk, b->nsb * sizeof(*sb), alignof(struct policy_sandbox));
	struct policy_env *env = take(pk, b->nenv * sizeof(*env), alignof(struct policy_env));
	size_t i;

	for (i = 0; i < b->nsec; i++) {
		struct policy_secret s = pack_secret(pk, &b->sec[i]);

		if (sec != NULL)
			sec[i] = s;
	}
	for (i = 0; i < b->nsb; i++) {
		const struct b_sandbox *bs = &b->sb[i];
		struct policy_sandbox s;
		struct netaddr_cidr *a;

		s.name = str(pk, bs->name);
		a = take(pk, bs->naddrs * sizeof(*a), alignof(struct netaddr_cidr));
		if (a != NULL)
			memcpy(a, bs->addrs, bs->naddrs * sizeof(*a));
		s.addrs = a;
		s.naddrs = bs->naddrs;
		s.proxy_user = str(pk, bs->user);
		s.proxy_password = str(pk, bs->password);
		if (sb != NULL)
			sb[i] = s;
	}
	for (i = 0; i < b->nenv; i++) {
		struct policy_env e;

		e.var = str(pk, b->env[i].var);
		e.secret = str(pk, b->env[i].secret);
		if (env != NULL)
			env[i] = e;
	}
	if (p != NULL) {
		p->secrets = sec;
		p->nsecrets = b->nsec;
		p->sandboxes = sb;
		p->nsandboxes = b->nsb;
		p->env = env;
		p->nenv = b->nenv;
	}
}

void
policy_secrets_attach(const struct build *b, struct policy **pp)
{
	size_t head = (sizeof(struct policy) + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	struct pack pk = {NULL, 0};
	struct policy *p;

	pack(&pk, b, NULL);
	if (pk.off == 0)
		return;
	p = xrealloc(*pp, head + pk.off);
	pk.base = (char *)p + head;
	pk.off = 0;
	pack(&pk, b, p);
	*pp = p;
}
