/*
 * fuzz_dns_name.c - the DNS responder's name check, and whole queries.
 *
 * First byte even: the rest is a query name as evdns hands it over (text up
 * to the first NUL); dns_name_canon() must either refuse it or give a
 * canonical DNS name of at most HOST_MAX bytes that canonicalises to itself,
 * gets a synthetic address, and maps back from it.
 * First byte odd: the rest is a datagram sent to a real responder on
 * 127.0.0.1 (evdns parses it, dns.c judges it, evdns answers); every audit
 * record and every reply must be well-formed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "proxy/dns/dns.c"
#include "proxy/dns/synth.c"

#define FUZZ_NAME_MAX 600
#define PKT_BUF 2048

static struct event_base *base;
static struct synth *map;
static struct dns_responder *resp;
static int cli = -1;
static uint64_t clock_ms;

static uint64_t
fuzz_now(void)
{
	return clock_ms;
}

static int
allow(void *arg, const char *name)
{
	(void)arg;
	if (!host_is_canonical(name) || strlen(name) > HOST_MAX)
		abort();
	return (strlen(name) & 1) == 0;
}

static void
audit(void *arg, const struct sockaddr *client, const char *name, int qtype, const char *answer)
{
	static const char *const fixed[] = {"NODATA", "NXDOMAIN", "REFUSED", "FORMERR", "SERVFAIL"};
	int known = 0;

	(void)arg;
	if (client == NULL || client->sa_family != AF_INET)
		abort();
	if (strlen(name) >= DNS_AUDIT_NAME_MAX || qtype < 0 || qtype > 0xffff)
		abort();
	for (const char *p = name; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f || *p == '"')
			abort();
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		known |= strcmp(answer, fixed[i]) == 0;
	if (!known && strncmp(answer, "A 198.1", 7) != 0 && strncmp(answer, "AAAA fd00:5c:5e::", 17) != 0)
		abort();
}

static void
start(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int srv;

	base = event_base_new();
	map = synth_new_bounded(64, 0);
	srv = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (base == NULL || map == NULL || srv == -1 ||
	    bind(srv, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(srv, (struct sockaddr *)&sin, &len) == -1)
		abort();
	resp = dns_responder_new(base, srv, map, allow, audit, NULL);
	if (resp == NULL)
		abort();
	resp->_now_ms = fuzz_now;
	cli = socket(AF_INET, SOCK_DGRAM, 0);
	if (cli == -1 || connect(cli, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		abort();
}

static void
check_name(const uint8_t *data, size_t size)
{
	char in[FUZZ_NAME_MAX + 1], out[HOST_BUF], again[HOST_BUF], back[HOST_BUF];
	struct sockaddr_in sin;
	size_t n = size < FUZZ_NAME_MAX ? size : FUZZ_NAME_MAX;

	memcpy(in, data, n);
	in[n] = '\0';
	if (dns_name_canon(in, out, sizeof(out)) != 0) {
		if (out[0] != '\0')
			abort();
		return;
	}
	n = strlen(out);
	if (n == 0 || n > HOST_MAX || !host_is_canonical(out))
		abort();
	for (size_t i = 0; i < n; i++) {
		char c = out[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			abort();
	}
	if (dns_name_canon(out, again, sizeof(again)) != 0 || strcmp(out, again) != 0)
		abort();
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if (synth_lookup_name(map, out, &sin.sin_addr, NULL) != 0)
		abort();
	if (synth_lookup_addr(map, (struct sockaddr *)&sin, back, sizeof(back)) != 0 ||
	    strcmp(back, out) != 0)
		abort();
}

static void
check_packet(const uint8_t *data, size_t size)
{
	uint8_t reply[PKT_BUF];
	ssize_t n;

	if (size > 1500)
		size = 1500;
	clock_ms += 1000; /* a fresh rate bucket for every input */
	if (send(cli, data, size, 0) == -1)
		return;
	for (int i = 0; i < 2; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	while ((n = recv(cli, reply, sizeof(reply), MSG_DONTWAIT)) >= 0) {
		/* a reply: at least a header, a response, to this query's id */
		if (n < 12 || (reply[2] & 0x80) == 0 || size < 2 || memcmp(reply, data, 2) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (base == NULL)
		start();
	if (size == 0)
		return 0;
	if ((data[0] & 1) == 0)
		check_name(data + 1, size - 1);
	else
		check_packet(data + 1, size - 1);
	return 0;
}
