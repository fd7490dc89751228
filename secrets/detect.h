/*
 * secrets/detect.h - is a placeholder in these bytes, written in any of the
 * forms an upstream could decode it from?
 *
 * The request-side check (proxy/credhead.c, proxy/credbody.c) runs this on
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
long ph_decode_json(const uint8_t *p, size_t len, uint8_t *out);
long ph_decode_base64(const uint8_t *p, size_t len, uint8_t *out);

#endif
