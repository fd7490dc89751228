/*
 * test_writer.c - audit records as written (audit/writer.c), linked with the
 * writer's library alone (sluice_audit_writer: no gateway, no policy).
 *
 * Every record is one line of valid JSON whatever bytes a peer put in its
 * fields, with the members in the documented order (seq first, then time,
 * type, sandbox, the type's fields, prev, and mac last); each type writes
 * its own fields and no others; an over-long path is cut rather than the
 * record lost.
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
#include "audit/writer_int.h"

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
		.kind = AUDIT_KIND_REQUEST,
		.sandbox = "10.200.1.2",
		.id = "42-1",
		.client = "10.200.1.2",
		.dest = "10.200.1.1:443",
		.sni = "api.example.test",
		.host = "api.example.test",
		.method = "GET",
		.path = "/ok/x",
		.http_version = "1.1",
		.verdict = AUDIT_VERDICT_ALLOW,
		.rule = "api.example.test/rules/0",
		.status = -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
		.conn_id = 42,
	};
	return r;
}

static struct audit *
open_log(char *path)
{
	struct audit_opts cfg;
	const char *err = NULL;
	struct audit *a;

	memset(&cfg, 0, sizeof(cfg));
	cfg.file = path;
	cfg.fsync_ms = 1000;
	cfg.checkpoint_ms = 0;
	cfg.queue = 1024;
	a = audit_open(&cfg, "/etc/sluice/sluice.yaml", NULL, NULL, &err);
	assert_non_null(a);
	assert_int_equal(audit_start(a, &err), 0);
	return a;
}

/* The members of a formatted record, "{" ... "}" without the time (which changes). */
static const char *
members(const struct audit_rec *r, char *buf, size_t cap)
{
	long n = audit_rec_format(r, buf, cap, (size_t)-1);
	char *t;

	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_memory_equal(buf, "{\"time\":\"", 9);
	t = strstr(buf, "\",\"type\":");
	assert_non_null(t);
	/* RFC 3339 UTC with milliseconds: 2026-12-01T04:07:07.123Z */
	assert_int_equal(t - (buf + 9), 24);
	for (size_t i = 0; i < 24; i++) {
		char c = buf[9 + i];
		switch (i) {
		case 4: case 7: assert_int_equal(c, '-'); break;
		case 10: assert_int_equal(c, 'T'); break;
		case 13: case 16: assert_int_equal(c, ':'); break;
		case 19: assert_int_equal(c, '.'); break;
		case 23: assert_int_equal(c, 'Z'); break;
		default: assert_true(c >= '0' && c <= '9');
		}
	}
	assert_true(buf[9] == '2');  /* this millennium */
	return t + 3;
}

/*
 * The one table of record kinds: every kind has its own name (the "type"
 * member docs/audit-schema.md lists), a value outside the enum is "unknown",
 * and a record's type member is exactly that name.
 */
static void
test_kind_and_verdict_names(void **state)
{
	static const char *const want[AUDIT_KIND_COUNT] = {
		"unknown", "connection", "denial", "request", "response", "dns", "exfiltration_attempt", "scrub",
		"config_reload", "checkpoint", "start", "stop", "no_request", "approval", "revocation",
	};
	char buf[1024];
	unsigned k;

	(void)state;
	for (k = 0; k < AUDIT_KIND_COUNT; k++) {
		struct audit_rec r = AUDIT_REC_INIT((enum audit_kind)k);
		json_t *j;

		assert_string_equal(audit_kind_name((enum audit_kind)k), want[k]);
		assert_true(audit_rec_format(&r, buf, sizeof(buf), (size_t)-1) > 0);
		j = json_loads(buf, 0, NULL);
		assert_non_null(j);
		assert_string_equal(json_string_value(json_object_get(j, "type")), want[k]);
		json_decref(j);
	}
	assert_string_equal(audit_kind_name(AUDIT_KIND_COUNT), "unknown");
	assert_string_equal(audit_kind_name((enum audit_kind)-1), "unknown");
	assert_string_equal(audit_verdict_name(AUDIT_VERDICT_ALLOW), "allow");
	assert_string_equal(audit_verdict_name(AUDIT_VERDICT_DENY), "deny");
	assert_null(audit_verdict_name(AUDIT_VERDICT_NONE));
	assert_null(audit_verdict_name((enum audit_verdict)7));
}

static void
test_members_by_type(void **state)
{
	struct audit_rec r = base_rec();
	const char *scrubbed[] = {"gh", "npm"};
	const char *names[] = {"gh"}, *places[] = {"header:authorization"};
	char buf[2048];

	(void)state;
	r.secret_names = names;
	r.secret_places = places;
	r.nsecrets = 1;
	assert_string_equal(members(&r, buf, sizeof(buf)),
	                    "type\":\"request\",\"sandbox\":\"10.200.1.2\",\"id\":\"42-1\",\"client\":\"10.200.1.2\","
	                    "\"dest\":\"10.200.1.1:443\",\"sni\":\"api.example.test\",\"host\":\"api.example.test\","
	                    "\"method\":\"GET\",\"path\":\"/ok/x\",\"http_version\":\"1.1\",\"verdict\":\"allow\","
	                    "\"rule\":\"api.example.test/rules/0\",\"secrets\":[{\"name\":\"gh\","
	                    "\"place\":\"header:authorization\"}],\"conn\":42}");
	/* a denied request carries the status it was answered */
	r.verdict = AUDIT_VERDICT_DENY;
	r.status = 403;
	r.nsecrets = 0;
	assert_non_null(strstr(members(&r, buf, sizeof(buf)), ",\"verdict\":\"deny\",\"rule\":\"api.example.test/rules/0\",\"status\":403,\"conn\":42}"));
	/* a response: its own fields only (the host is for the metrics, not written) */
	r = base_rec();
	r.kind = AUDIT_KIND_RESPONSE;
	r.status = 200;
	r.bytes_up = 0;
	r.bytes_down = 6;
	r.duration_ms = 3;
	r.upstream_tls = 1;
	r.rule = NULL;
	r.scrubbed = scrubbed;
	r.nscrubbed = 2;
	assert_string_equal(members(&r, buf, sizeof(buf)),
	                    "type\":\"response\",\"sandbox\":\"10.200.1.2\",\"id\":\"42-1\",\"status\":200,\"bytes_up\":0,"
	                    "\"bytes_down\":6,\"duration_ms\":3,\"upstream_tls\":true,\"scrubbed\":[\"gh\",\"npm\"],"
	                    "\"conn\":42}");
	r.kind = AUDIT_KIND_SCRUB;
	assert_string_equal(members(&r, buf, sizeof(buf)),
	                    "type\":\"scrub\",\"sandbox\":\"10.200.1.2\",\"id\":\"42-1\",\"secrets\":[\"gh\",\"npm\"]}");
	r = base_rec();
	r.kind = AUDIT_KIND_EXFILTRATION_ATTEMPT;
	r.secret = "gh";
	r.place = "query:token";
	r.rule = "secrets";
	assert_string_equal(members(&r, buf, sizeof(buf)),
	                    "type\":\"exfiltration_attempt\",\"sandbox\":\"10.200.1.2\",\"id\":\"42-1\",\"secret\":\"gh\","
	                    "\"place\":\"query:token\",\"host\":\"api.example.test\",\"rule\":\"secrets\"}");
	r = base_rec();
	r.kind = AUDIT_KIND_DNS;
	r.dns_qtype = "A";
	r.dns_answer = "NXDOMAIN";
	r.verdict = AUDIT_VERDICT_DENY;
	r.conn_id = 0;
	assert_string_equal(members(&r, buf, sizeof(buf)),
	                    "type\":\"dns\",\"sandbox\":\"10.200.1.2\",\"client\":\"10.200.1.2\","
	                    "\"host\":\"api.example.test\",\"qtype\":\"A\",\"answer\":\"NXDOMAIN\",\"verdict\":\"deny\"}");
	r = base_rec();
	r.kind = AUDIT_KIND_DENIAL;
	r.sandbox = NULL;
	r.reason = "SNI is not a valid host name";
	r.rule = "tls";
	r.host = NULL;
	assert_string_equal(members(&r, buf, sizeof(buf)),
	                    "type\":\"denial\",\"sandbox\":\"-\",\"client\":\"10.200.1.2\",\"dest\":\"10.200.1.1:443\","
	                    "\"sni\":\"api.example.test\",\"rule\":\"tls\",\"reason\":\"SNI is not a valid host name\","
	                    "\"conn\":42}");
}

/* Checks the documented shape of one line: seq first, then time, type, sandbox; prev, then mac, last. */
static void
check_shape(const char *line, uint64_t seq)
{
	char head[64];
	size_t n = strlen(line);
	const char *prev;

	snprintf(head, sizeof(head), "{\"seq\":%llu,\"time\":\"", (unsigned long long)seq);
	assert_memory_equal(line, head, strlen(head));
	assert_non_null(strstr(line, "Z\",\"type\":\""));
	assert_non_null(strstr(line, "\",\"sandbox\":\""));
	prev = strstr(line, ",\"prev\":\"");
	assert_non_null(prev);
	assert_int_equal(n, (size_t)(prev - line) + 9 + 64 + 2);
	assert_memory_equal(line + n - 2, "\"}", 2);
	/* no raw control byte, ESC or DEL, no raw byte >= 0x80 */
	for (size_t i = 0; i < n; i++)
		assert_true((unsigned char)line[i] >= 0x20 && (unsigned char)line[i] < 0x7f);
}

static void
test_records_are_json_lines(void **state)
{
	char path[] = "/tmp/sluice-test-audit-XXXXXX";
	struct audit *a;
	struct audit_rec r = base_rec();
	char *buf, *line, *save = NULL;
	size_t len, n = 0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	a = open_log(path);
	assert_int_equal(audit_write(a, &r), 2);  /* 1 is the start record */
	/* a hostile path and SNI: newline, quote, backslash, ESC, control and high bytes */
	r.path = "/a\"b\\c\nd\r\x01\x1b[31m\x7f\xff{\"x\":1}";
	r.sni = "evil\r\n{\"verdict\":\"allow\"}\x1b]0;x\x07";
	r.verdict = AUDIT_VERDICT_DENY;
	r.reason = "denied by rule";
	r.status = 403;
	assert_int_equal(audit_write(a, &r), 3);
	/* a refused connection is written as a denial, without a verdict */
	r = base_rec();
	r.kind = AUDIT_KIND_CONNECTION;
	r.verdict = AUDIT_VERDICT_DENY;
	r.method = NULL;
	assert_int_equal(audit_write(a, &r), 4);
	audit_stop(a, "test");
	audit_close(a);

	buf = slurp(path, &len);
	assert_true(len > 0 && buf[len - 1] == '\n');
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), n++) {
		json_error_t jerr;
		json_t *o = json_loads(line, 0, &jerr);

		check_shape(line, n + 1);
		assert_non_null(o);
		assert_true(json_is_object(o));
		if (n == 0) {
			assert_string_equal(json_string_value(json_object_get(o, "type")), "start");
			assert_string_equal(json_string_value(json_object_get(o, "sandbox")), "-");
			assert_string_equal(json_string_value(json_object_get(o, "config")), "/etc/sluice/sluice.yaml");
			assert_int_equal(strlen(json_string_value(json_object_get(o, "run"))), 16);
			assert_null(json_object_get(o, "recovered_bytes"));
		} else if (n == 1) {
			assert_string_equal(json_string_value(json_object_get(o, "verdict")), "allow");
			assert_string_equal(json_string_value(json_object_get(o, "id")), "42-1");
			assert_null(json_object_get(o, "status"));
		} else if (n == 2) {
			/* the forged field stayed inside its string */
			assert_string_equal(json_string_value(json_object_get(o, "verdict")), "deny");
			assert_string_equal(json_string_value(json_object_get(o, "sni")),
			                    "evil\r\n{\"verdict\":\"allow\"}\x1b]0;x\x07");
			assert_non_null(strstr(line, "\\u001b[31m"));
			assert_non_null(strstr(json_string_value(json_object_get(o, "path")), "\"x\":1"));
		} else if (n == 3) {
			assert_string_equal(json_string_value(json_object_get(o, "type")), "denial");
			assert_null(json_object_get(o, "verdict"));
			assert_null(json_object_get(o, "method"));
		} else {
			assert_string_equal(json_string_value(json_object_get(o, "type")), "stop");
			assert_string_equal(json_string_value(json_object_get(o, "reason")), "test");
			assert_int_equal(json_integer_value(json_object_get(o, "records")), 5);
		}
		json_decref(o);
	}
	assert_int_equal(n, 5);
	free(buf);
	unlink(path);
}

static void
test_long_path_is_cut_not_lost(void **state)
{
	char path[] = "/tmp/sluice-test-audit-XXXXXX";
	struct audit_rec r = base_rec();
	struct audit *a;
	char *buf, *longp, *second;
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
	a = open_log(path);
	assert_int_equal(audit_write(a, &r), 2);
	audit_close(a);
	buf = slurp(path, &len);
	second = strchr(buf, '\n') + 1;
	assert_ptr_equal(strchr(second, '\n') + 1, strstr(second, "\n{\"seq\":3,") + 1);
	o = json_loads(second, JSON_DISABLE_EOF_CHECK, &jerr);
	assert_non_null(o);
	assert_int_equal(strlen(json_string_value(json_object_get(o, "path"))), AUDIT_PATH_CUT);
	assert_string_equal(json_string_value(json_object_get(o, "id")), "42-1");
	json_decref(o);
	free(buf);
	free(longp);
	unlink(path);
}

static void
test_no_file_counts_only(void **state)
{
	struct audit_opts cfg;
	const char *err = NULL;
	struct audit *a;
	struct audit_rec r = base_rec();

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	a = audit_open(&cfg, NULL, NULL, NULL, &err);
	assert_non_null(a);
	assert_int_equal(audit_start(a, &err), 0);
	assert_false(audit_enabled(a));
	assert_int_equal(audit_write(a, &r), 0);  /* no file: nothing queued, nothing crashes */
	assert_true(audit_healthy(a));
	assert_true(audit_written(a, 12345));
	assert_int_equal(audit_queue_depth(a), 0);
	audit_close(a);
	cfg.file = "/nonexistent-dir/sluice/audit.jsonl";
	err = NULL;
	assert_null(audit_open(&cfg, NULL, NULL, NULL, &err));
	assert_string_equal(err, "audit.file /nonexistent-dir/sluice/audit.jsonl: No such file or directory");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_and_verdict_names),
		cmocka_unit_test(test_members_by_type),
		cmocka_unit_test(test_records_are_json_lines),
		cmocka_unit_test(test_long_path_is_cut_not_lost),
		cmocka_unit_test(test_no_file_counts_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
