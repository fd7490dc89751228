/*
 * tests/unit/proxy/test_limits.c - proxy/judge/limits.c and limits_state.c: token
 * bucket arithmetic (burst, refill, fractions never lost, Retry-After),
 * budget windows (the UTC day boundary, refunds, the clock stepping back),
 * scopes, reload changes, the state file (exact text, round trip through a
 * real file, odd bytes in keys, every kind of corrupt or truncated file
 * refused with its line, expiry), the counter bound, failing closed when the
 * state cannot be saved, threads taking from one counter (no lost update),
 * and a micro-measurement of the cost of one take.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/judge/limits.h"

/* 2024-03-01T00:00:00Z, in ms */
#define DAY0 UINT64_C(1709251200000)
#define HOUR UINT64_C(3600000)
#define DAY (24 * HOUR)

static struct policy_limit
rate(char *key, uint32_t count, uint32_t period_s, enum policy_scope scope)
{
	struct policy_limit l = {key, count, period_s, scope};

	return l;
}

static struct policy_budget
budget(char *key, int64_t max, uint32_t period_s, enum policy_scope scope)
{
	struct policy_budget b = {key, "form:amount", max, period_s, scope};

	return b;
}

static struct limits *
mem(void)
{
	char err[256];
	struct limits *l = limits_open(NULL, err, sizeof(err));

	assert_non_null(l);
	return l;
}

static void
test_bucket_burst_and_retry(void **state)
{
	struct limits *l = mem();
	struct policy_limit r = rate("rule:post", 3, 60, POLICY_SCOPE_SANDBOX);
	unsigned ra = 0;
	uint64_t t = DAY0 + 5;

	(void)state;
	/* a new bucket is full: the burst is its size */
	assert_int_equal(limits_rate_take(l, &r, "sbx", t, &ra), 0);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t, &ra), 0);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:post", "sbx", t), 0);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t, &ra), 1);
	assert_int_equal(ra, 20);                       /* one token per 20 s */
	/* another sandbox has its own bucket */
	assert_int_equal(limits_rate_take(l, &r, "other", t, &ra), 0);
	/* half-way: half a token, 10 s to go */
	assert_int_equal(limits_peek(l, "rule:post", "sbx", t + 10000), 500);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t + 10000, &ra), 1);
	assert_int_equal(ra, 10);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t + 19999, &ra), 1);
	assert_int_equal(ra, 1);                        /* 1 ms rounds up to a whole second */
	assert_int_equal(limits_rate_take(l, &r, "sbx", t + 20000, &ra), 0);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t + 20000, &ra), 1);
	assert_int_equal(ra, 20);
	/* a long pause refills to the bucket's size, never beyond */
	assert_int_equal(limits_peek(l, "rule:post", "sbx", t + 10 * DAY), 3000);
	assert_int_equal(limits_rate_take(l, &r, "sbx", t + 10 * DAY, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:post", "sbx", t + 10 * DAY), 2000);
	limits_close(l);
}

/* Refills in thousandths: however often it is asked, a slow bucket refills on time, never early. */
static void
test_bucket_fractions(void **state)
{
	struct limits *l = mem();
	struct policy_limit r = rate("rule:slow", 7, 3600, POLICY_SCOPE_GLOBAL);
	unsigned ra = 0;
	uint64_t t, first = 0;
	int i;

	(void)state;
	for (i = 0; i < 7; i++)
		assert_int_equal(limits_rate_take(l, &r, NULL, DAY0, &ra), 0);
	/* one token per 3600/7 s = 514285.7 ms: asked every 333 ms, the token is there at 514286 ms */
	for (t = DAY0; t <= DAY0 + 600000; t += 333) {
		int ret = limits_rate_take(l, &r, "ignored", t, &ra);

		if (ret == 0) {
			first = t;
			break;
		}
		assert_int_equal(ret, 1);
		assert_true(ra >= 1 && ra <= 515);
		assert_true(t + (uint64_t)ra * 1000 >= DAY0 + 514286);   /* never announces a time too early */
	}
	assert_true(first >= DAY0 + 514286 && first < DAY0 + 514286 + 333);
	/* the global counter is "*", whatever sandbox asked */
	assert_true(limits_peek(l, "rule:slow", "*", first) >= 0);
	assert_int_equal(limits_peek(l, "rule:slow", "ignored", first), -1);
	limits_close(l);
}

static void
test_bucket_reload_and_clock(void **state)
{
	struct limits *l = mem();
	struct policy_limit r = rate("rule:x", 10, 1, POLICY_SCOPE_SANDBOX);
	unsigned ra = 0;

	(void)state;
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:x", "a", DAY0), 9000);
	/* a reload makes it 2 per second under the same key: the bucket is cut to its new size */
	r.count = 2;
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:x", "a", DAY0), 1000);
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0, &ra), 0);
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0, &ra), 1);
	assert_int_equal(ra, 1);
	/* the clock steps back a minute: no credit for it */
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0 - 60000, &ra), 1);
	assert_true(ra >= 60);
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0 + 500, &ra), 0);
	/* a NULL sandbox of a per-sandbox limit is the "?" counter */
	assert_int_equal(limits_rate_take(l, &r, NULL, DAY0, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:x", "?", DAY0), 1000);
	/* bad arguments */
	r.count = 0;
	assert_int_equal(limits_rate_take(l, &r, "a", DAY0, &ra), SLUICE_EINVAL);
	limits_close(l);
}

static void
test_budget_day_window(void **state)
{
	struct limits *l = mem();
	struct policy_budget b = budget("rule:pay", 200 * INT64_C(1000000), 86400, POLICY_SCOPE_GLOBAL);
	uint64_t late = DAY0 + DAY - 500;   /* 23:59:59.500 */
	unsigned ra = 0;

	(void)state;
	assert_int_equal(limits_budget_take(l, &b, "s1", 150 * INT64_C(1000000), DAY0 + 1000, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "s2", 50 * INT64_C(1000000), DAY0 + 2000, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:pay", "*", DAY0 + 2000), 200 * INT64_C(1000000));
	/* exactly max is allowed; one millionth more is not, until the UTC day ends */
	assert_int_equal(limits_budget_take(l, &b, "s1", 1, DAY0 + HOUR, &ra), 1);
	assert_int_equal(ra, 23 * 3600);
	assert_int_equal(limits_budget_take(l, &b, "s1", 0, late, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "s1", 1, late, &ra), 1);
	assert_int_equal(ra, 1);
	/* midnight UTC: a new window */
	assert_int_equal(limits_peek(l, "rule:pay", "*", DAY0 + DAY), 0);
	assert_int_equal(limits_budget_take(l, &b, "s1", 120 * INT64_C(1000000), DAY0 + DAY, &ra), 0);
	/* a refund gives back into the window it was taken from */
	limits_budget_refund(l, &b, "s1", 20 * INT64_C(1000000), DAY0 + DAY + 5);
	assert_int_equal(limits_peek(l, "rule:pay", "*", DAY0 + DAY + 5), 100 * INT64_C(1000000));
	limits_budget_refund(l, &b, "s1", 500 * INT64_C(1000000), DAY0 + DAY + 5);  /* never below 0 */
	assert_int_equal(limits_peek(l, "rule:pay", "*", DAY0 + DAY + 5), 0);
	assert_int_equal(limits_budget_take(l, &b, "s1", 70 * INT64_C(1000000), DAY0 + DAY + 6, &ra), 0);
	/* ... and not into a window that has ended */
	limits_budget_refund(l, &b, "s1", 70 * INT64_C(1000000), DAY0 + 2 * DAY + 1);
	assert_int_equal(limits_budget_take(l, &b, "s1", 0, DAY0 + 2 * DAY + 1, &ra), 0);
	assert_int_equal(limits_peek(l, "rule:pay", "*", DAY0 + 2 * DAY + 1), 0);
	/* a single request over max never passes; a negative amount is an error */
	assert_int_equal(limits_budget_take(l, &b, "s1", 201 * INT64_C(1000000), DAY0 + 2 * DAY + 2, &ra), 1);
	assert_int_equal(limits_budget_take(l, &b, "s1", -1, DAY0 + 2 * DAY + 2, &ra), SLUICE_EINVAL);
	/* near POLICY_AMOUNT_MAX: no overflow */
	b.max = POLICY_AMOUNT_MAX;
	assert_int_equal(limits_budget_take(l, &b, "s1", POLICY_AMOUNT_MAX, DAY0 + 2 * DAY + 3, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "s1", INT64_MAX, DAY0 + 2 * DAY + 3, &ra), 1);
	limits_close(l);
}

static void
test_budget_hour_and_scope(void **state)
{
	struct limits *l = mem();
	struct policy_budget b = budget("budget:llm", 3 * INT64_C(1000000), 3600, POLICY_SCOPE_SANDBOX);
	unsigned ra = 0;

	(void)state;
	assert_int_equal(limits_budget_take(l, &b, "a", 3 * INT64_C(1000000), DAY0 + 10 * HOUR + 59 * 60000, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "a", 1, DAY0 + 10 * HOUR + 59 * 60000, &ra), 1);
	assert_int_equal(ra, 60);
	assert_int_equal(limits_budget_take(l, &b, "b", 1, DAY0 + 10 * HOUR + 59 * 60000, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "a", 1, DAY0 + 11 * HOUR, &ra), 0);
	/* a rate limit and a budget of one key are two counters */
	{
		struct policy_limit r = rate("budget:llm", 1, 60, POLICY_SCOPE_SANDBOX);

		assert_int_equal(limits_rate_take(l, &r, "a", DAY0 + 11 * HOUR, &ra), 0);
		assert_int_equal(limits_peek_kind(l, LIMITS_RATE, "budget:llm", "a", DAY0 + 11 * HOUR), 0);
		assert_int_equal(limits_peek_kind(l, LIMITS_BUDGET, "budget:llm", "a", DAY0 + 11 * HOUR), 1);
	}
	/* the clock steps back into the previous hour: the later window goes on until its own end */
	assert_int_equal(limits_budget_take(l, &b, "a", 3 * INT64_C(1000000), DAY0 + 10 * HOUR + 30 * 60000, &ra), 1);
	assert_int_equal(ra, 90 * 60);
	limits_close(l);
}

static void
test_state_text(void **state)
{
	struct limits *l = mem(), *l2;
	struct policy_limit r = rate("rule:post", 3, 60, POLICY_SCOPE_SANDBOX);
	struct policy_budget b = budget("rule:pay", 200 * INT64_C(1000000), 86400, POLICY_SCOPE_GLOBAL);
	char buf[1024], buf2[1024], err[256];
	unsigned ra;
	long n;

	(void)state;
	assert_int_equal(limits_rate_take(l, &r, "agent-1", DAY0 + 7, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "agent-1", 12500000, DAY0 + 9, &ra), 0);
	n = limits_format(l, buf, sizeof(buf));
	assert_int_equal(n, (long)strlen(buf));
	/* the order is the hash table's: compare as a set of lines */
	assert_non_null(strstr(buf, "\nrate rule:post agent-1 2000 1709251200007\n"));
	assert_non_null(strstr(buf, "\nbudget rule:pay * 1709251200000 12500000\n"));
	assert_int_equal(strncmp(buf, "sluice-counters v1\n", 19), 0);
	assert_non_null(strstr(buf, "\nend 2\n"));
	assert_int_equal(strlen(buf), strlen("sluice-counters v1\n") + strlen("rate rule:post agent-1 2000 1709251200007\n") +
	                                      strlen("budget rule:pay * 1709251200000 12500000\n") + strlen("end 2\n"));
	/* a small buffer: truncated like snprintf, the length still whole */
	assert_int_equal(limits_format(l, buf2, 10), n);
	assert_string_equal(buf2, "sluice-co");
	l2 = limits_open_buffer("t", buf, (size_t)n, err, sizeof(err));
	assert_non_null(l2);
	assert_int_equal(limits_format(l2, buf2, sizeof(buf2)), n);
	assert_string_equal(buf, buf2);
	/* loaded counters go on where they were: 2 tokens, then refused */
	assert_int_equal(limits_rate_take(l2, &r, "agent-1", DAY0 + 7, &ra), 0);
	assert_int_equal(limits_rate_take(l2, &r, "agent-1", DAY0 + 7, &ra), 0);
	assert_int_equal(limits_rate_take(l2, &r, "agent-1", DAY0 + 7, &ra), 1);
	assert_int_equal(limits_budget_take(l2, &b, "x", 187500001, DAY0 + 10, &ra), 1);
	assert_int_equal(limits_budget_take(l2, &b, "x", 187500000, DAY0 + 10, &ra), 0);
	limits_close(l2);
	limits_close(l);
}

static void
test_state_odd_keys(void **state)
{
	static char *const keys[] = {"rule:a b", "rule:line\nbreak", "rule:100%", "rule:*", "rule:\xff\x01\x7f",
	                                   "rule:end 0", "*", "rule:%41"};
	struct limits *l = mem(), *l2;
	char *buf = malloc(65536), *buf2 = malloc(65536), err[256], big[LIMITS_KEY_MAX + 2];
	unsigned ra, i;
	long n;

	(void)state;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct policy_limit r = rate(keys[i], 5, 60, POLICY_SCOPE_SANDBOX);

		assert_int_equal(limits_rate_take(l, &r, "sb x\n", DAY0, &ra), 0);
		assert_int_equal(limits_rate_take(l, &r, "*", DAY0, &ra), 0);   /* a sandbox named "*" is not global */
	}
	n = limits_format(l, buf, 65536);
	assert_true(n > 0 && n < 65536);
	assert_non_null(strstr(buf, "\nrate rule:a%20b sb%20x%0A 4000 1709251200000\n"));
	assert_non_null(strstr(buf, "\nrate rule:line%0Abreak ? 4000 1709251200000\n"));
	assert_non_null(strstr(buf, "\nrate rule:100%25 "));
	assert_non_null(strstr(buf, "\nrate rule:%2A "));
	assert_non_null(strstr(buf, "\nrate rule:%FF%01%7F "));
	assert_non_null(strstr(buf, "\nrate %2A "));
	assert_non_null(strstr(buf, "\nend 16\n"));
	l2 = limits_open_buffer("t", buf, (size_t)n, err, sizeof(err));
	assert_non_null(l2);
	assert_int_equal(limits_format(l2, buf2, 65536), n);
	assert_string_equal(buf, buf2);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_int_equal(limits_peek(l2, keys[i], "sb x\n", DAY0), 4000);
	/* names over their bounds are refused, never cut */
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	{
		struct policy_limit r = rate(big, 5, 60, POLICY_SCOPE_GLOBAL);

		assert_int_equal(limits_rate_take(l, &r, NULL, DAY0, &ra), SLUICE_ETOOBIG);
		big[LIMITS_KEY_MAX] = '\0';
		assert_int_equal(limits_rate_take(l, &r, NULL, DAY0, &ra), 0);
	}
	limits_close(l2);
	limits_close(l);
	free(buf);
	free(buf2);
}

static void
refused(const char *text, const char *want)
{
	char err[512];
	struct limits *l = limits_open_buffer("/s/counters", text, strlen(text), err, sizeof(err));

	if (l != NULL)
		fail_msg("accepted: [%s]", text);
	assert_string_equal(err, want);
}

static void
test_state_corrupt(void **state)
{
	(void)state;
	refused("", "/s/counters:1: empty file (expected the header \"sluice-counters v1\")");
	refused("sluice-counters v2\nend 0\n", "/s/counters:1: not a counters file (expected the header \"sluice-counters v1\")");
	refused("sluice-counters v1\n", "/s/counters:2: truncated (no end line)");
	refused("sluice-counters v1\nrate rule:a * 1000 5\n", "/s/counters:3: truncated (no end line)");
	refused("sluice-counters v1\nrate rule:a * 1000 5\nend 1", "/s/counters:3: truncated (the last line has no newline)");
	refused("sluice-counters v1\nrate rule:a * 10", "/s/counters:2: truncated (the last line has no newline)");
	refused("sluice-counters v1\nrate rule:a * 1000 5\nend 2\n",
	        "/s/counters:3: the end line does not count the counter lines");
	refused("sluice-counters v1\nend 0\nrate rule:a * 1000 5\n", "/s/counters:3: text after the end line");
	refused("sluice-counters v1\nrate rule:a * 1000\nend 1\n",
	        "/s/counters:2: expected \"rate <key> <sandbox> <tokens> <last_ms>\", \"budget <key> <sandbox> "
	        "<window_start_ms> <sum>\" or \"end <n>\"");
	refused("sluice-counters v1\nrate rule:a * 1000 5 6\nend 1\n",
	        "/s/counters:2: expected \"rate <key> <sandbox> <tokens> <last_ms>\", \"budget <key> <sandbox> "
	        "<window_start_ms> <sum>\" or \"end <n>\"");
	refused("sluice-counters v1\nbudget rule:a * 5 -1\nend 1\n",
	        "/s/counters:2: expected <window_start_ms> <sum> (decimal numbers, sum at most 9e18)");
	refused("sluice-counters v1\nbudget rule:a * 5 9000000000000000001\nend 1\n",
	        "/s/counters:2: expected <window_start_ms> <sum> (decimal numbers, sum at most 9e18)");
	refused("sluice-counters v1\nrate rule:a * 01 5\nend 1\n",
	        "/s/counters:2: expected <tokens> <last_ms> (decimal numbers)");
	refused("sluice-counters v1\nrate rule:a * 99999999999999999999 5\nend 1\n",
	        "/s/counters:2: expected <tokens> <last_ms> (decimal numbers)");
	refused("sluice-counters v1\nrate rule:a%zz * 1 5\nend 1\n", "/s/counters:2: bad %XX escape in a name");
	refused("sluice-counters v1\nrate rule:a%41 * 1 5\nend 1\n", "/s/counters:2: bad %XX escape in a name");
	refused("sluice-counters v1\nrate rule:a%0a * 1 5\nend 1\n", "/s/counters:2: bad %XX escape in a name");
	refused("sluice-counters v1\nrate rule:a%00 * 1 5\nend 1\n", "/s/counters:2: bad %XX escape in a name");
	refused("sluice-counters v1\nrate rule:a% * 1 5\nend 1\n", "/s/counters:2: bad byte in a name (not escaped)");
	refused("sluice-counters v1\nrate rule:\x01 * 1 5\nend 1\n", "/s/counters:2: bad byte in a name (not escaped)");
	refused("sluice-counters v1\nrate * ** 1 5\nend 1\n", "/s/counters:2: bad byte in a name (not escaped)");
	refused("sluice-counters v1\nrate  * 1 5\nend 1\n", "/s/counters:2: empty field");
	refused("sluice-counters v1\nrate rule:a * 1 5\nrate rule:a * 2 6\nend 2\n",
	        "/s/counters:3: the same counter twice");
	refused("sluice-counters v1\nrate rule:a * 1 5\r\nend 1\n",
	        "/s/counters:2: expected <tokens> <last_ms> (decimal numbers)");
	/* the same key as a rate and a budget is two counters: fine */
	{
		const char *ok = "sluice-counters v1\nrate rule:a * 1 5\nbudget rule:a * 5 6\nend 2\n";
		char err[128];
		struct limits *l = limits_open_buffer("x", ok, strlen(ok), err, sizeof(err));

		assert_non_null(l);
		assert_int_equal(limits_count(l), 2);
		limits_close(l);
	}
}

static char tmpdir[] = "/tmp/test_limits.XXXXXX";

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
test_state_file(void **state)
{
	struct policy_limit r = rate("rule:post", 3, 60, POLICY_SCOPE_SANDBOX);
	struct policy_budget b = budget("rule:pay", 200 * INT64_C(1000000), 86400, POLICY_SCOPE_GLOBAL);
	char path[256], tmp[300], err[512], *text;
	struct timespec ts;
	struct limits *l;
	struct stat st;
	uint64_t now;
	unsigned ra;
	FILE *f;
	long n;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	snprintf(path, sizeof(path), "%s/counters", tmpdir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(path);
	/* absent: the first start */
	l = limits_open(path, err, sizeof(err));
	assert_non_null(l);
	assert_int_equal(limits_persist(l), 0);
	assert_int_equal(stat(path, &st), -1);       /* nothing changed: nothing written */
	assert_int_equal(limits_rate_take(l, &r, "a", now, &ra), 0);
	assert_int_equal(limits_budget_take(l, &b, "a", 5000000, now, &ra), 0);
	/* an expired counter (its bucket full again by now) is dropped at the write */
	assert_int_equal(limits_rate_take(l, &r, "old", now - 61000, &ra), 0);
	assert_int_equal(limits_count(l), 3);
	assert_int_equal(limits_persist(l), 0);
	assert_int_equal(limits_count(l), 2);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(tmp, &st), -1);
	limits_close(l);
	l = limits_open(path, err, sizeof(err));
	assert_non_null(l);
	assert_int_equal(limits_peek_kind(l, LIMITS_RATE, "rule:post", "a", now), 2000);
	assert_int_equal(limits_peek(l, "rule:pay", "*", now), 5000000);
	assert_int_equal(limits_peek(l, "rule:post", "old", now), -1);
	/* limits_close writes what changed */
	assert_int_equal(limits_budget_take(l, &b, "a", 1000000, now, &ra), 0);
	limits_close(l);
	l = limits_open(path, err, sizeof(err));
	assert_non_null(l);
	assert_int_equal(limits_peek(l, "rule:pay", "*", now), 6000000);
	/* the state cannot be saved: every take fails closed, and a write that succeeds again clears that */
	limits_set_unsaveable(l, 1);
	assert_int_equal(limits_unsaveable(l), 1);
	assert_int_equal(limits_rate_take(l, &r, "a", now, &ra), SLUICE_EIO);
	assert_int_equal(limits_budget_take(l, &b, "a", 1, now, &ra), SLUICE_EIO);
	assert_int_equal(limits_persist(l), 0);
	assert_int_equal(limits_unsaveable(l), 0);
	assert_int_equal(limits_budget_take(l, &b, "a", 1, now, &ra), 0);
	limits_close(l);
	/* a corrupt file: the open fails and names the file and the line */
	f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fclose(f);
	assert_int_equal(truncate(path, n - 3), 0);
	l = limits_open(path, err, sizeof(err));
	assert_null(l);
	text = NULL;
	assert_int_equal(asprintf(&text, "%s:4: truncated (the last line has no newline)", path) > 0, 1);
	assert_string_equal(err, text);
	free(text);
	write_file(path, "garbage\n");
	assert_null(limits_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, "counters:1: not a counters file"));
	/* a directory where the file should be */
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_null(limits_open(path, err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
	rmdir(path);
	/* a state file in a directory that does not exist: writes fail (SLUICE_EIO), takes go on for now */
	snprintf(path, sizeof(path), "%s/missing/counters", tmpdir);
	l = limits_open(path, err, sizeof(err));
	assert_non_null(l);
	assert_int_equal(limits_rate_take(l, &r, "a", now, &ra), 0);
	assert_int_equal(limits_persist(l), SLUICE_EIO);
	assert_int_equal(limits_rate_take(l, &r, "a", now, &ra), 0);
	snprintf(tmp, sizeof(tmp), "%s/missing", tmpdir);
	assert_int_equal(mkdir(tmp, 0700), 0);
	assert_int_equal(limits_persist(l), 0);
	limits_close(l);
	unlink(path);
	rmdir(tmp);
}

static void
test_counter_bound(void **state)
{
	struct limits *l = mem();
	struct policy_limit r = rate("rule:many", 1, 60, POLICY_SCOPE_SANDBOX);
	char sb[32];
	unsigned ra, i;

	(void)state;
	for (i = 0; i < LIMITS_COUNTERS_MAX; i++) {
		snprintf(sb, sizeof(sb), "s%u", i);
		assert_int_equal(limits_rate_take(l, &r, sb, DAY0, &ra), 0);
	}
	assert_int_equal(limits_count(l), LIMITS_COUNTERS_MAX);
	/* a new counter fails closed; existing ones go on */
	assert_int_equal(limits_rate_take(l, &r, "new", DAY0, &ra), SLUICE_ETOOBIG);
	{
		struct policy_budget b = budget("rule:b", 10, 3600, POLICY_SCOPE_GLOBAL);

		assert_int_equal(limits_budget_take(l, &b, NULL, 1, DAY0, &ra), SLUICE_ETOOBIG);
	}
	assert_int_equal(limits_rate_take(l, &r, "s7", DAY0, &ra), 1);
	assert_int_equal(limits_rate_take(l, &r, "s7", DAY0 + 60000, &ra), 0);
	assert_int_equal(limits_count(l), LIMITS_COUNTERS_MAX);
	limits_close(l);
}

#define NTHREADS 8
#define NTAKES 20000

struct race {
	struct limits *l;
	const struct policy_limit *r;
	const struct policy_budget *b;
	int allowed;
};

static void *
racer(void *arg)
{
	struct race *x = arg;
	unsigned ra;
	int i;

	for (i = 0; i < NTAKES; i++) {
		if (limits_rate_take(x->l, x->r, "same", DAY0 + 1, &ra) == 0)
			x->allowed++;
		if (limits_budget_take(x->l, x->b, "same", 3, DAY0 + 1, &ra) != 0)
			abort();
	}
	return NULL;
}

static void
test_threads_no_lost_update(void **state)
{
	struct limits *l = mem();
	struct policy_limit r = rate("rule:race", 50000, 86400, POLICY_SCOPE_GLOBAL);
	struct policy_budget b = budget("rule:race", POLICY_AMOUNT_MAX, 86400, POLICY_SCOPE_GLOBAL);
	struct race x[NTHREADS];
	pthread_t t[NTHREADS];
	struct timespec t0, t1;
	int i, total = 0;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < NTHREADS; i++) {
		x[i] = (struct race){l, &r, &b, 0};
		assert_int_equal(pthread_create(&t[i], NULL, racer, &x[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		total += x[i].allowed;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("%d threads on one counter: %.0f ns per take (wall time / takes)\n", NTHREADS,
	              ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (2.0 * NTHREADS * NTAKES));
	assert_int_equal(total, 50000);
	assert_int_equal(limits_peek_kind(l, LIMITS_RATE, "rule:race", "*", DAY0 + 1), 0);
	assert_int_equal(limits_peek_kind(l, LIMITS_BUDGET, "rule:race", "*", DAY0 + 1), 3 * NTHREADS * NTAKES);
	limits_close(l);
}

static double
ns_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e9 + (double)(t1.tv_nsec - t0->tv_nsec);
}

/* Not a pass/fail bound (sanitizers slow it down): prints the cost of one take for the report. */
static void
test_take_cost(void **state)
{
	struct limits *l = mem();
	struct policy_limit r = rate("rule:bench", 1000000000u, 1, POLICY_SCOPE_SANDBOX);
	struct policy_budget b = budget("rule:bench", POLICY_AMOUNT_MAX, 86400, POLICY_SCOPE_GLOBAL);
	struct timespec t0;
	unsigned ra, i;
	const unsigned n = 200000;
	double ns;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		if (limits_rate_take(l, &r, "agent-1", DAY0 + i / 1000, &ra) != 0)
			fail_msg("refused at %u", i);
	ns = ns_since(&t0) / n;
	print_message("limits_rate_take: %.0f ns per take (one thread, one counter)\n", ns);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		if (limits_budget_take(l, &b, "agent-1", 1, DAY0, &ra) != 0)
			fail_msg("refused at %u", i);
	ns = ns_since(&t0) / n;
	print_message("limits_budget_take: %.0f ns per take (one thread, one counter)\n", ns);
	assert_true(ns < 1e6);
	limits_close(l);
}

static void
config_err(const char *yaml, const char *want)
{
	struct policy_config *cfg = NULL;
	char err[512];

	if (policy_load_buffer("c.yaml", yaml, strlen(yaml), &cfg, NULL, err, sizeof(err)) == 0)
		fail_msg("loaded: %s", yaml);
	assert_string_equal(err, want);
}

/* state_dir: and reload: in sluice.yaml (policy/config.c) */
static void
test_config_keys(void **state)
{
	struct policy_config *cfg = NULL;
	char err[512];
	const char *y1 = "ca: /x\n", *y2 = "ca: /x\nstate_dir: /srv/sluice/st\nreload: { watch: false }\n";

	(void)state;
	assert_int_equal(policy_load_buffer("c.yaml", y1, strlen(y1), &cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(cfg->state_dir, "/var/lib/sluice/state");
	assert_int_equal(cfg->reload_watch, 1);
	policy_config_free(cfg);
	assert_int_equal(policy_load_buffer("c.yaml", y2, strlen(y2), &cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(cfg->state_dir, "/srv/sluice/st");
	assert_int_equal(cfg->reload_watch, 0);
	policy_config_free(cfg);
	config_err("ca: /x\nstate_dir: var/state\n",
	           "c.yaml:2:12: expected an absolute directory path for state_dir (at most 1024 bytes)");
	config_err("ca: /x\nstate_dir: [a]\n", "c.yaml:2:12: expected an absolute directory path for state_dir");
	config_err("ca: /x\nreload: { watch: maybe }\n", "c.yaml:2:18: expected true or false for reload.watch");
	config_err("ca: /x\nreload: { poll: 1 }\n",
	           "c.yaml:2:11: unknown key 'poll' in reload; expected one of: watch");
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_burst_and_retry),
		cmocka_unit_test(test_bucket_fractions),
		cmocka_unit_test(test_bucket_reload_and_clock),
		cmocka_unit_test(test_budget_day_window),
		cmocka_unit_test(test_budget_hour_and_scope),
		cmocka_unit_test(test_state_text),
		cmocka_unit_test(test_state_odd_keys),
		cmocka_unit_test(test_state_corrupt),
		cmocka_unit_test(test_state_file),
		cmocka_unit_test(test_counter_bound),
		cmocka_unit_test(test_threads_no_lost_update),
		cmocka_unit_test(test_take_cost),
		cmocka_unit_test(test_config_keys),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
