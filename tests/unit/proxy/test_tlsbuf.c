/*
 * tests/unit/proxy/test_tlsbuf.c - the per-thread cache of OpenSSL's record
 * buffers (tlsbuf.c): record-sized blocks are kept and handed out again,
 * others are not, the cache is bounded, and a flush empties it.  (Real TLS
 * through it: every integration test.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/crypto.h>

#include "proxy/net/tlsbuf.h"

static void
test_reuses_record_sized_blocks(void **state)
{
	void *a, *b;

	(void)state;
	tlsbuf_thread_flush();
	a = OPENSSL_malloc(17 * 1024);
	assert_non_null(a);
	memset(a, 0x5a, 17 * 1024);
	OPENSSL_free(a);
	assert_int_equal(tlsbuf_cached(), 1);
	b = OPENSSL_malloc(16 * 1024 + 300);
	assert_ptr_equal(a, b);  /* the same block, no allocation */
	assert_int_equal(tlsbuf_cached(), 0);
	OPENSSL_free(b);
	tlsbuf_thread_flush();
	assert_int_equal(tlsbuf_cached(), 0);
}

static void
test_other_sizes_pass_through(void **state)
{
	void *small, *big;

	(void)state;
	tlsbuf_thread_flush();
	small = OPENSSL_malloc(100);
	big = OPENSSL_malloc(64 * 1024);
	assert_non_null(small);
	assert_non_null(big);
	OPENSSL_free(small);
	OPENSSL_free(big);
	assert_int_equal(tlsbuf_cached(), 0);
	OPENSSL_free(NULL);
	assert_int_equal(tlsbuf_cached(), 0);
}

static void
test_bounded(void **state)
{
	void *p[TLSBUF_CACHE_MAX + 8];
	size_t i;

	(void)state;
	tlsbuf_thread_flush();
	for (i = 0; i < TLSBUF_CACHE_MAX + 8; i++)
		p[i] = OPENSSL_malloc(18 * 1024);
	for (i = 0; i < TLSBUF_CACHE_MAX + 8; i++)
		OPENSSL_free(p[i]);
	assert_int_equal(tlsbuf_cached(), TLSBUF_CACHE_MAX);
	tlsbuf_thread_flush();
	assert_int_equal(tlsbuf_cached(), 0);
}

static void
test_realloc_of_cached_block(void **state)
{
	char *a, *b;

	(void)state;
	tlsbuf_thread_flush();
	a = OPENSSL_malloc(17 * 1024);
	memcpy(a, "abc", 3);
	b = OPENSSL_realloc(a, 40 * 1024);  /* grows out of the cached range: an ordinary block */
	assert_non_null(b);
	assert_memory_equal(b, "abc", 3);
	OPENSSL_free(b);
	assert_int_equal(tlsbuf_cached(), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reuses_record_sized_blocks),
		cmocka_unit_test(test_other_sizes_pass_through),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_realloc_of_cached_block),
	};
	int rc;

	/* first, as in main(): before OpenSSL allocates anything */
	if (tlsbuf_init() != 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tlsbuf_thread_flush();
	return rc;
}
