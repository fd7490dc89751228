/*
 * policy/path.c - origin-form path normalisation (policy.h).
 *
 * Rules are judged on the normalised path and the normalised path is what is
 * forwarded, so that the upstream cannot read a path differently from the
 * way the policy read it: "/ok/%2e%2e/admin" is "/admin" on both sides, and
 * an encoded slash, which servers disagree about, is refused by default.
 */
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/pct.h"
#include "common/sluice.h"
#include "policy/policy.h"
#include "policy_int.h"

int
policy_is_unreserved(unsigned c)
{
	return c <= 0xff && pct_unreserved((unsigned char)c);
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
				hex_pair(out + *o, (unsigned char)c, 1);
				*o += 2;
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

/* 1 if the decoded segment <s>/<n> is "." or ".." followed by ';' parameters. */
static int
dot_with_params(const char *s, size_t n)
{
	const char *semi = memchr(s, ';', n);
	size_t k = semi != NULL ? (size_t)(semi - s) : 0;

	return semi != NULL && (k == 1 || k == 2) && s[0] == '.' && s[k - 1] == '.';
}

size_t
policy_path_strip_params(const char *in, size_t len, char *out, size_t cap)
{
	size_t i = 0, o = 0;
	int skip = 0;

	for (; i < len && o + 1 < cap; i++) {
		if (in[i] == '/') {
			skip = 0;
			if (o > 0 && out[o - 1] == '/')
				continue;  /* the segment was all parameters: merged */
		} else if (in[i] == ';') {
			skip = 1;
		}
		if (!skip)
			out[o++] = in[i];
	}
	if (o > 1 && out[o - 1] == '/' && (len == 0 || in[len - 1] != '/'))
		o--;  /* "/a/;x" is "/a": the last segment was all parameters */
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return o;
}

long
policy_host_path(const struct policy_host *h, const char *in, size_t len, char *out, size_t cap, const char **err)
{
	long n = policy_path_normalise(in, len, h != NULL && policy_host_keep_encoded_slashes(h), out, cap, err);

	if (n < 0 || memchr(out, ';', (size_t)n) == NULL)
		return n;
	switch (policy_host_path_params(h)) {
	case POLICY_PATH_PARAMS_REFUSE:
		*err = "';' path parameters are refused on this host (path_params: refuse)";
		return -1;
	case POLICY_PATH_PARAMS_STRIP: {
		/* in place: the output never grows */
		char *tmp = xmalloc((size_t)n + 1);

		n = (long)policy_path_strip_params(out, (size_t)n, tmp, (size_t)n + 1);
		memcpy(out, tmp, (size_t)n + 1);
		free(tmp);
		return n;
	}
	case POLICY_PATH_PARAMS_KEEP:
		break;
	}
	return n;
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
		if (dot_with_params(out + start, o - start)) {
			*err = "a dot segment with ';' parameters in path";
			return -1;
		}
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
