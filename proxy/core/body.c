/*
 * proxy/core/body.c - moving a message body as framed (body.h): counted by
 * Content-Length or chunked, re-encoded or decoded, trailers kept apart.
 * Beside the record (conn.h) because the session, cred/ and judge/ all read
 * bodies through it.
 */
#include <stdio.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/core/body.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/h1_out.h"

#define BODY_CHUNK_PULL 16384   /* bytes made contiguous for one chunked-decoder step */

/* Moves up to <*left> bytes of a Content-Length body from <in> to <out>; 1 once none are left. */
int
body_move_counted(struct evbuffer *in, struct evbuffer *out, uint64_t *left, uint64_t *bytes)
{
	size_t n = evbuffer_get_length(in);

	if (n > *left)
		n = (size_t)*left;
	evbuffer_remove_buffer(in, out, n);
	*left -= n;
	*bytes += n;
	return *left == 0;
}

/*
 * One chunked-decoder step from <in> to <out>; re-encodes when <reencode>.
 * The trailer section goes to *<trailers> (created on demand) when that is
 * given, and the caller ends the body; else, re-encoding, it ends the body
 * inline ("0" CRLF trailers CRLF).  1 progress, 0 wait, -1 error.
 */
int
body_chunked_step(struct evbuffer *in, struct evbuffer *out, struct h1_chunked *st, int reencode, uint64_t *bytes,
             int *done, struct evbuffer **trailers, const char **err)
{
	size_t len = evbuffer_get_length(in), cap = len < BODY_CHUNK_PULL ? len : BODY_CHUNK_PULL;
	const char *p, *data = NULL, *tr = NULL;
	size_t dlen = 0, tlen = 0, off;
	char tbuf[PROXY_TRAILER_MAX + 2];
	int n;

	if (len == 0)
		return 0;
	p = (const char *)evbuffer_pullup(in, (ev_ssize_t)cap);
	n = h1_chunked_decode(st, p, cap, &data, &dlen, done, &tr, &tlen, err);
	if (n == -2) {
		if (cap == BODY_CHUNK_PULL) {
			*err = "chunk framing line too long";
			return -1;
		}
		return 0;
	}
	if (n < 0)
		return -1;
	/* one call may return the last data span and the end of the body together;
	 * the trailers point into <in>, so keep them before draining it */
	if (*done && tlen > 0) {
		if (tlen > sizeof(tbuf)) {
			*err = "trailers too large";
			return -1;
		}
		memcpy(tbuf, tr, tlen);
	}
	off = dlen > 0 ? (size_t)(data - p) : 0;
	if (dlen > 0) {
		if (reencode)
			h1_out_chunk_size(out, dlen);
		evbuffer_drain(in, off);
		evbuffer_remove_buffer(in, out, dlen);
		if (reencode)
			evbuffer_add(out, SLUICE_LIT("\r\n"));
		*bytes += dlen;
	}
	if (*done && trailers != NULL) {
		if (tlen > 0) {
			if (*trailers == NULL && (*trailers = evbuffer_new()) == NULL)
				fatalx("out of memory");
			evbuffer_add(*trailers, tbuf, tlen);
		}
	} else if (*done && reencode) {
		evbuffer_add(out, SLUICE_LIT("0\r\n"));
		if (tlen > 0)
			evbuffer_add(out, tbuf, tlen);
		evbuffer_add(out, SLUICE_LIT("\r\n"));
	}
	evbuffer_drain(in, (size_t)n - off - dlen);
	return 1;
}

int
req_body_move(struct conn *c, struct evbuffer *in, struct evbuffer *out, int reencode, const char **err)
{
	struct req *r = c->req;

	if (r->body_done || evbuffer_get_length(in) == 0)
		return 0;
	if (r->body == H1_BODY_LENGTH) {
		r->body_done = body_move_counted(in, out, &r->body_left, &r->bytes_up);
		return 1;
	}
	/* a body held or searched for placeholders (not re-encoded) keeps its trailers to be searched, never sent */
	return body_chunked_step(in, out, &r->body_chunk, reencode, &r->bytes_up, &r->body_done, reencode ? NULL : &r->req_trailers,
	                    err);
}

int
req_body_hold(struct conn *c, struct evbuffer *in, struct refusal *rf)
{
	const char *err = NULL;
	int p = req_body_move(c, in, c->req->hold, 0, &err);

	if (p < 0)
		return refusal_close(rf, 400, REFUSAL_BAD_REQUEST, "http", err != NULL ? err : "malformed chunked request body");
	return p;
}
