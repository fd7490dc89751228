/*
 * test_credresp.c - scrubbing a response (proxy/cred/credresp.c over the
 * host's set, credscrub.c) without a gateway: the credfake.h store, a
 * response head parsed by the real parser, the decoded body put in
 * r->cred->scrub_in in two pieces split at every byte, and the bytes toward the
 * client read from a test buffer (cio_out).  Covered: the value in the head,
 * in a chunked body, in a body held whole (its new Content-Length), in a
 * gzip body whose compressed bytes are split anywhere, and in the trailers,
 * goes to the client as its placeholder; a host no secret is bound to gets
 * no set; codings that cannot be scrubbed are refused before any byte.  The
 * values here are fake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/session/session.h"
#include "proxy/h2/h2.h"
#include "proxy/codec/h1_parse.h"
#include "tests/unit/proxy/credfake.h"

static struct evbuffer *client_out;   /* cio_out(): what the client receives */

struct evbuffer *
cio_out(struct conn *c)
{
	(void)c;
	return client_out;
}

int
cred_trailers_search(struct conn *c, size_t *secret)
{
	(void)c, (void)secret;
	return 0;
}

static const struct h1_limits lim = {8192, 4096, 100};

/*
 * A response to a request of agent-1 to api.example.test: <head> parsed, its scrub set taken, the head
 * scrubbed (cred_resp_head: its return).  <whole>/<chunked>: what relay.c would have decided; <built>: the
 * head relay.c built for the client (NULL: <head> as it came).
 */
static int
response(struct cf *f, const char *head, const char *built, int whole, int chunked, struct h1_message *m)
{
	struct conn *c = cf_conn(f, "agent-1", "api.example.test", 1, "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	struct evbuffer *h = evbuffer_new();
	const char *err = NULL;

	evbuffer_drain(client_out, evbuffer_get_length(client_out));
	assert_int_equal(h1_parse_response(head, strlen(head), &lim, "GET", 3, m, &err), (int)strlen(head));
	assert_int_equal(cred_host_scrub(c), 0);
	assert_non_null(f->r.cred->hscrub);
	f->r.cred->scrub_whole = whole;
	f->r.cred->scrub_chunked = chunked;
	if (built == NULL)
		built = head;
	evbuffer_add(h, built, strlen(built));
	{
		int ret = cred_resp_head(c, h, m, client_out);

		evbuffer_free(h);
		return ret;
	}
}

static char *
client_text(void)
{
	size_t n = evbuffer_get_length(client_out);
	char *s = malloc(n + 1);

	assert_non_null(s);
	evbuffer_copyout(client_out, s, n);
	s[n] = '\0';
	return s;
}

/* The body of the chunked response <out> (after its head), its chunks joined, in place; NULL when malformed. */
static char *
unchunk(char *out)
{
	char *p = strstr(out, "\r\n\r\n"), *w, *end;
	unsigned long n;

	if (p == NULL)
		return NULL;
	w = p += 4;
	for (;;) {
		n = strtoul(p, &end, 16);
		if (end == p || strncmp(end, "\r\n", 2) != 0)
			return NULL;
		p = end + 2;
		if (n == 0)
			break;
		if (strlen(p) < n + 2 || strncmp(p + n, "\r\n", 2) != 0)
			return NULL;
		memmove(w, p, n);
		w += n;
		p += n + 2;
	}
	*w = '\0';
	return out + (strstr(out, "\r\n\r\n") - out) + 4;
}

static size_t
count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void
finish(struct cf *f)
{
	cred_scrub_cache_free(&f->w);   /* the worker's cache held a reference to the values too */
	if (f->r.resp_trailers != NULL)
		evbuffer_free(f->r.resp_trailers);
	f->r.resp_trailers = NULL;
	cf_done(f);
}

static void
test_head(void **state)
{
	struct cf *f = *state;
	struct h1_message m;
	char *out;

	assert_int_equal(response(f, "HTTP/1.1 204 No Content\r\nX-Echo: Bearer " VAL "\r\nX-Two: " VAL VAL "\r\n\r\n",
	                          NULL, 0, 0, &m), 0);
	out = client_text();
	assert_null(strstr(out, VAL));
	assert_non_null(strstr(out, "X-Echo: Bearer " PH "\r\n"));
	assert_non_null(strstr(out, "X-Two: " PH PH "\r\n"));
	assert_true(scrub_hits_has(&f->r.cred->scrub_hits, 0));   /* tag 0: secret tok */
	free(out);
	finish(f);
}

/* a chunked body with the value twice, split at every byte between two pumps */
static void
test_body_split_anywhere(void **state)
{
	static const char body[] = "{\"token\":\"" VAL "\",\"again\":\"" VAL "\"}";
	struct cf *f = *state;
	size_t cut;

	for (cut = 0; cut <= sizeof(body) - 1; cut++) {
		struct h1_message m;
		char *out;

		assert_int_equal(response(f, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", NULL, 0, 1, &m), 0);
		evbuffer_add(f->r.cred->scrub_in, body, cut);
		assert_int_equal(cred_resp_pump(&f->c, 0), 0);
		evbuffer_add(f->r.cred->scrub_in, body + cut, sizeof(body) - 1 - cut);
		assert_int_equal(cred_resp_pump(&f->c, 1), 0);
		out = client_text();
		if (strstr(out, VAL) != NULL)
			fail_msg("cut %zu: the value reached the client", cut);
		assert_non_null(strstr(out, "\r\n0\r\n\r\n"));   /* the last chunk */
		assert_non_null(unchunk(out));
		assert_null(strstr(out, VAL));   /* not across chunks either */
		assert_int_equal(count(out, PH), 2);
		free(out);
		finish(f);
	}
}

/* a small Content-Length body is held whole: the head goes with its new length */
static void
test_body_whole(void **state)
{
	static const char body[] = "token=" VAL;
	struct cf *f = *state;
	struct h1_message m;
	char head[128], want[160], *out;

	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", sizeof(body) - 1);
	/* relay.c leaves the length out of the head it builds: it is known once the body is scrubbed */
	assert_int_equal(response(f, head, "HTTP/1.1 200 OK\r\n\r\n", 1, 0, &m), 0);
	assert_int_equal(evbuffer_get_length(client_out), 0);   /* nothing before the body is whole */
	evbuffer_add(f->r.cred->scrub_in, body, 9);
	assert_int_equal(cred_resp_pump(&f->c, 0), 0);
	assert_int_equal(evbuffer_get_length(client_out), 0);
	evbuffer_add(f->r.cred->scrub_in, body + 9, sizeof(body) - 1 - 9);
	assert_int_equal(cred_resp_pump(&f->c, 1), 0);
	out = client_text();
	snprintf(want, sizeof(want), "Content-Length: %zu\r\n\r\ntoken=" PH, strlen("token=" PH));
	assert_non_null(strstr(out, want));
	assert_null(strstr(out, "Content-Length: 15\r\n"));   /* the old length is gone */
	free(out);
	finish(f);
}

static size_t
gzip(const char *in, uint8_t *out, size_t cap)
{
	z_stream z;

	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = SLUICE_DECONST(Bytef *, in);   /* zlib does not write through it */
	z.avail_in = (uInt)strlen(in);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	deflateEnd(&z);
	return cap - z.avail_out;
}

/* gzip: the compressed bytes split anywhere, decoded, scrubbed, sent without Content-Encoding */
static void
test_gzip_split_anywhere(void **state)
{
	struct cf *f = *state;
	uint8_t gz[256];
	size_t n = gzip("prefix " VAL " suffix", gz, sizeof(gz)), cut;

	for (cut = 0; cut <= n; cut++) {
		struct h1_message m;
		char *out;

		assert_int_equal(response(f, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
		                          NULL, 0, 1, &m), 0);
		evbuffer_add(f->r.cred->scrub_in, gz, cut);
		assert_int_equal(cred_resp_pump(&f->c, 0), 0);
		evbuffer_add(f->r.cred->scrub_in, gz + cut, n - cut);
		assert_int_equal(cred_resp_pump(&f->c, 1), 0);
		out = client_text();
		if (strstr(out, VAL) != NULL || unchunk(out) == NULL || strstr(out, VAL) != NULL ||
		    strstr(out, "prefix " PH " suffix") == NULL)
			fail_msg("cut %zu: not scrubbed", cut);
		free(out);
		finish(f);
	}
}

static void
test_trailers(void **state)
{
	struct cf *f = *state;
	struct h1_message m;
	char *out;

	assert_int_equal(response(f, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", NULL, 0, 1, &m), 0);
	f->r.resp_trailers = evbuffer_new();
	evbuffer_add(f->r.resp_trailers, "X-Sig: " VAL "\r\n", strlen("X-Sig: " VAL "\r\n"));
	evbuffer_add(f->r.cred->scrub_in, "ok", 2);
	assert_int_equal(cred_resp_pump(&f->c, 1), 0);
	out = client_text();
	assert_null(strstr(out, VAL));
	assert_non_null(strstr(out, "0\r\nX-Sig: " PH "\r\n\r\n"));
	free(out);
	finish(f);
}

/* what cannot be scrubbed is refused before a byte of it goes out; a host with no bound secret has no set */
static void
test_refused_codings(void **state)
{
	static const char *const heads[] = {
		"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 4\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip, br\r\nContent-Length: 4\r\n\r\n",
	};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct h1_message m;

		assert_int_equal(response(f, heads[i], NULL, 0, 1, &m), -2);
		assert_int_equal(evbuffer_get_length(client_out), 0);
		finish(f);
	}
	cf_conn(f, "agent-1", "unbound.test", 1, "GET / HTTP/1.1\r\nHost: unbound.test\r\n\r\n");
	assert_int_equal(cred_host_scrub(&f->c), 0);
	assert_null(f->r.cred->hscrub);
	finish(f);
}

static int
setup(void **state)
{
	client_out = evbuffer_new();
	return cf_setup(state);
}

static int
teardown(void **state)
{
	evbuffer_free(client_out);
	return cf_teardown(state);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_body_split_anywhere),
		cmocka_unit_test(test_body_whole),
		cmocka_unit_test(test_gzip_split_anywhere),
		cmocka_unit_test(test_trailers),
		cmocka_unit_test(test_refused_codings),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
