/*
 * proxy/dns/synth.h - the synthetic address map: names <-> addresses that stand
 * for them.
 *
 * The DNS responder (proxy/dns/dns.h) answers a sandbox's A/AAAA query with a
 * synthetic address; when the sandbox then connects to that address, the
 * gateway maps it back to the name.  So the gateway knows the name of every
 * connection even without SNI, resolves nothing while answering DNS, and a
 * policy host that really lives on loopback or a private address still works
 * from inside the sandbox.
 *
 * The ranges:
 *  - IPv4 198.18.0.0/15 (RFC 2544 benchmarking range, never routed);
 *  - IPv6 fd00:5c:5e::/96 (inside our test /48, not the sandbox /64s).
 * Slot <i> (1 <= i <= bound) is 198.18.0.0 + i and fd00:5c:5e::<i>; a name
 * owns one slot, so its v4 and v6 addresses always come together.
 *
 * One map serves the whole gateway: a name gets the same address in every
 * sandbox, and keeps it while the gateway runs, unless the map fills up.
 * The map is bounded (SYNTH_MAX names).  When it is full, a new name takes
 * the slot of the least recently used entry (used = answered by
 * synth_lookup_name or looked up by synth_lookup_addr), so an address can
 * come to stand for another name.  It does so only if that entry is older
 * than SYNTH_REUSE_MIN_AGE_SEC (far above the DNS TTL): a fresher one is never
 * taken, and the new name is refused instead (SLUICE_ETOOBIG; the responder
 * answers SERVFAIL).  So flooding the map with names can make new names fail
 * for a while, but cannot make an address a sandbox was just given stand for
 * a name of the attacker's choosing.  A connection whose SNI or Host differs
 * from the name its address stands for is refused by the gateway anyway.
 *
 * Thread-safe: every function may be called from any thread (one mutex).
 */
#ifndef SLUICE_PROXY_SYNTH_H
#define SLUICE_PROXY_SYNTH_H

#include <stddef.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define SYNTH_MAX 65536               /* names held at once (slots) */
#define SYNTH_REUSE_MIN_AGE_SEC 60    /* an entry younger than this is never reused */
#define SYNTH_V4_NET 0xc6120000u      /* 198.18.0.0, host order */
#define SYNTH_V4_PREFIX 15
#define SYNTH_V6_PREFIX 96            /* fd00:5c:5e::/96 */

struct synth;

/*
 * Returns a new empty map of SYNTH_MAX slots with the SYNTH_REUSE_MIN_AGE_SEC
 * guard.  Aborts on OOM (one fixed-size allocation).  Free with synth_free().
 */
struct synth *synth_new(void);

/*
 * As synth_new(), with <max> slots (1 .. SYNTH_MAX) and entries reusable once
 * <reuse_min_sec> seconds old (0: any entry, as soon as the map is full).
 * For tests.  Returns NULL if <max> is out of range.
 */
struct synth *synth_new_bounded(size_t max, unsigned reuse_min_sec);

/* Frees <map> and every name in it (NULL is fine). */
void synth_free(struct synth *map);

/*
 * The addresses of <canon_name> (NUL-terminated, canonical per
 * host_is_canonical(), at most HOST_MAX bytes), assigning a slot when the name
 * is new.  Marks the entry used.  Fills <v4> and <v6> (either may be NULL).
 * Returns 0, SLUICE_EINVAL if the name is not canonical, or SLUICE_ETOOBIG if
 * the map is full and no entry is old enough to be reused.
 */
int synth_lookup_name(struct synth *map, const char *canon_name, struct in_addr *v4,
                      struct in6_addr *v6);

/*
 * The name that the synthetic address <sa> (AF_INET, AF_INET6, or IPv4-mapped
 * IPv6, which counts as IPv4; the port is ignored) stands for, copied
 * NUL-terminated into <name> (<cap> bytes; HOST_BUF is always enough).
 * Marks the entry used.
 * Returns 0; SLUICE_ENOENT when <sa> is in a synthetic range but no name holds
 * it (never assigned, or outside the bound); SLUICE_EINVAL when <sa> is not in
 * a synthetic range at all (or is not AF_INET/AF_INET6); SLUICE_ETOOBIG when
 * <cap> is too small (<name> is then set to "").
 */
int synth_lookup_addr(struct synth *map, const struct sockaddr *sa, char *name, size_t cap);

/* 1 if <sa> is inside 198.18.0.0/15, fd00:5c:5e::/96 or ::ffff:198.18.0.0/111, else 0. */
int synth_is_synthetic(const struct sockaddr *sa);

#endif
