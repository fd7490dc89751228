/*
 * proxy/credresp.c - scrubbing the response to a request that carried an
 * injected secret: every echo of a value (secrets/scrub.h lists the forms)
 * goes back to the sandbox as its placeholder, in the head and in the body.
 *
 * The body is decoded first (chunked framing, then gzip or deflate), scrubbed
 * as a stream (a value split across reads is still caught whole), and sent
 * chunked (HTTP/1.1) or until close (HTTP/1.0, and an h2 stream) without
 * Content-Encoding: scrubbing changes lengths, and re-compressing would buy
 * little.  The trailers of a chunked upstream body are scrubbed like the head.
 */
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/proxy_int.h"
#include "secrets/scrub.h"

#define SCRUB_STEP 16384               /* bytes taken from the decoded queue per round */
#define SCRUB_FINAL_MAX (16u << 20)    /* what the last flush of a body may add at once */
#define GRPC_PREFIX 5                  /* a gRPC message's compressed flag and length */

static struct scrub_set *
make_set(struct req *r)
{
	struct scrub_set *set = scrub_set_new();
	const uint8_t *val;
	const char *ph;
	size_t i, vlen;

	for (i = 0; i < r->nuses; i++) {
		ph = cred_placeholder(r->uses[i].e);
		val = cred_value_bytes(r->uses[i].v, &vlen);
		if (scrub_set_add_secret(set, val, vlen, ph, (unsigned)i) != 0)
			goto fail;
		if (r->uses[i].basic != NULL && r->uses[i].basic_ph != NULL &&
		    scrub_set_add_basic(set, r->uses[i].basic->p, r->uses[i].basic->len,
		                        (const uint8_t *)r->uses[i].basic_ph, strlen(r->uses[i].basic_ph), (unsigned)i) != 0)
			goto fail;
	}
	return set;
fail:
	scrub_set_free(set);
	return NULL;
}

struct scrub_set *
cred_scrub_set_new(struct req *r)
{
	return make_set(r);
}

/* "Content-Type: application/grpc", "application/grpc+proto", "application/grpc;...". */
static int
is_grpc(const struct h1_message *m)
{
	const struct h1_header *ct = h1_find_header(m, "content-type");

	return ct != NULL && ct->value_len >= 16 && strncasecmp(ct->value, "application/grpc", 16) == 0 &&
	       (ct->value_len == 16 || ct->value[16] == '+' || ct->value[16] == ';');
}

size_t
cred_resp_queue_max(const struct req *r)
{
	return r->grpc ? CRED_GRPC_MSG_MAX + GRPC_PREFIX : PROXY_HIGH_WATER / 2;
}

int
cred_resp_head(struct conn *c, struct evbuffer *head, const struct h1_message *m, struct evbuffer *cout)
{
	struct req *r = c->req;
	const struct h1_header *ce;
	char enc[32];

	/* one secret, no Basic credential: the value's own set (cred.c), else one for this response */
	if (r->scrub == NULL && r->nuses == 1 && r->uses[0].basic == NULL &&
	    (r->scrub_shared = cred_value_scrub_set(r->uses[0].v)) != NULL)
		r->scrub = (struct scrub_set *)r->scrub_shared;
	if (r->scrub == NULL && (r->scrub = make_set(r)) == NULL)
		return -1;
	if (scrub_buffer(r->scrub, evbuffer_pullup(head, -1), evbuffer_get_length(head), cout, &r->scrub_hits) != 0)
		return -1;
	if (m->framing == H1_BODY_NONE)
		return 0;
	ce = h1_find_header(m, "content-encoding");
	if (ce != NULL && !sluice_iov_ieq(ce->value, ce->value_len, "identity")) {
		snprintf(enc, sizeof(enc), "%.*s", (int)(ce->value_len < 31 ? ce->value_len : 31), ce->value);
		r->unzip = unzip_new(enc);
		if (r->unzip == NULL)
			return -2;  /* an encoding we cannot decode (we asked for gzip or deflate only) */
	}
	if (is_grpc(m)) {
		/* messages are scrubbed whole and re-prefixed; compressed ones cannot be (grpc-accept-encoding was dropped) */
		ce = h1_find_header(m, "grpc-encoding");
		if (r->unzip != NULL || (ce != NULL && !sluice_iov_ieq(ce->value, ce->value_len, "identity")))
			return -2;
		r->grpc = 1;
	}
	r->scrub_st = scrub_stream_new(r->scrub);
	r->scrub_in = evbuffer_new();
	r->scrub_plain = evbuffer_new();
	r->scrub_out = evbuffer_new();
	return 0;
}

/* Frames what the scrubber produced as one chunk (or raw, until close) into <cout>. */
static void
emit(struct req *r, struct evbuffer *cout)
{
	size_t n = evbuffer_get_length(r->scrub_out);

	if (n == 0)
		return;
	if (r->scrub_chunked)
		evbuffer_add_printf(cout, "%zx\r\n", n);
	evbuffer_add_buffer(cout, r->scrub_out);
	if (r->scrub_chunked)
		evbuffer_add(cout, "\r\n", 2);
}

/*
 * The end of a scrubbed body: the last chunk (HTTP/1.1) with the trailers of
 * a chunked upstream body, scrubbed whole like the head (a value echoed in a
 * trailer goes back as its placeholder too); an h2 stream's trailers,
 * scrubbed, go to its trailing HEADERS; an HTTP/1.0 client gets none.
 */
static int
end_body(struct conn *c, struct evbuffer *cout)
{
	struct req *r = c->req;
	struct evbuffer *t = r->resp_trailers, *s;
	size_t n = t != NULL ? evbuffer_get_length(t) : 0;
	int ret = 0;

	if (r->scrub_chunked) {
		evbuffer_add(cout, "0\r\n", 3);
		if (n > 0 && scrub_buffer(r->scrub, evbuffer_pullup(t, -1), n, cout, &r->scrub_hits) != 0)
			ret = -1;
		evbuffer_add(cout, "\r\n", 2);
	} else if (c->h2_stream && n > 0) {
		if ((s = evbuffer_new()) == NULL)
			fatalx("out of memory");
		if (scrub_buffer(r->scrub, evbuffer_pullup(t, -1), n, s, &r->scrub_hits) != 0)
			ret = -1;
		else
			h2srv_trailers(c, s);
		evbuffer_free(s);
	}
	if (n > 0)
		evbuffer_drain(t, n);
	return ret;
}

/*
 * A gRPC body is a sequence of length-prefixed messages (1 byte compressed
 * flag, 4 bytes big-endian length): scrubbing changes lengths, so each
 * message is scrubbed whole (it is held up to CRED_GRPC_MSG_MAX) and sent on
 * with a new prefix.  A compressed message, one over the bound, or a body
 * that ends inside a message fails the response.
 */
static int
grpc_pump(struct conn *c, int end, struct evbuffer *cout)
{
	struct req *r = c->req;
	uint8_t pre[GRPC_PREFIX];
	uint32_t len;
	size_t n;

	while (evbuffer_get_length(r->scrub_in) >= GRPC_PREFIX &&
	       evbuffer_get_length(cout) < (end ? SCRUB_FINAL_MAX : PROXY_HIGH_WATER)) {
		evbuffer_copyout(r->scrub_in, pre, GRPC_PREFIX);
		len = (uint32_t)pre[1] << 24 | (uint32_t)pre[2] << 16 | (uint32_t)pre[3] << 8 | pre[4];
		if (pre[0] != 0 || len > CRED_GRPC_MSG_MAX)
			return -1;
		if (evbuffer_get_length(r->scrub_in) < GRPC_PREFIX + (size_t)len)
			break;
		evbuffer_drain(r->scrub_in, GRPC_PREFIX);
		if (len > 0 && scrub_buffer(r->scrub, evbuffer_pullup(r->scrub_in, len), len, r->scrub_out,
		                            &r->scrub_hits) != 0)
			return -1;
		evbuffer_drain(r->scrub_in, len);
		n = evbuffer_get_length(r->scrub_out);
		if (n > UINT32_MAX)
			return -1;
		pre[1] = (uint8_t)(n >> 24);
		pre[2] = (uint8_t)(n >> 16);
		pre[3] = (uint8_t)(n >> 8);
		pre[4] = (uint8_t)n;
		evbuffer_prepend(r->scrub_out, pre, GRPC_PREFIX);
		emit(r, cout);
	}
	if (!end)
		return 0;
	if (evbuffer_get_length(r->scrub_in) > 0)
		return -1;  /* the body ended inside a message */
	return end_body(c, cout);
}

int
cred_resp_pump(struct conn *c, int end)
{
	struct req *r = c->req;
	struct evbuffer *cout = cio_out(c);
	size_t len, consumed, n;
	const uint8_t *p;
	int z = 0;

	if (r->grpc)
		return grpc_pump(c, end, cout);
	while ((len = evbuffer_get_length(r->scrub_in)) > 0 &&
	       (end ? evbuffer_get_length(cout) < SCRUB_FINAL_MAX : evbuffer_get_length(cout) < PROXY_HIGH_WATER)) {
		if (r->unzip == NULL) {
			/* unencoded: scrub straight from the queue's first chain, no copy */
			struct evbuffer_iovec v;
			if (evbuffer_peek(r->scrub_in, -1, NULL, &v, 1) < 1)
				break;
			if (scrub_stream_feed(r->scrub_st, v.iov_base, v.iov_len, r->scrub_out, &r->scrub_hits) != 0)
				return -1;
			evbuffer_drain(r->scrub_in, v.iov_len);
			emit(r, cout);
			continue;
		}
		n = len < SCRUB_STEP ? len : SCRUB_STEP;
		p = evbuffer_pullup(r->scrub_in, (ev_ssize_t)n);
		z = unzip_feed(r->unzip, p, n, r->scrub_plain, &consumed);
		if (z < 0)
			return -1;
		evbuffer_drain(r->scrub_in, consumed);
		if (z == 1 && evbuffer_get_length(r->scrub_in) > 0)
			return -1;  /* bytes after the end of the compressed stream */
		n = evbuffer_get_length(r->scrub_plain);
		if (n > 0 && scrub_stream_feed(r->scrub_st, evbuffer_pullup(r->scrub_plain, -1), n, r->scrub_out,
		                               &r->scrub_hits) != 0)
			return -1;
		evbuffer_drain(r->scrub_plain, n);
		emit(r, cout);
		if (consumed == 0 && z == 0)
			break;  /* the decoder wants more input than there is */
	}
	if (!end)
		return 0;
	if (evbuffer_get_length(r->scrub_in) > 0)
		return -1;  /* left over: a corrupt stream or an expansion past the bound */
	if (scrub_stream_end(r->scrub_st, r->scrub_out, &r->scrub_hits) != 0)
		return -1;
	emit(r, cout);
	return end_body(c, cout);
}

void
cred_resp_free(struct req *r)
{
	scrub_stream_free(r->scrub_st);
	if (r->scrub != r->scrub_shared)
		scrub_set_free(r->scrub);
	r->scrub_shared = NULL;
	unzip_free(r->unzip);
	if (r->scrub_in != NULL)
		evbuffer_free(r->scrub_in);
	if (r->scrub_plain != NULL)
		evbuffer_free(r->scrub_plain);
	if (r->scrub_out != NULL)
		evbuffer_free(r->scrub_out);
	r->scrub_st = NULL;
	r->scrub = NULL;
	r->unzip = NULL;
	r->scrub_in = r->scrub_plain = r->scrub_out = NULL;
}
