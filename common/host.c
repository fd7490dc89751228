/*
 * common/host.c - host name canonicalisation.
 *
 * Security: the same canonical text is what policy matches, what the leaf
 * certificate names and what the gateway resolves.  Forms that resolvers or
 * URL parsers read as IPv4 addresses ("127.1", "2130706433", "0x7f000001")
 * are turned into the dotted quad here, so they can never pass as names.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include "common/host.h"
#include "common/sluice.h"

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}


/* One inet_aton part: decimal, 0-prefixed octal or 0x hex. -1 if malformed. */
static int
ipv4_part(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	size_t i = 0;

	if (n == 0)
		return -1;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
		if (n == 2) { /* "0x" alone is 0 in inet_aton */
			*out = 0;
			return 0;
		}
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < n; i++) {
		int d = base == 16 ? sluice_hexval((unsigned char)s[i]) : (is_digit((unsigned char)s[i]) ? s[i] - '0' : -1);

		if (d < 0 || (unsigned)d >= base)
			return -1;
		v = v * base + (unsigned)d;
		if (v > 0xffffffffULL)
			return -1;
	}
	*out = v;
	return 0;
}

/* Parses every inet_aton form strictly. Returns 0 and the address in host order. */
static int
ipv4_parse(const char *s, size_t n, uint32_t *addr)
{
	uint64_t part[4];
	size_t np = 0, start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (np == 4 || ipv4_part(s + start, i - start, &part[np]) == -1)
				return -1;
			np++;
			start = i + 1;
		}
	}
	switch (np) {
	case 1:
		*addr = (uint32_t)part[0];
		return 0;
	case 2:
		if (part[0] > 255 || part[1] > 0xffffff)
			return -1;
		*addr = (uint32_t)(part[0] << 24 | part[1]);
		return 0;
	case 3:
		if (part[0] > 255 || part[1] > 255 || part[2] > 0xffff)
			return -1;
		*addr = (uint32_t)(part[0] << 24 | part[1] << 16 | part[2]);
		return 0;
	case 4:
		if (part[0] > 255 || part[1] > 255 || part[2] > 255 || part[3] > 255)
			return -1;
		*addr = (uint32_t)(part[0] << 24 | part[1] << 16 | part[2] << 8 | part[3]);
		return 0;
	}
	return -1;
}

/* WHATWG's "ends in a number": the last label is all digits, or 0x + hex digits. */
static int
ends_in_number(const char *s, size_t n)
{
	size_t start = n, i;

	while (start > 0 && s[start - 1] != '.')
		start--;
	if (start == n)
		return 0;
	for (i = start; i < n && is_digit((unsigned char)s[i]); i++)
		;
	if (i == n)
		return 1;
	if (n - start >= 2 && s[start] == '0' && (s[start + 1] == 'x' || s[start + 1] == 'X')) {
		for (i = start + 2; i < n && sluice_hexval((unsigned char)s[i]) >= 0; i++)
			;
		return i == n;
	}
	return 0;
}

static int
dns_canon(const char *in, size_t len, char *out, const char **err)
{
	size_t i, label = 0;

	if (len == 0) {
		*err = "empty host name";
		return -1;
	}
	if (len > HOST_MAX) {
		*err = "host name longer than 253 bytes";
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0) {
				*err = "empty label in host name";
				return -1;
			}
			if (out[i - 1] == '-') {
				*err = "label ends with '-'";
				return -1;
			}
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_') {
			if (label == 0 && c == '-') {
				*err = "label starts with '-'";
				return -1;
			}
			if (++label > 63) {
				*err = "label longer than 63 bytes";
				return -1;
			}
		} else {
			*err = "byte not allowed in a host name";
			return -1;
		}
		out[i] = (char)c;
	}
	if (label == 0 || out[len - 1] == '-') {
		*err = label == 0 ? "empty label in host name" : "label ends with '-'";
		return -1;
	}
	out[len] = '\0';
	return HOST_DNS;
}

int
host_canon(const char *in, size_t len, char *out, const char **err)
{
	char tmp[64];
	struct in6_addr a6;
	uint32_t a4;
	struct in_addr ia;

	if (len == 0) {
		*err = "empty host name";
		return -1;
	}
	if (memchr(in, '\0', len) != NULL) {
		*err = "NUL in host name";
		return -1;
	}
	if (in[0] == '[') {
		if (len < 3 || in[len - 1] != ']') {
			*err = "unterminated IPv6 literal";
			return -1;
		}
		in++;
		len -= 2;
		goto v6;
	}
	if (memchr(in, ':', len) != NULL)
		goto v6;
	if (len > 0 && in[len - 1] == '.')  /* one trailing dot: the root */
		len--;
	if (len > HOST_MAX) {
		*err = "host name longer than 253 bytes";
		return -1;
	}
	if (memchr(in, '\0', len) != NULL) {
		*err = "NUL in host name";
		return -1;
	}
	if (ends_in_number(in, len)) {
		if (ipv4_parse(in, len, &a4) == -1) {
			*err = "malformed IPv4 address";
			return -1;
		}
		ia.s_addr = htonl(a4);
		if (inet_ntop(AF_INET, &ia, out, HOST_BUF) == NULL) {
			*err = "malformed IPv4 address";
			return -1;
		}
		return HOST_IPV4;
	}
	return dns_canon(in, len, out, err);
v6:
	if (len == 0 || len >= sizeof(tmp) || memchr(in, '%', len) != NULL) {
		*err = "malformed IPv6 address";
		return -1;
	}
	memcpy(tmp, in, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, &a6) != 1 || inet_ntop(AF_INET6, &a6, out, HOST_BUF) == NULL) {
		*err = "malformed IPv6 address";
		return -1;
	}
	return HOST_IPV6;
}

int
host_is_canonical(const char *name)
{
	char out[HOST_BUF];
	const char *err;
	size_t n = strnlen(name, HOST_BUF);

	if (n >= HOST_BUF || host_canon(name, n, out, &err) < 0)
		return 0;
	return strcmp(out, name) == 0;
}

int
host_split_authority(const char *in, size_t len, unsigned default_port, char *host, unsigned *port,
                     const char **err)
{
	size_t hlen = len, i;
	const char *p = NULL;
	unsigned long v = 0;

	if (len == 0) {
		*err = "empty authority";
		return -1;
	}
	if (in[0] == '[') {
		const char *close = memchr(in, ']', len);

		if (close == NULL) {
			*err = "unterminated IPv6 literal";
			return -1;
		}
		hlen = (size_t)(close - in) + 1;
		if (hlen < len) {
			if (in[hlen] != ':') {
				*err = "bytes after IPv6 literal";
				return -1;
			}
			p = in + hlen + 1;
		}
	} else {
		const char *colon = memchr(in, ':', len);

		if (colon != NULL) {
			if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - in)) != NULL) {
				*err = "IPv6 literal without brackets";
				return -1;
			}
			hlen = (size_t)(colon - in);
			p = colon + 1;
		}
	}
	if (p != NULL) {
		size_t plen = len - (size_t)(p - in);

		if (plen == 0 || plen > 5) {
			*err = "malformed port";
			return -1;
		}
		for (i = 0; i < plen; i++) {
			if (!is_digit((unsigned char)p[i])) {
				*err = "malformed port";
				return -1;
			}
			v = v * 10 + (unsigned)(p[i] - '0');
		}
		if (v == 0 || v > 65535) {
			*err = "port out of range";
			return -1;
		}
		*port = (unsigned)v;
	} else {
		if (default_port == 0) {
			*err = "port required";
			return -1;
		}
		*port = default_port;
	}
	return host_canon(in, hlen, host, err);
}
