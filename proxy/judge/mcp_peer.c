/*
 * proxy/judge/mcp_peer.c - the gateway's table of server-to-client MCP
 * requests (mcp_peer.h): a fixed array of MCP_PEER_MAX entries filled as a
 * ring (the next free slot from the ring's position; when the table is full,
 * the oldest entry's), chained per
 * key in MCP_PEER_BUCKETS buckets.  Keys and ids are kept as SHA-256
 * digests: every entry has the same small size whatever the peer sent.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "proxy/judge/mcp_peer.h"

#define MCP_PEER_BUCKETS 1024u  /* a power of two */
#define NONE (-1)

struct ent {
	uint64_t seq;                          /* insertion order; 0: the slot is free */
	uint64_t at_ms;
	int32_t bnext, bprev;                  /* the bucket's chain */
	struct mcp_peer_key k;
	unsigned char id[32];                  /* SHA-256 of the id's compact JSON text */
	char method[POLICY_MCP_METHOD_MAX + 1];
};

struct mcp_peers {
	pthread_mutex_t mu;
	uint64_t seq;
	size_t next;                           /* the ring's next slot */
	size_t count;
	int32_t bucket[MCP_PEER_BUCKETS];
	struct ent e[MCP_PEER_MAX];
};

struct mcp_peers *
mcp_peers_create(void)
{
	struct mcp_peers *t = calloc(1, sizeof(*t));
	size_t i;

	if (t == NULL)
		return NULL;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t);
		return NULL;
	}
	for (i = 0; i < MCP_PEER_BUCKETS; i++)
		t->bucket[i] = NONE;
	return t;
}

void
mcp_peers_destroy(struct mcp_peers *t)
{
	if (t == NULL)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static int
digest(const void *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

int
mcp_peer_key_make(struct mcp_peer_key *k, const char *client, const char *host, const char *session, size_t slen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int len = sizeof(k->d);
	static const char nul = '\0';
	int ret = 0;

	/* the parts are separated by NUL, which none of them holds: no two tuples digest the same text */
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, client, strlen(client)) != 1 || EVP_DigestUpdate(ctx, &nul, 1) != 1 ||
	    EVP_DigestUpdate(ctx, host, strlen(host)) != 1 || EVP_DigestUpdate(ctx, &nul, 1) != 1 ||
	    (session != NULL && EVP_DigestUpdate(ctx, session, slen) != 1) || EVP_DigestFinal_ex(ctx, k->d, &len) != 1)
		ret = -1;
	EVP_MD_CTX_free(ctx);
	return ret;
}

static size_t
bucket_of(const struct mcp_peer_key *k)
{
	return ((size_t)k->d[0] | (size_t)k->d[1] << 8) & (MCP_PEER_BUCKETS - 1);
}

/* Frees slot <i> (in use): out of its chain. */
static void
unlink_ent(struct mcp_peers *t, int32_t i)
{
	struct ent *e = &t->e[i];

	if (e->bprev != NONE)
		t->e[e->bprev].bnext = e->bnext;
	else
		t->bucket[bucket_of(&e->k)] = e->bnext;
	if (e->bnext != NONE)
		t->e[e->bnext].bprev = e->bprev;
	e->seq = 0;
	t->count--;
}

/* The slot of the oldest entry (the table is full: every slot is in use). */
static int32_t
oldest_slot(const struct mcp_peers *t)
{
	int32_t i, o = 0;

	for (i = 1; i < (int32_t)MCP_PEER_MAX; i++)
		if (t->e[i].seq < t->e[o].seq)
			o = i;
	return o;
}

static int
expired(const struct ent *e, uint64_t now_ms)
{
	return now_ms >= e->at_ms && now_ms - e->at_ms >= MCP_PEER_TTL_MS;
}

int
mcp_peers_add(struct mcp_peers *t, const struct mcp_peer_key *k, const char *method, size_t mlen, const char *id,
              uint64_t now_ms)
{
	unsigned char idd[32];
	int32_t i, nx, oldest = NONE;
	size_t n = 0, b = bucket_of(k);
	struct ent *e;

	if (t == NULL || mlen > POLICY_MCP_METHOD_MAX || id == NULL || strlen(id) > MCP_PEER_ID_TEXT_MAX)
		return -1;
	if (digest(id, strlen(id), idd) != 0)
		return -1;
	pthread_mutex_lock(&t->mu);
	for (i = t->bucket[b]; i != NONE; i = nx) {
		e = &t->e[i];
		nx = e->bnext;
		if (memcmp(e->k.d, k->d, sizeof(k->d)) != 0)
			continue;
		if (expired(e, now_ms)) {
			unlink_ent(t, i);
			continue;
		}
		if (memcmp(e->id, idd, sizeof(idd)) == 0) {  /* seen again (a replayed stream): kept once */
			pthread_mutex_unlock(&t->mu);
			return 0;
		}
		if (oldest == NONE || e->seq < t->e[oldest].seq)
			oldest = i;
		n++;
	}
	if (n >= MCP_PEER_KEY_MAX)  /* the key's oldest goes: its answer will be refused */
		unlink_ent(t, oldest);
	/*
	 * The ring's next slot, or the first free one after it while the table is
	 * not full: an entry still waiting for its answer is never overwritten
	 * because others were added and taken around it.  Only a full table loses
	 * one: the oldest (a scan, only while the table is full).
	 */
	i = (int32_t)t->next;
	if (t->count < MCP_PEER_MAX) {
		while (t->e[i].seq != 0)
			i = (int32_t)(((size_t)i + 1) % MCP_PEER_MAX);
	} else {
		i = oldest_slot(t);
		unlink_ent(t, i);
	}
	t->next = ((size_t)i + 1) % MCP_PEER_MAX;
	e = &t->e[i];
	e->seq = ++t->seq;
	e->at_ms = now_ms;
	e->k = *k;
	memcpy(e->id, idd, sizeof(idd));
	memcpy(e->method, method, mlen);
	e->method[mlen] = '\0';
	e->bprev = NONE;
	e->bnext = t->bucket[b];
	if (e->bnext != NONE)
		t->e[e->bnext].bprev = i;
	t->bucket[b] = i;
	t->count++;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

int
mcp_peers_take(struct mcp_peers *t, const struct mcp_peer_key *k, const char *id, char *method, size_t cap,
               uint64_t now_ms)
{
	unsigned char idd[32];
	int32_t i, nx;
	struct ent *e;
	int found = 0;

	if (t == NULL || id == NULL)
		return 0;
	if (digest(id, strlen(id), idd) != 0)
		return 0;
	pthread_mutex_lock(&t->mu);
	for (i = t->bucket[bucket_of(k)]; i != NONE; i = nx) {
		e = &t->e[i];
		nx = e->bnext;
		if (memcmp(e->k.d, k->d, sizeof(k->d)) != 0 || memcmp(e->id, idd, sizeof(idd)) != 0)
			continue;
		if (!expired(e, now_ms)) {
			found = 1;
			if (method != NULL && cap > 0)
				snprintf(method, cap, "%s", e->method);
		}
		unlink_ent(t, i);
		break;
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}

size_t
mcp_peers_count(struct mcp_peers *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->count;
	pthread_mutex_unlock(&t->mu);
	return n;
}
