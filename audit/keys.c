/* audit/keys.c - line hashes, the evolving mac key, key files, checkpoints files */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include "common/hex.h"
#include "common/jcs.h"
#include "common/sluice.h"
#include "audit/audit.h"


/* Decodes exactly 2*<n> hex digits (either case) from <s>; returns 0 or -1. */
static int
hex_decode(const char *s, uint8_t *out, size_t n)
{
	size_t i;
	int hi, lo;

	for (i = 0; i < n; i++) {
		hi = sluice_hexval((unsigned char)s[2 * i]);
		lo = sluice_hexval((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int
audit_key_parse(const char *buf, size_t len, struct audit_key *out, const char **err)
{
	uint8_t key[AUDIT_KEY_BYTES];
	size_t i = sizeof(AUDIT_KEY_MAGIC) - 1, digits = 0;
	int64_t seq = 0;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len < i || memcmp(buf, AUDIT_KEY_MAGIC, i) != 0) {
		*err = "not a sluice audit key file (expected \"sluice-audit-key v1 <seq> <64 hex>\")";
		return SLUICE_EPARSE;
	}
	for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++, digits++) {
		seq = seq * 10 + (buf[i] - '0');
		if (seq > AUDIT_SEQ_MAX)
			break;
	}
	if (digits == 0 || seq < 1 || seq > AUDIT_SEQ_MAX || i >= len || buf[i] != ' ') {
		*err = "bad seq in the key file";
		return SLUICE_EPARSE;
	}
	i++;
	if (len - i != 2 * AUDIT_KEY_BYTES || hex_decode(buf + i, key, AUDIT_KEY_BYTES) != 0) {
		sluice_wipe(key, sizeof(key));
		*err = "the key in the key file is not 64 hex digits";
		return SLUICE_EPARSE;
	}
	/* <out> changes only on success */
	out->seq = seq;
	memcpy(out->key, key, sizeof(key));
	sluice_wipe(key, sizeof(key));
	return 0;
}

int
audit_key_format(const struct audit_key *k, char *out, size_t cap)
{
	char hex[2 * AUDIT_KEY_BYTES + 1];
	int n;

	hex_encode(hex, k->key, AUDIT_KEY_BYTES);
	n = snprintf(out, cap, "%s%" PRId64 " %s\n", AUDIT_KEY_MAGIC, k->seq, hex);
	sluice_wipe(hex, sizeof(hex));
	if (n < 0 || (size_t)n >= cap) {
		if (cap > 0)
			sluice_wipe(out, cap);
		return -1;
	}
	return n;
}

int
audit_key_load(const char *path, struct audit_key *out, const char **err)
{
	char buf[AUDIT_KEY_FILE_MAX + 1];
	size_t len = 0;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd == -1) {
		*err = strerror(errno);
		return errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
	}
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			*err = strerror(errno);
			close(fd);
			sluice_wipe(buf, sizeof(buf));
			return SLUICE_EIO;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > AUDIT_KEY_FILE_MAX) {
		*err = "key file too long";
		ret = SLUICE_EPARSE;
	} else {
		ret = audit_key_parse(buf, len, out, err);
	}
	sluice_wipe(buf, sizeof(buf));
	return ret;
}

int
audit_key_generate(const char *path, const char **err)
{
	struct audit_key k = {1, {0}};
	char line[AUDIT_KEY_FILE_MAX];
	int fd, n, ret = SLUICE_EIO;
	size_t off = 0;
	ssize_t w;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		*err = strerror(errno);
		return errno == EEXIST ? SLUICE_EEXIST : SLUICE_EIO;
	}
	if (RAND_priv_bytes(k.key, sizeof(k.key)) != 1) {
		*err = "RAND_priv_bytes failed";
		goto out;
	}
	n = audit_key_format(&k, line, sizeof(line));
	if (n < 0) {
		*err = "internal: key line too long";
		goto out;
	}
	while (off < (size_t)n) {
		w = write(fd, line + off, (size_t)n - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1) {
			*err = strerror(errno);
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) == -1) {
		*err = strerror(errno);
		goto out;
	}
	ret = 0;
out:
	sluice_wipe(k.key, sizeof(k.key));
	sluice_wipe(line, sizeof(line));
	if (close(fd) == -1 && ret == 0) {
		*err = strerror(errno);
		ret = SLUICE_EIO;
	}
	if (ret != 0)
		(void)unlink(path);
	return ret;
}

int
audit_mac_check(const struct audit_key *key, const char *line, size_t len)
{
	uint8_t mac[AUDIT_MAC_BYTES], want[AUDIT_MAC_BYTES];
	const char *hex;
	size_t head, i;
	int ret;

	if (len < AUDIT_MAC_TAIL_LEN + 1)
		return -1;
	head = len - AUDIT_MAC_TAIL_LEN;
	hex = line + head + sizeof(AUDIT_MAC_MEMBER) - 1;
	if (memcmp(line + head, AUDIT_MAC_MEMBER, sizeof(AUDIT_MAC_MEMBER) - 1) != 0 || line[len - 2] != '"' ||
	    line[len - 1] != '}')
		return -1;
	if (hex_decode(hex, want, sizeof(want)) != 0)
		return -1;
	/* the writer writes lowercase hex: an uppercase digit is an edit too */
	for (i = 0; i < AUDIT_HASH_HEX; i++)
		if (hex[i] >= 'A' && hex[i] <= 'F')
			return 1;
	if (audit_mac_compute(key->key, line, head, mac) != 0)
		return -1;
	ret = CRYPTO_memcmp(mac, want, sizeof(mac)) == 0 ? 0 : 1;
	OPENSSL_cleanse(mac, sizeof(mac));
	return ret;
}

/* ---- the fingerprint of MCP arguments ---- */

static int
mac_sink(void *arg, const char *p, size_t n)
{
	return EVP_MAC_update(arg, (const unsigned char *)p, n) == 1 ? 0 : SLUICE_ENOMEM;
}

int
audit_args_hmac(const uint8_t key[AUDIT_KEY_BYTES], const json_t *arguments, char hex[AUDIT_HASH_HEX + 1])
{
	uint8_t sub[SHA256_DIGEST_LENGTH], mac[SHA256_DIGEST_LENGTH];
	EVP_MAC *m = audit_hmac_alg();
	EVP_MAC_CTX *c = NULL;
	OSSL_PARAM params[2];
	json_t *none = NULL;
	size_t outl = 0;
	int ret = SLUICE_ENOMEM;

	hex[0] = '\0';
	if (m == NULL)
		return SLUICE_ENOMEM;
	if (arguments == NULL && (arguments = none = json_object()) == NULL)
		return SLUICE_ENOMEM;
	params[0] = OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	/*
	 * K_args = HMAC(K_seq, label): a key of its own, so that no arguments can
	 * be made whose fingerprint is the mac of a forged record line (both are
	 * JSON objects: "{...")
	 */
	if ((c = EVP_MAC_CTX_new(m)) == NULL || EVP_MAC_init(c, key, AUDIT_KEY_BYTES, params) != 1 ||
	    EVP_MAC_update(c, (const unsigned char *)AUDIT_ARGS_LABEL, sizeof(AUDIT_ARGS_LABEL) - 1) != 1 ||
	    EVP_MAC_final(c, sub, &outl, sizeof(sub)) != 1 || outl != sizeof(sub))
		goto out;
	if (EVP_MAC_init(c, sub, sizeof(sub), params) != 1)
		goto out;
	if ((ret = jcs_emit(arguments, AUDIT_ARGS_MAX, mac_sink, c)) != 0)
		goto out;
	ret = SLUICE_ENOMEM;
	if (EVP_MAC_final(c, mac, &outl, sizeof(mac)) != 1 || outl != sizeof(mac))
		goto out;
	hex_encode(hex, mac, sizeof(mac));
	ret = 0;
out:
	EVP_MAC_CTX_free(c);
	OPENSSL_cleanse(sub, sizeof(sub));
	OPENSSL_cleanse(mac, sizeof(mac));
	json_decref(none);
	return ret;
}

/* ---- checkpoints ---- */

/* Parses "seq=<N> hash=<64 hex>" at <p> (up to <end>); returns 0 and fills <c>, or -1. */
static int
checkpoint_at(const char *p, const char *end, struct audit_checkpoint *c)
{
	int64_t seq = 0;
	size_t digits = 0, i;

	p += 4;  /* "seq=" */
	while (p < end && *p >= '0' && *p <= '9') {
		seq = seq * 10 + (*p++ - '0');
		if (++digits > 16)
			return -1;
	}
	if (digits == 0 || seq < 1 || seq > AUDIT_SEQ_MAX)
		return -1;
	if ((size_t)(end - p) < 6 + AUDIT_HASH_HEX || memcmp(p, " hash=", 6) != 0)
		return -1;
	p += 6;
	for (i = 0; i < AUDIT_HASH_HEX; i++) {
		if (sluice_hexval((unsigned char)p[i]) < 0)
			return -1;
		c->hash[i] = (char)(p[i] >= 'A' && p[i] <= 'F' ? p[i] - 'A' + 'a' : p[i]);
	}
	/* exactly 64 digits: a longer run is not a SHA-256 */
	if (p + AUDIT_HASH_HEX < end && sluice_hexval((unsigned char)p[AUDIT_HASH_HEX]) >= 0)
		return -1;
	c->hash[AUDIT_HASH_HEX] = '\0';
	c->seq = seq;
	return 0;
}

long
audit_checkpoints_parse(struct audit_checkpoints *cp, const char *buf, size_t len, uint64_t first_lineno)
{
	const char *p = buf, *end = buf + len, *eol, *s;
	uint64_t lineno = first_lineno;
	struct audit_checkpoint c;
	long added = 0;

	for (; p < end; p = eol + 1, lineno++) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		if (eol - p > AUDIT_READ_LINE_MAX)
			continue;
		for (s = p; s + 4 <= eol; s++) {
			s = memmem(s, (size_t)(eol - s), "seq=", 4);
			if (s == NULL)
				break;
			if (s != p && s[-1] != ' ')
				continue;
			if (checkpoint_at(s, eol, &c) != 0)
				continue;
			if (cp->n >= AUDIT_CHECKPOINTS_MAX)
				return SLUICE_ETOOBIG;
			if (cp->n == cp->cap) {
				cp->cap = cp->cap ? cp->cap * 2 : 64;
				cp->v = xrealloc(cp->v, cp->cap * sizeof(*cp->v));
			}
			c.lineno = lineno;
			cp->v[cp->n++] = c;
			added++;
			break;
		}
		if (eol == end)
			break;
	}
	return added;
}

static int
cmp_checkpoint(const void *a, const void *b)
{
	const struct audit_checkpoint *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

void
audit_checkpoints_sort(struct audit_checkpoints *cp)
{
	if (cp->n > 1)
		qsort(cp->v, cp->n, sizeof(*cp->v), cmp_checkpoint);
}

int
audit_checkpoints_load(struct audit_checkpoints *cp, const char *path, const char **err)
{
	struct audit_reader r;
	const char *line;
	size_t len;
	long k;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd == -1) {
		*err = strerror(errno);
		return errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
	}
	free(cp->path);
	cp->path = xstrdup(path);
	audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
	for (;;) {
		rc = audit_reader_next(&r, &line, &len);
		if (rc == SLUICE_ETOOBIG)
			continue;  /* not a checkpoint line */
		if (rc < 0) {
			*err = strerror(errno);
			break;
		}
		if (rc == 0) {
			/* a last line without "\n" still counts */
			if (audit_reader_pending(&r) > 0) {
				k = audit_checkpoints_parse(cp, r.buf + r.start, r.end - r.start, r.lineno + 1);
				if (k < 0) {
					rc = (int)k;
					*err = "too many checkpoints";
					break;
				}
			}
			break;
		}
		k = audit_checkpoints_parse(cp, line, len, r.lineno);
		if (k < 0) {
			rc = (int)k;
			*err = "too many checkpoints";
			break;
		}
	}
	audit_reader_dispose(&r);
	close(fd);
	if (rc < 0)
		return rc;
	audit_checkpoints_sort(cp);
	return 0;
}

void
audit_checkpoints_dispose(struct audit_checkpoints *cp)
{
	free(cp->v);
	free(cp->path);
	memset(cp, 0, sizeof(*cp));
}
