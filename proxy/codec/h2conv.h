/*
 * proxy/codec/h2conv.h - translation of message heads between HTTP/2 and HTTP/1.1.
 *
 * The pipeline works on HTTP/1.1 heads (proxy/codec/h1_parse.h); HTTP/2 lives at the
 * edges.  These are the pure functions between the two: no sockets, no events,
 * no nghttp2 session, only nghttp2's nghttp2_nv type.  They never allocate.
 *
 *   h2 -> h1  h2conv_request_to_h1   a client's stream -> HTTP/1.1 request head text
 *             h2conv_response_to_h1  an upstream's response -> HTTP/1.1 status line + fields
 *             h2conv_trailers_to_h1  trailer fields -> the chunked last-chunk + trailer section
 *   h1 -> h2  h2conv_response_to_nv  an HTTP/1.1 response -> HEADERS for an h2 client
 *             h2conv_request_to_nv   an HTTP/1.1 request -> HEADERS for an h2 upstream
 *             h2conv_trailers_to_nv  a chunked body's trailer lines -> trailing HEADERS
 *
 * Security.  Writing HTTP/2 fields out as HTTP/1.1 is where downgrade smuggling
 * happens: a CR/LF/NUL in a value, a transfer-encoding or connection field, a
 * space in :path, an uppercase name, a content-length that is not what the
 * DATA says.  nghttp2 with HTTP messaging on already refuses some of this, but
 * it *silently drops* regular fields whose name or value is invalid (it does
 * not reset the stream), its checks change between versions, and the caller
 * may run with nghttp2_option_set_no_http_messaging().  So every rule is
 * checked again here, independently, and anything ambiguous is refused with a
 * reason, never repaired.  Every text this module writes parses with
 * h1_parse_request / h1_parse_response / h1_chunked_decode (the fuzzer checks).
 *
 * Field lists are given as nghttp2 delivers them: in order, names and values
 * as (pointer, length) byte arrays that may hold any byte (NUL included).
 *
 * Measured with libnghttp2 1.52 as a server, HTTP messaging on: a regular
 * field with CR, LF, NUL, another CTL or edge whitespace in its value, or a
 * non-token name, is dropped and the request delivered without it (only
 * on_invalid_header_callback sees it; return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE
 * there to reset the stream instead).  Delivered unchanged: '#' and non-ASCII
 * bytes in :path, userinfo in :authority, host differing from :authority,
 * plain CONNECT, te "TRAILERS".  Reset (PROTOCOL_ERROR): uppercase names,
 * late pseudo-headers, SP in :path, relative :path, a bad :method or :scheme,
 * te other than trailers, connection-specific fields, two content-length
 * fields even when equal, content-length > 0 with END_STREAM, empty
 * :authority, :protocol unless SETTINGS_ENABLE_CONNECT_PROTOCOL was sent.
 */
#ifndef SLUICE_PROXY_H2CONV_H
#define SLUICE_PROXY_H2CONV_H

#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "common/host.h"
#include "common/sluice.h"
#include "proxy/codec/h1_parse.h"

#define H2CONV_MAX_FIELDS H1_MAX_HEADERS  /* ceiling for every max_fields below */
#define H2CONV_METHOD_MAX 32              /* bytes of a :method (h1_parse's bound) */
/* Largest content-length accepted: h1_parse's bound, so the h1 side agrees. */
#define H2CONV_CONTENT_LENGTH_MAX (INT64_C(1) << 53)
#define H2CONV_WS_KEY_LEN 24              /* base64 of 16 random bytes */

/*
 * Why a translation was refused.  <reason> is a static string that never
 * holds peer bytes (safe to log and to put in an answer body).
 *  - <malformed> 1: RFC 9113 section 8.1.1 calls the message malformed.  The
 *    caller MUST NOT forward it, and treats it as a stream error: RST_STREAM
 *    with NGHTTP2_PROTOCOL_ERROR (for a request it may first answer <status>).
 *  - <malformed> 0: a well-formed message this gateway will not translate;
 *    answer <status> on the stream and keep the connection.
 * <status> (requests): 400, 417 (Expect), 421 (host mismatch), 431 (too many
 * fields, head too large), 500 (no randomness), 501 (CONNECT).  Responses say
 * 400 (malformed) or 502 (bounds); whatever a refused response or response
 * trailer says, the client is answered 502 and the upstream stream is reset.
 */
struct h2conv_err {
	const char *reason;
	int status;
	int malformed;
};

/* ---- h2 -> h1 ---- */

struct h2conv_req_opts {
	/* The connection's TLS server name (NUL-terminated), or NULL: no SNI check. */
	const char *sni;
	/* The :scheme the connection serves, NUL-terminated; NULL means "https". */
	const char *scheme;
	/* Most fields accepted, pseudo-header fields included (capped at H2CONV_MAX_FIELDS). */
	size_t max_fields;
	/* 1 when the HEADERS frame carried END_STREAM: no DATA follows. */
	int end_stream;
	/*
	 * Extended CONNECT (RFC 8441) only: add a random Sec-WebSocket-Key
	 * (RAND_bytes) to the HTTP/1.1 upgrade request.  HTTP/2 has no key and no
	 * 101: when this is set the caller must check the upstream's 101 itself
	 * and answer the client's stream with a 200 instead of relaying the 101.
	 * When 0, the caller adds the key line itself before the final CRLF.
	 */
	int ws_key_generate;
};

/* What the pipeline needs about a translated request.  Views point into <out>. */
struct h2conv_request {
	struct sluice_iov method;     /* the request line's method ("GET" for a WebSocket) */
	struct sluice_iov path;       /* the request target: origin-form, or "*" for OPTIONS */
	struct sluice_iov authority;  /* the Host line's value (:authority, else host), as sent */
	char host[HOST_BUF];          /* its host part, canonical (host_split_authority) */
	unsigned port;                /* its port; 443 ("https") or 80 ("http") if none given */
	int64_t content_length;       /* the client's content-length, or -1 */
	int has_body;                 /* DATA follows (not END_STREAM); for a WebSocket, the tunnel */
	int chunked;                  /* the head says Transfer-Encoding: chunked */
	int websocket;                /* extended CONNECT with :protocol websocket */
	int ws_key_generated;         /* a Sec-WebSocket-Key was generated: answer 200, not the 101 */
	int te_trailers;              /* the client sent "te: trailers" (kept in the head) */
	size_t nfields;               /* field lines written, Host and framing included */
};

/*
 * Translates a client's request header list <nva>/<nvlen> (one HEADERS block,
 * in order) into an HTTP/1.1 request head written to <out> (at most <out_cap>
 * bytes, the caller's head bound; not NUL-terminated):
 *
 *   METHOD SP path SP HTTP/1.1 CRLF
 *   Host: authority CRLF
 *   [Connection: Upgrade CRLF Upgrade: websocket CRLF]     (WebSocket)
 *   the regular fields, in order, names as received (lower case); host,
 *     content-length and cookie are left out here
 *   [cookie: c1; c2 ... CRLF]     every cookie field joined (RFC 9113 8.2.3)
 *   [Sec-WebSocket-Version: 13 CRLF] [Sec-WebSocket-Key: k CRLF]   (WebSocket)
 *   [Content-Length: N CRLF]  if the client sent content-length, else
 *   [Transfer-Encoding: chunked CRLF]  if DATA follows (not for a WebSocket)
 *   CRLF
 *
 * At most <nvlen> field lines are written.  On success returns 0 with
 * *<out_len> and <*info> filled (its views point into <out>).
 *
 * Refusals (negative return, *<err> filled, *<out_len> 0; <out> and <*info>
 * hold nothing to use):
 *  SLUICE_ETOOBIG (431): more than max_fields fields; the head over <out_cap>.
 *  SLUICE_EINVAL, malformed (400): empty, uppercase or non-token field name;
 *   NUL, CR, LF or another control byte in a value, or a value starting or
 *   ending with SP/HTAB; a pseudo-header after a regular field; an unknown or
 *   duplicate pseudo-header; :method, :scheme or :path missing (non-CONNECT);
 *   neither :authority nor host; two host fields; :protocol without CONNECT;
 *   a bad :method token; :path empty, not origin-form ("*" only for OPTIONS),
 *   or holding a byte outside 0x21-0x7e or '#'; an :authority or host with a
 *   byte outside the RFC 3986 authority set ('@' userinfo included) or that
 *   host_split_authority refuses; connection, keep-alive, proxy-connection,
 *   transfer-encoding, upgrade; te other than "trailers"; content-length not
 *   1*DIGIT, or two that differ; content-length > 0 with END_STREAM on HEADERS.
 *  SLUICE_EINVAL, not malformed: 400 :method over H2CONV_METHOD_MAX, :scheme
 *   other than opts->scheme, content-length over H2CONV_CONTENT_LENGTH_MAX,
 *   content-length on an extended CONNECT, an extended CONNECT ended by its
 *   HEADERS, sec-websocket-key on an extended CONNECT; 417 an Expect other
 *   than 100-continue; 421 :authority and host naming different hosts or
 *   ports, or an :authority host that differs from opts->sni (compared
 *   canonically: case-insensitive, one trailing dot, port ignored); 501 plain
 *   CONNECT, or extended CONNECT with a :protocol other than "websocket".
 *  SLUICE_EIO (500): RAND_bytes failed.
 */
int h2conv_request_to_h1(const nghttp2_nv *nva, size_t nvlen, const struct h2conv_req_opts *opts,
                         char *out, size_t out_cap, size_t *out_len, struct h2conv_request *info,
                         struct h2conv_err *err);

struct h2conv_resp_opts {
	/* Most fields accepted, :status included (capped at H2CONV_MAX_FIELDS). */
	size_t max_fields;
	/* 1 when the HEADERS frame carried END_STREAM. */
	int end_stream;
	/* The request's method (HEAD and CONNECT change framing); NULL if unknown. */
	const char *req_method;
	size_t req_method_len;
};

struct h2conv_response {
	int status;               /* 100..599, never 101 */
	int64_t content_length;   /* the upstream's content-length, or -1 */
	enum h1_framing framing;  /* H1_BODY_NONE, H1_BODY_LENGTH or H1_BODY_CHUNKED, as written */
	size_t nfields;           /* field lines written, framing included */
};

/*
 * Translates an upstream's response header list into an HTTP/1.1 status line
 * and fields in <out>/<out_cap>: "HTTP/1.1 SSS Reason CRLF", the regular
 * fields in order (content-length left out), then the framing line and CRLF:
 * "Content-Length: N" when the upstream sent one (dropped for 1xx, and for a
 * 2xx to CONNECT; for 204 only "0" is accepted, then dropped), else for a
 * response that may have a body (not 1xx/204/304, not to HEAD, not a 2xx to
 * CONNECT) "Content-Length: 0" when END_STREAM came with the HEADERS, else
 * "Transfer-Encoding: chunked".  A 1xx head is its own message: the caller
 * translates the final HEADERS next.  A 200 to an extended CONNECT is not
 * turned into a 101 here; the caller does that.
 * At most <nvlen> field lines are written.
 * Returns 0 with *<out_len> and <*info>, or, with *<err>:
 *  SLUICE_ETOOBIG: more than max_fields fields; the head over <out_cap>.
 *  SLUICE_EINVAL, malformed: :status missing, duplicate, not first, not
 *   exactly 3 digits in 100..599, or 101; a request pseudo-header or an
 *   unknown one; the field name/value and connection-specific rules of
 *   h2conv_request_to_h1; content-length malformed, differing, in a 1xx, or
 *   not "0" in a 204; content-length > 0 with END_STREAM where a body was due;
 *   END_STREAM on a 1xx.
 */
int h2conv_response_to_h1(const nghttp2_nv *nva, size_t nvlen, const struct h2conv_resp_opts *opts,
                          char *out, size_t out_cap, size_t *out_len, struct h2conv_response *info,
                          struct h2conv_err *err);

/*
 * Translates a trailer field list (a HEADERS block after DATA, either
 * direction) into the end of a chunked body: "0 CRLF", the fields, CRLF,
 * written to <out>/<out_cap>; h1_chunked_decode accepts it.  Use it only when
 * the HTTP/1.1 head said Transfer-Encoding: chunked; after a Content-Length
 * head, trailers cannot be carried and the caller drops them.
 * Returns 0 with *<out_len>, or, with *<err>:
 *  SLUICE_ETOOBIG (431): more than <max_fields> fields; over <out_cap>.
 *  SLUICE_EINVAL, malformed (400): any pseudo-header; the field name/value
 *   and connection-specific rules of h2conv_request_to_h1.
 *  SLUICE_EINVAL, not malformed (400): content-length, host, te or trailer in
 *   trailers (RFC 9110 6.5.1: framing and routing never come from trailers).
 */
int h2conv_trailers_to_h1(const nghttp2_nv *nva, size_t nvlen, size_t max_fields, char *out,
                          size_t out_cap, size_t *out_len, struct h2conv_err *err);

/* ---- h1 -> h2 ---- */

/* flags for h2conv_response_to_nv and h2conv_request_to_nv */
enum {
	/*
	 * The values may hold secrets (injected credentials): every field gets
	 * NGHTTP2_NV_FLAG_NO_INDEX, so HPACK never puts them in a dynamic table
	 * where a later stream could probe for them (issue 3 s7, issue 4 s5).
	 */
	H2CONV_NV_NO_INDEX = 1,
	/*
	 * Responses: the Content-Length is exactly the number of DATA bytes the
	 * caller will send (or the request was HEAD, or the status is 304):
	 * keep it.  Without this flag content-length is dropped, because a body
	 * the caller rewrites (scrubbing) may change length.
	 */
	H2CONV_NV_KEEP_CONTENT_LENGTH = 2,
	/*
	 * Requests: the upstream has SETTINGS_ENABLE_CONNECT_PROTOCOL; a
	 * WebSocket upgrade becomes an RFC 8441 extended CONNECT (:protocol
	 * websocket; sec-websocket-key dropped).  Without it an upgrade is refused.
	 */
	H2CONV_NV_EXTENDED_CONNECT = 4,
};

/*
 * Output of the h1 -> h2 functions: the caller's nv array and the caller's
 * byte buffer that holds the ":status" value and the lower-cased names.
 * Needs at most msg->nheaders + 5 entries and, for names, the sum of the
 * header name lengths + 3 bytes.  Values (other than :status and :protocol)
 * point into the h1_message's buffer: borrowed, valid while it is.  nv flags
 * are 0 or NGHTTP2_NV_FLAG_NO_INDEX; the caller may add NO_COPY flags if its
 * buffers outlive the frame.
 */
struct h2conv_nvbuf {
	nghttp2_nv *nva;
	size_t nva_cap;
	size_t nvlen;        /* set: entries used */
	char *buf;
	size_t buf_cap;
	size_t buf_len;      /* set: bytes of <buf> used */
};

/*
 * Translates an HTTP/1.1 response head <msg> (as h1_parse_response leaves it)
 * for an h2 client: ":status" first, then the fields in order with names
 * lower-cased, without connection, what Connection lists, keep-alive,
 * proxy-connection, transfer-encoding, upgrade, te and http2-settings; and
 * without content-length unless H2CONV_NV_KEEP_CONTENT_LENGTH (never for 1xx
 * or 204).  <has_body>: DATA will follow.
 * Returns 0, or with *<err> (static): SLUICE_EINVAL for status 101 (no 101 in
 * HTTP/2: the caller answers a WebSocket with 200 itself), a status outside
 * 100..599, a body announced on 1xx/204/304, or a name or value HTTP/2 cannot
 * carry; SLUICE_ETOOBIG when <out> is too small.
 */
int h2conv_response_to_nv(const struct h1_message *msg, int has_body, unsigned flags,
                          struct h2conv_nvbuf *out, const char **err);

/*
 * Translates an HTTP/1.1 request head <msg> for an h2 upstream: ":method",
 * ":scheme" (<scheme>, NULL for "https"), ":authority" (<authority>,
 * NUL-terminated, or NULL for the Host value), ":path" (the origin-form
 * target, or "*" for OPTIONS) first, then the fields with names lower-cased,
 * without host, connection and what it lists, keep-alive, proxy-connection,
 * transfer-encoding, upgrade, http2-settings, and te unless it lists
 * "trailers" (then "te: trailers").  A WebSocket upgrade (msg->upgrade_websocket)
 * becomes ":method CONNECT" + ":protocol websocket" (needs
 * H2CONV_NV_EXTENDED_CONNECT) without sec-websocket-key or content-length.
 * Returns 0, or with *<err>: SLUICE_EINVAL for CONNECT, a target that is not
 * origin-form, no authority or a malformed one, an upgrade without the flag,
 * a name or value HTTP/2 cannot carry; SLUICE_ETOOBIG when <out> is too small.
 */
int h2conv_request_to_nv(const struct h1_message *msg, const char *scheme, const char *authority,
                         unsigned flags, struct h2conv_nvbuf *out, const char **err);

/*
 * Translates the raw trailer section of a chunked HTTP/1.1 body <lines>/<len>
 * (field lines, each "name: value" CRLF, without the empty line that ends the
 * section; <len> 0 is an empty section) into trailer fields for a HEADERS
 * frame.  The lines are parsed again, strictly, whoever checked them before:
 * refused are a line not ended by CRLF, a bare CR or LF, an empty line, NUL,
 * obs-fold (a line starting with SP or HTAB), an empty or non-token name,
 * whitespace before the colon, and a value with a control byte (HTAB inside
 * excepted).  Names are lower-cased into <out>->buf; values (OWS trimmed)
 * point into <lines>: borrowed, valid while it is.  Dropped: content-length,
 * transfer-encoding, host, te, trailer, connection, keep-alive,
 * proxy-connection, upgrade and http2-settings (framing, routing and hop-by-hop
 * never come late, and mean nothing on another hop).  <flags>:
 * H2CONV_NV_NO_INDEX marks every field never-indexed.  <out>->nvlen may be 0
 * (everything dropped): then send no trailers.
 * Returns 0, or with *<err> (static): SLUICE_EINVAL for a malformed line,
 * SLUICE_ETOOBIG when <out> is too small.
 */
int h2conv_trailers_to_nv(const char *lines, size_t len, unsigned flags, struct h2conv_nvbuf *out,
                          const char **err);

#endif
