/*
 * fuzz_credhead.c - the request head that leaves (proxy/cred/credhead.c) and the
 * decoded-view search under it (secrets/detect.c), checked against the
 * invariant: the value occurs in the output only at the offsets of bound
 * places.
 *
 * The input is a head in which each byte 0x01 stands for the placeholder.
 * Bound places: the value of an Authorization field (as it is), the query
 * parameter "key" (percent-encoded) and the Basic credential.  A plan that
 * is accepted is rendered with a value holding bytes a query must encode;
 * then every occurrence of the value, and of its percent-encoding, must lie
 * exactly where a span of the right kind was written, and each span must sit
 * in the place its kind says (an Authorization line, the value of "key").
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "proxy/cred/credhead.h"
#include "secrets/secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH "sluice_ph_FuzzPlaceH0lder0123456789abcdefXY"
#define VAL "V4L&ue=1 x/%+v4lueTAIL"

static int
found_cb(void *arg, size_t i, enum credhead_kind kind, const char *place, int encoded, size_t *sub)
{
	int *basic = arg;

	(void)i;
	(void)kind;
	if (encoded)
		return -1;
	if (strcmp(place, "header:authorization") == 0 || strcmp(place, "query:key") == 0) {
		*sub = 0;
		return 0;
	}
	if (strcmp(place, "basic") == 0) {
		*sub = 1;
		*basic = 1;
		return 0;
	}
	return -1;
}

/* 1 if head offset <off> is inside a header line named authorization (any case). */
static int
in_auth_line(const char *h, size_t off)
{
	size_t s = off;

	while (s > 0 && !(h[s - 1] == '\n' && s >= 2 && h[s - 2] == '\r'))
		s--;
	return s > 0 && strncasecmp(h + s, "authorization:", 14) == 0;
}

/* 1 if head offset <off> is inside the value of query parameter "key" of the request line. */
static int
in_key_value(const char *h, size_t len, size_t off)
{
	const char *eol = memmem(h, len, "\r\n", 2), *sp = memchr(h, ' ', len), *q;
	size_t k, eq;
	char name[8];
	size_t n = 0;

	/* the query starts at the first '?' of the target (a method may hold one) */
	if (eol == NULL || sp == NULL || sp > eol || (q = memchr(sp, '?', (size_t)(eol - sp))) == NULL ||
	    (size_t)(q - h) > off || (size_t)(eol - h) < off)
		return 0;
	for (k = off; k > (size_t)(q - h) + 1 && h[k - 1] != '&'; k--)
		;
	for (eq = k; eq < off && h[eq] != '='; eq++)
		;
	if (eq >= off)
		return 0;
	/* the key as the upstream decodes it */
	for (; k < eq && n < sizeof(name) - 1; k++) {
		int hi, lo;
		if (h[k] == '%' && k + 2 < eq && (hi = sluice_hexval(h[k + 1])) >= 0 && (lo = sluice_hexval(h[k + 2])) >= 0) {
			name[n++] = (char)(hi << 4 | lo);
			k += 2;
		} else {
			name[n++] = h[k];
		}
	}
	return k == eq && n == 3 && memcmp(name, "key", 3) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *ph = PH;
	size_t phlen = strlen(PH), len = 0, i, k, olen, pos, delta_off;
	struct credhead_needles nd = {&ph, &phlen, 1};
	struct credhead_plan plan;
	struct credhead_sub sub[2] = {{PH, strlen(PH), (const uint8_t *)VAL, strlen(VAL), 0},
	                              {PH, strlen(PH), (const uint8_t *)VAL, strlen(VAL), 1}};
	struct evbuffer *out, *pct;
	struct secret_buf *basic = NULL;
	char *basic_ph = NULL, *head, *o, *pv;
	size_t pvlen, *voff, nvoff = 0;
	int isbasic = 0, ret;

	if (size > 4096)
		return 0;
	head = malloc(size * phlen + 1);
	for (i = 0; i < size; i++) {
		if (data[i] == 0x01) {
			memcpy(head + len, PH, phlen);
			len += phlen;
		} else {
			head[len++] = (char)data[i];
		}
	}
	/* the sandbox never holds the value: an input that does is no request it could send */
	if (memmem(head, len, VAL, strlen(VAL)) != NULL) {
		free(head);
		return 0;
	}
	ret = credhead_plan(head, len, &nd, found_cb, &isbasic, &plan);
	if (ret != 0) {
		credhead_plan_free(&plan);
		free(head);
		return 0;
	}
	/* every span sits in a bound place of its kind */
	for (k = 0; k < plan.nspan; k++) {
		const struct credhead_span *s = &plan.span[k];
		if (s->enc == CREDHEAD_ENC_PCT && !in_key_value(head, len, s->off))
			abort();
		if ((s->enc == CREDHEAD_ENC_RAW || s->enc == CREDHEAD_ENC_BASIC) && !in_auth_line(head, s->off))
			abort();
		if (s->enc != CREDHEAD_ENC_BASIC && (s->len < phlen || memmem(head + s->off, s->len, "\r", 1) != NULL))
			abort();
	}
	out = evbuffer_new();
	pct = evbuffer_new();
	credhead_pct_escape(pct, (const uint8_t *)VAL, strlen(VAL));
	pvlen = evbuffer_get_length(pct);
	pv = (char *)evbuffer_pullup(pct, -1);
	if (credhead_render(head, len, &plan, sub, 2, 0, out, &basic, &basic_ph) == 0) {
		olen = evbuffer_get_length(out);
		o = (char *)evbuffer_pullup(out, -1);
		/* where the RAW and PCT spans landed in the output */
		voff = calloc(plan.nspan + 1, sizeof(*voff));
		delta_off = 0;
		for (k = 0; k < plan.nspan; k++) {
			const struct credhead_span *s = &plan.span[k];
			size_t at = s->off + delta_off, w;
			if (s->enc == CREDHEAD_ENC_RAW) {
				voff[nvoff++] = at;
				w = strlen(VAL);
			} else if (s->enc == CREDHEAD_ENC_PCT) {
				if (at + pvlen > olen || memcmp(o + at, pv, pvlen) != 0)
					abort();  /* the query value is the value percent-encoded, exactly there */
				w = pvlen;
			} else {
				/* a Basic token: up to the end of its line */
				const char *e = memmem(o + at, olen - at, "\r\n", 2);
				w = e != NULL ? (size_t)(e - (o + at)) : olen - at;
			}
			delta_off += w - s->len;
		}
		/* the value, as it is, occurs exactly at the RAW spans and nowhere else */
		for (pos = 0, k = 0; pos < olen;) {
			const char *hit = memmem(o + pos, olen - pos, VAL, strlen(VAL));
			if (hit == NULL)
				break;
			if (k >= nvoff || (size_t)(hit - o) != voff[k])
				abort();
			k++;
			pos = (size_t)(hit - o) + 1;
		}
		if (k != nvoff)
			abort();
		free(voff);
	}
	secret_buf_free(basic);
	free(basic_ph);
	evbuffer_free(out);
	evbuffer_free(pct);
	credhead_plan_free(&plan);
	free(head);
	return 0;
}
