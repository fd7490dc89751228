/*
 * tests/unit/audit/test_audit.c - runs every group of the audit/ (reader)
 * unit tests: verify (test_verify.c) and records, query, keys (test_records.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

int test_verify_run(void);
int test_records_run(void);

int
main(void)
{
	int failed = 0;

	failed += test_verify_run();
	failed += test_records_run();
	return failed == 0 ? 0 : 1;
}
