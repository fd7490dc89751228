/*
 * ca/ca_int.h - private types shared by ca.c, leaf.c and cache.c.  Nothing
 * outside ca/ (except its unit tests) includes this.
 */
#ifndef SLUICE_CA_CA_INT_H
#define SLUICE_CA_CA_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca/ca.h"

#define CA_KEY_FILE "ca.key"
#define CA_CERT_FILE "ca.pem"
#define CA_PATH_MAX 4096        /* bound on <dir>/<file> */
#define CA_FILE_MAX (64 * 1024) /* bound on ca.key / ca.pem read at load */
#define CA_CN_MAX 64            /* ub-common-name (RFC 5280) */
#define CA_SERIAL_BYTES 16      /* 128-bit serials */
#define CA_VALID_DAYS 3650      /* CA certificate lifetime */
#define CA_BACKDATE_SECS 3600   /* notBefore = now - 1h, for clock skew */

/*
 * Leaf cache sharding.  A cache of <capacity> leaves uses
 * capacity / CA_LRU_SHARD_MIN shards, clamped to [1, CA_LRU_SHARDS_MAX], so a
 * small cache is a single exact LRU and a large one spreads lock contention.
 * Shard i holds at most capacity / n + (i < capacity % n) leaves: the shard
 * bounds add up to exactly <capacity>, so the total can never exceed it.
 * LRU order is kept per shard.
 */
#define CA_LRU_SHARDS_MAX 16
#define CA_LRU_SHARD_MIN 64
#define CA_LRU_BUCKETS_MAX (1u << 16) /* per shard; chains grow past this */

/*
 * Mints a leaf for the canonical <name>; returns a certificate the caller
 * owns (one reference) or NULL with *<err> set.
 */
typedef X509 *ca_mint_fn(void *arg, const char *name, const char **err);

struct ca_lru;

struct ca {
	X509 *cert;            /* the CA certificate */
	EVP_PKEY *key;         /* the CA private key */
	EVP_PKEY *leaf_key;    /* shared by every leaf */
	EVP_PKEY *leaf_pub;    /* its public half, in a form X509_set_pubkey encodes fast */
	time_t not_after;      /* the CA's notAfter; leaves never outlive it */
	/* Extensions identical in every leaf, built once at load. */
	X509_EXTENSION *ext_bc, *ext_ku, *ext_eku, *ext_ski, *ext_aki;
	struct ca_lru *lru;
	atomic_ulong minted;
	atomic_ulong hits;
};

/* cache.c: a bounded, sharded LRU of name -> X509. */
struct ca_lru *ca_lru_create(size_t capacity);
/* Frees every entry (X509_free) and the cache; NULL is fine. */
void ca_lru_destroy(struct ca_lru *lru);
/*
 * Returns the certificate cached for <name> (NUL-terminated, at most HOST_MAX
 * bytes) with one reference for the caller.  On a miss calls <mint> while
 * holding the shard lock, so concurrent misses for one name mint once, and
 * caches the result, evicting the shard's least recently used entry when the
 * shard is full.  *<hit> is set to 1 on a hit, 0 otherwise.  NULL with *<err>
 * set when minting fails.
 */
X509 *ca_lru_get(struct ca_lru *lru, const char *name, ca_mint_fn *mint, void *arg,
                 int *hit, const char **err);
size_t ca_lru_count(struct ca_lru *lru);
size_t ca_lru_capacity(const struct ca_lru *lru);
size_t ca_lru_nshards(const struct ca_lru *lru);

/* leaf.c */
/* Builds the constant leaf extensions into <ca>. Returns 0 or SLUICE_E*. */
int ca_leaf_setup(struct ca *ca, const char **err);
/* A ca_mint_fn: <arg> is the struct ca. Counts ca->minted. */
X509 *ca_leaf_mint(void *arg, const char *name, const char **err);
/* Sets a random, positive, nonzero 128-bit serial on <x>. Returns 0 or SLUICE_E*. */
int ca_serial_set_random(X509 *x);
/* Converts an ASN1_TIME to seconds since the epoch. Returns 0 or SLUICE_EINVAL. */
int ca_asn1_time_get(const ASN1_TIME *t, time_t *out);

#endif
