/*
 * tests/fuzz/fuzz_ws.c - WebSocket frames: the header parser, and the relay
 * (wstunnel.c) on arbitrary client or upstream byte streams, in arbitrary
 * pieces and with arbitrary output caps.
 *
 * Layout: a mode byte (bit 0: the stream comes from the upstream, else from
 * the client; bit 1: a scrub set; bits 2-7: the piece size), a cap byte, then
 * the stream.  Checks:
 *   - a header that parses writes back (unmasked) to one that parses the same;
 *   - client side: what goes out is exactly a prefix of the input, and its
 *     unmasked payloads, end to end, never hold a whole placeholder;
 *   - upstream side: what goes out parses as strict server frames with sound
 *     message sequencing; without a scrub set it is a prefix of the input;
 *     with one, no text or binary message, nor control frame, holds the value.
 */
#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "proxy/codec/ws.h"
#include "secrets/scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH "PLACEH0"
#define PH2 "tok_XY"
#define VAL "s3cr3t!"
#define OUT_MAX (1u << 20)

static void
check_head_roundtrip(const uint8_t *p, size_t len)
{
	struct ws_frame f, g;
	uint8_t h[WS_HEAD_MAX];
	const char *err;
	size_t n;

	if (ws_frame_parse(p, len, 0, &f, &err) <= 0)
		return;
	n = ws_frame_head_write(h, f.fin, f.opcode, f.len);
	if (ws_frame_parse(h, n, 0, &g, &err) != (int)n || g.fin != f.fin || g.opcode != f.opcode || g.len != f.len)
		abort();
}

/* Unmasked payloads of the client frames in <b>, end to end (a cut last frame included), into <out>. */
static size_t
client_payloads(const uint8_t *p, size_t len, uint8_t *out)
{
	size_t pos = 0, o = 0, have;
	struct ws_frame f;
	const char *err;
	int n;

	while (pos < len) {
		n = ws_frame_parse(p + pos, len - pos, 1, &f, &err);
		if (n <= 0)
			abort();  /* the relay forwards whole, valid headers only */
		have = f.len < len - pos - (size_t)n ? (size_t)f.len : len - pos - (size_t)n;
		memcpy(out + o, p + pos + n, have);
		ws_unmask(out + o, have, f.mask, 0);
		o += have;
		pos += (size_t)n + have;
	}
	return o;
}

/* Checks upstream output frames: strict, well sequenced, and (scrubbed) no text or binary message holds VAL. */
static void
check_server_out(const uint8_t *p, size_t len, int scrubbed)
{
	struct ws_reader rd;
	uint8_t *msg = malloc(len + 1);
	size_t pos = 0, m = 0;
	const char *err;
	int n;

	ws_reader_init(&rd, 0);
	while (pos < len) {
		n = ws_reader_head(&rd, p + pos, len - pos, &err);
		if (n <= 0)
			abort();  /* headers go out whole and valid */
		pos += (size_t)n;
		size_t have = rd.left < len - pos ? (size_t)rd.left : len - pos;
		int data = (rd.kind == WS_OP_TEXT || rd.kind == WS_OP_BINARY) && rd.f.opcode < WS_OP_CLOSE;
		if (have < rd.left && scrubbed)
			abort();  /* with a set every frame is re-framed and goes out whole */
		if (scrubbed && rd.f.opcode >= WS_OP_CLOSE && (rd.left > 125 || memmem(p + pos, have, VAL, strlen(VAL))))
			abort();  /* a control frame: scrubbed, within its bound */
		if (data) {
			if (rd.f.opcode != WS_OP_CONT)
				m = 0;
			memcpy(msg + m, p + pos, have);
			m += have;
			if (scrubbed && memmem(msg, m, VAL, strlen(VAL)) != NULL)
				abort();
		}
		ws_reader_consume(&rd, have);
		pos += have;
	}
	free(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in, *out, *all;
	struct scrub_set *set = NULL;
	struct ws_tunnel *t;
	size_t step, cap, off = 0, id = 0, olen;
	struct scrub_hits hits = {{0}};
	const char *err;
	int server, r = WS_RELAY_MORE;

	if (size < 2)
		return 0;
	server = data[0] & 1;
	step = (size_t)(data[0] >> 2) + 1;
	cap = (size_t)data[1] * 37 + 1;
	data += 2;
	size -= 2;
	check_head_roundtrip(data, size);

	if (data[-2] & 2) {
		set = scrub_set_new();
		if (scrub_set_add(set, (const uint8_t *)VAL, strlen(VAL), (const uint8_t *)"<" PH ">", strlen(PH) + 2, 0))
			abort();
	}
	t = ws_tunnel_create(set);
	if (t == NULL || ws_tunnel_search_add(t, PH, strlen(PH), 1) != 0 || ws_tunnel_search_add(t, PH2, strlen(PH2), 2))
		abort();
	in = evbuffer_new();
	out = evbuffer_new();
	all = evbuffer_new();
	while (off < size || r == WS_RELAY_BLOCKED) {
		size_t n = size - off < step ? size - off : step;
		evbuffer_add(in, data + off, n);
		off += n;
		evbuffer_add_buffer(all, out);
		if (server)
			r = ws_tunnel_from_server(t, in, out, cap, &hits, &err);
		else
			r = ws_tunnel_from_client(t, in, out, cap, &id, &err);
		if (r == WS_RELAY_BAD || r == WS_RELAY_FOUND)
			break;
		if (evbuffer_get_length(all) + evbuffer_get_length(out) > OUT_MAX)
			break;
	}
	evbuffer_add_buffer(all, out);
	if (r == WS_RELAY_FOUND && (id < 1 || id > 2))
		abort();
	olen = evbuffer_get_length(all);
	const uint8_t *o = olen > 0 ? evbuffer_pullup(all, -1) : (const uint8_t *)"";
	if (!server || set == NULL) {
		/* unchanged bytes: a prefix of the input */
		if (olen > size || memcmp(o, data, olen) != 0)
			abort();
	}
	if (!server) {
		uint8_t *pl = malloc(olen + 1);
		size_t pn = client_payloads(o, olen, pl);
		if (memmem(pl, pn, PH, strlen(PH)) != NULL || memmem(pl, pn, PH2, strlen(PH2)) != NULL)
			abort();
		free(pl);
	} else {
		check_server_out(o, olen, set != NULL);
	}
	evbuffer_free(in);
	evbuffer_free(out);
	evbuffer_free(all);
	ws_tunnel_destroy(t);
	scrub_set_free(set);  /* borrowed by the tunnel */
	return 0;
}
