/*
 * policy/cond_eval.c - conditions on the query, headers, JSON and form
 * fields of one request, with three-valued results.
 *
 * A condition sees every value at its place: every occurrence of a query
 * parameter, header or form field, every location a JSON path selects
 * ([*] and .* select many).  An allow rule needs at least one value and
 * every value to pass; a deny or hold rule needs one value to pass.  What
 * cannot be judged (a body that does not parse, a number that cannot be
 * compared exactly, a regex over its limits) is TV_U, which never makes an
 * allow rule match and always lets a deny or hold rule match.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/sluice.h"
#include "cond_int.h"

int
policy_tv_and(int a, int b)
{
	if (a == TV_F || b == TV_F)
		return TV_F;
	return a == TV_U || b == TV_U ? TV_U : TV_T;
}

int
policy_tv_or(int a, int b)
{
	if (a == TV_T || b == TV_T)
		return TV_T;
	return a == TV_U || b == TV_U ? TV_U : TV_F;
}

static int
media_is(const char *s, size_t n, const char *lit)
{
	return sluice_iov_ieq(s, n, lit);
}

/* The content type of a value: the media type before ';', trimmed, case-insensitive. */
static int
ctype_of(const char *s, size_t n)
{
	const char *semi = memchr(s, ';', n);

	if (semi != NULL)
		n = (size_t)(semi - s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n > 0 && (s[0] == ' ' || s[0] == '\t')) {
		s++;
		n--;
	}
	if (media_is(s, n, "application/json") || (n > 5 && sluice_iov_ieq(s + n - 5, 5, "+json")))
		return CT_JSON;
	if (media_is(s, n, "application/x-www-form-urlencoded"))
		return CT_FORM;
	if (media_is(s, n, "application/x-git-receive-pack-request"))
		return CT_GIT;
	return CT_OTHER;
}

static void
trim(const char **s, size_t *n)
{
	while (*n > 0 && ((*s)[0] == ' ' || (*s)[0] == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

void
policy_ctx_init(struct policy_ctx *c, const struct policy *p, const struct policy_request *req)
{
	size_t i, nct = 0;

	memset(c, 0, sizeof(*c));
	c->p = p;
	c->req = req;
	if (req->content_type != NULL)
		c->ctype = ctype_of(req->content_type, req->content_type_len);
	for (i = 0; i < req->nheaders; i++) {
		const struct policy_header *h = &req->headers[i];
		const char *v = h->value;
		size_t vn = h->value_len;

		trim(&v, &vn);
		if (sluice_iov_ieq(h->name, h->name_len, "content-encoding") && !sluice_iov_ieq(v, vn, "identity"))
			c->encoded = 1;
		if (req->content_type == NULL && sluice_iov_ieq(h->name, h->name_len, "content-type")) {
			/* two Content-Type headers: no one can say which the upstream reads */
			c->ctype = nct++ == 0 ? ctype_of(v, vn) : CT_OTHER;
		}
	}
}

void
policy_ctx_dispose(struct policy_ctx *c)
{
	if (c->json != NULL)
		json_decref(c->json);
	free(c->gql);
	free(c->git);
	free(c->buf);
	policy_mcp_body_dispose(&c->mcpb);
	c->json = NULL;
	c->gql = NULL;
	c->git = NULL;
	c->buf = NULL;
}

void
policy_ctx_why(struct policy_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why == NULL || c->why_set)
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, WHY_MAX, fmt, ap);
	va_end(ap);
	c->why_set = 1;
}

/* ---- values ---- */

static int
text_eq(const char *a, size_t an, const char *b, size_t bn)
{
	return an == bn && memcmp(a, b, an) == 0;
}

/* The number a value holds: 1 (*out set), or 0 when it holds none that can be compared. */
static int
val_num(const struct policy_val *v, struct policy_dec *out)
{
	if (v->kind == V_NUM) {
		if (!v->num_ok)
			return 0;
		*out = v->num;
		return 1;
	}
	if (v->kind == V_STR)
		return policy_dec_parse(v->s, v->len, 0, out) == 0;
	return 0;
}

static int
lit_match(const struct policy_lit *lit, const struct policy_val *v)
{
	struct policy_dec d;

	switch (v->kind) {
	case V_STR:
		/* "05000" is 5000 to an upstream that reads numbers: compare as numbers when the literal is one */
		if (lit->is_num && policy_dec_parse(v->s, v->len, 0, &d) == 0)
			return policy_dec_cmp(&d, &lit->num) == 0 ? TV_T : TV_F;
		return text_eq(v->s, v->len, lit->s, lit->len) ? TV_T : TV_F;
	case V_NUM:
		if (!v->num_ok)
			return TV_U;
		if (lit->is_num)
			return policy_dec_cmp(&v->num, &lit->num) == 0 ? TV_T : TV_F;
		if (policy_dec_parse(lit->s, lit->len, 1, &d) == 0)
			return policy_dec_cmp(&v->num, &d) == 0 ? TV_T : TV_F;
		return TV_F;
	case V_LIT:
		return text_eq(v->s, v->len, lit->s, lit->len) ? TV_T : TV_F;
	default:
		return TV_U;
	}
}

static int
lits_match(const struct policy_lit *lits, size_t n, const struct policy_val *v)
{
	int r = TV_F;
	size_t i;

	for (i = 0; i < n && r != TV_T; i++)
		r = policy_tv_or(r, lit_match(&lits[i], v));
	return r;
}

int
policy_test_value(struct policy_ctx *c, const struct policy_test *t, const struct policy_val *v)
{
	struct policy_dec d;
	int r = TV_T, x;

	if (t->ops & POLICY_OP_EQ)
		r = policy_tv_and(r, lit_match(&t->eq, v));
	if ((t->ops & POLICY_OP_IN) && r != TV_F)
		r = policy_tv_and(r, lits_match(t->in, t->nin, v));
	if ((t->ops & POLICY_OP_NOT_IN) && r != TV_F) {
		x = lits_match(t->not_in, t->nnot_in, v);
		r = policy_tv_and(r, x == TV_U ? TV_U : x == TV_T ? TV_F : TV_T);
	}
	if ((t->ops & POLICY_OP_REGEX) && r != TV_F) {
		if (v->kind == V_STR || v->kind == V_LIT || (v->kind == V_NUM && v->s != NULL)) {
			x = policy_regex_match(c->p, t->re, v->s, v->len);
			r = policy_tv_and(r, x < 0 ? TV_U : x ? TV_T : TV_F);
		} else {
			r = TV_U;
		}
	}
	if ((t->ops & (POLICY_OP_MIN | POLICY_OP_MAX)) && r != TV_F) {
		if (!val_num(v, &d))
			return TV_U;
		if ((t->ops & POLICY_OP_MIN) && policy_dec_cmp(&d, &t->min) < 0)
			return TV_F;
		if ((t->ops & POLICY_OP_MAX) && policy_dec_cmp(&d, &t->max) > 0)
			return TV_F;
	}
	return r;
}

static size_t
append(char *buf, size_t cap, size_t o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static size_t
append(char *buf, size_t cap, size_t o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o >= cap)
		return o;
	va_start(ap, fmt);
	n = vsnprintf(buf + o, cap - o, fmt, ap);
	va_end(ap);
	return n < 0 ? o : o + (size_t)n;
}

static size_t
lits_describe(char *buf, size_t cap, size_t o, const struct policy_lit *v, size_t n)
{
	size_t i;

	o = append(buf, cap, o, "[");
	for (i = 0; i < n && i < 8; i++)
		o = append(buf, cap, o, "%s%.40s", i ? ", " : "", v[i].s);
	return append(buf, cap, o, "%s]", i < n ? ", ..." : "");
}

void
policy_test_describe(const struct policy_test *t, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	if (t->ops & POLICY_OP_EQ)
		o = append(buf, cap, o, "%seq %.60s", o ? ", " : "", t->eq.s);
	if (t->ops & POLICY_OP_IN)
		o = lits_describe(buf, cap, append(buf, cap, o, "%sin ", o ? ", " : ""), t->in, t->nin);
	if (t->ops & POLICY_OP_NOT_IN)
		o = lits_describe(buf, cap, append(buf, cap, o, "%snot_in ", o ? ", " : ""), t->not_in, t->nnot_in);
	if (t->ops & POLICY_OP_REGEX)
		o = append(buf, cap, o, "%sregex %.60s", o ? ", " : "", t->re_src);
	if (t->ops & POLICY_OP_MIN)
		o = append(buf, cap, o, "%smin %s", o ? ", " : "", t->min_src);
	if (t->ops & POLICY_OP_MAX)
		o = append(buf, cap, o, "%smax %s", o ? ", " : "", t->max_src);
	if (t->ops & POLICY_OP_EXISTS)
		o = append(buf, cap, o, "%sexists", o ? ", " : "");
	if (t->ops & POLICY_OP_ABSENT)
		o = append(buf, cap, o, "%sabsent", o ? ", " : "");
}

/* A value as text for people: quoted strings with \xNN escapes, at most <cap> - 1 bytes. */
static void
val_text(const struct policy_val *v, char *out, size_t cap)
{
	size_t i, o = 0;

	if (v->kind == V_OTHER || (v->kind == V_NUM && v->s == NULL)) {
		snprintf(out, cap, "%s", v->kind == V_OTHER ? "(an object or array)" : "(a number too precise to compare)");
		return;
	}
	if (v->kind == V_STR)
		out[o++] = '"';
	for (i = 0; i < v->len && o + 8 < cap; i++) {
		unsigned char ch = (unsigned char)v->s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
			out[o++] = (char)ch;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			hex_pair(out + o, ch, 0);
			o += 2;
		}
	}
	if (i < v->len) {
		memcpy(out + o, SLUICE_LIT("..."));
		o += 3;
	}
	if (v->kind == V_STR)
		out[o++] = '"';
	out[o] = '\0';
}

void
policy_ctx_capture(struct policy_ctx *c, const char *place, const char *name, const struct policy_val *v)
{
	struct policy_decision *d = c->cap;
	char val[POLICY_FIELD_VALUE_MAX + 8];
	size_t need;
	int n;

	if (d == NULL || d->nfields >= POLICY_FIELDS_MAX)
		return;
	if (v->kind == V_STR || v->kind == V_LIT || (v->kind == V_NUM && v->s != NULL))
		snprintf(val, sizeof(val), "%.*s%s", (int)(v->len > POLICY_FIELD_VALUE_MAX ? POLICY_FIELD_VALUE_MAX : v->len),
		         v->s, v->len > POLICY_FIELD_VALUE_MAX ? "..." : "");
	else
		val_text(v, val, sizeof(val));
	need = strlen(place) + 1 + strlen(name) + 1 + strlen(val) + 1;
	if (c->captext + need > sizeof(d->_text))
		return;
	n = snprintf(d->_text + c->captext, need, "%s%s%s", place, name[0] ? ":" : "", name);
	d->fields[d->nfields].place = d->_text + c->captext;
	c->captext += (size_t)n + 1;
	n = snprintf(d->_text + c->captext, sizeof(d->_text) - c->captext, "%s", val);
	d->fields[d->nfields].value = d->_text + c->captext;
	c->captext += (size_t)n + 1;
	d->nfields++;
}

/* ---- quantified conditions ---- */

static const char *const place_names[] = {"", "query", "header", "json", "form", "mcp argument"};

/* A budget's running sum. */
struct sum {
	int ok;
	unsigned n;
	int64_t total;
};

struct acc {
	struct policy_ctx *c;
	struct sum *sum;           /* set: values are summed, not tested */
	const struct policy_test *t;
	const char *place, *name;
	int all;
	unsigned n;
	int res;
	int have_note;
	char note[120];
};

static void
sum_add(struct sum *s, const struct policy_val *v)
{
	struct policy_dec d;
	int64_t x;

	s->n++;
	if (!s->ok)
		return;
	if (!val_num(v, &d) || policy_dec_amount(&d, &x) != 0 || x > POLICY_AMOUNT_MAX - s->total) {
		s->ok = 0;
		return;
	}
	s->total += x;
}

static void
acc_add(struct acc *a, const struct policy_val *v)
{
	int tv;

	if (a->sum != NULL) {
		sum_add(a->sum, v);
		return;
	}
	a->n++;
	if (a->c->cap != NULL)
		policy_ctx_capture(a->c, a->place, a->name, v);
	if (!(a->t->ops & POLICY_OP_VALUE))
		return;
	tv = policy_test_value(a->c, a->t, v);
	a->res = a->all ? policy_tv_and(a->res, tv) : policy_tv_or(a->res, tv);
	if (a->c->why != NULL && !a->have_note && (a->all ? tv != TV_T : tv == TV_U)) {
		val_text(v, a->note, sizeof(a->note));
		a->have_note = tv == TV_U ? 2 : 1;
	}
}

static void
acc_json(void *arg, const json_t *j)
{
	struct acc *a = arg;
	struct policy_val v;

	policy_json_val(j, a->c->json_inexact, &v);
	acc_add(a, &v);
}

static int
acc_end(struct acc *a)
{
	const struct policy_test *t = a->t;
	const char *pl = a->place, *nm = a->name;
	char desc[160];
	int r = TV_T;

	if (t->ops & POLICY_OP_EXISTS)
		r = a->n > 0 ? TV_T : TV_F;
	if (t->ops & POLICY_OP_ABSENT)
		r = a->n == 0 ? TV_T : TV_F;
	if (t->ops & POLICY_OP_VALUE)
		r = policy_tv_and(r, a->n == 0 ? TV_F : a->res);
	if (a->c->why != NULL && r != TV_T) {
		policy_test_describe(t, desc, sizeof(desc));
		if (a->n == 0)
			policy_ctx_why(a->c, "%s %s is absent (wants %s)", pl, nm, desc);
		else if (t->ops & POLICY_OP_ABSENT)
			policy_ctx_why(a->c, "%s %s is present (wants absent)", pl, nm);
		else if (a->have_note == 2)
			policy_ctx_why(a->c, "%s %s: cannot judge %s against %s", pl, nm, a->note, desc);
		else if (a->have_note && a->all)
			policy_ctx_why(a->c, "%s %s: %s fails %s", pl, nm, a->note, desc);
		else
			policy_ctx_why(a->c, "%s %s: no value passes %s", pl, nm, desc);
	}
	return r;
}

static int
ensure_buf(struct policy_ctx *c, size_t n)
{
	char *b;

	if (c->bufcap >= n)
		return 0;
	b = try_malloc(n);
	if (b == NULL)
		return -1;
	free(c->buf);
	c->buf = b;
	c->bufcap = n;
	return 0;
}

/*
 * Feeds <a> every value of field <cond->name> in the urlencoded <s>/<n>:
 * 0, or -1 (c->cant set) when a name or a matching value does not decode.
 */
static int
form_values(struct policy_ctx *c, const struct policy_cond *cond, const char *s, size_t n, struct acc *a)
{
	struct policy_form_iter it = {s, s + n};
	const char *name, *value;
	size_t nlen, vlen;
	long dn, dv;

	if (ensure_buf(c, 2 * n + 2) != 0) {
		c->cant = "out of memory";
		return -1;
	}
	while (policy_form_next(&it, &name, &nlen, &value, &vlen)) {
		dn = policy_form_decode(name, nlen, c->buf, n + 1);
		if (dn < 0) {
			c->cant = "bad percent-encoding";
			return -1;
		}
		if (!text_eq(c->buf, (size_t)dn, cond->name, cond->name_len))
			continue;
		dv = policy_form_decode(value, vlen, c->buf + n + 1, n + 1);
		if (dv < 0) {
			c->cant = "bad percent-encoding";
			return -1;
		}
		{
			struct policy_val v = {.kind = V_STR, .s = c->buf + n + 1, .len = (size_t)dv};

			acc_add(a, &v);
		}
	}
	return 0;
}

int
policy_ctx_body_readable(struct policy_ctx *c, int ct)
{
	const struct policy_request *r = c->req;

	if (r->body == NULL || (!r->body_complete && ct != CT_GIT)) {
		c->cant = "the body was not held";
		return 0;
	}
	if (r->body_len == 0)
		return 1;
	if (c->encoded) {
		c->cant = "the body has a Content-Encoding";
		return 0;
	}
	if (c->ctype != ct) {
		c->cant = ct == CT_JSON ? "the body is not application/json" : ct == CT_FORM ?
		          "the body is not application/x-www-form-urlencoded" : "the body is not a git push";
		return 0;
	}
	return 1;
}

/* The values <cond>'s path selects in <root> fed to <a>: 0, or -1 (cannot judge, c->cant set). */
static int
json_values(struct policy_ctx *c, const json_t *root, const struct policy_cond *cond, struct acc *a)
{
	int sel;

	if ((sel = policy_json_select(root, &cond->path, acc_json, a, &c->fold)) != 0) {
		c->cant = sel == -2 ? "the JSON body has keys on the rule's path that differ only by case (an upstream may read either)"
		                    : "the path selects too many values";
		return -1;
	}
	return 0;
}

/* The values of <cond> fed to <a>: 0, or -1 (cannot judge, c->cant set). */
static int
cond_values(struct policy_ctx *c, const struct policy_cond *cond, struct acc *a)
{
	const struct policy_request *r = c->req;
	const struct policy_mcp_msg *m;
	size_t i;

	if (c->head_unknown && (cond->place == POLICY_PLACE_QUERY || cond->place == POLICY_PLACE_HEADER)) {
		c->cant = "the query and headers were not given";
		return -1;
	}
	switch (cond->place) {
	case POLICY_PLACE_QUERY:
		if (r->query == NULL)
			return 0;
		return form_values(c, cond, r->query, r->query_len, a);
	case POLICY_PLACE_HEADER:
		for (i = 0; i < r->nheaders; i++) {
			struct policy_val v = {.kind = V_STR};

			if (!sluice_iov_ieq(r->headers[i].name, r->headers[i].name_len, cond->name))
				continue;
			v.s = r->headers[i].value;
			v.len = r->headers[i].value_len;
			trim(&v.s, &v.len);
			acc_add(a, &v);
		}
		return 0;
	case POLICY_PLACE_FORM:
		if (!policy_ctx_body_readable(c, CT_FORM))
			return -1;
		return form_values(c, cond, r->body, r->body_len, a);
	case POLICY_PLACE_JSON:
		if (!policy_ctx_body_readable(c, CT_JSON))
			return -1;
		/* an MCP message judged on its own (a batch's element): its paths are rooted at that message, so a
		 * json condition or a budget's json sum reads the same in a batch as in a body of one message */
		if (r->mcp_msg != NULL)
			return (m = policy_ctx_mcp(c)) == NULL ? -1 : json_values(c, m->obj, cond, a);
		if (r->body_len == 0)
			return 0;
		if (policy_json_body(c) < 0)
			return -1;
		return json_values(c, c->json, cond, a);
	case POLICY_PLACE_MCP_ARGS:
		/* rooted at params.arguments; absent arguments select nothing */
		if ((m = policy_ctx_mcp(c)) == NULL)
			return -1;
		return m->arguments == NULL ? 0 : json_values(c, m->arguments, cond, a);
	}
	return -1;
}

int
policy_cond_eval(struct policy_ctx *c, const struct policy_cond *cond, int all)
{
	struct acc a;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.t = &cond->t;
	a.place = place_names[cond->place];
	a.name = cond->name;
	a.all = all;
	a.res = all ? TV_T : TV_F;
	if (cond_values(c, cond, &a) != 0) {
		policy_ctx_why(c, "%s %s: cannot judge: %s", place_names[cond->place], cond->name, c->cant);
		return TV_U;
	}
	return acc_end(&a);
}

int
policy_cond_sum(struct policy_ctx *c, const struct policy_cond *sumc, int64_t *amount)
{
	struct sum s = {1, 0, 0};
	struct acc a;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.t = &sumc->t;
	a.place = "budget";
	a.name = sumc->name;
	a.all = 1;
	a.sum = &s;
	*amount = -1;
	if (cond_values(c, sumc, &a) != 0) {
		policy_ctx_why(c, "budget sum %s: cannot count: %s", sumc->name, c->cant);
		return TV_U;
	}
	if (s.n == 0 || !s.ok) {
		policy_ctx_why(c, "budget sum %s: cannot count: %s", sumc->name,
		        s.n == 0 ? "no value" : "not a non-negative number with at most 6 decimals");
		return TV_U;
	}
	*amount = s.total;
	return TV_T;
}

int
policy_test_strings(struct policy_ctx *c, const struct policy_test *t, const char *place, const char *name,
             const struct policy_gql_field *v, size_t n, int all)
{
	struct acc a;
	size_t i;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.t = t;
	a.place = place;
	a.name = name;
	a.all = all;
	a.res = all ? TV_T : TV_F;
	for (i = 0; i < n; i++) {
		struct policy_val x = {.kind = V_STR, .s = v[i].s, .len = v[i].len};

		acc_add(&a, &x);
	}
	return acc_end(&a);
}
