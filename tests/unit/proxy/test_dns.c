/*
 * test_dns.c - the DNS responder (proxy/dns/dns.c) on a real evdns port.
 *
 * A responder listens on 127.0.0.1 (random port) in the test's own event
 * loop; the test writes each query's bytes itself, sends it over UDP, pumps
 * the loop, and parses the answer itself.  Checked: A/AAAA of an allowed
 * name give the map's addresses, other types NODATA, unknown names
 * NXDOMAIN, malformed names and other classes REFUSED, two or more
 * questions FORMERR, what evdns drops before us, the audit callback's every call, and the rate bound
 * (answers, then REFUSED, then silence), on a clock the test controls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include "proxy/dns/dns.c"
#include "proxy/dns/synth.c"

#define T_A 1
#define T_MX 15
#define T_TXT 16
#define T_AAAA 28
#define C_IN 1
#define C_CH 3
#define MAX_AUDIT 1000
#define PKT_MAX 1500

struct audit_rec {
	int family;
	char name[DNS_AUDIT_NAME_MAX];
	int qtype;
	char answer[DNS_ANSWER_MAX];
};

struct fx {
	struct event_base *base;
	struct synth *map;
	struct dns_responder *r;
	int cli;
	int nallow;  /* calls of the allow callback */
	size_t naudit;
	struct audit_rec audit[MAX_AUDIT];
};

static uint64_t fake_ms;

static uint64_t
fake_now(void)
{
	return fake_ms;
}

static int
allow(void *arg, const char *name)
{
	struct fx *fx = arg;
	size_t n = strlen(name);

	fx->nallow++;
	if (strcmp(name, "allowed.example") == 0)
		return 1;
	/* "*.wild.example" */
	return n > 13 && strcmp(name + n - 13, ".wild.example") == 0;
}

static void
audit(void *arg, const struct sockaddr *client, const char *name, int qtype, const char *answer)
{
	struct fx *fx = arg;
	struct audit_rec *a;

	assert_true(fx->naudit < MAX_AUDIT);
	a = &fx->audit[fx->naudit++];
	a->family = client->sa_family;
	assert_true(strlen(name) < sizeof(a->name));
	assert_true(strlen(answer) < sizeof(a->answer));
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->qtype = qtype;
	snprintf(a->answer, sizeof(a->answer), "%s", answer);
}

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int srv;

	assert_non_null(fx);
	fx->base = event_base_new();
	assert_non_null(fx->base);
	fx->map = synth_new();
	srv = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(srv >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(srv, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(srv, (struct sockaddr *)&sin, &len), 0);
	fx->r = dns_responder_new(fx->base, srv, fx->map, allow, audit, fx);
	assert_non_null(fx->r);
	fake_ms = 1000000;
	fx->r->_now_ms = fake_now;
	fx->cli = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fx->cli >= 0);
	assert_int_equal(connect(fx->cli, (struct sockaddr *)&sin, sizeof(sin)), 0);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	dns_responder_free(fx->r); /* closes the server socket */
	close(fx->cli);
	synth_free(fx->map);
	event_base_free(fx->base);
	free(fx);
	return 0;
}

/* Appends <dotted> as wire labels (no compression) at <p>; returns the new end. */
static uint8_t *
put_name(uint8_t *p, const char *dotted)
{
	const char *s = dotted;

	while (*s != '\0') {
		const char *dot = strchr(s, '.');
		size_t n = dot != NULL ? (size_t)(dot - s) : strlen(s);

		assert_true(n >= 1 && n <= 63);
		*p++ = (uint8_t)n;
		memcpy(p, s, n);
		p += n;
		s += n;
		if (*s == '.')
			s++;
	}
	*p++ = 0;
	return p;
}

static uint8_t *
put16(uint8_t *p, unsigned v)
{
	*p++ = (uint8_t)(v >> 8);
	*p++ = (uint8_t)v;
	return p;
}

/* A query with <n> questions, all for <name>/<qtype>/<qclass>. */
static size_t
build(uint8_t *buf, uint16_t id, unsigned flags, int n, const char *name, unsigned qtype,
      unsigned qclass)
{
	uint8_t *p = buf;

	p = put16(p, id);
	p = put16(p, flags);
	p = put16(p, (unsigned)n);
	p = put16(p, 0);
	p = put16(p, 0);
	p = put16(p, 0);
	for (int i = 0; i < n; i++) {
		p = put_name(p, name);
		p = put16(p, qtype);
		p = put16(p, qclass);
	}
	return (size_t)(p - buf);
}

/* Sends <q>, pumps the loop up to <wait_ms>; returns the reply's length or -1 if none came. */
static ssize_t
exchange(struct fx *fx, const uint8_t *q, size_t qlen, uint8_t *resp, size_t cap, int wait_ms)
{
	struct pollfd pfd = {.fd = fx->cli, .events = POLLIN};

	assert_int_equal(send(fx->cli, q, qlen, 0), (ssize_t)qlen);
	for (int i = 0; i < wait_ms; i++) {
		event_base_loop(fx->base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 1) == 1) {
			ssize_t n = recv(fx->cli, resp, cap, 0);

			assert_true(n >= 12);
			return n;
		}
	}
	return -1;
}

struct reply {
	uint16_t id, flags, qd, an, ns, ar;
	int rcode;
	char qname[256];   /* the first question's name as echoed */
	uint16_t atype, aclass;
	uint32_t ttl;
	uint16_t rdlen;
	uint8_t rdata[16];
};

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Skips a name at <off>, copying its labels dotted into <out> when not NULL. */
static size_t
skip_name(const uint8_t *pkt, size_t len, size_t off, char *out, size_t cap)
{
	size_t o = 0;

	for (;;) {
		assert_true(off < len);
		uint8_t l = pkt[off];

		if (l == 0)
			return off + 1;
		if ((l & 0xc0) == 0xc0) {
			assert_true(off + 2 <= len);
			return off + 2;
		}
		assert_true(off + 1 + l <= len);
		if (out != NULL) {
			assert_true(o + l + 2 <= cap);
			if (o > 0)
				out[o++] = '.';
			memcpy(out + o, pkt + off + 1, l);
			o += l;
			out[o] = '\0';
		}
		off += 1 + (size_t)l;
	}
}

static void
parse(const uint8_t *pkt, size_t len, struct reply *r)
{
	size_t off = 12;

	memset(r, 0, sizeof(*r));
	assert_true(len >= 12);
	r->id = get16(pkt);
	r->flags = get16(pkt + 2);
	r->qd = get16(pkt + 4);
	r->an = get16(pkt + 6);
	r->ns = get16(pkt + 8);
	r->ar = get16(pkt + 10);
	r->rcode = r->flags & 0xf;
	for (unsigned i = 0; i < r->qd; i++) {
		off = skip_name(pkt, len, off, i == 0 ? r->qname : NULL, sizeof(r->qname));
		off += 4;
		assert_true(off <= len);
	}
	if (r->an > 0) {
		/* the answer's name is a pointer to the question's (offset 12) */
		assert_true(off + 2 <= len);
		assert_int_equal(get16(pkt + off), 0xc00c);
		off += 2;
		assert_true(off + 10 <= len);
		r->atype = get16(pkt + off);
		r->aclass = get16(pkt + off + 2);
		r->ttl = (uint32_t)get16(pkt + off + 4) << 16 | get16(pkt + off + 6);
		r->rdlen = get16(pkt + off + 8);
		off += 10;
		assert_true(r->rdlen <= sizeof(r->rdata));
		assert_true(off + r->rdlen <= len);
		memcpy(r->rdata, pkt + off, r->rdlen);
		off += r->rdlen;
	}
	assert_int_equal(off, len); /* nothing else: no authority, no additional */
}

/* One query, one reply, parsed; fails if no reply comes. */
static void
ask(struct fx *fx, uint16_t id, int nq, const char *name, unsigned qtype, unsigned qclass,
    struct reply *r)
{
	uint8_t q[PKT_MAX], resp[PKT_MAX];
	size_t qlen = build(q, id, 0x0100, nq, name, qtype, qclass);
	ssize_t n = exchange(fx, q, qlen, resp, sizeof(resp), 2000);

	assert_true(n > 0);
	parse(resp, (size_t)n, r);
	assert_int_equal(r->id, id);
	assert_int_equal(r->flags & 0x8000, 0x8000);          /* QR */
	assert_int_equal(r->flags & 0x7800, 0);               /* opcode QUERY */
	assert_int_equal(r->flags & 0x0400, 0x0400);          /* AA */
	assert_int_equal(r->flags & 0x0200, 0);               /* not TC */
	assert_int_equal(r->flags & 0x0100, 0x0100);          /* RD echoed */
	assert_int_equal(r->flags & 0x0080, 0x0080);          /* RA */
	assert_int_equal(r->qd, (unsigned)nq);
	assert_int_equal(r->ns, 0);
	assert_int_equal(r->ar, 0);
}

static void
expect_audit(struct fx *fx, size_t i, const char *name, int qtype, const char *answer)
{
	assert_true(i < fx->naudit);
	assert_int_equal(fx->audit[i].family, AF_INET);
	assert_string_equal(fx->audit[i].name, name);
	assert_int_equal(fx->audit[i].qtype, qtype);
	assert_string_equal(fx->audit[i].answer, answer);
}

static void
test_a_and_aaaa(void **state)
{
	struct fx *fx = *state;
	struct reply r;
	struct in_addr v4;
	struct in6_addr v6;

	ask(fx, 0x1234, 1, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_string_equal(r.qname, "allowed.example");
	assert_int_equal(r.an, 1);
	assert_int_equal(r.atype, T_A);
	assert_int_equal(r.aclass, C_IN);
	assert_int_equal(r.ttl, DNS_TTL_SEC);
	assert_int_equal(r.rdlen, 4);
	assert_int_equal(synth_lookup_name(fx->map, "allowed.example", &v4, &v6), 0);
	assert_memory_equal(r.rdata, &v4, 4);
	assert_memory_equal(r.rdata, "\xc6\x12\x00\x01", 4); /* 198.18.0.1 */

	/* case is echoed as sent; the same name gets the same slot */
	ask(fx, 0x1235, 1, "AlLoWeD.ExAmPlE", T_AAAA, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_string_equal(r.qname, "AlLoWeD.ExAmPlE");
	assert_int_equal(r.an, 1);
	assert_int_equal(r.atype, T_AAAA);
	assert_int_equal(r.ttl, DNS_TTL_SEC);
	assert_int_equal(r.rdlen, 16);
	assert_memory_equal(r.rdata, &v6, 16);
	assert_memory_equal(r.rdata, "\xfd\x00\x00\x5c\x00\x5e\0\0\0\0\0\0\0\0\0\x01", 16);

	/* a wildcard name gets the next slot */
	ask(fx, 0x1236, 1, "api.wild.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 1);
	assert_memory_equal(r.rdata, "\xc6\x12\x00\x02", 4);

	assert_int_equal(fx->naudit, 3);
	expect_audit(fx, 0, "allowed.example", T_A, "A 198.18.0.1");
	expect_audit(fx, 1, "allowed.example", T_AAAA, "AAAA fd00:5c:5e::1");
	expect_audit(fx, 2, "api.wild.example", T_A, "A 198.18.0.2");
}

static void
test_other_types_nodata(void **state)
{
	struct fx *fx = *state;
	struct reply r;
	char name[HOST_BUF];
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	ask(fx, 7, 1, "allowed.example", T_MX, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 0);
	ask(fx, 8, 1, "allowed.example", T_TXT, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 0);
	ask(fx, 9, 1, "allowed.example", 255, C_IN, &r); /* ANY */
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 0);
	assert_int_equal(fx->naudit, 3);
	expect_audit(fx, 0, "allowed.example", T_MX, "NODATA");
	expect_audit(fx, 1, "allowed.example", T_TXT, "NODATA");
	expect_audit(fx, 2, "allowed.example", 255, "NODATA");
	/* NODATA assigns no address */
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(SYNTH_V4_NET + 1);
	assert_int_equal(synth_lookup_addr(fx->map, (struct sockaddr *)&sin, name, sizeof(name)),
	                 SLUICE_ENOENT);
}

static void
test_denied_nxdomain(void **state)
{
	struct fx *fx = *state;
	struct reply r;

	ask(fx, 21, 1, "exfil.attacker.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 3);
	assert_int_equal(r.an, 0);
	ask(fx, 22, 1, "wild.example", T_AAAA, C_IN, &r); /* the wildcard's apex is not under it */
	assert_int_equal(r.rcode, 3);
	ask(fx, 23, 1, "allowed.example.evil", T_TXT, C_IN, &r);
	assert_int_equal(r.rcode, 3);
	assert_int_equal(fx->naudit, 3);
	expect_audit(fx, 0, "exfil.attacker.example", T_A, "NXDOMAIN");
	expect_audit(fx, 1, "wild.example", T_AAAA, "NXDOMAIN");
	expect_audit(fx, 2, "allowed.example.evil", T_TXT, "NXDOMAIN");
	assert_int_equal(fx->nallow, 3);
}

static void
test_invalid_names_refused(void **state)
{
	struct fx *fx = *state;
	struct reply r;
	char name[300];
	uint8_t q[PKT_MAX], resp[PKT_MAX];
	size_t qlen;
	ssize_t n;

	ask(fx, 31, 1, "bad!name.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 5);
	assert_int_equal(r.an, 0);
	ask(fx, 32, 1, "q\"uote\\.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 5);
	ask(fx, 33, 1, "1.2.3.4", T_A, C_IN, &r);   /* an IP literal is no name */
	assert_int_equal(r.rcode, 5);
	ask(fx, 34, 1, "-lead.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 5);
	/* the root name (zero labels) */
	qlen = build(q, 35, 0x0100, 1, "", T_A, C_IN);
	n = exchange(fx, q, qlen, resp, sizeof(resp), 2000);
	assert_true(n > 0);
	parse(resp, (size_t)n, &r);
	assert_int_equal(r.rcode, 5);

	/* 253 bytes is a name (unknown here), 255 is refused */
	memset(name, 'a', sizeof(name));
	name[63] = name[127] = name[191] = '.';
	name[253] = '\0';
	ask(fx, 36, 1, name, T_A, C_IN, &r);
	assert_int_equal(r.rcode, 3);
	name[253] = 'a';
	name[254] = 'a';
	name[255] = '\0';
	ask(fx, 37, 1, name, T_A, C_IN, &r);
	assert_int_equal(r.rcode, 5);

	/* a label holding '.' is flattened by evdns into the text "a.b.example" */
	qlen = 12;
	memcpy(q, "\x00\x26\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
	memcpy(q + qlen, "\x03\x61\x2e\x62\x07\x65xample\x00\x00\x01\x00\x01", 17);
	qlen += 17;
	n = exchange(fx, q, qlen, resp, sizeof(resp), 2000);
	assert_true(n > 0);
	parse(resp, (size_t)n, &r);
	assert_int_equal(r.rcode, 3);

	assert_int_equal(fx->naudit, 8);
	expect_audit(fx, 0, "bad!name.example", T_A, "REFUSED");
	expect_audit(fx, 1, "q\\x22uote\\x5c.example", T_A, "REFUSED");
	expect_audit(fx, 2, "1.2.3.4", T_A, "REFUSED");
	expect_audit(fx, 3, "-lead.example", T_A, "REFUSED");
	expect_audit(fx, 4, "", T_A, "REFUSED");
	name[253] = '\0';
	expect_audit(fx, 5, name, T_A, "NXDOMAIN");
	name[253] = 'a';
	expect_audit(fx, 6, name, T_A, "REFUSED");
	expect_audit(fx, 7, "a.b.example", T_A, "NXDOMAIN");
	/* refused names never reach the policy */
	assert_int_equal(fx->nallow, 2);
}

static void
test_class_and_question_count(void **state)
{
	struct fx *fx = *state;
	struct reply r;

	ask(fx, 41, 1, "allowed.example", T_TXT, C_CH, &r);  /* version.bind-style */
	assert_int_equal(r.rcode, 5);
	ask(fx, 42, 2, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 1);
	assert_int_equal(r.an, 0);
	ask(fx, 43, 3, "bad!.example", T_AAAA, C_IN, &r);
	assert_int_equal(r.rcode, 1);
	assert_int_equal(fx->naudit, 3);
	expect_audit(fx, 0, "allowed.example", T_TXT, "REFUSED");
	expect_audit(fx, 1, "allowed.example", T_A, "FORMERR");
	expect_audit(fx, 2, "bad!.example", T_AAAA, "FORMERR");
	assert_int_equal(fx->nallow, 0);
	/* no address was assigned by any of these */
	assert_int_equal(synth_lookup_name(fx->map, "zz.example", NULL, NULL), 0);
	{
		char name[HOST_BUF];
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(SYNTH_V4_NET + 1)};

		assert_int_equal(synth_lookup_addr(fx->map, (struct sockaddr *)&sin, name, sizeof(name)), 0);
		assert_string_equal(name, "zz.example");
	}
}

static void
test_evdns_drops_and_notimpl(void **state)
{
	struct fx *fx = *state;
	uint8_t q[PKT_MAX], resp[PKT_MAX];
	size_t qlen;
	ssize_t n;
	struct reply r;

	/* a response (QR set) is dropped by evdns: no answer, no audit */
	qlen = build(q, 51, 0x8100, 1, "allowed.example", T_A, C_IN);
	assert_int_equal(exchange(fx, q, qlen, resp, sizeof(resp), 100), -1);
	/* a truncated question, and a compression loop: dropped */
	qlen = build(q, 52, 0x0100, 1, "allowed.example", T_A, C_IN);
	assert_int_equal(exchange(fx, q, qlen - 3, resp, sizeof(resp), 100), -1);
	memcpy(q, "\x00\x35\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01", 18);
	assert_int_equal(exchange(fx, q, 18, resp, sizeof(resp), 100), -1);
	/* zero questions: libevent 2.1.12's calloc(0) fails, so it drops these too */
	qlen = build(q, 53, 0x0100, 0, "", T_A, C_IN);
	assert_int_equal(exchange(fx, q, qlen, resp, sizeof(resp), 100), -1);
	assert_int_equal(fx->naudit, 0);
	assert_int_equal(fx->nallow, 0);
	/*
	 * opcode STATUS: libevent 2.1.12 masks the opcode away before we see
	 * it, so the query is judged as a QUERY and its reply says QUERY.
	 */
	qlen = build(q, 54, 0x1100, 1, "allowed.example", T_A, C_IN);
	n = exchange(fx, q, qlen, resp, sizeof(resp), 2000);
	assert_true(n > 0);
	parse(resp, (size_t)n, &r);
	assert_int_equal(r.flags & 0x7800, 0);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 1);
	assert_int_equal(fx->naudit, 1);
	expect_audit(fx, 0, "allowed.example", T_A, "A 198.18.0.1");
}

/* a map full of fresh entries: new names get SERVFAIL, known ones still answer */
static void
test_full_map_servfail(void **state)
{
	struct fx *fx = *state;
	struct synth *small = synth_new_bounded(1, 3600);
	struct reply r;

	fx->r->map = small;
	ask(fx, 61, 1, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 1);
	ask(fx, 62, 1, "new.wild.example", T_AAAA, C_IN, &r);
	assert_int_equal(r.rcode, 2);
	assert_int_equal(r.an, 0);
	ask(fx, 63, 1, "new.wild.example", T_MX, C_IN, &r);  /* NODATA needs no slot */
	assert_int_equal(r.rcode, 0);
	ask(fx, 64, 1, "allowed.example", T_AAAA, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 1);
	assert_int_equal(fx->naudit, 4);
	expect_audit(fx, 1, "new.wild.example", T_AAAA, "SERVFAIL");
	expect_audit(fx, 2, "new.wild.example", T_MX, "NODATA");
	fx->r->map = fx->map;
	synth_free(small);
}

/* libevent 2.1.12 crashes on datagrams shorter than 12 bytes: the filter must drop them */
static void
test_short_datagrams_filtered(void **state)
{
	struct fx *fx = *state;
	uint8_t q[PKT_MAX], resp[PKT_MAX];
	struct reply r;
	size_t qlen = build(q, 0x0101, 0x0100, 1, "allowed.example", T_A, C_IN);

	assert_true(qlen > 12);

	for (size_t len = 0; len < 12; len++)
		assert_int_equal(exchange(fx, q, len, resp, sizeof(resp), 20), -1);
	ask(fx, 0x0202, 1, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 1);
	assert_int_equal(fx->naudit, 1);
}

/* datagrams queued before the responder started never reach evdns */
static void
test_queued_before_start_discarded(void **state)
{
	struct fx *fx = *state;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	uint8_t q[PKT_MAX], resp[PKT_MAX];
	struct reply r;
	size_t qlen;
	int srv = socket(AF_INET, SOCK_DGRAM, 0);
	int cli = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(srv >= 0 && cli >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(srv, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(srv, (struct sockaddr *)&sin, &len), 0);
	assert_int_equal(connect(cli, (struct sockaddr *)&sin, sizeof(sin)), 0);
	qlen = build(q, 0x0303, 0x0100, 1, "allowed.example", T_A, C_IN);
	assert_int_equal(send(cli, q, 5, 0), 5);          /* would crash evdns */
	assert_int_equal(send(cli, q, qlen, 0), (ssize_t)qlen);  /* discarded too */
	/* swap the fixture's responder for one on this socket */
	dns_responder_free(fx->r);
	close(fx->cli);
	fx->r = dns_responder_new(fx->base, srv, fx->map, allow, audit, fx);
	assert_non_null(fx->r);
	fx->r->_now_ms = fake_now;
	fx->cli = cli;
	for (int i = 0; i < 20; i++)
		event_base_loop(fx->base, EVLOOP_NONBLOCK);
	assert_int_equal(recv(cli, resp, sizeof(resp), MSG_DONTWAIT), -1);
	assert_int_equal(fx->naudit, 0);
	ask(fx, 0x0404, 1, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(fx->naudit, 1);
}

static void
test_rate_bound(void **state)
{
	struct fx *fx = *state;
	struct reply r;
	uint8_t q[PKT_MAX], resp[PKT_MAX];
	size_t qlen;

	/* the clock stands still: a burst of DNS_RATE_BURST answers... */
	for (int i = 0; i < DNS_RATE_BURST; i++) {
		ask(fx, (uint16_t)i, 1, "nope.example", T_A, C_IN, &r);
		assert_int_equal(r.rcode, 3);
	}
	/* ...then DNS_REFUSE_QPS refusals... */
	for (int i = 0; i < DNS_REFUSE_QPS; i++) {
		ask(fx, (uint16_t)(1000 + i), 1, "allowed.example", T_A, C_IN, &r);
		assert_int_equal(r.rcode, 5);
		assert_int_equal(r.an, 0);
	}
	/* ...then silence, counted but not audited */
	qlen = build(q, 2000, 0x0100, 1, "allowed.example", T_A, C_IN);
	assert_int_equal(exchange(fx, q, qlen, resp, sizeof(resp), 100), -1);
	assert_int_equal(exchange(fx, q, qlen, resp, sizeof(resp), 100), -1);
	assert_int_equal(dns_responder_dropped(fx->r), 2);
	assert_int_equal(fx->naudit, DNS_RATE_BURST + DNS_REFUSE_QPS);
	expect_audit(fx, DNS_RATE_BURST - 1, "nope.example", T_A, "NXDOMAIN");
	expect_audit(fx, DNS_RATE_BURST, "allowed.example", T_A, "REFUSED");
	expect_audit(fx, DNS_RATE_BURST + DNS_REFUSE_QPS - 1, "allowed.example", T_A, "REFUSED");
	assert_int_equal(fx->nallow, DNS_RATE_BURST);

	/* 10 ms later: two queries' worth of tokens (200/s) */
	fake_ms += 10;
	ask(fx, 3000, 1, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.an, 1);
	ask(fx, 3001, 1, "allowed.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 0);
	/* the refusal bucket (20/s) got a fifth of a token: silence again */
	assert_int_equal(exchange(fx, q, qlen, resp, sizeof(resp), 100), -1);
	assert_int_equal(dns_responder_dropped(fx->r), 3);
	/* a second later the bucket is full again, no fuller */
	fake_ms += 1000;
	for (int i = 0; i < DNS_RATE_BURST; i++) {
		ask(fx, (uint16_t)(4000 + i), 1, "nope.example", T_A, C_IN, &r);
		assert_int_equal(r.rcode, 3);
	}
	ask(fx, 5000, 1, "nope.example", T_A, C_IN, &r);
	assert_int_equal(r.rcode, 5);
}

static void
test_rate_buckets_per_client(void **state)
{
	struct fx *fx = *state;
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct sockaddr_in6 b = {.sin6_family = AF_INET6};

	(void)fx;
	/* keyed by address: the port does not matter, IPv4-mapped is IPv4 */
	a.sin_addr.s_addr = htonl(0x0a000001);
	for (int i = 0; i < DNS_RATE_BURST; i++) {
		a.sin_port = htons((uint16_t)(1000 + i));
		assert_int_equal(rate_take(fx->r, (struct sockaddr *)&a), RATE_OK);
	}
	assert_int_equal(inet_pton(AF_INET6, "::ffff:10.0.0.1", &b.sin6_addr), 1);
	assert_int_equal(rate_take(fx->r, (struct sockaddr *)&b), RATE_REFUSE);
	/* another client has its own bucket */
	assert_int_equal(inet_pton(AF_INET6, "fd00:5c::2", &b.sin6_addr), 1);
	assert_int_equal(rate_take(fx->r, (struct sockaddr *)&b), RATE_OK);
	/* more clients than buckets: the least recently seen is recycled (fresh, full) */
	for (uint32_t i = 0; i < DNS_RATE_CLIENTS; i++) {
		a.sin_addr.s_addr = htonl(0x0b000000 + i);
		fake_ms++;
		assert_int_equal(rate_take(fx->r, (struct sockaddr *)&a), RATE_OK);
	}
	/* 10.0.0.1's empty bucket went: it gets a full burst, not 256 ms of refill */
	a.sin_addr.s_addr = htonl(0x0a000001);
	for (int i = 0; i < DNS_RATE_BURST; i++)
		assert_int_equal(rate_take(fx->r, (struct sockaddr *)&a), RATE_OK);
	assert_int_equal(rate_take(fx->r, (struct sockaddr *)&a), RATE_REFUSE);
}

static void
test_name_canon(void **state)
{
	char out[HOST_BUF];

	(void)state;
	assert_int_equal(dns_name_canon("Api.GitHub.COM", out, sizeof(out)), 0);
	assert_string_equal(out, "api.github.com");
	assert_int_equal(dns_name_canon("under_score.example", out, sizeof(out)), 0);
	assert_string_equal(out, "under_score.example");
	assert_int_equal(dns_name_canon("localhost", out, sizeof(out)), 0);
	assert_string_equal(out, "localhost");
	assert_int_equal(dns_name_canon("", out, sizeof(out)), SLUICE_EINVAL);
	assert_string_equal(out, "");
	assert_int_equal(dns_name_canon("127.1", out, sizeof(out)), SLUICE_EINVAL);
	assert_int_equal(dns_name_canon("0x7f000001", out, sizeof(out)), SLUICE_EINVAL);
	assert_int_equal(dns_name_canon("[::1]", out, sizeof(out)), SLUICE_EINVAL);
	assert_int_equal(dns_name_canon("::1", out, sizeof(out)), SLUICE_EINVAL);
	assert_int_equal(dns_name_canon("a..b", out, sizeof(out)), SLUICE_EINVAL);
	assert_int_equal(dns_name_canon("a b.example", out, sizeof(out)), SLUICE_EINVAL);
	assert_int_equal(dns_name_canon("example.com", out, 11), SLUICE_ETOOBIG);
	assert_string_equal(out, "");
	assert_int_equal(dns_name_canon("example.com", out, 12), 0);
	assert_int_equal(dns_name_canon(NULL, out, sizeof(out)), SLUICE_EINVAL);
}

static void
test_new_refuses_bad_args(void **state)
{
	struct fx *fx = *state;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	assert_null(dns_responder_new(NULL, fd, fx->map, allow, audit, fx));
	assert_null(dns_responder_new(fx->base, -1, fx->map, allow, audit, fx));
	assert_null(dns_responder_new(fx->base, fd, NULL, allow, audit, fx));
	assert_null(dns_responder_new(fx->base, fd, fx->map, NULL, audit, fx));
	/* the caller still owns fd: it is open */
	assert_int_equal(close(fd), 0);
	dns_responder_free(NULL);
	assert_int_equal(dns_responder_dropped(NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_and_aaaa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_types_nodata, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denied_nxdomain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_names_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_class_and_question_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evdns_drops_and_notimpl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_map_servfail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_datagrams_filtered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued_before_start_discarded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_buckets_per_client, setup, teardown),
		cmocka_unit_test(test_name_canon),
		cmocka_unit_test_setup_teardown(test_new_refuses_bad_args, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
