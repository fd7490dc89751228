/*
 * proxy/codec/h1_parse.h - strict, incremental HTTP/1.1 head and chunked-body parsers.
 *
 * Parsers return bytes consumed (> 0), -2 for "need more", -1 for an error
 * (picohttpparser's convention).  They never allocate; results point into the
 * caller's buffer.  Ambiguity is refused, never guessed at: bare CR or LF,
 * obs-fold, whitespace before ':', NUL/CR/LF/controls in values, Content-Length
 * with Transfer-Encoding, duplicate or malformed Content-Length, Transfer-Encoding
 * other than exactly "chunked", duplicate Host, HTTP versions other than 1.0/1.1.
 */
#ifndef SLUICE_PROXY_H1_PARSE_H
#define SLUICE_PROXY_H1_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define H1_MAX_HEADERS 256   /* compile-time ceiling; h1_limits.max_headers <= this */

struct h1_limits {
	size_t max_head_bytes;   /* start line + headers + final CRLF */
	size_t max_line_bytes;   /* request/status line */
	size_t max_headers;      /* header field count */
};

struct h1_header {
	const char *name;
	size_t name_len;
	const char *value;       /* leading/trailing SP/HTAB trimmed */
	size_t value_len;
};

enum h1_framing {
	H1_BODY_NONE = 0,      /* no body (no CL/TE on a request; HEAD/1xx/204/304 responses; CL: 0) */
	H1_BODY_LENGTH = 1,    /* exactly content_length bytes */
	H1_BODY_CHUNKED = 2,   /* Transfer-Encoding: chunked */
	H1_BODY_UNTIL_CLOSE = 3, /* responses only: no CL, no TE */
};

struct h1_message {
	/* request */
	const char *method;
	size_t method_len;
	const char *target;
	size_t target_len;
	/* response */
	int status;
	const char *reason;
	size_t reason_len;
	/* both */
	int minor_version;              /* 0 or 1 */
	struct h1_header headers[H1_MAX_HEADERS];
	size_t nheaders;
	/* derived from the headers */
	enum h1_framing framing;
	uint64_t content_length;
	int keep_alive;                 /* after this message (version, Connection: close/keep-alive) */
	int expect_continue;            /* request: Expect: 100-continue */
	int upgrade_websocket;          /* Connection: upgrade + Upgrade: websocket */
	const struct h1_header *host;   /* request: the single Host header, or NULL */
};

/*
 * Parses a request head from <buf>/<len>.  Returns the head's length including
 * the final CRLF, -2 when more bytes are needed (and <len> is still within
 * max_head_bytes), or -1 with *<err> set to a static reason and *<status> to
 * the HTTP status to answer (400, 414 request line too long, 431 head or header
 * count too large, 501 unsupported Transfer-Encoding, 505 version).
 */
int h1_parse_request(const char *buf, size_t len, const struct h1_limits *lim,
                     struct h1_message *msg, const char **err, int *status);

/*
 * Parses a response head.  <req_method> is the method of the request it
 * answers (HEAD and CONNECT change framing).  1xx responses parse as their own
 * head with H1_BODY_NONE; the caller reads the next head after them.
 * Returns like h1_parse_request (no *status: any error is a 502 to the client).
 */
int h1_parse_response(const char *buf, size_t len, const struct h1_limits *lim,
                      const char *req_method, size_t req_method_len,
                      struct h1_message *msg, const char **err);

/* Case-insensitive header lookup; NULL if absent. */
const struct h1_header *h1_find_header(const struct h1_message *msg, const char *name);

/* 1 if <name>/<len> is a hop-by-hop header (RFC 9110 7.6.1 list plus Proxy-*). */
int h1_is_hop_by_hop(const char *name, size_t len);

/*
 * 1 if the header named <name>/<len> is listed as a token in any Connection
 * header of <msg> (those are hop-by-hop too).
 */
int h1_connection_lists(const struct h1_message *msg, const char *name, size_t len);

/* Chunked transfer-coding decoder state; zero-initialise with h1_chunked_init. */
struct h1_chunked {
	int state;           /* private */
	uint64_t remaining;  /* bytes left in the current chunk */
	size_t max_trailer_bytes;
};

void h1_chunked_init(struct h1_chunked *c, size_t max_trailer_bytes);

/*
 * Decodes from <buf>/<len>.  Each call consumes framing and at most one span
 * of chunk data:
 *   returns > 0: that many bytes of <buf> were consumed; *<data>/<data_len> is a
 *                span of body bytes inside them (data_len may be 0);
 *   returns 0 is never returned;
 *   returns -2: need more bytes (nothing consumed);
 *   returns -1: malformed (bad size, size overflow, chunk extension with bad
 *               bytes, missing CRLF, oversized trailers), *<err> set.
 * When the last chunk and the trailer section have been consumed, *<done> is
 * set to 1, and *<trailers>/<trailers_len> points to the raw trailer field lines
 * (each ending in CRLF, validated like headers; length 0 if none) inside <buf>.
 * Chunk extensions are validated and dropped.
 */
int h1_chunked_decode(struct h1_chunked *c, const char *buf, size_t len,
                      const char **data, size_t *data_len, int *done,
                      const char **trailers, size_t *trailers_len, const char **err);

#endif
