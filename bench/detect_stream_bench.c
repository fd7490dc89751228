/*
 * bench/detect_stream_bench.c - the cost of searching a body that streams
 * (secrets/detect_stream.c: seven views) against the one raw-view search it
 * replaced (the placeholder and its base64 forms in one scrub stream).
 *
 * 16 MiB of JSON-like text (a "%41" and a "\u0041" every 100 bytes or so,
 * no placeholder) fed in 16 KiB pieces, with 1 and 10 placeholders; prints
 * MB/s, best of three.  Built by hand from a release build:
 *
 *   cc -O2 -D_GNU_SOURCE -I. bench/detect_stream_bench.c build/release/secrets/libsluice_secrets.a \
 *      build/release/common/libsluice_common.a -levent_core -lcrypto -lz -lpthread -o /tmp/detect_stream_bench
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sluice.h"
#include "secrets/detect.h"
#include "secrets/scrub.h"
#include "secrets/scrub_int.h"

#define TOTAL (16u << 20)
#define PIECE (16u << 10)
#define RUNS 3

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
ph_of(char *out, size_t cap, int i)
{
	snprintf(out, cap, "sluice_ph_Bench%02dAbCdEfGhIjKlMnOpQrStUvWxYz01234", i);
}

int
main(void)
{
	uint8_t *text = malloc(TOTAL);
	char ph[64];
	size_t i, off, id;
	int nph[2] = {1, 10}, k, run, j;

	for (i = 0; i < TOTAL; i++)
		text[i] = (uint8_t)"{\"key\": \"some value\", \"n\": 12345, \"list\": [1, 2, 3]} "[i % 52];
	for (i = 50; i + 6 < TOTAL; i += 97)
		memcpy(text + i, i % 2 ? "%41" : "\\u0041", i % 2 ? 3 : 6);
	for (k = 0; k < 2; k++) {
		double best_new = 1e9, best_old = 1e9, t;

		for (run = 0; run < RUNS; run++) {
			struct ph_stream *s = ph_stream_new();
			struct scrub_set *set = scrub_set_new();
			struct scrub_stream *st;

			for (j = 0; j < nph[k]; j++) {
				ph_of(ph, sizeof(ph), j);
				ph_stream_add(s, ph, strlen(ph), (size_t)j);
				scrub_set_add_search(set, ph, strlen(ph), (unsigned)j);
			}
			st = scrub_stream_new(set);
			t = now();
			for (off = 0; off < TOTAL; off += PIECE)
				if (ph_stream_feed(s, text + off, PIECE, &id) != 0)
					return 1;
			t = now() - t;
			if (t < best_new)
				best_new = t;
			t = now();
			for (off = 0; off < TOTAL; off += PIECE)
				if (scrub_stream_feed(st, text + off, PIECE, NULL, NULL) != 0)
					return 1;
			t = now() - t;
			if (t < best_old)
				best_old = t;
			ph_stream_free(s);
			scrub_stream_free(st);
			scrub_set_free(set);
		}
		printf("%d placeholder(s): decoded views %.0f MB/s, raw view only %.0f MB/s\n", nph[k],
		       TOTAL / best_new / 1e6, TOTAL / best_old / 1e6);
	}
	free(text);
	return 0;
}
