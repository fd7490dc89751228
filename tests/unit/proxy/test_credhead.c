/*
 * test_credhead.c - the head that leaves (proxy/cred/credhead.c): the places of a
 * rendered head, which occurrences are offered for substitution, what is
 * refused (the method, the path, a header name, a query key, an encoded
 * placeholder in a bound place), case changes left alone, and the rendering:
 * a header value as it is, a query value percent-encoded, a Basic credential
 * re-encoded, grpc-accept-encoding dropped.  The values here are fake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <openssl/evp.h>
#include "common/sluice.h"
#include "proxy/cred/credhead.h"
#include "secrets/secrets.h"

#define PH "sluice_ph_UnitPlaceH0lder0123456789abcdef"
#define VAL "v&l=1 x/%"

struct seen {
	char refused[64];
	int encoded;
	int nfound;
};

/* Bound: header:authorization, query:key, basic (sub 0 for all). */
static int
found(void *arg, size_t i, enum credhead_kind kind, const char *place, int encoded, size_t *sub)
{
	struct seen *s = arg;

	(void)i;
	(void)kind;
	s->nfound++;
	if (!encoded && (strcmp(place, "header:authorization") == 0 || strcmp(place, "query:key") == 0 ||
	                 strcmp(place, "basic") == 0)) {
		*sub = 0;
		return 0;
	}
	snprintf(s->refused, sizeof(s->refused), "%s", place);
	s->encoded = encoded;
	return -1;
}

static int
plan(const char *head, struct credhead_plan *pl, struct seen *s)
{
	const char *ph = PH;
	size_t len = strlen(PH);
	struct credhead_needles nd = {&ph, &len, 1};

	memset(s, 0, sizeof(*s));
	return credhead_plan(head, strlen(head), &nd, found, s, pl);
}

static char *
render(const char *head, const struct credhead_plan *pl, int basic, unsigned flags, char **bph)
{
	struct credhead_sub sub = {PH, strlen(PH), (const uint8_t *)VAL, strlen(VAL), basic};
	struct evbuffer *out = evbuffer_new();
	struct secret_buf *b = NULL;
	size_t n;
	char *s;

	assert_int_equal(credhead_render(head, strlen(head), pl, &sub, 1, flags, out, &b, bph), 0);
	n = evbuffer_get_length(out);
	s = malloc(n + 1);
	evbuffer_remove(out, s, n);
	s[n] = '\0';
	evbuffer_free(out);
	secret_buf_free(b);
	return s;
}

static void
test_bound(void **st)
{
	const char *head = "GET /a?x=1&key=" PH "&b=2 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer " PH "\r\n"
	                   "grpc-accept-encoding: gzip\r\n\r\n";
	struct credhead_plan pl;
	struct seen s;
	char *out;

	(void)st;
	assert_int_equal(plan(head, &pl, &s), 0);
	assert_int_equal(pl.nspan, 2);
	assert_int_equal(pl.span[0].enc, CREDHEAD_ENC_PCT);
	assert_int_equal(pl.span[1].enc, CREDHEAD_ENC_RAW);
	out = render(head, &pl, 0, CREDHEAD_DROP_GRPC_ENCODING, NULL);
	assert_string_equal(out, "GET /a?x=1&key=v%26l%3D1%20x%2F%25&b=2 HTTP/1.1\r\nHost: h\r\n"
	                         "Authorization: Bearer " VAL "\r\n\r\n");
	free(out);
	credhead_plan_free(&pl);
	/* a query value percent-decoded once; the key too */
	head = "GET /a?%6Bey=%73luice_ph_UnitPlaceH0lder0123456789abcdef HTTP/1.1\r\n\r\n";
	assert_int_equal(plan(head, &pl, &s), 0);
	assert_int_equal(pl.nspan, 1);
	out = render(head, &pl, 0, 0, NULL);
	assert_string_equal(out, "GET /a?%6Bey=v%26l%3D1%20x%2F%25 HTTP/1.1\r\n\r\n");
	free(out);
	credhead_plan_free(&pl);
}

static void
test_basic(void **st)
{
	char head[512], tok[128], want[512], *out, *bph = NULL;
	struct credhead_plan pl;
	struct seen s;

	(void)st;
	EVP_EncodeBlock((unsigned char *)tok, (const unsigned char *)"u:" PH, (int)strlen("u:" PH));
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", tok);
	assert_int_equal(plan(head, &pl, &s), 0);
	assert_int_equal(pl.nspan, 1);
	assert_int_equal(pl.span[0].enc, CREDHEAD_ENC_BASIC);
	out = render(head, &pl, 1, 0, &bph);
	EVP_EncodeBlock((unsigned char *)tok, (const unsigned char *)"u:" VAL, (int)strlen("u:" VAL));
	snprintf(want, sizeof(want), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", tok);
	assert_string_equal(out, want);
	assert_string_equal(bph, "u:" PH);
	free(out);
	free(bph);
	credhead_plan_free(&pl);
}

static void
test_refused(void **st)
{
	static const struct {
		const char *head, *place;
		int encoded;
	} cases[] = {
		{PH " / HTTP/1.1\r\n\r\n", "method", 1},
		{"GET /x/" PH " HTTP/1.1\r\n\r\n", "path", 1},
		{"GET /x/%73luice_ph_UnitPlaceH0lder0123456789abcdef HTTP/1.1\r\n\r\n", "path", 1},
		{"GET /?" PH "=1 HTTP/1.1\r\n\r\n", "query key", 1},
		{"GET /?q=" PH " HTTP/1.1\r\n\r\n", "query:q", 0},
		{"GET / HTTP/1.1\r\nX-Leak-" PH ": 1\r\nAuthorization: Bearer " PH "\r\n\r\n", "header name", 1},
		{"GET / HTTP/1.1\r\nX-Note: " PH "\r\n\r\n", "header:x-note", 0},
		/* bound, but encoded there: base64 of the placeholder as the token */
		{"GET / HTTP/1.1\r\nAuthorization: Bearer c2x1aWNlX3BoX1VuaXRQbGFjZUgwbGRlcjAxMjM0NTY3ODlhYmNkZWY=\r\n\r\n",
		 "header:authorization", 1},
		/* a second, %-encoded one beside a bound one in the same value */
		{"GET / HTTP/1.1\r\nAuthorization: Bearer " PH " %73luice_ph_UnitPlaceH0lder0123456789abcdef\r\n\r\n",
		 "header:authorization", 1},
		/* double-encoded in the bound query value: the upstream decodes once, so this is not the placeholder
		   to it, but it is one decoding away: refused */
		{"GET /?key=%2573luice_ph_UnitPlaceH0lder0123456789abcdef HTTP/1.1\r\n\r\n", "query:key", 1},
	};
	struct credhead_plan pl;
	struct seen s;
	size_t i;

	(void)st;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(plan(cases[i].head, &pl, &s), -1);
		assert_string_equal(s.refused, cases[i].place);
		assert_int_equal(s.encoded, cases[i].encoded);
		credhead_plan_free(&pl);
	}
}

static void
test_case_change(void **st)
{
	const char *head = "GET /x/Sluice_ph_UnitPlaceH0lder0123456789abcdef?key=sluice_ph_unitplaceh0lder0123456789abcdef "
	                   "HTTP/1.1\r\nAuthorization: Bearer SLUICE_PH_UNITPLACEH0LDER0123456789ABCDEF\r\n\r\n";
	struct credhead_plan pl;
	struct seen s;

	(void)st;
	assert_int_equal(plan(head, &pl, &s), 0);
	assert_int_equal(pl.nspan, 0);
	assert_int_equal(s.nfound, 0);
	credhead_plan_free(&pl);
	assert_int_equal(plan("no request line", &pl, &s), SLUICE_EINVAL);
	credhead_plan_free(&pl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_case_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
