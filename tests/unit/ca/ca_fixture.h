/*
 * tests/unit/ca/ca_fixture.h - the cmocka group fixture shared by the CA unit
 * tests: a mkdtemp root holding an initialised CA in <base>/ca, optionally
 * loaded, all removed at teardown; and two small assertion helpers.  Include
 * it after <cmocka.h>.
 *
 *   static int group_setup(void **state)
 *   { return ca_fixture_setup(state, "/tmp/sluice-ca-test.XXXXXX", 1); }
 *   ... cmocka_run_group_tests(tests, group_setup, ca_fixture_teardown);
 */
#ifndef SLUICE_TESTS_UNIT_CA_FIXTURE_H
#define SLUICE_TESTS_UNIT_CA_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/asn1.h>

#include "ca/ca.h"
#include "ca/ca_int.h"

struct fixture {
	char base[64];   /* mkdtemp root, removed at teardown */
	char dir[128];   /* an initialised CA */
	struct ca *ca;   /* dir loaded (default cache) when asked, else NULL */
};

static inline int
ca_fixture_rm_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * Group setup: makes a temp dir from tmpl (ending in XXXXXX), runs
 * ca_init_dir on <base>/ca, loads it into f->ca when load is non-zero, and
 * sets *state to the fixture.  Returns 0, or -1 if any step fails.
 */
static inline int
ca_fixture_setup(void **state, const char *tmpl, int load)
{
	static struct fixture f;
	const char *err = NULL;

	snprintf(f.base, sizeof(f.base), "%s", tmpl);
	if (mkdtemp(f.base) == NULL)
		return -1;
	snprintf(f.dir, sizeof(f.dir), "%s/ca", f.base);
	if (ca_init_dir(f.dir, 0, &err) != 0)
		return -1;
	f.ca = NULL;
	if (load) {
		f.ca = ca_load(f.dir, 0, &err);
		if (f.ca == NULL)
			return -1;
	}
	*state = &f;
	return 0;
}

/* Group teardown: frees the loaded CA (if any) and removes the temp dir. */
static inline int
ca_fixture_teardown(void **state)
{
	struct fixture *f = *state;

	ca_destroy(f->ca);
	nftw(f->base, ca_fixture_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* Writes "<dir>/<file>" into out[cap]; fails the test if it does not fit. */
static inline void
path_in(char *out, size_t cap, const char *dir, const char *file)
{
	assert_true((size_t)snprintf(out, cap, "%s/%s", dir, file) < cap);
}

/* A certificate time as time_t; fails the test if it cannot be read. */
static inline time_t
asn1_secs(const ASN1_TIME *t)
{
	time_t v = 0;

	assert_int_equal(ca_asn1_time_get(t, &v), 0);
	return v;
}

#endif
