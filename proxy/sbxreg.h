/*
 * proxy/sbxreg.h - sandboxes registered at run time (by `sluice run`, over
 * the admin socket), next to the static `sandboxes:` of the policy.
 *
 * A registered sandbox is a known client: the connections from its
 * addresses carry its name (audit `sandbox`, and secrets' `sandboxes:`
 * lists), and it may use only the secrets it was registered with (when it
 * named any).  A connection holds a reference to its entry (sbxreg_by_addr
 * takes it, sbxreg_release gives it back), so its name stays valid for the
 * connection's life: a removed entry's slot is reused only once no
 * connection refers to it.
 * Registrations are bounded (SBXREG_MAX); lookups take one short lock per
 * connection, never per request.
 *
 * Each registration has an id, unique for the gateway's life (a name or an
 * address registered again is a new id): a connection remembers the id it
 * was judged under, and sbxreg_entry_current() tells it, lock-free, whether
 * that registration still stands (revocation: proxy/cred/revoke.c).
 */
#ifndef SLUICE_PROXY_SBXREG_H
#define SLUICE_PROXY_SBXREG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include "common/netaddr.h"

#define SBXREG_MAX 1024         /* sandboxes registered at once, and slots ever made */
#define SBXREG_ADDRS_MAX 8      /* addresses of one sandbox */
#define SBXREG_SECRETS_MAX 64   /* secrets one sandbox names */
#define SBXREG_NAME_MAX 32      /* [A-Za-z0-9_.-], not starting with '.' or '-' */
#define SBXREG_BODY_MAX 16384   /* a registration's JSON */

struct sbx_entry {
	char name[SBXREG_NAME_MAX + 1];
	char backend[16];
	struct netaddr_cidr addrs[SBXREG_ADDRS_MAX];
	size_t naddrs;
	char *secrets[SBXREG_SECRETS_MAX];  /* names; nsecrets 0: every secret the policy lets it use */
	size_t nsecrets;
	time_t started;
	uint64_t id;                         /* this registration's id (never reused) */
	atomic_int active;                   /* cleared by sbxreg_remove: read by workers without the lock */
	atomic_uint refs;                    /* connections that point at this entry */
	atomic_ulong requests;               /* audited requests from it */
	atomic_ulong denied;                 /* ... of which refused */
};

struct sbxreg;

struct sbxreg *sbxreg_new(void);
void sbxreg_free(struct sbxreg *r);

/*
 * Registers from a JSON body {"name":..., "backend":..., "addresses":[CIDR...],
 * "secrets":[name...]}.  Returns 0; SLUICE_EINVAL (bad JSON or field, reason in
 * <err>); SLUICE_EEXIST (the name is registered, or an address overlaps a
 * registered sandbox's); SLUICE_ETOOBIG (SBXREG_MAX reached).  <name> gets
 * the sandbox's name on success.
 */
int sbxreg_add(struct sbxreg *r, const char *body, size_t len, char name[SBXREG_NAME_MAX + 1], char *err,
               size_t errcap);

/* Removes sandbox <name>: 0, or SLUICE_ENOENT. */
int sbxreg_remove(struct sbxreg *r, const char *name);

/* The registered sandbox whose addresses hold <sa>, with a reference for the caller, or NULL. */
struct sbx_entry *sbxreg_by_addr(struct sbxreg *r, const struct sockaddr *sa);

/* 1 when <e> is still the registration <id> (not removed); any thread, no lock. */
int sbxreg_entry_current(const struct sbx_entry *e, uint64_t id);

/* Gives back the reference sbxreg_by_addr took (NULL: nothing). */
void sbxreg_release(struct sbx_entry *e);

/* 1 if <e> may use the secret named <secret> (no list: every secret). */
int sbxreg_secret_allowed(const struct sbx_entry *e, const char *secret);

/* Appends the registered sandboxes as a JSON array to <out>. */
void sbxreg_list_json(struct sbxreg *r, struct evbuffer *out);

#endif
