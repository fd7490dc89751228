/*
 * proxy/codec/tls_hello.c - a small parser for the TLS ClientHello: SNI and ALPN.
 *
 * The bytes come from the sandbox before any TLS library has seen them, and
 * the SNI found here decides where the connection may go, so every length is
 * checked against what encloses it and anything odd is refused: a TLS stack
 * that read the same bytes differently must not see another name.
 * RFC 8446 4.1.2 (ClientHello), RFC 6066 3 (server_name), RFC 7301 (ALPN).
 */
#include "proxy/codec/tls_hello.h"

#include <string.h>

#define TLS_RECORD_HEADER 5
#define TLS_RECORD_MAX 16384           /* RFC 8446 5.1: plaintext fragment bound */
#define TLS_CONTENT_HANDSHAKE 22
#define TLS_HANDSHAKE_CLIENT_HELLO 1
#define TLS_HANDSHAKE_HEADER 4
#define TLS_RANDOM_LEN 32
#define TLS_SESSION_ID_MAX 32
#define TLS_EXT_SERVER_NAME 0
#define TLS_EXT_ALPN 16
#define TLS_SNI_HOST_NAME 0

/* A bounds-checked reader over a byte view. */
struct reader {
	const uint8_t *p;
	size_t len;
};

static int
rd_u8(struct reader *r, unsigned *v)
{
	if (r->len < 1)
		return -1;
	*v = r->p[0];
	r->p++;
	r->len--;
	return 0;
}

static int
rd_u16(struct reader *r, unsigned *v)
{
	if (r->len < 2)
		return -1;
	*v = ((unsigned)r->p[0] << 8) | r->p[1];
	r->p += 2;
	r->len -= 2;
	return 0;
}

/* Takes <n> bytes from <r> into <sub>. */
static int
rd_sub(struct reader *r, size_t n, struct reader *sub)
{
	if (r->len < n)
		return -1;
	sub->p = r->p;
	sub->len = n;
	r->p += n;
	r->len -= n;
	return 0;
}

/* A u8- or u16-length-prefixed vector. */
static int
rd_vec8(struct reader *r, struct reader *sub)
{
	unsigned n;

	return rd_u8(r, &n) == 0 ? rd_sub(r, n, sub) : -1;
}

static int
rd_vec16(struct reader *r, struct reader *sub)
{
	unsigned n;

	return rd_u16(r, &n) == 0 ? rd_sub(r, n, sub) : -1;
}

/* server_name: a ServerNameList holding exactly one host_name, 1..255 visible ASCII bytes. */
static int
sni_parse(struct reader ext, struct tls_hello *out)
{
	struct reader list, name;
	unsigned type;
	size_t i;

	if (rd_vec16(&ext, &list) != 0 || ext.len != 0)
		return -1;
	if (rd_u8(&list, &type) != 0 || type != TLS_SNI_HOST_NAME)
		return -1;
	if (rd_vec16(&list, &name) != 0 || list.len != 0)
		return -1;
	if (name.len < 1 || name.len > sizeof(out->sni) - 1)
		return -1;
	for (i = 0; i < name.len; i++)
		if (name.p[i] < 0x21 || name.p[i] > 0x7e)
			return -1;
	memcpy(out->sni, name.p, name.len);
	out->sni[name.len] = '\0';
	out->sni_len = name.len;
	out->has_sni = 1;
	return 0;
}

/* ALPN: a non-empty ProtocolNameList of 1..255-byte names; keeps the first few. */
static int
alpn_parse(struct reader ext, struct tls_hello *out)
{
	struct reader list, name;

	if (rd_vec16(&ext, &list) != 0 || ext.len != 0 || list.len == 0)
		return -1;
	while (list.len > 0) {
		if (rd_vec8(&list, &name) != 0 || name.len == 0)
			return -1;
		if (out->nalpn < TLS_HELLO_MAX_ALPN) {
			memcpy(out->alpn[out->nalpn].name, name.p, name.len);
			out->alpn[out->nalpn].name[name.len] = '\0';
			out->alpn[out->nalpn].len = name.len;
			out->nalpn++;
		}
	}
	return 0;
}

/* The ClientHello body (after the handshake header). */
static int
client_hello_parse(struct reader r, struct tls_hello *out)
{
	struct reader v, exts, ext;
	uint8_t seen[65536 / 8];
	unsigned version, type;

	if (rd_u16(&r, &version) != 0 || (version >> 8) != 3)
		return -1;
	out->legacy_version = (uint16_t)version;
	if (rd_sub(&r, TLS_RANDOM_LEN, &v) != 0)
		return -1;
	if (rd_vec8(&r, &v) != 0 || v.len > TLS_SESSION_ID_MAX)
		return -1;
	if (rd_vec16(&r, &v) != 0 || v.len < 2 || v.len % 2 != 0)
		return -1;
	if (rd_vec8(&r, &v) != 0 || v.len < 1)
		return -1;
	if (r.len == 0)
		return 0;   /* no extensions */
	if (rd_vec16(&r, &exts) != 0 || r.len != 0)
		return -1;
	memset(seen, 0, sizeof(seen));
	while (exts.len > 0) {
		if (rd_u16(&exts, &type) != 0 || rd_vec16(&exts, &ext) != 0)
			return -1;
		if (seen[type / 8] & (1u << (type % 8)))
			return -1;   /* RFC 8446 4.2: at most one extension of each type */
		seen[type / 8] |= (uint8_t)(1u << (type % 8));
		if (type == TLS_EXT_SERVER_NAME && sni_parse(ext, out) != 0)
			return -1;
		if (type == TLS_EXT_ALPN && alpn_parse(ext, out) != 0)
			return -1;
	}
	return 0;
}

int
tls_hello_parse(const uint8_t *buf, size_t len, struct tls_hello *out)
{
	/* The handshake message, reassembled from the fragments of its records. */
	uint8_t hs[TLS_HELLO_MAX_BYTES];
	size_t off = 0, hlen = 0, rlen, mlen = 0;
	struct reader body;

	memset(out, 0, sizeof(*out));
	for (;;) {
		if (len - off >= 1 && buf[off] != TLS_CONTENT_HANDSHAKE)
			return -1;
		if (len - off >= 2 && buf[off + 1] != 3)
			return -1;
		if (len - off >= 3 && buf[off + 2] > 4)
			return -1;
		if (len - off < TLS_RECORD_HEADER)
			return -2;
		rlen = ((size_t)buf[off + 3] << 8) | buf[off + 4];
		if (rlen == 0 || rlen > TLS_RECORD_MAX)
			return -1;
		if (off + TLS_RECORD_HEADER + rlen > TLS_HELLO_MAX_BYTES)
			return -1;
		if (len - off - TLS_RECORD_HEADER < rlen)
			return -2;
		/* hlen + rlen <= off + 5 + rlen <= TLS_HELLO_MAX_BYTES */
		memcpy(hs + hlen, buf + off + TLS_RECORD_HEADER, rlen);
		hlen += rlen;
		off += TLS_RECORD_HEADER + rlen;
		if (hs[0] != TLS_HANDSHAKE_CLIENT_HELLO)
			return -1;
		if (hlen < TLS_HANDSHAKE_HEADER)
			continue;
		mlen = ((size_t)hs[1] << 16) | ((size_t)hs[2] << 8) | hs[3];
		if (mlen > TLS_HELLO_MAX_BYTES)
			return -1;
		if (hlen - TLS_HANDSHAKE_HEADER >= mlen)
			break;
	}
	body.p = hs + TLS_HANDSHAKE_HEADER;
	body.len = mlen;
	if (client_hello_parse(body, out) != 0) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return (int)off;
}

int
tls_hello_looks_tls(const uint8_t *buf, size_t len)
{
	if (len < 1 || buf[0] != TLS_CONTENT_HANDSHAKE)
		return 0;
	return len < 2 || buf[1] == 3;
}
