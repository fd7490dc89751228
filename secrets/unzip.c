/*
 * secrets/unzip.c - Content-Encoding decoders (gzip, x-gzip, deflate) so that
 * a compressed response can be scrubbed.  Output per call is capped, so a
 * decompression bomb only streams as fast as the sandbox drains it.
 *
 * zlib's window and state hold decoded text, which may hold a secret: they
 * are allocated through our own hooks and wiped before they are freed.
 */
#include "secrets/scrub.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "common/sluice.h"

#define UNZIP_STEP_MIN 4096        /* output reserved for the first inflate() call: a small piece gives little */
#define UNZIP_STEP_MAX (64 * 1024) /* ... doubling up to this while the output keeps filling it */

enum unzip_kind { UNZIP_GZIP = 1, UNZIP_DEFLATE = 2 };
enum unzip_state { UNZIP_RUNNING = 0, UNZIP_ENDED = 1, UNZIP_FAILED = 2 };

struct unzip {
	z_stream zs;
	enum unzip_kind kind;
	enum unzip_state state;
	int inited;        /* inflateInit2() done */
	uint8_t hdr;       /* deflate: a lone first byte, kept until the second tells the wrapper */
	int have_hdr;
	int skip_one;      /* the caller's next first byte was consumed already (see unzip_feed) */
	uint8_t skip_byte;
};

/* zlib allocation hooks: a size header, so that zfree can wipe. */
static voidpf
zalloc_wiped(voidpf opaque, uInt items, uInt size)
{
	size_t n;
	size_t *p;

	(void)opaque;
	if (size != 0 && items > (SIZE_MAX - sizeof(size_t) * 2) / size)
		return Z_NULL;
	n = (size_t)items * size;
	p = try_malloc(n + sizeof(size_t) * 2);  /* two words keep the block 16-byte aligned */
	if (p == NULL)
		return Z_NULL;
	p[0] = n;
	return p + 2;
}

static void
zfree_wiped(voidpf opaque, voidpf address)
{
	size_t *p;

	(void)opaque;
	if (address == Z_NULL)
		return;
	p = (size_t *)address - 2;
	sluice_wipe(p, p[0] + sizeof(size_t) * 2);
	free(p);
}

struct unzip *
unzip_new(const char *encoding)
{
	struct unzip *z;

	if (encoding == NULL)
		return NULL;
	z = xcalloc(1, sizeof(*z));
	z->zs.zalloc = zalloc_wiped;
	z->zs.zfree = zfree_wiped;
	z->zs.opaque = Z_NULL;
	if (strcasecmp(encoding, "gzip") == 0 || strcasecmp(encoding, "x-gzip") == 0) {
		z->kind = UNZIP_GZIP;
		if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK) {
			free(z);
			return NULL;
		}
		z->inited = 1;
	} else if (strcasecmp(encoding, "deflate") == 0) {
		z->kind = UNZIP_DEFLATE;  /* the wrapper is known from the first two bytes */
	} else {
		free(z);
		return NULL;
	}
	return z;
}

void
unzip_free(struct unzip *z)
{
	if (z == NULL)
		return;
	if (z->inited)
		inflateEnd(&z->zs);
	sluice_wipe(z, sizeof(*z));
	free(z);
}

/* RFC 1950: CM 8, a window of at most 32 KiB, and the header check. */
static int
zlib_header(uint8_t cmf, uint8_t flg)
{
	return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((unsigned)cmf << 8 | flg) % 31 == 0;
}

/*
 * Inflates <in>/<len> into <out> while *produced stays under UNZIP_OUT_MAX.
 * *used is the input consumed.  0 (input used up, or the output cap
 * reached), 1 (the stream ended), -1 (corrupt, or out of memory).
 */
static int
run(struct unzip *z, const uint8_t *in, size_t len, struct evbuffer *out, size_t *produced, size_t *used)
{
	struct evbuffer_iovec v;
	size_t want, got, step;
	int rc;

	step = len < UNZIP_STEP_MAX / 4 ? len * 4 : UNZIP_STEP_MAX;
	if (step < UNZIP_STEP_MIN)
		step = UNZIP_STEP_MIN;

	z->zs.next_in = (Bytef *)(uintptr_t)in;
	z->zs.avail_in = 0;
	*used = 0;
	for (;;) {
		if (z->zs.avail_in == 0) {
			/* avail_in is a uInt: hand the input over in slices. */
			size_t slice = len - *used;

			if (slice > UINT32_MAX / 2)
				slice = UINT32_MAX / 2;
			z->zs.next_in = (Bytef *)(uintptr_t)(in + *used);
			z->zs.avail_in = (uInt)slice;
		}
		if (*produced >= UNZIP_OUT_MAX)
			return 0;
		want = UNZIP_OUT_MAX - *produced;
		if (want > step)
			want = step;
		if (evbuffer_reserve_space(out, (ev_ssize_t)want, &v, 1) < 1)
			return -1;
		if (v.iov_len < want)
			want = v.iov_len;
		z->zs.next_out = v.iov_base;
		z->zs.avail_out = (uInt)want;
		{
			uInt before = z->zs.avail_in;

			rc = inflate(&z->zs, Z_NO_FLUSH);
			*used += before - z->zs.avail_in;
		}
		got = want - z->zs.avail_out;
		v.iov_len = got;
		if (evbuffer_commit_space(out, &v, got > 0 ? 1 : 0) != 0)
			return -1;
		*produced += got;
		if (z->zs.avail_out == 0 && step < UNZIP_STEP_MAX)
			step *= 2;
		if (rc == Z_STREAM_END)
			return 1;
		if (rc == Z_BUF_ERROR && got == 0 && *used == len)
			return 0;  /* no progress: it wants input */
		if (rc != Z_OK)
			return -1;
		if (*used == len && z->zs.avail_in == 0 && z->zs.avail_out > 0)
			return 0;  /* all input decoded and nothing left inside */
	}
}

int
unzip_feed(struct unzip *z, const uint8_t *in, size_t len, struct evbuffer *out, size_t *consumed)
{
	size_t off = 0, produced = 0, used = 0;
	int rc = 0;

	*consumed = 0;
	if (z->state == UNZIP_FAILED)
		return -1;
	if (z->state == UNZIP_ENDED) {
		if (len == 0)
			return 1;
		z->state = UNZIP_FAILED;
		return -1;
	}
	if (in == NULL)
		len = 0;
	if (z->skip_one && len > 0) {
		if (in[0] != z->skip_byte) {
			z->state = UNZIP_FAILED;
			return -1;
		}
		z->skip_one = 0;
		off = 1;
	}
	if (!z->inited) {
		uint8_t b0, b1;
		int wbits;

		if (!z->have_hdr && len - off >= 1) {
			z->hdr = in[off++];
			z->have_hdr = 1;
		}
		if (!z->have_hdr || len - off < 1) {
			*consumed = off;
			return 0;
		}
		b0 = z->hdr;
		b1 = in[off];
		wbits = zlib_header(b0, b1) ? MAX_WBITS : -MAX_WBITS;
		if (inflateInit2(&z->zs, wbits) != Z_OK) {
			z->state = UNZIP_FAILED;
			return -1;
		}
		z->inited = 1;
		/* The kept first byte goes in alone: one byte cannot finish a block, nor a stream. */
		rc = run(z, &b0, 1, out, &produced, &used);
		if (rc != 0 || used != 1) {
			z->state = UNZIP_FAILED;
			return -1;
		}
	}
	rc = run(z, in + off, len - off, out, &produced, &used);
	off += used;
	if (rc < 0) {
		z->state = UNZIP_FAILED;
		return -1;
	}
	if (rc == 1) {
		*consumed = off;
		if (off < len) {
			z->state = UNZIP_FAILED;  /* bytes after the end of the stream */
			return -1;
		}
		z->state = UNZIP_ENDED;
		return 1;
	}
	if (produced >= UNZIP_OUT_MAX && off == len && off > 0) {
		/*
		 * Output may still be pending inside zlib, yet all the input is
		 * used: a caller that sees "all consumed" would wait for input
		 * that may never come.  Report the last byte unconsumed; the
		 * caller passes it again, and it is skipped then.
		 */
		z->skip_one = 1;
		z->skip_byte = in[off - 1];
		off--;
	}
	*consumed = off;
	return 0;
}
