/*
 * bench/tlsload_report.c - tlsload's side facing its user: the command line
 * and usage text in; error lines, latency samples, percentiles and the result
 * lines out.  The event loop is in tlsload.c.
 *
 * The result lines are parsed by bench/run.sh: keep their format exact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "tlsload.h"

#define SAMPLES_MAX (1u << 22)   /* latency samples kept */
#define ERRORS_SHOWN 5           /* error messages printed to stderr */

static uint32_t *samples;        /* in microseconds */
static size_t nsamples;
static unsigned errors_shown;

void
report_usage(void)
{
	fprintf(stderr,
	    "usage: tlsload newconn|latency|idle -a addr -p port -n sni-name -c cafile\n"
	    "               [-P path] [-H 'Name: value'] [-C concurrency] [-d seconds] [-N count]\n"
	    "               [-t hold-seconds]\n");
	exit(2);
}

static int
parse_addr(struct tl_opts *o, const char *a, const char *p)
{
	char *end;
	unsigned long port;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&o->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&o->addr;

	errno = 0;
	port = strtoul(p, &end, 10);
	if (errno != 0 || *end != '\0' || port == 0 || port > 65535)
		return -1;
	memset(&o->addr, 0, sizeof(o->addr));
	if (inet_pton(AF_INET, a, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		o->addrlen = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, a, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		o->addrlen = sizeof(*v6);
		return 0;
	}
	return -1;
}

static double
parse_num(const char *s, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !(v > 0) || v > max)
		report_usage();
	return v;
}

void
report_opts_parse(int argc, char **argv, struct tl_opts *o)
{
	const char *a = NULL, *p = NULL;
	int c;

	if (argc < 2)
		report_usage();
	if (strcmp(argv[1], "newconn") == 0)
		o->mode = TL_MODE_NEWCONN;
	else if (strcmp(argv[1], "latency") == 0)
		o->mode = TL_MODE_LATENCY;
	else if (strcmp(argv[1], "idle") == 0)
		o->mode = TL_MODE_IDLE;
	else
		report_usage();
	o->path = "/small";
	o->conc = 1;
	o->dur = 10;
	o->count = 0;
	o->hold = 60;
	optind = 2;
	while ((c = getopt(argc, argv, "a:p:n:c:P:H:C:d:N:t:")) != -1) {
		switch (c) {
		case 'a': a = optarg; break;
		case 'p': p = optarg; break;
		case 'n': o->name = optarg; break;
		case 'c': o->cafile = optarg; break;
		case 'P': o->path = optarg; break;
		case 'H': o->header = optarg; break;
		case 'C': o->conc = (unsigned)parse_num(optarg, SLOTS_MAX); break;
		case 'd': o->dur = parse_num(optarg, 3600); break;
		case 'N': o->count = (unsigned long)parse_num(optarg, 1e9); break;
		case 't': o->hold = parse_num(optarg, 3600); break;
		default: report_usage();
		}
	}
	if (optind != argc || a == NULL || p == NULL || o->name == NULL ||
	    o->cafile == NULL || parse_addr(o, a, p) == -1 || o->path[0] != '/' ||
	    (o->header != NULL && (strchr(o->header, ':') == NULL || strpbrk(o->header, "\r\n") != NULL)))
		report_usage();
	if (o->mode == TL_MODE_LATENCY)
		o->conc = 1;
	if (o->mode == TL_MODE_IDLE && (o->count == 0 || o->count > SLOTS_MAX))
		report_usage();
}

void
report_error(const char *state, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char buf[256];

	if (errors_shown < ERRORS_SHOWN) {
		errors_shown++;
		buf[0] = '\0';
		if (e != 0)
			ERR_error_string_n(e, buf, sizeof(buf));
		fprintf(stderr, "tlsload: error in state %s: %s%s%s\n", state,
		    what, buf[0] ? ": " : "", buf);
	}
	ERR_clear_error();
}

int
report_samples_init(void)
{
	samples = malloc(SAMPLES_MAX * sizeof(*samples));
	return samples == NULL ? -1 : 0;
}

void
report_sample_add(uint64_t ns)
{
	uint64_t us = ns / 1000;

	if (nsamples < SAMPLES_MAX)
		samples[nsamples++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The <p> quantile of the sorted samples, 0 without samples. */
static uint32_t
pct(double p)
{
	size_t i;

	if (nsamples == 0)
		return 0;
	i = (size_t)(p * (double)(nsamples - 1) + 0.5);
	return samples[i];
}

void
report_ready_print(const struct tl_counts *c, unsigned alive, double setup_s)
{
	printf("ready opened=%lu errors=%lu alive=%u setup_s=%.2f\n", c->ok, c->err,
	    alive, setup_s);
	fflush(stdout);
}

void
report_idle_print(const struct tl_counts *c, unsigned alive)
{
	printf("mode=idle opened=%lu errors=%lu alive=%u\n", c->ok, c->err, alive);
}

void
report_newconn_print(const struct tl_counts *c, double el)
{
	qsort(samples, nsamples, sizeof(*samples), cmp_u32);
	printf("mode=newconn conns=%lu errors=%lu seconds=%.3f rate=%.1f "
	    "p50_us=%u p99_us=%u MiB_in=%.1f\n", c->ok, c->err, el,
	    (double)c->ok / el, pct(0.50), pct(0.99), (double)c->bytes_in / 1048576.0);
}

void
report_latency_print(const struct tl_counts *c, double el)
{
	qsort(samples, nsamples, sizeof(*samples), cmp_u32);
	printf("mode=latency requests=%lu errors=%lu seconds=%.3f samples=%zu "
	    "p50_us=%u p90_us=%u p99_us=%u max_us=%u\n", c->ok, c->err, el,
	    nsamples, pct(0.50), pct(0.90), pct(0.99),
	    nsamples ? samples[nsamples - 1] : 0);
}
