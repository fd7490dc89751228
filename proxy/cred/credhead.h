/*
 * proxy/cred/credhead.h - placeholders in the request head that leaves: where
 * each one is, whether it sits in a place a value may be written to, and the
 * head with values written only there.  No connection, no policy: the caller
 * (credreq.c) says which places are bound; the fuzzer drives it alone.
 *
 * The head searched is the one the gateway built to send (http.c): the
 * method, the request line as rendered (the path after normalisation, the
 * query as sent), every header line; an HTTP/2 stream's head is the same
 * text (h2srv.c renders a stream to HTTP/1.1 before the pipeline runs).
 *
 * Two passes.  The plan finds the substitutable occurrences: a placeholder
 * written as it is in a header value ("header:<name>"), one in a query
 * value once percent-decoded ("query:<key>", the key decoded too), one in
 * the decoded credential of "Authorization: Basic" ("basic"); the caller
 * accepts each (a span to substitute) or refuses.  Then every place, with
 * the accepted spans cut out, is searched in all its decoded views
 * (secrets/detect.h): anything found there is a placeholder outside a bound
 * place, or hidden in a bound place by an encoding, and refuses the request.
 * Rendering copies the head and writes each value only inside its spans:
 * as it is in a header value, percent-encoded in a query value, inside the
 * re-encoded Basic credential.
 */
#ifndef SLUICE_PROXY_CREDHEAD_H
#define SLUICE_PROXY_CREDHEAD_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct secret_buf;

#define CREDHEAD_PLACE_NAME_MAX 160   /* "header:<name>" / "query:<key>" as a use records it (longer: not bound) */
#define CREDHEAD_BASIC_MAX 4096       /* the longest Basic credential decoded */

enum credhead_kind {
	CREDHEAD_METHOD = 1,
	CREDHEAD_PATH = 2,
	CREDHEAD_QUERY_KEY = 3,
	CREDHEAD_QUERY_VALUE = 4,
	CREDHEAD_HEADER_NAME = 5,
	CREDHEAD_HEADER_VALUE = 6,
};

enum credhead_enc {
	CREDHEAD_ENC_RAW = 1,     /* the value as it is (a header value) */
	CREDHEAD_ENC_PCT = 2,     /* percent-encoded, unreserved kept (a query value) */
	CREDHEAD_ENC_BASIC = 3,   /* the span is a Basic token: decoded, placeholders swapped, re-encoded */
};

/* Where a value goes: <len> bytes of the head at <off>, for substitution <sub>. */
struct credhead_span {
	size_t off, len;
	size_t sub;
	enum credhead_enc enc;
};

/* The placeholders searched (one per secret, by index) */
struct credhead_needles {
	const char *const *ph;
	const size_t *len;
	size_t n;
};

/*
 * The caller's verdict on one finding of placeholder <i> in place <place>
 * (kind <kind>; the name "header:authorization", "query:key", "basic",
 * "method", "path", "query key", "header name").  <encoded> 0: an occurrence
 * that can be substituted: return 0 and the substitution's index in *<sub>
 * to accept it, or -1 to refuse the request.  <encoded> 1: found only in a
 * decoded view, or outside any place a value can go: the request must be
 * refused; return -1.  A refusal is the caller's to answer.
 */
typedef int (*credhead_found_fn)(void *arg, size_t i, enum credhead_kind kind, const char *place, int encoded,
                                 size_t *sub);

struct credhead_plan {
	struct credhead_span *span;   /* sorted by offset, disjoint; heap */
	size_t nspan, cap;
};

/*
 * Plans <head>/<len> (a request line and header lines, each ended by CRLF;
 * the blank line may be missing).  0 with the spans in <plan> (free with
 * credhead_plan_free), -1 when <found> refused (it answered), SLUICE_EINVAL
 * when the head does not split into places or two spans overlap,
 * SLUICE_ENOMEM / SLUICE_ETOOBIG when a place could not be searched: the
 * request must be refused then too.
 */
int credhead_plan(const char *head, size_t len, const struct credhead_needles *nd, credhead_found_fn found,
                  void *arg, struct credhead_plan *plan);
void credhead_plan_free(struct credhead_plan *plan);

/* One substitution: placeholder -> value (borrowed). */
struct credhead_sub {
	const char *ph;
	size_t phlen;
	const uint8_t *val;
	size_t vlen;
	int basic;      /* substituted inside a Basic credential */
};

#define CREDHEAD_DROP_GRPC_ENCODING 1u   /* leave out grpc-accept-encoding (its messages are scrubbed one by one) */

/*
 * Writes <head> to <out> with each span replaced by its substitution's value
 * (encoded as the span says).  For a Basic span, *<basic> (taken by the
 * caller) gets the credential injected and *<basic_ph> (heap) the one as the
 * client sent it, for scrubbing their echoes; either may stay NULL.  0, or
 * SLUICE_ENOMEM / SLUICE_EINVAL (a Basic span that no longer decodes).
 */
int credhead_render(const char *head, size_t len, const struct credhead_plan *plan, const struct credhead_sub *sub,
                    size_t nsub, unsigned flags, struct evbuffer *out, struct secret_buf **basic, char **basic_ph);

/* Decodes the credential of an "Basic <b64>" header value into <out>: its length, or -1. */
int credhead_basic_decode(const char *v, size_t len, uint8_t *out, size_t cap);
/* Appends <v> percent-encoded, every byte but ALPHA DIGIT - . _ ~ as %XX (a query or form value). */
void credhead_pct_escape(struct evbuffer *out, const uint8_t *v, size_t len);

#endif
