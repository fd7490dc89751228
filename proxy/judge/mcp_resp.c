/*
 * proxy/judge/mcp_resp.c - MCP responses: list results filtered in
 * application/json answers and in the events of text/event-stream answers
 * (proxy/judge/mcp_resp.h says what passes, what is refused, the bounds).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>

#include "common/bytescan.h"
#include "common/fold.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/core/conn.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/codec/sse.h"
#include "proxy/net/net.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/judge/mcp_req.h"

/*
 * The last text the scanner decided, kept to answer its repeats: a text that
 * differs from it only in the id (a server answering tools/list again, and
 * every event of a stream of list results) gets the same decision without
 * being read again (repeat_of).  Texts of at most MCP_RESP_LAST_MAX bytes.
 */
#define MCP_RESP_LAST_MAX 4096u
#define MCP_RESP_LAST_ID_MAX 64u /* bytes of an id token a repeat may have */

struct mcp_resp_last {
	const struct policy *pol;         /* the snapshot and host it was decided under (the conn's, for the answer) */
	const struct policy_host *entry;
	char *in;                         /* the text (capacity MCP_RESP_LAST_MAX); inlen 0: none kept */
	size_t inlen;
	size_t id_at, id_len;             /* its id token */
	int id_string;
	int put;                          /* what filter_scan answered: 0 passed as it is, 1 rewritten */
	char *out;                        /* put 1: what it became (capacity MCP_RESP_LAST_MAX), the id at out_id */
	size_t outlen, out_id;
	long removed;
	enum policy_mcp_method list;
	char *hit;                        /* the rendering of the last repeat (capacity MCP_RESP_LAST_MAX + ID_MAX) */
};

struct mcp_resp {
	enum mcp_resp_kind kind;
	struct evbuffer *in;            /* de-framed body bytes from the relay */
	struct evbuffer *out;           /* filtered bytes for the relay */
	struct sse_parser sse;          /* MCP_RESP_SSE */
	long removed;                   /* entries removed over the whole answer */
	enum policy_mcp_method list;    /* the last list filtered, for the record */
	struct mcp_frame frame;         /* the relay's */
	struct policy_mcp_scan scan;    /* the list-result scanner, reused for every text of the answer */
	char *dumped;                   /* the jansson path's last rewritten text */
	struct mcp_resp_last last;      /* the scanner's last decision, for its repeats */
};

/* The media type of <m>'s Content-Type is <type> (case-insensitive, parameters ignored). */
static int
media_is(const struct h1_message *m, const char *type)
{
	const struct h1_header *ct = h1_find_header(m, "content-type");
	size_t n = 0, tl = strlen(type);

	if (ct == NULL)
		return 0;
	while (n < ct->value_len && ct->value[n] != ';' && ct->value[n] != ' ' && ct->value[n] != '\t')
		n++;
	return n == tl && strncasecmp(ct->value, type, tl) == 0;
}

int
mcp_resp_begin(struct conn *c, const struct h1_message *m)
{
	struct req *r = c->req;
	const struct h1_header *ce;
	const char *endpoint;
	struct mcp_resp *s;
	int code, kind;

	if (m->framing == H1_BODY_NONE || !policy_host_mcp(c->entry, &endpoint, &code) || r->path == NULL ||
	    strcmp(r->path, endpoint) != 0)
		return MCP_RESP_NONE;
	if (media_is(m, "application/json"))
		kind = MCP_RESP_JSON;
	else if (media_is(m, "text/event-stream"))
		kind = MCP_RESP_SSE;
	else
		return MCP_RESP_NONE;  /* no list result an MCP client would read (the SDK refuses other types) */
	ce = h1_find_header(m, "content-encoding");
	if (ce != NULL && !sluice_iov_ieq(ce->value, ce->value_len, "identity"))
		return -1;  /* an encoded list could not be filtered: never relayed unread */
	if ((s = calloc(1, sizeof(*s))) == NULL || (s->in = evbuffer_new()) == NULL || (s->out = evbuffer_new()) == NULL) {
		if (s != NULL && s->in != NULL)
			evbuffer_free(s->in);
		free(s);
		return -1;
	}
	s->kind = (enum mcp_resp_kind)kind;
	policy_mcp_scan_init(&s->scan);
	if (kind == MCP_RESP_SSE)
		sse_parser_init(&s->sse, MCP_RESP_EVENT_MAX);
	r->mcpr = s;
	return kind;
}

struct evbuffer *
mcp_resp_in(struct req *r)
{
	return r->mcpr->in;
}

struct evbuffer *
mcp_resp_out(struct req *r)
{
	return r->mcpr->out;
}

struct mcp_frame *
mcp_resp_frame(struct req *r)
{
	return &r->mcpr->frame;
}

enum mcp_resp_kind
mcp_resp_kind_of(const struct req *r)
{
	return r->mcpr != NULL ? r->mcpr->kind : MCP_RESP_NONE;
}

size_t
mcp_resp_queue_max(const struct req *r)
{
	/* a JSON body is held whole (one byte over the bound is how the bound is seen); a stream moves on */
	return r->mcpr->kind == MCP_RESP_JSON ? MCP_RESP_JSON_MAX + 1 : PROXY_HIGH_WATER;
}

/* ---- filtering ---- */

/*
 * The list method that the request with <id> asked for (the request in
 * flight, proxy/judge/mcp_req.h), when it asked for a list; else
 * POLICY_MCP_M_NONE, and the result is filtered by its shape, which is what
 * an uncorrelated result gets in any case: over-filtering, never under.
 */
static enum policy_mcp_method
request_list_method(struct conn *c, const json_t *id)
{
	enum policy_mcp_method m = c->req != NULL ? mcp_req_method_of(c->req, id) : POLICY_MCP_M_NONE;

	return m == POLICY_MCP_M_TOOLS_LIST || m == POLICY_MCP_M_RESOURCES_LIST || m == POLICY_MCP_M_PROMPTS_LIST
	           ? m
	           : POLICY_MCP_M_NONE;
}

/* The list a result is by its shape, for the record. */
static enum policy_mcp_method
shape_of(const json_t *result)
{
	if (json_is_array(json_object_get(result, "tools")))
		return POLICY_MCP_M_TOOLS_LIST;
	if (json_is_array(json_object_get(result, "resources")))
		return POLICY_MCP_M_RESOURCES_LIST;
	if (json_is_array(json_object_get(result, "prompts")))
		return POLICY_MCP_M_PROMPTS_LIST;
	return POLICY_MCP_M_NONE;
}

/*
 * 1 when JSON text <t>/<n> may hold a list result or a server request: the
 * rest (tool results, notifications: most events of a stream) need not be
 * parsed.  A JSON key is a string followed by a colon; without a backslash
 * it is spelled as it is, so a list result has the keys "result" and
 * "tools", "resources" or "prompts", and a request "method" and "id"; with
 * one (a key may be written with \u escapes) every text is read.
 * Case-folding clients read "Result" or "reſult" (LONG S, C5 BF in UTF-8) as
 * result: keys are matched without case, and a text with a LONG S is read.
 * A text that is not JSON is no list to any client.  One pass over the text
 * for the three bytes that matter (common/bytescan.h); at each colon, back
 * over white space to the key that ends there.
 */
/* 1 when <s> is the lowercase letters <w>/<n> in any case (for letters, x | 0x20 is x in lowercase). */
static int
word_at(const char *s, const char *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] | 0x20) != (unsigned char)w[i])
			return 0;
	return 1;
}

static int
may_matter(const char *t, size_t n)
{
	static const char *const words[6] = {"method", "id", "result", "tools", "resources", "prompts"};
	const char *p = t, *e = t + n;
	unsigned seen = 0;  /* bit k: the key words[k] seen */
	size_t k;
	ptrdiff_t len;

	for (; (p += bytescan3(p, (size_t)(e - p), ':', '\\', 0xc5)) < e; p++) {
		const char *q = p;  /* back to the quote that closes the key */

		if (*p == '\\' || (*p == (char)0xc5 && p + 1 < e && p[1] == (char)0xbf))
			return 1;
		if (*p != ':')
			continue;
		while (q > t && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n' || q[-1] == '\r'))
			q--;
		if (q == t || q[-1] != '"')
			continue;
		q--;
		/* the key's length: back to its opening quote (the last one: no backslash, so none is escaped); the
		 * longest word is 9 bytes */
		for (len = 0; len < 10 && q - len > t && q[-(ptrdiff_t)len - 1] != '"'; len++)
			;
		switch (len) {
		case 2: k = 1; break;
		case 5: k = 3; break;
		case 6: k = (*(q - 6) | 0x20) == 'm' ? 0 : 2; break;
		case 7: k = 5; break;
		case 9: k = 4; break;
		default: continue;
		}
		if (q - len > t && word_at(q - len, words[k], len))
			seen |= 1u << k;
		if ((seen & 3) == 3 || ((seen & 4) && (seen & 0x38)))
			return 1;
	}
	return 0;
}

/* 1 if the object <o> has a member "result", or one a case-folding client reads as it ("Result", "reſult"). */
static int
result_member(const json_t *o)
{
	const char *k;
	json_t *v;
	size_t n;

	json_object_keylen_foreach(SLUICE_DECONST(json_t *, o), k, n, v)
		if (sluice_fold_eq(k, n, "result", 6))
			return 1;
	return 0;
}

/* 1 if <v> (a message, or a batch of them) has a result member: a list result could be in it. */
static int
has_result(const json_t *v)
{
	size_t i;

	if (json_is_object(v))
		return result_member(v);
	for (i = 0; i < json_array_size(v); i++)
		if (json_is_object(json_array_get(v, i)) && result_member(json_array_get(v, i)))
			return 1;
	return 0;
}

/*
 * JSON text the strict reader refused: an error answer the reader does not
 * take as a message (the SDK's {"error":...,"id":null} to a bad request, a
 * 405 to a GET) passes as it is; text that is not JSON (or has a duplicate
 * key), or that has a result the filter could not read, is refused.
 */
static int
unread_text(const char *t, size_t n, const char **why)
{
	json_t *root = json_loadb(t, n, JSON_REJECT_DUPLICATES, NULL);
	int pass = root != NULL && !has_result(root);

	json_decref(root);
	if (pass)
		return 0;
	*why = "an MCP answer that is not a JSON-RPC message the gateway reads";
	return -1;
}

/* The id the scanner read, as the request side's correlation takes it (a new reference; NULL: memory). */
static json_t *
scan_id(const struct policy_mcp_scan *sc)
{
	char num[32];

	if (sc->id_string)
		return json_stringn(sc->id + 1, sc->id_len - 2);
	if (sc->id_len >= sizeof(num))
		return NULL;
	memcpy(num, sc->id, sc->id_len);
	num[sc->id_len] = '\0';
	return json_integer(strtoll(num, NULL, 10));
}

/*
 * 1 when <t>/<n> is an id token that the scanner reads as <string> says and
 * that changes nothing else about a text: an integer of at most 18 digits
 * without a sign on zero, or a string of printable ASCII without escapes.
 */
static int
id_token_ok(const char *t, size_t n, int string)
{
	size_t i = 0;

	if (string) {
		if (n < 2 || t[0] != '"' || t[n - 1] != '"')
			return 0;
		for (i = 1; i + 1 < n; i++)
			if ((unsigned char)t[i] < 0x20 || (unsigned char)t[i] > 0x7e || t[i] == '"' || t[i] == '\\')
				return 0;
		return 1;
	}
	if (n > 0 && t[0] == '-')
		i++;
	if (n - i == 0 || n - i > 18 || (t[i] == '0' && n != 1))
		return 0;  /* no digits, too many, a leading zero, or -0 */
	for (; i < n; i++)
		if (t[i] < '0' || t[i] > '9')
			return 0;
	return 1;
}

/*
 * Keeps what the scanner just decided about <t>/<n> (<put>: 0 passes, 1
 * rewritten to s->scan.out with <removed> entries of <list> removed), for
 * repeat_of.  Not kept (and the last one
 * forgotten) when the text is long or its id is not a plain token.
 */
static void
remember(struct conn *c, struct mcp_resp *s, const char *t, size_t n, int put, long removed,
         enum policy_mcp_method list)
{
	struct mcp_resp_last *l = &s->last;
	const struct policy_mcp_scan *sc = &s->scan;

	l->inlen = 0;
	if (n > MCP_RESP_LAST_MAX || (put && sc->outlen > MCP_RESP_LAST_MAX) || sc->id == NULL ||
	    sc->id_len > MCP_RESP_LAST_ID_MAX || !id_token_ok(sc->id, sc->id_len, sc->id_string))
		return;
	if (l->in == NULL && ((l->in = malloc(MCP_RESP_LAST_MAX)) == NULL || (l->out = malloc(MCP_RESP_LAST_MAX)) == NULL ||
	                      (l->hit = malloc(MCP_RESP_LAST_MAX + MCP_RESP_LAST_ID_MAX)) == NULL)) {
		free(l->in);
		free(l->out);
		l->in = l->out = NULL;
		return;  /* no memory for it: every text is read */
	}
	l->pol = c->pol;
	l->entry = c->entry;
	memcpy(l->in, t, n);
	l->id_at = (size_t)(sc->id - t);
	l->id_len = sc->id_len;
	l->id_string = sc->id_string;
	l->put = put;
	l->outlen = 0;
	if (put) {
		memcpy(l->out, sc->out, sc->outlen);
		l->outlen = sc->outlen;
		l->out_id = sc->id_out;
	}
	l->removed = removed;
	l->list = list;
	l->inlen = n;
}

/*
 * When <t>/<n> is the last text the scanner decided with another id in its
 * place (the same bytes before and after the id, and an id token that reads
 * as one; under the same snapshot and host, and with no request to correlate
 * the id with): the decision again, 0 passes or 1 with *<out>/<outlen> the
 * last rewriting with this id; else -1 (the text is read).  Sound because
 * the rest of the text is the same bytes, so it reads the same, and nothing
 * the filter decides depends on an uncorrelated id.  O(n), no allocation.
 */
static int
repeat_of(struct conn *c, struct mcp_resp *s, const char *t, size_t n, const char **out, size_t *outlen)
{
	const struct mcp_resp_last *l = &s->last;
	size_t rest, tok;

	if (l->inlen == 0 || l->pol != c->pol || l->entry != c->entry)
		return -1;
	rest = l->inlen - l->id_len;  /* the bytes around the id */
	if (n <= rest || (tok = n - rest) > MCP_RESP_LAST_ID_MAX || memcmp(t, l->in, l->id_at) != 0 ||
	    memcmp(t + l->id_at + tok, l->in + l->id_at + l->id_len, rest - l->id_at) != 0 ||
	    !id_token_ok(t + l->id_at, tok, l->id_string))
		return -1;
	if (!l->put)
		return 0;
	memcpy(s->last.hit, l->out, l->out_id);
	memcpy(s->last.hit + l->out_id, t + l->id_at, tok);
	memcpy(s->last.hit + l->out_id + tok, l->out + l->out_id + l->id_len, l->outlen - l->out_id - l->id_len);
	*out = s->last.hit;
	*outlen = l->outlen - l->id_len + tok;
	s->removed += l->removed;
	s->list = l->list;
	return 1;
}

/*
 * The fast path of filter_text: the scanner (policy/mcp.h) on a text that
 * starts with '{'.  1 filtered (*<out> the scanner's), 0 passes as it is,
 * -1 refused (*<why>), -2 not sure: the jansson path reads it.
 */
static int
filter_scan(struct conn *c, struct mcp_resp *s, const char *t, size_t n, int uncorrelated, const char **out,
            size_t *outlen, const char **why)
{
	enum policy_mcp_method list;
	json_t *id;
	long x;
	int rc = policy_mcp_scan_read(&s->scan, c->pol, c->entry, t, n);

	if (rc == -2)
		return -2;
	if (rc < 0) {
		*why = "out of memory filtering an MCP answer";
		return -1;
	}
	if (uncorrelated) {
		/* no request read (a GET stream) or none with an id: nothing to correlate, no id to build */
		list = POLICY_MCP_M_NONE;
	} else {
		if ((id = scan_id(&s->scan)) == NULL) {
			*why = "out of memory filtering an MCP answer";
			return -1;
		}
		list = request_list_method(c, id);
		json_decref(id);
	}
	x = policy_mcp_scan_filter(&s->scan, list);
	if (x == 0 && uncorrelated)
		remember(c, s, t, n, 0, 0, POLICY_MCP_M_NONE);
	if (x == -2 || x == 0)
		return (int)x;
	if (x < 0) {
		*why = "out of memory filtering an MCP answer";
		return -1;
	}
	s->removed += x;
	s->list = list != POLICY_MCP_M_NONE ? list : s->scan.list;
	if (uncorrelated)
		remember(c, s, t, n, 1, x, s->list);
	*out = s->scan.out;
	*outlen = s->scan.outlen;
	return 1;
}

/*
 * One JSON-RPC text <s>/<n> (a body, or an event's data): 0 when it passes as
 * it is, 1 with *<out>/<outlen> its filtered text (owned by <s>, valid until
 * the next call), -1 refused (*<why>).  Text that does not start like JSON
 * passes when <strict> is 0 (an event's data need not be JSON-RPC) and is
 * refused otherwise.  A single response goes to the scanner first; what it
 * is not sure of (and every request, batch and error) is read with jansson.
 */
static int
filter_text(struct conn *c, struct mcp_resp *s, const char *t, size_t n, int strict, const char **out,
            size_t *outlen, const char **why)
{
	struct policy_mcp_body b;
	enum policy_mcp_error err;
	enum policy_mcp_method list;
	size_t i, k = 0;
	long x, total = 0;
	int ret = 0, uncorrelated = c->req == NULL || !mcp_req_awaits(c->req);

	if (uncorrelated && (ret = repeat_of(c, s, t, n, out, outlen)) >= 0)
		return ret;
	while (k < n && (t[k] == ' ' || t[k] == '\t' || t[k] == '\r' || t[k] == '\n'))
		k++;
	if (k == n || !may_matter(t + k, n - k))
		return 0;  /* an empty body (202 Accepted) or an empty data field; or no list result can be in it */
	if (t[k] != '{' && t[k] != '[') {
		if (!strict)
			return 0;
		*why = "an MCP answer that is not JSON";
		return -1;
	}
	if (t[k] == '{' && (ret = filter_scan(c, s, t, n, uncorrelated, out, outlen, why)) != -2)
		return ret;
	ret = 0;
	if (policy_mcp_parse(t, n, &b, &err) != 0) {
		policy_mcp_body_dispose(&b);
		return unread_text(t, n, why);
	}
	for (i = 0; i < b.nmsgs; i++) {
		const struct policy_mcp_msg *msg = &b.msgs[i];
		json_t *res;

		if (msg->kind == POLICY_MCP_REQUEST) {
			mcp_req_peer_add(c, msg);
			continue;
		}
		if (msg->kind != POLICY_MCP_RESPONSE || msg->result == NULL)
			continue;
		res = json_object_get(SLUICE_DECONST(json_t *, msg->obj), "result");
		list = request_list_method(c, msg->id);
		x = policy_mcp_list_filter(c->pol, c->entry, list, res);
		if (x < 0) {
			*why = "an MCP list result the gateway cannot filter (over its bound, or a member a client could read "
			       "as the list)";
			ret = -1;
			break;
		}
		if (x > 0) {
			total += x;
			s->list = list != POLICY_MCP_M_NONE ? list : shape_of(res);
		}
	}
	if (ret == 0 && total > 0) {
		free(s->dumped);
		s->dumped = NULL;
		if (b.inexact) {
			*why = "an MCP list result with a number the filter cannot rewrite exactly";
			ret = -1;
		} else if ((s->dumped = json_dumps(b.root, JSON_COMPACT)) == NULL) {
			*why = "out of memory filtering an MCP answer";
			ret = -1;
		} else {
			*out = s->dumped;
			*outlen = strlen(s->dumped);
			s->removed += total;
			ret = 1;
		}
	}
	policy_mcp_body_dispose(&b);
	return ret;
}

/* One SSE unit <u> whose event was rewritten to <data>/<dlen>: rendered into space reserved in s->out. */
static int
sse_unit_put(struct mcp_resp *s, const struct sse_unit *u, const char *data, size_t dlen)
{
	struct evbuffer_iovec v;
	/* enough for an event whose new data is one line (compact JSON): rendered once */
	size_t need = u->raw_len + dlen + 8, got;

	for (;;) {
		if (evbuffer_reserve_space(s->out, (ev_ssize_t)need, &v, 1) != 1 || v.iov_len < need)
			return -1;
		if ((got = sse_unit_rewrite(u, data, dlen, v.iov_base, v.iov_len)) <= v.iov_len)
			break;
		need = got;  /* data of several lines: the exact size, reserved again (nothing was committed) */
	}
	v.iov_len = got;
	return evbuffer_commit_space(s->out, &v, 1);
}

/*
 * One SSE unit <u>: 0 when it passes as it is, 1 when its event is to be
 * rewritten with the data *<data>/<dlen> (owned by <s>), -1 refused (*<why>).
 */
static int
sse_unit_filter(struct conn *c, struct mcp_resp *s, const struct sse_unit *u, const char **data, size_t *dlen,
                const char **why)
{
	if (u->kind != SSE_UNIT_EVENT || !u->has_data)
		return 0;
	return filter_text(c, s, u->data, u->data_len, 0, data, dlen, why);
}

/*
 * The units of s->in through the parser into s->out.  Units that pass as
 * they are and lie in the input as it came (not gathered by the parser
 * across pieces) are copied in runs: one evbuffer_add per piece of input,
 * not one per event.
 */
static int
sse_pump(struct conn *c, struct mcp_resp *s, int end, const char **why)
{
	struct evbuffer_iovec v;
	struct sse_unit u;
	const char *data;
	size_t dlen;
	long rc;
	int put;

	while (evbuffer_peek(s->in, -1, NULL, &v, 1) == 1 && v.iov_len > 0) {
		const char *base = v.iov_base;
		size_t off = 0, run = 0;  /* bytes [run, off) pass as they are and are not copied yet */

		while (off < v.iov_len) {
			rc = sse_parse(&s->sse, base + off, v.iov_len - off, &u);
			if (rc == -2)
				break;  /* the parser holds the rest of the piece */
			if (rc < 0) {
				*why = "an MCP event over the gateway's bound (MCP_RESP_EVENT_MAX)";
				return -1;
			}
			if ((put = sse_unit_filter(c, s, &u, &data, &dlen, why)) < 0)
				return -1;
			if (put == 0 && u.raw == base + off) {
				off += (size_t)rc;  /* in place: the run grows */
				continue;
			}
			if (evbuffer_add(s->out, base + run, off - run) != 0 ||
			    (put == 1 ? sse_unit_put(s, &u, data, dlen) : evbuffer_add(s->out, u.raw, u.raw_len)) != 0)
				goto nomem;
			off += (size_t)rc;
			run = off;
		}
		if (evbuffer_add(s->out, base + run, off - run) != 0)
			goto nomem;
		evbuffer_drain(s->in, v.iov_len);
	}
	/* an event the stream ended inside is dropped (a browser drops it too): it could not be filtered */
	(void)end;
	return 0;
nomem:
	*why = "out of memory filtering an MCP event";
	return -1;
}

int
mcp_resp_pump(struct conn *c, int end, const char **why)
{
	struct mcp_resp *s = c->req->mcpr;
	size_t n = evbuffer_get_length(s->in), outlen = 0;
	const char *out = NULL;
	int rc;

	if (s->kind == MCP_RESP_SSE)
		return sse_pump(c, s, end, why);
	if (n > MCP_RESP_JSON_MAX) {
		*why = "an MCP answer over the gateway's bound (MCP_RESP_JSON_MAX)";
		return -1;
	}
	if (!end)
		return 0;
	rc = filter_text(c, s, (const char *)evbuffer_pullup(s->in, -1), n, 1, &out, &outlen, why);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return evbuffer_add_buffer(s->out, s->in);
	evbuffer_drain(s->in, n);
	return evbuffer_add(s->out, out, outlen);
}

const char *
mcp_resp_audit(const struct req *r, long *removed)
{
	*removed = 0;
	if (r->mcpr == NULL || r->mcpr->removed == 0)
		return NULL;
	*removed = r->mcpr->removed;
	switch (r->mcpr->list) {
	case POLICY_MCP_M_TOOLS_LIST:
		return "tools/list";
	case POLICY_MCP_M_RESOURCES_LIST:
		return "resources/list";
	case POLICY_MCP_M_PROMPTS_LIST:
		return "prompts/list";
	default:
		return NULL;
	}
}

void
mcp_resp_free(struct req *r)
{
	struct mcp_resp *s = r->mcpr;

	if (s == NULL)
		return;
	if (s->kind == MCP_RESP_SSE)
		sse_parser_dispose(&s->sse);
	policy_mcp_scan_dispose(&s->scan);
	free(s->last.in);
	free(s->last.out);
	free(s->last.hit);
	free(s->dumped);
	evbuffer_free(s->in);
	evbuffer_free(s->out);
	if (s->frame.head != NULL)
		evbuffer_free(s->frame.head);
	free(s);
	r->mcpr = NULL;
}
