/*
 * bench/credhead_bench.c - the cost per request of searching the head that
 * leaves (proxy/cred/credhead.c over secrets/detect.c).
 *
 * A typical API request head (request line with a query, 14 header lines,
 * about 900 bytes, a cookie and a base64-looking header among them) with one
 * bound placeholder in Authorization, planned and rendered against 1, 10 and
 * 100 secrets' placeholders; and the same head without any placeholder.
 * Prints microseconds per head, best of five runs of 20000 heads.  Built by
 * hand:
 *
 *   cc -O2 -D_GNU_SOURCE -I. bench/credhead_bench.c proxy/cred/credhead.c secrets/detect.c secrets/buf.c \
 *      common/mem.c common/log.c common/err.c -levent_core -lcrypto -lpthread -o /tmp/credhead_bench
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sluice.h"
#include "proxy/cred/credhead.h"
#include "secrets/secrets.h"

#define HEADS 20000
#define RUNS 5
#define NPH_MAX 100

static char phs[NPH_MAX][64];

static int
found(void *arg, size_t i, enum credhead_kind kind, const char *place, int encoded, size_t *sub)
{
	(void)arg;
	(void)i;
	(void)kind;
	if (encoded || strcmp(place, "header:authorization") != 0)
		return -1;
	*sub = 0;
	return 0;
}

static double
run(const char *head, size_t nph)
{
	const char *ph[NPH_MAX];
	size_t len[NPH_MAX], i, k, hl = strlen(head);
	struct credhead_needles nd = {ph, len, nph};
	struct credhead_plan plan;
	struct credhead_sub sub = {phs[0], strlen(phs[0]), (const uint8_t *)"tok_realvalue0123456789abcdef", 29, 0};
	struct evbuffer *out = evbuffer_new();
	struct timespec a, b;
	double best = 1e9, us;

	for (i = 0; i < nph; i++) {
		ph[i] = phs[i];
		len[i] = strlen(phs[i]);
	}
	for (k = 0; k < RUNS; k++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (i = 0; i < HEADS; i++) {
			if (credhead_plan(head, hl, &nd, found, NULL, &plan) != 0)
				abort();
			if (plan.nspan > 0 && credhead_render(head, hl, &plan, &sub, 1, 0, out, NULL, NULL) != 0)
				abort();
			evbuffer_drain(out, evbuffer_get_length(out));
			credhead_plan_free(&plan);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		us = ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3) / HEADS;
		if (us < best)
			best = us;
	}
	evbuffer_free(out);
	return best;
}

int
main(void)
{
	char with[2048], without[2048];
	static const char fmt[] =
	    "POST /repos/acme/widgets/issues?per_page=100&page=2&state=open HTTP/1.1\r\n"
	    "Host: api.github.com\r\nUser-Agent: octokit-rest.js/20.0.2\r\nAccept: application/vnd.github+json\r\n"
	    "Authorization: Bearer %s\r\nX-GitHub-Api-Version: 2022-11-28\r\nContent-Type: application/json\r\n"
	    "Accept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US,en;q=0.9\r\n"
	    "Cookie: _octo=GH1.1.1234567890.1700000000; logged_in=no; _gh_sess=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\r\n"
	    "X-Request-Id: 0f8fad5b-d9cb-469f-a165-70867728950e\r\nTraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
	    "X-Client-Data: CIa2yQEIpLbJAQjBtskBCKmdygEI2LbKAQiWocsBCOKTzQEIhKDNAQ==\r\n"
	    "Sec-Fetch-Mode: cors\r\nContent-Length: 42\r\n";
	size_t i, n[] = {1, 10, 100};

	for (i = 0; i < NPH_MAX; i++)
		snprintf(phs[i], sizeof(phs[i]), "ghp_Bench%03zuPlaceholderAbCdEfGhIjKlMnOpQrStUv", i);
	snprintf(with, sizeof(with), fmt, phs[0]);
	snprintf(without, sizeof(without), fmt, "gho_notaplaceholder0123456789abcdefghijkl");
	printf("head %zu bytes\n", strlen(with));
	for (i = 0; i < 3; i++)
		printf("%3zu secrets: %.1f us/head with one bound placeholder, %.1f us/head without\n", n[i],
		       run(with, n[i]), run(without, n[i]));
	return 0;
}
