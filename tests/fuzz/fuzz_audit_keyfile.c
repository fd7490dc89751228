/*
 * fuzz_audit_keyfile.c - the audit writer's text parsers: the key file
 * "sluice-audit-key v1 <seq> <64 hex>" (audit/keys.c, which the writer and
 * keygen share), a record line's leading seq (audit/format.c), and the
 * wrapping of arbitrary members into a line at every capacity.
 * A parsed key file must format back to text that parses to the same key;
 * nothing may read or write out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "audit/chain.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t key[AUDIT_KEY_BYTES];
	struct audit_key k, k2;
	const char *err;
	uint64_t seq;
	char text[AUDIT_KEY_FILE_MAX], *buf, *out;
	struct audit_chain ch, before;
	size_t cap;
	long n;
	int len;

	/* exact-size heap copies: ASan sees any read past the end */
	buf = malloc(size ? size : 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	if (audit_key_parse(buf, size, &k, &err) == 0) {
		len = audit_key_format(&k, text, sizeof(text));
		if (len < 0 || audit_key_parse(text, (size_t)len, &k2, &err) != 0 || k2.seq != k.seq ||
		    memcmp(k.key, k2.key, sizeof(k.key)) != 0)
			abort();
	}
	(void)audit_line_seq(buf, size, &seq);
	/* the input as members, wrapped at a capacity the first byte picks (often too small) */
	cap = size > 0 ? (size_t)data[0] * 4 : 0;
	cap = cap + size / 2;
	out = malloc(cap ? cap : 1);
	if (out != NULL) {
		memset(key, 0x42, sizeof(key));
		audit_chain_init(&ch, 1, NULL, size % 2 ? key : NULL);
		before = ch;
		n = audit_chain_wrap(&ch, buf, size, out, cap);
		if (n < 0 && memcmp(&ch, &before, sizeof(ch)) != 0)
			abort();
		if (n >= 0 && ((size_t)n > cap || out[n - 1] != '\n' || ch.seq != 2))
			abort();
		free(out);
	}
	free(buf);
	return 0;
}
