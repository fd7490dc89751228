/*
 * common/host.h - host names as the gateway judges them.
 *
 * One canonical form is shared by policy matching, certificate minting and
 * upstream resolution, so that the name judged is the name minted is the
 * name dialled.
 */
#ifndef SLUICE_COMMON_HOST_H
#define SLUICE_COMMON_HOST_H

#include <stddef.h>

#define HOST_MAX 253          /* longest DNS name, without the trailing dot */
#define HOST_BUF (HOST_MAX + 3)

enum host_kind {
	HOST_DNS = 1,  /* a DNS name: LDH labels, at least one dot not required */
	HOST_IPV4 = 2, /* canonical dotted quad */
	HOST_IPV6 = 3, /* canonical RFC 5952 text, without brackets */
};

/*
 * Canonicalises the host <in>/<len> (a SNI value, a CONNECT or Host authority's
 * host part, or a YAML key) into <out> (at least HOST_BUF bytes):
 *  - DNS names: lower-cased, one trailing dot removed; each label 1..63 bytes of
 *    [a-z0-9-] (and '_'), not starting or ending with '-'; the last label must
 *    not be all digits (so "127.1" is never a DNS name).
 *  - IPv4 in any inet_aton form ("127.1", "2130706433", "0x7f000001",
 *    "0177.0.0.1") becomes a dotted quad.  This is deliberate: other software
 *    on the path would read those forms as addresses.
 *  - IPv6 with or without brackets becomes RFC 5952 text, no zone ids.
 * Returns the kind (> 0), or -1 with *<err> set to a static reason.
 */
int host_canon(const char *in, size_t len, char *out, const char **err);

/* Returns 1 if <name> (NUL-terminated) is already canonical, else 0. */
int host_is_canonical(const char *name);

/*
 * Splits an authority "host:port", "[v6]:port" or "host" into host and port.
 * <default_port> is used when none is given (0: a port is required).
 * The host part is canonicalised into <host> (HOST_BUF bytes).
 * Returns the host kind, or -1 with *<err> set.
 */
int host_split_authority(const char *in, size_t len, unsigned default_port,
                         char *host, unsigned *port, const char **err);

#endif
