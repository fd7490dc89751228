/*
 * sandbox-glue/plan.c - a sandbox's identity and addresses (see sandbox.h).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include "common/hex.h"
#include "common/sluice.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/sandbox.h"

int
sandbox_id_new(char id[SANDBOX_ID_LEN + 1])
{
	uint8_t r[SANDBOX_ID_LEN / 2];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return SLUICE_EIO;
	hex_encode(id, r, sizeof(r));
	return 0;
}

int
sandbox_name_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > SANDBOX_NAME_MAX || name[0] == '.' || name[0] == '-')
		return 0;
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		      ch == '.' || ch == '-'))
			return 0;
	}
	return 1;
}

/* SANDBOX_ID_LEN lower-case hex digits and the NUL (proc_hex_lower stops at the first non-hex: no overread) */
static int
id_valid(const char *id)
{
	return proc_hex_lower(id, SANDBOX_ID_LEN) && id[SANDBOX_ID_LEN] == '\0';
}

/* fd00:5c::/64 with <v> as its last 32 bits */
static void
v6(char *out, size_t cap, uint32_t v)
{
	struct in6_addr a;

	memset(&a, 0, sizeof(a));
	a.s6_addr[0] = 0xfd;
	a.s6_addr[2] = 0x00;
	a.s6_addr[3] = 0x5c;
	a.s6_addr[12] = (uint8_t)(v >> 24);
	a.s6_addr[13] = (uint8_t)(v >> 16);
	a.s6_addr[14] = (uint8_t)(v >> 8);
	a.s6_addr[15] = (uint8_t)v;
	inet_ntop(AF_INET6, &a, out, (socklen_t)cap);
}

int
sandbox_net_plan(struct sandbox_net *n, const char *id, unsigned index, uint16_t transparent_port,
                 uint16_t dns_port)
{
	uint32_t base = index * 4;

	if (!id_valid(id) || index < 1 || index > SANDBOX_MAX_INDEX)
		return SLUICE_EINVAL;
	memset(n, 0, sizeof(*n));
	memcpy(n->id, id, SANDBOX_ID_LEN + 1);
	n->index = index;
	snprintf(n->table, sizeof(n->table), "sluice_%s", id);
	snprintf(n->netns, sizeof(n->netns), "sluice_%s", id);
	snprintf(n->host_if, sizeof(n->host_if), "slh%s", id);
	snprintf(n->sbx_if, sizeof(n->sbx_if), "sls%s", id);
	snprintf(n->host_v4, sizeof(n->host_v4), "10.200.%u.%u", (unsigned)(base >> 8), (unsigned)(base & 255) + 1);
	snprintf(n->sbx_v4, sizeof(n->sbx_v4), "10.200.%u.%u", (unsigned)(base >> 8), (unsigned)(base & 255) + 2);
	v6(n->host_v6, sizeof(n->host_v6), base + 1);
	v6(n->sbx_v6, sizeof(n->sbx_v6), base + 2);
	n->transparent_port = transparent_port;
	n->dns_port = dns_port;
	return 0;
}
