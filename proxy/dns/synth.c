/*
 * proxy/dns/synth.c - the synthetic address map (see synth.h).
 *
 * Slots are numbered 1..max; slot i is 198.18.0.0 + i and fd00:5c:5e::i, so
 * an address maps back to its entry in O(1) and a name finds its slot through
 * a chained hash table keyed with a random seed (names come from sandboxes:
 * a fixed hash would let them build long chains).  A doubly linked list of
 * slots, most recently used first, picks the entry to reuse when full.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "common/clock.h"
#include "common/host.h"
#include "common/sluice.h"
#include "proxy/dns/synth.h"

/* fd00:005c:005e:0000:0000:0000::/96 */
static const uint8_t v6_prefix[12] = {0xfd, 0x00, 0x00, 0x5c, 0x00, 0x5e, 0, 0, 0, 0, 0, 0};

struct synth_entry {
	char *name;      /* NULL: the slot holds no name */
	uint64_t hash;
	uint64_t used;   /* monotonic seconds of the last use */
	uint32_t hnext;  /* next slot in the same hash bucket, 0: none */
	uint32_t prev;   /* LRU neighbours, 0: none */
	uint32_t next;
};

struct synth {
	pthread_mutex_t lock;
	size_t max;            /* slots 1..max */
	unsigned reuse_min;    /* seconds */
	size_t nassigned;      /* slots 1..nassigned have been handed out */
	uint32_t *buckets;     /* heads of the hash chains, 0: empty */
	size_t nbuckets;       /* a power of two */
	uint32_t head, tail;   /* most and least recently used slot */
	uint64_t seed;
	struct synth_entry *e; /* max + 1 entries; e[0] unused */
};

static uint64_t
name_hash(uint64_t seed, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	/* murmur3's finaliser, so that the low bits used as the bucket mix in all of them */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

struct synth *
synth_new_bounded(size_t max, unsigned reuse_min_sec)
{
	struct synth *m;

	if (max < 1 || max > SYNTH_MAX)
		return NULL;
	m = xcalloc(1, sizeof(*m));
	m->max = max;
	m->reuse_min = reuse_min_sec;
	m->nbuckets = 1;
	while (m->nbuckets < max)
		m->nbuckets <<= 1;
	m->buckets = xcalloc(m->nbuckets, sizeof(*m->buckets));
	m->e = xcalloc(max + 1, sizeof(*m->e));
	if (getrandom(&m->seed, sizeof(m->seed), 0) != (ssize_t)sizeof(m->seed))
		m->seed = (uint64_t)(uintptr_t)m ^ ((uint64_t)time(NULL) << 20);
	pthread_mutex_init(&m->lock, NULL);
	return m;
}

struct synth *
synth_new(void)
{
	return synth_new_bounded(SYNTH_MAX, SYNTH_REUSE_MIN_AGE_SEC);
}

void
synth_free(struct synth *m)
{
	if (m == NULL)
		return;
	for (size_t i = 1; i <= m->max; i++)
		free(m->e[i].name);
	free(m->e);
	free(m->buckets);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static void
lru_unlink(struct synth *m, uint32_t i)
{
	struct synth_entry *x = &m->e[i];

	if (x->prev != 0)
		m->e[x->prev].next = x->next;
	else if (m->head == i)
		m->head = x->next;
	if (x->next != 0)
		m->e[x->next].prev = x->prev;
	else if (m->tail == i)
		m->tail = x->prev;
	x->prev = x->next = 0;
}

static void
lru_push_head(struct synth *m, uint32_t i)
{
	struct synth_entry *x = &m->e[i];

	x->prev = 0;
	x->next = m->head;
	if (m->head != 0)
		m->e[m->head].prev = i;
	m->head = i;
	if (m->tail == 0)
		m->tail = i;
}

static void
touch(struct synth *m, uint32_t i)
{
	m->e[i].used = clock_mono_s();
	if (m->head == i)
		return;
	lru_unlink(m, i);
	lru_push_head(m, i);
}

static void
hash_unlink(struct synth *m, uint32_t i)
{
	uint32_t *p = &m->buckets[m->e[i].hash & (m->nbuckets - 1)];

	while (*p != 0 && *p != i)
		p = &m->e[*p].hnext;
	if (*p == i)
		*p = m->e[i].hnext;
	m->e[i].hnext = 0;
}

static void
slot_addrs(uint32_t i, struct in_addr *v4, struct in6_addr *v6)
{
	uint32_t be = htonl(i);

	if (v4 != NULL)
		v4->s_addr = htonl(SYNTH_V4_NET + i);
	if (v6 != NULL) {
		memcpy(v6->s6_addr, v6_prefix, sizeof(v6_prefix));
		memcpy(v6->s6_addr + 12, &be, 4);
	}
}

int
synth_lookup_name(struct synth *m, const char *name, struct in_addr *v4, struct in6_addr *v6)
{
	uint64_t h;
	uint32_t i, *bucket;
	int ret = 0;

	if (m == NULL || name == NULL || strnlen(name, HOST_MAX + 1) > HOST_MAX ||
	    !host_is_canonical(name))
		return SLUICE_EINVAL;
	h = name_hash(m->seed, name);
	pthread_mutex_lock(&m->lock);
	bucket = &m->buckets[h & (m->nbuckets - 1)];
	for (i = *bucket; i != 0; i = m->e[i].hnext)
		if (m->e[i].hash == h && strcmp(m->e[i].name, name) == 0)
			break;
	if (i == 0) {
		if (m->nassigned < m->max) {
			i = (uint32_t)++m->nassigned;
		} else {
			/* full: take the least recently used slot, unless it is too fresh */
			i = m->tail;
			if (clock_mono_s() - m->e[i].used < m->reuse_min) {
				ret = SLUICE_ETOOBIG;
				goto out;
			}
			hash_unlink(m, i);
			lru_unlink(m, i);
			free(m->e[i].name);
		}
		m->e[i].name = xstrdup(name);
		m->e[i].hash = h;
		m->e[i].hnext = *bucket;
		*bucket = i;
		lru_push_head(m, i);
	}
	touch(m, i);
	slot_addrs(i, v4, v6);
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
}

/* The slot number <sa> encodes if it is synthetic (returns 1), else 0. Slot may be 0 or out of bound. */
static int
addr_slot(const struct sockaddr *sa, uint64_t *slot)
{
	const uint8_t *a6;
	uint32_t a;

	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET) {
		a = ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *in6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		a6 = in6->s6_addr;
		memcpy(&a, a6 + 12, 4);
		a = ntohl(a);
		if (memcmp(a6, v6_prefix, sizeof(v6_prefix)) == 0) {
			*slot = a;
			return 1;
		}
		if (!IN6_IS_ADDR_V4MAPPED(in6))
			return 0;
	} else {
		return 0;
	}
	if ((a >> (32 - SYNTH_V4_PREFIX)) != (SYNTH_V4_NET >> (32 - SYNTH_V4_PREFIX)))
		return 0;
	*slot = a - SYNTH_V4_NET;
	return 1;
}

int
synth_is_synthetic(const struct sockaddr *sa)
{
	uint64_t slot;

	return addr_slot(sa, &slot);
}

int
synth_lookup_addr(struct synth *m, const struct sockaddr *sa, char *name, size_t cap)
{
	uint64_t slot;
	size_t len;
	int ret = 0;

	if (cap > 0 && name != NULL)
		name[0] = '\0';
	if (m == NULL || !addr_slot(sa, &slot))
		return SLUICE_EINVAL;
	pthread_mutex_lock(&m->lock);
	if (slot == 0 || slot > m->nassigned || m->e[slot].name == NULL) {
		ret = SLUICE_ENOENT;
		goto out;
	}
	len = strlen(m->e[slot].name);
	if (name == NULL || len >= cap) {
		ret = SLUICE_ETOOBIG;
		goto out;
	}
	memcpy(name, m->e[slot].name, len + 1);
	touch(m, (uint32_t)slot);
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
}
