/*
 * common/jcs.c - RFC 8785 canonical JSON (jcs.h).
 *
 * Numbers: the shortest digits that read back to the same double are found
 * by asking printf for 1, 2, ... 17 significant digits (glibc rounds
 * exactly) and reading each back with strtod; at a power of two the
 * interval of doubles is lopsided, so the neighbours of the rounded digits
 * are tried too before taking one more digit.  Then the digits are laid out
 * as ECMAScript's Number::toString does (ECMA-262, 7.1.12.1).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jcs.h"
#include "common/json.h"
#include "common/sluice.h"

#define ESC_CHUNK 256 /* string bytes escaped per step */

struct emit {
	jcs_sink_fn sink;
	void *arg;
	size_t left; /* bytes the caller still allows */
};

static int
put(struct emit *e, const char *p, size_t n)
{
	if (n > e->left)
		return SLUICE_ETOOBIG;
	e->left -= n;
	return e->sink(e->arg, p, n);
}

/* <digits>, <k> of them (no trailing zeros), times 10^(<n> - <k>): ECMA-262 Number::toString. */
static int
layout(int neg, const char *digits, int k, int n, char *out)
{
	int o = 0, i;

	if (neg)
		out[o++] = '-';
	if (k <= n && n <= 21) {
		memcpy(out + o, digits, (size_t)k);
		o += k;
		for (i = 0; i < n - k; i++)
			out[o++] = '0';
	} else if (0 < n && n <= 21) {
		memcpy(out + o, digits, (size_t)n);
		o += n;
		out[o++] = '.';
		memcpy(out + o, digits + n, (size_t)(k - n));
		o += k - n;
	} else if (-6 < n && n <= 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (i = 0; i < -n; i++)
			out[o++] = '0';
		memcpy(out + o, digits, (size_t)k);
		o += k;
	} else {
		out[o++] = digits[0];
		if (k > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, (size_t)(k - 1));
			o += k - 1;
		}
		o += snprintf(out + o, (size_t)(JCS_NUMBER_MAX - o), "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
	}
	out[o] = '\0';
	return o;
}

/* 1 if <m> * 10^<q> reads back as <x> (positive); the digits and their exponent then in *<digits>, *<k>, *<n>. */
static int
try_digits(double x, uint64_t m, int q, char *digits, int *k, int *n)
{
	char t[JCS_NUMBER_MAX];
	int len;

	if (m == 0)
		return 0;
	snprintf(t, sizeof(t), "%" PRIu64 "e%d", m, q);
	if (strtod(t, NULL) != x)
		return 0;
	len = snprintf(digits, JCS_NUMBER_MAX, "%" PRIu64, m);
	while (len > 1 && digits[len - 1] == '0') {
		digits[--len] = '\0';
		q++;
	}
	*k = len;
	*n = len + q;
	return 1;
}

/*
 * The correctly rounded <p> significant digits of <x> (positive) as an integer *<m> and the power of ten of
 * its last digit *<q>.
 */
static void
rounded(double x, int p, uint64_t *m, int *q)
{
	char t[JCS_NUMBER_MAX];
	size_t i;

	/* "d.ddde+XX": glibc rounds exactly */
	snprintf(t, sizeof(t), "%.*e", p - 1, x);
	*m = 0;
	for (i = 0; t[i] != 'e' && t[i] != '\0'; i++)
		if (t[i] >= '0' && t[i] <= '9')
			*m = *m * 10 + (uint64_t)(t[i] - '0');
	*q = (t[i] == 'e' ? (int)strtol(t + i + 1, NULL, 10) : 0) - (p - 1);
}

int
jcs_number(double x, char buf[JCS_NUMBER_MAX])
{
	char digits[JCS_NUMBER_MAX];
	int neg = signbit(x) != 0, lo = 1, hi = 17, mid, k = 0, n = 0, q;
	uint64_t m;

	if (!isfinite(x))
		return SLUICE_EINVAL;
	if (x == 0) { /* and -0 */
		memcpy(buf, "0", 2);
		return 1;
	}
	if (neg)
		x = -x;
	/* integers below 2^53 (most numbers in arguments) are their own shortest digits */
	if (x < 9007199254740992.0 && x == floor(x)) {
		try_digits(x, (uint64_t)x, 0, digits, &k, &n);
		return layout(neg, digits, k, n, buf);
	}
	/*
	 * the fewest digits whose correct rounding reads back: more digits only come closer, so a binary search
	 * over 1..17 finds them (17 always do)
	 */
	while (lo < hi) {
		mid = (lo + hi) / 2;
		rounded(x, mid, &m, &q);
		if (try_digits(x, m, q, digits, &k, &n))
			hi = mid;
		else
			lo = mid + 1;
	}
	/* at a power of two the doubles below are twice as dense: one digit fewer may read back off the rounding */
	if (lo > 1) {
		rounded(x, lo - 1, &m, &q);
		if (try_digits(x, m - 1, q, digits, &k, &n) || try_digits(x, m + 1, q, digits, &k, &n))
			return layout(neg, digits, k, n, buf);
	}
	rounded(x, lo, &m, &q);
	if (!try_digits(x, m, q, digits, &k, &n))
		return SLUICE_EINVAL; /* 17 digits always read back: not reached */
	return layout(neg, digits, k, n, buf);
}

/* The next UTF-16 code unit of UTF-8 <s>/<n> at *<i> (a pair: the high half, then *<low> the low one). -1 if bad. */
static long
utf16_next(const unsigned char *s, size_t n, size_t *i, unsigned *low)
{
	unsigned c = s[*i], cp, need, j;

	if (*low != 0) {
		cp = *low;
		*low = 0;
		return cp;
	}
	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		cp = c & 0x07;
	} else {
		return -1;
	}
	for (j = 1; j <= need; j++) {
		if (*i + j >= n || (s[*i + j] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[*i + j] & 0x3f);
	}
	/* overlong forms, surrogates and code points past U+10FFFF are not UTF-8 */
	if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*i += need + 1;
	if (cp < 0x10000)
		return cp;
	cp -= 0x10000;
	*low = 0xdc00 + (cp & 0x3ff);
	return 0xd800 + (cp >> 10);
}

/* 0 if <s>/<n> is UTF-8. */
static int
utf8_check(const char *s, size_t n)
{
	size_t i = 0;
	unsigned low = 0;

	while (i < n || low != 0)
		if (utf16_next((const unsigned char *)s, n, &i, &low) < 0)
			return -1;
	return 0;
}

struct member {
	const char *key;
	size_t len;
	json_t *value;
};

/* Names compared by UTF-16 code units (both checked to be UTF-8 before sorting). */
static int
member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	size_t i = 0, j = 0;
	unsigned lx = 0, ly = 0;

	while ((i < x->len || lx != 0) && (j < y->len || ly != 0)) {
		long cx = utf16_next((const unsigned char *)x->key, x->len, &i, &lx);
		long cy = utf16_next((const unsigned char *)y->key, y->len, &j, &ly);

		if (cx != cy)
			return cx < cy ? -1 : 1;
	}
	if (i < x->len || lx != 0)
		return 1;
	return (j < y->len || ly != 0) ? -1 : 0;
}

static int
emit_string(struct emit *e, const char *s, size_t n)
{
	char buf[JSON_ESCAPED_MAX(ESC_CHUNK)];
	size_t i, k;
	int ret;

	if (utf8_check(s, n) != 0)
		return SLUICE_EINVAL;
	if ((ret = put(e, SLUICE_LIT("\""))) != 0)
		return ret;
	/* an escape depends on its byte alone, so the string may be cut anywhere */
	for (i = 0; i < n; i += k) {
		k = n - i < ESC_CHUNK ? n - i : ESC_CHUNK;
		if ((ret = put(e, buf, json_escape(buf, sizeof(buf), s + i, k, JSON_ESC_SHORT))) != 0)
			return ret;
	}
	return put(e, SLUICE_LIT("\""));
}

static int emit_value(struct emit *e, const json_t *v, int depth);

static int
emit_object(struct emit *e, const json_t *v, int depth)
{
	struct member stack[JCS_SORT_STACK], *m = stack;
	size_t n = json_object_size(v), i = 0, klen;
	const char *key;
	json_t *val;
	int ret = 0;

	if (n > JCS_SORT_STACK) {
		if (n > SIZE_MAX / sizeof(*m) || (m = try_malloc(n * sizeof(*m))) == NULL)
			return SLUICE_ENOMEM;
	}
	/* jansson iterates without changing the object; its API takes it non-const */
	json_object_keylen_foreach(SLUICE_DECONST(json_t *, v), key, klen, val) {
		if (i == n || utf8_check(key, klen) != 0) {
			ret = SLUICE_EINVAL;
			goto out;
		}
		m[i].key = key;
		m[i].len = klen;
		m[i].value = val;
		i++;
	}
	qsort(m, i, sizeof(*m), member_cmp);
	if ((ret = put(e, SLUICE_LIT("{"))) != 0)
		goto out;
	for (n = 0; n < i; n++) {
		if ((n > 0 && (ret = put(e, SLUICE_LIT(","))) != 0) || (ret = emit_string(e, m[n].key, m[n].len)) != 0 ||
		    (ret = put(e, SLUICE_LIT(":"))) != 0 || (ret = emit_value(e, m[n].value, depth + 1)) != 0)
			goto out;
	}
	ret = put(e, SLUICE_LIT("}"));
out:
	if (m != stack)
		free(m);
	return ret;
}

static int
emit_value(struct emit *e, const json_t *v, int depth)
{
	char num[JCS_NUMBER_MAX];
	size_t i;
	int ret, len;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (depth >= JCS_DEPTH_MAX)
			return SLUICE_ETOOBIG;
		return emit_object(e, v, depth);
	case JSON_ARRAY:
		if (depth >= JCS_DEPTH_MAX)
			return SLUICE_ETOOBIG;
		if ((ret = put(e, SLUICE_LIT("["))) != 0)
			return ret;
		for (i = 0; i < json_array_size(v); i++)
			if ((i > 0 && (ret = put(e, SLUICE_LIT(","))) != 0) ||
			    (ret = emit_value(e, json_array_get(v, i), depth + 1)) != 0)
				return ret;
		return put(e, SLUICE_LIT("]"));
	case JSON_STRING:
		return emit_string(e, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		/* as the double it converts to (the I-JSON reading of the text): 2^53 + 1 is written 9007199254740992 */
		len = jcs_number((double)json_integer_value(v), num);
		return len < 0 ? len : put(e, num, (size_t)len);
	case JSON_REAL:
		len = jcs_number(json_real_value(v), num);
		return len < 0 ? len : put(e, num, (size_t)len);
	case JSON_TRUE:
		return put(e, SLUICE_LIT("true"));
	case JSON_FALSE:
		return put(e, SLUICE_LIT("false"));
	case JSON_NULL:
		return put(e, SLUICE_LIT("null"));
	}
	return SLUICE_EINVAL;
}

int
jcs_emit(const json_t *v, size_t max, jcs_sink_fn sink, void *arg)
{
	struct emit e = {sink, arg, max};

	if (v == NULL || sink == NULL)
		return SLUICE_EINVAL;
	return emit_value(&e, v, 0);
}

struct dbuf {
	char *s;
	size_t len, cap;
};

static int
dbuf_sink(void *arg, const char *p, size_t n)
{
	struct dbuf *b = arg;
	char *t;

	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n + 1)
			cap *= 2;
		if ((t = realloc(b->s, cap)) == NULL)
			return SLUICE_ENOMEM;
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int
jcs_dump(const json_t *v, size_t max, char **out, size_t *outlen)
{
	struct dbuf b = {NULL, 0, 0};
	int ret;

	*out = NULL;
	*outlen = 0;
	ret = jcs_emit(v, max, dbuf_sink, &b);
	if (ret == 0 && b.s == NULL)
		ret = dbuf_sink(&b, "", 0);
	if (ret != 0) {
		free(b.s);
		return ret;
	}
	*out = b.s;
	*outlen = b.len;
	return 0;
}

int
jcs_from_text(const char *in, size_t len, size_t max, char **out, size_t *outlen)
{
	json_error_t jerr;
	json_t *v;
	int ret;

	*out = NULL;
	*outlen = 0;
	v = json_loadb(in, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL,
	               &jerr);
	if (v == NULL)
		return json_error_code(&jerr) == json_error_out_of_memory ? SLUICE_ENOMEM : SLUICE_EPARSE;
	ret = jcs_dump(v, max, out, outlen);
	json_decref(v);
	return ret;
}
