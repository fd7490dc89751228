/*
 * audit/format.c - the record format's few functions (audit/format.h), one
 * copy for the writer and the reader: kind and verdict names, a line's seq,
 * the line hash, the key evolution and the mac.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include "common/hex.h"
#include "common/sluice.h"
#include "audit/format.h"

static const char *const kind_names[AUDIT_KIND_COUNT] = {
	[AUDIT_KIND_UNKNOWN] = "unknown",
	[AUDIT_KIND_CONNECTION] = "connection",
	[AUDIT_KIND_DENIAL] = "denial",
	[AUDIT_KIND_REQUEST] = "request",
	[AUDIT_KIND_RESPONSE] = "response",
	[AUDIT_KIND_DNS] = "dns",
	[AUDIT_KIND_EXFILTRATION_ATTEMPT] = "exfiltration_attempt",
	[AUDIT_KIND_SCRUB] = "scrub",
	[AUDIT_KIND_CONFIG_RELOAD] = "config_reload",
	[AUDIT_KIND_CHECKPOINT] = "checkpoint",
	[AUDIT_KIND_START] = "start",
	[AUDIT_KIND_STOP] = "stop",
	[AUDIT_KIND_NO_REQUEST] = "no_request",
	[AUDIT_KIND_APPROVAL] = "approval",
	[AUDIT_KIND_REVOCATION] = "revocation",
};

const char *
audit_kind_name(enum audit_kind k)
{
	return (unsigned)k < AUDIT_KIND_COUNT && kind_names[k] != NULL ? kind_names[k] : "unknown";
}

enum audit_kind
audit_kind_parse(const char *s)
{
	unsigned k;

	if (s == NULL)
		return AUDIT_KIND_UNKNOWN;
	for (k = AUDIT_KIND_UNKNOWN + 1; k < AUDIT_KIND_COUNT; k++)
		if (kind_names[k] != NULL && strcmp(s, kind_names[k]) == 0)
			return (enum audit_kind)k;
	return AUDIT_KIND_UNKNOWN;
}

const char *
audit_verdict_name(enum audit_verdict v)
{
	switch (v) {
	case AUDIT_VERDICT_ALLOW:
		return "allow";
	case AUDIT_VERDICT_DENY:
		return "deny";
	case AUDIT_VERDICT_NONE:
		break;
	}
	return NULL;
}

enum audit_verdict
audit_verdict_parse(const char *s)
{
	if (s != NULL && strcmp(s, "allow") == 0)
		return AUDIT_VERDICT_ALLOW;
	if (s != NULL && strcmp(s, "deny") == 0)
		return AUDIT_VERDICT_DENY;
	return AUDIT_VERDICT_NONE;
}

/* *<v> = *<v> * 10 + digit <c>: 0, or -1 on overflow. */
static int
digit(uint64_t *v, char c)
{
	unsigned d = (unsigned)(c - '0');

	if (*v > UINT64_MAX / 10 || (*v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
		return -1;
	*v = *v * 10 + d;
	return 0;
}

int
audit_line_seq(const char *line, size_t len, uint64_t *seq)
{
	uint64_t v = 0;
	size_t i = sizeof(AUDIT_LINE_HEAD) - 1;

	if (len < i + 2 || memcmp(line, AUDIT_LINE_HEAD, i) != 0)
		return -1;
	if (line[i] < '1' || line[i] > '9')
		return -1;
	for (; i < len && line[i] >= '0' && line[i] <= '9'; i++)
		if (digit(&v, line[i]) != 0)
			return -1;
	if (i >= len || line[i] != ',')
		return -1;
	*seq = v;
	return 0;
}

/*
 * SHA-256 and HMAC, fetched once for the process, and one context of each
 * per thread, made at its first use and freed when the thread ends (the
 * writer hashes and macs every line, on a worker or its own thread; verify
 * every record).  OpenSSL 3's one-shot SHA256() and a fresh EVP_MAC_CTX
 * with the digest named at each init fetch the algorithm and allocate its
 * context for every call: about 2.5 of the 3.4 us a line cost (issue 20).
 */
static EVP_MAC *hmac;
static EVP_MD *sha256;
static pthread_once_t alg_once = PTHREAD_ONCE_INIT;
static pthread_key_t tl_key;
static int tl_key_ok;

struct hash_ctx {
	EVP_MD_CTX *md;
	EVP_MAC_CTX *mac;   /* initialised once with digest SHA256: later inits give only the key */
	int mac_ready;
};

static void
hash_ctx_free(void *p)
{
	struct hash_ctx *h = p;

	EVP_MD_CTX_free(h->md);
	EVP_MAC_CTX_free(h->mac);
	free(h);
}

static void
alg_fetch(void)
{
	hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	tl_key_ok = pthread_key_create(&tl_key, hash_ctx_free) == 0;
}

EVP_MAC *
audit_hmac_alg(void)
{
	(void)pthread_once(&alg_once, alg_fetch);
	return hmac;
}

/* This thread's contexts, or NULL (out of memory: the caller falls back to one-shot calls). */
static struct hash_ctx *
hash_ctx(void)
{
	struct hash_ctx *h;

	(void)pthread_once(&alg_once, alg_fetch);
	if (!tl_key_ok || sha256 == NULL)
		return NULL;
	if ((h = pthread_getspecific(tl_key)) != NULL)
		return h;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->md = EVP_MD_CTX_new();
	h->mac = hmac != NULL ? EVP_MAC_CTX_new(hmac) : NULL;
	if (h->md == NULL || pthread_setspecific(tl_key, h) != 0) {
		hash_ctx_free(h);
		return NULL;
	}
	return h;
}

static void
sha256_of(const void *p, size_t n, uint8_t md[SHA256_DIGEST_LENGTH])
{
	struct hash_ctx *h = hash_ctx();
	unsigned int len = 0;

	if (h == NULL || EVP_DigestInit_ex(h->md, sha256, NULL) != 1 || EVP_DigestUpdate(h->md, p, n) != 1 ||
	    EVP_DigestFinal_ex(h->md, md, &len) != 1 || len != SHA256_DIGEST_LENGTH)
		SHA256(p, n, md);
}

void
audit_sha256_hex(const void *p, size_t n, char *hex)
{
	uint8_t md[SHA256_DIGEST_LENGTH];

	sha256_of(p, n, md);
	hex_encode(hex, md, sizeof(md));
}

void
audit_key_evolve(uint8_t key[AUDIT_KEY_BYTES])
{
	uint8_t in[sizeof(AUDIT_KEY_LABEL) - 1 + AUDIT_KEY_BYTES];

	memcpy(in, AUDIT_KEY_LABEL, sizeof(AUDIT_KEY_LABEL) - 1);
	memcpy(in + sizeof(AUDIT_KEY_LABEL) - 1, key, AUDIT_KEY_BYTES);
	sha256_of(in, sizeof(in), key);
	OPENSSL_cleanse(in, sizeof(in));
}

int
audit_mac_compute(const uint8_t key[AUDIT_KEY_BYTES], const char *head, size_t hlen, uint8_t mac[AUDIT_MAC_BYTES])
{
	static char digest[] = "SHA256";
	struct hash_ctx *h = hash_ctx();
	EVP_MAC_CTX *c = NULL, *own = NULL;
	OSSL_PARAM params[2];
	size_t outl = 0;
	int ret = -1;

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (h != NULL && h->mac != NULL) {
		c = h->mac;
		if (EVP_MAC_init(c, key, AUDIT_KEY_BYTES, h->mac_ready ? NULL : params) != 1)
			goto out;
		h->mac_ready = 1;
	} else {
		if (audit_hmac_alg() == NULL || (c = own = EVP_MAC_CTX_new(hmac)) == NULL ||
		    EVP_MAC_init(c, key, AUDIT_KEY_BYTES, params) != 1)
			goto out;
	}
	if (EVP_MAC_update(c, (const unsigned char *)head, hlen) != 1 ||
	    EVP_MAC_update(c, (const unsigned char *)"}", 1) != 1 ||
	    EVP_MAC_final(c, mac, &outl, AUDIT_MAC_BYTES) != 1 || outl != AUDIT_MAC_BYTES)
		goto out;
	ret = 0;
out:
	EVP_MAC_CTX_free(own);
	if (ret != 0) {
		OPENSSL_cleanse(mac, AUDIT_MAC_BYTES);
		if (h != NULL)
			h->mac_ready = 0;   /* initialise it afresh next time */
	}
	return ret;
}
