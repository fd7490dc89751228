/*
 * audit/chain.c - the audit chain's arithmetic, no I/O: wrapping a
 * record's members into its line (seq first, prev, then mac last).  The
 * bytes, the line hash, the mac and the forward-secure key are the record
 * format's (audit/format.h, docs/audit-schema.md), shared with the reader.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include "common/hex.h"
#include "common/sluice.h"
#include "writer_int.h"

void
audit_chain_init(struct audit_chain *ch, uint64_t seq, const char *prev_hex, const uint8_t *key)
{
	memset(ch, 0, sizeof(*ch));
	ch->seq = seq;
	if (prev_hex != NULL)
		memcpy(ch->prev, prev_hex, AUDIT_HASH_HEX);
	else
		memset(ch->prev, AUDIT_GENESIS_DIGIT, AUDIT_HASH_HEX);
	ch->prev[AUDIT_HASH_HEX] = '\0';
	if (key != NULL) {
		ch->keyed = 1;
		memcpy(ch->key, key, AUDIT_KEY_BYTES);
	}
}

void
audit_chain_wipe(struct audit_chain *ch)
{
	OPENSSL_cleanse(ch->key, sizeof(ch->key));
	ch->keyed = 0;
}

long
audit_chain_wrap(struct audit_chain *ch, const char *body, size_t blen, char *out, size_t cap)
{
	uint8_t md[AUDIT_MAC_BYTES];
	char head[40];
	int hn;
	size_t need, n;

	hn = snprintf(head, sizeof(head), AUDIT_LINE_HEAD "%" PRIu64 "%s", ch->seq, blen > 0 ? "," : "");
	/* head, members, ,"prev":"<64>", ,"mac":"<64>", }, \n */
	need = (size_t)hn + blen + sizeof(AUDIT_PREV_MEMBER) + AUDIT_HASH_HEX + 1 +
	       (ch->keyed ? sizeof(AUDIT_MAC_MEMBER) + AUDIT_HASH_HEX + 1 : 0) + 2;
	if (need > cap)
		return -1;
	memcpy(out, head, (size_t)hn);
	n = (size_t)hn;
	memcpy(out + n, body, blen);
	n += blen;
	memcpy(out + n, SLUICE_LIT(AUDIT_PREV_MEMBER));
	n += sizeof(AUDIT_PREV_MEMBER) - 1;
	memcpy(out + n, ch->prev, AUDIT_HASH_HEX);
	n += AUDIT_HASH_HEX;
	out[n++] = '"';
	if (ch->keyed) {
		/* the covered bytes: the line so far, closed (the reader checks with the same function) */
		if (audit_mac_compute(ch->key, out, n, md) != 0)
			return -1;
		memcpy(out + n, SLUICE_LIT(AUDIT_MAC_MEMBER));
		n += sizeof(AUDIT_MAC_MEMBER) - 1;
		hex_encode(out + n, md, sizeof(md));
		OPENSSL_cleanse(md, sizeof(md));
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
