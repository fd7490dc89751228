/*
 * policy/cond_json.c - JSON bodies for conditions: a pre-scan that bounds
 * nesting (POLICY_JSON_DEPTH_MAX, before jansson recurses) and notes reals
 * a double cannot hold exactly, then jansson with JSON_REJECT_DUPLICATES
 * (a duplicate key anywhere makes the body unreadable: two parsers could
 * disagree on which value counts) and its UTF-8 validation; and path
 * selection over the parsed tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fold.h"
#include "common/sluice.h"
#include "cond_int.h"

#define REAL_EXP_MAX 290 /* |exponent| (or digits) beyond which a real may leave a double's range */

/* A number token at <s>/<n>: its length; sets *<inexact> when it is a real a double would round. */
static size_t
number_token(const char *s, size_t n, int *inexact)
{
	size_t i = 0, first = 0, last = 0, ndig = 0;
	int real = 0, in_exp = 0, seen = 0;
	long e = 0;

	for (; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9') {
			if (in_exp) {
				if (e < 100000)
					e = e * 10 + (c - '0');
				continue;
			}
			ndig++;
			if (c != '0') {
				if (!seen)
					first = ndig;
				seen = 1;
				last = ndig;
			}
		} else if (c == '.') {
			real = 1;
		} else if (c == 'e' || c == 'E') {
			real = 1;
			in_exp = 1;
		} else if (c == '-' || c == '+') {
			continue;
		} else {
			break;
		}
	}
	if (real && ((seen && last - first + 1 > POLICY_JSON_REAL_DIGITS) || e > REAL_EXP_MAX || ndig > REAL_EXP_MAX))
		*inexact = 1;
	return i;
}

int
policy_json_prescan(const char *s, size_t n, int *inexact)
{
	size_t i = 0;
	int depth = 0;

	*inexact = 0;
	while (i < n) {
		char c = s[i];

		if (c == '"') {
			for (i++; i < n && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			i++;
		} else if (c == '[' || c == '{') {
			if (++depth > POLICY_JSON_DEPTH_MAX)
				return -1;
			i++;
		} else if (c == ']' || c == '}') {
			depth--;
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			i += number_token(s + i, n - i, inexact);
		} else {
			i++;
		}
	}
	return 0;
}

int
policy_json_body(struct policy_ctx *c)
{
	const struct policy_request *r = c->req;
	json_error_t err;

	if (c->json_state != 0)
		return c->json_state;
	c->json_state = -1;
	if (policy_json_prescan(r->body, r->body_len, &c->json_inexact) != 0) {
		c->cant = "the JSON body is nested too deeply (over 64 levels)";
		return -1;
	}
	c->json = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &err);
	if (c->json == NULL) {
		switch (json_error_code(&err)) {
		case json_error_duplicate_key:
			c->cant = "the JSON body has a duplicate key";
			break;
		case json_error_invalid_utf8:
			c->cant = "the JSON body is not valid UTF-8";
			break;
		case json_error_out_of_memory:
			c->cant = "out of memory";
			break;
		default:
			c->cant = "the body is not valid JSON";
			break;
		}
		return -1;
	}
	c->json_state = 1;
	return 1;
}

int
policy_json_key_ambiguous(const json_t *obj, const char *key, size_t klen)
{
	const char *k;
	json_t *v;
	size_t n;

	json_object_keylen_foreach(SLUICE_DECONST(json_t *, obj), k, n, v)
		if ((n != klen || memcmp(k, key, n) != 0) && sluice_fold_eq(k, n, key, klen))
			return 1;
	return 0;
}

/*
 * policy_json_key_ambiguous through <m>'s last answers: rules that read the same key of the same object (500
 * rules on $.kind) scan the object's keys once.
 */
static int
key_ambiguous(struct policy_fold_memo *m, const json_t *obj, const char *key, size_t klen)
{
	size_t i;

	if (m == NULL)
		return policy_json_key_ambiguous(obj, key, klen);
	for (i = 0; i < POLICY_FOLD_MEMO; i++)
		if (m->e[i].obj == obj && m->e[i].klen == klen && memcmp(m->e[i].key, key, klen) == 0)
			return m->e[i].ambiguous;
	i = m->next++ % POLICY_FOLD_MEMO;
	m->e[i].obj = obj;
	m->e[i].key = key;  /* the rule's compiled key: lives as long as the snapshot */
	m->e[i].klen = klen;
	m->e[i].ambiguous = policy_json_key_ambiguous(obj, key, klen);
	return m->e[i].ambiguous;
}

struct sel {
	void (*fn)(void *, const json_t *);
	void *arg;
	unsigned count;
	struct policy_fold_memo *memo;
};

static int
walk(const json_t *j, const struct policy_jpath *p, size_t i, struct sel *s)
{
	const struct policy_jstep *st;
	const char *key;
	json_t *v;
	size_t idx;
	int r;

	if (i == p->n) {
		if (++s->count > POLICY_JSON_VALUES_MAX)
			return -1;
		s->fn(s->arg, j);
		return 0;
	}
	st = &p->steps[i];
	switch (st->kind) {
	case POLICY_JSTEP_KEY:
		if (!json_is_object(j))
			return 0;
		if (key_ambiguous(s->memo, j, st->key, st->klen))
			return -2;
		if ((v = json_object_getn(j, st->key, st->klen)) != NULL)
			return walk(v, p, i + 1, s);
		return 0;
	case POLICY_JSTEP_INDEX:
		if (json_is_array(j) && (v = json_array_get(j, st->idx)) != NULL)
			return walk(v, p, i + 1, s);
		return 0;
	case POLICY_JSTEP_ANY_INDEX:
		if (json_is_array(j))
			json_array_foreach(j, idx, v)
				if ((r = walk(v, p, i + 1, s)) != 0)
					return r;
		return 0;
	case POLICY_JSTEP_ANY_KEY:
		if (json_is_object(j))
			json_object_foreach(SLUICE_DECONST(json_t *, j), key, v)
				if ((r = walk(v, p, i + 1, s)) != 0)
					return r;
		return 0;
	}
	return 0;
}

int
policy_json_select(const json_t *root, const struct policy_jpath *path, void (*fn)(void *, const json_t *), void *arg,
                   struct policy_fold_memo *memo)
{
	struct sel s = {fn, arg, 0, memo};

	return walk(root, path, 0, &s);
}

void
policy_json_val(const json_t *j, int inexact, struct policy_val *v)
{
	int n;

	memset(v, 0, sizeof(*v));
	switch (json_typeof(j)) {
	case JSON_STRING:
		v->kind = V_STR;
		v->s = json_string_value(j);
		v->len = json_string_length(j);
		return;
	case JSON_INTEGER:
		v->kind = V_NUM;
		n = snprintf(v->tmp, sizeof(v->tmp), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		break;
	case JSON_REAL:
		v->kind = V_NUM;
		if (inexact)
			return;
		/* the body's reals have at most 15 significant digits: %.15g gives their decimal value back */
		n = snprintf(v->tmp, sizeof(v->tmp), "%.15g", json_real_value(j));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		v->kind = V_LIT;
		v->s = json_is_true(j) ? "true" : json_is_false(j) ? "false" : "null";
		v->len = strlen(v->s);
		return;
	default:
		v->kind = V_OTHER;
		return;
	}
	if (n <= 0 || (size_t)n >= sizeof(v->tmp))
		return;
	v->s = v->tmp;
	v->len = (size_t)n;
	v->num_ok = policy_dec_parse(v->tmp, v->len, 1, &v->num) == 0;
}
