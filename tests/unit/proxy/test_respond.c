/*
 * test_respond.c - the gateway's own JSON answers (proxy/session/respond.c):
 * refusals carry the interface's JSON body and framing.  (Split from the
 * audit writer's tests when the writer moved to audit/.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <event2/buffer.h>
#include "proxy/gateway_int.h"

/* Empties <b> into a NUL-terminated heap string (the caller frees it). */
static char *
take_string(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = calloc(1, n + 1);

	assert_non_null(s);
	assert_int_equal(evbuffer_remove(b, s, n), (int)n);
	return s;
}

static void
test_refusal_body(void **state)
{
	struct evbuffer *b = evbuffer_new();
	char *resp, *body;
	json_t *o;
	json_error_t jerr;

	(void)state;
	respond_json(b, 403, "denied by policy", "api.example.test", "api.example.test/rules/1", "denied by rule", 0);
	resp = take_string(b);
	assert_true(strncmp(resp, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(resp, "Content-Type: application/json\r\n"));
	assert_null(strstr(resp, "Connection: close"));
	body = strstr(resp, "\r\n\r\n") + 4;
	{
		char want[64];
		snprintf(want, sizeof(want), "Content-Length: %zu\r\n", strlen(body));
		assert_non_null(strstr(resp, want));
	}
	o = json_loads(body, 0, &jerr);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "error")), "denied by policy");
	assert_string_equal(json_string_value(json_object_get(o, "host")), "api.example.test");
	assert_string_equal(json_string_value(json_object_get(o, "rule")), "api.example.test/rules/1");
	assert_string_equal(json_string_value(json_object_get(o, "reason")), "denied by rule");
	json_decref(o);
	free(resp);

	/* closing answers say so; an empty host is omitted */
	respond_json(b, 421, "misdirected request", "", "host", "Host differs from the TLS server name (SNI)", 1);
	resp = take_string(b);
	assert_true(strncmp(resp, "HTTP/1.1 421 Misdirected Request\r\n", 34) == 0);
	assert_non_null(strstr(resp, "Connection: close\r\n"));
	assert_null(strstr(resp, "\"host\":"));
	free(resp);
	evbuffer_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusal_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
