/*
 * proxy/dns/dns.c - the DNS responder on libevent's evdns server (see dns.h).
 *
 * evdns reads and parses the datagram and hands us the questions; we decide
 * one answer per query, audit it, then let evdns format and send it.
 * Security: nothing here resolves or forwards; the only answers are
 * synthetic addresses, empty answers and errors, so a sandbox cannot move
 * data out through DNS, and every query it makes is audited (up to the rate
 * bound, which keeps a flood from flooding the audit log too).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/filter.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/util.h>
#include "common/clock.h"
#include "common/host.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/dns/dns.h"
#include "proxy/dns/synth.h"

/* evdns names this EVDNS_FLAGS_RD, but 0x0080 is RA in the header's flag word */
#define DNS_FLAG_RA 0x0080
#define DNS_ANSWER_MAX 64      /* "AAAA " + an IPv6 address */
#define RATE_UNIT 1000         /* tokens are counted in thousandths of a query */
#define RATE_ELAPSED_CAP 100000 /* ms: a bucket is full long before this */
#define DNS_HEADER_LEN 12      /* the fixed DNS message header */
#define UDP_HEADER_LEN 8       /* a UDP socket's filter sees the UDP header too */
#define DRAIN_MAX 4096         /* datagrams queued before the filter, at most */

enum rate_verdict {
	RATE_OK = 0,
	RATE_REFUSE = 1,
	RATE_DROP = 2,
};

struct dns_bucket {
	int used;
	uint8_t key[17];   /* family byte, then the address (IPv4-mapped as IPv4) */
	uint64_t last_ms;  /* last query: refill base and recycling order */
	uint64_t tokens;   /* answers left, in RATE_UNIT */
	uint64_t rtokens;  /* REFUSED answers left beyond the rate, in RATE_UNIT */
};

struct dns_responder {
	struct evdns_server_port *port;
	struct synth *map;
	dns_allow_fn allow;
	dns_audit_fn audit;
	void *arg;
	uint64_t dropped;
	uint64_t queued;             /* replies evdns kept to send later */
	int dead;                    /* freed while evdns may still call us */
	struct dns_bucket *buckets;  /* DNS_RATE_CLIENTS */
	uint64_t (*_now_ms)(void);   /* the clock; tests replace it */
};

int
dns_name_canon(const char *qname, char *out, size_t cap)
{
	char buf[HOST_BUF];
	const char *err = NULL;
	size_t len;

	if (out != NULL && cap > 0)
		out[0] = '\0';
	if (qname == NULL || out == NULL)
		return SLUICE_EINVAL;
	len = strnlen(qname, HOST_MAX + 1);
	if (len == 0 || len > HOST_MAX)
		return SLUICE_EINVAL;
	if (host_canon(qname, len, buf, &err) != HOST_DNS)
		return SLUICE_EINVAL;
	len = strnlen(buf, sizeof(buf));
	if (len > HOST_MAX || len == 0)
		return SLUICE_EINVAL;
	if (len >= cap)
		return SLUICE_ETOOBIG;
	memcpy(out, buf, len + 1);
	return 0;
}

static void
addr_key(const struct sockaddr *sa, uint8_t key[17])
{
	memset(key, 0, 17);
	if (sa->sa_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = 4;
			memcpy(key + 1, a->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a->s6_addr, 16);
		}
	}
	/* any other family shares the all-zero key */
}

static uint64_t
refill(uint64_t have, uint64_t elapsed_ms, uint64_t per_sec, uint64_t cap)
{
	have += elapsed_ms * per_sec; /* per_sec queries/s = per_sec RATE_UNITs per ms */
	return have > cap ? cap : have;
}

static enum rate_verdict
rate_take(struct dns_responder *r, const struct sockaddr *sa)
{
	struct dns_bucket *b = NULL, *victim = NULL;
	uint8_t key[17];
	uint64_t now = r->_now_ms(), elapsed;

	addr_key(sa, key);
	for (size_t i = 0; i < DNS_RATE_CLIENTS; i++) {
		struct dns_bucket *c = &r->buckets[i];

		if (!c->used) {
			if (victim == NULL || victim->used)
				victim = c;
			continue;
		}
		if (memcmp(c->key, key, sizeof(key)) == 0) {
			b = c;
			break;
		}
		if (victim == NULL || (victim->used && c->last_ms < victim->last_ms))
			victim = c;
	}
	if (b == NULL) {
		b = victim;
		b->used = 1;
		memcpy(b->key, key, sizeof(key));
		b->last_ms = now;
		b->tokens = (uint64_t)DNS_RATE_BURST * RATE_UNIT;
		b->rtokens = (uint64_t)DNS_REFUSE_QPS * RATE_UNIT;
	}
	elapsed = now > b->last_ms ? now - b->last_ms : 0;
	if (elapsed > RATE_ELAPSED_CAP)
		elapsed = RATE_ELAPSED_CAP;
	b->last_ms = now > b->last_ms ? now : b->last_ms;
	b->tokens = refill(b->tokens, elapsed, DNS_RATE_QPS, (uint64_t)DNS_RATE_BURST * RATE_UNIT);
	b->rtokens = refill(b->rtokens, elapsed, DNS_REFUSE_QPS, (uint64_t)DNS_REFUSE_QPS * RATE_UNIT);
	if (b->tokens >= RATE_UNIT) {
		b->tokens -= RATE_UNIT;
		return RATE_OK;
	}
	if (b->rtokens >= RATE_UNIT) {
		b->rtokens -= RATE_UNIT;
		return RATE_REFUSE;
	}
	return RATE_DROP;
}

/* Adds the A or AAAA answer for <q>; returns the DNS rcode and fills <answer>. */
static int
answer_address(struct dns_responder *r, struct evdns_server_request *req,
               const struct evdns_server_question *q, const char *canon, char *answer, size_t cap)
{
	char text[INET6_ADDRSTRLEN];
	struct in_addr v4;
	struct in6_addr v6;
	int rc;

	if (synth_lookup_name(r->map, canon, &v4, &v6) != 0)
		goto servfail;
	/* the answer names the question as sent, so that 0x20 case checks match */
	if (q->type == EVDNS_TYPE_A) {
		rc = evdns_server_request_add_a_reply(req, q->name, 1, &v4, DNS_TTL_SEC);
		if (rc == 0 && inet_ntop(AF_INET, &v4, text, sizeof(text)) != NULL) {
			snprintf(answer, cap, "A %s", text);
			return DNS_ERR_NONE;
		}
	} else {
		rc = evdns_server_request_add_aaaa_reply(req, q->name, 1, &v6, DNS_TTL_SEC);
		if (rc == 0 && inet_ntop(AF_INET6, &v6, text, sizeof(text)) != NULL) {
			snprintf(answer, cap, "AAAA %s", text);
			return DNS_ERR_NONE;
		}
	}
	/*
	 * An added answer cannot be taken back; SERVFAIL with it would still
	 * carry it, so only an allocation failure inside evdns (nothing added)
	 * or inet_ntop (cannot fail on these) gets here.
	 */
servfail:
	snprintf(answer, cap, "SERVFAIL");
	return DNS_ERR_SERVERFAILED;
}

/* Decides the answer to <req>: returns the rcode, fills <answer>, <aname>, <qtype>. */
static int
decide(struct dns_responder *r, struct evdns_server_request *req, enum rate_verdict rate,
       char *answer, size_t cap, char *aname, size_t acap, int *qtype)
{
	const struct evdns_server_question *q = NULL;
	char canon[HOST_BUF];
	int valid = 0;

	aname[0] = '\0';
	*qtype = 0;
	if (req->nquestions >= 1 && req->questions[0] != NULL) {
		q = req->questions[0];
		*qtype = q->type;
		if (dns_name_canon(q->name, canon, sizeof(canon)) == 0) {
			valid = 1;
			snprintf(aname, acap, "%s", canon);
		} else {
			log_escape(aname, acap, q->name, strlen(q->name));
		}
	}
	if (rate == RATE_REFUSE) {
		snprintf(answer, cap, "REFUSED");
		return DNS_ERR_REFUSED;
	}
	if (req->nquestions != 1 || q == NULL) {
		snprintf(answer, cap, "FORMERR");
		return DNS_ERR_FORMAT;
	}
	if (!valid || q->dns_question_class != EVDNS_CLASS_INET) {
		snprintf(answer, cap, "REFUSED");
		return DNS_ERR_REFUSED;
	}
	if (r->allow(r->arg, canon) != 1) {
		snprintf(answer, cap, "NXDOMAIN");
		return DNS_ERR_NOTEXIST;
	}
	if (q->type == EVDNS_TYPE_A || q->type == EVDNS_TYPE_AAAA)
		return answer_address(r, req, q, canon, answer, cap);
	snprintf(answer, cap, "NODATA");
	return DNS_ERR_NONE;
}

static void
on_request(struct evdns_server_request *req, void *arg)
{
	struct dns_responder *r = arg;
	struct sockaddr_storage ss;
	const struct sockaddr *client = (const struct sockaddr *)&ss;
	char answer[DNS_ANSWER_MAX], aname[DNS_AUDIT_NAME_MAX];
	enum rate_verdict rate;
	int rcode, qtype, rc;

	memset(&ss, 0, sizeof(ss));
	if (r->dead ||
	    evdns_server_request_get_requesting_addr(req, (struct sockaddr *)&ss, (int)sizeof(ss)) < 0) {
		evdns_server_request_drop(req);
		return;
	}
	rate = rate_take(r, client);
	if (rate == RATE_DROP) {
		r->dropped++;
		evdns_server_request_drop(req);
		return;
	}
	rcode = decide(r, req, rate, answer, sizeof(answer), aname, sizeof(aname), &qtype);
	/* audited before the answer leaves: no answer without its record */
	if (r->audit != NULL)
		r->audit(r->arg, client, aname, qtype, answer);
	evdns_server_request_set_flags(req, EVDNS_FLAGS_AA | DNS_FLAG_RA);
	rc = evdns_server_request_respond(req, rcode);
	if (rc < 0) {
		/*
		 * libevent 2.1 leaves <req> allocated when formatting fails or
		 * sendto says EAGAIN: it is ours to free.
		 */
		evdns_server_request_drop(req);
	} else if (rc == 1) {
		r->queued++; /* evdns keeps it and sends it when writable */
	}
}

/*
 * libevent 2.1.12's evdns server dereferences NULL on any datagram shorter
 * than a DNS header (libevent issue #1231): one 11-byte packet from a sandbox
 * would kill the gateway.  A socket filter makes the kernel drop those before
 * evdns can read them; datagrams queued before the filter was attached are
 * discarded unread.  Without the filter we do not serve (fail closed).
 */
static int
guard_socket(evutil_socket_t fd)
{
	static struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, UDP_HEADER_LEN + DNS_HEADER_LEN, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
	char scratch[1];
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) == -1) {
		log_warn("dns: cannot attach the short-datagram filter");
		return SLUICE_EIO;
	}
	/* nothing in this process may take it off again */
	(void)setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one));
	for (int i = 0; i < DRAIN_MAX; i++)
		if (recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT | MSG_TRUNC) == -1 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;  /* (any other error was a pending ICMP one: go on) */
	log_warnx("dns: more than %d datagrams queued before start", DRAIN_MAX);
	return SLUICE_EIO;
}

struct dns_responder *
dns_responder_new(struct event_base *base, evutil_socket_t udp_fd, struct synth *map,
                  dns_allow_fn allow, dns_audit_fn audit, void *arg)
{
	struct dns_responder *r;

	if (base == NULL || udp_fd < 0 || map == NULL || allow == NULL)
		return NULL;
	if (evutil_make_socket_nonblocking(udp_fd) == -1 || guard_socket(udp_fd) != 0)
		return NULL;
	r = xcalloc(1, sizeof(*r));
	r->buckets = xcalloc(DNS_RATE_CLIENTS, sizeof(*r->buckets));
	r->map = map;
	r->allow = allow;
	r->audit = audit;
	r->arg = arg;
	r->_now_ms = clock_mono_ms;
	r->port = evdns_add_server_port_with_base(base, udp_fd, 0, on_request, r);
	if (r->port == NULL) {
		free(r->buckets);
		free(r);
		return NULL;
	}
	return r;
}

void
dns_responder_free(struct dns_responder *r)
{
	if (r == NULL)
		return;
	evdns_close_server_port(r->port);
	r->port = NULL;
	free(r->buckets);
	r->buckets = NULL;
	if (r->queued > 0) {
		/*
		 * A reply evdns queued keeps its port alive, reading included,
		 * and the port still points at <r>: leave a dead husk for it
		 * rather than a dangling pointer.  Rare (sendto failed with
		 * something other than EAGAIN), and a few bytes.
		 */
		r->dead = 1;
		return;
	}
	free(r);
}

uint64_t
dns_responder_dropped(const struct dns_responder *r)
{
	return r != NULL ? r->dropped : 0;
}
