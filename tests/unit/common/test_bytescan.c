/*
 * tests/unit/common/test_bytescan.c - common/bytescan.h against a byte loop:
 * every length to 80 and every position of each wanted byte (before, inside
 * and after a 16- or 8-byte step), bytes with the high bit set (0xc5, 0xff:
 * a signed compare would miss them), a wanted byte just past the span (not
 * seen: each span is its own heap block, so ASan also sees any read past
 * it), and the same for the word path (test_bytescan_word.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/bytescan.h"

int test_bytescan_run(void);
size_t bytescan3_word(const char *s, size_t n, unsigned char a, unsigned char b, unsigned char c);

static size_t
naive(const char *s, size_t n, unsigned char a, unsigned char b, unsigned char c)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] == a || (unsigned char)s[i] == b || (unsigned char)s[i] == c)
			return i;
	return n;
}

/* Both paths on <s>/<n> (copied into a block of exactly <n> bytes) agree with the loop. */
static void
agree(const char *s, size_t n, unsigned char a, unsigned char b, unsigned char c)
{
	char *x = malloc(n ? n : 1);
	size_t want;

	assert_non_null(x);
	memcpy(x, s, n);
	want = naive(x, n, a, b, c);
	assert_int_equal(bytescan3(x, n, a, b, c), want);
	assert_int_equal(bytescan3_word(x, n, a, b, c), want);
	if (b == c)
		assert_int_equal(bytescan2(x, n, a, b), want);
	free(x);
}

static void
test_positions(void **state)
{
	static const unsigned char sets[][3] = {{':', '\\', 0xc5}, {'\n', '\r', '\r'}, {0xff, 0x00, 0x80}};
	char buf[96];
	size_t n, at, k, j;

	(void)state;
	for (k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		for (n = 0; n <= 80; n++) {
			memset(buf, 'a', sizeof(buf));
			agree(buf, n, sets[k][0], sets[k][1], sets[k][2]);  /* none */
			for (at = 0; at < n; at++)
				for (j = 0; j < 3; j++) {
					memset(buf, 'a', sizeof(buf));
					buf[at] = (char)sets[k][j];
					agree(buf, n, sets[k][0], sets[k][1], sets[k][2]);
					if (at + 1 < n) {  /* a second one later: the first is found */
						buf[n - 1] = (char)sets[k][(j + 1) % 3];
						agree(buf, n, sets[k][0], sets[k][1], sets[k][2]);
					}
				}
			/* wanted bytes just past the span are not in it */
			memset(buf, 'a', sizeof(buf));
			memset(buf + n, ':', 16);
			assert_int_equal(bytescan3(buf, n, ':', ':', ':'), n);
			assert_int_equal(bytescan3_word(buf, n, ':', ':', ':'), n);
		}
	}
	/* neighbours of the wanted bytes (one bit off) are not taken for them */
	memset(buf, 0xc4, 40);
	buf[37] = (char)0xc5;
	agree(buf, 40, 0xc5, 0xc5, 0xc5);
	memset(buf, 0x7f, 40);
	agree(buf, 40, 0xff, 0xff, 0xff);
}

/* Random spans over a small alphabet, so that the wanted bytes come often and in runs. */
static void
test_random(void **state)
{
	static const char alpha[] = {'a', ':', '\\', (char)0xc5, (char)0xbf, '\n', '\r', ' '};
	char buf[300];
	unsigned r = 12345;
	int t;
	size_t i, n;

	(void)state;
	for (t = 0; t < 4000; t++) {
		r = r * 1103515245u + 12345u;
		n = (r >> 8) % sizeof(buf);
		for (i = 0; i < n; i++) {
			r = r * 1103515245u + 12345u;
			/* mostly 'a', so that long quiet runs come between the hits */
			buf[i] = (r >> 16) % 16 < 14 ? 'a' : alpha[(r >> 20) % sizeof(alpha)];
		}
		agree(buf, n, ':', '\\', 0xc5);
		agree(buf, n, '\n', '\r', '\r');
	}
}

int
test_bytescan_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests_name("bytescan", tests, NULL, NULL);
}
