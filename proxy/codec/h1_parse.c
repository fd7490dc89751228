/*
 * proxy/codec/h1_parse.c - strict, incremental HTTP/1.1 head and chunked-body parsers.
 *
 * These parsers sit on the request-smuggling attack surface: the sandbox and
 * the upstream are both hostile, and any byte sequence two HTTP implementations
 * could frame differently is refused rather than interpreted (RFC 9112).
 *
 * Heads are parsed from the start on every call (they are bounded), line by
 * line.  Every decision depends only on the bytes before the position where it
 * is made, so the result is the same whether a head arrives in one piece or one
 * byte at a time.  A line is checked only once its CRLF has arrived (or its
 * bound has passed); the bounds are what keep that wait short.
 */
#include "proxy/codec/h1_parse.h"
#include "h1_int.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#define H1_METHOD_MAX 32                        /* bytes of a request method */
#define H1_LEADING_EMPTY_LINES_MAX 2            /* CRLFs tolerated before a request line */
#define H1_CONTENT_LENGTH_MAX (UINT64_C(1) << 53)



/* ---- character classes and small helpers ---- */

int
h1_is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar / SP / HTAB: VCHAR and obs-text, no controls and no DEL. */
int
h1_is_field_byte(unsigned char c)
{
	return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f);
}

int
h1_is_ows(char c)
{
	return c == ' ' || c == '\t';
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}


static unsigned char
lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

static int
ieq_n(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	return 1;
}

/* Case-insensitive comparison of <a>/<alen> with the NUL-terminated <lit>. */
static int
ieq(const char *a, size_t alen, const char *lit)
{
	size_t n = strlen(lit);

	return alen == n && ieq_n(a, lit, n);
}

static size_t
min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * Finds the CRLF that ends the line at <p>, of which <avail> bytes are at hand.
 * The line's content plus its CR must lie within the first <window> bytes.
 * Returns LINE_OK with *<line_len> (content, without CRLF), LINE_MORE, LINE_BAD
 * for a bare CR or LF, or LINE_LONG when <window> bytes hold no line end.
 */
int
h1_line_find(const char *p, size_t avail, size_t window, size_t *line_len)
{
	size_t i, n = min_size(avail, window);

	for (i = 0; i < n; i++) {
		if (p[i] == '\n')
			return LINE_BAD;
		if (p[i] == '\r') {
			if (i + 1 == avail)
				return LINE_MORE;
			if (p[i + 1] != '\n')
				return LINE_BAD;
			*line_len = i;
			return LINE_OK;
		}
	}
	return avail >= window ? LINE_LONG : LINE_MORE;
}

/*
 * Parses one field line (no CRLF): name ":" OWS value OWS.  Returns 0 and fills
 * <h>, or -1 with *<err>.
 */
int
h1_field_parse(const char *l, size_t n, struct h1_header *h, const char **err)
{
	size_t i = 0, v, e;

	if (n > 0 && h1_is_ows(l[0])) {
		*err = "obsolete line folding";
		return -1;
	}
	while (i < n && h1_is_tchar((unsigned char)l[i]))
		i++;
	if (i == n) {
		*err = "header line without colon";
		return -1;
	}
	if (l[i] != ':') {
		*err = h1_is_ows(l[i]) ? "whitespace before colon" : "bad byte in header name";
		return -1;
	}
	if (i == 0) {
		*err = "empty header name";
		return -1;
	}
	h->name = l;
	h->name_len = i;
	for (v = i + 1; v < n && h1_is_ows(l[v]); v++)
		;
	for (e = n; e > v && h1_is_ows(l[e - 1]); e--)
		;
	for (i = v; i < e; i++) {
		if (!h1_is_field_byte((unsigned char)l[i])) {
			*err = "bad byte in header value";
			return -1;
		}
	}
	h->value = l + v;
	h->value_len = e - v;
	return 0;
}

/*
 * 1 if the comma-separated list <v>/<n> has an element equal (ignoring case
 * and surrounding OWS) to <tok>/<tlen>.
 */
static int
list_has(const char *v, size_t n, const char *tok, size_t tlen)
{
	size_t i = 0, s, e;

	while (i < n) {
		while (i < n && (h1_is_ows(v[i]) || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		for (e = i; e > s && h1_is_ows(v[e - 1]); e--)
			;
		if (e > s && e - s == tlen && ieq_n(v + s, tok, tlen))
			return 1;
	}
	return 0;
}

/* Content-Length = 1*DIGIT, bounded.  Returns 0 or -1. */
static int
content_length_parse(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit(v[i]))
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
		if (x > H1_CONTENT_LENGTH_MAX)
			return -1;
	}
	*out = x;
	return 0;
}

/* "HTTP/1.0" or "HTTP/1.1" -> 0/1; another "HTTP/d.d" -> -505; anything else -> -400. */
static int
version_parse(const char *v, size_t n)
{
	if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || !is_digit(v[5]) || v[6] != '.' || !is_digit(v[7]))
		return -400;
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return -505;
	return v[7] - '0';
}

static void
message_reset(struct h1_message *msg)
{
	/* everything but the header array, which nheaders bounds */
	memset(msg, 0, offsetof(struct h1_message, headers));
	msg->nheaders = 0;
	msg->framing = H1_BODY_NONE;
	msg->content_length = 0;
	msg->keep_alive = 0;
	msg->expect_continue = 0;
	msg->upgrade_websocket = 0;
	msg->host = NULL;
}

/* ---- heads ---- */

/*
 * Parses the field lines from <off> up to and including the empty line, within
 * <buf>/<end>.  Returns the head length, -2, or -1 with *<err> and *<status>.
 */
static int
fields_parse(const char *buf, size_t end, size_t off, size_t max_headers,
             struct h1_message *msg, const char **err, int *status)
{
	size_t n;
	int r;

	for (;;) {
		r = h1_line_find(buf + off, end - off, SIZE_MAX, &n);
		if (r == LINE_MORE)
			return -2;
		if (r != LINE_OK) {
			*err = "bare CR or LF in head";
			*status = 400;
			return -1;
		}
		if (n == 0)
			return (int)(off + 2);
		if (msg->nheaders >= max_headers) {
			*err = "too many header fields";
			*status = 431;
			return -1;
		}
		if (h1_field_parse(buf + off, n, &msg->headers[msg->nheaders], err) != 0) {
			*status = 400;
			return -1;
		}
		msg->nheaders++;
		off += n + 2;
	}
}

/* What the header fields say about framing and the connection. */
struct fields_info {
	const struct h1_header *te, *cl, *host, *upgrade;
	size_t nte, ncl, nhost, nupgrade;
	int conn_close, conn_keep_alive, conn_upgrade;
	int expect_continue, expect_other;
	uint64_t content_length;
};

static void
fields_scan(const struct h1_message *msg, struct fields_info *fi)
{
	const struct h1_header *h;
	size_t i;

	memset(fi, 0, sizeof(*fi));
	for (i = 0; i < msg->nheaders; i++) {
		h = &msg->headers[i];
		if (ieq(h->name, h->name_len, "transfer-encoding")) {
			fi->te = h;
			fi->nte++;
		} else if (ieq(h->name, h->name_len, "content-length")) {
			fi->cl = h;
			fi->ncl++;
		} else if (ieq(h->name, h->name_len, "host")) {
			fi->host = h;
			fi->nhost++;
		} else if (ieq(h->name, h->name_len, "upgrade")) {
			fi->upgrade = h;
			fi->nupgrade++;
		} else if (ieq(h->name, h->name_len, "connection")) {
			fi->conn_close |= list_has(h->value, h->value_len, "close", 5);
			fi->conn_keep_alive |= list_has(h->value, h->value_len, "keep-alive", 10);
			fi->conn_upgrade |= list_has(h->value, h->value_len, "upgrade", 7);
		} else if (ieq(h->name, h->name_len, "expect")) {
			if (ieq(h->value, h->value_len, "100-continue"))
				fi->expect_continue = 1;
			else
				fi->expect_other = 1;
		}
	}
}

/*
 * The framing rules both directions share (RFC 9112 6.1-6.3): one
 * Transfer-Encoding that is exactly "chunked", never with Content-Length, not
 * in HTTP/1.0; one well-formed Content-Length.  Returns 0 or -1 with *<err>
 * and *<status>.
 */
static int
framing_check(const struct h1_message *msg, struct fields_info *fi, const char **err, int *status)
{
	*status = 400;
	if (fi->nte > 1) {
		*err = "duplicate Transfer-Encoding";
		return -1;
	}
	if (fi->ncl > 1) {
		*err = "duplicate Content-Length";
		return -1;
	}
	if (fi->nte && fi->ncl) {
		*err = "Transfer-Encoding with Content-Length";
		return -1;
	}
	if (fi->nte && msg->minor_version == 0) {
		*err = "Transfer-Encoding in HTTP/1.0";
		return -1;
	}
	if (fi->nte && !ieq(fi->te->value, fi->te->value_len, "chunked")) {
		*err = "unsupported Transfer-Encoding";
		*status = 501;
		return -1;
	}
	if (fi->ncl && content_length_parse(fi->cl->value, fi->cl->value_len, &fi->content_length) != 0) {
		*err = "bad Content-Length";
		return -1;
	}
	*status = 0;
	return 0;
}

static void
connection_set(struct h1_message *msg, const struct fields_info *fi)
{
	if (msg->minor_version == 1)
		msg->keep_alive = !fi->conn_close;
	else
		msg->keep_alive = fi->conn_keep_alive && !fi->conn_close;
	msg->upgrade_websocket = msg->minor_version == 1 && fi->conn_upgrade && fi->nupgrade == 1 &&
	                         ieq(fi->upgrade->value, fi->upgrade->value_len, "websocket");
}

/* method SP request-target SP HTTP-version.  Returns 0 or -1 with *<err> and *<status>. */
static int
request_line_parse(const char *l, size_t n, struct h1_message *msg, const char **err, int *status)
{
	size_t i = 0, t;
	int v;

	*status = 400;
	while (i < n && h1_is_tchar((unsigned char)l[i]))
		i++;
	if (i == 0 || i == n || l[i] != ' ') {
		*err = "bad method";
		return -1;
	}
	if (i > H1_METHOD_MAX) {
		*err = "method too long";
		return -1;
	}
	msg->method = l;
	msg->method_len = i;
	t = ++i;
	while (i < n && (unsigned char)l[i] >= 0x21 && (unsigned char)l[i] <= 0x7e)
		i++;
	if (i == t) {
		*err = "empty request target";
		return -1;
	}
	if (i == n || l[i] != ' ') {
		*err = "bad request target";
		return -1;
	}
	msg->target = l + t;
	msg->target_len = i - t;
	i++;
	v = version_parse(l + i, n - i);
	if (v < 0) {
		*err = v == -505 ? "unsupported HTTP version" : "bad HTTP version";
		*status = -v;
		return -1;
	}
	msg->minor_version = v;
	*status = 0;
	return 0;
}

int
h1_parse_request(const char *buf, size_t len, const struct h1_limits *lim,
                 struct h1_message *msg, const char **err, int *status)
{
	size_t max_head = min_size(lim->max_head_bytes, INT_MAX);
	size_t max_headers = min_size(lim->max_headers, H1_MAX_HEADERS);
	size_t window = lim->max_line_bytes < SIZE_MAX ? lim->max_line_bytes + 1 : SIZE_MAX;
	size_t end = min_size(len, max_head), off = 0, n, empty = 0;
	struct fields_info fi;
	int r;

	message_reset(msg);
	*err = NULL;
	*status = 0;
	/* RFC 9112 2.2: empty lines before the request line may be ignored, a few. */
	while (off < end && buf[off] == '\r') {
		if (end - off < 2)
			goto more;
		if (buf[off + 1] != '\n' || ++empty > H1_LEADING_EMPTY_LINES_MAX) {
			*err = buf[off + 1] != '\n' ? "bare CR in head" : "too many empty lines";
			*status = 400;
			return -1;
		}
		off += 2;
	}
	r = h1_line_find(buf + off, end - off, window, &n);
	if (r == LINE_MORE)
		goto more;
	if (r == LINE_LONG) {
		*err = "request line too long";
		*status = 414;
		return -1;
	}
	if (r == LINE_BAD) {
		*err = "bare CR or LF in head";
		*status = 400;
		return -1;
	}
	if (request_line_parse(buf + off, n, msg, err, status) != 0)
		return -1;
	off += n + 2;
	r = fields_parse(buf, end, off, max_headers, msg, err, status);
	if (r == -2)
		goto more;
	if (r < 0)
		return -1;

	fields_scan(msg, &fi);
	if (framing_check(msg, &fi, err, status) != 0)
		return -1;
	*status = 400;
	if (fi.nhost > 1) {
		*err = "duplicate Host";
		return -1;
	}
	if (fi.nhost == 0 && msg->minor_version == 1) {
		*err = "missing Host";
		return -1;
	}
	if (fi.expect_other) {
		*err = "unsupported Expect";
		*status = 417;
		return -1;
	}
	*status = 0;
	msg->host = fi.host;
	if (fi.nte) {
		msg->framing = H1_BODY_CHUNKED;
	} else if (fi.ncl && fi.content_length > 0) {
		msg->framing = H1_BODY_LENGTH;
		msg->content_length = fi.content_length;
	}
	/* RFC 9110 10.1.1: a 100-continue expectation in HTTP/1.0 is ignored. */
	msg->expect_continue = fi.expect_continue && msg->minor_version == 1;
	connection_set(msg, &fi);
	return r;

more:
	if (len > max_head) {
		*err = "request head too large";
		*status = 431;
		return -1;
	}
	return -2;
}

/* HTTP-version SP 3DIGIT [SP reason-phrase].  Returns 0 or -1 with *<err>. */
static int
status_line_parse(const char *l, size_t n, struct h1_message *msg, const char **err)
{
	size_t i;
	int v;

	if (n < 12 || l[8] != ' ') {
		*err = "bad status line";
		return -1;
	}
	v = version_parse(l, 8);
	if (v < 0) {
		*err = "bad HTTP version";
		return -1;
	}
	msg->minor_version = v;
	if (!is_digit(l[9]) || !is_digit(l[10]) || !is_digit(l[11])) {
		*err = "bad status code";
		return -1;
	}
	msg->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	if (msg->status < 100 || msg->status > 599) {
		*err = "bad status code";
		return -1;
	}
	msg->reason = l + n;
	msg->reason_len = 0;
	if (n == 12)
		return 0;
	if (l[12] != ' ') {
		*err = "bad status code";
		return -1;
	}
	for (i = 13; i < n; i++) {
		if (!h1_is_field_byte((unsigned char)l[i])) {
			*err = "bad byte in reason phrase";
			return -1;
		}
	}
	msg->reason = l + 13;
	msg->reason_len = n - 13;
	return 0;
}

int
h1_parse_response(const char *buf, size_t len, const struct h1_limits *lim,
                  const char *req_method, size_t req_method_len,
                  struct h1_message *msg, const char **err)
{
	size_t max_head = min_size(lim->max_head_bytes, INT_MAX);
	size_t max_headers = min_size(lim->max_headers, H1_MAX_HEADERS);
	size_t window = lim->max_line_bytes < SIZE_MAX ? lim->max_line_bytes + 1 : SIZE_MAX;
	size_t end = min_size(len, max_head), n;
	struct fields_info fi;
	int r, status, no_body;

	message_reset(msg);
	*err = NULL;
	r = h1_line_find(buf, end, window, &n);
	if (r == LINE_MORE)
		goto more;
	if (r != LINE_OK) {
		*err = r == LINE_LONG ? "status line too long" : "bare CR or LF in head";
		return -1;
	}
	if (status_line_parse(buf, n, msg, err) != 0)
		return -1;
	r = fields_parse(buf, end, n + 2, max_headers, msg, err, &status);
	if (r == -2)
		goto more;
	if (r < 0)
		return -1;

	fields_scan(msg, &fi);
	if (framing_check(msg, &fi, err, &status) != 0)
		return -1;
	/* RFC 9112 6.3: these responses end at their head, whatever CL or TE say. */
	no_body = (msg->status >= 100 && msg->status < 200) || msg->status == 204 ||
	          msg->status == 304 ||
	          (req_method && req_method_len == 4 && memcmp(req_method, "HEAD", 4) == 0) ||
	          (req_method && req_method_len == 7 && memcmp(req_method, "CONNECT", 7) == 0 &&
	           msg->status >= 200 && msg->status < 300);
	if (no_body)
		msg->framing = H1_BODY_NONE;
	else if (fi.nte)
		msg->framing = H1_BODY_CHUNKED;
	else if (fi.ncl)
		msg->framing = fi.content_length > 0 ? H1_BODY_LENGTH : H1_BODY_NONE;
	else
		msg->framing = H1_BODY_UNTIL_CLOSE;
	if (msg->framing == H1_BODY_LENGTH)
		msg->content_length = fi.content_length;
	connection_set(msg, &fi);
	if (msg->framing == H1_BODY_UNTIL_CLOSE)
		msg->keep_alive = 0;
	return r;

more:
	if (len > max_head) {
		*err = "response head too large";
		return -1;
	}
	return -2;
}

const struct h1_header *
h1_find_header(const struct h1_message *msg, const char *name)
{
	size_t i;

	for (i = 0; i < msg->nheaders; i++)
		if (ieq(msg->headers[i].name, msg->headers[i].name_len, name))
			return &msg->headers[i];
	return NULL;
}

int
h1_is_hop_by_hop(const char *name, size_t len)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
		"proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade",
	};
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (ieq(name, len, hop[i]))
			return 1;
	return 0;
}

int
h1_connection_lists(const struct h1_message *msg, const char *name, size_t len)
{
	const struct h1_header *h;
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < msg->nheaders; i++) {
		h = &msg->headers[i];
		if (ieq(h->name, h->name_len, "connection") && list_has(h->value, h->value_len, name, len))
			return 1;
	}
	return 0;
}
