/*
 * proxy/codec/ws.c - WebSocket frame headers and the per-direction frame reader
 * (RFC 6455 section 5).  Pure: no I/O, no allocation.
 */
#include <string.h>

#include <openssl/evp.h>
#include "common/b64.h"
#include "proxy/codec/ws.h"

#define WS_LEN16 126        /* 7-bit length value announcing a 16-bit length */
#define WS_LEN64 127        /* ... a 64-bit length */

static int
opcode_known(unsigned op)
{
	return op == WS_OP_CONT || op == WS_OP_TEXT || op == WS_OP_BINARY || op == WS_OP_CLOSE || op == WS_OP_PING ||
	       op == WS_OP_PONG;
}

int
ws_frame_parse(const uint8_t *p, size_t len, int from_client, struct ws_frame *f, const char **err)
{
	size_t need = 2, i;
	unsigned len7;
	uint64_t n;

	if (len < 2)
		return -2;
	f->fin = (p[0] & 0x80) != 0;
	f->opcode = p[0] & 0x0F;
	f->masked = (p[1] & 0x80) != 0;
	len7 = p[1] & 0x7F;
	if ((p[0] & 0x70) != 0) {
		*err = "reserved bits set (no extension was negotiated)";
		return -1;
	}
	if (!opcode_known(f->opcode)) {
		*err = "unknown opcode";
		return -1;
	}
	if (f->opcode >= WS_OP_CLOSE) {
		if (!f->fin) {
			*err = "fragmented control frame";
			return -1;
		}
		if (len7 > WS_CONTROL_MAX) {
			*err = "control frame longer than 125 bytes";
			return -1;
		}
	}
	if (from_client && !f->masked) {
		*err = "client frame not masked";
		return -1;
	}
	if (!from_client && f->masked) {
		*err = "server frame masked";
		return -1;
	}
	if (len7 == WS_LEN16)
		need += 2;
	else if (len7 == WS_LEN64)
		need += 8;
	if (len < need)
		return -2;
	if (len7 < WS_LEN16) {
		n = len7;
	} else {
		n = 0;
		for (i = 2; i < need; i++)
			n = n << 8 | p[i];
		if (len7 == WS_LEN64 && (n >> 63) != 0) {
			*err = "64-bit length with the top bit set";
			return -1;
		}
		if ((len7 == WS_LEN16 && n < WS_LEN16) || (len7 == WS_LEN64 && n <= 0xFFFF)) {
			*err = "non-minimal length encoding";
			return -1;
		}
	}
	f->len = n;
	if (f->masked) {
		if (len < need + 4)
			return -2;
		memcpy(f->mask, p + need, 4);
		need += 4;
	} else {
		memset(f->mask, 0, sizeof(f->mask));
	}
	return (int)need;
}

size_t
ws_frame_head_write(uint8_t *out, int fin, unsigned opcode, uint64_t len)
{
	size_t n = 2, i;

	out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0F));
	if (len < WS_LEN16) {
		out[1] = (uint8_t)len;
		return n;
	}
	if (len <= 0xFFFF) {
		out[1] = WS_LEN16;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		return 4;
	}
	out[1] = WS_LEN64;
	for (i = 0; i < 8; i++)
		out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
	return 10;
}

void
ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] ^= mask[(off + i) & 3];
}

void
ws_reader_init(struct ws_reader *rd, int from_client)
{
	memset(rd, 0, sizeof(*rd));
	rd->from_client = from_client;
}

int
ws_reader_head(struct ws_reader *rd, const uint8_t *p, size_t len, const char **err)
{
	struct ws_frame f;
	int n;

	if (rd->in_frame) {
		*err = "frame header read inside a frame";
		return -1;
	}
	n = ws_frame_parse(p, len, rd->from_client, &f, err);
	if (n < 0)
		return n;
	if (f.opcode == WS_OP_CONT && rd->msg == 0) {
		*err = "continuation frame outside a fragmented message";
		return -1;
	}
	if ((f.opcode == WS_OP_TEXT || f.opcode == WS_OP_BINARY) && rd->msg != 0) {
		*err = "new data frame inside a fragmented message";
		return -1;
	}
	rd->f = f;
	rd->kind = f.opcode == WS_OP_CONT ? rd->msg : f.opcode;
	if (f.opcode < WS_OP_CLOSE)
		rd->msg = f.fin ? 0 : rd->kind;
	rd->left = f.len;
	rd->off = 0;
	rd->in_frame = 1;
	return n;
}

int
ws_reader_consume(struct ws_reader *rd, uint64_t n)
{
	if (!rd->in_frame)
		return 0;
	if (n > rd->left)
		n = rd->left;  /* a caller bug; the frame simply ends */
	rd->left -= n;
	rd->off += n;
	if (rd->left > 0)
		return 0;
	rd->in_frame = 0;
	return 1;
}

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  /* RFC 6455 1.3 */
#define WS_KEY_MAX 64  /* a key is 24 bytes of base64; anything much longer is not one */

int
ws_accept(const char *key, size_t key_len, char out[WS_ACCEPT_LEN + 1])
{
	unsigned char in[WS_KEY_MAX + sizeof(WS_GUID) - 1], md[EVP_MAX_MD_SIZE];
	char b64[B64_ENCODED_LEN(EVP_MAX_MD_SIZE)];
	unsigned int mdlen = 0;
	size_t n;

	if (key_len == 0 || key_len > WS_KEY_MAX)
		return -1;
	memcpy(in, key, key_len);
	memcpy(in + key_len, WS_GUID, sizeof(WS_GUID) - 1);
	if (EVP_Digest(in, key_len + sizeof(WS_GUID) - 1, md, &mdlen, EVP_sha1(), NULL) != 1)
		return -1;
	n = b64_encode(b64, md, mdlen);
	if (n != WS_ACCEPT_LEN)
		return -1;
	memcpy(out, b64, WS_ACCEPT_LEN);
	out[WS_ACCEPT_LEN] = '\0';
	return 0;
}
