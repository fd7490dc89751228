/*
 * proxy/core/body.h - moving a message body as it is framed, between
 * evbuffers: the one implementation under the relay (both directions), the
 * held bodies of cred/ and judge/, and the drained git push.  Nothing here
 * allocates but the trailer buffer it is asked to keep.
 */
#ifndef SLUICE_PROXY_CORE_BODY_H
#define SLUICE_PROXY_CORE_BODY_H

#include <stdint.h>
#include <event2/buffer.h>
#include "proxy/codec/h1_parse.h"

struct conn;

/* Moves up to <*left> bytes of a Content-Length body from <in> to <out> (counted in <*bytes>); 1 once none are left. */
int body_move_counted(struct evbuffer *in, struct evbuffer *out, uint64_t *left, uint64_t *bytes);
/*
 * One chunked-decoder step from <in> to <out>; re-encodes when <reencode>.
 * The trailer section goes to *<trailers> (created on demand) when that is
 * given, and the caller ends the body; else, re-encoding, it ends the body
 * inline ("0" CRLF trailers CRLF).  1 progress, 0 wait, -1 error (*<err>).
 */
int body_chunked_step(struct evbuffer *in, struct evbuffer *out, struct h1_chunked *st, int reencode, uint64_t *bytes,
                      int *done, struct evbuffer **trailers, const char **err);
/*
 * Moves the current request's body bytes (c->req's framing) from <in> to <out>, re-chunked when <reencode>
 * (else a chunked body's trailers are kept in r->req_trailers, never sent): 1 progress, 0 wait, -1 bad (*<err>).
 */
int req_body_move(struct conn *c, struct evbuffer *in, struct evbuffer *out, int reencode, const char **err);

struct refusal;
/*
 * One step of a held body: moves what the framing allows from the client's input <in> into r->hold (decoded,
 * trailers kept apart): 1 progress, 0 wait, -1 malformed (a 400 that closes, in <rf>).
 */
int req_body_hold(struct conn *c, struct evbuffer *in, struct refusal *rf);

#endif
