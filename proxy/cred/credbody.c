/*
 * proxy/cred/credbody.c - placeholders in a request body.
 *
 * With secrets declared, a request body is held before anything goes
 * upstream: up to CRED_BODY_INJECT_MAX when a secret could be injected into
 * it (a JSON or form body, toward a host a secret with a json: or form: place
 * is bound to, from a sandbox that may use it), else up to
 * CRED_BODY_HOLD_MAX.  A held body is searched whole: each placeholder is
 * located (the JSON path of the string holding it, or the form field) and
 * either injected there, when that is a place its secret is bound to, or
 * refused as an exfiltration attempt.  The body then goes upstream with a
 * Content-Length, whatever framing the client used.  A body too large to hold
 * streams through the placeholder search instead (credreq.c), where any
 * placeholder is refused.
 *
 * A body held for a semantic rule (semantic.c) is held here too, once: the
 * rule reads it as the sandbox sent it (placeholders, never values), and
 * then it goes through the same search and injection; one larger than the
 * bounds above is searched whole and any placeholder in it refused, as if it
 * had streamed.
 *
 * Injection replaces the placeholder in the raw body (JSON-escaped, or
 * percent-encoded) and never re-serialises, so numbers, key order and
 * spacing reach the upstream as the client wrote them.  For JSON the result
 * is parsed again and compared with the original: anything but the expected
 * strings changing refuses the request, so an escape trick can never steer a
 * value into another field.
 */
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <event2/buffer.h>
#include "common/fold.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/cred/credhead.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"
#include "proxy/core/context.h"
#include "proxy/core/h1_out.h"
#include "secrets/detect.h"

#define JSON_PLACE_MAX 1024   /* bytes of a concrete JSON path named in a place */

static size_t
count(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
	const char *hit;
	size_t n = 0;

	while (nlen > 0 && (hit = memmem(hay, hlen, needle, nlen)) != NULL) {
		n++;
		hlen -= (size_t)(hit - hay) + nlen;
		hay = hit + nlen;
	}
	return n;
}

/*
 * 1 if <s>/<len>, with every literal <ph> cut out, still holds <ph> in some
 * decoded view (percent, base64, escapes: secrets/detect.h), or cannot be
 * searched; a field value whose literal placeholder is injected must not hide
 * another one encoded.
 */
static int
hidden(const char *s, size_t len, const char *ph, size_t plen)
{
	uint8_t *res = try_malloc(len + 1);
	unsigned char hit = 0;
	const char *from = s, *h;
	size_t o = 0;
	int ret;

	if (res == NULL)
		return 1;
	while ((h = memmem(from, (size_t)(s + len - from), ph, plen)) != NULL) {
		memcpy(res + o, from, (size_t)(h - from));
		o += (size_t)(h - from);
		res[o++] = '\0';
		from = h + plen;
	}
	memcpy(res + o, from, (size_t)(s + len - from));
	o += (size_t)(s + len - from);
	ret = ph_detect(res, o, &ph, &plen, 1, &hit);
	sluice_wipe(res, len + 1);
	free(res);
	return ret != 0;
}

/* The type of body Content-Type names (parameters ignored). */
static enum cred_body_type
body_type(const struct h1_message *m)
{
	const struct h1_header *h = h1_find_header(m, "content-type");
	size_t n;

	if (h == NULL)
		return CRED_BODY_OTHER;
	for (n = 0; n < h->value_len && h->value[n] != ';' && h->value[n] != ' '; n++)
		;
	if ((n == 16 && strncasecmp(h->value, "application/json", 16) == 0) ||
	    (n > 17 && strncasecmp(h->value, "application/", 12) == 0 && strncasecmp(h->value + n - 5, "+json", 5) == 0))
		return CRED_BODY_JSON;
	if (n == 33 && strncasecmp(h->value, "application/x-www-form-urlencoded", 33) == 0)
		return CRED_BODY_FORM;
	return CRED_BODY_OTHER;
}

/* 1 if some secret could be injected into a body of <type> from this client toward this host. */
static int
injectable(struct conn *c, enum cred_body_type type)
{
	const struct policy_secret *s;
	size_t i, k;

	if (type == CRED_BODY_OTHER || c->sandbox == NULL)
		return 0;
	for (i = 0; i < policy_secret_count(c->pol); i++) {
		s = policy_secret_get(c->pol, i);
		if (!policy_secret_host_bound(s, c->host) || !conn_may_use_secret(c, s))
			continue;
		for (k = 0; k < s->ninject; k++)
			if ((s->inject[k].kind == POLICY_INJECT_JSON && type == CRED_BODY_JSON) ||
			    (s->inject[k].kind == POLICY_INJECT_FORM && type == CRED_BODY_FORM))
				return 1;
	}
	return 0;
}

int
cred_hold_begin(struct conn *c, const struct h1_message *m, int sem)
{
	struct req *r = c->req;

	if (r->body == H1_BODY_NONE || (policy_secret_count(c->pol) == 0 && !sem))
		return 0;
	r->cred->body_type = body_type(m);
	r->cred->body_injectable = injectable(c, r->cred->body_type);
	r->cred->hold_max = r->cred->body_injectable ? CRED_BODY_INJECT_MAX : CRED_BODY_HOLD_MAX;
	if (!sem && r->body == H1_BODY_LENGTH && r->body_left > r->cred->hold_max)
		return 0;  /* streams through the search */
	r->body_total = r->body_left;
	r->cred->expect_continue = m->minor_version == 1 && h1_find_header(m, "expect") != NULL;
	r->hold = evbuffer_new();
	return r->hold != NULL ? 1 : -1;
}

static int placeholders_in(struct conn *c, const char *body, size_t len, unsigned char *found);

int
cred_body_coding_check(struct conn *c, const struct h1_message *m, struct refusal *rf)
{
	size_t i, k, n;
	const char *v;

	if (c->req->body == H1_BODY_NONE)
		return 0;
	for (i = 0; i < m->nheaders; i++) {
		const struct h1_header *h = &m->headers[i];
		if (!sluice_iov_ieq(h->name, h->name_len, "content-encoding"))
			continue;
		for (v = h->value, n = h->value_len; n > 0 && (*v == ' ' || *v == '\t'); v++, n--)
			;
		while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (sluice_iov_ieq(v, n, "identity"))
			continue;
		for (k = 0; k < policy_secret_count(c->pol); k++)
			if (policy_secret_host_bound(policy_secret_get(c->pol, k), c->host))
				break;
		if (k == policy_secret_count(c->pol))
			return 0;
		return refusal_set(rf, 415, REFUSAL_MEDIA_TYPE, "secrets",
		                   "a request body with a Content-Encoding cannot be searched for placeholders: a host a "
		                   "secret is bound to takes request bodies uncompressed");
	}
	return 0;
}

int
cred_trailers_search(struct conn *c, size_t *secret)
{
	struct evbuffer *t = c->req->req_trailers;
	size_t len = t != NULL ? evbuffer_get_length(t) : 0, i, n = policy_secret_count(c->pol);
	unsigned char *found;
	int ret;

	if (len == 0 || n == 0)
		return 0;
	found = xcalloc(n, 1);
	ret = placeholders_in(c, (const char *)evbuffer_pullup(t, -1), len, found);
	for (i = 0; ret > 0 && !found[i]; i++)
		;
	*secret = i < n ? i : 0;
	free(found);
	return ret > 0 ? 1 : ret < 0 ? -1 : 0;
}

/* ---- JSON ---- */

struct walk {
	struct conn *c;
	const struct policy_secret *s;
	const struct cred_entry *e;
	const char *ph;
	size_t plen;
	size_t seen;         /* occurrences in decoded strings */
	struct refusal *rf;  /* filled by the refusal that stops the walk (the caller answers it) */
	char path[JSON_PLACE_MAX];
};

struct folded {
	char *s;
	size_t len;
};

static int
folded_cmp(const void *a, const void *b)
{
	const struct folded *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->s, y->s, n);

	return d != 0 ? d : x->len < y->len ? -1 : x->len > y->len;
}

/*
 * 1 if two keys of the object <j> are equal under case folding (common/fold.h): an upstream written in Go
 * reads the last of them as the field, so what a bound place holds depends on who reads it; -1 when out of
 * memory.  O(n log n) in the keys: checked once per object that holds a placeholder.
 */
static int
fold_dup(const json_t *j)
{
	size_t n = json_object_size(j), i = 0, klen, bytes = 0;
	struct folded *f;
	const char *key;
	json_t *v;
	char *buf;
	int dup = 0;

	if (n < 2)
		return 0;
	json_object_keylen_foreach(SLUICE_DECONST(json_t *, j), key, klen, v)
		bytes += 3 * klen;
	f = try_malloc(n * sizeof(*f) + bytes + 1);
	if (f == NULL)
		return -1;
	buf = (char *)(f + n);
	json_object_keylen_foreach(SLUICE_DECONST(json_t *, j), key, klen, v) {
		f[i].s = buf;
		f[i].len = sluice_fold_key(key, klen, buf);
		buf += f[i++].len;
	}
	qsort(f, n, sizeof(*f), folded_cmp);
	for (i = 1; i < n && !dup; i++)
		dup = folded_cmp(&f[i - 1], &f[i]) == 0;
	free(f);
	return dup;
}

/* Finds the placeholder in every string and key under <j>: 0, or -1 when refused (w->rf filled). */
static int
walk_json(struct walk *w, const json_t *j, size_t plen_path)
{
	char place[JSON_PLACE_MAX + 8];
	const char *key;
	json_t *v;
	size_t i, n, len, before;

	switch (json_typeof(j)) {
	case JSON_STRING:
		n = count(json_string_value(j), json_string_length(j), w->ph, w->plen);
		snprintf(place, sizeof(place), "json:%s", plen_path > 0 ? w->path : "(path too long)");
		if (hidden(json_string_value(j), json_string_length(j), w->ph, w->plen))
			return cred_refuse_encoded(w->c, w->s, place, w->rf);
		if (n == 0)
			return 0;
		w->seen += n;
		return cred_found(w->c, w->s, w->e, place, w->rf);
	case JSON_OBJECT:
		before = w->seen;
		json_object_foreach(SLUICE_DECONST(json_t *, j), key, v) {
			len = plen_path;
			if ((n = count(key, strlen(key), w->ph, w->plen)) > 0 || hidden(key, strlen(key), w->ph, w->plen)) {
				w->seen += n;
				return cred_refuse_encoded(w->c, w->s, "json key", w->rf);
			}
			if (len > 0 && policy_json_path_key(w->path, sizeof(w->path), &len, key, strlen(key)) != 0)
				len = 0;
			if (walk_json(w, v, len) != 0)
				return -1;
			if (plen_path > 0)
				w->path[plen_path] = '\0';
		}
		if (w->seen > before && fold_dup(j) != 0)
			return cred_refuse(w->c, w->s, plen_path > 0 ? w->path : "the JSON body",
			                   "an object around it has keys that differ only by case (an upstream may read either)",
			                   w->rf);
		return 0;
	case JSON_ARRAY:
		json_array_foreach(j, i, v) {
			len = plen_path;
			if (len > 0 && policy_json_path_index(w->path, sizeof(w->path), &len, i) != 0)
				len = 0;
			if (walk_json(w, v, len) != 0)
				return -1;
			if (plen_path > 0)
				w->path[plen_path] = '\0';
		}
		return 0;
	default:
		return 0;
	}
}

/* The use whose placeholder starts <p> (<len> bytes on), with its length in *plen; r->cred->nuses if none. */
static size_t
use_at(const struct req *r, const char *p, size_t len, size_t *plen)
{
	const char *ph;
	size_t k;

	for (k = 0; k < r->cred->nuses; k++) {
		ph = cred_placeholder(r->cred->uses[k].e);
		*plen = strlen(ph);
		if (len >= *plen && memcmp(p, ph, *plen) == 0)
			break;
	}
	return k;
}

/* 1 if <b> is <a> with each placeholder of a body use replaced by its value. */
static int
replaced_eq(const struct req *r, const char *a, size_t alen, const char *b, size_t blen)
{
	const uint8_t *val;
	size_t i = 0, j = 0, k, plen = 0, vlen;

	while (i < alen) {
		k = use_at(r, a + i, alen - i, &plen);
		if (k < r->cred->nuses) {
			val = cred_value_bytes(r->cred->uses[k].v, &vlen);
			if (blen - j < vlen || CRYPTO_memcmp(b + j, val, vlen) != 0)
				return 0;
			i += plen;
			j += vlen;
			continue;
		}
		if (j == blen || a[i] != b[j])
			return 0;
		i++;
		j++;
	}
	return j == blen;
}

/* 1 if parsed body <b> is <a> with only the expected strings changed. */
static int
same_json(const struct req *r, const json_t *a, const json_t *b)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return replaced_eq(r, json_string_value(a), json_string_length(a), json_string_value(b),
		                   json_string_length(b));
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach(SLUICE_DECONST(json_t *, a), key, v) {
			const json_t *w = json_object_get(b, key);
			if (w == NULL || !same_json(r, v, w))
				return 0;
		}
		return 1;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		json_array_foreach(a, i, v)
			if (!same_json(r, v, json_array_get(b, i)))
				return 0;
		return 1;
	default:
		return json_equal(a, b);
	}
}

/* jansson frees without wiping: clear every string of a tree that holds values. */
static void
wipe_json(json_t *j)
{
	const char *key;
	json_t *v;
	size_t i;

	switch (json_typeof(j)) {
	case JSON_STRING:
		/* the library's own copy: const only by its API */
		sluice_wipe((void *)(uintptr_t)json_string_value(j), json_string_length(j));
		break;
	case JSON_OBJECT:
		json_object_foreach(j, key, v)
			wipe_json(v);
		break;
	case JSON_ARRAY:
		json_array_foreach(j, i, v)
			wipe_json(v);
		break;
	default:
		break;
	}
}

/* Appends <v> escaped for a JSON string, written in place (no copy of the value to wipe). */
static void
json_value_escape(struct evbuffer *out, const uint8_t *v, size_t len)
{
	struct evbuffer_iovec vec;

	if (len == 0 || evbuffer_reserve_space(out, (ev_ssize_t)JSON_ESCAPED_MAX(len), &vec, 1) != 1)
		return;
	vec.iov_len = json_escape(vec.iov_base, vec.iov_len, v, len, JSON_ESC_PLAIN);
	evbuffer_commit_space(out, &vec, 1);
}

static void
wipe_free(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);

	if (n > 0)
		sluice_wipe(evbuffer_pullup(b, -1), n);
	evbuffer_free(b);
}

/* Appends <in> with every placeholder of a body use replaced by its value (escaped by <esc>). */
static void
replace_uses(const struct req *r, const char *in, size_t len, struct evbuffer *out,
             void (*esc)(struct evbuffer *, const uint8_t *, size_t))
{
	const uint8_t *val;
	size_t i = 0, start = 0, k, plen = 0, vlen;

	while (i < len) {
		k = use_at(r, in + i, len - i, &plen);
		if (k == r->cred->nuses) {
			i++;
			continue;
		}
		evbuffer_add(out, in + start, i - start);
		val = cred_value_bytes(r->cred->uses[k].v, &vlen);
		esc(out, val, vlen);
		i += plen;
		start = i;
	}
	evbuffer_add(out, in + start, len - start);
}

/* The body with its JSON placeholders injected into <out>: 0, or -1 when the result is not what was meant. */
static int
inject_json(const struct req *r, const json_t *orig, const char *body, size_t len, struct evbuffer *out)
{
	json_t *now;
	int ok;

	replace_uses(r, body, len, out, json_value_escape);
	now = json_loadb((const char *)evbuffer_pullup(out, -1), evbuffer_get_length(out),
	                 JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, NULL);
	if (now == NULL)
		return -1;
	ok = same_json(r, orig, now);
	wipe_json(now);
	json_decref(now);
	return ok ? 0 : -1;
}

/* ---- forms ---- */

/*
 * Finds the placeholder in every field of a form body: 0, or -1 when
 * refused.  *seen counts decoded occurrences; *bad is set when the body does
 * not decode as a form (then nothing in it is a field).
 */
static int
walk_form(struct walk *w, const char *body, size_t len, char *scratch, int *bad)
{
	struct policy_form_iter it = {body, body + len};
	const char *n, *v;
	size_t nl, vl, k;
	long dn, dv;
	char place[POLICY_INJECT_ARG_MAX + 8];

	while (policy_form_next(&it, &n, &nl, &v, &vl)) {
		dn = policy_form_decode(n, nl, scratch, len);
		dv = dn < 0 ? -1 : policy_form_decode(v, vl, scratch + dn, len - (size_t)dn);
		if (dv < 0) {
			*bad = 1;
			return 0;
		}
		if ((k = count(scratch, (size_t)dn, w->ph, w->plen)) > 0 || hidden(scratch, (size_t)dn, w->ph, w->plen)) {
			w->seen += k;
			return cred_refuse_encoded(w->c, w->s, "form key", w->rf);
		}
		k = count(scratch + dn, (size_t)dv, w->ph, w->plen);
		snprintf(place, sizeof(place), "form:%.*s", (int)(dn < POLICY_INJECT_ARG_MAX + 1 ? dn : 0), scratch);
		if (dn > POLICY_INJECT_ARG_MAX || memchr(scratch, '\0', (size_t)dn) != NULL)
			snprintf(place, sizeof(place), "form:(unnamed)");
		if (hidden(scratch + dn, (size_t)dv, w->ph, w->plen))
			return cred_refuse_encoded(w->c, w->s, place, w->rf);
		if (k > 0) {
			w->seen += k;
			if (cred_found(w->c, w->s, w->e, place, w->rf) != 0)
				return -1;
		}
	}
	return 0;
}

/* The form with its placeholders injected into <out>: each field value holding one is re-encoded. */
static void
inject_form(const struct req *r, const char *body, size_t len, char *scratch, struct evbuffer *out)
{
	struct policy_form_iter it = {body, body + len};
	struct evbuffer *val = evbuffer_new();
	const char *n, *v, *from = body;
	size_t nl, vl, k;
	long dv;

	while (policy_form_next(&it, &n, &nl, &v, &vl)) {
		dv = policy_form_decode(v, vl, scratch, len);
		for (k = 0; dv > 0 && k < r->cred->nuses; k++)
			if (r->cred->uses[k].kind == POLICY_INJECT_FORM &&
			    count(scratch, (size_t)dv, cred_placeholder(r->cred->uses[k].e), strlen(cred_placeholder(r->cred->uses[k].e))) > 0)
				break;
		if (dv <= 0 || k == r->cred->nuses)
			continue;
		evbuffer_add(out, from, (size_t)(v - from));
		replace_uses(r, scratch, (size_t)dv, val, credhead_pct_escape);
		evbuffer_add_buffer(out, val);
		from = v + vl;
	}
	evbuffer_add(out, from, (size_t)(body + len - from));
	wipe_free(val);
}

/*
 * Which placeholders are in <body> in any form (secrets/detect.h: as they
 * are, percent-encoded, base64, escaped): found[i] for the i-th secret.  The
 * count, or a negative SLUICE_E* when the body cannot be searched (refuse).
 * Most bodies hold none: they go as they came without a second parse.
 */
static int
placeholders_in(struct conn *c, const char *body, size_t len, unsigned char *found)
{
	size_t n = policy_secret_count(c->pol), i;
	const char **ph = xcalloc(n + 1, sizeof(*ph));
	size_t *plen = xcalloc(n + 1, sizeof(*plen));
	const struct cred_entry *e;
	int ret;

	for (i = 0; i < n; i++) {
		e = cred_entry_of(c->w->gw->creds, policy_secret_get(c->pol, i));
		ph[i] = e != NULL ? cred_placeholder(e) : "";
		plen[i] = strlen(ph[i]);   /* 0: never searched */
	}
	ret = ph_detect((const uint8_t *)body, len, ph, plen, n, found);
	free(ph);
	free(plen);
	return ret;
}

/*
 * The whole body is held: find its placeholders, take the values of those in
 * bound places (cred_found), and build the body to send into <out>.  0, or -1
 * when the request is refused (<rf> filled; nothing answered, c->req intact).
 */
static int
inject_body(struct conn *c, const char *body, size_t len, struct evbuffer *out, struct refusal *rf)
{
	struct req *r = c->req;
	enum cred_body_type type = r->cred->body_type;
	json_t *doc = NULL;
	char *scratch = NULL;
	struct walk w;
	size_t i, raw, before = r->cred->nuses;
	unsigned char *found;
	int bad = 0, ret = 0;

	/* the form is read here anyway: a _method field would run it as another request (policy/screen.c) */
	if (type == CRED_BODY_FORM && r->cred->body_injectable &&
	    policy_form_overrides_method(r->method, r->method_len, body, len)) {
		snprintf(r->rule_buf, sizeof(r->rule_buf), "a _method form field names another method than the request's");
		return refusal_set(rf, 403, REFUSAL_DENIED, "request", r->rule_buf);
	}
	found = xcalloc(policy_secret_count(c->pol) + 1, 1);
	if ((ret = placeholders_in(c, body, len, found)) <= 0) {
		free(found);
		if (ret < 0)
			return refusal_set(rf, 500, REFUSAL_INTERNAL, "secrets", "cannot search the request body for placeholders");
		evbuffer_add(out, body, len);
		return 0;
	}
	ret = 0;
	if (type == CRED_BODY_JSON &&
	    (doc = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, NULL)) == NULL)
		type = CRED_BODY_OTHER;  /* not JSON: nothing in it is a field */
	if (type == CRED_BODY_FORM)
		scratch = xmalloc(len + 1);
	memset(&w, 0, sizeof(w));
	w.c = c;
	w.rf = rf;
	for (i = 0; i < policy_secret_count(c->pol) && ret == 0; i++) {
		w.s = policy_secret_get(c->pol, i);
		w.e = cred_entry_of(c->w->gw->creds, w.s);
		if (w.e == NULL || !found[i])
			continue;
		w.ph = cred_placeholder(w.e);
		w.plen = strlen(w.ph);
		w.seen = 0;
		raw = count(body, len, w.ph, w.plen);
		if (type == CRED_BODY_JSON) {
			snprintf(w.path, sizeof(w.path), "$");
			ret = walk_json(&w, doc, 1);
		} else if (type == CRED_BODY_FORM) {
			ret = walk_form(&w, body, len, scratch, &bad);
			if (bad)
				type = CRED_BODY_OTHER;
		}
		/* every placeholder must be one found in a field, written as it is; in any other body, any form refuses */
		if (ret == 0 && type == CRED_BODY_OTHER)
			ret = cred_refuse_encoded(c, w.s, "body", rf);
		else if (ret == 0 && w.seen == 0)  /* found in the body, in no field: in a form no field decodes to */
			ret = cred_refuse_encoded(c, w.s, "body", rf);
		else if (ret == 0 && raw != w.seen)
			ret = cred_found(c, w.s, w.e, "body", rf);
	}
	if (ret == 0 && r->cred->nuses > before) {
		if (type == CRED_BODY_JSON && inject_json(r, doc, body, len, out) != 0) {
			evbuffer_drain(out, evbuffer_get_length(out));
			ret = cred_refuse(c, r->cred->uses[before].s, "body",
			                  "the placeholder could not be injected exactly (write it unescaped in a JSON string)", rf);
		} else if (type == CRED_BODY_FORM) {
			inject_form(r, body, len, scratch, out);
		}
	} else if (ret == 0) {
		evbuffer_add(out, body, len);
	}
	if (doc != NULL)
		json_decref(doc);
	free(scratch);
	free(found);
	return ret;
}

/*
 * A body held for a semantic rule beyond what secrets may be injected into:
 * searched whole, and any placeholder in it refused, as the streaming search
 * would.  0, or -1 when refused (<rf> filled).
 */
static int
search_only(struct conn *c, const char *body, size_t len, struct refusal *rf)
{
	const struct policy_secret *s;
	const struct cred_entry *e;
	char why[160];
	size_t i;

	unsigned char *found = xcalloc(policy_secret_count(c->pol) + 1, 1);
	int n = placeholders_in(c, body, len, found);

	for (i = 0; i < policy_secret_count(c->pol) && n != 0; i++) {
		s = policy_secret_get(c->pol, i);
		if (n > 0 && ((e = cred_entry_of(c->w->gw->creds, s)) == NULL || !found[i]))
			continue;
		free(found);
		snprintf(why, sizeof(why), "a body too large to hold (over %zu bytes) is never injected into%s",
		         c->req->cred->hold_max, n < 0 ? " (and it could not be searched)" : "");
		return cred_refuse(c, s, "body", why, rf);
	}
	free(found);
	return 0;
}

int
cred_body_finish(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct evbuffer *out;
	size_t len = evbuffer_get_length(r->hold), ti = 0;
	const char *body;
	int tr;

	r->body = H1_BODY_NONE;  /* read whole: a refusal can keep the connection */
	if (policy_secret_count(c->pol) == 0) {
		/* nothing to search for (a body held for a semantic rule): it goes as it came */
		h1_out_uint_field(r->up_head, SLUICE_LIT("Content-Length"), len, 1);
		evbuffer_add_buffer(r->up_head, r->hold);
		r->bytes_up = len;
		evbuffer_free(r->hold);
		r->hold = NULL;
		return 0;
	}
	/* trailers are never sent (nor injected into): a placeholder in them refuses the request */
	if ((tr = cred_trailers_search(c, &ti)) != 0) {
		if (tr < 0)
			return refusal_set(rf, 500, REFUSAL_INTERNAL, "secrets", "cannot search the request trailers");
		return cred_refuse(c, policy_secret_get(c->pol, ti), "trailers", "request trailers are never injected into",
		                   rf);
	}
	out = evbuffer_new();
	body = len > 0 ? (const char *)evbuffer_pullup(r->hold, -1) : "";
	if (len > r->cred->hold_max ? search_only(c, body, len, rf) != 0 : inject_body(c, body, len, out, rf) != 0) {
		wipe_free(out);
		return -1;
	}
	if (len > r->cred->hold_max)
		evbuffer_add(out, body, len);  /* searched: nothing to inject */
	len = evbuffer_get_length(out);
	h1_out_uint_field(r->up_head, SLUICE_LIT("Content-Length"), len, 1);
	evbuffer_add_buffer(r->up_head, out);  /* sent with the head, wiped with it (cred_release) */
	evbuffer_free(out);
	r->bytes_up = len;
	evbuffer_free(r->hold);
	r->hold = NULL;
	return 0;
}

int
cred_body_stream(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	size_t len = evbuffer_get_length(r->hold);

	if (r->body == H1_BODY_LENGTH)
		h1_out_uint_field(r->up_head, SLUICE_LIT("Content-Length"), r->body_total, 1);
	else
		evbuffer_add(r->up_head, SLUICE_LIT("Transfer-Encoding: chunked\r\n\r\n"));
	if (policy_secret_count(c->pol) > 0) {
		/* the whole body goes through the placeholder search, the held part first */
		if (cred_scan_begin(c) != 0)
			return refusal_close(rf, 500, REFUSAL_INTERNAL, "secrets", "cannot set up the request body search");
		evbuffer_add_buffer(r->cred->scan_in, r->hold);
	} else {
		if (r->body == H1_BODY_CHUNKED && len > 0)
			h1_out_chunk_size(r->up_head, len);
		evbuffer_add_buffer(r->up_head, r->hold);
		if (r->body == H1_BODY_CHUNKED && len > 0)
			evbuffer_add(r->up_head, SLUICE_LIT("\r\n"));
	}
	evbuffer_free(r->hold);
	r->hold = NULL;
	return 0;
}

size_t
cred_hold_max(const struct req *r)
{
	return r->cred->hold_max;
}

void
cred_hold_free(struct req *r)
{
	if (r->hold != NULL)
		evbuffer_free(r->hold);
	r->hold = NULL;
	if (r->req_trailers != NULL)
		evbuffer_free(r->req_trailers);
	r->req_trailers = NULL;
}
