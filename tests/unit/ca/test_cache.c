/*
 * tests/unit/ca/test_cache.c - the leaf cache: bound, LRU order, sharding,
 * concurrent misses minting once, failure paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/x509v3.h>

#include "ca/ca.h"
#include "ca/ca_int.h"
#include "common/host.h"
#include "common/sluice.h"

#include "ca_fixture.h"

static int
group_setup(void **state)
{
	return ca_fixture_setup(state, "/tmp/sluice-cache-test.XXXXXX", 0);
}

static struct ca *
load(struct fixture *f, size_t cap)
{
	const char *err = NULL;
	struct ca *ca = ca_load(f->dir, cap, &err);

	if (ca == NULL)
		print_error("ca_load: %s\n", err);
	assert_non_null(ca);
	return ca;
}

/* Gets <name> and checks the leaf names it; returns 1 if it was a hit. */
static int
get(struct ca *ca, const char *name)
{
	unsigned long h0, h1;
	const char *err = NULL;
	char cn[HOST_BUF];
	X509 *x;

	ca_stats(ca, NULL, &h0);
	x = ca_leaf_get(ca, name, &err);
	if (x == NULL)
		print_error("%s: %s\n", name, err);
	assert_non_null(x);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
	                                      cn, sizeof(cn)) > 0);
	assert_string_equal(cn, name);
	X509_free(x);
	ca_stats(ca, NULL, &h1);
	return h1 != h0;
}

static unsigned long
minted(struct ca *ca)
{
	unsigned long m;

	ca_stats(ca, &m, NULL);
	return m;
}

static void
test_bound(void **state)
{
	struct ca *ca = load(*state, 8);
	char name[64];
	int i;

	assert_int_equal(ca_cache_capacity(ca), 8);
	for (i = 0; i < 24; i++) {
		snprintf(name, sizeof(name), "bound-%d.example", i);
		assert_int_equal(get(ca, name), 0);
		assert_true(ca_cache_count(ca) <= 8);
		assert_int_equal(ca_cache_count(ca), i < 8 ? (size_t)i + 1 : 8);
	}
	assert_int_equal(minted(ca), 24);
	/* The last 8 are cached, the first were evicted. */
	assert_int_equal(get(ca, "bound-23.example"), 1);
	assert_int_equal(get(ca, "bound-16.example"), 1);
	assert_int_equal(get(ca, "bound-0.example"), 0);
	assert_int_equal(minted(ca), 25);
	ca_destroy(ca);
}

static void
test_lru_order(void **state)
{
	struct ca *ca = load(*state, 3);

	assert_int_equal(get(ca, "a.example"), 0);
	assert_int_equal(get(ca, "b.example"), 0);
	assert_int_equal(get(ca, "c.example"), 0);
	assert_int_equal(get(ca, "a.example"), 1);   /* a is now the most recent */
	assert_int_equal(get(ca, "d.example"), 0);   /* evicts b, the least recent */
	assert_int_equal(ca_cache_count(ca), 3);
	assert_int_equal(minted(ca), 4);
	assert_int_equal(get(ca, "a.example"), 1);
	assert_int_equal(get(ca, "c.example"), 1);
	assert_int_equal(get(ca, "d.example"), 1);
	assert_int_equal(minted(ca), 4);
	assert_int_equal(get(ca, "b.example"), 0);   /* re-minted; evicts a */
	assert_int_equal(minted(ca), 5);
	assert_int_equal(get(ca, "c.example"), 1);
	assert_int_equal(get(ca, "a.example"), 0);
	assert_int_equal(ca_cache_count(ca), 3);
	ca_destroy(ca);
}

static void
test_capacity_one(void **state)
{
	struct ca *ca = load(*state, 1);

	assert_int_equal(get(ca, "x.example"), 0);
	assert_int_equal(get(ca, "x.example"), 1);
	assert_int_equal(get(ca, "y.example"), 0);
	assert_int_equal(get(ca, "x.example"), 0);
	assert_int_equal(ca_cache_count(ca), 1);
	ca_destroy(ca);
}

static void
test_default_capacity(void **state)
{
	struct ca *ca = load(*state, 0);

	assert_int_equal(ca_cache_capacity(ca), CA_CACHE_DEFAULT);
	ca_destroy(ca);
}

/* Shard bounds add up to exactly the capacity, whatever the rounding. */
static void
test_shard_rounding(void **state)
{
	static const size_t caps[] = {1, 3, 63, 64, 127, 128, 1000, 1023, 1025, 10000, 99999};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct ca_lru *lru = ca_lru_create(caps[i]);
		size_t n = ca_lru_nshards(lru);

		assert_int_equal(ca_lru_capacity(lru), caps[i]);
		assert_true(n >= 1 && n <= CA_LRU_SHARDS_MAX);
		if (caps[i] < 2 * CA_LRU_SHARD_MIN)
			assert_int_equal(n, 1);
		if (caps[i] >= CA_LRU_SHARDS_MAX * CA_LRU_SHARD_MIN)
			assert_int_equal(n, CA_LRU_SHARDS_MAX);
		ca_lru_destroy(lru);
	}
}

/* A fake minter, to drive the cache without OpenSSL signing. */
struct fake {
	atomic_int calls;
	int fail;
};

static X509 *
fake_mint(void *arg, const char *name, const char **err)
{
	struct fake *fk = arg;
	X509 *x;

	(void)name;
	atomic_fetch_add(&fk->calls, 1);
	if (fk->fail) {
		*err = "fake failure";
		return NULL;
	}
	x = X509_new();
	assert_non_null(x);
	return x;
}

static void
test_mint_failure_not_cached(void **state)
{
	struct ca_lru *lru = ca_lru_create(4);
	struct fake fk = {0};
	const char *err = NULL;
	X509 *x;
	int hit = -1;

	(void)state;
	fk.fail = 1;
	assert_null(ca_lru_get(lru, "f.example", fake_mint, &fk, &hit, &err));
	assert_string_equal(err, "fake failure");
	assert_int_equal(hit, 0);
	assert_int_equal(ca_lru_count(lru), 0);
	/* The next try mints again and then caches. */
	fk.fail = 0;
	x = ca_lru_get(lru, "f.example", fake_mint, &fk, &hit, &err);
	assert_non_null(x);
	X509_free(x);
	x = ca_lru_get(lru, "f.example", fake_mint, &fk, &hit, &err);
	assert_non_null(x);
	assert_int_equal(hit, 1);
	X509_free(x);
	assert_int_equal(atomic_load(&fk.calls), 2);
	assert_int_equal(ca_lru_count(lru), 1);
	/* Over-long keys are refused by the cache itself too. */
	{
		char big[HOST_MAX + 2];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		err = NULL;
		assert_null(ca_lru_get(lru, big, fake_mint, &fk, &hit, &err));
		assert_non_null(err);
		assert_int_equal(atomic_load(&fk.calls), 2);
	}
	ca_lru_destroy(lru);
}

/* A cached certificate outlives its eviction while a caller holds it. */
static void
test_reference_survives_eviction(void **state)
{
	struct ca *ca = load(*state, 1);
	const char *err = NULL;
	X509 *held = ca_leaf_get(ca, "held.example", &err);
	char cn[64];

	assert_non_null(held);
	assert_int_equal(get(ca, "other.example"), 0);  /* evicts held.example */
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(held), NID_commonName,
	                                      cn, sizeof(cn)) > 0);
	assert_string_equal(cn, "held.example");
	ca_destroy(ca);
	/* And outlives the CA itself. */
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(held), NID_commonName,
	                                      cn, sizeof(cn)) > 0);
	X509_free(held);
}

struct worker {
	struct ca *ca;
	int nnames;
	int iters;
	unsigned seed;
	int failures;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	char name[64], cn[64];
	const char *err;
	int i;

	for (i = 0; i < w->iters; i++) {
		X509 *x;
		int k = (int)(rand_r(&w->seed) % (unsigned)w->nnames);

		snprintf(name, sizeof(name), "n%d.concurrent.example", k);
		err = NULL;
		x = ca_leaf_get(w->ca, name, &err);
		if (x == NULL) {
			w->failures++;
			continue;
		}
		if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
		                              cn, sizeof(cn)) <= 0 || strcmp(cn, name) != 0)
			w->failures++;
		X509_free(x);
	}
	return NULL;
}

static void
run_workers(struct ca *ca, int nthreads, int iters, int nnames)
{
	pthread_t th[16];
	struct worker w[16];
	int i;

	assert_true(nthreads <= 16);
	for (i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ca, nnames, iters, (unsigned)(i * 7919 + 1), 0};
		assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (i = 0; i < nthreads; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].failures, 0);
	}
}

/* 8 threads x 2000 gets over 100 names, no eviction: exactly 100 mints. */
static void
test_concurrent_mint_once(void **state)
{
	struct ca *ca = load(*state, 1000);  /* >= 100: no eviction; 15 shards */
	unsigned long m, h;

	run_workers(ca, 8, 2000, 100);
	ca_stats(ca, &m, &h);
	assert_int_equal(m, 100);
	assert_int_equal(h, 8 * 2000 - 100);
	assert_int_equal(ca_cache_count(ca), 100);
	ca_destroy(ca);
}

/* Same with a cache too small for the names: evictions under contention. */
static void
test_concurrent_evicting(void **state)
{
	struct ca *ca = load(*state, 130);  /* 2 shards of 65 */
	unsigned long m, h;

	run_workers(ca, 8, 400, 160);
	ca_stats(ca, &m, &h);
	assert_int_equal(m + h, 8 * 400);
	assert_true(m >= 160 && h > 0);
	assert_true(ca_cache_count(ca) <= 130);
	ca_destroy(ca);
}

/* 10,000 distinct names through a cache of 1000. */
static void
test_ten_thousand(void **state)
{
	struct ca *ca = load(*state, 1000);
	char name[64];
	const char *err;
	struct timespec t0, t1, c0, c1;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (i = 0; i < 10000; i++) {
		X509 *x;

		snprintf(name, sizeof(name), "host%d.tenk.example", i);
		err = NULL;
		x = ca_leaf_get(ca, name, &err);
		assert_non_null(x);
		X509_free(x);
		if (i % 97 == 0)
			assert_true(ca_cache_count(ca) <= 1000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	assert_int_equal(minted(ca), 10000);
	/* Sharded LRU: each shard is full, so the total is exactly the bound. */
	assert_int_equal(ca_cache_count(ca), 1000);
	print_message("10000 mints: %.3f s wall, %.3f s cpu\n",
	              (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	              (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9);
	ca_destroy(ca);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_lru_order),
		cmocka_unit_test(test_capacity_one),
		cmocka_unit_test(test_default_capacity),
		cmocka_unit_test(test_shard_rounding),
		cmocka_unit_test(test_mint_failure_not_cached),
		cmocka_unit_test(test_reference_survives_eviction),
		cmocka_unit_test(test_concurrent_mint_once),
		cmocka_unit_test(test_concurrent_evicting),
		cmocka_unit_test(test_ten_thousand),
	};

	return cmocka_run_group_tests(tests, group_setup, ca_fixture_teardown);
}
