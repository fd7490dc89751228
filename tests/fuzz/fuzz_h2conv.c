/*
 * tests/fuzz/fuzz_h2conv.c - h2 -> h1 translation of random field lists.
 *
 * Input: byte 0 picks the translation (request, response, trailers) and the
 * flags; byte 1 the output bound; then fields, each a name and a value.  A
 * length byte below 0x30 picks a common name or value from a table (so the
 * fuzzer reaches the interesting rules), otherwise it is 0x30 + a raw length.
 *
 * Every accepted output must parse with h1_parse_request / h1_parse_response
 * / h1_chunked_decode to exactly its length, agree on method, target, status
 * and framing, fit the bound, and come from a list with no CR, LF or NUL and
 * no connection-specific field.  Accepted requests and responses are sent on
 * through the h1 -> h2 translations, whose nv values must be clean too.
 * Accepted trailers go back through h2conv_trailers_to_nv and must come out
 * the same.  Every input is also read as raw trailer lines by
 * h2conv_trailers_to_nv: what it accepts, h1_chunked_decode must accept as a
 * trailer section, and its fields must be clean and never framing fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/codec/h2conv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_NV 64
#define RAW_BASE 0x30

static const char *const NAMES[] = {
	":method", ":scheme", ":path", ":authority", ":protocol", ":status", "host", "content-length",
	"cookie", "te", "transfer-encoding", "connection", "upgrade", "expect", "sec-websocket-key",
	"sec-websocket-version", "keep-alive", "trailer", "x-a", "Content-Length", ":foo", "",
};
static const char *const VALUES[] = {
	"GET", "POST", "HEAD", "CONNECT", "OPTIONS", "https", "http", "/", "*", "/a?b", "example.com",
	"example.com:443", "EXAMPLE.com", "websocket", "trailers", "0", "5", "200", "204", "304", "100",
	"101", "100-continue", "chunked", "", " x", "a\r\nb: c", "h2c", "a=1", "[::1]:8443", "13",
};

static const struct h1_limits LIM = {1 << 16, 1 << 16, H1_MAX_HEADERS};
static nghttp2_nv nva[FUZZ_MAX_NV];
static struct h1_message msg;
static nghttp2_nv nvout[H1_MAX_HEADERS + 8];
static char nvbuf[1 << 16];

/* Takes one name or value from <d>/<n> at *<off>. */
static int
take(const uint8_t *d, size_t n, size_t *off, const char *const *tab, size_t ntab, uint8_t **p,
     size_t *len)
{
	size_t b;

	if (*off >= n)
		return -1;
	b = d[(*off)++];
	if (b < RAW_BASE) {
		*p = (uint8_t *)(uintptr_t)tab[b % ntab];
		*len = strlen(tab[b % ntab]);
		return 0;
	}
	b -= RAW_BASE;
	if (b > n - *off)
		b = n - *off;
	*p = (uint8_t *)(uintptr_t)(d + *off);
	*len = b;
	*off += b;
	return 0;
}

/* The independent oracle: nothing that could be framed differently was accepted. */
static void
list_clean(const nghttp2_nv *nv, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < nv[i].namelen; k++)
			if (nv[i].name[k] <= ' ' || nv[i].name[k] >= 0x7f || (nv[i].name[k] >= 'A' && nv[i].name[k] <= 'Z'))
				abort();
		for (k = 0; k < nv[i].valuelen; k++)
			if (nv[i].value[k] == '\r' || nv[i].value[k] == '\n' || nv[i].value[k] == '\0')
				abort();
		if (sluice_iov_ieq((const char *)nv[i].name, nv[i].namelen, "transfer-encoding") ||
		    sluice_iov_ieq((const char *)nv[i].name, nv[i].namelen, "connection") ||
		    sluice_iov_ieq((const char *)nv[i].name, nv[i].namelen, "upgrade"))
			abort();
	}
}

static void
err_sane(int r, const struct h2conv_err *e)
{
	if (r != SLUICE_EINVAL && r != SLUICE_ETOOBIG && r != SLUICE_EIO)
		abort();
	if (e->reason == NULL || e->status < 400 || e->status > 599)
		abort();
}

static void
fuzz_request(size_t n, int flags, char *out, size_t cap)
{
	struct h2conv_req_opts o = {(flags & 2) ? "example.com" : NULL, NULL, 48, flags & 1, (flags & 4) != 0};
	struct h2conv_nvbuf nb = {nvout, sizeof(nvout) / sizeof(nvout[0]), 0, nvbuf, sizeof(nvbuf), 0};
	struct h2conv_request info;
	struct h2conv_err e;
	const char *err;
	size_t len;
	int r, status;

	r = h2conv_request_to_h1(nva, n, &o, out, cap, &len, &info, &e);
	if (r != 0) {
		err_sane(r, &e);
		return;
	}
	list_clean(nva, n);
	if (len > cap || info.nfields > n)
		abort();
	r = h1_parse_request(out, len, &LIM, &msg, &err, &status);
	if (r != (int)len || msg.method_len != info.method.len || msg.target_len != info.path.len ||
	    memcmp(msg.method, info.method.base, msg.method_len) != 0 ||
	    memcmp(msg.target, info.path.base, msg.target_len) != 0 || msg.host == NULL ||
	    msg.host->value_len != info.authority.len || msg.nheaders != info.nfields)
		abort();
	if (info.content_length > 0 ? (msg.framing != H1_BODY_LENGTH ||
	                               msg.content_length != (uint64_t)info.content_length)
	                            : (msg.framing != (info.chunked ? H1_BODY_CHUNKED : H1_BODY_NONE)))
		abort();
	if (info.has_body == (flags & 1) || msg.upgrade_websocket != info.websocket)
		abort();
	/* and on toward an h2 upstream */
	r = h2conv_request_to_nv(&msg, NULL, NULL, H2CONV_NV_EXTENDED_CONNECT, &nb, &err);
	if (r != 0)
		abort();
	list_clean(nb.nva + 4 + info.websocket, nb.nvlen - 4 - (size_t)info.websocket);
}

static void
fuzz_response(size_t n, int flags, char *out, size_t cap)
{
	static const char *const methods[] = {"GET", "HEAD", "CONNECT", "POST"};
	const char *m = methods[(flags >> 1) & 3];
	struct h2conv_resp_opts o = {48, flags & 1, m, strlen(m)};
	struct h2conv_nvbuf nb = {nvout, sizeof(nvout) / sizeof(nvout[0]), 0, nvbuf, sizeof(nvbuf), 0};
	struct h2conv_response info;
	struct h2conv_err e;
	const char *err;
	size_t len;
	int r;

	r = h2conv_response_to_h1(nva, n, &o, out, cap, &len, &info, &e);
	if (r != 0) {
		err_sane(r, &e);
		return;
	}
	list_clean(nva, n);
	if (len > cap || info.nfields > n)
		abort();
	r = h1_parse_response(out, len, &LIM, m, strlen(m), &msg, &err);
	if (r != (int)len || msg.status != info.status || msg.framing != info.framing ||
	    msg.nheaders != info.nfields || msg.status == 101)
		abort();
	if (info.framing == H1_BODY_LENGTH && msg.content_length != (uint64_t)info.content_length)
		abort();
	r = h2conv_response_to_nv(&msg, info.framing != H1_BODY_NONE, H2CONV_NV_KEEP_CONTENT_LENGTH, &nb, &err);
	if (r != 0)
		abort();
	list_clean(nb.nva + 1, nb.nvlen - 1);
}

static void
fuzz_trailers(size_t n, char *out, size_t cap)
{
	struct h2conv_err e;
	struct h1_chunked ch;
	const char *data, *tr, *err;
	size_t len, dlen, trlen;
	int r, done = 0;

	r = h2conv_trailers_to_h1(nva, n, 48, out, cap, &len, &e);
	if (r != 0) {
		err_sane(r, &e);
		return;
	}
	list_clean(nva, n);
	h1_chunked_init(&ch, 1 << 16);
	r = h1_chunked_decode(&ch, out, len, &data, &dlen, &done, &tr, &trlen, &err);
	if (len > cap || r != (int)len || !done || dlen != 0)
		abort();
	/* and back to h2: the same fields, in order (http2-settings, which HTTP/1.1 may carry, dropped) */
	struct h2conv_nvbuf nb = {nvout, sizeof(nvout) / sizeof(nvout[0]), 0, nvbuf, sizeof(nvbuf), 0};
	size_t i, k = 0;
	if (h2conv_trailers_to_nv(tr, trlen, 0, &nb, &err) != 0)
		abort();
	for (i = 0; i < n; i++) {
		if (sluice_iov_ieq((const char *)nva[i].name, nva[i].namelen, "http2-settings"))
			continue;
		if (k >= nb.nvlen || nb.nva[k].namelen != nva[i].namelen ||
		    memcmp(nb.nva[k].name, nva[i].name, nva[i].namelen) != 0 || nb.nva[k].valuelen != nva[i].valuelen ||
		    memcmp(nb.nva[k].value, nva[i].value, nva[i].valuelen) != 0)
			abort();
		k++;
	}
	if (k != nb.nvlen)
		abort();
}

/* Raw bytes as a trailer section of a chunked body, toward an h2 client. */
static void
fuzz_raw_trailers(const uint8_t *d, size_t n)
{
	struct h2conv_nvbuf nb = {nvout, sizeof(nvout) / sizeof(nvout[0]), 0, nvbuf, sizeof(nvbuf), 0};
	struct h1_chunked ch;
	const char *err, *data, *tr;
	size_t i, dlen, trlen;
	char *body;
	int r, done = 0;

	r = h2conv_trailers_to_nv((const char *)d, n, H2CONV_NV_NO_INDEX, &nb, &err);
	if (r != 0) {
		if ((r != SLUICE_EINVAL && r != SLUICE_ETOOBIG) || err == NULL)
			abort();
		return;
	}
	list_clean(nb.nva, nb.nvlen);
	for (i = 0; i < nb.nvlen; i++) {
		const nghttp2_nv *nv = &nb.nva[i];

		if (nv->namelen == 0 || nv->flags != NGHTTP2_NV_FLAG_NO_INDEX ||
		    (nv->valuelen > 0 && (nv->value[0] == ' ' || nv->value[nv->valuelen - 1] == ' ')) ||
		    (const char *)nv->value < (const char *)d || (const char *)nv->value + nv->valuelen > (const char *)d + n)
			abort();
		if (sluice_iov_ieq((const char *)nv->name, nv->namelen, "content-length") ||
		    sluice_iov_ieq((const char *)nv->name, nv->namelen, "host") ||
		    sluice_iov_ieq((const char *)nv->name, nv->namelen, "te") ||
		    sluice_iov_ieq((const char *)nv->name, nv->namelen, "trailer"))
			abort();
	}
	/* the HTTP/1.1 decoder agrees these were trailer lines */
	body = malloc(n + 5);
	if (body == NULL)
		return;
	memcpy(body, "0\r\n", 3);
	memcpy(body + 3, d, n);
	memcpy(body + 3 + n, "\r\n", 2);
	h1_chunked_init(&ch, n + 1);
	r = h1_chunked_decode(&ch, body, n + 5, &data, &dlen, &done, &tr, &trlen, &err);
	if (r != (int)(n + 5) || !done || trlen != n)
		abort();
	free(body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0, off = 2, cap;
	char *out;
	int mode, flags;

	if (size < 2)
		return 0;
	mode = data[0] % 3;
	flags = data[0] / 3;
	cap = 16 + (size_t)data[1] * 16;
	while (n < FUZZ_MAX_NV) {
		if (take(data, size, &off, NAMES, sizeof(NAMES) / sizeof(NAMES[0]), &nva[n].name, &nva[n].namelen) != 0 ||
		    take(data, size, &off, VALUES, sizeof(VALUES) / sizeof(VALUES[0]), &nva[n].value, &nva[n].valuelen) != 0)
			break;
		nva[n].flags = 0;
		n++;
	}
	out = malloc(cap);   /* exact size: ASan sees any write past the bound */
	if (out == NULL)
		return 0;
	if (mode == 0)
		fuzz_request(n, flags, out, cap);
	else if (mode == 1)
		fuzz_response(n, flags, out, cap);
	else
		fuzz_trailers(n, out, cap);
	free(out);
	fuzz_raw_trailers(data + 2, size - 2);
	return 0;
}
