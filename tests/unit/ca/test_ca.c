/*
 * tests/unit/ca/test_ca.c - CA creation, show and load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ca/ca.h"
#include "ca/ca_int.h"
#include "common/host.h"
#include "common/sluice.h"

#include "ca_fixture.h"

static int
group_setup(void **state)
{
	return ca_fixture_setup(state, "/tmp/sluice-ca-test.XXXXXX", 1);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;

	assert_non_null(fp);
	buf = malloc(CA_FILE_MAX + 1);
	assert_non_null(buf);
	*len = fread(buf, 1, CA_FILE_MAX, fp);
	buf[*len] = '\0';
	fclose(fp);
	return buf;
}

static X509 *
read_pem(const char *path)
{
	FILE *fp = fopen(path, "r");
	X509 *x;

	assert_non_null(fp);
	x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	assert_non_null(x);
	return x;
}

/* ---- ca_init_dir ---- */

static void
test_init_modes_and_refusal(void **state)
{
	struct fixture *f = *state;
	char dir[160], key[200], pem[200];
	char *k1, *p1, *k2, *p2;
	size_t k1l, p1l, k2l, p2l;
	const char *err = NULL;
	struct stat st;
	mode_t old = umask(0);  /* the key must be 0600 whatever the umask */

	snprintf(dir, sizeof(dir), "%s/init", f->base);
	path_in(key, sizeof(key), dir, "ca.key");
	path_in(pem, sizeof(pem), dir, "ca.pem");
	assert_int_equal(ca_init_dir(dir, 0, &err), 0);
	umask(old);

	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(key, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(pem, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	k1 = slurp(key, &k1l);
	p1 = slurp(pem, &p1l);
	assert_non_null(strstr(k1, "-----BEGIN " "PRIVATE KEY-----")); /* split: only the PEM label, not a key */
	assert_non_null(strstr(p1, "-----BEGIN CERTIFICATE-----"));

	/* Without force: refused, and nothing changes. */
	err = NULL;
	assert_int_equal(ca_init_dir(dir, 0, &err), SLUICE_EEXIST);
	assert_non_null(err);
	k2 = slurp(key, &k2l);
	p2 = slurp(pem, &p2l);
	assert_memory_equal(k1, k2, k1l);
	assert_int_equal(k1l, k2l);
	assert_memory_equal(p1, p2, p1l);
	free(k2);
	free(p2);

	/* With force, even over a key someone loosened to 0644: new CA, 0600. */
	assert_int_equal(chmod(key, 0644), 0);
	assert_int_equal(ca_init_dir(dir, 1, &err), 0);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	k2 = slurp(key, &k2l);
	p2 = slurp(pem, &p2l);
	assert_true(k1l != k2l || memcmp(k1, k2, k1l) != 0);
	assert_true(p1l != p2l || memcmp(p1, p2, p1l) != 0);
	free(k1);
	free(p1);
	free(k2);
	free(p2);

	/* Only ca.pem present: still refused, and no ca.key is created. */
	assert_int_equal(unlink(key), 0);
	assert_int_equal(ca_init_dir(dir, 0, &err), SLUICE_EEXIST);
	assert_int_equal(stat(key, &st), -1);
	/* Only ca.key present: refused too. */
	assert_int_equal(ca_init_dir(dir, 1, &err), 0);
	assert_int_equal(unlink(pem), 0);
	assert_int_equal(ca_init_dir(dir, 0, &err), SLUICE_EEXIST);
	assert_int_equal(stat(pem, &st), -1);
}

static void
test_init_symlink_refused(void **state)
{
	struct fixture *f = *state;
	char dir[160], key[200], target[200];
	const char *err = NULL;
	struct stat st;

	/* A forced init must not write the key through a planted symlink. */
	snprintf(dir, sizeof(dir), "%s/symlink", f->base);
	assert_int_equal(mkdir(dir, 0700), 0);
	path_in(key, sizeof(key), dir, "ca.key");
	path_in(target, sizeof(target), dir, "elsewhere");
	assert_int_equal(symlink(target, key), 0);
	assert_int_not_equal(ca_init_dir(dir, 1, &err), 0);
	assert_non_null(err);
	assert_int_equal(lstat(target, &st), -1);
}

static void
test_ca_certificate(void **state)
{
	struct fixture *f = *state;
	char pem[200];
	X509 *x;
	BASIC_CONSTRAINTS *bc;
	ASN1_BIT_STRING *ku;
	AUTHORITY_KEYID *akid;
	const ASN1_OCTET_STRING *skid;
	EVP_PKEY *pk;
	char group[64];
	size_t glen = 0;
	int crit = -1;
	time_t now = time(NULL), nb, na;
	X509_STORE *store;
	X509_STORE_CTX *ctx;

	path_in(pem, sizeof(pem), f->dir, "ca.pem");
	x = read_pem(pem);
	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);

	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_int_equal(crit, 1);
	assert_true(bc->ca);
	assert_non_null(bc->pathlen);
	assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
	BASIC_CONSTRAINTS_free(bc);

	ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
	assert_non_null(ku);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);

	skid = X509_get0_subject_key_id(x);
	assert_non_null(skid);
	akid = X509_get_ext_d2i(x, NID_authority_key_identifier, &crit, NULL);
	assert_non_null(akid);
	assert_int_equal(crit, 0);
	assert_non_null(akid->keyid);
	assert_int_equal(ASN1_OCTET_STRING_cmp(akid->keyid, skid), 0);
	AUTHORITY_KEYID_free(akid);

	pk = X509_get0_pubkey(x);
	assert_int_equal(EVP_PKEY_get_base_id(pk), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_utf8_string_param(pk, "group", group, sizeof(group), &glen), 1);
	assert_string_equal(group, "prime256v1");

	nb = asn1_secs(X509_get0_notBefore(x));
	na = asn1_secs(X509_get0_notAfter(x));
	assert_true(nb <= now - 3600 + 5 && nb >= now - 3600 - 5);
	assert_true(na >= now + 3650L * 86400 - 5 && na <= now + 3650L * 86400 + 5);
	/* Serial: positive (not V_ASN1_NEG_INTEGER), 1..16 bytes. */
	assert_int_equal(X509_get0_serialNumber(x)->type, V_ASN1_INTEGER);
	assert_true(X509_get0_serialNumber(x)->length >= 1 &&
	            X509_get0_serialNumber(x)->length <= 16);

	/* The CN names the product. */
	{
		char cn[128];
		assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName,
		                                      cn, sizeof(cn)) > 0);
		assert_memory_equal(cn, "Sluice CA ", 10);
	}

	/* It verifies as a strict trust anchor. */
	store = X509_STORE_new();
	ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_add_cert(store, x), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, x, NULL), 1);
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_X509_STRICT);
	assert_int_equal(X509_verify_cert(ctx), 1);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(x);
}

/* ---- ca_show ---- */

static void
test_show(void **state)
{
	struct fixture *f = *state;
	char pem[200], abs[PATH_MAX], want[256], line[PATH_MAX + 64], *buf = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	size_t len = 0, off = 0;
	const char *err = NULL;
	FILE *out = open_memstream(&buf, &len);
	X509 *x;
	struct tm tm;

	path_in(pem, sizeof(pem), f->dir, "ca.pem");
	x = read_pem(pem);
	assert_int_equal(X509_digest(x, EVP_sha256(), md, &mdlen), 1);
	assert_int_equal(mdlen, 32);
	off = (size_t)snprintf(want, sizeof(want), "fingerprint: SHA256 ");
	for (i = 0; i < mdlen; i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off, "%s%02X", i ? ":" : "", md[i]);
	snprintf(want + off, sizeof(want) - off, "\n");

	assert_non_null(out);
	assert_int_equal(ca_show(f->dir, out, &err), 0);
	fclose(out);

	/* Line 1: the fingerprint, exactly. */
	assert_memory_equal(buf, want, strlen(want));
	/* Line 2: the subject. */
	off = strlen(want);
	assert_memory_equal(buf + off, "subject: CN=Sluice CA ", 22);
	/* notBefore / notAfter as ISO 8601 UTC. */
	memset(&tm, 0, sizeof(tm));
	assert_int_equal(ASN1_TIME_to_tm(X509_get0_notBefore(x), &tm), 1);
	strftime(line, sizeof(line), "\nnot before: %Y-%m-%dT%H:%M:%SZ\n", &tm);
	assert_non_null(strstr(buf, line));
	assert_int_equal(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm), 1);
	strftime(line, sizeof(line), "\nnot after:  %Y-%m-%dT%H:%M:%SZ\n", &tm);
	assert_non_null(strstr(buf, line));
	/* The absolute path to trust. */
	assert_non_null(realpath(f->dir, abs));
	assert_true(abs[0] == '/');
	snprintf(line, sizeof(line), "\ntrust this: %s/ca.pem\n", abs);
	assert_non_null(strstr(buf, line));
	assert_int_equal(buf[len - 1], '\n');
	free(buf);
	X509_free(x);

	/* No CA there: an error, and nothing printed. */
	buf = NULL;
	out = open_memstream(&buf, &len);
	snprintf(line, sizeof(line), "%s/nope", f->base);
	assert_int_equal(ca_show(line, out, &err), SLUICE_ENOENT);
	assert_non_null(err);
	fclose(out);
	assert_int_equal(len, 0);
	free(buf);
}

/* ---- ca_load ---- */

static void
test_load_refusals(void **state)
{
	struct fixture *f = *state;
	char d1[160], d2[160], a[200], b[200];
	const char *err = NULL;
	FILE *fp;
	X509 *leaf;

	/* Key of another CA: refused. */
	snprintf(d1, sizeof(d1), "%s/other", f->base);
	assert_int_equal(ca_init_dir(d1, 0, &err), 0);
	path_in(a, sizeof(a), d1, "ca.key");
	path_in(b, sizeof(b), f->dir, "ca.pem");
	snprintf(d2, sizeof(d2), "%s/mixed", f->base);
	assert_int_equal(mkdir(d2, 0700), 0);
	{
		char k[200], p[200], *buf;
		size_t len;

		path_in(k, sizeof(k), d2, "ca.key");
		path_in(p, sizeof(p), d2, "ca.pem");
		buf = slurp(a, &len);
		fp = fopen(k, "w");
		fwrite(buf, 1, len, fp);
		fclose(fp);
		free(buf);
		buf = slurp(b, &len);
		fp = fopen(p, "w");
		fwrite(buf, 1, len, fp);
		fclose(fp);
		free(buf);
		chmod(k, 0600);
	}
	err = NULL;
	assert_null(ca_load(d2, 0, &err));
	assert_string_equal(err, "CA key does not match the CA certificate");

	/* A leaf and its key are not a CA. */
	leaf = ca_leaf_get(f->ca, "leaf-as-ca.example", &err);
	assert_non_null(leaf);
	path_in(a, sizeof(a), d2, "ca.key");
	path_in(b, sizeof(b), d2, "ca.pem");
	fp = fopen(a, "w");
	assert_int_equal(PEM_write_PrivateKey(fp, ca_leaf_key(f->ca), NULL, NULL, 0, NULL, NULL), 1);
	fclose(fp);
	fp = fopen(b, "w");
	assert_int_equal(PEM_write_X509(fp, leaf), 1);
	fclose(fp);
	X509_free(leaf);
	err = NULL;
	assert_null(ca_load(d2, 0, &err));
	assert_string_equal(err, "ca.pem is not a CA certificate");

	/* Missing and garbage files. */
	snprintf(d1, sizeof(d1), "%s/absent", f->base);
	err = NULL;
	assert_null(ca_load(d1, 0, &err));
	assert_non_null(err);
	fp = fopen(b, "w");
	fputs("not a certificate\n", fp);
	fclose(fp);
	err = NULL;
	assert_null(ca_load(d2, 0, &err));
	assert_string_equal(err, "cannot parse the CA certificate (ca.pem)");
	assert_int_equal(ERR_peek_error(), 0);
}

static void
test_load_fields(void **state)
{
	struct fixture *f = *state;
	char pem[200];
	X509 *x;
	unsigned long minted = 1, hits = 1;
	struct ca *ca;
	const char *err = NULL;

	path_in(pem, sizeof(pem), f->dir, "ca.pem");
	x = read_pem(pem);
	assert_int_equal(X509_cmp(x, ca_cert(f->ca)), 0);
	X509_free(x);
	assert_int_equal(ca_cache_capacity(f->ca), CA_CACHE_DEFAULT);

	/* The leaf key is P-256 and is new on every load. */
	ERR_clear_error();
	ca = ca_load(f->dir, 7, &err);
	assert_non_null(ca);
	assert_int_equal(ERR_peek_error(), 0);
	assert_int_equal(ca_cache_capacity(ca), 7);
	assert_int_equal(ca_cache_count(ca), 0);
	ca_stats(ca, &minted, &hits);
	assert_int_equal(minted, 0);
	assert_int_equal(hits, 0);
	assert_int_equal(EVP_PKEY_get_base_id(ca_leaf_key(ca)), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_bits(ca_leaf_key(ca)), 256);
	assert_int_not_equal(EVP_PKEY_eq(ca_leaf_key(ca), ca_leaf_key(f->ca)), 1);
	ca_destroy(ca);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_modes_and_refusal),
		cmocka_unit_test(test_init_symlink_refused),
		cmocka_unit_test(test_ca_certificate),
		cmocka_unit_test(test_show),
		cmocka_unit_test(test_load_refusals),
		cmocka_unit_test(test_load_fields),
	};

	return cmocka_run_group_tests(tests, group_setup, ca_fixture_teardown);
}
