/*
 * test_audit.c - the audit writer and the gateway's own JSON answers.
 *
 * Every record is one line of valid JSON whatever bytes a peer put in its
 * fields; absent fields are omitted; an over-long path is cut rather than the
 * record lost; refusals carry the interface's JSON body and framing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <event2/buffer.h>
#include "proxy/proxy_int.h"

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static struct audit_rec
base_rec(void)
{
	struct audit_rec r = {
		.type = "request",
		.sandbox = "10.200.1.2",
		.client = "10.200.1.2",
		.dest = "10.200.1.1:443",
		.sni = "api.example.test",
		.host = "api.example.test",
		.method = "GET",
		.path = "/ok/x",
		.http_version = "1.1",
		.verdict = "allow",
		.rule = "api.example.test/rules/0",
		.status = 200,
		.bytes_up = 0,
		.bytes_down = 6,
		.duration_ms = 3,
		.upstream_tls = 1,
		.conn_id = 42,
	};
	return r;
}

static void
test_records_are_json_lines(void **state)
{
	char path[] = "/tmp/sluice-test-audit-XXXXXX";
	const char *err = NULL;
	struct audit *a;
	struct audit_rec r = base_rec();
	char *buf, *line, *save = NULL;
	size_t len, n = 0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	a = audit_open(path, &err);
	assert_non_null(a);
	audit_write(a, &r);
	/* a hostile path and SNI: newline, quote, backslash, control and high bytes */
	r.path = "/a\"b\\c\nd\r\x01\x7f\xff{\"x\":1}";
	r.sni = "evil\n{\"verdict\":\"allow\"}";
	r.verdict = "deny";
	r.reason = "denied by rule";
	r.status = 403;
	audit_write(a, &r);
	/* absent fields are omitted, not written as empty strings */
	r = base_rec();
	r.type = "connection";
	r.method = NULL;
	r.path = NULL;
	r.http_version = NULL;
	r.status = -1;
	r.bytes_up = r.bytes_down = -1;
	r.upstream_tls = -1;
	audit_write(a, &r);
	audit_close(a);

	buf = slurp(path, &len);
	assert_true(len > 0 && buf[len - 1] == '\n');
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), n++) {
		json_error_t jerr;
		json_t *o = json_loads(line, 0, &jerr);

		assert_non_null(o);
		assert_true(json_is_object(o));
		assert_non_null(json_object_get(o, "time"));
		if (n == 0) {
			assert_string_equal(json_string_value(json_object_get(o, "verdict")), "allow");
			assert_int_equal(json_integer_value(json_object_get(o, "status")), 200);
			assert_true(json_is_true(json_object_get(o, "upstream_tls")));
			assert_string_equal(json_string_value(json_object_get(o, "http_version")), "1.1");
		} else if (n == 1) {
			/* the forged field stayed inside its string */
			assert_string_equal(json_string_value(json_object_get(o, "verdict")), "deny");
			assert_string_equal(json_string_value(json_object_get(o, "sni")), "evil\n{\"verdict\":\"allow\"}");
			assert_non_null(strstr(json_string_value(json_object_get(o, "path")), "\"x\":1"));
		} else {
			assert_string_equal(json_string_value(json_object_get(o, "type")), "connection");
			assert_null(json_object_get(o, "method"));
			assert_null(json_object_get(o, "path"));
			assert_null(json_object_get(o, "status"));
			assert_null(json_object_get(o, "bytes_up"));
			assert_null(json_object_get(o, "upstream_tls"));
		}
		json_decref(o);
	}
	assert_int_equal(n, 3);
	free(buf);
	unlink(path);
}

static void
test_long_path_is_cut_not_lost(void **state)
{
	char path[] = "/tmp/sluice-test-audit-XXXXXX";
	const char *err = NULL;
	struct audit_rec r = base_rec();
	struct audit *a;
	char *buf, *longp;
	size_t len;
	json_t *o;
	json_error_t jerr;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	longp = malloc(20000);
	memset(longp, 'a', 19999);
	longp[0] = '/';
	longp[19999] = '\0';
	r.path = longp;
	a = audit_open(path, &err);
	audit_write(a, &r);
	audit_close(a);
	buf = slurp(path, &len);
	assert_non_null(strchr(buf, '\n'));
	assert_ptr_equal(strchr(buf, '\n'), buf + len - 1);  /* exactly one line */
	o = json_loads(buf, 0, &jerr);
	assert_non_null(o);
	assert_int_equal(strlen(json_string_value(json_object_get(o, "path"))), 2048);
	assert_int_equal(json_integer_value(json_object_get(o, "status")), 200);
	json_decref(o);
	free(buf);
	free(longp);
	unlink(path);
}

static void
test_no_file_drops_records(void **state)
{
	const char *err = NULL;
	struct audit *a = audit_open(NULL, &err);
	struct audit_rec r = base_rec();

	(void)state;
	assert_non_null(a);
	audit_write(a, &r);  /* no file: nothing happens, nothing crashes */
	audit_close(a);
	assert_null(audit_open("/nonexistent-dir/sluice/audit.jsonl", &err));
	assert_non_null(err);
}

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
		cmocka_unit_test(test_records_are_json_lines),
		cmocka_unit_test(test_long_path_is_cut_not_lost),
		cmocka_unit_test(test_no_file_drops_records),
		cmocka_unit_test(test_refusal_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
