/*
 * test_synth.c - the synthetic address map (proxy/dns/synth.c).
 *
 * Names get slots in order and keep them; addresses map back to names,
 * IPv4-mapped IPv6 included; addresses outside the ranges are told from
 * unknown ones inside; the bound holds, the least recently used entry is
 * reused when full, a fresh one never is; two threads agree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <sys/un.h>
#include <cmocka.h>
#include "proxy/dns/synth.c"

static struct sockaddr_storage
sa_of(const char *text)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':') != NULL) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(443);
		assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(443);
		assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
	}
	return ss;
}

/* synth_lookup_addr on the text address <text>; <name> gets the result. */
static int
rev(struct synth *m, const char *text, char *name, size_t cap)
{
	struct sockaddr_storage ss = sa_of(text);

	return synth_lookup_addr(m, (struct sockaddr *)&ss, name, cap);
}

static void
expect_addrs(struct synth *m, const char *name, const char *v4text, const char *v6text)
{
	struct in_addr v4;
	struct in6_addr v6;
	char t4[INET_ADDRSTRLEN], t6[INET6_ADDRSTRLEN];

	assert_int_equal(synth_lookup_name(m, name, &v4, &v6), 0);
	assert_non_null(inet_ntop(AF_INET, &v4, t4, sizeof(t4)));
	assert_non_null(inet_ntop(AF_INET6, &v6, t6, sizeof(t6)));
	assert_string_equal(t4, v4text);
	assert_string_equal(t6, v6text);
}

static void
test_assign_and_stable(void **state)
{
	struct synth *m = synth_new();
	char name[HOST_BUF];

	(void)state;
	expect_addrs(m, "example.com", "198.18.0.1", "fd00:5c:5e::1");
	expect_addrs(m, "api.github.com", "198.18.0.2", "fd00:5c:5e::2");
	expect_addrs(m, "example.com", "198.18.0.1", "fd00:5c:5e::1");
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		assert_int_equal(synth_lookup_name(m, name, NULL, NULL), 0);
	}
	/* slot 3 + 255 = 258 = 198.18.1.2 */
	expect_addrs(m, "n255.example", "198.18.1.2", "fd00:5c:5e::102");
	expect_addrs(m, "api.github.com", "198.18.0.2", "fd00:5c:5e::2");
	/* a wildcard-style name and the longest name */
	memset(name, 'a', 63);
	name[63] = '.';
	memset(name + 64, 'b', 63);
	name[127] = '.';
	memset(name + 128, 'c', 63);
	name[191] = '.';
	memset(name + 192, 'd', 61);
	name[253] = '\0';
	assert_int_equal(synth_lookup_name(m, name, NULL, NULL), 0);
	synth_free(m);
	synth_free(NULL);
}

static void
test_refuses_non_canonical(void **state)
{
	struct synth *m = synth_new();
	char name[300];

	(void)state;
	assert_int_equal(synth_lookup_name(m, "Example.com", NULL, NULL), SLUICE_EINVAL);
	assert_int_equal(synth_lookup_name(m, "example.com.", NULL, NULL), SLUICE_EINVAL);
	assert_int_equal(synth_lookup_name(m, "a..b", NULL, NULL), SLUICE_EINVAL);
	assert_int_equal(synth_lookup_name(m, "", NULL, NULL), SLUICE_EINVAL);
	assert_int_equal(synth_lookup_name(m, "127.1", NULL, NULL), SLUICE_EINVAL);
	assert_int_equal(synth_lookup_name(m, NULL, NULL, NULL), SLUICE_EINVAL);
	assert_int_equal(synth_lookup_name(NULL, "a.b", NULL, NULL), SLUICE_EINVAL);
	memset(name, 'a', sizeof(name));
	for (int i = 50; i < 290; i += 50)
		name[i] = '.';
	name[254] = '\0'; /* 254 bytes */
	assert_int_equal(synth_lookup_name(m, name, NULL, NULL), SLUICE_EINVAL);
	/* nothing was assigned: the first valid name gets slot 1 */
	expect_addrs(m, "ok.example", "198.18.0.1", "fd00:5c:5e::1");
	synth_free(m);
}

static void
test_reverse(void **state)
{
	struct synth *m = synth_new();
	char name[HOST_BUF];

	(void)state;
	assert_int_equal(synth_lookup_name(m, "example.com", NULL, NULL), 0);
	assert_int_equal(synth_lookup_name(m, "b.example", NULL, NULL), 0);

	assert_int_equal(rev(m, "198.18.0.1", name, sizeof(name)), 0);
	assert_string_equal(name, "example.com");
	assert_int_equal(rev(m, "fd00:5c:5e::2", name, sizeof(name)), 0);
	assert_string_equal(name, "b.example");
	assert_int_equal(rev(m, "::ffff:198.18.0.2", name, sizeof(name)), 0);
	assert_string_equal(name, "b.example");

	/* synthetic but unknown */
	assert_int_equal(rev(m, "198.18.0.3", name, sizeof(name)), SLUICE_ENOENT);
	assert_string_equal(name, "");
	assert_int_equal(rev(m, "198.18.0.0", name, sizeof(name)), SLUICE_ENOENT);
	assert_int_equal(rev(m, "198.19.255.255", name, sizeof(name)), SLUICE_ENOENT);
	assert_int_equal(rev(m, "fd00:5c:5e::", name, sizeof(name)), SLUICE_ENOENT);
	assert_int_equal(rev(m, "fd00:5c:5e::ffff:ffff", name, sizeof(name)), SLUICE_ENOENT);
	assert_int_equal(rev(m, "::ffff:198.19.0.9", name, sizeof(name)), SLUICE_ENOENT);

	/* not synthetic at all */
	assert_int_equal(rev(m, "198.17.255.255", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "198.20.0.1", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "10.0.0.1", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "::1", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "fd00:5c:5f::1", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "fd00:5c:5e:0:0:1::1", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "::ffff:10.0.0.1", name, sizeof(name)), SLUICE_EINVAL);
	assert_int_equal(rev(m, "::198.18.0.1", name, sizeof(name)), SLUICE_EINVAL);
	{
		struct sockaddr_un un;

		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		assert_int_equal(synth_lookup_addr(m, (struct sockaddr *)&un, name, sizeof(name)),
		                 SLUICE_EINVAL);
		assert_int_equal(synth_is_synthetic((struct sockaddr *)&un), 0);
	}
	assert_int_equal(synth_lookup_addr(m, NULL, name, sizeof(name)), SLUICE_EINVAL);

	/* a buffer too small */
	assert_int_equal(rev(m, "198.18.0.1", name, 11), SLUICE_ETOOBIG);
	assert_string_equal(name, "");
	assert_int_equal(rev(m, "198.18.0.1", name, 12), 0);
	assert_string_equal(name, "example.com");
	synth_free(m);
}

static void
test_is_synthetic(void **state)
{
	static const struct {
		const char *addr;
		int want;
	} cases[] = {
		{"198.18.0.0", 1}, {"198.18.0.7", 1}, {"198.19.255.255", 1},
		{"198.17.255.255", 0}, {"198.20.0.0", 0}, {"8.8.8.8", 0},
		{"fd00:5c:5e::", 1}, {"fd00:5c:5e::ffff:ffff", 1}, {"fd00:5c:5e::7", 1},
		{"fd00:5c:5e:0:0:1::", 0}, {"fd00:5c:5f::7", 0}, {"fd00::7", 0}, {"::1", 0},
		{"::ffff:198.18.3.4", 1}, {"::ffff:198.20.3.4", 0}, {"64:ff9b::198.18.0.1", 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss = sa_of(cases[i].addr);

		if (synth_is_synthetic((struct sockaddr *)&ss) != cases[i].want)
			fail_msg("%s: want %d", cases[i].addr, cases[i].want);
	}
	assert_int_equal(synth_is_synthetic(NULL), 0);
}

static void
test_bound_reuses_lru(void **state)
{
	struct synth *m = synth_new_bounded(3, 0);
	char name[HOST_BUF];

	(void)state;
	assert_null(synth_new_bounded(0, 0));
	assert_null(synth_new_bounded(SYNTH_MAX + 1, 0));
	expect_addrs(m, "a.example", "198.18.0.1", "fd00:5c:5e::1");
	expect_addrs(m, "b.example", "198.18.0.2", "fd00:5c:5e::2");
	expect_addrs(m, "c.example", "198.18.0.3", "fd00:5c:5e::3");
	/* use a (by name) and c (by address): b is the least recently used */
	expect_addrs(m, "a.example", "198.18.0.1", "fd00:5c:5e::1");
	assert_int_equal(rev(m, "198.18.0.3", name, sizeof(name)), 0);
	expect_addrs(m, "d.example", "198.18.0.2", "fd00:5c:5e::2");
	assert_int_equal(rev(m, "198.18.0.2", name, sizeof(name)), 0);
	assert_string_equal(name, "d.example");
	/* now a is the oldest; b comes back in a's slot */
	expect_addrs(m, "b.example", "198.18.0.1", "fd00:5c:5e::1");
	assert_int_equal(rev(m, "fd00:5c:5e::1", name, sizeof(name)), 0);
	assert_string_equal(name, "b.example");
	/* slot 4 is past the bound: synthetic, unknown */
	assert_int_equal(rev(m, "198.18.0.4", name, sizeof(name)), SLUICE_ENOENT);
	/* the others kept theirs */
	expect_addrs(m, "c.example", "198.18.0.3", "fd00:5c:5e::3");
	expect_addrs(m, "d.example", "198.18.0.2", "fd00:5c:5e::2");
	synth_free(m);
}

static void
test_bound_never_reuses_fresh(void **state)
{
	struct synth *m = synth_new_bounded(2, 3600);
	char name[HOST_BUF];

	(void)state;
	expect_addrs(m, "a.example", "198.18.0.1", "fd00:5c:5e::1");
	expect_addrs(m, "b.example", "198.18.0.2", "fd00:5c:5e::2");
	assert_int_equal(synth_lookup_name(m, "c.example", NULL, NULL), SLUICE_ETOOBIG);
	expect_addrs(m, "a.example", "198.18.0.1", "fd00:5c:5e::1");
	assert_int_equal(rev(m, "198.18.0.2", name, sizeof(name)), 0);
	assert_string_equal(name, "b.example");
	synth_free(m);
}

static void
test_full_size(void **state)
{
	struct synth *m = synth_new();
	char name[HOST_BUF];

	(void)state;
	for (int i = 0; i < SYNTH_MAX; i++) {
		snprintf(name, sizeof(name), "h%d.example", i);
		assert_int_equal(synth_lookup_name(m, name, NULL, NULL), 0);
	}
	/* the last slot is 198.18.0.0 + 65536 */
	assert_int_equal(rev(m, "198.19.0.0", name, sizeof(name)), 0);
	assert_string_equal(name, "h65535.example");
	assert_int_equal(rev(m, "198.19.0.1", name, sizeof(name)), SLUICE_ENOENT);
	/* full of fresh entries: a new name is refused, old ones still answer */
	assert_int_equal(synth_lookup_name(m, "one-more.example", NULL, NULL), SLUICE_ETOOBIG);
	expect_addrs(m, "h0.example", "198.18.0.1", "fd00:5c:5e::1");
	synth_free(m);
}

#define THREAD_NAMES 3000

static void *
worker(void *arg)
{
	struct synth *m = arg;
	char name[HOST_BUF], back[HOST_BUF];
	struct sockaddr_storage ss;  /* (a bare sockaddr_in upsets GCC's -Warray-bounds once inlined) */
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < THREAD_NAMES; i++) {
			snprintf(name, sizeof(name), "t%d.example", i);
			if (synth_lookup_name(m, name, &sin->sin_addr, NULL) != 0)
				return (void *)1;
			if (synth_lookup_addr(m, (struct sockaddr *)&ss, back, sizeof(back)) != 0 ||
			    strcmp(back, name) != 0)
				return (void *)2;
		}
	}
	return NULL;
}

static void
test_two_threads(void **state)
{
	struct synth *m = synth_new();
	pthread_t t1, t2;
	void *r1, *r2;
	char name[HOST_BUF];
	uint8_t seen[THREAD_NAMES + 1] = {0};

	(void)state;
	assert_int_equal(pthread_create(&t1, NULL, worker, m), 0);
	assert_int_equal(pthread_create(&t2, NULL, worker, m), 0);
	assert_int_equal(pthread_join(t1, &r1), 0);
	assert_int_equal(pthread_join(t2, &r2), 0);
	assert_null(r1);
	assert_null(r2);
	/* both threads used the same names: exactly THREAD_NAMES slots, each once */
	for (int i = 0; i < THREAD_NAMES; i++) {
		struct sockaddr_in sin;
		uint32_t slot;

		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		snprintf(name, sizeof(name), "t%d.example", i);
		assert_int_equal(synth_lookup_name(m, name, &sin.sin_addr, NULL), 0);
		slot = ntohl(sin.sin_addr.s_addr) - SYNTH_V4_NET;
		assert_true(slot >= 1 && slot <= THREAD_NAMES);
		assert_int_equal(seen[slot], 0);
		seen[slot] = 1;
	}
	assert_int_equal(rev(m, "198.18.11.185", name, sizeof(name)), SLUICE_ENOENT); /* slot 3001 */
	synth_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_assign_and_stable),
		cmocka_unit_test(test_refuses_non_canonical),
		cmocka_unit_test(test_reverse),
		cmocka_unit_test(test_is_synthetic),
		cmocka_unit_test(test_bound_reuses_lru),
		cmocka_unit_test(test_bound_never_reuses_fresh),
		cmocka_unit_test(test_full_size),
		cmocka_unit_test(test_two_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
