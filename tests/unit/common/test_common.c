/*
 * tests/unit/common/test_common.c - runs every group of the common/ unit
 * tests: host, netaddr, json, log, mem, fold, encode, admin_client (each in its own test_<file>.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

int test_host_run(void);
int test_netaddr_run(void);
int test_json_run(void);
int test_log_run(void);
int test_mem_run(void);
int test_fold_run(void);
int test_encode_run(void);
int test_admin_client_run(void);
int test_jcs_run(void);
int test_bytescan_run(void);

int
main(void)
{
	int failed = 0;

	failed += test_host_run();
	failed += test_netaddr_run();
	failed += test_json_run();
	failed += test_log_run();
	failed += test_mem_run();
	failed += test_fold_run();
	failed += test_encode_run();
	failed += test_admin_client_run();
	failed += test_jcs_run();
	failed += test_bytescan_run();
	return failed == 0 ? 0 : 1;
}
