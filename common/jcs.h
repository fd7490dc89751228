/*
 * common/jcs.h - RFC 8785, the JSON Canonicalization Scheme: the one byte
 * form of a JSON value, for hashing (the audit fingerprint of MCP tool
 * arguments, audit/audit.h audit_args_hmac).  Pure: no I/O, no state.
 *
 *   - objects: members sorted by their names' UTF-16 code units, compared
 *     as unsigned numbers (so U+E000..U+FFFF sort after the surrogate
 *     pairs of U+10000 and above); no whitespace anywhere;
 *   - strings: '"' and '\\' escaped, U+0008 U+0009 U+000A U+000C U+000D as
 *     \b \t \n \f \r, the other controls below U+0020 as \u00xx (lower
 *     case hex), everything else (DEL, U+2028, any non-ASCII) as its UTF-8;
 *   - numbers: as ECMAScript's Number.prototype.toString writes the IEEE
 *     754 double: the shortest digits that read back to the same double,
 *     plain notation for exponents 10^-7 < |x| < 10^21, else d[.ddd]e+N /
 *     e-N; -0 is "0".  jansson keeps integers as integers (up to 63 bits):
 *     they are written as the double they convert to, so 9007199254740993
 *     becomes 9007199254740992, as an RFC 8785 implementation reading the
 *     text as I-JSON would;
 *   - literals true, false, null as they are.
 *
 * Not finite numbers (NaN, Infinity: no JSON text holds them, but a tree
 * built in code could) are an error, as RFC 8785 section 3.2.2.3 requires;
 * so is a string or name that is not valid UTF-8 (jansson checks its input,
 * a tree built with json_stringn_nocheck might not be).
 *
 * Bounded: nesting deeper than JCS_DEPTH_MAX and output beyond the caller's
 * <max> are errors; memory is the output plus, per object being written,
 * one array of its member names (on the stack up to JCS_SORT_STACK).
 */
#ifndef SLUICE_COMMON_JCS_H
#define SLUICE_COMMON_JCS_H

#include <jansson.h>
#include <stddef.h>

#define JCS_DEPTH_MAX 64       /* arrays and objects nested in one value */
#define JCS_SORT_STACK 32      /* members of an object sorted without an allocation */
#define JCS_NUMBER_MAX 32      /* bytes of one number's text, with its NUL ("-1.2345678901234567e-308") */

/*
 * Receives the canonical bytes in order, in pieces: returns 0 to go on, or
 * a negative SLUICE_E* to stop (returned by jcs_emit as it is).
 */
typedef int (*jcs_sink_fn)(void *arg, const char *p, size_t n);

/*
 * Writes the canonical form of <v> (borrowed) to <sink>, at most <max> bytes
 * in all.  Returns 0; SLUICE_ETOOBIG past <max> or JCS_DEPTH_MAX;
 * SLUICE_EINVAL for a number that is not finite or text that is not UTF-8;
 * SLUICE_ENOMEM; or the sink's own error.  On an error some bytes may have
 * been written already: the caller drops them.
 */
int jcs_emit(const json_t *v, size_t max, jcs_sink_fn sink, void *arg);

/*
 * The canonical form of <v> in a new NUL-terminated buffer *<out> (the caller
 * frees it) of *<outlen> bytes.  Returns as jcs_emit (then *<out> is NULL).
 */
int jcs_dump(const json_t *v, size_t max, char **out, size_t *outlen);

/*
 * The canonical form of the JSON text <in>/<len> (any value at the top; a
 * duplicate name is an error, SLUICE_EPARSE, as is text that is not JSON).
 * Integers too large for 63 bits are read as doubles.  Returns as jcs_dump.
 */
int jcs_from_text(const char *in, size_t len, size_t max, char **out, size_t *outlen);

/*
 * The ECMAScript text of double <x> into <buf> (JCS_NUMBER_MAX bytes):
 * returns its length, or SLUICE_EINVAL when <x> is not finite.
 */
int jcs_number(double x, char buf[JCS_NUMBER_MAX]);

#endif
