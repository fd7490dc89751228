/*
 * tests/unit/ca/test_leaf.c - leaf minting: fields, verification, refusals.
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

/* ---- leaves ---- */

/* Verifies <leaf> against the CA strictly, for TLS servers, for <name>. */
static int
verify_leaf(X509 *cacert, X509 *leaf, const char *name, int ip)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *param;
	int ok;

	assert_int_equal(X509_STORE_add_cert(store, cacert), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	param = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
	X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
	if (ip)
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(param, name), 1);
	else
		assert_int_equal(X509_VERIFY_PARAM_set1_host(param, name, 0), 1);
	ok = X509_verify_cert(ctx);
	if (ok != 1)
		print_error("verify %s: %s\n", name,
		            X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

static void
check_leaf(struct ca *ca, X509 *leaf, const char *name)
{
	unsigned char addr[16];
	int alen = 0, crit = -1;
	GENERAL_NAMES *san;
	const GENERAL_NAME *gen;
	EXTENDED_KEY_USAGE *eku;
	BASIC_CONSTRAINTS *bc;
	AUTHORITY_KEYID *akid;
	ASN1_BIT_STRING *ku;
	const ASN1_INTEGER *serial;
	char cn[128];
	time_t now = time(NULL), nb, na;

	if (inet_pton(AF_INET, name, addr) == 1)
		alen = 4;
	else if (inet_pton(AF_INET6, name, addr) == 1)
		alen = 16;

	assert_int_equal(X509_get_version(leaf), X509_VERSION_3);
	assert_int_equal(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256);
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(leaf),
	                               X509_get_subject_name(ca_cert(ca))), 0);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(leaf), ca_leaf_key(ca)), 1);
	assert_int_equal(X509_verify(leaf, X509_get0_pubkey(ca_cert(ca))), 1);

	/* SAN: exactly one entry, the name, of the right type. */
	san = X509_get_ext_d2i(leaf, NID_subject_alt_name, &crit, NULL);
	assert_non_null(san);
	assert_int_equal(crit, 0);
	assert_int_equal(sk_GENERAL_NAME_num(san), 1);
	gen = sk_GENERAL_NAME_value(san, 0);
	if (alen > 0) {
		assert_int_equal(gen->type, GEN_IPADD);
		assert_int_equal(ASN1_STRING_length(gen->d.iPAddress), alen);
		assert_memory_equal(ASN1_STRING_get0_data(gen->d.iPAddress), addr, (size_t)alen);
	} else {
		assert_int_equal(gen->type, GEN_DNS);
		assert_int_equal(ASN1_STRING_length(gen->d.dNSName), (int)strlen(name));
		assert_memory_equal(ASN1_STRING_get0_data(gen->d.dNSName), name, strlen(name));
	}
	GENERAL_NAMES_free(san);

	/* CN: the name, cut at 64. */
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName,
	                                      cn, sizeof(cn)) > 0);
	assert_int_equal(strlen(cn), strlen(name) > 64 ? 64 : strlen(name));
	assert_memory_equal(cn, name, strlen(cn));
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(leaf)), 1);

	/* EKU serverAuth only; KU critical digitalSignature only; BC critical CA:FALSE. */
	eku = X509_get_ext_d2i(leaf, NID_ext_key_usage, &crit, NULL);
	assert_non_null(eku);
	assert_int_equal(sk_ASN1_OBJECT_num(eku), 1);
	assert_int_equal(OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)), NID_server_auth);
	EXTENDED_KEY_USAGE_free(eku);
	ku = X509_get_ext_d2i(leaf, NID_key_usage, &crit, NULL);
	assert_non_null(ku);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
	bc = X509_get_ext_d2i(leaf, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_int_equal(crit, 1);
	assert_false(bc->ca);
	BASIC_CONSTRAINTS_free(bc);

	/* SKI present; AKI keyid is the CA's SKI. */
	assert_non_null(X509_get0_subject_key_id(leaf));
	akid = X509_get_ext_d2i(leaf, NID_authority_key_identifier, &crit, NULL);
	assert_non_null(akid);
	assert_non_null(akid->keyid);
	assert_int_equal(ASN1_OCTET_STRING_cmp(akid->keyid,
	                                       X509_get0_subject_key_id(ca_cert(ca))), 0);
	AUTHORITY_KEYID_free(akid);

	/* Validity. */
	nb = asn1_secs(X509_get0_notBefore(leaf));
	na = asn1_secs(X509_get0_notAfter(leaf));
	assert_true(nb <= now - 3600 + 5 && nb >= now - 3600 - 5);
	assert_true(na <= now + CA_LEAF_DAYS * 86400L);
	assert_true(na >= now + CA_LEAF_DAYS * 86400L - 10);
	assert_true(na <= asn1_secs(X509_get0_notAfter(ca_cert(ca))));

	/* Serial: positive, nonzero, at most 128 bits. */
	serial = X509_get0_serialNumber(leaf);
	assert_int_equal(serial->type, V_ASN1_INTEGER);
	assert_true(serial->length >= 1 && serial->length <= 16);

	assert_int_equal(verify_leaf(ca_cert(ca), leaf, name, alen > 0), 1);
}

static void
test_leaf_kinds(void **state)
{
	struct fixture *f = *state;
	static const char *names[] = {
		"example.com", "api.github.com", "localhost", "_dmarc.example.org",
		"127.0.0.1", "10.1.2.3", "::1", "2001:db8::1", "fe80::1:2",
	};
	const char *err = NULL;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		X509 *leaf = ca_leaf_get(f->ca, names[i], &err);

		if (leaf == NULL)
			print_error("%s: %s\n", names[i], err);
		assert_non_null(leaf);
		assert_int_equal(ERR_peek_error(), 0);  /* no stale errors for SSL_get_error */
		check_leaf(f->ca, leaf, names[i]);
		X509_free(leaf);
	}
}

static void
test_leaf_long_name(void **state)
{
	struct fixture *f = *state;
	char name[HOST_MAX + 1];
	const char *err = NULL;
	X509 *leaf;

	/* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 bytes. */
	memset(name, 'a', 63);
	name[63] = '.';
	memset(name + 64, 'b', 63);
	name[127] = '.';
	memset(name + 128, 'c', 63);
	name[191] = '.';
	memset(name + 192, 'd', 61);
	name[253] = '\0';
	assert_int_equal(strlen(name), HOST_MAX);
	leaf = ca_leaf_get(f->ca, name, &err);
	assert_non_null(leaf);
	check_leaf(f->ca, leaf, name);
	X509_free(leaf);
}

static void
test_leaf_not_for_other_names(void **state)
{
	struct fixture *f = *state;
	const char *err = NULL;
	X509 *leaf = ca_leaf_get(f->ca, "one.example", &err);

	assert_non_null(leaf);
	assert_int_equal(verify_leaf(ca_cert(f->ca), leaf, "two.example", 0), 0);
	assert_int_equal(verify_leaf(ca_cert(f->ca), leaf, "x.one.example", 0), 0);
	X509_free(leaf);
}

static void
test_leaf_openssl_cli(void **state)
{
	struct fixture *f = *state;
	char leafpath[200], capath[200], cmd[600];
	const char *err = NULL;
	X509 *leaf;
	FILE *fp;

	if (access("/usr/bin/openssl", X_OK) != 0)
		skip();
	leaf = ca_leaf_get(f->ca, "cli.example.net", &err);
	assert_non_null(leaf);
	path_in(leafpath, sizeof(leafpath), f->base, "leaf.pem");
	path_in(capath, sizeof(capath), f->dir, "ca.pem");
	fp = fopen(leafpath, "w");
	assert_int_equal(PEM_write_X509(fp, leaf), 1);
	fclose(fp);
	X509_free(leaf);
	snprintf(cmd, sizeof(cmd),
	         "/usr/bin/openssl verify -x509_strict -purpose sslserver "
	         "-verify_hostname cli.example.net -CAfile %s %s >/dev/null 2>&1",
	         capath, leafpath);
	assert_int_equal(system(cmd), 0);
	/* And the same check fails for another name (the test can fail). */
	snprintf(cmd, sizeof(cmd),
	         "/usr/bin/openssl verify -x509_strict -purpose sslserver "
	         "-verify_hostname other.example.net -CAfile %s %s >/dev/null 2>&1",
	         capath, leafpath);
	assert_int_not_equal(system(cmd), 0);
}

/*
 * A TLS handshake in memory: the server uses the leaf and the shared leaf
 * key the way proxy/ will; the client trusts only the CA, strictly, and
 * checks the name.  Returns 1 if the client accepted the server.
 */
static int
handshake(struct ca *ca, X509 *leaf, const char *name, int ip)
{
	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	X509_VERIFY_PARAM *param;
	BIO *sbio = NULL, *cbio = NULL;
	SSL *s, *c;
	int i, sdone = 0, cdone = 0, ok;

	assert_non_null(sctx);
	assert_non_null(cctx);
	assert_int_equal(SSL_CTX_use_certificate(sctx, leaf), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(sctx, ca_leaf_key(ca)), 1);
	assert_int_equal(SSL_CTX_check_private_key(sctx), 1);
	assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), ca_cert(ca)), 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	s = SSL_new(sctx);
	c = SSL_new(cctx);
	param = SSL_get0_param(c);
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
	if (ip) {
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(param, name), 1);
	} else {
		assert_int_equal(X509_VERIFY_PARAM_set1_host(param, name, 0), 1);
		assert_int_equal(SSL_set_tlsext_host_name(c, name), 1);
	}
	assert_int_equal(BIO_new_bio_pair(&sbio, 0, &cbio, 0), 1);
	SSL_set_bio(s, sbio, sbio);
	SSL_set_bio(c, cbio, cbio);
	SSL_set_accept_state(s);
	SSL_set_connect_state(c);
	for (i = 0; i < 50 && !(sdone && cdone); i++) {
		int r;

		if (!cdone) {
			r = SSL_do_handshake(c);
			if (r == 1)
				cdone = 1;
			else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ)
				break;
		}
		if (!sdone) {
			r = SSL_do_handshake(s);
			if (r == 1)
				sdone = 1;
			else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
				break;
		}
	}
	ok = cdone && SSL_get_verify_result(c) == X509_V_OK;
	SSL_free(s);
	SSL_free(c);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	ERR_clear_error();
	return ok;
}

static void
test_leaf_tls_handshake(void **state)
{
	struct fixture *f = *state;
	const char *err = NULL;
	X509 *dns = ca_leaf_get(f->ca, "tls.example.org", &err);
	X509 *ip = ca_leaf_get(f->ca, "192.0.2.7", &err);
	X509 *ip6 = ca_leaf_get(f->ca, "2001:db8::7", &err);

	assert_non_null(dns);
	assert_non_null(ip);
	assert_non_null(ip6);
	assert_int_equal(handshake(f->ca, dns, "tls.example.org", 0), 1);
	assert_int_equal(handshake(f->ca, ip, "192.0.2.7", 1), 1);
	assert_int_equal(handshake(f->ca, ip6, "2001:db8::7", 1), 1);
	/* The client refuses a leaf for another name. */
	assert_int_equal(handshake(f->ca, dns, "other.example.org", 0), 0);
	assert_int_equal(handshake(f->ca, ip, "192.0.2.8", 1), 0);
	X509_free(dns);
	X509_free(ip);
	X509_free(ip6);
}

static void
test_leaf_serials_distinct(void **state)
{
	struct fixture *f = *state;
	enum { N = 64 };
	ASN1_INTEGER *serials[N];
	const char *err = NULL;
	char name[64];
	int i, j;

	for (i = 0; i < N; i++) {
		X509 *leaf;

		snprintf(name, sizeof(name), "serial-%d.example", i);
		leaf = ca_leaf_get(f->ca, name, &err);
		assert_non_null(leaf);
		serials[i] = ASN1_INTEGER_dup(X509_get0_serialNumber(leaf));
		X509_free(leaf);
	}
	for (i = 0; i < N; i++) {
		for (j = i + 1; j < N; j++)
			assert_int_not_equal(ASN1_INTEGER_cmp(serials[i], serials[j]), 0);
	}
	for (i = 0; i < N; i++)
		ASN1_INTEGER_free(serials[i]);
}

static void
test_leaf_invalid_names(void **state)
{
	struct fixture *f = *state;
	static const char *bad[] = {
		"", "a..b", "-x.com", "x-.com", "foo bar", "127.1", "xn--", "EXAMPLE.com",
		"example.com.", ".example.com", "a,DNS:evil.com", "evil.com\nx", "a/b",
		"[::1]", "0x7f000001", "2130706433", "0177.0.0.1", "::0001", "2001:DB8::1",
		"1.2.3.4.5", "a*.example.com", "*.example.com", "exa\xc3\xa9mple.com",
	};
	char longname[301], label64[70];
	unsigned long minted0, hits0, minted, hits;
	size_t count0, i;
	const char *err;

	ca_stats(f->ca, &minted0, &hits0);
	count0 = ca_cache_count(f->ca);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		if (ca_leaf_get(f->ca, bad[i], &err) != NULL)
			print_error("accepted: \"%s\"\n", bad[i]);
		assert_null(ca_leaf_get(f->ca, bad[i], &err));
		assert_string_equal(err, "host name is not canonical");
	}
	memset(longname, 'a', 300);
	for (i = 50; i < 300; i += 50)
		longname[i] = '.';
	longname[300] = '\0';
	err = NULL;
	assert_null(ca_leaf_get(f->ca, longname, &err));
	assert_non_null(err);
	/* A 64-byte label. */
	memset(label64, 'a', 64);
	memcpy(label64 + 64, ".com", 5);
	assert_null(ca_leaf_get(f->ca, label64, &err));
	assert_null(ca_leaf_get(f->ca, NULL, &err));

	assert_int_equal(ERR_peek_error(), 0);
	ca_stats(f->ca, &minted, &hits);
	assert_int_equal(minted, minted0);
	assert_int_equal(hits, hits0);
	assert_int_equal(ca_cache_count(f->ca), count0);
}

static void
test_leaf_hit(void **state)
{
	struct fixture *f = *state;
	unsigned long m0, h0, m1, h1;
	const char *err = NULL;
	X509 *a, *b;

	ca_stats(f->ca, &m0, &h0);
	a = ca_leaf_get(f->ca, "hit.example", &err);
	b = ca_leaf_get(f->ca, "hit.example", &err);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	ca_stats(f->ca, &m1, &h1);
	assert_int_equal(m1, m0 + 1);
	assert_int_equal(h1, h0 + 1);
	X509_free(a);
	X509_free(b);
}

static void
test_leaf_capped_by_ca_expiry(void **state)
{
	struct fixture *f = *state;
	const char *err = NULL;
	struct ca *ca = ca_load(f->dir, 4, &err);
	time_t now = time(NULL);
	X509 *leaf;

	assert_non_null(ca);
	/* Pretend the CA expires in 2 days: the leaf must stop there too. */
	ca->not_after = now + 2 * 86400;
	leaf = ca_leaf_get(ca, "short.example", &err);
	assert_non_null(leaf);
	assert_true(asn1_secs(X509_get0_notAfter(leaf)) == ca->not_after);
	X509_free(leaf);
	/* An expired CA mints nothing. */
	ca->not_after = now - 1;
	err = NULL;
	assert_null(ca_leaf_get(ca, "late.example", &err));
	assert_string_equal(err, "CA certificate has expired");
	ca_destroy(ca);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaf_kinds),
		cmocka_unit_test(test_leaf_long_name),
		cmocka_unit_test(test_leaf_not_for_other_names),
		cmocka_unit_test(test_leaf_openssl_cli),
		cmocka_unit_test(test_leaf_tls_handshake),
		cmocka_unit_test(test_leaf_serials_distinct),
		cmocka_unit_test(test_leaf_invalid_names),
		cmocka_unit_test(test_leaf_hit),
		cmocka_unit_test(test_leaf_capped_by_ca_expiry),
	};

	return cmocka_run_group_tests(tests, group_setup, ca_fixture_teardown);
}
