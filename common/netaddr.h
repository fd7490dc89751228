/*
 * common/netaddr.h - address classes and CIDR lists.
 */
#ifndef SLUICE_COMMON_NETADDR_H
#define SLUICE_COMMON_NETADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct netaddr_cidr {
	int family;        /* AF_INET or AF_INET6 */
	uint8_t addr[16];  /* network order; first 4 bytes for AF_INET */
	unsigned prefix;   /* 0..32 or 0..128 */
};

/* Parses "10.0.0.0/8", "::1/128" or a bare address. 0 or SLUICE_EINVAL. */
int netaddr_cidr_parse(const char *s, struct netaddr_cidr *out);

/* 1 if <sa> (AF_INET, AF_INET6, or v4-mapped v6) is inside any of <list>. */
int netaddr_cidr_match(const struct netaddr_cidr *list, size_t n, const struct sockaddr *sa);

/*
 * Returns a static name of the special class <sa> falls in ("loopback",
 * "private", "link-local", "cgnat", "multicast", "unspecified", "reserved",
 * "broadcast", "unique-local", "documentation"...), or NULL for an ordinary
 * public unicast address.  IPv6 forms that carry an IPv4 address (mapped
 * ::ffff:0:0/96, compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16,
 * Teredo 2001::/32) are judged by the IPv4 address inside them.  NAT64 and SIIT:
 * the well-known 64:ff9b::/96 and ::ffff:0:0:0/96 are judged by the IPv4 in
 * their last four bytes; any other address in 64:ff9b::/32 (the local-use
 * 64:ff9b:1::/48, other embeddings) is "nat64", refused, unless its prefix is
 * one of <nat64> (upstream.nat64_prefixes), which is judged by the IPv4 at the
 * position RFC 6052 section 2.2 gives for the prefix's length.
 */
const char *netaddr_special(const struct sockaddr *sa);  /* no nat64_prefixes */
const char *netaddr_special_nat64(const struct sockaddr *sa, const struct netaddr_cidr *nat64, size_t nnat64);
/* 1 if <prefix> is a length RFC 6052 allows for a NAT64 prefix: 32, 40, 48, 56, 64 or 96. */
int netaddr_nat64_len_ok(unsigned prefix);

/* Formats <c> as "10.0.0.0/8" / "fd00::/64" into <out> (>= 50 bytes); returns <out>. */
char *netaddr_cidr_format(const struct netaddr_cidr *c, char *out, size_t cap);

/* Formats <sa> as "1.2.3.4" / "::1" into <out> (>= 46 bytes); with port as "1.2.3.4:80" / "[::1]:80" when <with_port>. */
char *netaddr_format(const struct sockaddr *sa, int with_port, char *out, size_t cap);

/* Parses a listen address "[::]:15001", "127.0.0.1:3128" or "unix:/path". */
struct netaddr_listen {
	int family;                 /* AF_INET, AF_INET6 or AF_UNIX */
	struct sockaddr_storage ss;
	socklen_t sslen;
	char path[108];             /* for AF_UNIX */
};
int netaddr_listen_parse(const char *s, struct netaddr_listen *out);

#endif
