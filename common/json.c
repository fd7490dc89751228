/* common/json.c - bounded JSON object writer with full escaping */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "common/json.h"

static void
put(struct jbuf *jb, const char *s, size_t n)
{
	if (jb->overflow || jb->len + n >= jb->cap) {
		jb->overflow = 1;
		return;
	}
	memcpy(jb->buf + jb->len, s, n);
	jb->len += n;
}

static void
put_escaped(struct jbuf *jb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6] = {'\\', 'u', '0', '0', 0, 0};
	size_t i, run = 0;

	put(jb, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			continue;
		put(jb, s + run, i - run);
		run = i + 1;
		if (c == '"') {
			put(jb, "\\\"", 2);
		} else if (c == '\\') {
			put(jb, "\\\\", 2);
		} else {
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(jb, esc, 6);
		}
	}
	put(jb, s + run, n - run);
	put(jb, "\"", 1);
}

static void
key(struct jbuf *jb, const char *k)
{
	if (jb->nfields++ > 0)
		put(jb, ",", 1);
	put_escaped(jb, k, strlen(k));
	put(jb, ":", 1);
}

void
jb_init(struct jbuf *jb, char *buf, size_t cap)
{
	jb->buf = buf;
	jb->cap = cap;
	jb->len = 0;
	jb->overflow = 0;
	jb->nfields = 0;
	put(jb, "{", 1);
}

void
jb_strn(struct jbuf *jb, const char *k, const char *val, size_t n)
{
	if (val == NULL)
		return;
	key(jb, k);
	put_escaped(jb, val, n);
}

void
jb_str(struct jbuf *jb, const char *k, const char *val)
{
	if (val == NULL)
		return;
	jb_strn(jb, k, val, strlen(val));
}

void
jb_int(struct jbuf *jb, const char *k, int64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRId64, v);

	key(jb, k);
	put(jb, num, (size_t)n);
}

void
jb_bool(struct jbuf *jb, const char *k, int v)
{
	key(jb, k);
	if (v)
		put(jb, "true", 4);
	else
		put(jb, "false", 5);
}

void
jb_null(struct jbuf *jb, const char *k)
{
	key(jb, k);
	put(jb, "null", 4);
}

void
jb_pairs(struct jbuf *jb, const char *k, const char *k1, const char *const *v1, const char *k2,
         const char *const *v2, size_t n)
{
	size_t i;

	if (n == 0)
		return;
	key(jb, k);
	put(jb, "[", 1);
	for (i = 0; i < n; i++) {
		if (k1 == NULL) {  /* plain strings */
			if (i > 0)
				put(jb, ",", 1);
			put_escaped(jb, v1[i], strlen(v1[i]));
			continue;
		}
		put(jb, i > 0 ? ",{" : "{", i > 0 ? 2 : 1);
		put_escaped(jb, k1, strlen(k1));
		put(jb, ":", 1);
		put_escaped(jb, v1[i], strlen(v1[i]));
		if (k2 != NULL) {
			put(jb, ",", 1);
			put_escaped(jb, k2, strlen(k2));
			put(jb, ":", 1);
			put_escaped(jb, v2[i], strlen(v2[i]));
		}
		put(jb, "}", 1);
	}
	put(jb, "]", 1);
}

long
jb_finish(struct jbuf *jb, int newline)
{
	put(jb, "}", 1);
	if (newline)
		put(jb, "\n", 1);
	if (jb->overflow) {
		if (jb->cap > 0)
			jb->buf[0] = '\0';  /* never leave a half-written record readable */
		return -1;
	}
	jb->buf[jb->len] = '\0';
	return (long)jb->len;
}
