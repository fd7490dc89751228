/*
 * secrets/scrub.h - replacing real secret values by their placeholders in
 * what flows back to the sandbox (issue 3, section 4), and the gzip/deflate
 * decoder that lets the gateway scrub compressed bodies.
 *
 * A response body arrives in pieces of any size; a value split across two
 * pieces must still be replaced whole, so a stream holds back the few bytes
 * that could still begin a value until the next piece (or the end) decides
 * them.  Nothing here logs, and every copy of a value (the pairs, the held-back
 * tail, the scratch) is wiped before it is freed.
 */
#ifndef SLUICE_SECRETS_SCRUB_H
#define SLUICE_SECRETS_SCRUB_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

#define SCRUB_NEEDLE_MAX 32768   /* the longest form a secret can take (percent-encoding of 8 KiB is 24 KiB) */
#define SCRUB_TAGS 1024          /* tags are 0..1023 (a policy declares at most this many secrets): a bit each in
                                    struct scrub_hits */
#define SCRUB_FORM_MIN 8         /* echo forms shorter than this are not added (too likely by chance) */

/* Which tags a scrub replaced: bit <tag>.  Zero it before the first feed. */
struct scrub_hits {
	uint64_t w[SCRUB_TAGS / 64];
};
/* 1 if <tag> is set in <h>. */
static inline int
scrub_hits_has(const struct scrub_hits *h, unsigned tag)
{
	return tag < SCRUB_TAGS && (h->w[tag >> 6] >> (tag & 63)) & 1;
}
/* The lowest tag set in <h>, or -1 when none is. */
int scrub_hits_first(const struct scrub_hits *h);
/* <dst> |= <src>. */
void scrub_hits_or(struct scrub_hits *dst, const struct scrub_hits *src);
#define UNZIP_OUT_MAX (256 * 1024) /* bytes one unzip_feed call may append: the caller's backpressure bound */

struct scrub_set;       /* what to replace: pairs (from -> to) with a tag; from/to copied into wiped memory */
struct scrub_set *scrub_set_new(void);
/*
 * Adds one pair; 0 or SLUICE_EINVAL (empty or over-long <from>, <to> over
 * SCRUB_NEEDLE_MAX, tag >= SCRUB_TAGS).  When two pairs have the same
 * <from>, the one added first wins.  Pairs may be added while streams borrow
 * <s>, between their feeds (never concurrently with one).
 */
int scrub_set_add(struct scrub_set *s, const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len,
                  unsigned tag);
/*
 * Adds every echo form of secret <value> -> the same form of <placeholder>, tagged <tag>:
 * the literal; its standard base64 at each of the three alignments (the characters that depend only on the
 * value's bytes when it starts at offset 0, 1 or 2 of a base64-encoded stream; placeholder likewise);
 * percent-encoding, in upper- and lower-case hex, as each common encoder writes it (every byte outside
 * RFC 3986 unreserved; encodeURIComponent, which keeps !'()*; Python's quote, which keeps '/'; form
 * encoding, space as '+', as quote_plus / Go's QueryEscape, WHATWG URLSearchParams and PHP urlencode
 * write it), each only if it differs from the literal and the forms before it; JSON string escaping
 * (only if it differs). Skips forms shorter than SCRUB_FORM_MIN bytes.
 *
 * Extensions: where the value ends a base64 stream, the form that runs on to
 * the stream's end (its last, partial character and its '=' padding) is also
 * added, so that an encoded "user:VALUE" decodes to exactly "user:PLACEHOLDER";
 * and when the value holds a '/', the JSON form with "\/" (PHP's default).
 * All or nothing: on an error no pair of this secret stays in <s>.
 * 0, SLUICE_EINVAL (empty value or placeholder, tag >= SCRUB_TAGS, a form
 * over SCRUB_NEEDLE_MAX).
 */
int scrub_set_add_secret(struct scrub_set *s, const uint8_t *value, size_t vlen, const char *placeholder,
                         unsigned tag);
/*
 * Adds base64(<cred>) -> base64(<cred_ph>) for an exact injected Basic credential ("user:value").
 * 0, or SLUICE_EINVAL (either empty or over SCRUB_NEEDLE_MAX / 2 bytes, tag >= SCRUB_TAGS).
 */
/* One secret for scrub_set_add_secrets(). */
struct scrub_secret {
	const uint8_t *value;
	size_t len;
	const char *placeholder;
	unsigned tag;
};
/*
 * scrub_set_add_secret() for each of <n> secrets, indexing the set once
 * (what a set of a hundred secrets needs to be built in a millisecond).  All
 * or nothing: on an error no pair of these secrets stays in <s>.
 */
int scrub_set_add_secrets(struct scrub_set *s, const struct scrub_secret *v, size_t n);
/* A copy of <s> (its pairs copied into wiped memory), to add to without changing <s>. */
struct scrub_set *scrub_set_dup(const struct scrub_set *s);
/* The number of pairs in <s> (tests, bench). */
size_t scrub_set_count(const struct scrub_set *s);
int scrub_set_add_basic(struct scrub_set *s, const uint8_t *cred, size_t len, const uint8_t *cred_ph,
                        size_t ph_len, unsigned tag);
void scrub_set_free(struct scrub_set *s);  /* wipes every pair */
size_t scrub_set_max_len(const struct scrub_set *s);

struct scrub_stream;    /* one body being scrubbed; borrows its set, which must outlive it */
struct scrub_stream *scrub_stream_new(const struct scrub_set *set);
/*
 * Appends to <out> the scrubbed form of everything fed so far except a held-back tail (at most the longest
 * 'from' minus one byte), so a value split across feeds is still replaced whole: never a partial value,
 * never a partial replacement. Leftmost-longest matching; replaced text is not rescanned. Sets the tags of
 * what it replaced in *hits (NULL: not wanted). <out> NULL: a search only, nothing is written (the held-back
 * count and the hits are the same). 0, or SLUICE_ENOMEM.
 *
 * Only bytes that could still begin a 'from' are held back: a stream that
 * holds nothing resembling a value is passed on without delay.  The output
 * of any split of a body equals scrub_buffer() of the whole.  After an error
 * the stream's output is incomplete: drop the stream and the body.
 */
int scrub_stream_feed(struct scrub_stream *st, const uint8_t *in, size_t len, struct evbuffer *out,
                      struct scrub_hits *hits);
/* Flushes the held-back tail (scrubbed).  The stream may then start a new body. */
int scrub_stream_end(struct scrub_stream *st, struct evbuffer *out, struct scrub_hits *hits);
void scrub_stream_free(struct scrub_stream *st);  /* wipes the held-back tail */
/* Bytes currently held back (for tests and backpressure accounting). */
size_t scrub_stream_held(const struct scrub_stream *st);
/* One-shot: scrubs <in> whole into <out> (header values). */
int scrub_buffer(const struct scrub_set *set, const uint8_t *in, size_t len, struct evbuffer *out,
                 struct scrub_hits *hits);

struct unzip;           /* a Content-Encoding decoder: gzip, x-gzip or deflate (zlib-wrapped, or raw as sent by
                           some servers: detect) */
/* <encoding>: "gzip", "x-gzip" or "deflate" (case-insensitive); NULL for anything else. */
struct unzip *unzip_new(const char *encoding);
/*
 * Decodes from <in>/<len>, appending at most UNZIP_OUT_MAX bytes to <out>; *consumed says how much input
 * was used (call again with the rest once the caller's output has drained). Returns 0 (more wanted),
 * 1 (the compressed stream ended; bytes after it are an error if non-empty: return -1), or -1 (corrupt).
 * Total output is bounded only by the caller's backpressure: a bomb just streams.
 *
 * While decoded output is still pending inside the decoder, *consumed is
 * kept below <len> (the last byte is reported unconsumed and recognised when
 * it is passed again), so "all input consumed and 0" always means the decoder
 * wants more input.  A deflate stream is taken as zlib-wrapped when its first
 * two bytes form a valid zlib header, as raw deflate otherwise.  After -1 the
 * decoder stays failed.
 */
int unzip_feed(struct unzip *z, const uint8_t *in, size_t len, struct evbuffer *out, size_t *consumed);
void unzip_free(struct unzip *z);

#endif
