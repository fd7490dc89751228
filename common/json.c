/* common/json.c - the JSON string escaper and the bounded JSON object writer (json.h) */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "common/hex.h"
#include "common/json.h"
#include "common/sluice.h"

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

size_t
json_escape(char *out, size_t cap, const void *in, size_t n, unsigned flags)
{
	const unsigned char *s = in;
	size_t i, o = 0, run = 0;
	char e[6] = {'\\', 'u', '0', '0', 0, 0};
	size_t el;

	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c >= 0x20 && c != '"' && c != '\\' && (c < 0x7f || !(flags & JSON_ESC_ASCII)) &&
		    !(c == '/' && (flags & JSON_ESC_SLASH)) &&
		    !((c == '<' || c == '>' || c == '&') && (flags & JSON_ESC_HTML)))
			continue;
		if (i > run && o + (i - run) <= cap)
			memcpy(out + o, s + run, i - run);
		o += i - run;
		run = i + 1;
		el = 2;
		e[1] = 0;
		if (c == '"' || c == '\\' || c == '/')
			e[1] = (char)c;
		else if (flags & JSON_ESC_SHORT)
			e[1] = c == '\b' ? 'b' : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 0;
		if (e[1] == 0) {
			e[1] = 'u';
			hex_pair(e + 4, c, 0);
			el = 6;
		}
		if (o + el <= cap)
			memcpy(out + o, e, el);
		o += el;
	}
	if (n > run && o + (n - run) <= cap)
		memcpy(out + o, s + run, n - run);
	return o + (n - run);
}

static void
put_escaped(struct jbuf *jb, const char *s, size_t n)
{
	size_t need;

	put(jb, SLUICE_LIT("\""));
	if (jb->overflow)
		return;
	need = json_escape(jb->buf + jb->len, jb->cap - jb->len, s, n, JSON_ESC_ASCII);
	if (jb->len + need >= jb->cap) {
		jb->overflow = 1;
		return;
	}
	jb->len += need;
	put(jb, SLUICE_LIT("\""));
}

static void
key(struct jbuf *jb, const char *k)
{
	if (jb->nfields++ > 0)
		put(jb, SLUICE_LIT(","));
	put_escaped(jb, k, strlen(k));
	put(jb, SLUICE_LIT(":"));
}

void
jb_init(struct jbuf *jb, char *buf, size_t cap)
{
	jb->buf = buf;
	jb->cap = cap;
	jb->len = 0;
	jb->overflow = 0;
	jb->nfields = 0;
	put(jb, SLUICE_LIT("{"));
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
		put(jb, SLUICE_LIT("true"));
	else
		put(jb, SLUICE_LIT("false"));
}

void
jb_null(struct jbuf *jb, const char *k)
{
	key(jb, k);
	put(jb, SLUICE_LIT("null"));
}

void
jb_pairs(struct jbuf *jb, const char *k, const char *k1, const char *const *v1, const char *k2,
         const char *const *v2, size_t n)
{
	size_t i;

	if (n == 0)
		return;
	key(jb, k);
	put(jb, SLUICE_LIT("["));
	for (i = 0; i < n; i++) {
		if (k1 == NULL) {  /* plain strings */
			if (i > 0)
				put(jb, SLUICE_LIT(","));
			put_escaped(jb, v1[i], strlen(v1[i]));
			continue;
		}
		if (i > 0)
			put(jb, SLUICE_LIT(","));
		put(jb, SLUICE_LIT("{"));
		put_escaped(jb, k1, strlen(k1));
		put(jb, SLUICE_LIT(":"));
		put_escaped(jb, v1[i], strlen(v1[i]));
		if (k2 != NULL) {
			put(jb, SLUICE_LIT(","));
			put_escaped(jb, k2, strlen(k2));
			put(jb, SLUICE_LIT(":"));
			put_escaped(jb, v2[i], strlen(v2[i]));
		}
		put(jb, SLUICE_LIT("}"));
	}
	put(jb, SLUICE_LIT("]"));
}

void
jb_empty_array(struct jbuf *jb, const char *k)
{
	key(jb, k);
	put(jb, SLUICE_LIT("[]"));
}

long
jb_finish(struct jbuf *jb, int newline)
{
	put(jb, SLUICE_LIT("}"));
	if (newline)
		put(jb, SLUICE_LIT("\n"));
	if (jb->overflow) {
		if (jb->cap > 0)
			jb->buf[0] = '\0';  /* never leave a half-written record readable */
		return -1;
	}
	jb->buf[jb->len] = '\0';
	return (long)jb->len;
}
