/*
 * fuzz_host.c - host_canon, host_split_authority and the netaddr text parsers
 * on arbitrary bytes.  Properties: canonical output is a fixed point
 * (canonicalising it again gives the same text and kind), host_is_canonical
 * agrees, and an accepted DNS name is never something inet_pton reads as an
 * address.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/host.h"
#include "common/netaddr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[HOST_BUF], again[HOST_BUF], host[HOST_BUF], text[600];
	const char *err = NULL;
	unsigned char addr[16];
	unsigned port = 0;
	int kind, kind2;
	struct netaddr_cidr cidr;
	struct netaddr_listen la;

	kind = host_canon((const char *)data, size, out, &err);
	if (kind > 0) {
		kind2 = host_canon(out, strlen(out), again, &err);
		if (kind2 != kind || strcmp(out, again) != 0 || !host_is_canonical(out))
			abort();
		if (kind == HOST_DNS && (inet_pton(AF_INET, out, addr) == 1 || inet_pton(AF_INET6, out, addr) == 1))
			abort();
	} else if (err == NULL) {
		abort();  /* every refusal says why */
	}
	kind = host_split_authority((const char *)data, size, 443, host, &port, &err);
	if (kind > 0 && (port == 0 || port > 65535 || !host_is_canonical(host)))
		abort();
	if (size < sizeof(text)) {
		memcpy(text, data, size);
		text[size] = '\0';
		if (netaddr_cidr_parse(text, &cidr) == 0 &&
		    ((cidr.family == AF_INET && cidr.prefix > 32) || cidr.prefix > 128))
			abort();
		(void)netaddr_listen_parse(text, &la);
	}
	return 0;
}
