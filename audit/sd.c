/*
 * audit/sd.c - the STRUCTURED-DATA element of a syslog copy (RFC 5424
 * section 6.3): one SD-ELEMENT "sluice@<enterprise>" whose SD-PARAMs are
 * the line's SHA-256 ("hash": the next record's prev, so a collector can
 * check the chain without the file) and the record's members in the
 * line's order.  A member that is an object is flattened one level
 * ("limit.kind"); an array is written as compact JSON text.
 *
 * PARAM-VALUE escaping is section 6.3.3's: '"', '\' and ']' get a '\'.
 * Control bytes (which the JSON line has only as \u00XX escapes) are
 * written as '?': the JSON message beside the SD is exact, the SD is for
 * indexing.  A PARAM-NAME is 1..32 PRINTUSASCII without '=', ' ', ']' and
 * '"'; a member whose name is not (the writer writes none) is left out.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "writer_int.h"

struct sdbuf {
	char *p;
	size_t cap, len;
	int overflow;
};

static void
put(struct sdbuf *b, const char *s, size_t n)
{
	if (b->overflow || n > b->cap - b->len) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)

static void
put_escaped(struct sdbuf *b, const char *s, size_t n)
{
	size_t i, run = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\' || c == ']' || c < 0x20 || c == 0x7f) {
			put(b, s + run, i - run);
			if (c < 0x20 || c == 0x7f) {
				PUT_LIT(b, "?");
			} else {
				PUT_LIT(b, "\\");
				put(b, s + i, 1);
			}
			run = i + 1;
		}
	}
	put(b, s + run, n - run);
}

int
audit_sd_name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > AUDIT_SD_NAME_MAX)
		return -1;
	for (i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '=' || s[i] == ']' || s[i] == '"')
			return -1;
	return 0;
}

/* " <prefix><name>=\"<value>\"" for one scalar or array; an object one level down when <depth> is 0. */
static void
param(struct sdbuf *b, const char *prefix, const char *name, json_t *v, int depth)
{
	char num[32], full[AUDIT_SD_NAME_MAX + 2];
	const char *k;
	json_t *c;
	char *dump;
	int n;

	n = snprintf(full, sizeof(full), "%s%s", prefix, name);
	if (n < 0 || audit_sd_name_ok(full, (size_t)n) != 0)
		return;
	if (json_is_object(v) && depth == 0) {
		char pre[AUDIT_SD_NAME_MAX + 3];

		memcpy(pre, full, (size_t)n);
		pre[n] = '.';
		pre[n + 1] = '\0';
		json_object_foreach(v, k, c)
			param(b, pre, k, c, 1);
		return;
	}
	if (json_is_null(v))
		return;
	PUT_LIT(b, " ");
	put(b, full, (size_t)n);
	PUT_LIT(b, "=\"");
	if (json_is_string(v)) {
		put_escaped(b, json_string_value(v), json_string_length(v));
	} else if (json_is_integer(v)) {
		n = snprintf(num, sizeof(num), "%" PRId64, (int64_t)json_integer_value(v));
		put(b, num, (size_t)n);
	} else if (json_is_real(v)) {
		n = snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		put(b, num, (size_t)n);
	} else if (json_is_true(v)) {
		PUT_LIT(b, "true");
	} else if (json_is_false(v)) {
		PUT_LIT(b, "false");
	} else if ((dump = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)) != NULL) {
		put_escaped(b, dump, strlen(dump));
		free(dump);
	} else {
		b->overflow = 1;
	}
	PUT_LIT(b, "\"");
}

long
audit_sd_format(const char *sd_id, const struct audit_record *rec, const char *line, size_t len, char *out,
                size_t cap)
{
	struct sdbuf b = {.p = out, .cap = cap};
	char hash[AUDIT_HASH_HEX + 1];
	const char *k;
	json_t *v;

	PUT_LIT(&b, "[");
	put(&b, sd_id, strlen(sd_id));
	audit_sha256_hex(line, len, hash);
	PUT_LIT(&b, " hash=\"");
	put(&b, hash, AUDIT_HASH_HEX);
	PUT_LIT(&b, "\"");
	if (json_is_object(rec->obj)) {
		json_object_foreach(rec->obj, k, v)
			param(&b, "", k, v, 0);
	}
	PUT_LIT(&b, "]");
	return b.overflow ? -1 : (long)b.len;
}
