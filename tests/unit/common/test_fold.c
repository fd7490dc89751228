/*
 * tests/unit/common/test_fold.c - key folding as Go's encoding/json does it
 * (bytes.EqualFold): ASCII, the two specials that fold into ASCII (KELVIN
 * SIGN, LONG S), other orbits, invalid UTF-8, and sluice_fold_key agreeing
 * with sluice_fold_eq.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/fold.h"

int test_fold_run(void);

static int
eq(const char *a, const char *b)
{
	char fa[64], fb[64];
	size_t la, lb;
	int e = sluice_fold_eq(a, strlen(a), b, strlen(b));

	/* the folded forms agree with the comparison */
	la = sluice_fold_key(a, strlen(a), fa);
	lb = sluice_fold_key(b, strlen(b), fb);
	assert_int_equal(e, la == lb && memcmp(fa, fb, la) == 0);
	return e;
}

static void
test_fold_eq(void **state)
{
	(void)state;
	assert_true(eq("amount", "AMOUNT"));
	assert_true(eq("amount", "aMoUnT"));
	assert_false(eq("amount", "amounts"));
	assert_false(eq("amount", "amoun"));
	assert_false(eq("a[", "a{"));       /* '[' and '{' differ by 0x20 but are not letters */
	assert_false(eq("@", "`"));
	assert_true(eq("kind", "\xe2\x84\xaaind"));      /* U+212A KELVIN SIGN */
	assert_true(eq("KIND", "\xe2\x84\xaaind"));
	assert_true(eq("sku", "\xc5\xbfku"));            /* U+017F LONG S */
	assert_true(eq("SKU", "\xc5\xbf" "KU"));
	assert_true(eq("\xc3\xb6", "\xc3\x96"));         /* o-umlaut */
	assert_true(eq("\xc3\x9f", "\xe1\xba\x9e"));     /* sharp s, capital sharp s */
	assert_false(eq("ss", "\xc3\x9f"));              /* simple folding, not full */
	assert_true(eq("\xce\xa3", "\xcf\x82"));         /* sigma, final sigma */
	assert_true(eq("\xe2\x84\xa6", "\xcf\x89"));     /* OHM SIGN, omega */
	assert_false(eq("i", "\xc4\xb1"));               /* dotless i is its own orbit */
	assert_false(eq("I", "\xc4\xb0"));
	assert_true(eq("\xf0\x90\x90\x80", "\xf0\x90\x90\xa8")); /* Deseret, outside the BMP */
	/* invalid UTF-8 reads as U+FFFD, one byte each, as Go decodes it */
	assert_true(eq("\xff", "\xfe"));
	assert_true(eq("\xff", "\xef\xbf\xbd"));
	assert_false(eq("\xff", "\xff\xff"));
	assert_true(eq("\xc3", "\x80"));
	assert_int_equal(sluice_fold_rune(0x212A), 'K');
	assert_int_equal(sluice_fold_rune(0x17F), 'S');
	assert_int_equal(sluice_fold_rune('k'), 'K');
	assert_int_equal(sluice_fold_rune(0x10FFFF), 0x10FFFF);
}

int
test_fold_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_eq),
	};

	return cmocka_run_group_tests_name("fold", tests, NULL, NULL);
}
