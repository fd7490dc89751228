/* common/netaddr.c - address classes, CIDR lists, listen addresses */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include "common/netaddr.h"
#include "common/sluice.h"

int
netaddr_cidr_parse(const char *s, struct netaddr_cidr *out)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long prefix;
	char *end;

	if (alen == 0 || alen >= sizeof(buf))
		return SLUICE_EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		out->prefix = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		out->prefix = 128;
	} else {
		return SLUICE_EINVAL;
	}
	if (slash != NULL) {
		if (slash[1] < '0' || slash[1] > '9')
			return SLUICE_EINVAL;
		prefix = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || prefix > out->prefix)
			return SLUICE_EINVAL;
		out->prefix = (unsigned)prefix;
	}
	return 0;
}

static int
prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* The IPv4 address <sa> stands for (plain or v4-mapped), into <v4>; 1 if any. */
static int
as_v4(const struct sockaddr *sa, uint8_t v4[4])
{
	if (sa->sa_family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 1;
	}
	if (sa->sa_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		if (memcmp(a, mapped, 12) == 0) {
			memcpy(v4, a + 12, 4);
			return 1;
		}
	}
	return 0;
}

int
netaddr_cidr_match(const struct netaddr_cidr *list, size_t n, const struct sockaddr *sa)
{
	uint8_t v4[4], v6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	int is4 = as_v4(sa, v4);
	size_t i;

	/* the peer as IPv6: itself, or ::ffff:a.b.c.d for a plain IPv4 peer */
	if (sa->sa_family == AF_INET6)
		memcpy(v6, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, 16);
	else if (is4)
		memcpy(v6 + 12, v4, 4);
	for (i = 0; i < n; i++) {
		if (list[i].family == AF_INET && is4 && prefix_eq(list[i].addr, v4, list[i].prefix))
			return 1;
		if (list[i].family == AF_INET6 && (is4 || sa->sa_family == AF_INET6) &&
		    prefix_eq(list[i].addr, v6, list[i].prefix))
			return 1;
	}
	return 0;
}

static const char *
v4_special(const uint8_t a[4])
{
	if (a[0] == 0)
		return "unspecified";            /* 0.0.0.0/8 "this network" */
	if (a[0] == 127)
		return "loopback";
	if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168))
		return "private";
	if (a[0] == 169 && a[1] == 254)
		return "link-local";
	if (a[0] == 100 && (a[1] & 0xc0) == 64)
		return "cgnat";
	if (a[0] == 192 && a[1] == 0 && a[2] == 0)
		return "reserved";               /* 192.0.0.0/24 IETF protocol assignments */
	if ((a[0] == 192 && a[1] == 0 && a[2] == 2) || (a[0] == 198 && a[1] == 51 && a[2] == 100) ||
	    (a[0] == 203 && a[1] == 0 && a[2] == 113))
		return "documentation";
	if (a[0] == 198 && (a[1] & 0xfe) == 18)
		return "benchmarking";
	if (a[0] >= 224 && a[0] <= 239)
		return "multicast";
	if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
		return "broadcast";
	if (a[0] >= 240)
		return "reserved";
	return NULL;
}

int
netaddr_nat64_len_ok(unsigned prefix)
{
	return prefix == 32 || prefix == 40 || prefix == 48 || prefix == 56 || prefix == 64 || prefix == 96;
}

/*
 * The IPv4 address an RFC 6052 IPv4-embedded IPv6 address <a> carries under a prefix of <len> bits (32, 40,
 * 48, 56, 64 or 96), into <v4>: 0, or -1 when bits 64..71 (the "u" octet) are not zero.
 */
static int
nat64_v4(const uint8_t *a, unsigned len, uint8_t v4[4])
{
	static const uint8_t at[6][4] = {
		{4, 5, 6, 7}, {5, 6, 7, 9}, {6, 7, 9, 10}, {7, 9, 10, 11}, {9, 10, 11, 12}, {12, 13, 14, 15},
	};
	size_t k = len == 96 ? 5 : (len - 32) / 8;

	if (len < 96 && a[8] != 0)
		return -1;
	for (size_t i = 0; i < 4; i++)
		v4[i] = a[at[k][i]];
	return 0;
}

const char *
netaddr_special(const struct sockaddr *sa)
{
	return netaddr_special_nat64(sa, NULL, 0);
}

const char *
netaddr_special_nat64(const struct sockaddr *sa, const struct netaddr_cidr *nat64, size_t nnat64)
{
	static const uint8_t wkp[12] = {0x00, 0x64, 0xff, 0x9b};                 /* 64:ff9b::/96 */
	static const uint8_t siit[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}; /* ::ffff:0:0:0/96 */
	const struct netaddr_cidr *best = NULL;
	const uint8_t *a;
	uint8_t v4[4];
	static const uint8_t zero[16];
	size_t i;

	if (as_v4(sa, v4))
		return v4_special(v4);
	if (sa->sa_family != AF_INET6)
		return "unspecified";
	a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	/* NAT64 and SIIT: a translator sends it to the IPv4 inside, so that is what is judged */
	for (i = 0; i < nnat64; i++)  /* the longest listed prefix that holds it */
		if (nat64[i].family == AF_INET6 && netaddr_nat64_len_ok(nat64[i].prefix) &&
		    prefix_eq(a, nat64[i].addr, nat64[i].prefix) && (best == NULL || nat64[i].prefix > best->prefix))
			best = &nat64[i];
	if (best != NULL)
		return nat64_v4(a, best->prefix, v4) != 0 ? "nat64" : v4_special(v4);
	if (memcmp(a, wkp, 12) == 0 || memcmp(a, siit, 12) == 0)
		return v4_special(a + 12);
	if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b)
		return "nat64";  /* 64:ff9b::/32 beyond the /96 (local-use /48 and others): not listed in nat64_prefixes */
	if (memcmp(a, zero, 16) == 0)
		return "unspecified";
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return "loopback";
	if (memcmp(a, zero, 12) == 0)                    /* ::a.b.c.d (deprecated compatible) */
		return v4_special(a + 12) ? v4_special(a + 12) : "reserved";
	if (a[0] == 0x20 && a[1] == 0x02) {              /* 2002::/16 6to4 embeds v4 in bits 16..47 */
		const char *c = v4_special(a + 2);
		return c ? c : "6to4";
	}
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) /* 2001::/32 Teredo */
		return "teredo";
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)
		return "documentation";
	if (a[0] == 0x01 && a[1] == 0 && memcmp(a + 2, zero, 6) == 0)  /* 100::/64 discard */
		return "reserved";
	if ((a[0] & 0xfe) == 0xfc)
		return "unique-local";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "link-local";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return "site-local";
	if (a[0] == 0xff)
		return "multicast";
	return NULL;
}

char *
netaddr_cidr_format(const struct netaddr_cidr *c, char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(c->family, c->addr, a, sizeof(a));
	snprintf(out, cap, "%s/%u", a, c->prefix);
	return out;
}

char *
netaddr_format(const struct sockaddr *sa, int with_port, char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN];
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		port = ntohs(s4->sin_port);
		if (with_port)
			snprintf(out, cap, "%s:%u", a, port);
		else
			snprintf(out, cap, "%s", a);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		uint8_t v4[4];

		port = ntohs(s6->sin6_port);
		if (as_v4(sa, v4))  /* show v4-mapped peers as plain IPv4 */
			inet_ntop(AF_INET, v4, a, sizeof(a));
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		if (with_port)
			snprintf(out, cap, as_v4(sa, v4) ? "%s:%u" : "[%s]:%u", a, port);
		else
			snprintf(out, cap, "%s", a);
	} else if (sa->sa_family == AF_UNIX) {
		snprintf(out, cap, "unix");
	} else {
		snprintf(out, cap, "?");
	}
	return out;
}

int
netaddr_listen_parse(const char *s, struct netaddr_listen *out)
{
	char host[64];
	const char *colon;
	size_t hlen;
	unsigned long port;
	char *end;

	memset(out, 0, sizeof(*out));
	if (strncmp(s, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&out->ss;
		size_t n = strlen(s + 5);

		if (n == 0 || n >= sizeof(un->sun_path) || s[5] != '/')
			return SLUICE_EINVAL;
		out->family = AF_UNIX;
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, s + 5, n + 1);
		memcpy(out->path, s + 5, n + 1);
		out->sslen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
		return 0;
	}
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			return SLUICE_EINVAL;
		hlen = (size_t)(close - s - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			return SLUICE_EINVAL;
		memcpy(host, s + 1, hlen);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return SLUICE_EINVAL;
		hlen = (size_t)(colon - s);
		if (hlen == 0 || hlen >= sizeof(host))
			return SLUICE_EINVAL;
		memcpy(host, s, hlen);
	}
	host[hlen] = '\0';
	if (colon[1] < '0' || colon[1] > '9')
		return SLUICE_EINVAL;
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || port > 65535)
		return SLUICE_EINVAL;
	if (s[0] != '[') {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out->ss;
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return SLUICE_EINVAL;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		out->family = AF_INET;
		out->sslen = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->ss;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return SLUICE_EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		out->family = AF_INET6;
		out->sslen = sizeof(*s6);
	}
	return 0;
}
