/*
 * policy/jsonpath.c - JSON paths (where a secret may be injected into a JSON
 * body, and later what a semantic rule reads) and the urlencoded-form
 * reader.  Both see peer-controlled bytes: bounded, no allocation.
 *
 * A path is "$" then steps: .name, ['name'] (with \' and \\ escapes), [N],
 * and in patterns also [*] (any index) and .* (any key).  A concrete path
 * (one location in a parsed body) is written with .name for keys made of
 * letters, digits, '_' and '-' (not starting with a digit or '-'), and
 * ['...'] for any other key, so every key has exactly one spelling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "policy_int.h"

enum step_kind { STEP_KEY = 1, STEP_INDEX, STEP_ANY_INDEX, STEP_ANY_KEY };

struct step {
	enum step_kind kind;
	const char *s;         /* STEP_KEY: the key as written (escapes still in when quoted) */
	size_t len;
	int quoted;
	unsigned long idx;     /* STEP_INDEX */
};

#define INDEX_DIGITS_MAX 9

static int
name_char(char c)
{
	return c != '.' && c != '[' && c != ']' && c != '\'' && c != '\\' && c != '*' && (unsigned char)c > 0x20 &&
	       c != 0x7f;
}

/* The next step at *pp: 1, 0 at the end, -1 when malformed. */
static int
step_next(const char **pp, const char *end, struct step *st)
{
	const char *p = *pp;
	size_t n;

	if (p == end)
		return 0;
	memset(st, 0, sizeof(*st));
	if (*p == '.') {
		p++;
		if (p < end && *p == '*') {
			st->kind = STEP_ANY_KEY;
			*pp = p + 1;
			return *pp == end || **pp == '.' || **pp == '[' ? 1 : -1;
		}
		for (n = 0; p + n < end && name_char(p[n]); n++)
			;
		if (n == 0 || (p + n < end && p[n] != '.' && p[n] != '['))
			return -1;
		st->kind = STEP_KEY;
		st->s = p;
		st->len = n;
		*pp = p + n;
		return 1;
	}
	if (*p != '[' || ++p == end)
		return -1;
	if (*p == '*') {
		if (p + 1 >= end || p[1] != ']')
			return -1;
		st->kind = STEP_ANY_INDEX;
		*pp = p + 2;
		return 1;
	}
	if (*p >= '0' && *p <= '9') {
		for (n = 0; p + n < end && p[n] >= '0' && p[n] <= '9'; n++)
			st->idx = st->idx * 10 + (unsigned long)(p[n] - '0');
		if (n > INDEX_DIGITS_MAX || (n > 1 && *p == '0') || p + n >= end || p[n] != ']')
			return -1;
		st->kind = STEP_INDEX;
		*pp = p + n + 1;
		return 1;
	}
	if (*p != '\'')
		return -1;
	p++;
	for (n = 0; p + n < end && p[n] != '\''; n++) {
		if (p[n] == '\\') {
			if (p + n + 1 >= end || (p[n + 1] != '\'' && p[n + 1] != '\\'))
				return -1;
			n++;
		} else if ((unsigned char)p[n] < 0x20) {
			return -1;
		}
	}
	if (p + n + 1 >= end || p[n + 1] != ']')
		return -1;
	st->kind = STEP_KEY;
	st->s = p;
	st->len = n;
	st->quoted = 1;
	*pp = p + n + 2;
	return 1;
}

/* The i-th byte of a key step's decoded name is consumed from *i (escape-aware); -1 at its end. */
static int
key_byte(const struct step *st, size_t *i)
{
	if (*i >= st->len)
		return -1;
	if (st->quoted && st->s[*i] == '\\')
		(*i)++;
	return (unsigned char)st->s[(*i)++];
}

static int
key_eq(const struct step *a, const struct step *b)
{
	size_t i = 0, j = 0;
	int x, y;

	do {
		x = key_byte(a, &i);
		y = key_byte(b, &j);
		if (x != y)
			return 0;
	} while (x >= 0);
	return 1;
}

int
policy_json_path_ok(const char *p, size_t len)
{
	const char *end = p + len;
	struct step st;
	int r, n = 0;

	if (len < 2 || len > POLICY_JSON_PATH_MAX || p[0] != '$')
		return 0;
	p++;
	while ((r = step_next(&p, end, &st)) == 1)
		n++;
	return r == 0 && n > 0;
}

int
policy_json_path_match(const char *pattern, const char *path)
{
	const char *p = pattern, *pe = pattern + strlen(pattern), *q = path, *qe = path + strlen(path);
	struct step a, b;
	int ra, rb;

	if (*p++ != '$' || *q++ != '$')
		return 0;
	for (;;) {
		ra = step_next(&p, pe, &a);
		rb = step_next(&q, qe, &b);
		if (ra < 0 || rb < 0 || ra != rb)
			return 0;
		if (ra == 0)
			return 1;
		switch (a.kind) {
		case STEP_ANY_KEY:
			if (b.kind != STEP_KEY)
				return 0;
			break;
		case STEP_ANY_INDEX:
			if (b.kind != STEP_INDEX)
				return 0;
			break;
		case STEP_INDEX:
			if (b.kind != STEP_INDEX || a.idx != b.idx)
				return 0;
			break;
		case STEP_KEY:
			if (b.kind != STEP_KEY || !key_eq(&a, &b))
				return 0;
			break;
		}
	}
}

int
policy_jpath_compile(const char *src, size_t len, struct policy_jpath *out)
{
	const char *p = src, *end = src + len;
	struct step st;
	size_t n = 0, i;
	int r;

	memset(out, 0, sizeof(*out));
	if (!policy_json_path_ok(src, len))
		return -1;
	p++;
	while (step_next(&p, end, &st) == 1)
		n++;
	out->steps = xcalloc(n, sizeof(*out->steps));
	p = src + 1;
	while ((r = step_next(&p, end, &st)) == 1) {
		struct policy_jstep *js = &out->steps[out->n++];

		switch (st.kind) {
		case STEP_KEY:
			js->kind = POLICY_JSTEP_KEY;
			js->key = xmalloc(st.len + 1);
			i = 0;
			for (;;) {
				int c = key_byte(&st, &i);

				if (c < 0)
					break;
				js->key[js->klen++] = (char)c;
			}
			js->key[js->klen] = '\0';
			break;
		case STEP_INDEX:
			js->kind = POLICY_JSTEP_INDEX;
			js->idx = st.idx;
			break;
		case STEP_ANY_INDEX:
			js->kind = POLICY_JSTEP_ANY_INDEX;
			break;
		case STEP_ANY_KEY:
			js->kind = POLICY_JSTEP_ANY_KEY;
			break;
		}
	}
	return 0;
}

void
policy_jpath_dispose(struct policy_jpath *jp)
{
	size_t i;

	for (i = 0; i < jp->n; i++)
		free(jp->steps[i].key);
	free(jp->steps);
	memset(jp, 0, sizeof(*jp));
}

static int
plain_key(const char *k, size_t len)
{
	size_t i;

	if (len == 0 || (k[0] >= '0' && k[0] <= '9') || k[0] == '-')
		return 0;
	for (i = 0; i < len; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') ||
		      k[i] == '_' || k[i] == '-'))
			return 0;
	return 1;
}

int
policy_json_path_key(char *buf, size_t cap, size_t *len, const char *key, size_t klen)
{
	size_t n = *len, i;

	if (plain_key(key, klen)) {
		if (n + 1 + klen + 1 > cap)
			goto fail;
		buf[n++] = '.';
		memcpy(buf + n, key, klen);
		n += klen;
	} else {
		if (n + 2 > cap)
			goto fail;
		buf[n++] = '[';
		buf[n++] = '\'';
		for (i = 0; i < klen; i++) {
			unsigned char c = (unsigned char)key[i];
			if (c < 0x20 || c == 0x7f)
				goto fail;  /* no spelling: such a location binds to nothing */
			if (n + 3 > cap)
				goto fail;
			if (c == '\'' || c == '\\')
				buf[n++] = '\\';
			buf[n++] = (char)c;
		}
		if (n + 3 > cap)
			goto fail;
		buf[n++] = '\'';
		buf[n++] = ']';
	}
	buf[n] = '\0';
	*len = n;
	return 0;
fail:
	if (*len < cap)
		buf[*len] = '\0';  /* as it was */
	return -1;
}

int
policy_json_path_index(char *buf, size_t cap, size_t *len, size_t idx)
{
	int w;

	if (idx > 999999999u || *len >= cap)
		return -1;
	w = snprintf(buf + *len, cap - *len, "[%zu]", idx);
	if (w < 0 || (size_t)w >= cap - *len)
		return -1;
	*len += (size_t)w;
	return 0;
}

/* ---- application/x-www-form-urlencoded ---- */

int
policy_form_next(struct policy_form_iter *it, const char **name, size_t *nlen, const char **val, size_t *vlen)
{
	const char *amp, *eq;

	while (it->p < it->end) {
		amp = memchr(it->p, '&', (size_t)(it->end - it->p));
		if (amp == NULL)
			amp = it->end;
		if (amp == it->p) {  /* an empty pair ("a=1&&b=2") */
			it->p++;
			continue;
		}
		eq = memchr(it->p, '=', (size_t)(amp - it->p));
		*name = it->p;
		*nlen = (size_t)((eq != NULL ? eq : amp) - it->p);
		*val = eq != NULL ? eq + 1 : amp;
		*vlen = eq != NULL ? (size_t)(amp - eq - 1) : 0;
		it->p = amp < it->end ? amp + 1 : amp;
		return 1;
	}
	return 0;
}


long
policy_form_decode(const char *in, size_t len, char *out, size_t cap)
{
	size_t i, n = 0;
	int hi, lo;

	for (i = 0; i < len; i++) {
		if (n == cap)
			return -1;
		if (in[i] == '+') {
			out[n++] = ' ';
		} else if (in[i] == '%') {
			if (i + 2 >= len || (hi = sluice_hexval(in[i + 1])) < 0 || (lo = sluice_hexval(in[i + 2])) < 0)
				return -1;
			out[n++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[n++] = in[i];
		}
	}
	return (long)n;
}
