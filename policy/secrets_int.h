/*
 * policy/secrets_int.h - what policy/secrets.c builds while it validates
 * secrets:, sandboxes: and sandbox_env:, and the packer (secrets_pack.c) that
 * appends it to a snapshot.  Private to those two files.
 */
#ifndef SLUICE_POLICY_SECRETS_INT_H
#define SLUICE_POLICY_SECRETS_INT_H
#include "policy_int.h"

struct b_inject {
	enum policy_inject_kind kind;
	char *arg;
};

struct b_secret {
	char *name, *source, *format, *placeholder;
	unsigned ttl_s;
	char **hosts;
	size_t nhosts;
	struct b_inject *inject;
	size_t ninject;
	char **sandboxes;
	size_t nsandboxes;
	const yaml_node_t *ph_node; /* placeholder:, for overlap messages */
};

struct b_sandbox {
	char *name;
	struct netaddr_cidr *addrs;
	size_t naddrs;
	char *user, *password;
};

struct b_env {
	char *var, *secret;
};

/* Everything parsed, on the heap, until packed. */
struct build {
	struct b_secret *sec;
	size_t nsec;
	struct b_sandbox *sb;
	size_t nsb;
	struct b_env *env;
	size_t nenv;
};

/*
 * Appends the packed entries of <b> to the snapshot's allocation (*<pp> may
 * move).  Only valid while nothing points at *<pp>: the snapshot is still
 * private to the loader.
 */
void policy_secrets_attach(const struct build *b, struct policy **pp);

#endif
