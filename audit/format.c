/*
 * audit/format.c - the record format's few functions (audit/format.h), one
 * copy for the writer and the reader: kind and verdict names, a line's seq,
 * the line hash, the key evolution and the mac.
 */
#include <pthread.h>
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

void
audit_sha256_hex(const void *p, size_t n, char *hex)
{
	uint8_t md[SHA256_DIGEST_LENGTH];

	SHA256(p, n, md);
	hex_encode(hex, md, sizeof(md));
}

void
audit_key_evolve(uint8_t key[AUDIT_KEY_BYTES])
{
	uint8_t in[sizeof(AUDIT_KEY_LABEL) - 1 + AUDIT_KEY_BYTES];

	memcpy(in, AUDIT_KEY_LABEL, sizeof(AUDIT_KEY_LABEL) - 1);
	memcpy(in + sizeof(AUDIT_KEY_LABEL) - 1, key, AUDIT_KEY_BYTES);
	SHA256(in, sizeof(in), key);
	OPENSSL_cleanse(in, sizeof(in));
}

/* HMAC, fetched once for the process (verify calls the mac per record, the writer thread per line). */
static EVP_MAC *hmac;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void
hmac_fetch(void)
{
	hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

EVP_MAC *
audit_hmac_alg(void)
{
	(void)pthread_once(&hmac_once, hmac_fetch);
	return hmac;
}

int
audit_mac_compute(const uint8_t key[AUDIT_KEY_BYTES], const char *head, size_t hlen, uint8_t mac[AUDIT_MAC_BYTES])
{
	static char digest[] = "SHA256";
	EVP_MAC_CTX *c = NULL;
	OSSL_PARAM params[2];
	size_t outl = 0;
	int ret = -1;

	if (audit_hmac_alg() == NULL || (c = EVP_MAC_CTX_new(hmac)) == NULL)
		goto out;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(c, key, AUDIT_KEY_BYTES, params) != 1 ||
	    EVP_MAC_update(c, (const unsigned char *)head, hlen) != 1 ||
	    EVP_MAC_update(c, (const unsigned char *)"}", 1) != 1 ||
	    EVP_MAC_final(c, mac, &outl, AUDIT_MAC_BYTES) != 1 || outl != AUDIT_MAC_BYTES)
		goto out;
	ret = 0;
out:
	EVP_MAC_CTX_free(c);
	if (ret != 0)
		OPENSSL_cleanse(mac, AUDIT_MAC_BYTES);
	return ret;
}
