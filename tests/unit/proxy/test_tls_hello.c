/*
 * tests/unit/proxy/test_tls_hello.c - the ClientHello peeker.
 *
 * Real ClientHellos come from OpenSSL (a client on memory BIOs); malformed
 * ones are built by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "proxy/codec/tls_hello.h"

static struct tls_hello H;

/* ---- real ClientHellos ---- */

/*
 * The first flight of an OpenSSL client offering <sni> (or none) and the ALPN
 * wire list <alpn>/<alpn_len> (or none).  Returns its length in <out>.
 */
static size_t
openssl_hello(const char *sni, const unsigned char *alpn, size_t alpn_len, int max_tls12,
              uint8_t *out, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;
	BIO *rbio, *wbio;
	int n;

	assert_non_null(ctx);
	if (max_tls12)
		assert_int_equal(SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION), 1);
	ssl = SSL_new(ctx);
	assert_non_null(ssl);
	rbio = BIO_new(BIO_s_mem());
	wbio = BIO_new(BIO_s_mem());
	assert_true(rbio && wbio);
	SSL_set_bio(ssl, rbio, wbio);
	SSL_set_connect_state(ssl);
	if (sni)
		assert_int_equal(SSL_set_tlsext_host_name(ssl, sni), 1);
	if (alpn)
		assert_int_equal(SSL_set_alpn_protos(ssl, alpn, (unsigned)alpn_len), 0);
	assert_int_equal(SSL_do_handshake(ssl), -1);
	assert_int_equal(SSL_get_error(ssl, -1), SSL_ERROR_WANT_READ);
	n = BIO_read(wbio, out, (int)cap);
	assert_true(n > 0 && (size_t)n < cap);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

static const unsigned char ALPN_H2_H11[] = "\x02h2\x08http/1.1";

/* Re-frames the handshake bytes of the one record in <in> into records of <piece> bytes. */
static size_t
reframe(const uint8_t *in, size_t n, size_t piece, uint8_t *out)
{
	size_t hlen = ((size_t)in[3] << 8) | in[4], off = 0, o = 0, k;

	assert_int_equal(hlen + 5, n);
	while (off < hlen) {
		k = hlen - off < piece ? hlen - off : piece;
		out[o++] = 0x16;
		out[o++] = 0x03;
		out[o++] = 0x01;
		out[o++] = (uint8_t)(k >> 8);
		out[o++] = (uint8_t)k;
		memcpy(out + o, in + 5 + off, k);
		o += k;
		off += k;
	}
	return o;
}

/* Every proper prefix needs more; the whole parses to <n>. */
static void
check_prefixes(const uint8_t *buf, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++) {
		if (tls_hello_parse(buf, k, &H) != -2) {
			print_error("prefix %zu of %zu did not ask for more\n", k, n);
			fail();
		}
	}
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
}

static void
check_h2_example(void)
{
	assert_int_equal(H.has_sni, 1);
	assert_string_equal(H.sni, "api.example.com");
	assert_int_equal(H.sni_len, 15);
	assert_int_equal(H.nalpn, 2);
	assert_string_equal(H.alpn[0].name, "h2");
	assert_int_equal(H.alpn[0].len, 2);
	assert_string_equal(H.alpn[1].name, "http/1.1");
	assert_int_equal(H.alpn[1].len, 8);
}

static void
test_openssl_hello(void **state)
{
	static uint8_t buf[4096], more[4200];
	size_t n;

	(void)state;
	n = openssl_hello("api.example.com", ALPN_H2_H11, sizeof(ALPN_H2_H11) - 1, 0, buf, sizeof(buf));
	assert_int_equal(tls_hello_looks_tls(buf, n), 1);
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	check_h2_example();
	assert_int_equal(H.legacy_version, 0x0303);
	check_prefixes(buf, n);
	/* what follows the ClientHello's records is not consumed */
	memcpy(more, buf, n);
	memcpy(more + n, "\x17\x03\x03\x00\x05hello", 10);
	assert_int_equal(tls_hello_parse(more, n + 10, &H), (int)n);
	check_h2_example();
}

static void
test_openssl_hello_tls12_no_alpn(void **state)
{
	static uint8_t buf[4096];
	size_t n;

	(void)state;
	n = openssl_hello("Example.ORG", NULL, 0, 1, buf, sizeof(buf));
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	assert_int_equal(H.has_sni, 1);
	assert_string_equal(H.sni, "Example.ORG");   /* as sent */
	assert_int_equal(H.nalpn, 0);
}

static void
test_openssl_hello_no_sni(void **state)
{
	static uint8_t buf[4096];
	size_t n;

	(void)state;
	n = openssl_hello(NULL, ALPN_H2_H11, sizeof(ALPN_H2_H11) - 1, 0, buf, sizeof(buf));
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	assert_int_equal(H.has_sni, 0);
	assert_int_equal(H.sni_len, 0);
	assert_string_equal(H.sni, "");
	assert_int_equal(H.nalpn, 2);
}

static void
test_openssl_hello_long_sni_many_alpn(void **state)
{
	static uint8_t buf[4096];
	unsigned char alpn[256];
	char sni[256], want[8];
	size_t n, a = 0, i;

	(void)state;
	memset(sni, 'a', 255);
	for (i = 3; i < 255; i += 4)
		sni[i] = '.';
	sni[255] = '\0';
	for (i = 0; i < 10; i++)
		a += (size_t)snprintf((char *)alpn + a, sizeof(alpn) - a, "%cproto%zu", 6, i);
	n = openssl_hello(sni, alpn, a, 0, buf, sizeof(buf));
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	assert_int_equal(H.sni_len, 255);
	assert_string_equal(H.sni, sni);
	assert_int_equal(H.nalpn, TLS_HELLO_MAX_ALPN);
	for (i = 0; i < TLS_HELLO_MAX_ALPN; i++) {
		snprintf(want, sizeof(want), "proto%zu", i);
		assert_string_equal(H.alpn[i].name, want);
	}
}

static void
test_openssl_hello_records(void **state)
{
	static uint8_t buf[4096], framed[6 * 4096];
	size_t n, hlen, m, k;

	(void)state;
	n = openssl_hello("api.example.com", ALPN_H2_H11, sizeof(ALPN_H2_H11) - 1, 0, buf, sizeof(buf));
	hlen = n - 5;
	/* one byte of handshake per record */
	m = reframe(buf, n, 1, framed);
	assert_int_equal(m, 6 * hlen);
	check_prefixes(framed, m);
	check_h2_example();
	/* two records, split at every offset */
	for (k = 1; k < hlen; k++) {
		size_t o = 0;

		memcpy(framed, buf, 5);
		framed[3] = (uint8_t)(k >> 8);
		framed[4] = (uint8_t)k;
		memcpy(framed + 5, buf + 5, k);
		o = 5 + k;
		memcpy(framed + o, buf, 5);
		framed[o + 3] = (uint8_t)((hlen - k) >> 8);
		framed[o + 4] = (uint8_t)(hlen - k);
		memcpy(framed + o + 5, buf + 5 + k, hlen - k);
		o += 5 + hlen - k;
		assert_int_equal(tls_hello_parse(framed, o, &H), (int)o);
		check_h2_example();
		assert_int_equal(tls_hello_parse(framed, o - 1, &H), -2);
		assert_int_equal(tls_hello_parse(framed, 5 + k, &H), -2);
	}
	/* a non-handshake record between the fragments */
	m = reframe(buf, n, 100, framed);
	framed[105] = 0x15;
	assert_int_equal(tls_hello_parse(framed, m, &H), -1);
}

/* ---- built by hand ---- */

struct msg {
	uint8_t b[40000];
	size_t n;
};

static void
put(struct msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
put8(struct msg *m, unsigned v)
{
	uint8_t b = (uint8_t)v;

	put(m, &b, 1);
}

static void
put16(struct msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v);
}

static void
ext(struct msg *m, unsigned type, const void *data, size_t n)
{
	put16(m, type);
	put16(m, (unsigned)n);
	put(m, data, n);
}

/* server_name extension data: <count> entries of type <type> naming <name>. */
static size_t
sni_data(uint8_t *out, const char *name, size_t len, unsigned type, int count)
{
	size_t o = 2, i;

	for (i = 0; i < (size_t)count; i++) {
		out[o++] = (uint8_t)type;
		out[o++] = (uint8_t)(len >> 8);
		out[o++] = (uint8_t)len;
		memcpy(out + o, name, len);
		o += len;
	}
	out[0] = (uint8_t)((o - 2) >> 8);
	out[1] = (uint8_t)(o - 2);
	return o;
}

struct hello_opts {
	unsigned version;
	size_t sid_len;
	size_t cs_len;
	size_t comp_len;
	int no_ext_block;
	size_t ext_block_delta;   /* added to the declared extensions length */
	size_t after;             /* bytes inside the message after the extensions */
	size_t record_extra;      /* bytes in the record after the message */
	unsigned hs_type;
};

static const struct hello_opts DEF = {0x0303, 32, 4, 1, 0, 0, 0, 0, 1};

/* A one-record ClientHello around the extensions <exts>. */
static size_t
build(const struct hello_opts *o, const struct msg *exts, uint8_t *out)
{
	static struct msg body;
	uint8_t zero[256] = {0};
	size_t i, hs, rec;

	body.n = 0;
	put16(&body, o->version);
	put(&body, zero, 32);
	put8(&body, (unsigned)o->sid_len);
	put(&body, zero, o->sid_len);
	put16(&body, (unsigned)o->cs_len);
	for (i = 0; i < o->cs_len; i++)
		put8(&body, 0x13);
	put8(&body, (unsigned)o->comp_len);
	put(&body, zero, o->comp_len);
	if (!o->no_ext_block) {
		put16(&body, (unsigned)(exts->n + o->ext_block_delta));
		put(&body, exts->b, exts->n);
	}
	put(&body, zero, o->after);
	hs = 4 + body.n;
	rec = hs + o->record_extra;
	assert_true(rec <= 16384);
	out[0] = 0x16;
	out[1] = 0x03;
	out[2] = 0x01;
	out[3] = (uint8_t)(rec >> 8);
	out[4] = (uint8_t)rec;
	out[5] = (uint8_t)o->hs_type;
	out[6] = (uint8_t)(body.n >> 16);
	out[7] = (uint8_t)(body.n >> 8);
	out[8] = (uint8_t)body.n;
	memcpy(out + 9, body.b, body.n);
	memset(out + 9 + body.n, 0xee, o->record_extra);
	return 5 + rec;
}

static int
parse_with(const struct hello_opts *o, const struct msg *exts)
{
	static uint8_t buf[20000];
	size_t n = build(o, exts, buf);
	int r = tls_hello_parse(buf, n, &H);

	assert_true(r == (int)n || r == -1);
	return r;
}

static void
test_synthetic_good(void **state)
{
	static struct msg e;
	struct hello_opts o = DEF;
	uint8_t d[600];
	size_t n;

	(void)state;
	e.n = 0;
	n = sni_data(d, "a.b", 3, 0, 1);
	ext(&e, 0, d, n);
	ext(&e, 16, "\x00\x03\x02h2", 5);
	ext(&e, 0x1234, "", 0);
	assert_true(parse_with(&o, &e) > 0);
	assert_string_equal(H.sni, "a.b");
	assert_int_equal(H.nalpn, 1);
	assert_string_equal(H.alpn[0].name, "h2");
	/* no extensions at all, or an empty block */
	o.no_ext_block = 1;
	assert_true(parse_with(&o, &e) > 0);
	assert_int_equal(H.has_sni, 0);
	o = DEF;
	e.n = 0;
	assert_true(parse_with(&o, &e) > 0);
	/* SSLv3-era legacy version, no session id, bytes after the message in its record */
	o.version = 0x0300;
	o.sid_len = 0;
	o.record_extra = 7;
	assert_true(parse_with(&o, &e) > 0);
	assert_int_equal(H.legacy_version, 0x0300);
}

static void
test_synthetic_bad(void **state)
{
	static struct msg e;
	struct hello_opts o;
	uint8_t d[600];
	size_t n;
	char name[300];

	(void)state;
#define BAD_EXTS(...)                                  \
	do {                                               \
		o = DEF;                                       \
		e.n = 0;                                       \
		__VA_ARGS__;                                   \
		assert_int_equal(parse_with(&o, &e), -1);      \
	} while (0)
	/* duplicate extensions */
	BAD_EXTS(n = sni_data(d, "a.b", 3, 0, 1); ext(&e, 0, d, n); ext(&e, 0, d, n));
	BAD_EXTS(ext(&e, 0x1234, "", 0); ext(&e, 5, "", 0); ext(&e, 0x1234, "x", 1));
	BAD_EXTS(ext(&e, 16, "\x00\x03\x02h2", 5); ext(&e, 16, "\x00\x03\x02h2", 5));
	/* server_name */
	BAD_EXTS(n = sni_data(d, "a.b", 3, 0, 2); ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a.b", 3, 1, 1); ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "", 0, 0, 1); ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a b", 3, 0, 1); ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a\0b", 3, 0, 1); ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a\x80" "b", 3, 0, 1); ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a\x7f" "b", 3, 0, 1); ext(&e, 0, d, n));
	BAD_EXTS(ext(&e, 0, "", 0));
	BAD_EXTS(ext(&e, 0, "\x00\x00", 2));
	BAD_EXTS(n = sni_data(d, "a.b", 3, 0, 1); d[n++] = 0; ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a.b", 3, 0, 1); d[1]++; ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a.b", 3, 0, 1); d[4]++; ext(&e, 0, d, n));
	BAD_EXTS(n = sni_data(d, "a.b", 3, 0, 1); ext(&e, 0, d, n - 1));
	memset(name, 'a', sizeof(name));
	BAD_EXTS(n = sni_data(d, name, 256, 0, 1); ext(&e, 0, d, n));
	/* ALPN */
	BAD_EXTS(ext(&e, 16, "\x00\x00", 2));
	BAD_EXTS(ext(&e, 16, "", 0));
	BAD_EXTS(ext(&e, 16, "\x00\x01\x00", 3));
	BAD_EXTS(ext(&e, 16, "\x00\x04\x02h2\x00", 6));
	BAD_EXTS(ext(&e, 16, "\x00\x04\x02h2", 5));
	BAD_EXTS(ext(&e, 16, "\x00\x03\x03h2", 5));
	BAD_EXTS(ext(&e, 16, "\x00\x03\x02h2x", 6));
	/* the extension block */
	BAD_EXTS(ext(&e, 0x1234, "abc", 3); e.b[3] = 4);   /* ext longer than the block */
	BAD_EXTS(ext(&e, 0x1234, "abc", 3); put8(&e, 0));  /* a stray byte after the last ext */
	BAD_EXTS(ext(&e, 0x1234, "abc", 3); put(&e, "\0\0\0", 3));
	BAD_EXTS(ext(&e, 0x1234, "abc", 3); o.ext_block_delta = 1);
	BAD_EXTS(ext(&e, 0x1234, "abc", 3); o.after = 1);
	BAD_EXTS(o.ext_block_delta = 1);
	/* the fixed part */
	BAD_EXTS(o.version = 0x0203);
	BAD_EXTS(o.version = 0x0403);
	BAD_EXTS(o.sid_len = 33);
	BAD_EXTS(o.cs_len = 0);
	BAD_EXTS(o.cs_len = 3);
	BAD_EXTS(o.comp_len = 0);
	BAD_EXTS(o.hs_type = 2);
	BAD_EXTS(o.no_ext_block = 1; o.after = 1);
#undef BAD_EXTS
}

static void
test_records(void **state)
{
	static struct msg e;
	static uint8_t buf[20000], big[3 * 16384 + 100];
	size_t n, m;

	(void)state;
	e.n = 0;
	n = build(&DEF, &e, buf);
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	check_prefixes(buf, n);
	buf[0] = 0x17;
	assert_int_equal(tls_hello_parse(buf, n, &H), -1);
	assert_int_equal(tls_hello_parse(buf, 1, &H), -1);
	buf[0] = 0x16;
	buf[1] = 0x02;
	assert_int_equal(tls_hello_parse(buf, 2, &H), -1);
	buf[1] = 0x03;
	buf[2] = 0x05;
	assert_int_equal(tls_hello_parse(buf, 3, &H), -1);
	buf[2] = 0x04;
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	buf[2] = 0x00;
	assert_int_equal(tls_hello_parse(buf, n, &H), (int)n);
	/* record length 0, and over 2^14 */
	memcpy(big, "\x16\x03\x01\x00\x00", 5);
	assert_int_equal(tls_hello_parse(big, 5, &H), -1);
	memcpy(big, "\x16\x03\x01\x40\x01", 5);
	assert_int_equal(tls_hello_parse(big, 5, &H), -1);
	/* a handshake that claims more than TLS_HELLO_MAX_BYTES */
	memcpy(big, "\x16\x03\x01\x00\x04\x01\x00\x50\x01", 9);
	assert_int_equal(tls_hello_parse(big, 9, &H), -1);
	memcpy(big, "\x16\x03\x01\x00\x04\x01\x00\x50\x00", 9);
	assert_int_equal(tls_hello_parse(big, 9, &H), -2);
	/* records that would pass TLS_HELLO_MAX_BYTES are refused before they arrive */
	memset(big, 0, sizeof(big));
	memcpy(big, "\x16\x03\x01\x40\x00\x01\x00\x50\x00", 9);
	memcpy(big + 5 + 16384, "\x16\x03\x01\x40\x00", 5);
	assert_int_equal(tls_hello_parse(big, 5 + 16384 + 5, &H), -1);
	/* a non-ClientHello handshake type is refused at its first byte */
	memcpy(big, "\x16\x03\x01\x00\x01\x02", 6);
	assert_int_equal(tls_hello_parse(big, 6, &H), -1);
	/* garbage */
	assert_int_equal(tls_hello_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &H), -1);
	assert_int_equal(tls_hello_parse(big, 0, &H), -2);

	/* the biggest hello that fits TLS_HELLO_MAX_BYTES, in two records, and one byte more */
	for (m = 0; m < 2; m++) {
		size_t body = TLS_HELLO_MAX_BYTES - 10 - 4 + m, rec1 = 16384, rec2, o = 0;
		size_t pad = body - (2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + 4);
		uint8_t hs[TLS_HELLO_MAX_BYTES + 10];
		size_t h = 0;

		hs[h++] = 1;
		hs[h++] = (uint8_t)(body >> 16);
		hs[h++] = (uint8_t)(body >> 8);
		hs[h++] = (uint8_t)body;
		hs[h++] = 3;
		hs[h++] = 3;
		memset(hs + h, 0, 33);   /* random, empty session id */
		h += 33;
		memcpy(hs + h, "\x00\x02\x13\x01\x01\x00", 6);
		h += 6;
		hs[h++] = (uint8_t)((pad + 4) >> 8);
		hs[h++] = (uint8_t)(pad + 4);
		hs[h++] = 0;
		hs[h++] = 21;   /* padding */
		hs[h++] = (uint8_t)(pad >> 8);
		hs[h++] = (uint8_t)pad;
		memset(hs + h, 0, pad);
		h += pad;
		assert_int_equal(h, body + 4);
		rec2 = h - rec1;
		memcpy(big, "\x16\x03\x01\x40\x00", 5);
		memcpy(big + 5, hs, rec1);
		o = 5 + rec1;
		big[o] = 0x16;
		big[o + 1] = 3;
		big[o + 2] = 1;
		big[o + 3] = (uint8_t)(rec2 >> 8);
		big[o + 4] = (uint8_t)rec2;
		memcpy(big + o + 5, hs + rec1, rec2);
		o += 5 + rec2;
		assert_int_equal(o, TLS_HELLO_MAX_BYTES + m);
		assert_int_equal(tls_hello_parse(big, o, &H), m ? -1 : (int)o);
		if (!m)
			assert_int_equal(H.has_sni, 0);
	}
}

static void
test_looks_tls(void **state)
{
	(void)state;
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"\x16", 1), 1);
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"\x16\x03", 2), 1);
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"\x16\x03\x01", 3), 1);
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"\x16\x02", 2), 0);
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"\x17\x03", 2), 0);
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"GET ", 4), 0);
	assert_int_equal(tls_hello_looks_tls((const uint8_t *)"", 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openssl_hello),
		cmocka_unit_test(test_openssl_hello_tls12_no_alpn),
		cmocka_unit_test(test_openssl_hello_no_sni),
		cmocka_unit_test(test_openssl_hello_long_sni_many_alpn),
		cmocka_unit_test(test_openssl_hello_records),
		cmocka_unit_test(test_synthetic_good),
		cmocka_unit_test(test_synthetic_bad),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_looks_tls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
