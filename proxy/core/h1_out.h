/*
 * proxy/core/h1_out.h - writing the pieces of an HTTP/1.1 head and of
 * chunked framing into an evbuffer, without printf: every head the gateway
 * sends (the request upstream, the answer to the client) and every chunk
 * size line goes through these (issue 20: vfprintf was 5 % of the
 * gateway's CPU on small keep-alive requests).
 *
 * Each writes its line whole, in one reservation of the buffer's space
 * (evbuffer_reserve_space with one vector, then commit): 0, or -1 when the
 * buffer cannot grow, and then nothing of the line is in it.  The caller
 * owns <out>; nothing is kept.
 */
#ifndef SLUICE_PROXY_CORE_H1_OUT_H
#define SLUICE_PROXY_CORE_H1_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <event2/buffer.h>

/* One piece of a line: <len> bytes at <p>. */
struct h1_out_piece {
	const void *p;
	size_t len;
};

/* The <n> pieces one after the other (the bytes of a line or more). */
int h1_out_pieces(struct evbuffer *out, const struct h1_out_piece *pc, size_t n);
/* "<name>: <value>\r\n" */
int h1_out_field(struct evbuffer *out, const char *name, size_t nlen, const char *value, size_t vlen);
/* "HTTP/1.1 <status> <reason>\r\n" (the space stays when <rlen> is 0, as the status line's grammar wants) */
int h1_out_status(struct evbuffer *out, int status, const char *reason, size_t rlen);
/* "<name>: <v in decimal>\r\n", and one more "\r\n" when <end> (the head ends with it) */
int h1_out_uint_field(struct evbuffer *out, const char *name, size_t nlen, uint64_t v, int end);
/* "<n in lower-case hex>\r\n": the size line of a chunk */
int h1_out_chunk_size(struct evbuffer *out, uint64_t n);

/* The text of <v> in base <base> (10 or 16, lower case) at the end of <buf> (>= 24 bytes): its start and *<len>. */
const char *h1_out_utoa(char *buf, size_t cap, uint64_t v, unsigned base, size_t *len);

#define H1_OUT_NUM_MAX 24       /* the text of a uint64_t in any base h1_out_utoa writes, and room to spare */

#endif
