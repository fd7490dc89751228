/*
 * proxy/cred/credresp.c - scrubbing a response from a host that secrets are
 * bound to (credscrub.c gives the set): every echo of a value
 * (secrets/scrub.h lists the forms) goes back to the sandbox as its
 * placeholder, in the head, interim heads, the body and the trailers.
 *
 * The body is decoded first (chunked framing, then gzip or deflate), scrubbed
 * as a stream (a value split across reads is still caught whole), and sent
 * chunked (HTTP/1.1) or until close (HTTP/1.0, and an h2 stream) without
 * Content-Encoding: scrubbing changes lengths, and re-compressing would buy
 * little.  A small unencoded body with a Content-Length (most API answers)
 * is held whole instead, and goes out with its head and its new length, so
 * that clients which need a length, and HTTP/1.0 keep-alive, keep working.
 * The trailers of a chunked upstream body are scrubbed like the head.
 */
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"
#include "proxy/core/h1_out.h"
#include "secrets/scrub.h"

#define SCRUB_STEP 16384               /* bytes taken from the decoded queue per round */
#define SCRUB_FINAL_MAX (16u << 20)    /* what the last flush of a body may add at once */
#define GRPC_PREFIX 5                  /* a gRPC message's compressed flag and length */

/* The index of <s> in <pol> (its tag in scrub sets), or SCRUB_TAGS if it is not there. */
static unsigned
secret_tag(const struct policy *pol, const struct policy_secret *s)
{
	size_t i;

	for (i = 0; i < policy_secret_count(pol) && i < SCRUB_TAGS; i++)
		if (policy_secret_get(pol, i) == s)
			return (unsigned)i;
	return SCRUB_TAGS;
}

/*
 * The host's set serves unless this request holds what it lacks: an exact
 * Basic credential ("user:value": its base64 is replaced whole, so that its
 * echo decodes to "user:placeholder"), or a value taken after the set was
 * built.  Then a copy gets those added; it is this request's alone.
 */
const struct scrub_set *
cred_resp_set(struct conn *c, int *err)
{
	struct req *r = c->req;
	struct cred_use *u;
	const uint8_t *val;
	size_t i, vlen;
	unsigned tag;
	int extra = 0;

	*err = 0;
	if (r->cred->scrub != NULL)
		return r->cred->scrub;
	if (r->cred->hscrub == NULL) {
		*err = r->cred->nuses > 0;  /* injected toward a host with no set: never relay its answer unscrubbed */
		return NULL;
	}
	for (i = 0; i < r->cred->nuses && !extra; i++)
		extra = r->cred->uses[i].basic != NULL || !host_scrub_has_value(r->cred->hscrub, r->cred->uses[i].v);
	if (!extra)
		return r->cred->scrub = host_scrub_set(r->cred->hscrub);
	r->cred->scrub_own = scrub_set_dup(host_scrub_set(r->cred->hscrub));
	for (i = 0; i < r->cred->nuses; i++) {
		u = &r->cred->uses[i];
		if ((tag = secret_tag(c->pol, u->s)) == SCRUB_TAGS)
			goto fail;
		if (!host_scrub_has_value(r->cred->hscrub, u->v)) {
			val = cred_value_bytes(u->v, &vlen);
			if (scrub_set_add_secret(r->cred->scrub_own, val, vlen, cred_placeholder(u->e), tag) != 0)
				goto fail;
		}
		if (u->basic != NULL && u->basic_ph != NULL &&
		    scrub_set_add_basic(r->cred->scrub_own, u->basic->p, u->basic->len, (const uint8_t *)u->basic_ph,
		                        strlen(u->basic_ph), tag) != 0)
			goto fail;
	}
	return r->cred->scrub = r->cred->scrub_own;
fail:
	scrub_set_free(r->cred->scrub_own);
	r->cred->scrub_own = NULL;
	*err = 1;
	return NULL;
}

int
cred_resp_scrub_head(struct conn *c, struct evbuffer *head, struct evbuffer *cout)
{
	const struct scrub_set *set;
	struct evbuffer *t;
	int err, ret;

	if ((set = cred_resp_set(c, &err)) == NULL)
		return err ? -1 : evbuffer_add_buffer(cout, head);
	/* scrubbed aside: a failure leaves nothing of the head in <cout>, so the client can still get a 502 */
	if ((t = evbuffer_new()) == NULL)
		return -1;
	ret = scrub_buffer(set, evbuffer_pullup(head, -1), evbuffer_get_length(head), t, &c->req->cred->scrub_hits);
	if (ret == 0)
		ret = evbuffer_add_buffer(cout, t);
	evbuffer_free(t);
	return ret;
}

/*
 * The body's decoder: none for no Content-Encoding or "identity"; gzip,
 * x-gzip or deflate (what the request asked for: http.c rewrites every
 * Accept-Encoding).  A second Content-Encoding field, a coding list, or any
 * other coding cannot be scrubbed: -2 (refused, 502).  0 otherwise.
 */
static int
body_decoder(struct req *r, const struct h1_message *m)
{
	const struct h1_header *ce = NULL;
	char enc[16];
	size_t i, n = 0;

	for (i = 0; i < m->nheaders; i++)
		if (sluice_iov_ieq(m->headers[i].name, m->headers[i].name_len, "content-encoding")) {
			ce = &m->headers[i];
			n++;
		}
	if (n == 0)
		return 0;
	if (n > 1)
		return -2;  /* the sandbox would undo a coding the scrubber never saw */
	if (sluice_iov_ieq(ce->value, ce->value_len, "identity"))
		return 0;
	if (ce->value_len >= sizeof(enc))
		return -2;
	memcpy(enc, ce->value, ce->value_len);
	enc[ce->value_len] = '\0';
	r->cred->unzip = unzip_new(enc);  /* NULL for a list ("gzip, br") or a coding not asked for */
	return r->cred->unzip != NULL ? 0 : -2;
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
	if (r->cred->scrub_whole)
		return CRED_RESP_WHOLE_MAX + 1;
	return r->cred->grpc ? CRED_GRPC_MSG_MAX + GRPC_PREFIX : PROXY_HIGH_WATER / 2;
}

int
cred_resp_holds(const struct h1_message *m)
{
	const struct h1_header *ce = h1_find_header(m, "content-encoding");

	return m->framing == H1_BODY_LENGTH && m->content_length <= CRED_RESP_WHOLE_MAX && !is_grpc(m) &&
	       (ce == NULL || sluice_iov_ieq(ce->value, ce->value_len, "identity"));
}

int
cred_resp_head(struct conn *c, struct evbuffer *head, const struct h1_message *m, struct evbuffer *cout)
{
	struct req *r = c->req;
	const struct h1_header *ce;

	/* what cannot be scrubbed is refused before anything of the response goes to the client */
	if (m->framing != H1_BODY_NONE && body_decoder(r, m) != 0)
		return -2;
	if (m->framing != H1_BODY_NONE && is_grpc(m)) {
		/* messages are scrubbed whole and re-prefixed; compressed ones cannot be (grpc-accept-encoding was dropped) */
		ce = h1_find_header(m, "grpc-encoding");
		if (r->cred->unzip != NULL || (ce != NULL && !sluice_iov_ieq(ce->value, ce->value_len, "identity")))
			return -2;
		r->cred->grpc = 1;
	}
	if (r->cred->scrub_whole) {
		/* the head waits for the body: its Content-Length is known once the body is scrubbed */
		struct evbuffer *t = evbuffer_new();
		int ret;

		r->cred->scrub_head = evbuffer_new();
		if (t == NULL || r->cred->scrub_head == NULL)
			fatalx("out of memory");
		/* built ending in the blank line: the length goes before it */
		evbuffer_remove_buffer(head, t, evbuffer_get_length(head) - 2);
		ret = cred_resp_scrub_head(c, t, r->cred->scrub_head);
		evbuffer_free(t);
		if (ret != 0 || r->cred->scrub == NULL)
			return -1;
	} else if (cred_resp_scrub_head(c, head, cout) != 0 || r->cred->scrub == NULL) {
		return -1;
	}
	if (m->framing == H1_BODY_NONE)
		return 0;
	r->cred->scrub_st = scrub_stream_new(r->cred->scrub);
	r->cred->scrub_in = evbuffer_new();
	r->cred->scrub_plain = evbuffer_new();
	r->cred->scrub_out = evbuffer_new();
	return 0;
}

/* Frames what the scrubber produced as one chunk (or raw, until close) into <cout>. */
static void
emit(struct req *r, struct evbuffer *cout)
{
	size_t n = evbuffer_get_length(r->cred->scrub_out);

	if (n == 0 || r->cred->scrub_whole)
		return;  /* nothing yet, or a body held whole until its end (whole_end) */
	if (r->cred->scrub_chunked)
		h1_out_chunk_size(cout, n);
	evbuffer_add_buffer(cout, r->cred->scrub_out);
	if (r->cred->scrub_chunked)
		evbuffer_add(cout, SLUICE_LIT("\r\n"));
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

	if (r->cred->scrub_chunked) {
		evbuffer_add(cout, SLUICE_LIT("0\r\n"));
		if (n > 0 && scrub_buffer(r->cred->scrub, evbuffer_pullup(t, -1), n, cout, &r->cred->scrub_hits) != 0)
			ret = -1;
		evbuffer_add(cout, SLUICE_LIT("\r\n"));
	} else if (n > 0 && conn_ops(c)->stream) {  /* HTTP/1.0 (unchunked): no framing carries them */
		if ((s = evbuffer_new()) == NULL)
			fatalx("out of memory");
		if (scrub_buffer(r->cred->scrub, evbuffer_pullup(t, -1), n, s, &r->cred->scrub_hits) != 0)
			ret = -1;
		else
			(void)conn_ops(c)->trailers(c, s);
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

	while (evbuffer_get_length(r->cred->scrub_in) >= GRPC_PREFIX &&
	       evbuffer_get_length(cout) < (end ? SCRUB_FINAL_MAX : PROXY_HIGH_WATER)) {
		evbuffer_copyout(r->cred->scrub_in, pre, GRPC_PREFIX);
		len = (uint32_t)pre[1] << 24 | (uint32_t)pre[2] << 16 | (uint32_t)pre[3] << 8 | pre[4];
		if (pre[0] != 0 || len > CRED_GRPC_MSG_MAX)
			return -1;
		if (evbuffer_get_length(r->cred->scrub_in) < GRPC_PREFIX + (size_t)len)
			break;
		evbuffer_drain(r->cred->scrub_in, GRPC_PREFIX);
		if (len > 0 && scrub_buffer(r->cred->scrub, evbuffer_pullup(r->cred->scrub_in, len), len, r->cred->scrub_out,
		                            &r->cred->scrub_hits) != 0)
			return -1;
		evbuffer_drain(r->cred->scrub_in, len);
		n = evbuffer_get_length(r->cred->scrub_out);
		if (n > UINT32_MAX)
			return -1;
		pre[1] = (uint8_t)(n >> 24);
		pre[2] = (uint8_t)(n >> 16);
		pre[3] = (uint8_t)(n >> 8);
		pre[4] = (uint8_t)n;
		evbuffer_prepend(r->cred->scrub_out, pre, GRPC_PREFIX);
		emit(r, cout);
	}
	if (!end)
		return 0;
	if (evbuffer_get_length(r->cred->scrub_in) > 0)
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

	if (r->cred->grpc)
		return grpc_pump(c, end, cout);
	while ((len = evbuffer_get_length(r->cred->scrub_in)) > 0 &&
	       (end ? evbuffer_get_length(cout) < SCRUB_FINAL_MAX : evbuffer_get_length(cout) < PROXY_HIGH_WATER)) {
		if (r->cred->unzip == NULL) {
			/* unencoded: scrub straight from the queue's first chain, no copy */
			struct evbuffer_iovec v;
			if (evbuffer_peek(r->cred->scrub_in, -1, NULL, &v, 1) < 1)
				break;
			if (scrub_stream_feed(r->cred->scrub_st, v.iov_base, v.iov_len, r->cred->scrub_out, &r->cred->scrub_hits) != 0)
				return -1;
			evbuffer_drain(r->cred->scrub_in, v.iov_len);
			emit(r, cout);
			continue;
		}
		n = len < SCRUB_STEP ? len : SCRUB_STEP;
		p = evbuffer_pullup(r->cred->scrub_in, (ev_ssize_t)n);
		z = unzip_feed(r->cred->unzip, p, n, r->cred->scrub_plain, &consumed);
		if (z < 0)
			return -1;
		evbuffer_drain(r->cred->scrub_in, consumed);
		if (z == 1 && evbuffer_get_length(r->cred->scrub_in) > 0)
			return -1;  /* bytes after the end of the compressed stream */
		n = evbuffer_get_length(r->cred->scrub_plain);
		if (n > 0 && scrub_stream_feed(r->cred->scrub_st, evbuffer_pullup(r->cred->scrub_plain, -1), n, r->cred->scrub_out,
		                               &r->cred->scrub_hits) != 0)
			return -1;
		evbuffer_drain(r->cred->scrub_plain, n);
		emit(r, cout);
		if (consumed == 0 && z == 0)
			break;  /* the decoder wants more input than there is */
	}
	if (!end)
		return 0;
	if (evbuffer_get_length(r->cred->scrub_in) > 0)
		return -1;  /* left over: a corrupt stream or an expansion past the bound */
	if (scrub_stream_end(r->cred->scrub_st, r->cred->scrub_out, &r->cred->scrub_hits) != 0)
		return -1;
	if (r->cred->scrub_whole) {
		/* the whole scrubbed body: now its length is known, and the head goes out with it */
		evbuffer_add_buffer(cout, r->cred->scrub_head);
		h1_out_uint_field(cout, SLUICE_LIT("Content-Length"), evbuffer_get_length(r->cred->scrub_out), 1);
		evbuffer_add_buffer(cout, r->cred->scrub_out);
		evbuffer_free(r->cred->scrub_head);
		r->cred->scrub_head = NULL;
		return 0;
	}
	emit(r, cout);
	return end_body(c, cout);
}

void
cred_resp_free(struct req *r)
{
	scrub_stream_free(r->cred->scrub_st);
	scrub_set_free(r->cred->scrub_own);
	host_scrub_drop(r->cred->hscrub);
	r->cred->scrub_own = NULL;
	r->cred->hscrub = NULL;
	unzip_free(r->cred->unzip);
	if (r->cred->scrub_in != NULL)
		evbuffer_free(r->cred->scrub_in);
	if (r->cred->scrub_plain != NULL)
		evbuffer_free(r->cred->scrub_plain);
	if (r->cred->scrub_out != NULL)
		evbuffer_free(r->cred->scrub_out);
	if (r->cred->scrub_head != NULL)
		evbuffer_free(r->cred->scrub_head);
	r->cred->scrub_head = NULL;
	r->cred->scrub_st = NULL;
	r->cred->scrub = NULL;
	r->cred->unzip = NULL;
	r->cred->scrub_in = r->cred->scrub_plain = r->cred->scrub_out = NULL;
}
