/*
 * proxy/codec/ws.h - WebSocket frames (RFC 6455) on an upgraded connection.
 *
 * Two layers.  ws.c is pure (no libevent, no secrets): the frame header
 * parser and an incremental reader that tracks one direction's frames and
 * messages.  wstunnel.c builds the relay on it: frames from the client are
 * searched for placeholders and forwarded unchanged; text frames from the
 * upstream are scrubbed of injected secret values and re-framed.
 *
 * Framing is strict in both directions, because the gateway negotiates no
 * extension (Sec-WebSocket-Extensions is stripped when secrets are declared):
 * RSV bits, unknown opcodes, control frames over 125 bytes or fragmented,
 * unmasked client frames, masked server frames, a 64-bit length with its top
 * bit set and non-minimal length encodings are all refused, as are a
 * continuation outside a fragmented message and a new data message inside one.
 */
#ifndef SLUICE_PROXY_WS_H
#define SLUICE_PROXY_WS_H

#include <stddef.h>
#include <stdint.h>

#define WS_HEAD_MAX 14      /* the longest frame header: 2 + 8 (length) + 4 (masking key) */
#define WS_CONTROL_MAX 125  /* payload bound of a control frame */

enum ws_opcode {
	WS_OP_CONT = 0,
	WS_OP_TEXT = 1,
	WS_OP_BINARY = 2,
	WS_OP_CLOSE = 8,
	WS_OP_PING = 9,
	WS_OP_PONG = 10,
};

#define WS_CLOSE_PROTOCOL 1002  /* close code: protocol error */
#define WS_CLOSE_POLICY 1008    /* close code: policy violation */

/* One frame header as parsed. */
struct ws_frame {
	int fin;
	unsigned opcode;        /* enum ws_opcode */
	int masked;
	uint8_t mask[4];        /* the masking key when <masked> */
	uint64_t len;           /* payload length, below 2^63 */
};

/*
 * Parses the frame header at <p>/<len>; <from_client> selects the masking
 * rule (client frames must be masked, server frames must not).  Returns the
 * header's length (2..WS_HEAD_MAX) with *f filled, -2 when more bytes are
 * needed (never more than WS_HEAD_MAX in all), or -1 with *err (static text)
 * when the header is malformed.  Checks are made as soon as the bytes they
 * need are in, so a bad first two bytes fail at once.
 */
int ws_frame_parse(const uint8_t *p, size_t len, int from_client, struct ws_frame *f, const char **err);

/*
 * Writes an unmasked (server) frame header with the minimal length encoding
 * into <out> (at least WS_HEAD_MAX bytes).  <len> must be below 2^63.
 * Returns the header's length.
 */
size_t ws_frame_head_write(uint8_t *out, int fin, unsigned opcode, uint64_t len);

/* XORs <n> bytes at <p> with <mask>, <off> being the offset of p[0] in the payload. */
void ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off);

#define WS_ACCEPT_LEN 28    /* base64 of a SHA-1 */
/* The Sec-WebSocket-Accept that answers <key> (RFC 6455 4.2.2), NUL-terminated into <out>.  0, or -1. */
int ws_accept(const char *key, size_t key_len, char out[WS_ACCEPT_LEN + 1]);

/*
 * One direction's frames, read incrementally: ws_reader_head() on each header,
 * then ws_reader_consume() as payload bytes are taken, until it reports the end
 * of the frame.  The reader holds no bytes: the caller streams the payload.
 */
struct ws_reader {
	int from_client;
	int in_frame;           /* a header was read and its payload is not all consumed */
	struct ws_frame f;      /* the current frame */
	unsigned kind;          /* its message's opcode: TEXT or BINARY for data frames, else the control opcode */
	uint64_t left;          /* payload bytes of the frame not consumed yet */
	uint64_t off;           /* payload bytes consumed (the masking key's position) */
	unsigned msg;           /* TEXT or BINARY while a fragmented message is open, else 0 */
};

void ws_reader_init(struct ws_reader *rd, int from_client);
/*
 * Reads the next frame header at <p>/<len> (only when !rd->in_frame) and
 * checks it against the message in progress.  Returns the header's length,
 * -2 (need more) or -1 with *err.  Afterwards rd->in_frame is set, even for
 * an empty payload: consume 0 bytes to end such a frame.
 */
int ws_reader_head(struct ws_reader *rd, const uint8_t *p, size_t len, const char **err);
/*
 * Accounts for <n> payload bytes taken (n <= rd->left).  Returns 1 when that
 * ends the frame (rd->in_frame is then clear), else 0.
 */
int ws_reader_consume(struct ws_reader *rd, uint64_t n);

/* ---- wstunnel.c: the relay, on libevent buffers (it owns no socket) ---- */

struct evbuffer;
struct scrub_set;
struct scrub_hits;
struct ws_tunnel;

#define WS_STEP 16384       /* payload bytes unmasked and searched, or scrubbed, per round */
#define WS_TEXT_EMIT 16384  /* scrubbed message bytes that go out as a fragment before their frame ends */
#define WS_CTL_MAX 125      /* the longest control frame payload (RFC 6455 5.5) */

enum {
	WS_RELAY_MORE = 0,      /* every whole byte was handled: more input is needed */
	WS_RELAY_BLOCKED = 1,   /* the output reached its cap: call again once it drained */
	WS_RELAY_FOUND = 2,     /* a placeholder was found in a client frame: close the connection */
	WS_RELAY_BAD = -1,      /* malformed framing (or out of memory): close the connection */
};

/*
 * A relay for one connection.  <scrub> (borrowed: it must outlive the
 * tunnel; NULL: upstream frames pass unchanged) maps the values of the
 * host's secrets to their placeholders, its tags naming them in the hits.
 */
struct ws_tunnel *ws_tunnel_create(const struct scrub_set *scrub);
/* Adds a placeholder to search client frames for, known by <id>.  0, SLUICE_EINVAL or SLUICE_ETOOBIG. */
int ws_tunnel_search_add(struct ws_tunnel *t, const char *ph, size_t len, size_t id);
/* Wipes what it holds (the scrubber's held-back tail) and frees <t> (NULL is fine). */
void ws_tunnel_destroy(struct ws_tunnel *t);
/*
 * Client to upstream: frames from <in> are checked, their unmasked payload
 * searched, and their bytes moved to <out> unchanged, until <out> holds <cap>
 * bytes or more.  Payload bytes that may begin a placeholder stay in <in>
 * until the next bytes decide them, except at the end of a frame: the frame
 * goes out whole, and the search goes on across frames (a placeholder split
 * across frames is found when its last byte arrives; its first part has gone
 * out).  Returns a WS_RELAY_* code; FOUND sets *id (nothing of that frame
 * past the placeholder's start that was still held went out); BAD sets *err.
 */
int ws_tunnel_from_client(struct ws_tunnel *t, struct evbuffer *in, struct evbuffer *out, size_t cap, size_t *id,
                          const char **err);
/*
 * Upstream to client, with a scrub set: text and binary messages alike are
 * scrubbed as one stream per message and re-framed: each input frame yields
 * the scrubbed bytes decided so far (a frame may be cut in several fragments
 * past WS_TEXT_EMIT bytes), and the frame with FIN flushes the scrubber.
 * Control frames (a close reason, a ping or pong payload) are taken whole
 * (at most WS_CTL_MAX bytes), scrubbed, and sent cut to WS_CTL_MAX bytes if
 * a placeholder made them longer.  Without a set, frames pass unchanged.
 * Sets the tags of what was scrubbed in *hits.  Returns WS_RELAY_MORE,
 * BLOCKED or BAD (*err).
 */
int ws_tunnel_from_server(struct ws_tunnel *t, struct evbuffer *in, struct evbuffer *out, size_t cap,
                          struct scrub_hits *hits, const char **err);
/*
 * Queues a close frame with <code> toward the client on <out> if the bytes
 * sent so far end on a frame boundary.  0, or -1 when it could not be sent.
 */
int ws_tunnel_close_client(struct ws_tunnel *t, struct evbuffer *out, unsigned code);

#endif
