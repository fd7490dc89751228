/*
 * ca/leaf.c - minting leaf certificates for host names.
 *
 * Every leaf carries the same public key (the shared leaf key), so the parts
 * that depend only on keys (SKI, AKI) and the fixed policy extensions are
 * built once at load; a mint only adds the name, serial and validity.
 *
 * The name must already be canonical (ca_leaf_get checks it): nothing from
 * the sandbox reaches a certificate without passing host_is_canonical, and
 * the SAN is built as a GENERAL_NAME, never through the "DNS:a,b" config
 * syntax, so no name can smuggle in a second SAN entry.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca_int.h"
#include "common/host.h"
#include "common/sluice.h"

int
ca_asn1_time_get(const ASN1_TIME *t, time_t *out)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return SLUICE_EINVAL;
	*out = timegm(&tm);
	return 0;
}

int
ca_serial_set_random(X509 *x)
{
	unsigned char buf[CA_SERIAL_BYTES];
	BIGNUM *bn = NULL;
	ASN1_INTEGER *ai = NULL;
	int ret = SLUICE_ETLS, i, nonzero;

	do {
		if (RAND_bytes(buf, sizeof(buf)) != 1)
			goto out;
		buf[0] &= 0x7f;  /* positive, and at most 16 bytes encoded */
		nonzero = 0;
		for (i = 0; i < CA_SERIAL_BYTES; i++)
			nonzero |= buf[i];
	} while (!nonzero);
	if ((bn = BN_bin2bn(buf, sizeof(buf), NULL)) == NULL)
		goto out;
	if ((ai = BN_to_ASN1_INTEGER(bn, NULL)) == NULL)
		goto out;
	if (X509_set_serialNumber(x, ai) != 1)
		goto out;
	ret = 0;
out:
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return ret;
}

/* SHA-1 of the subjectPublicKey bits of <pkey> (RFC 5280 4.2.1.2 method 1). */
static ASN1_OCTET_STRING *
key_id(EVP_PKEY *pkey)
{
	X509_PUBKEY *pub = NULL;
	ASN1_OCTET_STRING *id = NULL;
	const unsigned char *bits;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int bitslen;

	if (X509_PUBKEY_set(&pub, pkey) != 1)
		goto out;
	if (X509_PUBKEY_get0_param(NULL, &bits, &bitslen, NULL, pub) != 1)
		goto out;
	if (EVP_Digest(bits, (size_t)bitslen, md, &mdlen, EVP_sha1(), NULL) != 1)
		goto out;
	if ((id = ASN1_OCTET_STRING_new()) == NULL)
		goto out;
	if (ASN1_OCTET_STRING_set(id, md, (int)mdlen) != 1) {
		ASN1_OCTET_STRING_free(id);
		id = NULL;
	}
out:
	X509_PUBKEY_free(pub);
	return id;
}

/*
 * OpenSSL 3.0 encodes a provider key into a certificate through the encoder
 * framework, about 250 us per X509_set_pubkey, ten times the signature.  A
 * public-only copy of the leaf key in the built-in EC type is encoded
 * directly; every leaf carries that copy (it compares equal to the leaf key,
 * so SSL_use_PrivateKey accepts the pair).  Built from the curve parameters
 * and the encoded point, with non-deprecated calls only.
 */
static EVP_PKEY *
builtin_public_copy(EVP_PKEY *key)
{
	unsigned char *params = NULL, *point = NULL;
	const unsigned char *p;
	EVP_PKEY *pub = NULL;
	size_t pointlen;
	int plen;

	plen = i2d_KeyParams(key, &params);
	pointlen = EVP_PKEY_get1_encoded_public_key(key, &point);
	if (plen <= 0 || pointlen == 0)
		goto out;
	p = params;
	if ((pub = d2i_KeyParams(EVP_PKEY_EC, NULL, &p, plen)) == NULL)
		goto out;
	p = point;
	if (d2i_PublicKey(EVP_PKEY_EC, &pub, &p, (long)pointlen) == NULL ||
	    EVP_PKEY_eq(pub, key) != 1) {
		EVP_PKEY_free(pub);
		pub = NULL;
	}
out:
	OPENSSL_free(params);
	OPENSSL_free(point);
	return pub;
}

int
ca_leaf_setup(struct ca *ca, const char **err)
{
	const ASN1_OCTET_STRING *ca_skid;
	ASN1_OCTET_STRING *ski = NULL, *ca_kid = NULL;
	AUTHORITY_KEYID *akid = NULL;
	int ret = SLUICE_ETLS;

	if ((ca->leaf_pub = builtin_public_copy(ca->leaf_key)) == NULL) {
		*err = "cannot prepare the leaf public key";
		goto out;
	}
	ca->ext_bc = X509V3_EXT_conf_nid(NULL, NULL, NID_basic_constraints,
	                                 "critical,CA:FALSE");
	ca->ext_ku = X509V3_EXT_conf_nid(NULL, NULL, NID_key_usage,
	                                 "critical,digitalSignature");
	ca->ext_eku = X509V3_EXT_conf_nid(NULL, NULL, NID_ext_key_usage, "serverAuth");
	if (ca->ext_bc == NULL || ca->ext_ku == NULL || ca->ext_eku == NULL) {
		*err = "cannot build leaf extensions";
		goto out;
	}
	if ((ski = key_id(ca->leaf_key)) == NULL) {
		*err = "cannot compute the leaf key identifier";
		goto out;
	}
	ca->ext_ski = X509V3_EXT_i2d(NID_subject_key_identifier, 0, ski);

	/* The AKI names the CA's SKI; a CA without one gets the RFC 5280 hash. */
	ca_skid = X509_get0_subject_key_id(ca->cert);
	if (ca_skid != NULL)
		ca_kid = ASN1_OCTET_STRING_dup(ca_skid);
	else
		ca_kid = key_id(X509_get0_pubkey(ca->cert));
	if (ca_kid == NULL || (akid = AUTHORITY_KEYID_new()) == NULL) {
		*err = "cannot compute the CA key identifier";
		goto out;
	}
	akid->keyid = ca_kid;
	ca_kid = NULL;
	ca->ext_aki = X509V3_EXT_i2d(NID_authority_key_identifier, 0, akid);
	if (ca->ext_ski == NULL || ca->ext_aki == NULL) {
		*err = "cannot build key identifier extensions";
		goto out;
	}
	ret = 0;
out:
	AUTHORITY_KEYID_free(akid);
	ASN1_OCTET_STRING_free(ca_kid);
	ASN1_OCTET_STRING_free(ski);
	return ret;
}

/* Adds subjectAltName DNS:<name>, or IP:<name> for an IPv4/IPv6 literal. */
static int
add_san(X509 *x, const char *name)
{
	unsigned char addr[sizeof(struct in6_addr)];
	GENERAL_NAMES *gens = NULL;
	GENERAL_NAME *gen = NULL;
	ASN1_OCTET_STRING *ip = NULL;
	ASN1_IA5STRING *dns = NULL;
	int alen = 0, ret = SLUICE_ETLS;

	if (inet_pton(AF_INET, name, addr) == 1)
		alen = 4;
	else if (inet_pton(AF_INET6, name, addr) == 1)
		alen = 16;

	if ((gens = GENERAL_NAMES_new()) == NULL || (gen = GENERAL_NAME_new()) == NULL)
		goto out;
	if (alen > 0) {
		if ((ip = ASN1_OCTET_STRING_new()) == NULL ||
		    ASN1_OCTET_STRING_set(ip, addr, alen) != 1)
			goto out;
		GENERAL_NAME_set0_value(gen, GEN_IPADD, ip);
		ip = NULL;
	} else {
		if ((dns = ASN1_IA5STRING_new()) == NULL ||
		    ASN1_STRING_set(dns, name, (int)strlen(name)) != 1)
			goto out;
		GENERAL_NAME_set0_value(gen, GEN_DNS, dns);
		dns = NULL;
	}
	if (sk_GENERAL_NAME_push(gens, gen) <= 0)
		goto out;
	gen = NULL;
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1)
		goto out;
	ret = 0;
out:
	ASN1_IA5STRING_free(dns);
	ASN1_OCTET_STRING_free(ip);
	GENERAL_NAME_free(gen);
	GENERAL_NAMES_free(gens);
	return ret;
}

/* Subject: CN=<name>, cut to the 64 bytes RFC 5280 allows (the SAN is what counts). */
static int
set_subject(X509 *x, const char *name)
{
	X509_NAME *subj = X509_get_subject_name(x);
	size_t len = strlen(name);

	if (len > CA_CN_MAX)
		len = CA_CN_MAX;
	if (X509_NAME_add_entry_by_NID(subj, NID_commonName, MBSTRING_ASC,
	                               (const unsigned char *)name, (int)len, -1, 0) != 1)
		return SLUICE_ETLS;
	return 0;
}

X509 *
ca_leaf_mint(void *arg, const char *name, const char **err)
{
	struct ca *ca = arg;
	X509 *x = NULL, *ret = NULL;
	time_t now = time(NULL), not_after;

	if (now == (time_t)-1) {
		*err = "clock unavailable";
		return NULL;
	}
	not_after = now + (time_t)CA_LEAF_DAYS * 86400;
	if (not_after > ca->not_after)
		not_after = ca->not_after;
	if (not_after <= now) {
		*err = "CA certificate has expired";
		return NULL;
	}

	*err = "cannot build the leaf certificate";
	if ((x = X509_new()) == NULL)
		goto out;
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_serial_set_random(x) != 0)
		goto out;
	if (X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
	    set_subject(x, name) != 0)
		goto out;
	if (X509_time_adj_ex(X509_getm_notBefore(x), 0, -CA_BACKDATE_SECS, &now) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), not_after) == NULL)
		goto out;
	if (X509_set_pubkey(x, ca->leaf_pub) != 1)
		goto out;
	if (X509_add_ext(x, ca->ext_bc, -1) != 1 || X509_add_ext(x, ca->ext_ku, -1) != 1 ||
	    X509_add_ext(x, ca->ext_eku, -1) != 1 || X509_add_ext(x, ca->ext_ski, -1) != 1 ||
	    X509_add_ext(x, ca->ext_aki, -1) != 1 || add_san(x, name) != 0)
		goto out;
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0) {
		*err = "cannot sign the leaf certificate";
		goto out;
	}
	/*
	 * Fill the extension cache now: the certificate is shared read-only by
	 * worker threads from here on (signing already encoded both names).
	 */
	if (X509_check_purpose(x, -1, 0) != 1)
		goto out;
	atomic_fetch_add(&ca->minted, 1);
	*err = NULL;
	ret = x;
	x = NULL;
out:
	X509_free(x);
	if (ret == NULL)
		ERR_clear_error();  /* stale errors would confuse SSL_get_error() */
	return ret;
}
