/*
 * policy/path.c - origin-form path normalisation (policy.h).
 *
 * Rules are judged on the normalised path and the normalised path is what is
 * forwarded, so that the upstream cannot read a path differently from the
 * way the policy read it: "/ok/%2e%2e/admin" is "/admin" on both sides, and
 * an encoded slash, which servers disagree about, is refused by default.
 */
#include <string.h>

#include "common/sluice.h"
#include "policy/policy.h"
#include "policy/policy_int.h"

int
policy_is_unreserved(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int
policy_is_pchar(unsigned c)
{
	/* unreserved, sub-delims, ':' and '@' (RFC 3986 pchar without pct-encoded) */
	return policy_is_unreserved(c) || c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' ||
	       c == ')' || c == '*' || c == '+' || c == ',' || c == ';' || c == '=' || c == ':' ||
	       c == '@';
}

/*
 * Decodes the segment <in>[*<i>..] up to the next '/' or <len> into <out> at
 * <o>, advancing both.  Returns 0, or -1 with *<err> set.
 */
static int
segment_copy(const char *in, size_t len, size_t *i, int keep_slashes, char *out, size_t cap,
             size_t *o, const char **err)
{
	static const char hex[] = "0123456789ABCDEF";

	while (*i < len && in[*i] != '/') {
		unsigned c = (unsigned char)in[*i];

		if (c == '%') {
			int hi, lo;

			if (len - *i < 3 || (hi = sluice_hexval((unsigned char)in[*i + 1])) < 0 ||
			    (lo = sluice_hexval((unsigned char)in[*i + 2])) < 0) {
				*err = "bad percent-encoding in path";
				return -1;
			}
			c = (unsigned)(hi * 16 + lo);
			*i += 3;
			if (c == 0) {
				*err = "encoded NUL in path";
				return -1;
			}
			if ((c == '/' || c == '\\') && !keep_slashes) {
				*err = c == '/' ? "encoded slash in path" : "encoded backslash in path";
				return -1;
			}
			if (policy_is_unreserved(c)) {
				if (*o + 1 >= cap)
					goto small;
				out[(*o)++] = (char)c;
			} else {
				if (*o + 3 >= cap)
					goto small;
				out[(*o)++] = '%';
				out[(*o)++] = hex[c >> 4];
				out[(*o)++] = hex[c & 15];
			}
			continue;
		}
		if (!policy_is_pchar(c)) {
			*err = "invalid character in path";
			return -1;
		}
		if (*o + 1 >= cap)
			goto small;
		out[(*o)++] = (char)c;
		(*i)++;
	}
	return 0;
small:
	*err = "path output buffer too small";
	return -1;
}

long
policy_path_normalise(const char *in, size_t len, int keep_slashes, char *out, size_t cap,
                      const char **err)
{
	size_t i = 1, o = 1;

	if (len == 0 || in[0] != '/') {
		*err = "path must start with '/'";
		return -1;
	}
	if (cap < 2 || len > (size_t)(~0ul >> 1) - 1) {
		*err = "path output buffer too small";
		return -1;
	}
	/*
	 * out[0..o) is always "/" followed by whole segments each ending in '/',
	 * or, once the last segment has been copied, without the final '/'.
	 * Each input segment is decoded at out + o, then kept, dropped (".")
	 * or made to drop the previous one ("..").
	 */
	out[0] = '/';
	for (;;) {
		size_t start = o;
		int last;

		if (segment_copy(in, len, &i, keep_slashes, out, cap, &o, err) < 0)
			return -1;
		last = i >= len;
		if (!last)
			i++; /* the '/' */
		if (o - start == 1 && out[start] == '.') {
			o = start;
		} else if (o - start == 2 && out[start] == '.' && out[start + 1] == '.') {
			o = start;
			if (o == 1) {
				*err = "path climbs above the root";
				return -1;
			}
			o--; /* the previous segment's '/' */
			while (out[o - 1] != '/')
				o--;
		} else if (o > start && !last) {
			if (o + 1 >= cap) {
				*err = "path output buffer too small";
				return -1;
			}
			out[o++] = '/';
		}
		/* An empty segment ("//" or the final "/") adds nothing. */
		if (last)
			break;
	}
	out[o] = '\0';
	return (long)o;
}
