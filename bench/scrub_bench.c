/*
 * bench/scrub_bench.c - throughput of response scrubbing (secrets/scrub.c).
 *
 * Streams 64 MiB of random-ish text (printable, token-like, with a planted
 * value every 4 MiB) through scrub_stream_feed() in 16 KiB chunks with two
 * secrets loaded (about 16 needles), against a plain evbuffer_add() of the
 * same chunks; the output buffer is drained after each chunk, as the relay
 * does.  Prints MiB/s for both, best of five runs.  Then the same with the
 * set of a host that 100 secrets are bound to (one per sandbox, issue 17:
 * every response of a bound host is scrubbed with all of them), and what
 * building that set costs (credscrub.c builds it once per value change).
 * Also gunzips the same text through unzip_feed() for reference.  Built by
 * hand:
 *
 *   cc -O2 -D_GNU_SOURCE -I. bench/scrub_bench.c secrets/scrub.c secrets/scrub_forms.c secrets/unzip.c \
 *      common/mem.c common/log.c -levent_core -lz -o /tmp/scrub_bench
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "common/sluice.h"
#include "secrets/scrub.h"

#define TOTAL ((size_t)64 << 20)
#define CHUNK ((size_t)16 << 10)
#define RUNS 5
#define MANY 100   /* secrets bound to one host */

static const char value1[] = "tst_FakeT0kenV4lue0123456789abcdefghijkl";
#define PH1 "tst_PlaceH0lderXXXXXXXXXXXXXXXXXXXXXXXXX"
static const char value2[] = "sk-proj-Xy7/other+secret=value&with_reserved";

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
fill(uint8_t *buf, size_t n)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \"{}:,_-/+=%\n";
	uint64_t x = 0x9e3779b97f4a7c15u;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)alpha[(x >> 32) % (sizeof(alpha) - 1)];
	}
	for (i = 1; i + 64 < n; i += (size_t)4 << 20) {
		const char *v = (i >> 22) & 1 ? value1 : value2;

		memcpy(buf + i, v, strlen(v));
	}
}

static double
run_copy(const uint8_t *buf, struct evbuffer *out)
{
	double t0 = now();
	size_t off;

	for (off = 0; off < TOTAL; off += CHUNK) {
		evbuffer_add(out, buf + off, CHUNK);
		evbuffer_drain(out, evbuffer_get_length(out));
	}
	return now() - t0;
}

static double
run_scrub(const struct scrub_set *set, const uint8_t *buf, struct evbuffer *out, size_t *bytes,
          struct scrub_hits *hits)
{
	struct scrub_stream *st = scrub_stream_new(set);
	double t0 = now();
	size_t off;

	*bytes = 0;
	for (off = 0; off < TOTAL; off += CHUNK) {
		if (scrub_stream_feed(st, buf + off, CHUNK, out, hits) != 0)
			abort();
		*bytes += evbuffer_get_length(out);
		evbuffer_drain(out, evbuffer_get_length(out));
	}
	scrub_stream_end(st, out, hits);
	*bytes += evbuffer_get_length(out);
	evbuffer_drain(out, evbuffer_get_length(out));
	scrub_stream_free(st);
	return now() - t0;
}

static double
run_unzip(const uint8_t *gz, size_t gzlen, struct evbuffer *out, size_t *bytes)
{
	struct unzip *z = unzip_new("gzip");
	double t0 = now();
	size_t off = 0, used;
	int r = 0;

	*bytes = 0;
	while (r == 0 && off < gzlen) {
		size_t n = gzlen - off < CHUNK ? gzlen - off : CHUNK;

		r = unzip_feed(z, gz + off, n, out, &used);
		if (r < 0)
			abort();
		off += used;
		*bytes += evbuffer_get_length(out);
		evbuffer_drain(out, evbuffer_get_length(out));
	}
	unzip_free(z);
	return now() - t0;
}

int
main(void)
{
	uint8_t *buf = malloc(TOTAL), *gz;
	struct evbuffer *out = evbuffer_new();
	struct scrub_set *set = scrub_set_new();
	double best_copy = 1e9, best_scrub = 1e9, best_unzip = 1e9, mib = (double)TOTAL / (1 << 20), build_us;
	uLongf gzlen;
	size_t bytes = 0, ubytes = 0;
	struct scrub_hits hits = {{0}}, mhits = {{0}};
	static char mvals[MANY][48], mphs[MANY][48];
	struct scrub_secret mv[MANY];
	struct scrub_set *many;
	double best_many = 1e9, many_us;
	size_t mbytes = 0, k, nhit = 0;
	z_stream zs;
	int i;

	if (buf == NULL || out == NULL)
		return 1;
	fill(buf, TOTAL);
	if (scrub_set_add_secret(set, (const uint8_t *)value1, sizeof(value1) - 1, PH1, 0) != 0 ||
	    scrub_set_add_secret(set, (const uint8_t *)value2, sizeof(value2) - 1, "sluice_ph_placeholder_two", 1) != 0)
		return 1;
	for (i = 0; i < RUNS; i++) {
		double c = run_copy(buf, out), s = run_scrub(set, buf, out, &bytes, &hits);

		if (c < best_copy)
			best_copy = c;
		if (s < best_scrub)
			best_scrub = s;
	}
	gzlen = compressBound(TOTAL) + 64;
	gz = malloc(gzlen);
	memset(&zs, 0, sizeof(zs));
	if (gz == NULL || deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 1;
	zs.next_in = buf;
	zs.avail_in = (uInt)TOTAL;
	zs.next_out = gz;
	zs.avail_out = (uInt)gzlen;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
		return 1;
	gzlen = zs.total_out;
	deflateEnd(&zs);
	{
		/* What a response pays to build its set: two secrets, then free. */
		double t0 = now();

		for (i = 0; i < 10000; i++) {
			struct scrub_set *t = scrub_set_new();

			scrub_set_add_secret(t, (const uint8_t *)value1, sizeof(value1) - 1, PH1, 0);
			scrub_set_add_secret(t, (const uint8_t *)value2, sizeof(value2) - 1, "sluice_ph_placeholder_two", 1);
			scrub_set_free(t);
		}
		build_us = (now() - t0) / 10000 * 1e6;
	}
	/* a host with MANY bound secrets: values of the shape providers use, and two of them planted in the text */
	for (k = 0; k < MANY; k++) {
		snprintf(mvals[k], sizeof(mvals[k]), "ghp_%03zuSbx%08zxTokenValue%08zx", k, k * 2654435761u, ~k & 0xffffff);
		snprintf(mphs[k], sizeof(mphs[k]), "ghp_PLACEHOLDER_%03zu_xxxxxxxxxxxxxxxxx", k);
		mv[k] = (struct scrub_secret){(const uint8_t *)mvals[k], strlen(mvals[k]), mphs[k], (unsigned)k};
	}
	{
		double t0 = now();

		for (i = 0; i < 100; i++) {
			struct scrub_set *t = scrub_set_new();

			if (scrub_set_add_secrets(t, mv, MANY) != 0)
				return 1;
			scrub_set_free(t);
		}
		many_us = (now() - t0) / 100 * 1e6;
	}
	many = scrub_set_new();
	if (scrub_set_add_secrets(many, mv, MANY) != 0 || scrub_set_add_secret(many, (const uint8_t *)value1,
	                                                                        sizeof(value1) - 1, PH1, MANY) != 0)
		return 1;
	for (i = 0; i < RUNS; i++) {
		double s = run_scrub(many, buf, out, &mbytes, &mhits);

		if (s < best_many)
			best_many = s;
	}
	for (k = 0; k <= MANY; k++)
		nhit += scrub_hits_has(&mhits, (unsigned)k);
	for (i = 0; i < 3; i++) {
		double u = run_unzip(gz, gzlen, out, &ubytes);

		if (u < best_unzip)
			best_unzip = u;
	}
	printf("2 secrets, longest needle %zu bytes, 64 MiB in 16 KiB chunks\n", scrub_set_max_len(set));
	printf("memcpy into evbuffer: %8.0f MiB/s\n", mib / best_copy);
	printf("scrub_stream_feed:    %8.0f MiB/s  (%.0f%% of copy; %zu bytes out, hits 0x%llx)\n", mib / best_scrub,
	       100.0 * best_copy / best_scrub, bytes, (unsigned long long)hits.w[0]);
	printf("set of 2 secrets:     %8.1f us to build and free\n", build_us);
	printf("%d secrets, %zu needles: %6.0f MiB/s  (%.0f%% of copy; %zu bytes out, %zu secrets hit)\n", MANY + 1,
	       scrub_set_count(many), mib / best_many, 100.0 * best_copy / best_many, mbytes, nhit);
	printf("set of %d secrets:   %8.1f us to build and free (scrub_set_add_secrets)\n", MANY, many_us);
	printf("unzip_feed (gzip):    %8.0f MiB/s of output (%zu bytes from %lu)\n", mib / best_unzip, ubytes,
	       (unsigned long)gzlen);
	free(gz);
	free(buf);
	scrub_set_free(set);
	scrub_set_free(many);
	evbuffer_free(out);
	return 0;
}
