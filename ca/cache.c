/*
 * ca/cache.c - the leaf cache: a bounded LRU of host name -> X509, split in
 * shards that each have their own mutex, hash table and LRU list.
 *
 * The names come from the sandbox (SNI, CONNECT), so the table is keyed with
 * SipHash-2-4 under a random key: a sandbox cannot aim names at one chain.
 * The per-shard bounds add up to exactly the total capacity (see ca_int.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/rand.h>

#include "ca_int.h"
#include "common/host.h"
#include "common/sluice.h"

struct lru_entry {
	struct lru_entry *hnext;        /* hash chain */
	struct lru_entry *prev, *next;  /* LRU list, most recent at head */
	uint64_t hash;
	X509 *cert;                     /* one reference owned by the cache */
	size_t len;
	char name[];                    /* len bytes plus NUL, len <= HOST_MAX */
};

struct lru_shard {
	pthread_mutex_t lock;
	struct lru_entry **buckets;
	size_t nbuckets;                /* a power of two */
	size_t count, cap;
	unsigned long hits, misses;     /* lookups served from the shard, and those that minted (or failed to) */
	struct lru_entry head;          /* sentinel: head.next is the most recent */
};

struct ca_lru {
	size_t capacity;
	size_t nshards;
	uint64_t key[2];
	struct lru_shard shards[CA_LRU_SHARDS_MAX];
};

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                        \
	do {                                                            \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                  \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                  \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

/* SipHash-2-4 of <in>/<len> under the 128-bit key <k>. */
static uint64_t
siphash(const uint64_t k[2], const unsigned char *in, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ k[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ k[0];
	uint64_t v3 = 0x7465646279746573ULL ^ k[1];
	uint64_t b = (uint64_t)len << 56, m;
	size_t i, tail = len & 7, whole = len - tail;

	for (i = 0; i < whole; i += 8) {
		m = 0;
		for (int j = 0; j < 8; j++)
			m |= (uint64_t)in[i + j] << (8 * j);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; j < tail; j++)
		b |= (uint64_t)in[whole + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

struct ca_lru *
ca_lru_create(size_t capacity)
{
	struct ca_lru *lru;
	size_t n, i;

	if (capacity == 0)
		capacity = 1;
	lru = xcalloc(1, sizeof(*lru));
	if (RAND_bytes((unsigned char *)lru->key, sizeof(lru->key)) != 1) {
		free(lru);
		return NULL;
	}
	n = capacity / CA_LRU_SHARD_MIN;
	if (n < 1)
		n = 1;
	if (n > CA_LRU_SHARDS_MAX)
		n = CA_LRU_SHARDS_MAX;
	lru->capacity = capacity;
	lru->nshards = n;
	for (i = 0; i < n; i++) {
		struct lru_shard *s = &lru->shards[i];
		size_t nb = 8;

		s->cap = capacity / n + (i < capacity % n ? 1 : 0);
		while (nb < s->cap && nb < CA_LRU_BUCKETS_MAX)
			nb <<= 1;
		s->nbuckets = nb;
		s->buckets = xcalloc(nb, sizeof(*s->buckets));
		s->head.next = s->head.prev = &s->head;
		if (pthread_mutex_init(&s->lock, NULL) != 0) {
			free(s->buckets);
			lru->nshards = i;
			ca_lru_destroy(lru);
			return NULL;
		}
	}
	return lru;
}

void
ca_lru_destroy(struct ca_lru *lru)
{
	size_t i;

	if (lru == NULL)
		return;
	for (i = 0; i < lru->nshards; i++) {
		struct lru_shard *s = &lru->shards[i];
		struct lru_entry *e = s->head.next, *next;

		while (e != &s->head) {
			next = e->next;
			X509_free(e->cert);
			free(e);
			e = next;
		}
		free(s->buckets);
		pthread_mutex_destroy(&s->lock);
	}
	free(lru);
}

static void
list_unlink(struct lru_entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void
list_push_front(struct lru_shard *s, struct lru_entry *e)
{
	e->prev = &s->head;
	e->next = s->head.next;
	s->head.next->prev = e;
	s->head.next = e;
}

/* Removes the least recently used entry of the non-empty shard <s>. */
static void
evict_one(struct lru_shard *s)
{
	struct lru_entry *victim = s->head.prev, **pp;

	pp = &s->buckets[victim->hash & (s->nbuckets - 1)];
	while (*pp != victim)
		pp = &(*pp)->hnext;
	*pp = victim->hnext;
	list_unlink(victim);
	s->count--;
	X509_free(victim->cert);
	free(victim);
}

X509 *
ca_lru_get(struct ca_lru *lru, const char *name, ca_mint_fn *mint, void *arg,
           int *hit, const char **err)
{
	struct lru_shard *s;
	struct lru_entry *e, **bucket;
	X509 *cert = NULL;
	uint64_t h;
	size_t len;

	*hit = 0;
	len = strnlen(name, HOST_MAX + 1);
	if (len > HOST_MAX) {
		*err = "host name too long";
		return NULL;
	}
	h = siphash(lru->key, (const unsigned char *)name, len);
	s = &lru->shards[(h >> 32) % lru->nshards];

	pthread_mutex_lock(&s->lock);
	bucket = &s->buckets[h & (s->nbuckets - 1)];
	for (e = *bucket; e != NULL; e = e->hnext) {
		if (e->hash == h && e->len == len && memcmp(e->name, name, len) == 0)
			break;
	}
	if (e != NULL) {
		list_unlink(e);
		list_push_front(s, e);
		if (X509_up_ref(e->cert) != 1) {
			*err = "certificate reference count failed";
			goto out;
		}
		cert = e->cert;
		*hit = 1;
		s->hits++;
		goto out;
	}
	s->misses++;

	/*
	 * Minting under the shard lock (tens of microseconds) is what makes
	 * concurrent misses for one name mint once; other shards go on.
	 */
	cert = mint(arg, name, err);
	if (cert == NULL)
		goto out;
	if (X509_up_ref(cert) != 1) {
		X509_free(cert);
		cert = NULL;
		*err = "certificate reference count failed";
		goto out;
	}
	while (s->count >= s->cap && s->count > 0)
		evict_one(s);
	e = xmalloc(sizeof(*e) + len + 1);
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->len = len;
	e->hash = h;
	e->cert = cert;
	e->hnext = *bucket;
	*bucket = e;
	list_push_front(s, e);
	s->count++;
out:
	pthread_mutex_unlock(&s->lock);
	return cert;
}

size_t
ca_lru_count(struct ca_lru *lru)
{
	size_t i, total = 0;

	for (i = 0; i < lru->nshards; i++) {
		pthread_mutex_lock(&lru->shards[i].lock);
		total += lru->shards[i].count;
		pthread_mutex_unlock(&lru->shards[i].lock);
	}
	return total;
}

/* Lookups since create: served from the cache (<hits>) and not (<misses>: minted, or the mint failed). */
static void
lru_lookups(struct ca_lru *lru, unsigned long *hits, unsigned long *misses)
{
	size_t i;

	*hits = *misses = 0;
	for (i = 0; i < lru->nshards; i++) {
		pthread_mutex_lock(&lru->shards[i].lock);
		*hits += lru->shards[i].hits;
		*misses += lru->shards[i].misses;
		pthread_mutex_unlock(&lru->shards[i].lock);
	}
}

void
ca_cache_lookups(struct ca *ca, unsigned long *hits, unsigned long *misses)
{
	lru_lookups(ca->lru, hits, misses);
}

size_t
ca_lru_capacity(const struct ca_lru *lru)
{
	return lru->capacity;
}

size_t
ca_lru_nshards(const struct ca_lru *lru)
{
	return lru->nshards;
}
