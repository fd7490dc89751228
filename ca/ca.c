/*
 * ca/ca.c - creating, showing and loading the gateway's CA, and the public
 * leaf entry point.
 *
 * The CA key is only ever written through a file created 0600 (O_EXCL, or
 * truncated and fchmod'ed before a byte is written when forced, never through
 * a symlink), and every buffer that held it in PEM form is wiped.  The key and
 * certificate are built in memory before either file is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/bio.h>
#include <openssl/buffer.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "ca_int.h"
#include "common/host.h"
#include "common/log.h"
#include "common/sluice.h"

#define CA_HOSTNAME_MAX 40  /* of the CN "Sluice CA <host> <YYYY-MM-DD>" */

static int
join_path(char *out, size_t cap, const char *dir, const char *file)
{
	int n = snprintf(out, cap, "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= cap)
		return SLUICE_ETOOBIG;
	return 0;
}

/* The CA's CN: "Sluice CA <hostname> <YYYY-MM-DD>", printable ASCII only. */
static void
ca_common_name(char *out, size_t cap, time_t now)
{
	char host[HOST_NAME_MAX + 1], date[16];
	struct tm tm;
	size_t i;

	if (gethostname(host, sizeof(host)) == -1)
		memcpy(host, "localhost", sizeof("localhost"));
	host[HOST_NAME_MAX] = '\0';
	host[CA_HOSTNAME_MAX] = '\0';  /* keeps the CN within 64 bytes */
	for (i = 0; host[i] != '\0'; i++) {
		if (host[i] <= ' ' || host[i] > '~')
			host[i] = '_';
	}
	if (gmtime_r(&now, &tm) == NULL || strftime(date, sizeof(date), "%Y-%m-%d", &tm) == 0)
		memcpy(date, "unknown", sizeof("unknown"));
	snprintf(out, cap, "Sluice CA %s %s", host, date);
}

static int
add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok;

	if (ext == NULL)
		return SLUICE_ETLS;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : SLUICE_ETLS;
}

/* A self-signed CA certificate for <key>. */
static X509 *
make_ca_cert(EVP_PKEY *key)
{
	char cn[CA_CN_MAX + 1];
	X509V3_CTX ctx;
	X509 *x;
	time_t now = time(NULL);

	if ((x = X509_new()) == NULL)
		return NULL;
	ca_common_name(cn, sizeof(cn), now);
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_serial_set_random(x) != 0)
		goto fail;
	if (X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName,
	                               MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
		goto fail;
	if (X509_time_adj_ex(X509_getm_notBefore(x), 0, -CA_BACKDATE_SECS, &now) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), CA_VALID_DAYS, 0, &now) == NULL)
		goto fail;
	if (X509_set_pubkey(x, key) != 1)
		goto fail;
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	/* SKI first: the AKI's keyid is taken from the issuer's (our own) SKI. */
	if (add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") != 0 ||
	    add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") != 0 ||
	    add_ext(x, &ctx, NID_subject_key_identifier, "hash") != 0 ||
	    add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") != 0)
		goto fail;
	if (X509_sign(x, key, EVP_sha256()) <= 0)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

/*
 * Writes <len> bytes to <path>, created with <mode> (and re-set to <mode>
 * with fchmod before the first byte, whatever the umask or an old file's
 * mode).  Without <force> the file must not exist.  Never follows a symlink.
 */
static int
write_file(const char *path, const void *buf, size_t len, mode_t mode, int force,
           const char **err)
{
	const char *p = buf;
	int fd, flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	ssize_t n;

	flags |= force ? O_TRUNC : O_EXCL;
	fd = open(path, flags, mode);
	if (fd == -1) {
		if (errno == EEXIST) {
			*err = "CA file already exists (use --force to replace it)";
			return SLUICE_EEXIST;
		}
		*err = "cannot create CA file";
		return SLUICE_EIO;
	}
	if (fchmod(fd, mode) == -1) {
		*err = "cannot set CA file mode";
		goto fail;
	}
	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			*err = "cannot write CA file";
			goto fail;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) == -1) {
		*err = "cannot sync CA file";
		goto fail;
	}
	if (close(fd) == -1) {
		*err = "cannot close CA file";
		return SLUICE_EIO;
	}
	return 0;
fail:
	close(fd);
	return SLUICE_EIO;
}

/* Serialises <key> to PEM and writes it to <path>; wipes the PEM buffer. */
static int
write_key(const char *path, EVP_PKEY *key, int force, const char **err)
{
	BIO *bio = BIO_new(BIO_s_mem());
	BUF_MEM *mem = NULL;
	int ret;

	if (bio == NULL || PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1 ||
	    BIO_get_mem_ptr(bio, &mem) != 1 || mem == NULL) {
		*err = "cannot encode the CA key";
		ret = SLUICE_ETLS;
		goto out;
	}
	ret = write_file(path, mem->data, mem->length, 0600, force, err);
out:
	if (mem != NULL && mem->data != NULL)
		OPENSSL_cleanse(mem->data, mem->max);
	BIO_free(bio);
	return ret;
}

static int
write_cert(const char *path, X509 *cert, int force, const char **err)
{
	BIO *bio = BIO_new(BIO_s_mem());
	BUF_MEM *mem = NULL;
	int ret;

	if (bio == NULL || PEM_write_bio_X509(bio, cert) != 1 ||
	    BIO_get_mem_ptr(bio, &mem) != 1 || mem == NULL) {
		*err = "cannot encode the CA certificate";
		ret = SLUICE_ETLS;
		goto out;
	}
	/* Public: sandboxes and the launcher read it. */
	ret = write_file(path, mem->data, mem->length, 0644, force, err);
out:
	BIO_free(bio);
	return ret;
}

int
ca_init_dir(const char *dir, int force, const char **err)
{
	char keypath[CA_PATH_MAX], certpath[CA_PATH_MAX];
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	struct stat st;
	int ret;

	*err = NULL;
	if (join_path(keypath, sizeof(keypath), dir, CA_KEY_FILE) != 0 ||
	    join_path(certpath, sizeof(certpath), dir, CA_CERT_FILE) != 0) {
		*err = "CA directory path too long";
		return SLUICE_ETOOBIG;
	}
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		*err = "cannot create CA directory";
		return SLUICE_EIO;
	}
	if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode)) {
		*err = "CA directory is not a directory";
		return SLUICE_EIO;
	}
	/* Check both before writing either, so a refusal leaves nothing behind. */
	if (!force && (lstat(keypath, &st) == 0 || lstat(certpath, &st) == 0)) {
		*err = "CA file already exists (use --force to replace it)";
		return SLUICE_EEXIST;
	}

	/* Everything is built in memory first: a failure keeps any old CA intact. */
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (key == NULL) {
		*err = "cannot generate the CA key";
		ret = SLUICE_ETLS;
		goto out;
	}
	if ((cert = make_ca_cert(key)) == NULL) {
		*err = "cannot build the CA certificate";
		ret = SLUICE_ETLS;
		goto out;
	}
	if ((ret = write_key(keypath, key, force, err)) != 0)
		goto out;
	if ((ret = write_cert(certpath, cert, force, err)) != 0) {
		/* Do not leave a key without its certificate. */
		unlink(keypath);
		goto out;
	}
	ret = 0;
out:
	X509_free(cert);
	EVP_PKEY_free(key);
	if (ret != 0)
		ERR_clear_error();
	return ret;
}

/*
 * Reads at most CA_FILE_MAX bytes of <path> into a new buffer (NUL added)
 * that the caller wipes and frees.  <st> receives the file's status.
 */
static int
read_file(const char *path, char **out, size_t *outlen, struct stat *st, const char **err)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		*err = errno == ENOENT ? "CA file not found (run `sluice ca init`)"
		                       : "cannot open CA file";
		return errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
	}
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode)) {
		*err = "CA file is not a regular file";
		close(fd);
		return SLUICE_EIO;
	}
	if ((buf = try_malloc(CA_FILE_MAX + 1)) == NULL) {
		*err = "out of memory";
		close(fd);
		return SLUICE_ENOMEM;
	}
	for (;;) {
		n = read(fd, buf + len, CA_FILE_MAX + 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			*err = "cannot read CA file";
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CA_FILE_MAX) {
			*err = "CA file too large";
			goto fail;
		}
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
fail:
	sluice_wipe(buf, CA_FILE_MAX + 1);
	free(buf);
	close(fd);
	return SLUICE_EIO;
}

/*
 * <out> (PATH_MAX bytes) = the absolute path of <dir>/ca.pem.  The directory
 * is resolved, not ca.pem itself: if ca.pem is a symlink that gets rotated,
 * sandboxes must keep trusting the name, not the current target.
 */
static int
absolute_cert_path(const char *dir, char *out, const char **err)
{
	char absdir[PATH_MAX];

	if (realpath(dir, absdir) == NULL) {
		*err = "cannot resolve the CA directory";
		return SLUICE_EIO;
	}
	if (join_path(out, PATH_MAX, absdir, CA_CERT_FILE) != 0) {
		*err = "CA directory path too long";
		return SLUICE_ETOOBIG;
	}
	return 0;
}

static int
load_cert(const char *dir, char *abspath, X509 **out, const char **err)
{
	char path[CA_PATH_MAX], *buf = NULL;
	struct stat st;
	size_t len;
	BIO *bio;
	int ret;

	*out = NULL;
	if (join_path(path, sizeof(path), dir, CA_CERT_FILE) != 0) {
		*err = "CA directory path too long";
		return SLUICE_ETOOBIG;
	}
	if ((ret = read_file(path, &buf, &len, &st, err)) != 0)
		return ret;
	ret = SLUICE_EIO;
	if (abspath != NULL && absolute_cert_path(dir, abspath, err) != 0)
		goto out;
	ret = SLUICE_ENOMEM;
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		*err = "out of memory";
		goto out;
	}
	*out = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	ret = 0;
	if (*out == NULL) {
		*err = "cannot parse the CA certificate (ca.pem)";
		ret = SLUICE_EPARSE;
	}
out:
	free(buf);
	return ret;
}

/* Refuses to prompt: an encrypted key is an error, not a tty read. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

static EVP_PKEY *
load_key(const char *dir, const char **err)
{
	char path[CA_PATH_MAX], *buf = NULL;
	struct stat st;
	size_t len = 0;
	BIO *bio;
	EVP_PKEY *key = NULL;

	if (join_path(path, sizeof(path), dir, CA_KEY_FILE) != 0) {
		*err = "CA directory path too long";
		return NULL;
	}
	if (read_file(path, &buf, &len, &st, err) != 0)
		return NULL;
	if ((st.st_mode & 077) != 0)
		log_warnx("ca: %s is readable by group or others (mode %03o); chmod 600 it",
		          path, (unsigned)(st.st_mode & 0777));
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		*err = "out of memory";
		goto out;
	}
	key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	if (key == NULL)
		*err = "cannot parse the CA key (ca.key; encrypted keys are not supported)";
out:
	sluice_wipe(buf, CA_FILE_MAX + 1);
	free(buf);
	return key;
}

static void
print_time(FILE *out, const char *label, const ASN1_TIME *t)
{
	char buf[32];
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (ASN1_TIME_to_tm(t, &tm) != 1 || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		memcpy(buf, "invalid", sizeof("invalid"));
	fprintf(out, "%s%s\n", label, buf);
}

int
ca_show(const char *dir, FILE *out, const char **err)
{
	char abspath[PATH_MAX], subject[512];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	X509 *cert;
	BIO *bio = NULL;
	int n, ret = SLUICE_ETLS;

	*err = NULL;
	if ((ret = load_cert(dir, abspath, &cert, err)) != 0) {
		ERR_clear_error();
		return ret;
	}
	ret = SLUICE_ETLS;
	if (X509_digest(cert, EVP_sha256(), md, &mdlen) != 1) {
		*err = "cannot compute the CA fingerprint";
		goto out;
	}
	if ((bio = BIO_new(BIO_s_mem())) == NULL ||
	    X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) < 0) {
		*err = "cannot print the CA subject";
		goto out;
	}
	n = BIO_read(bio, subject, sizeof(subject) - 1);
	subject[n > 0 ? n : 0] = '\0';

	fputs("fingerprint: SHA256 ", out);
	for (i = 0; i < mdlen; i++)
		fprintf(out, "%s%02X", i ? ":" : "", md[i]);
	fputc('\n', out);
	fprintf(out, "subject: %s\n", subject);
	print_time(out, "not before: ", X509_get0_notBefore(cert));
	print_time(out, "not after:  ", X509_get0_notAfter(cert));
	fprintf(out, "trust this: %s\n", abspath);
	if (fflush(out) == EOF || ferror(out)) {
		*err = "cannot write output";
		ret = SLUICE_EIO;
		goto out;
	}
	ret = 0;
out:
	BIO_free(bio);
	X509_free(cert);
	if (ret != 0)
		ERR_clear_error();
	return ret;
}

struct ca *
ca_load(const char *dir, size_t cache_size, const char **err)
{
	struct ca *ca;
	time_t now = time(NULL);

	*err = NULL;
	ca = xcalloc(1, sizeof(*ca));
	atomic_init(&ca->minted, 0);
	atomic_init(&ca->hits, 0);
	if (load_cert(dir, NULL, &ca->cert, err) != 0)
		goto fail;
	if ((ca->key = load_key(dir, err)) == NULL)
		goto fail;
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		*err = "CA key does not match the CA certificate";
		goto fail;
	}
	if (EVP_PKEY_get_base_id(ca->key) != EVP_PKEY_EC &&
	    EVP_PKEY_get_base_id(ca->key) != EVP_PKEY_RSA) {
		*err = "CA key must be EC or RSA (leaves are signed with SHA-256)";
		goto fail;
	}
	/* 1: basicConstraints CA:TRUE (and keyCertSign if keyUsage is present). */
	if (X509_check_ca(ca->cert) != 1) {
		*err = "ca.pem is not a CA certificate";
		goto fail;
	}
	if (ca_asn1_time_get(X509_get0_notAfter(ca->cert), &ca->not_after) != 0) {
		*err = "CA certificate has an invalid notAfter";
		goto fail;
	}
	if (ca->not_after <= now) {
		*err = "CA certificate has expired";
		goto fail;
	}
	if ((ca->leaf_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL) {
		*err = "cannot generate the leaf key";
		goto fail;
	}
	if (ca_leaf_setup(ca, err) != 0)
		goto fail;
	if ((ca->lru = ca_lru_create(cache_size ? cache_size : CA_CACHE_DEFAULT)) == NULL) {
		*err = "cannot create the leaf cache";
		goto fail;
	}
	return ca;
fail:
	ca_destroy(ca);
	ERR_clear_error();  /* *err says why; leave no stale queue for SSL_get_error() */
	return NULL;
}

void
ca_destroy(struct ca *ca)
{
	if (ca == NULL)
		return;
	ca_lru_destroy(ca->lru);
	X509_EXTENSION_free(ca->ext_bc);
	X509_EXTENSION_free(ca->ext_ku);
	X509_EXTENSION_free(ca->ext_eku);
	X509_EXTENSION_free(ca->ext_ski);
	X509_EXTENSION_free(ca->ext_aki);
	EVP_PKEY_free(ca->leaf_pub);
	EVP_PKEY_free(ca->leaf_key);
	EVP_PKEY_free(ca->key);
	X509_free(ca->cert);
	free(ca);
}

X509 *
ca_leaf_get(struct ca *ca, const char *name, const char **err)
{
	X509 *cert;
	int hit = 0;

	/*
	 * The name comes from the sandbox (SNI, CONNECT).  Refuse anything not
	 * canonical before it gets near a certificate: no second SAN, no
	 * look-alike spelling, no unbounded cache key (certificate injection;
	 * see the SNI check in haproxy's ssl_gencert.c).
	 */
	if (name == NULL || strnlen(name, HOST_MAX + 1) > HOST_MAX ||
	    host_is_canonical(name) != 1) {
		*err = "host name is not canonical";
		return NULL;
	}
	cert = ca_lru_get(ca->lru, name, ca_leaf_mint, ca, &hit, err);
	if (cert != NULL && hit)
		atomic_fetch_add(&ca->hits, 1);
	return cert;
}

EVP_PKEY *
ca_leaf_key(const struct ca *ca)
{
	return ca->leaf_key;
}

X509 *
ca_cert(const struct ca *ca)
{
	return ca->cert;
}

size_t
ca_cache_count(struct ca *ca)
{
	return ca_lru_count(ca->lru);
}

size_t
ca_cache_capacity(const struct ca *ca)
{
	return ca_lru_capacity(ca->lru);
}

void
ca_stats(struct ca *ca, unsigned long *minted, unsigned long *hits)
{
	if (minted != NULL)
		*minted = atomic_load(&ca->minted);
	if (hits != NULL)
		*hits = atomic_load(&ca->hits);
}
