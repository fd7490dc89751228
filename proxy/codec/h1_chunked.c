/*
 * proxy/codec/h1_chunked.c - the chunked transfer-coding decoder (RFC 9112 7.1):
 * strict sizes, validated and dropped extensions, bounded trailers.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "common/sluice.h"
#include "proxy/codec/h1_parse.h"
#include "h1_int.h"

#define H1_CHUNK_SIZE_DIGITS_MAX 16             /* hex digits of a chunk size */
#define H1_CHUNK_SIZE_MAX (UINT64_C(1) << 62)
#define H1_CHUNK_LINE_MAX 4096                  /* chunk-size line with extensions and CRLF */

/* h1_chunked.state values; 0 is what h1_chunked_init and zeroing give. */
enum {
	CH_SIZE = 0,
	CH_DATA = 1,
	CH_DATA_CRLF = 2,
	CH_TRAILER = 3,
	CH_DONE = 4,
	CH_ERROR = 5,
};

static size_t
min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---- chunked transfer coding (RFC 9112 7.1) ---- */

void
h1_chunked_init(struct h1_chunked *c, size_t max_trailer_bytes)
{
	c->state = CH_SIZE;
	c->remaining = 0;
	c->max_trailer_bytes = max_trailer_bytes;
}

static size_t
ows_skip(const char *l, size_t n, size_t i)
{
	while (i < n && h1_is_ows(l[i]))
		i++;
	return i;
}

/*
 * chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ).
 * Returns 0 if <l>/<n> is exactly that, else -1.
 */
static int
chunk_ext_check(const char *l, size_t n)
{
	size_t i = 0, s, j;
	unsigned char c;

	while (i < n) {
		i = ows_skip(l, n, i);
		if (i == n || l[i] != ';')
			return -1;
		i = ows_skip(l, n, i + 1);
		for (s = i; i < n && h1_is_tchar((unsigned char)l[i]); i++)
			;
		if (i == s)
			return -1;
		j = ows_skip(l, n, i);
		if (j == n || l[j] != '=')
			continue;   /* a following ";" or the end; trailing BWS is refused above */
		i = ows_skip(l, n, j + 1);
		if (i < n && l[i] == '"') {
			for (i++;; i++) {
				if (i == n)
					return -1;
				c = (unsigned char)l[i];
				if (c == '"')
					break;
				if (c == '\\') {
					if (++i == n || !h1_is_field_byte((unsigned char)l[i]))
						return -1;
				} else if (!h1_is_field_byte(c)) {
					return -1;
				}
			}
			i++;
		} else {
			for (s = i; i < n && h1_is_tchar((unsigned char)l[i]); i++)
				;
			if (i == s)
				return -1;
		}
	}
	return 0;
}

/* chunk-size [chunk-ext], without CRLF.  Returns 0 with *<size>, or -1. */
static int
chunk_size_parse(const char *l, size_t n, uint64_t *size)
{
	uint64_t x = 0;
	size_t i;
	int v;

	for (i = 0; i < n && (v = sluice_hexval(l[i])) >= 0; i++) {
		if (i == H1_CHUNK_SIZE_DIGITS_MAX)
			return -1;
		x = (x << 4) | (uint64_t)v;
	}
	if (i == 0 || x > H1_CHUNK_SIZE_MAX)
		return -1;
	if (chunk_ext_check(l + i, n - i) != 0)
		return -1;
	*size = x;
	return 0;
}

/*
 * Finds the end of the trailer section at <p>/<avail>: field lines, then an
 * empty line.  The field lines may take <max> bytes.  Returns 1 with
 * *<fields_len>, 0 for more, -1 with *<err>.
 */
static int
trailers_find(const char *p, size_t avail, size_t max, size_t *fields_len, const char **err)
{
	size_t limit = max <= SIZE_MAX - 2 ? max + 2 : SIZE_MAX;
	size_t window = min_size(avail, limit), off = 0, n;
	struct h1_header h;
	int r;

	for (;;) {
		r = h1_line_find(p + off, window - off, SIZE_MAX, &n);
		if (r == LINE_MORE) {
			if (avail >= limit) {
				*err = "trailer section too large";
				return -1;
			}
			return 0;
		}
		if (r != LINE_OK) {
			*err = "bare CR or LF in trailers";
			return -1;
		}
		if (n == 0) {
			*fields_len = off;
			return 1;
		}
		if (h1_field_parse(p + off, n, &h, err) != 0)
			return -1;
		off += n + 2;
	}
}

/*
 * One step of the decoder at <p>/<avail>.  Returns bytes consumed (>= 0),
 * -2 for more, -1 with *<err>.  <data> gets a span when the step is data.
 */
static long
chunked_step(struct h1_chunked *c, const char *p, size_t avail, const char **data,
             size_t *data_len, const char **trailers, size_t *trailers_len, const char **err)
{
	uint64_t size;
	size_t n;
	int r;

	switch (c->state) {
	case CH_SIZE:
		r = h1_line_find(p, avail, H1_CHUNK_LINE_MAX - 1, &n);
		if (r == LINE_MORE)
			return -2;
		if (r != LINE_OK) {
			*err = r == LINE_LONG ? "chunk size line too long" : "bare CR or LF in chunk size line";
			return -1;
		}
		if (chunk_size_parse(p, n, &size) != 0) {
			*err = "bad chunk size line";
			return -1;
		}
		c->remaining = size;
		c->state = size ? CH_DATA : CH_TRAILER;
		return (long)(n + 2);
	case CH_DATA:
		if (avail == 0)
			return -2;
		n = (size_t)((uint64_t)avail < c->remaining ? (uint64_t)avail : c->remaining);
		*data = p;
		*data_len = n;
		c->remaining -= n;
		if (c->remaining == 0)
			c->state = CH_DATA_CRLF;
		return (long)n;
	case CH_DATA_CRLF:
		if (avail >= 1 && p[0] != '\r') {
			*err = "missing CRLF after chunk data";
			return -1;
		}
		if (avail < 2)
			return -2;
		if (p[1] != '\n') {
			*err = "missing CRLF after chunk data";
			return -1;
		}
		c->state = CH_SIZE;
		return 2;
	case CH_TRAILER:
		r = trailers_find(p, avail, c->max_trailer_bytes, &n, err);
		if (r <= 0)
			return r == 0 ? -2 : -1;
		*trailers = p;
		*trailers_len = n;
		c->state = CH_DONE;
		return (long)(n + 2);
	case CH_DONE:
		*err = "chunked body already complete";
		return -1;
	default:
		*err = "chunked decoder in error";
		return -1;
	}
}

int
h1_chunked_decode(struct h1_chunked *c, const char *buf, size_t len,
                  const char **data, size_t *data_len, int *done,
                  const char **trailers, size_t *trailers_len, const char **err)
{
	size_t off = 0;
	long r;
	int had_data = 0;

	*data = NULL;
	*data_len = 0;
	*done = 0;
	*trailers = NULL;
	*trailers_len = 0;
	*err = NULL;
	if (len > INT_MAX)
		len = INT_MAX;   /* the return value is an int; the rest comes next call */
	for (;;) {
		if (c->state == CH_DATA && had_data)
			break;
		had_data |= c->state == CH_DATA;
		r = chunked_step(c, buf + off, len - off, data, data_len, trailers, trailers_len, err);
		if (r == -2)
			break;
		if (r == -1) {
			/*
			 * Hand back what was consumed before the error; the next call
			 * starts at the offending bytes and reports them.
			 */
			if (off > 0) {
				*err = NULL;
				break;
			}
			c->state = CH_ERROR;
			return -1;
		}
		off += (size_t)r;
		if (c->state == CH_DONE) {
			*done = 1;
			break;
		}
	}
	return off > 0 ? (int)off : -2;
}
