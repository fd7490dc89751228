/*
 * proxy/codec/h2conv_nv.c - HTTP/1.1 -> HTTP/2 heads: a parsed h1 response or
 * request becomes an nghttp2_nv array, with connection-specific fields
 * dropped and, when the values may hold injected secrets, every field marked
 * never-indexed (contract in proxy/codec/h2conv.h).
 */
#include "proxy/codec/h2conv.h"
#include "h2conv_int.h"

#include <stdio.h>
#include <string.h>

/* ---- h1 -> h2 ---- */

static int
nv_add(struct h2conv_nvbuf *o, const char *name, size_t nlen, int copy, const char *value,
       size_t vlen, unsigned flags)
{
	nghttp2_nv *nv;
	size_t i;

	if (o->nvlen >= o->nva_cap || (copy && nlen > o->buf_cap - o->buf_len))
		return SLUICE_ETOOBIG;
	nv = &o->nva[o->nvlen++];
	if (copy) {
		for (i = 0; i < nlen; i++)
			o->buf[o->buf_len + i] = (char)h2conv_lower((unsigned char)name[i]);
		nv->name = (uint8_t *)(o->buf + o->buf_len);
		o->buf_len += nlen;
	} else {
		nv->name = (uint8_t *)(uintptr_t)name;
	}
	nv->namelen = nlen;
	nv->value = (uint8_t *)(uintptr_t)value;
	nv->valuelen = vlen;
	nv->flags = (flags & H2CONV_NV_NO_INDEX) ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
	return 0;
}

/* A field of an h1_message HTTP/2 can carry: a token name, a value without CTLs or edge whitespace. */
static const char *
h1_field_check(const struct h1_header *h)
{
	size_t i;

	if (h->name_len == 0)
		return "empty field name";
	for (i = 0; i < h->name_len; i++)
		if (!h2conv_is_tchar((unsigned char)h->name[i]))
			return "bad byte in field name";
	return h2conv_value_check((const uint8_t *)h->value, h->value_len);
}

/* Fields that never cross into HTTP/2 (RFC 9113 8.2.2), whichever direction. */
static int
h1_dropped(const struct h1_message *msg, const struct h1_header *h)
{
	return h2conv_is_connection_specific(h->name, h->name_len) || h2conv_ieq(h->name, h->name_len, "http2-settings") ||
	       h1_connection_lists(msg, h->name, h->name_len);
}

int
h2conv_response_to_nv(const struct h1_message *msg, int has_body, unsigned flags,
                      struct h2conv_nvbuf *out, const char **err)
{
	int st = msg->status, keep_cl;
	size_t i;

	out->nvlen = 0;
	out->buf_len = 0;
	*err = NULL;
	if (st < 100 || st > 599) {
		*err = "bad status";
		return SLUICE_EINVAL;
	}
	if (st == 101) {
		*err = "101 cannot be sent over HTTP/2";
		return SLUICE_EINVAL;
	}
	if (has_body && (st < 200 || st == 204 || st == 304)) {
		*err = "body on a status that has none";
		return SLUICE_EINVAL;
	}
	if (out->buf_cap - out->buf_len < 3)
		goto toobig;
	out->buf[0] = (char)('0' + st / 100);
	out->buf[1] = (char)('0' + st / 10 % 10);
	out->buf[2] = (char)('0' + st % 10);
	out->buf_len = 3;
	if (nv_add(out, ":status", 7, 0, out->buf, 3, flags) != 0)
		goto toobig;
	keep_cl = (flags & H2CONV_NV_KEEP_CONTENT_LENGTH) && st >= 200 && st != 204;
	for (i = 0; i < msg->nheaders; i++) {
		const struct h1_header *h = &msg->headers[i];

		if ((*err = h1_field_check(h)) != NULL)
			return SLUICE_EINVAL;
		if (h1_dropped(msg, h) || h2conv_ieq(h->name, h->name_len, "te") ||
		    (h2conv_ieq(h->name, h->name_len, "content-length") && !keep_cl))
			continue;
		if (nv_add(out, h->name, h->name_len, 1, h->value, h->value_len, flags) != 0)
			goto toobig;
	}
	return 0;
toobig:
	*err = "nv buffer too small";
	return SLUICE_ETOOBIG;
}

int
h2conv_request_to_nv(const struct h1_message *msg, const char *scheme, const char *authority,
                     unsigned flags, struct h2conv_nvbuf *out, const char **err)
{
	const char *auth = authority;
	size_t alen, slen, i;
	int ws = msg->upgrade_websocket, r = 0, te = 0;

	out->nvlen = 0;
	out->buf_len = 0;
	*err = NULL;
	if (scheme == NULL)
		scheme = "https";
	slen = strlen(scheme);
	if (h2conv_ieq(msg->method, msg->method_len, "CONNECT")) {
		*err = "CONNECT cannot be sent as an HTTP/2 request";
		return SLUICE_EINVAL;
	}
	if (!(msg->target_len > 0 && msg->target[0] == '/') &&
	    !(msg->target_len == 1 && msg->target[0] == '*' && h2conv_ieq(msg->method, msg->method_len, "OPTIONS"))) {
		*err = "request target is not origin-form";
		return SLUICE_EINVAL;
	}
	if (ws && (!(flags & H2CONV_NV_EXTENDED_CONNECT) || !h2conv_ieq(msg->method, msg->method_len, "GET"))) {
		*err = "WebSocket upgrade needs extended CONNECT (RFC 8441)";
		return SLUICE_EINVAL;
	}
	if (auth != NULL) {
		alen = strlen(auth);
	} else if (msg->host != NULL) {
		auth = msg->host->value;
		alen = msg->host->value_len;
	} else {
		*err = "no authority";
		return SLUICE_EINVAL;
	}
	if (!h2conv_authority_ok((const uint8_t *)auth, alen)) {
		*err = "bad authority";
		return SLUICE_EINVAL;
	}
	/* RFC 3986 3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
	for (i = 0; i < slen; i++)
		if (!((scheme[i] >= 'a' && scheme[i] <= 'z') ||
		      (i > 0 && ((scheme[i] >= '0' && scheme[i] <= '9') || strchr("+-.", scheme[i]) != NULL))))
			break;
	if (slen == 0 || i < slen) {
		*err = "bad scheme";
		return SLUICE_EINVAL;
	}
	r |= nv_add(out, ":method", 7, 0, ws ? "CONNECT" : msg->method, ws ? 7 : msg->method_len, flags);
	r |= nv_add(out, ":scheme", 7, 0, scheme, slen, flags);
	r |= nv_add(out, ":authority", 10, 0, auth, alen, flags);
	r |= nv_add(out, ":path", 5, 0, msg->target, msg->target_len, flags);
	if (ws)
		r |= nv_add(out, ":protocol", 9, 0, "websocket", 9, flags);
	if (r != 0)
		goto toobig;
	for (i = 0; i < msg->nheaders; i++) {
		const struct h1_header *h = &msg->headers[i];

		if ((*err = h1_field_check(h)) != NULL)
			return SLUICE_EINVAL;
		/* before the Connection check: an HTTP/1.1 client lists TE there (RFC 9110 10.1.4) */
		if (h2conv_ieq(h->name, h->name_len, "te")) {
			if (!te && h2conv_list_has(h->value, h->value_len, "trailers") && (te = 1) &&
			    nv_add(out, "te", 2, 0, "trailers", 8, flags) != 0)
				goto toobig;
			continue;
		}
		if (h1_dropped(msg, h) || h2conv_ieq(h->name, h->name_len, "host"))
			continue;
		if (ws && (h2conv_ieq(h->name, h->name_len, "sec-websocket-key") ||
		           h2conv_ieq(h->name, h->name_len, "content-length")))
			continue;
		if (nv_add(out, h->name, h->name_len, 1, h->value, h->value_len, flags) != 0)
			goto toobig;
	}
	return 0;
toobig:
	*err = "nv buffer too small";
	return SLUICE_ETOOBIG;
}

/* Trailer fields that never cross: framing, routing, the trailer list itself, and hop-by-hop fields. */
static int
trailer_dropped(const char *name, size_t n)
{
	return h2conv_is_connection_specific(name, n) || h2conv_ieq(name, n, "content-length") ||
	       h2conv_ieq(name, n, "host") || h2conv_ieq(name, n, "te") || h2conv_ieq(name, n, "trailer") ||
	       h2conv_ieq(name, n, "http2-settings");
}

int
h2conv_trailers_to_nv(const char *lines, size_t len, unsigned flags, struct h2conv_nvbuf *out,
                      const char **err)
{
	size_t off = 0, end, i, nlen, v, e;
	const char *l;

	out->nvlen = 0;
	out->buf_len = 0;
	*err = NULL;
	while (off < len) {
		l = lines + off;
		/* the line: up to the first CR or LF, which must be a CRLF */
		for (end = off; end < len && lines[end] != '\r' && lines[end] != '\n'; end++)
			if (lines[end] == '\0') {
				*err = "NUL in trailer line";
				return SLUICE_EINVAL;
			}
		if (end == len) {
			*err = "trailer line without CRLF";
			return SLUICE_EINVAL;
		}
		if (lines[end] != '\r' || end + 1 == len || lines[end + 1] != '\n') {
			*err = "bare CR or LF in trailers";
			return SLUICE_EINVAL;
		}
		if (end == off) {
			*err = "empty trailer line";
			return SLUICE_EINVAL;
		}
		if (l[0] == ' ' || l[0] == '\t') {
			*err = "obsolete line folding in trailers";
			return SLUICE_EINVAL;
		}
		for (nlen = 0; off + nlen < end && h2conv_is_tchar((unsigned char)l[nlen]); nlen++)
			;
		if (off + nlen == end || l[nlen] != ':') {
			*err = "bad trailer field name";
			return SLUICE_EINVAL;
		}
		if (nlen == 0) {
			*err = "empty trailer field name";
			return SLUICE_EINVAL;
		}
		for (v = nlen + 1; off + v < end && (l[v] == ' ' || l[v] == '\t'); v++)
			;
		for (e = end - off; e > v && (l[e - 1] == ' ' || l[e - 1] == '\t'); e--)
			;
		for (i = v; i < e; i++)
			if (((unsigned char)l[i] < 0x20 && l[i] != '\t') || (unsigned char)l[i] == 0x7f) {
				*err = "control byte in trailer value";
				return SLUICE_EINVAL;
			}
		off = end + 2;
		if (trailer_dropped(l, nlen))
			continue;
		if (nv_add(out, l, nlen, 1, l + v, e - v, flags) != 0) {
			*err = "nv buffer too small";
			return SLUICE_ETOOBIG;
		}
	}
	return 0;
}
