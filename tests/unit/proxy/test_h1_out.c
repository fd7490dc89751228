/*
 * tests/unit/proxy/test_h1_out.c - proxy/core/h1_out.c: the head lines and
 * chunk sizes are byte for byte what the printf formats they replace wrote
 * (every edge of the numbers, empty pieces), and a line is never left half
 * written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "common/sluice.h"
#include "proxy/core/h1_out.h"

/* The buffer's bytes equal <want> (and it is drained). */
static void
expect(struct evbuffer *b, const char *want)
{
	size_t n = evbuffer_get_length(b);
	char *p = malloc(n + 1);

	assert_non_null(p);
	evbuffer_remove(b, p, n);
	p[n] = '\0';
	assert_int_equal(n, strlen(want));
	assert_string_equal(p, want);
	free(p);
}

static const uint64_t edges[] = {0, 1, 9, 10, 15, 16, 99, 100, 255, 256, 4095, 4096, 65535, 1000000, UINT32_MAX,
                                 (uint64_t)UINT32_MAX + 1, INT64_MAX, UINT64_MAX - 1, UINT64_MAX};

static void
test_numbers(void **state)
{
	struct evbuffer *b = evbuffer_new();
	char want[64];
	size_t i;
	uint64_t v = 0x9e3779b97f4a7c15u;

	(void)state;
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]) + 2000; i++) {
		uint64_t x = i < sizeof(edges) / sizeof(edges[0]) ? edges[i] : (v = v * 6364136223846793005u + 1) >> (i % 64);

		assert_int_equal(h1_out_chunk_size(b, x), 0);
		snprintf(want, sizeof(want), "%" PRIx64 "\r\n", x);
		expect(b, want);
		assert_int_equal(h1_out_uint_field(b, SLUICE_LIT("Content-Length"), x, 0), 0);
		snprintf(want, sizeof(want), "Content-Length: %" PRIu64 "\r\n", x);
		expect(b, want);
		assert_int_equal(h1_out_uint_field(b, SLUICE_LIT("Content-Length"), x, 1), 0);
		snprintf(want, sizeof(want), "Content-Length: %" PRIu64 "\r\n\r\n", x);
		expect(b, want);
	}
	evbuffer_free(b);
}

static void
test_lines(void **state)
{
	struct evbuffer *b = evbuffer_new();
	const struct h1_out_piece none[] = {{"x", 0}, {NULL, 0}};
	char big[9000];

	(void)state;
	assert_int_equal(h1_out_status(b, 200, SLUICE_LIT("OK")), 0);
	expect(b, "HTTP/1.1 200 OK\r\n");
	assert_int_equal(h1_out_status(b, 404, "", 0), 0);   /* an empty reason keeps its space */
	expect(b, "HTTP/1.1 404 \r\n");
	assert_int_equal(h1_out_status(b, 101, SLUICE_LIT("Switching Protocols")), 0);
	expect(b, "HTTP/1.1 101 Switching Protocols\r\n");
	assert_int_equal(h1_out_status(b, -1, SLUICE_LIT("no")), -1);
	assert_int_equal(evbuffer_get_length(b), 0);
	assert_int_equal(h1_out_field(b, SLUICE_LIT("X-A"), SLUICE_LIT("b c")), 0);
	expect(b, "X-A: b c\r\n");
	assert_int_equal(h1_out_field(b, SLUICE_LIT("X-Empty"), "", 0), 0);
	expect(b, "X-Empty: \r\n");
	assert_int_equal(h1_out_pieces(b, none, 2), 0);     /* nothing at all */
	assert_int_equal(evbuffer_get_length(b), 0);
	/* a line longer than any chain the buffer has: still one piece, whole */
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	evbuffer_add(b, "z", 1);
	assert_int_equal(h1_out_field(b, SLUICE_LIT("Big"), big, sizeof(big) - 1), 0);
	assert_int_equal(evbuffer_get_length(b), 1 + 5 + sizeof(big) - 1 + 2);
	evbuffer_drain(b, 1);
	assert_int_equal(memcmp(evbuffer_pullup(b, 5), "Big: ", 5), 0);
	evbuffer_free(b);
}

static void
test_utoa(void **state)
{
	char buf[H1_OUT_NUM_MAX];
	size_t n;
	const char *p;

	(void)state;
	p = h1_out_utoa(buf, sizeof(buf), UINT64_MAX, 10, &n);
	assert_int_equal(n, 20);
	assert_memory_equal(p, "18446744073709551615", 20);
	p = h1_out_utoa(buf, sizeof(buf), UINT64_MAX, 16, &n);
	assert_int_equal(n, 16);
	assert_memory_equal(p, "ffffffffffffffff", 16);
	p = h1_out_utoa(buf, sizeof(buf), 0, 16, &n);
	assert_int_equal(n, 1);
	assert_int_equal(*p, '0');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_utoa),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
