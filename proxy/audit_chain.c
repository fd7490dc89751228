/*
 * proxy/audit_chain.c - the audit chain's arithmetic, no I/O: wrapping a
 * record's members into its line (seq first, prev, then mac last), the
 * line hash and the forward-secure key (the key file's text is the reader's,
 * audit/keys.c).
 *
 * The bytes (docs/audit-schema.md):
 *   line    = {"seq":N,<members>,"prev":"<hex>"[,"mac":"<hex>"]}
 *   prev    = SHA-256 of the previous complete line without its "\n"
 *             (64 '0' for seq 1)
 *   mac     = HMAC-SHA-256(K_N, the line without its mac member), i.e. the
 *             line up to `,"mac":"` followed by "}"
 *   K_{N+1} = SHA-256("sluice-audit-key-v1" || K_N); K_N is wiped once used.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include "common/hex.h"
#include "common/sluice.h"
#include "proxy/audit_int.h"

void
audit_chain_init(struct audit_chain *ch, uint64_t seq, const char *prev_hex, const uint8_t *key)
{
	memset(ch, 0, sizeof(*ch));
	ch->seq = seq;
	if (prev_hex != NULL)
		memcpy(ch->prev, prev_hex, AUDIT_HASH_HEX);
	else
		memset(ch->prev, '0', AUDIT_HASH_HEX);
	ch->prev[AUDIT_HASH_HEX] = '\0';
	if (key != NULL) {
		ch->keyed = 1;
		memcpy(ch->key, key, AUDIT_KEY_LEN);
	}
}

void
audit_chain_wipe(struct audit_chain *ch)
{
	OPENSSL_cleanse(ch->key, sizeof(ch->key));
	ch->keyed = 0;
}

#define PREV_MEMBER ",\"prev\":\""
#define MAC_MEMBER ",\"mac\":\""

long
audit_chain_wrap(struct audit_chain *ch, const char *body, size_t blen, char *out, size_t cap)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char head[40];
	int hn;
	size_t need, n;

	hn = snprintf(head, sizeof(head), "{\"seq\":%" PRIu64 "%s", ch->seq, blen > 0 ? "," : "");
	/* head, members, ,"prev":"<64>", ,"mac":"<64>", }, \n */
	need = (size_t)hn + blen + sizeof(PREV_MEMBER) + AUDIT_HASH_HEX + 1 +
	       (ch->keyed ? sizeof(MAC_MEMBER) + AUDIT_HASH_HEX + 1 : 0) + 2;
	if (need > cap)
		return -1;
	memcpy(out, head, (size_t)hn);
	n = (size_t)hn;
	memcpy(out + n, body, blen);
	n += blen;
	memcpy(out + n, SLUICE_LIT(PREV_MEMBER));
	n += sizeof(PREV_MEMBER) - 1;
	memcpy(out + n, ch->prev, AUDIT_HASH_HEX);
	n += AUDIT_HASH_HEX;
	out[n++] = '"';
	if (ch->keyed) {
		/* the covered bytes: the line so far, closed */
		out[n] = '}';
		if (HMAC(EVP_sha256(), ch->key, AUDIT_KEY_LEN, (const uint8_t *)out, n + 1, md, &mdlen) == NULL ||
		    mdlen != 32)
			return -1;
		memcpy(out + n, SLUICE_LIT(MAC_MEMBER));
		n += sizeof(MAC_MEMBER) - 1;
		hex_encode(out + n, md, 32);
		n += AUDIT_HASH_HEX;
		out[n++] = '"';
		audit_key_evolve(ch->key);
	}
	out[n++] = '}';
	audit_sha256_hex(out, n, ch->prev);
	out[n++] = '\n';
	ch->seq++;
	return (long)n;
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
	static const char pre[] = "{\"seq\":";
	uint64_t v = 0;
	size_t i = sizeof(pre) - 1;

	if (len < i + 2 || memcmp(line, pre, i) != 0)
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
