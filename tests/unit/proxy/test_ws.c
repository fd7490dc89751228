/*
 * tests/unit/proxy/test_ws.c - WebSocket frames: the header parser and reader
 * (ws.c), and the relay (wstunnel.c) on libevent buffers: placeholder search
 * in client frames, scrubbing and re-framing of upstream text frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "common/sluice.h"
#include "secrets/detect.h"
#include "proxy/codec/ws.h"
#include "secrets/scrub.h"

#define PH "tst_ph_0123456789abcdefABCDEF"        /* a placeholder */
#define PH2 "tst_ph_second_placeholder_xyz"
#define VAL "tst_REALVALUE_9f8e7d6c5b4a39281706"  /* the value behind PH */

static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

/* ---- helpers ---- */

/* Appends one frame: masked with MASK when <masked>, FIN when <fin>. */
static void
frame(struct evbuffer *b, int fin, unsigned op, int masked, const void *data, size_t len)
{
	uint8_t h[WS_HEAD_MAX];
	size_t hl = ws_frame_head_write(h, fin, op, len);
	uint8_t *p = malloc(len + 1);

	if (masked) {
		h[1] |= 0x80;
		memcpy(h + hl, MASK, 4);
		hl += 4;
	}
	memcpy(p, data, len);
	if (masked)
		ws_unmask(p, len, MASK, 0);
	evbuffer_add(b, h, hl);
	evbuffer_add(b, p, len);
	free(p);
}

static void
cframe(struct evbuffer *b, int fin, unsigned op, const char *s)
{
	frame(b, fin, op, 1, s, strlen(s));
}

/* Decodes frames from <b> into: each frame as "op:fin:payload|", payload unmasked. Returns 0 or -1. */
static int
decode(struct evbuffer *b, int from_client, char *out, size_t cap)
{
	size_t len = evbuffer_get_length(b), pos = 0, o = 0;
	const uint8_t *p = evbuffer_pullup(b, -1);
	struct ws_frame f;
	const char *err;
	int n;

	out[0] = '\0';
	while (pos < len) {
		n = ws_frame_parse(p + pos, len - pos, from_client, &f, &err);
		if (n < 0 || f.len > len - pos - (size_t)n)
			return -1;
		uint8_t *d = malloc(f.len + 1);
		memcpy(d, p + pos + n, f.len);
		ws_unmask(d, f.len, f.mask, 0);
		o += (size_t)snprintf(out + o, cap - o, "%u:%d:%.*s|", f.opcode, f.fin, (int)f.len, (const char *)d);
		free(d);
		pos += (size_t)n + f.len;
		if (o >= cap)
			return -1;
	}
	return 0;
}

/* The payloads of <b>'s data frames, unmasked and concatenated (the last frame may be cut short). */
static size_t
payloads(struct evbuffer *b, int from_client, char *out, size_t cap)
{
	size_t len = evbuffer_get_length(b), pos = 0, o = 0;
	const uint8_t *p = evbuffer_pullup(b, -1);
	struct ws_frame f;
	const char *err;
	int n;

	while (pos < len) {
		n = ws_frame_parse(p + pos, len - pos, from_client, &f, &err);
		assert_true(n > 0);
		/* the last frame may be cut (the relay forwards payloads as they are decided) */
		size_t have = f.len < len - pos - (size_t)n ? (size_t)f.len : len - pos - (size_t)n;
		if (f.opcode < WS_OP_CLOSE) {
			assert_true(o + have < cap);
			memcpy(out + o, p + pos + n, have);
			ws_unmask((uint8_t *)out + o, have, f.mask, 0);
			o += have;
		}
		pos += (size_t)n + have;
	}
	out[o] = '\0';
	return o;
}

/* The tunnels borrow their sets: kept here, freed when the group ends. */
static struct scrub_set *sets[1024];
static size_t nsets;

static int
free_sets(void **state)
{
	(void)state;
	while (nsets > 0)
		scrub_set_free(sets[--nsets]);
	return 0;
}

static struct ws_tunnel *
tunnel_with(int scrub)
{
	struct scrub_set *s = NULL;
	struct ws_tunnel *t;

	if (scrub) {
		assert_true(nsets < sizeof(sets) / sizeof(sets[0]));
		s = sets[nsets++] = scrub_set_new();
		assert_int_equal(scrub_set_add_secret(s, (const uint8_t *)VAL, strlen(VAL), PH, 0), 0);
	}
	t = ws_tunnel_create(s);
	assert_non_null(t);
	assert_int_equal(ws_tunnel_search_add(t, PH, strlen(PH), 7), 0);
	assert_int_equal(ws_tunnel_search_add(t, PH2, strlen(PH2), 9), 0);
	return t;
}

/* Feeds <src> to the client side <step> bytes at a time; returns the last code, output in <out>. */
static int
client_feed(struct ws_tunnel *t, struct evbuffer *src, size_t step, struct evbuffer *out, size_t *id, const char **err)
{
	struct evbuffer *in = evbuffer_new();
	int r = WS_RELAY_MORE;

	while (evbuffer_get_length(src) > 0) {
		evbuffer_remove_buffer(src, in, step);
		r = ws_tunnel_from_client(t, in, out, 1 << 20, id, err);
		if (r != WS_RELAY_MORE)
			break;
	}
	evbuffer_free(in);
	return r;
}

static int
server_feed(struct ws_tunnel *t, struct evbuffer *src, size_t step, struct evbuffer *out, uint32_t *hits,
            const char **err)
{
	struct evbuffer *in = evbuffer_new();
	struct scrub_hits h;
	int r = WS_RELAY_MORE;

	memset(&h, 0, sizeof(h));
	while (evbuffer_get_length(src) > 0) {
		evbuffer_remove_buffer(src, in, step);
		r = ws_tunnel_from_server(t, in, out, 1 << 20, &h, err);
		if (r != WS_RELAY_MORE)
			break;
	}
	*hits = (uint32_t)h.w[0];
	evbuffer_free(in);
	return r;
}

static int
contains(struct evbuffer *b, const char *needle)
{
	size_t len = evbuffer_get_length(b);

	return len > 0 && memmem(evbuffer_pullup(b, -1), len, needle, strlen(needle)) != NULL;
}

/* ---- ws_frame_parse ---- */

static void
test_parse_valid(void **state)
{
	struct ws_frame f;
	const char *err = NULL;
	uint8_t b[16] = {0x81, 0x85, 1, 2, 3, 4};

	(void)state;
	assert_int_equal(ws_frame_parse(b, 6, 1, &f, &err), 6);
	assert_int_equal(f.fin, 1);
	assert_int_equal(f.opcode, WS_OP_TEXT);
	assert_int_equal(f.masked, 1);
	assert_int_equal(f.len, 5);
	assert_memory_equal(f.mask, "\1\2\3\4", 4);
	/* every shorter prefix needs more */
	for (size_t k = 0; k < 6; k++)
		assert_int_equal(ws_frame_parse(b, k, 1, &f, &err), -2);
	/* server: unmasked, 16-bit length */
	uint8_t s16[4] = {0x02, 126, 0x01, 0x00};
	assert_int_equal(ws_frame_parse(s16, 4, 0, &f, &err), 4);
	assert_int_equal(f.fin, 0);
	assert_int_equal(f.opcode, WS_OP_BINARY);
	assert_int_equal(f.len, 256);
	assert_int_equal(ws_frame_parse(s16, 3, 0, &f, &err), -2);
	/* 64-bit length, largest allowed */
	uint8_t s64[10] = {0x80, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_int_equal(ws_frame_parse(s64, 10, 0, &f, &err), 10);
	assert_int_equal(f.len, UINT64_MAX >> 1);
	assert_int_equal(f.opcode, WS_OP_CONT);
	/* control frames of 125 bytes and ping/pong/close */
	uint8_t c[6] = {0x89, 0x80 | 125, 0, 0, 0, 0};
	assert_int_equal(ws_frame_parse(c, 6, 1, &f, &err), 6);
	assert_int_equal(f.opcode, WS_OP_PING);
	c[0] = 0x8A;
	assert_int_equal(ws_frame_parse(c, 6, 1, &f, &err), 6);
	c[0] = 0x88;
	assert_int_equal(ws_frame_parse(c, 6, 1, &f, &err), 6);
}

static void
expect_bad(const uint8_t *b, size_t len, int from_client, const char *why)
{
	struct ws_frame f;
	const char *err = NULL;

	assert_int_equal(ws_frame_parse(b, len, from_client, &f, &err), -1);
	assert_non_null(err);
	assert_string_equal(err, why);
}

static void
test_parse_refusals(void **state)
{
	(void)state;
	expect_bad((const uint8_t *)"\xC1\x80", 2, 1, "reserved bits set (no extension was negotiated)");
	expect_bad((const uint8_t *)"\xA1\x80", 2, 1, "reserved bits set (no extension was negotiated)");
	expect_bad((const uint8_t *)"\x91\x80", 2, 1, "reserved bits set (no extension was negotiated)");
	for (unsigned op = 3; op < 16; op++) {
		uint8_t b[2] = {(uint8_t)(0x80 | op), 0x80};
		if (op >= 8 && op <= 10)
			continue;
		expect_bad(b, 2, 1, "unknown opcode");
	}
	expect_bad((const uint8_t *)"\x89\xFE", 2, 1, "control frame longer than 125 bytes");
	expect_bad((const uint8_t *)"\x88\xFF", 2, 1, "control frame longer than 125 bytes");
	expect_bad((const uint8_t *)"\x09\x80", 2, 1, "fragmented control frame");
	expect_bad((const uint8_t *)"\x81\x05", 2, 1, "client frame not masked");
	expect_bad((const uint8_t *)"\x81\x85", 2, 0, "server frame masked");
	expect_bad((const uint8_t *)"\x82\x7E\x00\x7D", 4, 0, "non-minimal length encoding");
	expect_bad((const uint8_t *)"\x82\x7F\x00\x00\x00\x00\x00\x00\xFF\xFF", 10, 0, "non-minimal length encoding");
	expect_bad((const uint8_t *)"\x82\x7F\x80\x00\x00\x00\x00\x00\x00\x00", 10, 0, "64-bit length with the top bit set");
	/* refused as soon as the two first bytes are in */
	expect_bad((const uint8_t *)"\xC2\x7F", 2, 0, "reserved bits set (no extension was negotiated)");
}

static void
test_head_write(void **state)
{
	static const uint64_t lens[] = {0, 1, 125, 126, 65535, 65536, 1u << 31, UINT64_MAX >> 1};
	static const size_t hls[] = {2, 2, 2, 4, 4, 10, 10, 10};
	uint8_t h[WS_HEAD_MAX];
	struct ws_frame f;
	const char *err;

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n = ws_frame_head_write(h, (int)(i & 1), WS_OP_TEXT, lens[i]);
		assert_int_equal(n, hls[i]);
		assert_int_equal(ws_frame_parse(h, n, 0, &f, &err), (int)n);
		assert_int_equal(f.len, lens[i]);
		assert_int_equal(f.fin, (int)(i & 1));
		assert_int_equal(f.opcode, WS_OP_TEXT);
	}
}

static void
test_unmask_offset(void **state)
{
	uint8_t a[9] = "abcdefgh", b[9] = "abcdefgh";

	(void)state;
	ws_unmask(a, 8, MASK, 0);
	ws_unmask(b, 3, MASK, 0);
	ws_unmask(b + 3, 5, MASK, 3);
	assert_memory_equal(a, b, 8);
	ws_unmask(a, 8, MASK, 0);
	assert_memory_equal(a, "abcdefgh", 8);
}

/* ---- ws_reader: message sequencing ---- */

static void
test_reader_sequence(void **state)
{
	struct ws_reader rd;
	const char *err = NULL;

	(void)state;
	ws_reader_init(&rd, 0);
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x00\x00", 2, &err), -1);
	assert_string_equal(err, "continuation frame outside a fragmented message");
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x01\x02", 2, &err), 2);  /* text, not FIN */
	assert_int_equal(rd.kind, WS_OP_TEXT);
	assert_int_equal(rd.msg, WS_OP_TEXT);
	assert_int_equal(ws_reader_consume(&rd, 1), 0);
	assert_int_equal(ws_reader_consume(&rd, 1), 1);
	assert_int_equal(rd.in_frame, 0);
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x89\x00", 2, &err), 2);  /* ping inside the message */
	assert_int_equal(rd.kind, WS_OP_PING);
	assert_int_equal(ws_reader_consume(&rd, 0), 1);
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x82\x00", 2, &err), -1);
	assert_string_equal(err, "new data frame inside a fragmented message");
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x80\x01", 2, &err), 2);  /* continuation, FIN */
	assert_int_equal(rd.kind, WS_OP_TEXT);
	assert_int_equal(rd.msg, 0);
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x82\x00", 2, &err), -1);
	assert_string_equal(err, "frame header read inside a frame");
	assert_int_equal(ws_reader_consume(&rd, 1), 1);
	assert_int_equal(ws_reader_head(&rd, (const uint8_t *)"\x82\x00", 2, &err), 2);
	assert_int_equal(rd.kind, WS_OP_BINARY);
}

/* ---- the relay: client frames ---- */

static void
test_client_forwarded_unchanged(void **state)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *src = evbuffer_new(), *copy = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	size_t id = 0;
	char big[70000];

	(void)state;
	memset(big, 'x', sizeof(big));
	memcpy(big + 100, "tst_ph_0123", 11);  /* a prefix of PH, not PH */
	cframe(src, 1, WS_OP_TEXT, "hello");
	frame(src, 0, WS_OP_BINARY, 1, big, sizeof(big));
	cframe(src, 1, WS_OP_PING, "ping");
	cframe(src, 1, WS_OP_CONT, "tst_ph_0123456789abcdefABCDE");  /* all but PH's last byte, at a frame end */
	cframe(src, 1, WS_OP_CLOSE, "");
	evbuffer_add_buffer_reference(copy, src);
	assert_int_equal(client_feed(t, src, 1, out, &id, &err), WS_RELAY_MORE);
	assert_int_equal(evbuffer_get_length(out), evbuffer_get_length(copy));
	assert_memory_equal(evbuffer_pullup(out, -1), evbuffer_pullup(copy, -1), evbuffer_get_length(copy));
	evbuffer_free(src);
	evbuffer_free(copy);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

/* A placeholder in one frame, fed in pieces of <step>: FOUND, and the whole placeholder never went out. */
static void
found_in(unsigned op, const char *payload, size_t step, size_t want_id)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	size_t id = 0;
	char text[256];

	cframe(src, 1, WS_OP_TEXT, "before");
	cframe(src, 1, op, payload);
	cframe(src, 1, WS_OP_TEXT, "after");
	assert_int_equal(client_feed(t, src, step, out, &id, &err), WS_RELAY_FOUND);
	assert_int_equal(id, want_id);
	payloads(out, 1, text, sizeof(text));
	assert_null(strstr(text, PH));
	assert_null(strstr(text, PH2));
	assert_null(strstr(text, "after"));
	evbuffer_free(src);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

static void
test_client_placeholder_found(void **state)
{
	(void)state;
	for (size_t step = 1; step <= 64; step = step * 2 + 1) {
		found_in(WS_OP_TEXT, "my token is " PH " ok", step, 7);
		found_in(WS_OP_BINARY, "\x01\x02" PH2, step, 9);
		found_in(WS_OP_PING, PH, step, 7);
	}
}

/* Bytes that may begin a placeholder are held back until decided; a frame's end sends them. */
static void
test_client_hold_back(void **state)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new(), *src = evbuffer_new();
	const char *err = NULL;
	size_t id = 0, total;

	(void)state;
	cframe(src, 1, WS_OP_TEXT, "abc tst_ph_01 and more");
	total = evbuffer_get_length(src);
	/* header (6) + "abc tst_ph_01" (13): "abc " goes, "tst_ph_01" waits */
	evbuffer_remove_buffer(src, in, 6 + 13);
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1 << 20, &id, &err), WS_RELAY_MORE);
	assert_int_equal(evbuffer_get_length(out), 6 + 4);
	assert_int_equal(evbuffer_get_length(in), 9);
	/* the next byte (' ') decides them */
	evbuffer_remove_buffer(src, in, 1);
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1 << 20, &id, &err), WS_RELAY_MORE);
	assert_int_equal(evbuffer_get_length(out), 6 + 14);
	evbuffer_add_buffer(in, src);
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1 << 20, &id, &err), WS_RELAY_MORE);
	assert_int_equal(evbuffer_get_length(out), total);
	/* a frame ending in a prefix goes out whole */
	cframe(in, 1, WS_OP_TEXT, "x tst_ph_0123");
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1 << 20, &id, &err), WS_RELAY_MORE);
	assert_int_equal(evbuffer_get_length(in), 0);
	assert_int_equal(evbuffer_get_length(out), total + 6 + 13);
	evbuffer_free(in);
	evbuffer_free(out);
	evbuffer_free(src);
	ws_tunnel_destroy(t);
}

/* A placeholder split across two frames (every split point, through a ping too): found in the second. */
static void
test_client_split_across_frames(void **state)
{
	size_t k, len = strlen(PH);

	(void)state;
	for (k = 1; k < len; k++) {
		for (int ping = 0; ping < 2; ping++) {
			struct ws_tunnel *t = tunnel_with(0);
			struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
			const char *err = NULL;
			size_t id = 0;
			char text[256];

			frame(src, 0, WS_OP_BINARY, 1, PH, k);
			if (ping)
				cframe(src, 1, WS_OP_PONG, "");
			frame(src, 1, WS_OP_CONT, 1, &PH[k], len - k);
			assert_int_equal(client_feed(t, src, 3, out, &id, &err), WS_RELAY_FOUND);
			assert_int_equal(id, 7);
			payloads(out, 1, text, sizeof(text));
			assert_true(strlen(text) < len);  /* the first part went, never the whole */
			evbuffer_free(src);
			evbuffer_free(out);
			ws_tunnel_destroy(t);
		}
	}
}

static void
client_bad(const void *bytes, size_t len, const char *why)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	size_t id = 0;

	cframe(in, 1, WS_OP_TEXT, "fine");
	evbuffer_add(in, bytes, len);
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1 << 20, &id, &err), WS_RELAY_BAD);
	assert_string_equal(err, why);
	evbuffer_free(in);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

static void
test_client_malformed(void **state)
{
	(void)state;
	client_bad("\x81\x03" "abc", 5, "client frame not masked");
	client_bad("\xC1\x80\0\0\0\0", 6, "reserved bits set (no extension was negotiated)");
	client_bad("\x80\x80\0\0\0\0", 6, "continuation frame outside a fragmented message");
	client_bad("\x83\x80\0\0\0\0", 6, "unknown opcode");
}

static void
test_client_backpressure(void **state)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new(), *all = evbuffer_new();
	const char *err = NULL;
	size_t id = 0, total;
	char big[100000];

	(void)state;
	memset(big, 'y', sizeof(big));
	frame(in, 1, WS_OP_BINARY, 1, big, sizeof(big));
	total = evbuffer_get_length(in);
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1000, &id, &err), WS_RELAY_BLOCKED);
	assert_true(evbuffer_get_length(out) >= 1000);
	assert_true(evbuffer_get_length(out) <= 1000 + WS_STEP + WS_HEAD_MAX);
	while (evbuffer_get_length(in) > 0) {
		evbuffer_add_buffer(all, out);
		assert_true(ws_tunnel_from_client(t, in, out, 1000, &id, &err) >= WS_RELAY_MORE);
	}
	evbuffer_add_buffer(all, out);
	assert_int_equal(evbuffer_get_length(all), total);
	evbuffer_free(in);
	evbuffer_free(out);
	evbuffer_free(all);
	ws_tunnel_destroy(t);
}

/* ---- the relay: upstream frames ---- */

static void
sframe(struct evbuffer *b, int fin, unsigned op, const char *s)
{
	frame(b, fin, op, 0, s, strlen(s));
}

static void
test_server_text_scrubbed(void **state)
{
	struct ws_tunnel *t = tunnel_with(1);
	struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	uint32_t hits = 0;
	char got[512];

	(void)state;
	sframe(src, 1, WS_OP_TEXT, "auth=Bearer " VAL "!");
	sframe(src, 1, WS_OP_BINARY, "bin " VAL);  /* binary messages are scrubbed like text */
	sframe(src, 1, WS_OP_PING, VAL);           /* and control frames, whole */
	sframe(src, 1, WS_OP_TEXT, "");
	assert_int_equal(server_feed(t, src, 1 << 20, out, &hits, &err), WS_RELAY_MORE);
	assert_int_equal(hits, 1);
	assert_int_equal(decode(out, 0, got, sizeof(got)), 0);
	assert_string_equal(got, "1:1:auth=Bearer " PH "!|2:1:bin " PH "|9:1:" PH "|1:1:|");
	evbuffer_free(src);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

/* The upstream fragments a text message at every offset inside the value, a ping between: replaced whole. */
static void
test_server_fragmented_every_offset(void **state)
{
	const char *msg = "{\"echo\":\"" VAL "\"}";
	size_t cut, len = strlen(msg), vstart = strlen("{\"echo\":\"");

	(void)state;
	for (cut = vstart; cut <= vstart + strlen(VAL); cut++) {
		for (size_t step = 1; step <= 1024; step *= 32) {
			struct ws_tunnel *t = tunnel_with(1);
			struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
			const char *err = NULL;
			uint32_t hits = 0;
			char got[512], text[512];

			frame(src, 0, WS_OP_TEXT, 0, msg, cut);
			sframe(src, 1, WS_OP_PING, "p");
			frame(src, 1, WS_OP_CONT, 0, msg + cut, len - cut);
			assert_int_equal(server_feed(t, src, step, out, &hits, &err), WS_RELAY_MORE);
			assert_int_equal(hits, 1);
			assert_false(contains(out, "REALVALUE"));
			assert_int_equal(decode(out, 0, got, sizeof(got)), 0);
			payloads(out, 0, text, sizeof(text));
			assert_string_equal(text, "{\"echo\":\"" PH "\"}");
			/* first frame TEXT without FIN, then the ping in its place, the last with FIN */
			assert_true(strncmp(got, "1:0:{\"echo\":\"", 13) == 0);
			const char *ping = strstr(got, "|9:1:p|");
			assert_non_null(ping);
			assert_true(strncmp(ping + 7, "0:1:", 4) == 0);
			assert_string_equal(got + strlen(got) - 3, "\"}|");
			evbuffer_free(src);
			evbuffer_free(out);
			ws_tunnel_destroy(t);
		}
	}
}

/* A text frame longer than WS_TEXT_EMIT goes out in fragments; the message is intact. */
static void
test_server_long_text(void **state)
{
	struct ws_tunnel *t = tunnel_with(1);
	struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	uint32_t hits = 0;
	size_t len = 3 * WS_TEXT_EMIT + 77, n, frames = 0;
	char *big = malloc(len), *text = malloc(len + 1);
	struct ws_reader rd;
	int h;

	(void)state;
	memset(big, 'z', len);
	memcpy(big + 2 * WS_TEXT_EMIT - 5, VAL, strlen(VAL));  /* straddles a fragment boundary */
	frame(src, 1, WS_OP_TEXT, 0, big, len);
	assert_int_equal(server_feed(t, src, 4096, out, &hits, &err), WS_RELAY_MORE);
	assert_int_equal(hits, 1);
	n = payloads(out, 0, text, len + 1);
	assert_int_equal(n, len - strlen(VAL) + strlen(PH));
	assert_null(strstr(text, VAL));
	assert_non_null(strstr(text, PH));
	/* frames: TEXT (no FIN), CONT..., the last with FIN */
	ws_reader_init(&rd, 0);
	while (evbuffer_get_length(out) > 0) {
		h = ws_reader_head(&rd, evbuffer_pullup(out, -1), evbuffer_get_length(out), &err);
		assert_true(h > 0);
		assert_int_equal(rd.f.opcode, frames == 0 ? WS_OP_TEXT : WS_OP_CONT);
		assert_true(rd.f.len <= WS_TEXT_EMIT + WS_STEP);
		evbuffer_drain(out, (size_t)h + rd.f.len);
		ws_reader_consume(&rd, rd.f.len);
		frames++;
		assert_int_equal(rd.f.fin, evbuffer_get_length(out) == 0);
	}
	assert_true(frames >= 3);
	free(big);
	free(text);
	evbuffer_free(src);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

/* A binary message fragmented inside the value, a pong between the fragments: replaced whole, opcode kept. */
static void
test_server_binary_fragmented(void **state)
{
	size_t vlen = strlen(VAL), k;

	(void)state;
	for (k = 1; k < vlen; k++) {
		struct ws_tunnel *t = tunnel_with(1);
		struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
		const char *err = NULL;
		uint32_t hits = 0;
		char got[512];

		frame(src, 0, WS_OP_BINARY, 0, "\x00\xff" VAL, 2 + k);
		sframe(src, 1, WS_OP_PONG, "p");
		frame(src, 1, WS_OP_CONT, 0, VAL + k, vlen - k);
		assert_int_equal(server_feed(t, src, 3, out, &hits, &err), WS_RELAY_MORE);
		assert_int_equal(hits, 1);
		assert_int_equal(payloads(out, 0, got, sizeof(got)), 2 + strlen(PH));
		/* payloads() joins the data frames: the bytes before the value, then the placeholder */
		assert_memory_equal(got, "\x00\xff" PH, 2 + strlen(PH));
		assert_true(contains(out, "\x8a\x01p"));  /* the pong, between them */
		assert_non_null(memmem(got, sizeof(got), PH, strlen(PH)));
		assert_null(memmem(got, sizeof(got), VAL, vlen));
		/* the first frame out is BINARY, not TEXT */
		assert_int_equal(evbuffer_pullup(out, 1)[0] & 0x0f, WS_OP_BINARY);
		evbuffer_free(src);
		evbuffer_free(out);
		ws_tunnel_destroy(t);
	}
}

/* A close frame whose reason holds the value, made too long by the placeholder: cut to 125 bytes, still valid. */
static void
test_server_control_cut(void **state)
{
	struct ws_tunnel *t = tunnel_with(1);
	struct evbuffer *src = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	uint32_t hits = 0;
	char reason[125];
	struct ws_reader rd;
	int h;

	(void)state;
	memset(reason, 'r', sizeof(reason));
	memcpy(reason, "\x03\xe8", 2);
	memcpy(reason + sizeof(reason) - strlen(VAL), VAL, strlen(VAL));
	frame(src, 1, WS_OP_CLOSE, 0, reason, sizeof(reason));
	assert_int_equal(server_feed(t, src, 7, out, &hits, &err), WS_RELAY_MORE);
	assert_int_equal(hits, 1);
	ws_reader_init(&rd, 0);
	h = ws_reader_head(&rd, evbuffer_pullup(out, -1), evbuffer_get_length(out), &err);
	assert_true(h > 0);
	assert_int_equal(rd.f.opcode, WS_OP_CLOSE);
	assert_true(rd.f.len <= 125);
	assert_int_equal(evbuffer_get_length(out), (size_t)h + rd.f.len);
	assert_null(memmem(evbuffer_pullup(out, -1), evbuffer_get_length(out), VAL, strlen(VAL)));
	evbuffer_free(src);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

static void
test_server_without_scrub_set(void **state)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *src = evbuffer_new(), *out = evbuffer_new(), *copy = evbuffer_new();
	const char *err = NULL;
	uint32_t hits = 0;

	(void)state;
	sframe(src, 0, WS_OP_TEXT, "a " VAL);
	sframe(src, 1, WS_OP_CONT, "b");
	evbuffer_add_buffer_reference(copy, src);
	assert_int_equal(server_feed(t, src, 5, out, &hits, &err), WS_RELAY_MORE);
	assert_int_equal(hits, 0);
	assert_int_equal(evbuffer_get_length(out), evbuffer_get_length(copy));
	assert_memory_equal(evbuffer_pullup(out, -1), evbuffer_pullup(copy, -1), evbuffer_get_length(copy));
	evbuffer_free(src);
	evbuffer_free(out);
	evbuffer_free(copy);
	ws_tunnel_destroy(t);
}

static void
test_server_malformed(void **state)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *why;
	} cases[] = {
		{"\x81\x81\0\0\0\0x", 7, "server frame masked"},
		{"\x91\x00", 2, "reserved bits set (no extension was negotiated)"},
		{"\x09\x00", 2, "fragmented control frame"},
		{"\x82\x7E\x00\x10", 4, "non-minimal length encoding"},
		{"\x00\x00", 2, "continuation frame outside a fragmented message"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ws_tunnel *t = tunnel_with(1);
		struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
		const char *err = NULL;
		struct scrub_hits hits = {{0}};

		evbuffer_add(in, cases[i].bytes, cases[i].len);
		assert_int_equal(ws_tunnel_from_server(t, in, out, 1 << 20, &hits, &err), WS_RELAY_BAD);
		assert_string_equal(err, cases[i].why);
		evbuffer_free(in);
		evbuffer_free(out);
		ws_tunnel_destroy(t);
	}
}

static void
test_close_client(void **state)
{
	struct ws_tunnel *t = tunnel_with(0);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	const char *err = NULL;
	struct scrub_hits hits = {{0}};
	char big[300];

	(void)state;
	memset(big, 'q', sizeof(big));
	/* mid-frame (a binary payload half sent): no close frame */
	struct evbuffer *part = evbuffer_new();
	frame(in, 1, WS_OP_BINARY, 0, big, sizeof(big));
	evbuffer_remove_buffer(in, part, 100);
	assert_int_equal(ws_tunnel_from_server(t, part, out, 1 << 20, &hits, &err), WS_RELAY_MORE);
	assert_int_equal(ws_tunnel_close_client(t, out, WS_CLOSE_POLICY), -1);
	assert_int_equal(ws_tunnel_from_server(t, in, out, 1 << 20, &hits, &err), WS_RELAY_MORE);
	evbuffer_drain(out, evbuffer_get_length(out));
	assert_int_equal(ws_tunnel_close_client(t, out, WS_CLOSE_POLICY), 0);
	assert_int_equal(evbuffer_get_length(out), 4);
	assert_memory_equal(evbuffer_pullup(out, -1), "\x88\x02\x03\xF0", 4);
	evbuffer_free(part);
	evbuffer_free(in);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

static void
test_search_limits(void **state)
{
	struct ws_tunnel *t = ws_tunnel_create(NULL);
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	char ph[64];
	const char *err = NULL;
	size_t i, id = 0;

	(void)state;
	assert_int_equal(ws_tunnel_search_add(t, "", 0, 1), SLUICE_EINVAL);
	for (i = 0; i < PH_STREAM_MAX; i++) {
		snprintf(ph, sizeof(ph), "tst_many_%05zu_placeholder", i);
		assert_int_equal(ws_tunnel_search_add(t, ph, strlen(ph), 5000 + i), 0);
	}
	assert_int_equal(ws_tunnel_search_add(t, "tst_one_too_many", 16, 1), SLUICE_ETOOBIG);
	/* the last one added (in the last set) is found, with its id */
	cframe(in, 1, WS_OP_TEXT, "x tst_many_01023_placeholder y");
	assert_int_equal(ws_tunnel_from_client(t, in, out, 1 << 20, &id, &err), WS_RELAY_FOUND);
	assert_int_equal(id, 5000 + 1023);
	evbuffer_free(in);
	evbuffer_free(out);
	ws_tunnel_destroy(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_head_write),
		cmocka_unit_test(test_unmask_offset),
		cmocka_unit_test(test_reader_sequence),
		cmocka_unit_test(test_client_forwarded_unchanged),
		cmocka_unit_test(test_client_placeholder_found),
		cmocka_unit_test(test_client_hold_back),
		cmocka_unit_test(test_client_split_across_frames),
		cmocka_unit_test(test_client_malformed),
		cmocka_unit_test(test_client_backpressure),
		cmocka_unit_test(test_server_text_scrubbed),
		cmocka_unit_test(test_server_fragmented_every_offset),
		cmocka_unit_test(test_server_long_text),
		cmocka_unit_test(test_server_binary_fragmented),
		cmocka_unit_test(test_server_control_cut),
		cmocka_unit_test(test_server_without_scrub_set),
		cmocka_unit_test(test_server_malformed),
		cmocka_unit_test(test_close_client),
		cmocka_unit_test(test_search_limits),
	};

	return cmocka_run_group_tests(tests, NULL, free_sets);
}
