/*
 * sandbox-glue/sandbox.h - the launcher's shared vocabulary: a sandbox's
 * identity and network plan.  Every backend (netns, qemu, firecracker) and
 * the nftables generator work from one struct sandbox_net.
 *
 * Addressing (tests and defaults): each sandbox gets a /30 out of
 * 10.200.0.0/16 (host side .1, sandbox side .2 of its block) and a /126 out
 * of fd00:5c::/64, chosen by index so that two live sandboxes never share
 * one.  The host side address is where the sandbox's default route points;
 * nftables redirects everything the gateway handles to the gateway's
 * listeners and rejects the rest.
 */
#ifndef SLUICE_SANDBOX_SANDBOX_H
#define SLUICE_SANDBOX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#define SANDBOX_ID_LEN 8       /* hex characters of a sandbox id */
#define SANDBOX_NAME_MAX 32    /* a user-given --name: [A-Za-z0-9_.-], 1..32 */
#define SANDBOX_IFNAME_MAX 16  /* IFNAMSIZ */
#define SANDBOX_MAX_INDEX 16383 /* /30 blocks in 10.200.0.0/16, minus block 0 */

struct sandbox_net {
	char id[SANDBOX_ID_LEN + 1];          /* random, lower-case hex: names the table, veth, netns */
	unsigned index;                       /* 1..SANDBOX_MAX_INDEX: picks the address blocks */
	char table[32];                       /* nft table name in family inet: "sluice_<id>" */
	char netns[32];                       /* network namespace: "sluice_<id>" */
	char host_if[SANDBOX_IFNAME_MAX];     /* host side of the veth (or the tap): "slh<id>" */
	char sbx_if[SANDBOX_IFNAME_MAX];      /* sandbox side of the veth: "sls<id>" (renamed eth0 inside) */
	char host_v4[16], sbx_v4[16];         /* dotted quads of the /30 */
	char host_v6[48], sbx_v6[48];         /* fd00:5c::.../126 */
	uint16_t transparent_port;            /* the gateway's transparent listener (all sandbox TCP goes there) */
	uint16_t dns_port;                    /* the gateway's DNS responder (sandbox UDP 53 goes there) */
};

/* Fills <id> with SANDBOX_ID_LEN random lower-case hex characters and a NUL. Returns 0 or SLUICE_EIO. */
int sandbox_id_new(char id[SANDBOX_ID_LEN + 1]);

/* 1 when <name> is a usable --name: 1..SANDBOX_NAME_MAX of [A-Za-z0-9_.-], not starting with '.' or '-'. */
int sandbox_name_valid(const char *name);

/*
 * Fills every derived field of <n> from <id> and <index> (names, interfaces,
 * addresses), and the two ports.  Returns 0, or SLUICE_EINVAL for an id that
 * is not SANDBOX_ID_LEN hex characters or an index out of range.
 */
int sandbox_net_plan(struct sandbox_net *n, const char *id, unsigned index, uint16_t transparent_port,
                     uint16_t dns_port);

#endif
