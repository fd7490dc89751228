/*
 * ca/ca.h - the gateway's certificate authority and its leaf certificates.
 *
 * A CA directory holds ca.pem (the certificate sandboxes trust) and ca.key
 * (mode 0600).  Leaves are minted per host name on first use, all with one
 * shared leaf key generated when the CA is loaded, and kept in a bounded,
 * sharded LRU cache that several worker threads may use at once.
 */
#ifndef SLUICE_CA_CA_H
#define SLUICE_CA_CA_H

#include <stddef.h>
#include <stdio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define CA_CACHE_DEFAULT 10000
#define CA_LEAF_DAYS 30

struct ca;

/*
 * Creates an ECDSA P-256 CA in <dir> (created 0700 if missing): ca.key (0600)
 * and ca.pem, CN "Sluice CA <hostname> <date>", 10 years, basicConstraints
 * critical CA:TRUE pathlen:0, keyUsage critical keyCertSign+cRLSign, SKI.
 * Refuses with SLUICE_EEXIST when either file exists and <force> is 0.
 * Returns 0 or a negative SLUICE_E* with *<err> set to a static reason.
 */
int ca_init_dir(const char *dir, int force, const char **err);

/*
 * Prints to <out>: the SHA-256 fingerprint (colon-separated upper-case hex),
 * subject, notBefore/notAfter, and the absolute path of ca.pem that sandboxes
 * must trust.  Returns 0 or a negative SLUICE_E*.
 */
int ca_show(const char *dir, FILE *out, const char **err);

/*
 * Loads the CA in <dir> and generates the shared leaf key (ECDSA P-256).
 * <cache_size> bounds the leaf cache (0: CA_CACHE_DEFAULT).
 * Returns NULL with *<err> set on failure.
 */
struct ca *ca_load(const char *dir, size_t cache_size, const char **err);
void ca_destroy(struct ca *ca);

/*
 * Returns the leaf certificate for the canonical host name <name> (see
 * common/host.h: a DNS name or an IP literal), minting it on a cache miss.
 * Names that are not canonical DNS names or IP literals are refused before
 * minting (NULL, *<err> set).  Concurrent misses for one name mint once.
 * The caller owns one reference: X509_free() it.  Thread-safe.
 * Leaf: SAN = the name (DNS or IP), subject CN = the name (truncated to 64),
 * SKI and AKI, keyUsage critical digitalSignature, extendedKeyUsage serverAuth,
 * basicConstraints CA:FALSE, random 128-bit serial, notBefore now-1h,
 * notAfter now+CA_LEAF_DAYS but never past the CA's notAfter.
 */
X509 *ca_leaf_get(struct ca *ca, const char *name, const char **err);

/* The shared leaf key (borrowed; lives as long as <ca>). */
EVP_PKEY *ca_leaf_key(const struct ca *ca);

/* The CA certificate (borrowed), to send as the chain after the leaf. */
X509 *ca_cert(const struct ca *ca);

/* Number of leaves currently cached, and the bound. Thread-safe. */
size_t ca_cache_count(struct ca *ca);
size_t ca_cache_capacity(const struct ca *ca);

/* Counters since load: leaves minted, cache hits. Thread-safe. */
void ca_stats(struct ca *ca, unsigned long *minted, unsigned long *hits);

/*
 * Leaf cache lookups since load (for metrics): <hits> served from the cache,
 * <misses> not (each one minted a leaf, or failed to).  Thread-safe (takes
 * each shard's lock in turn).
 */
void ca_cache_lookups(struct ca *ca, unsigned long *hits, unsigned long *misses);

#endif
