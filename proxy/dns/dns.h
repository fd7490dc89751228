/*
 * proxy/dns/dns.h - the gateway's DNS responder (libevent's evdns server, UDP).
 *
 * The launcher points the sandbox's resolver here (nftables redirects its UDP
 * 53).  The responder answers only names that policy could allow, with
 * synthetic addresses from proxy/dns/synth.h, and audits every query.  It never
 * resolves, forwards or caches anything: no query of a sandbox's leaves the
 * gateway, so DNS is no tunnel out.
 *
 * Per question, in this order:
 *  1. rate bound per client address (IP, not port): a token bucket of
 *     DNS_RATE_QPS queries/s with a burst of DNS_RATE_BURST.  Beyond it the
 *     query gets REFUSED (audited), itself bounded by DNS_REFUSE_QPS per
 *     client; beyond that the query is dropped without answer or audit and
 *     only counted (dns_responder_dropped()), so a flood cannot flood the
 *     audit log.  DNS_RATE_CLIENTS buckets are kept; the least recently seen
 *     client's bucket is recycled (which only ever gives a client a fresh
 *     bucket, never takes one away).
 *  2. exactly one question, else FORMERR (RFC 9619), audited with the first
 *     question (a query with none never reaches us: see below).
 *  3. the name is canonicalised by dns_name_canon(): lower case, no trailing
 *     dot, host_canon()'s DNS syntax, at most HOST_MAX (253) bytes, and not an
 *     IP literal.  Anything else gets REFUSED (not NXDOMAIN: it is no name any
 *     policy could hold, and REFUSED tells an auditor a malformed query, the
 *     mark of a tunnel attempt, from a merely unknown name).
 *  4. class IN only; any other class (CHAOS "version.bind" ...) gets REFUSED.
 *  5. allow(arg, canon) == 0: NXDOMAIN.
 *  6. type A: the name's synthetic IPv4 address, TTL DNS_TTL_SEC; AAAA: the
 *     synthetic IPv6 address; any other type (MX, TXT, ANY, ...): NODATA
 *     (NOERROR and no answer).  If the synthetic map is full of fresh
 *     entries (synth.h), A/AAAA get SERVFAIL.
 * Answers carry AA and RA, echo the question as sent (case included), have
 * no authority section (so no negative caching) and no EDNS.
 *
 * evdns's own limits, which come before ours (libevent 2.1.12): a datagram
 * is read into 1500 bytes; a name is flattened into 255 bytes of text with
 * '.' between labels, so a label holding '.' or NUL cannot be told from
 * other names (a NUL cuts the name short; such names are judged as the text
 * evdns gives us, which is harmless since we never forward them); a query
 * whose name does not parse (compression loops included), a response (QR
 * set), a truncated datagram, or one with zero questions is dropped silently
 * before we see it, so it is not audited; the opcode is masked away before we
 * see it, so any opcode is judged (and answered) as QUERY; answers over 512
 * bytes are cut with TC set (ours never are).  Only RD and CD of the query
 * are echoed.
 *
 * Threading: everything here, including both callbacks, runs on the thread
 * of the event loop <base> given to dns_responder_new(); the synthetic map is
 * the only state shared with other threads (it has its own lock).
 */
#ifndef SLUICE_PROXY_DNS_H
#define SLUICE_PROXY_DNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <event2/event.h>
#include "proxy/dns/synth.h"

#define DNS_TTL_SEC 5            /* TTL of every A/AAAA answer */
#define DNS_RATE_QPS 200         /* answered queries per second per client address */
#define DNS_RATE_BURST 200       /* bucket size: queries a quiet client may send at once */
#define DNS_REFUSE_QPS 20        /* REFUSED answers per second per client beyond the rate */
#define DNS_RATE_CLIENTS 256     /* client addresses with a bucket at once */
#define DNS_AUDIT_NAME_MAX 1024  /* escaped raw name handed to the audit callback */

/*
 * Returns 1 if the policy could allow <canon_name> (a host entry, exact or
 * wildcard, that is not denied), else 0.  Called on the loop thread, once per
 * query that reaches step 5; must not block, must not free the responder.
 */
typedef int (*dns_allow_fn)(void *arg, const char *canon_name);

/*
 * Called once for every query that gets an answer (all but the dropped ones
 * described above), after the answer is decided, on the loop thread.
 * <client>: the querying address and port (valid during the call only).
 * <name>: the canonical name, or for a name that failed step 3 the raw text
 * evdns gave, escaped with log_escape() (printable ASCII; '\' and '"' as
 * \xHH), at most DNS_AUDIT_NAME_MAX bytes ("" for the root name).
 * <qtype>: the (first) question's type (1 A, 28 AAAA, ...).
 * <answer>: "A 198.18.0.7", "AAAA fd00:5c:5e::7", "NODATA", "NXDOMAIN",
 * "REFUSED", "FORMERR" or "SERVFAIL".
 * All pointers are borrowed for the call.  Must not block (queue the record),
 * must not free the responder.  NULL: no audit.
 */
typedef void (*dns_audit_fn)(void *arg, const struct sockaddr *client, const char *name,
                             int qtype, const char *answer);

struct dns_responder;

/*
 * Starts answering on the bound UDP socket <udp_fd> (AF_INET or AF_INET6),
 * on the event loop <base>, with the synthetic map <map> (borrowed: must
 * outlive the responder; may be shared with other threads) and the callbacks
 * <allow> (required) and <audit> (optional), both given <arg>.
 * <udp_fd> is made non-blocking, and gets a locked socket filter that drops
 * datagrams shorter than a DNS header: libevent 2.1.12 (Debian 12) crashes
 * on those (libevent issue #1231), so without the filter there is no
 * responder.  Datagrams already queued on <udp_fd> are discarded unread.
 * <udp_fd> is taken on success: evdns closes it when the responder is freed.
 * On failure (NULL: a NULL argument, the filter could not be attached, or
 * libevent refused) the caller still owns <udp_fd>.
 */
struct dns_responder *dns_responder_new(struct event_base *base, evutil_socket_t udp_fd,
                                        struct synth *map, dns_allow_fn allow,
                                        dns_audit_fn audit, void *arg);

/*
 * Stops answering and frees <r> (NULL is fine).  Call on the loop thread, not
 * from inside a callback.  No callback runs after it returns.  (If evdns
 * still holds a reply it could not send, its port lives until that reply
 * goes, and a small husk of <r> is kept, on purpose, for evdns to find.)
 */
void dns_responder_free(struct dns_responder *r);

/* Queries dropped unanswered and unaudited by the rate bound so far. */
uint64_t dns_responder_dropped(const struct dns_responder *r);

/*
 * Canonicalises the query name <qname> (NUL-terminated, as evdns gives it)
 * into <out> (<cap> bytes, HOST_BUF is enough): 0 and the canonical DNS name,
 * or SLUICE_EINVAL if it is empty, longer than HOST_MAX, not valid host
 * syntax, or an IP literal ("127.1", "1.2.3.4"), or SLUICE_ETOOBIG if <cap> is
 * too small.  <out> is "" on failure.  Pure; exposed for the fuzzer.
 */
int dns_name_canon(const char *qname, char *out, size_t cap);

/* gwdns.c: the responder wired into the gateway (its socket, its policy, its audit). */
struct gateway;
/* The DNS responder's socket, bound before the privilege drop (gwdns.c): 0, or -1 with *<err>. */
int gwdns_bind(struct gateway *gw, const char *spec, const char **err);
/* Starts / stops answering on the main thread's base. */
void gwdns_start(struct gateway *gw);
void gwdns_stop(struct gateway *gw);
/*
 * A transparent connection to <dest> (its original destination, NULL if
 * none), a synthetic address of <synth>: the name it stands for
 * must be <host> (have_name: from SNI or Host), or becomes <host> (no name
 * given).  0, or -1 with *<reason> (the connection is refused).
 */
int gwdns_check(struct synth *synth, const struct sockaddr *dest, char *host, size_t cap, int have_name,
                const char **reason);

#endif
