/*
 * tests/unit/common/test_mem.c - allocation helpers, secret wiping, error
 * texts and sluice_iov_ieq.
 *
 * The test binary is linked with -Wl,--wrap=free, so __wrap_free below sees
 * the bytes of a secret just before sluice_free_secret() releases them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/sluice.h"

int test_mem_run(void);
void __real_free(void *p);
void __wrap_free(void *p);
const char *__asan_default_options(void);

/* try_malloc(SIZE_MAX) must return NULL, not abort inside ASan. */
const char *
__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

#define WATCH_MAX 64

static const void *watch_ptr;
static size_t watch_len;
static unsigned char watch_seen[WATCH_MAX];
static int watch_hit;

void
__wrap_free(void *p)
{
	if (p != NULL && p == watch_ptr) {
		memcpy(watch_seen, p, watch_len);
		watch_hit = 1;
		watch_ptr = NULL;
	}
	__real_free(p);
}

static int
all_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != 0)
			return 0;
	}
	return 1;
}

static void
test_wipe(void **state)
{
	unsigned char buf[32];

	(void)state;
	memset(buf, 0xa5, sizeof(buf));
	sluice_wipe(buf + 4, 16);
	assert_true(all_zero(buf + 4, 16));
	assert_int_equal(buf[3], 0xa5);
	assert_int_equal(buf[20], 0xa5);
	sluice_wipe(buf, 0);
	assert_int_equal(buf[0], 0xa5);
	sluice_wipe(NULL, 0);
	sluice_wipe(NULL, 16);
	sluice_wipe(buf, sizeof(buf));
	assert_true(all_zero(buf, sizeof(buf)));
}

static void
test_free_secret(void **state)
{
	static const char secret[] = "sk-live-0123456789abcdefghijklmnop";
	char *s = xstrdup(secret);

	(void)state;
	assert_string_equal(s, secret);
	watch_ptr = s;
	watch_len = sizeof(secret) - 1;
	watch_hit = 0;
	sluice_free_secret(s);
	assert_int_equal(watch_hit, 1);
	if (!all_zero(watch_seen, sizeof(secret) - 1))
		fail_msg("secret bytes reached free() unwiped");
	sluice_free_secret(NULL);
	/* an empty secret is fine too */
	sluice_free_secret(xstrdup(""));
}

static void
test_alloc(void **state)
{
	char *p;
	unsigned char *z;
	size_t i;

	(void)state;
	p = xmalloc(0);
	assert_non_null(p);
	free(p);
	z = xcalloc(16, 4);
	assert_non_null(z);
	assert_true(all_zero(z, 64));
	z = xrealloc(z, 4096);
	assert_true(all_zero(z, 64));
	for (i = 0; i < 4096; i++)
		z[i] = (unsigned char)i;
	free(z);
	p = xcalloc(0, 0);
	assert_non_null(p);
	free(p);

	p = xstrndup("abcdef", 3);
	assert_string_equal(p, "abc");
	free(p);
	p = xstrndup("ab\0cd", 5);
	assert_memory_equal(p, "ab\0cd", 6);
	free(p);
	p = xstrndup("", 0);
	assert_string_equal(p, "");
	free(p);
	p = xstrdup("hello");
	assert_string_equal(p, "hello");
	free(p);

	p = try_malloc(0);
	assert_non_null(p);
	free(p);
	p = try_malloc(100);
	assert_non_null(p);
	free(p);
	p = try_malloc(SIZE_MAX);
	assert_null(p);
	p = try_malloc(SIZE_MAX / 2);
	assert_null(p);
}

/* Small fixed allocations abort (exit 1) on OOM instead of returning NULL. */
static void
test_xmalloc_oom(void **state)
{
	pid_t pid;
	int status, devnull;

	(void)state;
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		devnull = open("/dev/null", O_WRONLY);
		if (devnull != -1)
			dup2(devnull, STDERR_FILENO);
		(void)xmalloc(SIZE_MAX);
		_exit(0);  /* not reached */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
}

struct ieq_case {
	const char *a;
	size_t alen;
	const char *lit;
	int eq;
};

#define Q(a, l, e) {a, sizeof(a) - 1, l, e}

static const struct ieq_case ieq_cases[] = {
	Q("Host", "host", 1),
	Q("HOST", "host", 1),
	Q("host", "HOST", 1),
	Q("Content-Length", "content-length", 1),
	Q("", "", 1),
	Q("hosts", "host", 0),
	Q("hos", "host", 0),
	Q("", "host", 0),
	Q("host", "", 0),
	Q("ho\0t", "ho", 0),
	Q("host\0", "host", 0),
	Q("h\0st", "hxst", 0),
	Q("transfer_encoding", "transfer-encoding", 0),
	Q("@", "`", 0),      /* 0x40 vs 0x60: only letters fold */
	Q("[", "{", 0),
	Q("^", "~", 0),
	Q("\xc4", "\xe4", 0),  /* no locale folding of Latin-1 */
	Q("K", "\xe2\x84\xaa", 0),
};

static void
test_iov_ieq(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ieq_cases) / sizeof(ieq_cases[0]); i++) {
		const struct ieq_case *c = &ieq_cases[i];
		int got = sluice_iov_ieq(c->a, c->alen, c->lit);

		if (got != c->eq)
			fail_msg("sluice_iov_ieq case %zu (\"%s\" vs \"%s\"): %d, expected %d", i, c->a, c->lit, got,
			         c->eq);
	}
	/* a prefix of a longer, non-terminated buffer */
	assert_int_equal(sluice_iov_ieq("Hostname", 4, "host"), 1);
	assert_int_equal(sluice_iov_ieq("Hostname", 5, "host"), 0);
}

/* An empty view may have a NULL base. In a child, so a UBSan report stays contained. */
static void
test_iov_ieq_null(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0)
		_exit(sluice_iov_ieq(NULL, 0, "") == 1 && sluice_iov_ieq(NULL, 0, "host") == 0 ? 0 : 3);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("sluice_iov_ieq(NULL, 0, ...): child %s %d (UBSan report above?)",
		         WIFEXITED(status) ? "exited" : "killed by signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static void
test_strerror(void **state)
{
	static const int codes[] = {
		SLUICE_OK, SLUICE_ENOMEM, SLUICE_EINVAL, SLUICE_EIO, SLUICE_ENOENT, SLUICE_EEXIST,
		SLUICE_EPARSE, SLUICE_EDENIED, SLUICE_ETOOBIG, SLUICE_ETLS, SLUICE_ETIMEDOUT, SLUICE_ECLOSED,
	};
	size_t i, j, n = sizeof(codes) / sizeof(codes[0]);

	(void)state;
	for (i = 0; i < n; i++) {
		const char *s = sluice_strerror(codes[i]);

		assert_non_null(s);
		assert_true(s[0] != '\0');
		assert_string_not_equal(s, "unknown error");
		for (j = 0; j < i; j++)
			assert_string_not_equal(s, sluice_strerror(codes[j]));
	}
	assert_string_equal(sluice_strerror(SLUICE_EINVAL), "invalid argument");
	assert_string_equal(sluice_strerror(1), "unknown error");
	assert_string_equal(sluice_strerror(-12), "unknown error");
	assert_string_equal(sluice_strerror(INT32_MIN), "unknown error");
}

int
test_mem_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wipe),
		cmocka_unit_test(test_free_secret),
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_xmalloc_oom),
		cmocka_unit_test(test_iov_ieq),
		cmocka_unit_test(test_iov_ieq_null),
		cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests_name("common/mem", tests, NULL, NULL);
}
