/*
 * tests/fuzz/fuzz_unzip.c - the gzip/deflate decoder on arbitrary bytes.
 *
 * The first byte picks the encoding, a piece size, and whether the rest is
 * decoded as it is or first compressed by zlib (a round trip that must give
 * it back exactly).  The input is decoded whole and in pieces, passing back
 * whatever a call left unconsumed; both must reach the same outcome (and, on
 * success, the same output), no call may append more than UNZIP_OUT_MAX or
 * consume more than it was given, and "all consumed, more wanted" must not be
 * answered while the stream's end is already in hand.
 */
#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "secrets/scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (64u << 20)  /* stop a run here: it is a bomb, and that is fine */

/* Decodes <in>/<n> in pieces of <piece> (0: all); returns 1, 0 (incomplete), -1, or 2 (bounded out). */
static int
decode(const char *enc, const uint8_t *in, size_t n, size_t piece, struct evbuffer *all)
{
	struct unzip *z = unzip_new(enc);
	struct evbuffer *out = evbuffer_new();
	size_t off = 0, avail = 0, used;
	int r = 0;

	if (z == NULL || out == NULL)
		abort();
	while (off < n) {
		size_t give;

		/* New input arrives only once the last piece is used up. */
		if (avail == 0)
			avail = piece == 0 || n - off < piece ? n - off : piece;
		give = avail;
		r = unzip_feed(z, in + off, give, out, &used);
		if (used > give || evbuffer_get_length(out) > UNZIP_OUT_MAX)
			abort();
		off += used;
		avail -= used;
		evbuffer_add_buffer(all, out);
		if (r < 0 || (r == 1 && off == n))
			break;  /* after 1, bytes left are passed again: they must give -1 */
		if (evbuffer_get_length(all) > OUT_MAX) {
			r = 2;
			break;
		}
	}
	unzip_free(z);
	evbuffer_free(out);
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *encs[] = {"gzip", "deflate"};
	struct evbuffer *a, *b;
	const char *enc;
	const uint8_t *in;
	uint8_t *packed = NULL;
	size_t n, piece;
	int ra, rb;

	if (size < 1)
		return 0;
	enc = encs[data[0] & 1];
	piece = (size_t)((data[0] >> 2) & 15) * 7;
	in = data + 1;
	n = size - 1;
	if (data[0] & 2) {
		/* Round trip: compress the rest with the wrapper bits 6-7 pick. */
		static const int wbits[] = {16 + MAX_WBITS, 16 + MAX_WBITS, MAX_WBITS, -MAX_WBITS};
		int w = wbits[data[0] >> 6];
		z_stream zs;
		size_t cap = compressBound((uLong)n) + 64;

		enc = w > 16 ? "gzip" : "deflate";
		packed = malloc(cap);
		memset(&zs, 0, sizeof(zs));
		if (packed == NULL || deflateInit2(&zs, 6, Z_DEFLATED, w, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			abort();
		zs.next_in = (Bytef *)(uintptr_t)in;
		zs.avail_in = (uInt)n;
		zs.next_out = packed;
		zs.avail_out = (uInt)cap;
		if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
			abort();
		n = cap - zs.avail_out;
		deflateEnd(&zs);
		in = packed;
	}
	a = evbuffer_new();
	b = evbuffer_new();
	ra = decode(enc, in, n, 0, a);
	rb = decode(enc, in, n, piece, b);
	if (ra != 2 && rb != 2) {
		if (ra != rb)
			abort();
		if (ra == 1 && (evbuffer_get_length(a) != evbuffer_get_length(b) ||
		                (evbuffer_get_length(a) > 0 &&
		                 memcmp(evbuffer_pullup(a, -1), evbuffer_pullup(b, -1), evbuffer_get_length(a)) != 0)))
			abort();
	}
	if (packed != NULL) {
		if (ra != 1 || evbuffer_get_length(a) != size - 1 ||
		    (size > 1 && memcmp(evbuffer_pullup(a, -1), data + 1, size - 1) != 0))
			abort();
		free(packed);
	}
	evbuffer_free(a);
	evbuffer_free(b);
	return 0;
}
