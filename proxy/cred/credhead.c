/*
 * proxy/cred/credhead.c - placeholders in the request head that leaves: the
 * places of the rendered head, the substitutable occurrences, the search of
 * what is left in every decoded view, and the head with values written only
 * inside their spans.  See credhead.h.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include <event2/buffer.h>
#include "common/b64.h"
#include "common/pct.h"
#include "common/sluice.h"
#include "proxy/cred/credhead.h"
#include "secrets/detect.h"
#include "secrets/secrets.h"

int
credhead_basic_decode(const char *v, size_t len, uint8_t *out, size_t cap)
{
	int n;
	size_t pad = 0;

	if (len < 6 || strncasecmp(v, "Basic ", 6) != 0)
		return -1;
	v += 6;
	len -= 6;
	while (len > 0 && *v == ' ') {
		v++;
		len--;
	}
	if (len == 0 || len % 4 != 0 || len / 4 * 3 > cap)
		return -1;
	n = EVP_DecodeBlock(out, (const unsigned char *)v, (int)len);
	if (n < 0)
		return -1;
	if (v[len - 1] == '=')
		pad++;
	if (v[len - 2] == '=')
		pad++;
	return n - (int)pad;
}

void
credhead_pct_escape(struct evbuffer *out, const uint8_t *v, size_t len)
{
	struct evbuffer_iovec vec;

	/* written in place (no copy of the value on the stack to wipe); the evbuffer is the caller's to wipe */
	if (len == 0 || evbuffer_reserve_space(out, (ev_ssize_t)PCT_ENCODED_MAX(len), &vec, 1) != 1)
		return;
	vec.iov_len = pct_encode(vec.iov_base, v, len, pct_unreserved, PCT_UPPER);
	evbuffer_commit_space(out, &vec, 1);
}

/* ---- the places of a rendered head ---- */

struct place {
	enum credhead_kind kind;
	size_t off, len;           /* the place's bytes in the head */
	const char *name;          /* a header value's name, a query value's key (raw), else NULL */
	size_t name_len;
};

typedef int (*place_fn)(void *arg, const char *head, const struct place *p);

/* Calls <fn> for every place of <h>/<len> in order: 0, SLUICE_EINVAL (no request line), or what <fn> returned. */
static int
walk(const char *h, size_t len, place_fn fn, void *arg)
{
	const char *eol = memmem(h, len, "\r\n", 2), *sp1, *sp2, *q, *t, *end, *amp, *eq, *line, *colon, *v, *ve;
	struct place p;
	int ret;

	if (eol == NULL || (sp1 = memchr(h, ' ', (size_t)(eol - h))) == NULL)
		return SLUICE_EINVAL;
	for (sp2 = eol; sp2 > sp1 && *(sp2 - 1) != ' '; sp2--)
		;
	if (sp2 <= sp1 + 1)
		return SLUICE_EINVAL;
	sp2--;  /* the space before the version */
	p = (struct place){CREDHEAD_METHOD, 0, (size_t)(sp1 - h), NULL, 0};
	if ((ret = fn(arg, h, &p)) != 0)
		return ret;
	t = sp1 + 1;
	q = memchr(t, '?', (size_t)(sp2 - t));
	end = q != NULL ? q : sp2;
	p = (struct place){CREDHEAD_PATH, (size_t)(t - h), (size_t)(end - t), NULL, 0};
	if ((ret = fn(arg, h, &p)) != 0)
		return ret;
	for (t = q != NULL ? q + 1 : sp2; t < sp2; t = amp + 1) {
		if ((amp = memchr(t, '&', (size_t)(sp2 - t))) == NULL)
			amp = sp2;
		eq = memchr(t, '=', (size_t)(amp - t));
		p = (struct place){CREDHEAD_QUERY_KEY, (size_t)(t - h), (size_t)((eq != NULL ? eq : amp) - t), NULL, 0};
		if ((ret = fn(arg, h, &p)) != 0)
			return ret;
		if (eq == NULL)
			continue;
		p = (struct place){CREDHEAD_QUERY_VALUE, (size_t)(eq + 1 - h), (size_t)(amp - eq - 1), t, (size_t)(eq - t)};
		if ((ret = fn(arg, h, &p)) != 0)
			return ret;
	}
	for (line = eol + 2; line < h + len; line = eol + 2) {
		if ((eol = memmem(line, (size_t)(h + len - line), "\r\n", 2)) == NULL)
			eol = h + len;  /* a last line without its CRLF: still a place */
		if (eol == line)
			break;
		colon = memchr(line, ':', (size_t)(eol - line));
		if (colon == NULL)
			colon = eol;   /* never rendered so: the whole line is a name */
		p = (struct place){CREDHEAD_HEADER_NAME, (size_t)(line - h), (size_t)(colon - line), NULL, 0};
		if ((ret = fn(arg, h, &p)) != 0)
			return ret;
		if (colon == eol)
			continue;
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = eol; ve > v && (*(ve - 1) == ' ' || *(ve - 1) == '\t'); ve--)
			;
		p = (struct place){CREDHEAD_HEADER_VALUE, (size_t)(v - h), (size_t)(ve - v), line, (size_t)(colon - line)};
		if ((ret = fn(arg, h, &p)) != 0)
			return ret;
	}
	return 0;
}

/* ---- the plan ---- */

struct planner {
	const struct credhead_needles *nd;
	credhead_found_fn found;
	void *arg;
	struct credhead_plan *plan;
	unsigned char *hit;    /* nd->n flags, scratch of the residual search */
};

static void
span_add(struct credhead_plan *pl, size_t off, size_t len, size_t sub, enum credhead_enc enc)
{
	if (pl->nspan == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 8;
		pl->span = xrealloc(pl->span, pl->cap * sizeof(*pl->span));
	}
	pl->span[pl->nspan++] = (struct credhead_span){off, len, sub, enc};
}

/* The name of place <p> as a use records it, lower-case for a header; 0, or -1 when too long to be bound. */
static int
place_name(const struct place *p, char *out, size_t cap)
{
	static const char *const fixed[] = {NULL, "method", "path", "query key", NULL, "header name", NULL};
	size_t i, o;
	const char *pre = p->kind == CREDHEAD_QUERY_VALUE ? "query:" : "header:";
	int hi, lo;

	if (fixed[p->kind] != NULL) {
		snprintf(out, cap, "%s", fixed[p->kind]);
		return 0;
	}
	o = (size_t)snprintf(out, cap, "%s", pre);
	for (i = 0; i < p->name_len; i++) {
		char ch = p->name[i];
		/* a query key is what the upstream decodes: "%6Bey" names the parameter "key" */
		if (p->kind == CREDHEAD_QUERY_VALUE && ch == '%' && i + 2 < p->name_len &&
		    (hi = sluice_hexval(p->name[i + 1])) >= 0 && (lo = sluice_hexval(p->name[i + 2])) >= 0) {
			ch = (char)(hi << 4 | lo);
			i += 2;
		}
		if (p->kind == CREDHEAD_HEADER_VALUE && ch >= 'A' && ch <= 'Z')
			ch = (char)(ch + 32);
		if (o + 1 >= cap || ch == '\0') {
			snprintf(out, cap, "%s(unnamed)", pre);
			return -1;
		}
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

/* Offers every literal occurrence of each needle in <v>/<vlen>; spans via <map> (raw offsets), or <base> + index. */
static int
offer(struct planner *pl, const struct place *p, const char *name, const uint8_t *v, size_t vlen, const size_t *map,
      size_t raw_end, enum credhead_enc enc)
{
	const uint8_t *hit, *from;
	size_t i, a, b, sub;

	for (i = 0; i < pl->nd->n; i++) {
		for (from = v; (hit = memmem(from, (size_t)(v + vlen - from), pl->nd->ph[i], pl->nd->len[i])) != NULL;
		     from = hit + pl->nd->len[i]) {
			if (pl->found(pl->arg, i, p->kind, name, 0, &sub) != 0)
				return -1;
			a = (size_t)(hit - v);
			b = a + pl->nd->len[i];
			if (map != NULL)
				span_add(pl->plan, map[a], (b < vlen ? map[b] : raw_end) - map[a], sub, enc);
			else
				span_add(pl->plan, p->off + a, b - a, sub, enc);
		}
	}
	return 0;
}

/* The token of an Authorization: Basic value: its offset in the head, or 0 when there is none. */
static size_t
basic_token(const char *head, const struct place *p)
{
	size_t k = 6;

	while (k < p->len && head[p->off + k] == ' ')
		k++;
	return p->off + k;
}

/* Pass 1: the substitutable occurrences of one place. */
static int
plan_place(void *arg, const char *head, const struct place *p)
{
	struct planner *pl = arg;
	char name[CREDHEAD_PLACE_NAME_MAX];
	uint8_t basic[CREDHEAD_BASIC_MAX];
	const uint8_t *v = (const uint8_t *)head + p->off;
	uint8_t *dec;
	size_t *map, i, o;
	int bl, hi, lo, ret = 0;
	size_t before, k;

	if (p->kind != CREDHEAD_HEADER_VALUE && p->kind != CREDHEAD_QUERY_VALUE)
		return 0;
	place_name(p, name, sizeof(name));
	if (p->kind == CREDHEAD_HEADER_VALUE) {
		if (offer(pl, p, name, v, p->len, NULL, 0, CREDHEAD_ENC_RAW) != 0)
			return -1;
		if (strcmp(name, "header:authorization") != 0 ||
		    (bl = credhead_basic_decode((const char *)v, p->len, basic, sizeof(basic))) <= 0)
			return 0;
		before = pl->plan->nspan;
		/* spans inside the credential are not head offsets: offer, then keep one span over the token */
		ret = offer(pl, p, "basic", basic, (size_t)bl, NULL, 0, CREDHEAD_ENC_BASIC);
		sluice_wipe(basic, sizeof(basic));
		if (ret != 0)
			return -1;
		if (pl->plan->nspan > before) {
			k = pl->plan->span[before].sub;
			pl->plan->nspan = before;
			i = basic_token(head, p);
			span_add(pl->plan, i, p->off + p->len - i, k, CREDHEAD_ENC_BASIC);
		}
		return 0;
	}
	/* a query value: the upstream decodes it once; a span covers the raw bytes of the decoded placeholder */
	dec = try_malloc(p->len + 1);
	map = try_malloc((p->len + 1) * sizeof(*map));
	if (dec == NULL || map == NULL) {
		free(dec);
		free(map);
		return SLUICE_ENOMEM;
	}
	for (i = 0, o = 0; i < p->len; i++, o++) {
		map[o] = p->off + i;
		if (v[i] == '%' && i + 2 < p->len && (hi = sluice_hexval(v[i + 1])) >= 0 && (lo = sluice_hexval(v[i + 2])) >= 0) {
			dec[o] = (uint8_t)(hi << 4 | lo);
			i += 2;
		} else {
			dec[o] = v[i];
		}
	}
	ret = offer(pl, p, name, dec, o, map, p->off + p->len, CREDHEAD_ENC_PCT);
	sluice_wipe(dec, p->len + 1);
	free(dec);
	free(map);
	return ret;
}

/* Pass 2: one place with its spans cut out (each a NUL), searched in every decoded view. */
static int
check_place(void *arg, const char *head, const struct place *p)
{
	struct planner *pl = arg;
	const struct credhead_plan *plan = pl->plan;
	char name[CREDHEAD_PLACE_NAME_MAX];
	uint8_t basic[CREDHEAD_BASIC_MAX], *res;
	size_t i, k, o = 0, pos = p->off, end = p->off + p->len, cap;
	int bl, ret;

	/* the residual never grows: a span becomes one NUL, a Basic token at most its decoded credential */
	cap = p->len + 1;
	if ((res = try_malloc(cap)) == NULL)
		return SLUICE_ENOMEM;
	for (k = 0; k < plan->nspan && pos < end; k++) {
		const struct credhead_span *s = &plan->span[k];
		if (s->off + s->len <= pos || s->off >= end)
			continue;
		memcpy(res + o, head + pos, s->off - pos);
		o += s->off - pos;
		if (s->enc == CREDHEAD_ENC_BASIC &&
		    (bl = credhead_basic_decode(head + p->off, p->len, basic, sizeof(basic))) > 0) {
			/* the credential, each placeholder that was accepted in it cut out */
			for (i = 0; i < (size_t)bl;) {
				size_t n;
				for (n = 0; n < pl->nd->n; n++)
					if (pl->nd->len[n] <= (size_t)bl - i && memcmp(basic + i, pl->nd->ph[n], pl->nd->len[n]) == 0)
						break;
				if (n < pl->nd->n) {
					res[o++] = '\0';
					i += pl->nd->len[n];
				} else if (o < cap) {
					res[o++] = basic[i++];
				} else {
					i++;
				}
			}
			sluice_wipe(basic, sizeof(basic));
		} else {
			res[o++] = '\0';
		}
		pos = s->off + s->len;
	}
	memcpy(res + o, head + pos, end - pos);
	o += end - pos;
	memset(pl->hit, 0, pl->nd->n);
	ret = ph_detect(res, o, pl->nd->ph, pl->nd->len, pl->nd->n, pl->hit);
	sluice_wipe(res, cap);
	free(res);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return 0;
	place_name(p, name, sizeof(name));
	for (i = 0; i < pl->nd->n && !pl->hit[i]; i++)
		;
	pl->found(pl->arg, i, p->kind, name, 1, NULL);
	return -1;
}

static int
span_cmp(const void *a, const void *b)
{
	const struct credhead_span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

int
credhead_plan(const char *head, size_t len, const struct credhead_needles *nd, credhead_found_fn found, void *arg,
              struct credhead_plan *plan)
{
	struct planner pl = {nd, found, arg, plan, NULL};
	size_t k;
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = walk(head, len, plan_place, &pl);
	if (ret != 0)
		return ret;
	if (plan->nspan > 1)
		qsort(plan->span, plan->nspan, sizeof(*plan->span), span_cmp);
	for (k = 1; k < plan->nspan; k++)
		if (plan->span[k].off < plan->span[k - 1].off + plan->span[k - 1].len)
			return SLUICE_EINVAL;  /* one placeholder inside another: nothing can say which was meant */
	pl.hit = xcalloc(nd->n > 0 ? nd->n : 1, 1);
	ret = walk(head, len, check_place, &pl);
	free(pl.hit);
	return ret;
}

void
credhead_plan_free(struct credhead_plan *plan)
{
	free(plan->span);
	memset(plan, 0, sizeof(*plan));
}

/* ---- rendering ---- */

static void
wipe_evbuffer(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);

	if (n > 0)
		sluice_wipe(evbuffer_pullup(b, -1), n);
}

/* The Basic token at <tok> re-encoded with every Basic substitution made; 0 or an error. */
static int
render_basic(const char *head, const struct credhead_span *s, const struct credhead_sub *sub, size_t nsub,
             struct evbuffer *out, struct secret_buf **basic, char **basic_ph)
{
	uint8_t dec[CREDHEAD_BASIC_MAX];
	struct evbuffer *cred = evbuffer_new();
	size_t i = 0, k, n;
	char hdr[6 + CREDHEAD_BASIC_MAX / 3 * 4 + 8];
	char *enc;
	int bl, ret = 0;

	if (cred == NULL)
		return SLUICE_ENOMEM;
	memcpy(hdr, SLUICE_LIT("Basic "));
	if (s->len > sizeof(hdr) - 7) {
		evbuffer_free(cred);
		return SLUICE_EINVAL;
	}
	memcpy(hdr + 6, head + s->off, s->len);
	bl = credhead_basic_decode(hdr, 6 + s->len, dec, sizeof(dec));
	if (bl <= 0) {
		evbuffer_free(cred);
		return SLUICE_EINVAL;
	}
	while (i < (size_t)bl) {
		for (k = 0; k < nsub; k++)
			if (sub[k].basic && sub[k].phlen <= (size_t)bl - i && memcmp(dec + i, sub[k].ph, sub[k].phlen) == 0)
				break;
		if (k < nsub) {
			evbuffer_add(cred, sub[k].val, sub[k].vlen);
			i += sub[k].phlen;
		} else {
			evbuffer_add(cred, dec + i, 1);
			i++;
		}
	}
	if (basic_ph != NULL) {
		free(*basic_ph);
		*basic_ph = xstrndup((const char *)dec, (size_t)bl);  /* as the client sent it: no value */
	}
	sluice_wipe(dec, sizeof(dec));
	n = evbuffer_get_length(cred);
	enc = try_malloc(B64_ENCODED_LEN(n) + 1);
	if (enc == NULL) {
		ret = SLUICE_ENOMEM;
		goto done;
	}
	k = b64_encode(enc, evbuffer_pullup(cred, -1), n);
	evbuffer_add(out, enc, k);
	sluice_wipe(enc, k);
	free(enc);
	if (basic != NULL) {
		/* the exact credential, for scrubbing its echo */
		secret_buf_free(*basic);
		*basic = secret_buf_new(n);
		if (*basic != NULL && n <= (*basic)->cap) {
			memcpy((*basic)->p, evbuffer_pullup(cred, -1), n);
			(*basic)->len = n;
		}
	}
done:
	wipe_evbuffer(cred);
	evbuffer_free(cred);
	return ret;
}

/* Drops every header line named <name> from <buf> (the request line is never one). */
static void
drop_header(struct evbuffer *buf, const char *name)
{
	size_t len = evbuffer_get_length(buf), nl = strlen(name);
	char *h = (char *)evbuffer_pullup(buf, -1), *line, *eol;
	struct evbuffer *out;

	if (len == 0 || (eol = memmem(h, len, "\r\n", 2)) == NULL)
		return;
	out = evbuffer_new();
	evbuffer_add(out, h, (size_t)(eol + 2 - h));
	for (line = eol + 2; line < h + len; line = eol + 2) {
		if ((eol = memmem(line, (size_t)(h + len - line), "\r\n", 2)) == NULL) {
			evbuffer_add(out, line, (size_t)(h + len - line));
			break;
		}
		if (!((size_t)(eol - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0))
			evbuffer_add(out, line, (size_t)(eol + 2 - line));
	}
	wipe_evbuffer(buf);
	evbuffer_drain(buf, len);
	evbuffer_add_buffer(buf, out);
	evbuffer_free(out);
}

int
credhead_render(const char *head, size_t len, const struct credhead_plan *plan, const struct credhead_sub *sub,
                size_t nsub, unsigned flags, struct evbuffer *out, struct secret_buf **basic, char **basic_ph)
{
	size_t k, pos = 0;
	const struct credhead_span *s;
	int ret;

	for (k = 0; k < plan->nspan; k++) {
		s = &plan->span[k];
		if (s->sub >= nsub || s->off < pos || s->off + s->len > len)
			return SLUICE_EINVAL;
		evbuffer_add(out, head + pos, s->off - pos);
		switch (s->enc) {
		case CREDHEAD_ENC_RAW:
			evbuffer_add(out, sub[s->sub].val, sub[s->sub].vlen);
			break;
		case CREDHEAD_ENC_PCT:
			credhead_pct_escape(out, sub[s->sub].val, sub[s->sub].vlen);
			break;
		case CREDHEAD_ENC_BASIC:
			if ((ret = render_basic(head, s, sub, nsub, out, basic, basic_ph)) != 0)
				return ret;
			break;
		}
		pos = s->off + s->len;
	}
	evbuffer_add(out, head + pos, len - pos);
	if (flags & CREDHEAD_DROP_GRPC_ENCODING)
		drop_header(out, "grpc-accept-encoding");
	return 0;
}
