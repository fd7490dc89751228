/*
 * tests/fuzz/fuzz_h1_chunked.c - the chunked decoder on arbitrary bytes.
 *
 * The first byte picks the trailer bound and a piece size; the rest is
 * decoded whole and in pieces, and both must give the same body, trailers and
 * outcome.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/codec/h1_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	int ok;            /* 1 done, 0 needs more, -1 error */
	uint8_t *body;
	size_t body_len;
	uint8_t trailers[512];
	size_t trailers_len;
	size_t consumed;
};

/* Decodes <in>/<n> delivered <piece> bytes at a time (0: all at once). */
static void
decode(const uint8_t *in, size_t n, size_t piece, size_t max_trailers, struct outcome *o)
{
	struct h1_chunked c;
	const char *data, *tr, *err;
	size_t dlen, tlen, fed = 0, plen = 0;
	char *pending = malloc(n ? n : 1);
	int r, done;

	memset(o, 0, sizeof(*o));
	o->body = malloc(n ? n : 1);
	if (pending == NULL || o->body == NULL)
		abort();
	h1_chunked_init(&c, max_trailers);
	for (;;) {
		size_t add = piece == 0 ? n - fed : (n - fed < piece ? n - fed : piece);

		memcpy(pending + plen, in + fed, add);
		plen += add;
		fed += add;
		for (;;) {
			r = h1_chunked_decode(&c, pending, plen, &data, &dlen, &done, &tr, &tlen, &err);
			if (r == 0 || r < -2 || (r > 0 && (size_t)r > plen))
				abort();
			if (r == -1) {
				if (err == NULL)
					abort();
				o->ok = -1;
				goto out;
			}
			if (r == -2)
				break;
			if (dlen > 0) {
				if (data < pending || data + dlen > pending + r)
					abort();
				memcpy(o->body + o->body_len, data, dlen);
				o->body_len += dlen;
			}
			o->consumed += (size_t)r;
			if (done) {
				if (tlen > max_trailers || tlen > sizeof(o->trailers) || tr < pending ||
				    tr + tlen > pending + r)
					abort();
				memcpy(o->trailers, tr, tlen);
				o->trailers_len = tlen;
				o->ok = 1;
				goto out;
			}
			memmove(pending, pending + r, plen - (size_t)r);
			plen -= (size_t)r;
		}
		if (fed == n)
			goto out;
	}
out:
	free(pending);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b;
	size_t max_trailers, piece;

	if (size < 1)
		return 0;
	max_trailers = (size_t)(data[0] & 0x0f) * 32;
	piece = (size_t)(data[0] >> 4) + 1;
	decode(data + 1, size - 1, 0, max_trailers, &a);
	decode(data + 1, size - 1, piece, max_trailers, &b);
	if (a.ok != b.ok)
		abort();
	if (a.ok >= 0 && (a.body_len != b.body_len || memcmp(a.body, b.body, a.body_len) != 0 ||
	                  a.consumed != b.consumed))
		abort();
	if (a.ok == 1 && (a.trailers_len != b.trailers_len ||
	                  memcmp(a.trailers, b.trailers, a.trailers_len) != 0))
		abort();
	free(a.body);
	free(b.body);
	return 0;
}
