/*
 * audit/format.h - the audit record format, the one definition that the
 * writer (audit/writer.h) and the reader (audit/audit.h) both include:
 * record kinds and verdicts and their names, the chain's member names and
 * the bytes around them, the bytes a mac covers and the one function that
 * computes it, the line hash, the key evolution and the key file's text.
 * docs/audit-schema.md is the prose of the same bytes.
 *
 *   line    = {"seq":N,<members>,"prev":"<hex>"[,"mac":"<hex>"]}
 *   prev    = SHA-256 of the previous complete line without its "\n"
 *             (AUDIT_HASH_HEX '0's for seq 1: the genesis value)
 *   mac     = HMAC-SHA-256(K_N, the line without its mac member), i.e. the
 *             line up to `,"mac":"` followed by "}" (audit_mac_compute)
 *   K_{N+1} = SHA-256(AUDIT_KEY_LABEL || K_N)
 *   key file: "sluice-audit-key v1 <seq> <64 hex>\n"
 */
#ifndef SLUICE_AUDIT_FORMAT_H
#define SLUICE_AUDIT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/types.h>

/* ---- record kinds and verdicts ---- */

/*
 * The kind of a record: its "type" member.  The text is audit_kind_name()'s,
 * written only in the audit line and read back by audit_kind_parse(); code
 * on both sides compares kinds.
 */
enum audit_kind {
	AUDIT_KIND_UNKNOWN = 0,  /* written as "unknown"; a type the reader does not know */
	AUDIT_KIND_CONNECTION,
	AUDIT_KIND_DENIAL,
	AUDIT_KIND_REQUEST,
	AUDIT_KIND_RESPONSE,
	AUDIT_KIND_DNS,
	AUDIT_KIND_EXFILTRATION_ATTEMPT,
	AUDIT_KIND_SCRUB,
	AUDIT_KIND_CONFIG_RELOAD,
	AUDIT_KIND_CHECKPOINT,
	AUDIT_KIND_START,
	AUDIT_KIND_STOP,
	AUDIT_KIND_NO_REQUEST,
	AUDIT_KIND_APPROVAL,
	AUDIT_KIND_REVOCATION,
	AUDIT_KIND_COUNT
};
/* A record's verdict member: none (not written), "allow" or "deny". */
enum audit_verdict {
	AUDIT_VERDICT_NONE = 0,
	AUDIT_VERDICT_ALLOW,
	AUDIT_VERDICT_DENY,
};
/* "connection", "denial", ...; "unknown" for AUDIT_KIND_UNKNOWN or a value out of range. */
const char *audit_kind_name(enum audit_kind k);
/* "allow", "deny"; NULL for AUDIT_VERDICT_NONE (the member is omitted). */
const char *audit_verdict_name(enum audit_verdict v);
/* The kind named <s> (exactly, case-sensitive); AUDIT_KIND_UNKNOWN for NULL or any other text. */
enum audit_kind audit_kind_parse(const char *s);
/* AUDIT_VERDICT_ALLOW / _DENY for "allow" / "deny"; AUDIT_VERDICT_NONE for NULL or any other text. */
enum audit_verdict audit_verdict_parse(const char *s);

/* ---- the chain's members ---- */

#define AUDIT_FIELD_SEQ "seq"
#define AUDIT_FIELD_PREV "prev"
#define AUDIT_FIELD_MAC "mac"
#define AUDIT_FIELD_TIME "time"
#define AUDIT_FIELD_TYPE "type"
#define AUDIT_FIELD_VERDICT "verdict"
/* The bytes that open every line, before the seq's digits. */
#define AUDIT_LINE_HEAD "{\"" AUDIT_FIELD_SEQ "\":"
/* The prev member up to its hex, and the mac member up to its hex: each is followed by hex and '"'. */
#define AUDIT_PREV_MEMBER ",\"" AUDIT_FIELD_PREV "\":\""
#define AUDIT_MAC_MEMBER ",\"" AUDIT_FIELD_MAC "\":\""
/* A line's tail that is its mac: ,"mac":"<64 hex>"} */
#define AUDIT_MAC_TAIL_LEN (sizeof(AUDIT_MAC_MEMBER) - 1 + AUDIT_HASH_HEX + 2)

#define AUDIT_HASH_HEX 64                 /* lowercase hex of a SHA-256: prev and mac */
#define AUDIT_MAC_BYTES 32                /* HMAC-SHA-256 */
#define AUDIT_GENESIS_DIGIT '0'           /* seq 1's prev: AUDIT_HASH_HEX of these */

/*
 * The seq of record line <line>/<len>, which must start `{"seq":<digits>,`
 * (no leading zero, fits in 64 bits).  0 with *<seq>, or -1.
 */
int audit_line_seq(const char *line, size_t len, uint64_t *seq);

/* Writes the lowercase hex SHA-256 of <p>/<n> and a NUL into <hex> (AUDIT_HASH_HEX + 1 bytes). */
void audit_sha256_hex(const void *p, size_t n, char *hex);

/* ---- the forward-secure mac key ---- */

#define AUDIT_KEY_BYTES 32                /* K_n */
#define AUDIT_KEY_LABEL "sluice-audit-key-v1"
/* K_{n+1} = SHA-256("sluice-audit-key-v1" || K_n), in place. */
void audit_key_evolve(uint8_t key[AUDIT_KEY_BYTES]);
/*
 * The mac of a record line with K_n <key>: HMAC-SHA-256 over <head>/<hlen>
 * (the line up to, without, its `,"mac":"` member) followed by "}", into
 * <mac>.  The writer calls it to add the member, the reader to check it.
 * Any thread.  0, or -1 when OpenSSL fails (<mac> is then wiped).
 */
/* OpenSSL's HMAC, fetched once for the process (thread-safe); NULL if OpenSSL has none. Not to be freed. */

EVP_MAC *audit_hmac_alg(void);
int audit_mac_compute(const uint8_t key[AUDIT_KEY_BYTES], const char *head, size_t hlen,
                      uint8_t mac[AUDIT_MAC_BYTES]);

/* ---- key files ---- */

#define AUDIT_KEY_MAGIC "sluice-audit-key v1 "  /* then <seq> " " <64 hex> "\n" */
#define AUDIT_KEY_FILE_MAX 256  /* bytes of a key file: read at most this, written well under it */

#endif
