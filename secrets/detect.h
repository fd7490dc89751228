/*
 * secrets/detect.h - is a placeholder in these bytes, written in any of the
 * forms an upstream could decode it from?
 *
 * The request-side check (proxy/cred/credhead.c, proxy/cred/credbody.c) runs this on
 * every place of the request that leaves: the method, the path, each query
 * key and value, each header name and value, the body's strings and fields.
 * A place is searched as it is and in its decoded views: percent-decoding
 * (either case of hex, partial: a '%' not followed by two hex digits stays,
 * repeated to a fixpoint so "%2573" is found too), JSON string escapes
 * ("\u0073", surrogate pairs, "\/"), and base64 with the standard and the
 * URL alphabet (mixed, padded or not) at each of the four alignments of every
 * run of base64 characters; each view is decoded again, PH_DETECT_DEPTH
 * decodings deep (base64 of a percent-encoded placeholder, and the reverse).
 *
 * Placeholders are compared byte for byte: one whose letters changed case is
 * a different string, not a placeholder.  Nothing here logs or keeps a copy:
 * the scratch is wiped before it is freed (a place may hold a value).
 */
#ifndef SLUICE_SECRETS_DETECT_H
#define SLUICE_SECRETS_DETECT_H

#include <stddef.h>
#include <stdint.h>

#define PH_DETECT_DEPTH 2             /* decodings stacked on one place (raw -> decoded -> decoded again) */
#define PH_DETECT_PCT_ROUNDS 4        /* percent-decodings one decoding step repeats until nothing changes */
#define PH_DETECT_PLACE_MAX (8u << 20) /* the longest place searched (a held body is at most 1 MiB) */

/*
 * Searches <p>/<len> and its decoded views for each of the <n> placeholders
 * <ph>[i] (<phlen>[i] bytes each, non-empty); sets found[i] to 1 for each one
 * found (found[] is not cleared first).  Returns how many of the <n> are now
 * set, or SLUICE_ENOMEM (scratch for a view could not be had) or
 * SLUICE_ETOOBIG (<len> over PH_DETECT_PLACE_MAX): then the caller cannot know
 * and must refuse.
 */
int ph_detect(const uint8_t *p, size_t len, const char *const *ph, const size_t *phlen, size_t n,
              unsigned char *found);

/*
 * The decoders, one step each, for tests and the fuzzer: each writes the
 * decoded view of <p>/<len> into <out> (capacity for ph_decode_bound(len)
 * bytes) and returns its length, or -1 when the step does not apply (no
 * '%XX', no '\', no run of four or more base64 characters).
 */
size_t ph_decode_bound(size_t len);
long ph_decode_percent(const uint8_t *p, size_t len, uint8_t *out);
/* One percent-decoding pass only (what the stream's first percent view holds), -1 when nothing decodes. */
long ph_decode_percent_once(const uint8_t *p, size_t len, uint8_t *out);
long ph_decode_json(const uint8_t *p, size_t len, uint8_t *out);
long ph_decode_base64(const uint8_t *p, size_t len, uint8_t *out);

/*
 * The same search on a stream (detect_stream.c), for what cannot be held
 * whole: a request body too large to hold, the frames of a WebSocket.  The
 * views are the raw bytes, their percent-decoding and their JSON unescaping,
 * and each of those decoded again either way (so "%2573", "\\u0073",
 * "%5Cu0073" are found), each decoded as ph_detect() decodes a whole place
 * (the decoding rules are one code, decode_int.h);
 * every view is searched for each placeholder and its base64 and base64url
 * forms at each alignment (the characters that depend on its bytes only).
 * Not covered here, unlike ph_detect(): more than two percent-decodings
 * ("%252573"), and the views of a base64 decoding (base64 of a
 * percent-encoded placeholder); a base64 form is found in every view.
 *
 * Bounded state: per view, the bytes of an escape not decided yet (under
 * PH_TOKEN_IN_MAX = 12) and the search's held-back tail (under the longest
 * needle); a ring of raw offsets over that tail (about 7 KiB in all); the scratch of a
 * round is per thread.
 *
 * The caller keeps the bytes it feeds: after each feed, all but the last
 * ph_stream_held() bytes fed are decided (no view holds a placeholder, nor
 * the start of one, in what they decode to); the held ones are raw bytes
 * that could still decode into the start of a placeholder.  At the end of the
 * stream ph_stream_end() decides them too (an escape cut off at the end
 * passes through as it is; a partial placeholder is not one).  Nothing is
 * logged; scratch and held bytes are wiped.
 */
#define PH_STREAM_MAX 1024   /* placeholders one search holds (a policy declares at most this many secrets) */
struct ph_stream;
struct ph_stream *ph_stream_new(void);
/*
 * Adds placeholder <ph>/<len> with the caller's <id>, before the first
 * feed: 0, SLUICE_ETOOBIG (PH_STREAM_MAX), SLUICE_EINVAL (empty, too long,
 * or after a feed).
 */
int ph_stream_add(struct ph_stream *s, const char *ph, size_t len, size_t id);
/* Searches <len> more bytes: 1 and *id when a placeholder is found in a view, 0, or SLUICE_ENOMEM. */
int ph_stream_feed(struct ph_stream *s, const uint8_t *p, size_t len, size_t *id);
/* The stream ended: decides what is held (1 and *id, 0, SLUICE_ENOMEM); feeding on starts a new stream. */
int ph_stream_end(struct ph_stream *s, size_t *id);
/* Raw bytes at the end of what was fed that are not decided yet. */
size_t ph_stream_held(const struct ph_stream *s);
size_t ph_stream_count(const struct ph_stream *s);
void ph_stream_free(struct ph_stream *s);

#endif
