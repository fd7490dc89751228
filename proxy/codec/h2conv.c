/*
 * proxy/codec/h2conv.c - HTTP/2 <-> HTTP/1.1 message head translation.
 *
 * The h2 -> h1 direction is the downgrade-smuggling surface (issue 4): a
 * field list that nghttp2 may have passed (it drops bad regular fields
 * silently, and may run without HTTP messaging) becomes bytes an HTTP/1.1
 * upstream will frame.  So every byte written is checked here, against the
 * stricter of RFC 9113 section 8 and what h1_parse accepts, and the framing
 * line is always written by this file, never copied from the peer.
 */
#include "common/b64.h"
#include "proxy/codec/h2conv.h"
#include "h2conv_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/rand.h>

#define WS_KEY_RAW 16       /* RFC 6455 4.1: a nonce of 16 random bytes */
#define U64_DEC_MAX 21      /* decimal digits of a uint64_t, plus NUL */

/* ---- bytes and names ---- */

int
h2conv_is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

unsigned char
h2conv_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* Exact comparison of <p>/<n> with the NUL-terminated <lit>. */
static int
eq(const uint8_t *p, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* Case-insensitive comparison of <p>/<n> with the NUL-terminated <lit>. */
int
h2conv_ieq(const void *p, size_t n, const char *lit)
{
	const unsigned char *a = p;
	size_t i;

	if (n != strlen(lit))
		return 0;
	for (i = 0; i < n; i++)
		if (h2conv_lower(a[i]) != h2conv_lower((unsigned char)lit[i]))
			return 0;
	return 1;
}

/* 1 if the comma-separated list <v>/<n> holds the token <tok> (ignoring case and OWS). */
int
h2conv_list_has(const char *v, size_t n, const char *tok)
{
	size_t i = 0, s, e;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		for (e = i; e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'); e--)
			;
		if (e > s && h2conv_ieq(v + s, e - s, tok))
			return 1;
	}
	return 0;
}

/* RFC 9113 8.2.2 plus RFC 9110 7.6.1: fields that only mean something on one hop. */
int
h2conv_is_connection_specific(const void *name, size_t n)
{
	return h2conv_ieq(name, n, "connection") || h2conv_ieq(name, n, "keep-alive") ||
	       h2conv_ieq(name, n, "proxy-connection") || h2conv_ieq(name, n, "transfer-encoding") ||
	       h2conv_ieq(name, n, "upgrade");
}

/* RFC 3986 authority bytes (unreserved, pct-encoded, sub-delims, ':', '[', ']'), no '@'. */
int
h2conv_authority_ok(const uint8_t *v, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("-._~%!$&'()*+,;=:[]", c) != NULL) || c == '\0')
			return 0;
	}
	return 1;
}

static int
fail(struct h2conv_err *e, int ret, int status, int malformed, const char *reason)
{
	e->reason = reason;
	e->status = status;
	e->malformed = malformed;
	return ret;
}

#define MALFORMED(e, why) fail((e), SLUICE_EINVAL, 400, 1, (why))

/* RFC 9113 8.2.1 and RFC 9110 5.1: a lower-case token. */
static const char *
name_check(const uint8_t *p, size_t n)
{
	size_t i;

	if (n == 0)
		return "empty field name";
	for (i = 0; i < n; i++) {
		if (p[i] >= 'A' && p[i] <= 'Z')
			return "uppercase field name";
		if (!h2conv_is_tchar(p[i]))
			return "bad byte in field name";
	}
	return NULL;
}

/* RFC 9113 8.2.1 and RFC 9110 5.5, narrowed to what h1_parse accepts. */
const char *
h2conv_value_check(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] == '\0' || p[i] == '\r' || p[i] == '\n')
			return "CR, LF or NUL in field value";
	for (i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
			return "control byte in field value";
	if (n > 0 && (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		return "whitespace around field value";
	return NULL;
}

/* The rules every regular field obeys in both directions.  0 or a malformed refusal. */
static int
field_check(const nghttp2_nv *nv, struct h2conv_err *e)
{
	const char *why;

	if ((why = name_check(nv->name, nv->namelen)) != NULL ||
	    (why = h2conv_value_check(nv->value, nv->valuelen)) != NULL)
		return MALFORMED(e, why);
	if (h2conv_is_connection_specific(nv->name, nv->namelen))
		return MALFORMED(e, "connection-specific field");
	if (eq(nv->name, nv->namelen, "te") && !h2conv_ieq(nv->value, nv->valuelen, "trailers"))
		return MALFORMED(e, "te other than trailers");
	return 0;
}

/*
 * content-length: 1*DIGIT.  One more occurrence must say the same number.
 * Returns 0 with *<cl> set, or a refusal.
 */
static int
content_length_add(const nghttp2_nv *nv, int64_t *cl, struct h2conv_err *e)
{
	uint64_t x = 0;
	size_t i;

	if (nv->valuelen == 0)
		return MALFORMED(e, "bad content-length");
	for (i = 0; i < nv->valuelen; i++) {
		if (nv->value[i] < '0' || nv->value[i] > '9')
			return MALFORMED(e, "bad content-length");
		if (x <= (uint64_t)H2CONV_CONTENT_LENGTH_MAX)
			x = x * 10 + (uint64_t)(nv->value[i] - '0');
	}
	if (x > (uint64_t)H2CONV_CONTENT_LENGTH_MAX)
		return fail(e, SLUICE_EINVAL, 400, 0, "content-length too large");
	if (*cl >= 0 && (uint64_t)*cl != x)
		return MALFORMED(e, "differing content-length");
	*cl = (int64_t)x;
	return 0;
}

/* ---- a bounded writer ---- */

struct wr {
	char *p;
	size_t cap, len;
	int over;
	size_t lines;
};

static void
put(struct wr *w, const void *s, size_t n)
{
	if (w->over || n > w->cap - w->len) {
		w->over = 1;
		return;
	}
	if (n > 0)
		memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void
put_str(struct wr *w, const char *s)
{
	put(w, s, strlen(s));
}

static void
put_u64(struct wr *w, uint64_t v)
{
	char d[U64_DEC_MAX];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v);

	put(w, d, (size_t)n);
}

/* One field line "name: value CRLF". */
static void
put_field(struct wr *w, const void *name, size_t nlen, const void *value, size_t vlen)
{
	put(w, name, nlen);
	put(w, SLUICE_LIT(": "));
	put(w, value, vlen);
	put(w, SLUICE_LIT("\r\n"));
	w->lines++;
}

static void
put_line(struct wr *w, const char *line)
{
	put_str(w, line);
	w->lines++;
}

/* ---- h2 -> h1: requests ---- */

enum { P_METHOD = 0, P_SCHEME, P_PATH, P_AUTHORITY, P_PROTOCOL, P_COUNT };

static const char *const REQ_PSEUDO[P_COUNT] = {":method", ":scheme", ":path", ":authority", ":protocol"};

struct reqscan {
	const nghttp2_nv *ps[P_COUNT];
	const nghttp2_nv *host;
	int64_t cl;
	int te_trailers, ws_key, ws_version;
};

/* One pass over the list: order, pseudo-headers, field rules.  0 or a refusal. */
static int
request_scan(const nghttp2_nv *nva, size_t nvlen, struct reqscan *s, struct h2conv_err *e)
{
	const nghttp2_nv *nv;
	const char *why;
	int regular = 0, k, r;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->cl = -1;
	for (i = 0; i < nvlen; i++) {
		nv = &nva[i];
		if (nv->namelen > 0 && nv->name[0] == ':') {
			if (regular)
				return MALFORMED(e, "pseudo-header after regular field");
			for (k = 0; k < P_COUNT; k++)
				if (eq(nv->name, nv->namelen, REQ_PSEUDO[k]))
					break;
			if (k == P_COUNT)
				return MALFORMED(e, "unknown pseudo-header");
			if (s->ps[k] != NULL)
				return MALFORMED(e, "duplicate pseudo-header");
			if ((why = h2conv_value_check(nv->value, nv->valuelen)) != NULL)
				return MALFORMED(e, why);
			s->ps[k] = nv;
			continue;
		}
		regular = 1;
		if ((r = field_check(nv, e)) != 0)
			return r;
		if (eq(nv->name, nv->namelen, "host")) {
			if (s->host != NULL)
				return MALFORMED(e, "duplicate host");
			s->host = nv;
		} else if (eq(nv->name, nv->namelen, "content-length")) {
			if ((r = content_length_add(nv, &s->cl, e)) != 0)
				return r;
		} else if (eq(nv->name, nv->namelen, "te")) {
			s->te_trailers = 1;
		} else if (eq(nv->name, nv->namelen, "expect")) {
			/* h1_parse refuses any other expectation with 417; so do we */
			if (!h2conv_ieq(nv->value, nv->valuelen, "100-continue"))
				return fail(e, SLUICE_EINVAL, 417, 0, "unsupported expect");
		} else if (eq(nv->name, nv->namelen, "sec-websocket-key")) {
			s->ws_key = 1;
		} else if (eq(nv->name, nv->namelen, "sec-websocket-version")) {
			s->ws_version = 1;
		}
	}
	return 0;
}

/* :method, :protocol, :scheme, :path.  Sets info->websocket.  0 or a refusal. */
static int
request_line_check(const struct reqscan *s, const char *scheme, struct h2conv_request *info,
                   struct h2conv_err *e)
{
	const nghttp2_nv *m = s->ps[P_METHOD], *p = s->ps[P_PATH], *sc = s->ps[P_SCHEME];
	size_t i;

	if (m == NULL)
		return MALFORMED(e, "missing :method");
	if (m->valuelen == 0)
		return MALFORMED(e, "bad :method");
	for (i = 0; i < m->valuelen; i++)
		if (!h2conv_is_tchar(m->value[i]))
			return MALFORMED(e, "bad :method");
	if (m->valuelen > H2CONV_METHOD_MAX)
		return fail(e, SLUICE_EINVAL, 400, 0, "method too long");
	if (eq(m->value, m->valuelen, "CONNECT")) {
		/* only RFC 8441 WebSocket has an HTTP/1.1 form (the Upgrade dance) */
		if (s->ps[P_PROTOCOL] == NULL)
			return fail(e, SLUICE_EINVAL, 501, 0, "CONNECT is not supported over HTTP/2");
		if (!h2conv_ieq(s->ps[P_PROTOCOL]->value, s->ps[P_PROTOCOL]->valuelen, "websocket"))
			return fail(e, SLUICE_EINVAL, 501, 0, "unsupported :protocol");
		if (s->ps[P_AUTHORITY] == NULL)
			return MALFORMED(e, "extended CONNECT without :authority");
		info->websocket = 1;
	} else if (s->ps[P_PROTOCOL] != NULL) {
		return MALFORMED(e, ":protocol without CONNECT");
	}
	if (sc == NULL)
		return MALFORMED(e, "missing :scheme");
	if (p == NULL)
		return MALFORMED(e, "missing :path");
	if (!eq(sc->value, sc->valuelen, scheme))
		return fail(e, SLUICE_EINVAL, 400, 0, "unexpected :scheme");
	if (p->valuelen == 0)
		return MALFORMED(e, "empty :path");
	if (eq(p->value, p->valuelen, "*")) {
		if (!eq(m->value, m->valuelen, "OPTIONS"))
			return MALFORMED(e, "'*' :path without OPTIONS");
		return 0;
	}
	if (p->value[0] != '/')
		return MALFORMED(e, ":path not origin-form");
	/* RFC 9112 3.2: no SP or CTL can be framed; '#' never travels; non-ASCII: h1_parse refuses */
	for (i = 0; i < p->valuelen; i++)
		if (p->value[i] < 0x21 || p->value[i] > 0x7e || p->value[i] == '#')
			return MALFORMED(e, "bad byte in :path");
	return 0;
}

/* :authority / host, and the SNI.  Fills info->host and info->port.  0 or a refusal. */
static int
request_authority_check(const struct reqscan *s, const struct h2conv_req_opts *opts,
                        unsigned dport, struct h2conv_request *info, struct h2conv_err *e)
{
	const nghttp2_nv *a = s->ps[P_AUTHORITY];
	char other[HOST_BUF];
	unsigned oport = 0;
	const char *why;

	if (a == NULL && s->host == NULL)
		return MALFORMED(e, "missing :authority and host");
	if (a != NULL && (!h2conv_authority_ok(a->value, a->valuelen) ||
	                  host_split_authority((const char *)a->value, a->valuelen, dport, info->host,
	                                       &info->port, &why) < 0))
		return MALFORMED(e, "bad :authority");
	if (s->host != NULL && (!h2conv_authority_ok(s->host->value, s->host->valuelen) ||
	                        host_split_authority((const char *)s->host->value, s->host->valuelen,
	                                             dport, a != NULL ? other : info->host,
	                                             a != NULL ? &oport : &info->port, &why) < 0))
		return MALFORMED(e, "bad host");
	if (a != NULL && s->host != NULL && (strcmp(other, info->host) != 0 || oport != info->port))
		return fail(e, SLUICE_EINVAL, 421, 0, ":authority and host differ");
	if (opts->sni != NULL) {
		if (host_canon(opts->sni, strlen(opts->sni), other, &why) < 0 || strcmp(other, info->host) != 0)
			return fail(e, SLUICE_EINVAL, 421, 0, ":authority differs from the TLS server name");
	}
	return 0;
}

/* Writes the head; the list has passed every check. */
static int
request_write(const nghttp2_nv *nva, size_t nvlen, const struct reqscan *s,
              const struct h2conv_req_opts *opts, struct wr *w, struct h2conv_request *info,
              struct h2conv_err *e)
{
	const nghttp2_nv *m = s->ps[P_METHOD], *p = s->ps[P_PATH];
	const nghttp2_nv *a = s->ps[P_AUTHORITY] != NULL ? s->ps[P_AUTHORITY] : s->host;
	size_t i, moff, poff, aoff, ncookie = 0;
	uint8_t raw[WS_KEY_RAW];
	char key[B64_ENCODED_LEN(WS_KEY_RAW)];

	moff = w->len;
	if (info->websocket)
		put_str(w, "GET");
	else
		put(w, m->value, m->valuelen);
	put(w, SLUICE_LIT(" "));
	poff = w->len;
	put(w, p->value, p->valuelen);
	put_str(w, " HTTP/1.1\r\nHost: ");
	aoff = w->len;
	put(w, a->value, a->valuelen);
	put(w, SLUICE_LIT("\r\n"));
	w->lines++;
	if (info->websocket) {
		put_line(w, "Connection: Upgrade\r\n");
		put_line(w, "Upgrade: websocket\r\n");
	}
	for (i = 0; i < nvlen; i++) {
		const nghttp2_nv *nv = &nva[i];

		if (nv->name[0] == ':' || eq(nv->name, nv->namelen, "host") ||
		    eq(nv->name, nv->namelen, "content-length") || eq(nv->name, nv->namelen, "cookie"))
			continue;
		put_field(w, nv->name, nv->namelen, nv->value, nv->valuelen);
	}
	/* RFC 9113 8.2.3: cookie crumbs are joined with "; " into one field line */
	for (i = 0; i < nvlen; i++) {
		if (!eq(nva[i].name, nva[i].namelen, "cookie") || nva[i].valuelen == 0)
			continue;
		put_str(w, ncookie++ == 0 ? "cookie: " : "; ");
		put(w, nva[i].value, nva[i].valuelen);
	}
	if (ncookie > 0) {
		put(w, SLUICE_LIT("\r\n"));
		w->lines++;
	}
	if (info->websocket) {
		if (!s->ws_version)
			put_line(w, "Sec-WebSocket-Version: 13\r\n");
		if (opts->ws_key_generate) {
			if (RAND_bytes(raw, sizeof(raw)) != 1)
				return fail(e, SLUICE_EIO, 500, 0, "no randomness for Sec-WebSocket-Key");
			put_field(w, SLUICE_LIT("Sec-WebSocket-Key"), key, b64_encode(key, raw, sizeof(raw)));
			info->ws_key_generated = 1;
		}
	} else if (s->cl >= 0) {
		put_str(w, "Content-Length: ");
		put_u64(w, (uint64_t)s->cl);
		put(w, SLUICE_LIT("\r\n"));
		w->lines++;
	} else if (info->has_body) {
		put_line(w, "Transfer-Encoding: chunked\r\n");
		info->chunked = 1;
	}
	put(w, SLUICE_LIT("\r\n"));
	if (w->over)
		return fail(e, SLUICE_ETOOBIG, 431, 0, "request head too large");
	info->method = (struct sluice_iov){w->p + moff, poff - 1 - moff};
	info->path = (struct sluice_iov){w->p + poff, p->valuelen};
	info->authority = (struct sluice_iov){w->p + aoff, a->valuelen};
	info->nfields = w->lines;
	return 0;
}

int
h2conv_request_to_h1(const nghttp2_nv *nva, size_t nvlen, const struct h2conv_req_opts *opts,
                     char *out, size_t out_cap, size_t *out_len, struct h2conv_request *info,
                     struct h2conv_err *err)
{
	const char *scheme = opts->scheme != NULL ? opts->scheme : "https";
	size_t max = opts->max_fields < H2CONV_MAX_FIELDS ? opts->max_fields : H2CONV_MAX_FIELDS;
	struct wr w = {out, out_cap, 0, 0, 0};
	struct reqscan s;
	int r;

	memset(info, 0, sizeof(*info));
	info->content_length = -1;
	*out_len = 0;
	fail(err, 0, 0, 0, NULL);
	if (nvlen > max)
		return fail(err, SLUICE_ETOOBIG, 431, 0, "too many header fields");
	if ((r = request_scan(nva, nvlen, &s, err)) != 0 ||
	    (r = request_line_check(&s, scheme, info, err)) != 0 ||
	    (r = request_authority_check(&s, opts, strcmp(scheme, "http") == 0 ? 80 : 443, info, err)) != 0)
		return r;
	info->has_body = !opts->end_stream;
	info->content_length = s.cl;
	info->te_trailers = s.te_trailers;
	if (info->websocket) {
		if (s.cl >= 0)
			return fail(err, SLUICE_EINVAL, 400, 0, "content-length on extended CONNECT");
		if (opts->end_stream)
			return fail(err, SLUICE_EINVAL, 400, 0, "extended CONNECT ended with its HEADERS");
		if (s.ws_key)
			return fail(err, SLUICE_EINVAL, 400, 0, "sec-websocket-key on extended CONNECT");
	}
	/* RFC 9113 8.1.1: content-length must equal the DATA that follows, and none does */
	if (opts->end_stream && s.cl > 0)
		return MALFORMED(err, "content-length differs from the DATA sent");
	if ((r = request_write(nva, nvlen, &s, opts, &w, info, err)) != 0)
		return r;
	*out_len = w.len;
	return 0;
}

/* ---- h2 -> h1: responses and trailers ---- */

static const char *
reason_phrase(int status)
{
	static const struct {
		int status;
		const char *reason;
	} R[] = {
		{100, "Continue"}, {103, "Early Hints"}, {200, "OK"}, {201, "Created"},
		{202, "Accepted"}, {204, "No Content"}, {206, "Partial Content"},
		{301, "Moved Permanently"}, {302, "Found"}, {303, "See Other"},
		{304, "Not Modified"}, {307, "Temporary Redirect"}, {308, "Permanent Redirect"},
		{400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"}, {404, "Not Found"},
		{405, "Method Not Allowed"}, {409, "Conflict"}, {413, "Content Too Large"},
		{421, "Misdirected Request"}, {429, "Too Many Requests"},
		{500, "Internal Server Error"}, {502, "Bad Gateway"}, {503, "Service Unavailable"},
		{504, "Gateway Timeout"},
	};
	size_t i;

	for (i = 0; i < sizeof(R) / sizeof(R[0]); i++)
		if (R[i].status == status)
			return R[i].reason;
	return "";
}

/* ":status": exactly three digits, 100..599, never 101 (RFC 9113 8.6). */
static int
status_parse(const nghttp2_nv *nv, int *status, struct h2conv_err *e)
{
	const uint8_t *v = nv->value;

	if (nv->valuelen != 3 || v[0] < '1' || v[0] > '5' || v[1] < '0' || v[1] > '9' || v[2] < '0' ||
	    v[2] > '9')
		return MALFORMED(e, "bad :status");
	*status = (v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0');
	if (*status == 101)
		return MALFORMED(e, "101 in HTTP/2");
	return 0;
}

int
h2conv_response_to_h1(const nghttp2_nv *nva, size_t nvlen, const struct h2conv_resp_opts *opts,
                      char *out, size_t out_cap, size_t *out_len, struct h2conv_response *info,
                      struct h2conv_err *err)
{
	size_t max = opts->max_fields < H2CONV_MAX_FIELDS ? opts->max_fields : H2CONV_MAX_FIELDS;
	const char *rm = opts->req_method;
	struct wr w = {out, out_cap, 0, 0, 0};
	int status = 0, regular = 0, info_1xx, connect_2xx, body_allowed, r;
	int64_t cl = -1;
	size_t i;

	memset(info, 0, sizeof(*info));
	info->content_length = -1;
	info->framing = H1_BODY_NONE;
	*out_len = 0;
	fail(err, 0, 0, 0, NULL);
	if (nvlen > max)
		return fail(err, SLUICE_ETOOBIG, 502, 0, "too many header fields");
	for (i = 0; i < nvlen; i++) {
		const nghttp2_nv *nv = &nva[i];

		if (nv->namelen > 0 && nv->name[0] == ':') {
			if (regular)
				return MALFORMED(err, "pseudo-header after regular field");
			if (!eq(nv->name, nv->namelen, ":status"))
				return MALFORMED(err, "unknown pseudo-header");
			if (status != 0)
				return MALFORMED(err, "duplicate :status");
			if ((r = status_parse(nv, &status, err)) != 0)
				return r;
			continue;
		}
		regular = 1;
		if ((r = field_check(nv, err)) != 0)
			return r;
		if (eq(nv->name, nv->namelen, "content-length") && (r = content_length_add(nv, &cl, err)) != 0)
			return r;
	}
	if (status == 0)
		return MALFORMED(err, "missing :status");
	info_1xx = status < 200;
	connect_2xx = rm != NULL && h2conv_ieq(rm, opts->req_method_len, "CONNECT") && status / 100 == 2;
	body_allowed = !info_1xx && status != 204 && status != 304 && !connect_2xx &&
	               !(rm != NULL && h2conv_ieq(rm, opts->req_method_len, "HEAD"));
	if (info_1xx && opts->end_stream)
		return MALFORMED(err, "1xx response ended the stream");
	if (info_1xx && cl >= 0)
		return MALFORMED(err, "content-length in 1xx response");
	if (status == 204 && cl > 0)
		return MALFORMED(err, "content-length in 204 response");
	if (body_allowed && opts->end_stream && cl > 0)
		return MALFORMED(err, "content-length differs from the DATA sent");
	if (status == 204 || connect_2xx)
		cl = -1;   /* "0" in a 204 is tolerated and dropped; RFC 9110 8.6 for CONNECT */

	put_str(&w, "HTTP/1.1 ");
	put_u64(&w, (uint64_t)status);
	put(&w, SLUICE_LIT(" "));
	put_str(&w, reason_phrase(status));
	put(&w, SLUICE_LIT("\r\n"));
	for (i = 0; i < nvlen; i++) {
		const nghttp2_nv *nv = &nva[i];

		if (nv->name[0] == ':' || eq(nv->name, nv->namelen, "content-length"))
			continue;
		put_field(&w, nv->name, nv->namelen, nv->value, nv->valuelen);
	}
	if (cl >= 0) {
		put_str(&w, "Content-Length: ");
		put_u64(&w, (uint64_t)cl);
		put(&w, SLUICE_LIT("\r\n"));
		w.lines++;
		if (body_allowed && cl > 0)
			info->framing = H1_BODY_LENGTH;
	} else if (body_allowed && opts->end_stream) {
		/* without a length an HTTP/1.1 response runs until close */
		put_line(&w, "Content-Length: 0\r\n");
	} else if (body_allowed) {
		put_line(&w, "Transfer-Encoding: chunked\r\n");
		info->framing = H1_BODY_CHUNKED;
	}
	put(&w, SLUICE_LIT("\r\n"));
	if (w.over)
		return fail(err, SLUICE_ETOOBIG, 502, 0, "response head too large");
	info->status = status;
	info->content_length = cl;
	info->nfields = w.lines;
	*out_len = w.len;
	return 0;
}

int
h2conv_trailers_to_h1(const nghttp2_nv *nva, size_t nvlen, size_t max_fields, char *out,
                      size_t out_cap, size_t *out_len, struct h2conv_err *err)
{
	size_t max = max_fields < H2CONV_MAX_FIELDS ? max_fields : H2CONV_MAX_FIELDS;
	struct wr w = {out, out_cap, 0, 0, 0};
	size_t i;
	int r;

	*out_len = 0;
	fail(err, 0, 0, 0, NULL);
	if (nvlen > max)
		return fail(err, SLUICE_ETOOBIG, 431, 0, "too many trailer fields");
	for (i = 0; i < nvlen; i++) {
		const nghttp2_nv *nv = &nva[i];

		if (nv->namelen > 0 && nv->name[0] == ':')
			return MALFORMED(err, "pseudo-header in trailers");
		if ((r = field_check(nv, err)) != 0)
			return r;
		/* RFC 9110 6.5.1: framing, routing and the list of trailers never come late */
		if (eq(nv->name, nv->namelen, "content-length") || eq(nv->name, nv->namelen, "host") ||
		    eq(nv->name, nv->namelen, "te") || eq(nv->name, nv->namelen, "trailer"))
			return fail(err, SLUICE_EINVAL, 400, 0, "framing or routing field in trailers");
	}
	put(&w, SLUICE_LIT("0\r\n"));
	for (i = 0; i < nvlen; i++)
		put_field(&w, nva[i].name, nva[i].namelen, nva[i].value, nva[i].valuelen);
	put(&w, SLUICE_LIT("\r\n"));
	if (w.over)
		return fail(err, SLUICE_ETOOBIG, 431, 0, "trailer section too large");
	*out_len = w.len;
	return 0;
}
