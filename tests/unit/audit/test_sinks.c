/*
 * test_sinks.c - the audit trail's copies for a SIEM (issue 22 item 3): the
 * RFC 5424 STRUCTURED-DATA of a line (audit/sd.c) byte for byte, with the
 * section 6.3.3 escapes and the PARAM-NAME rules; the syslog copy over UDP
 * to a socket of the test's own (MSGID, SD, the JSON line) and its counted
 * drops toward a TCP collector that is not there; the OCSF event of each
 * record kind (audit/ocsf.c, OCSF 1.3.0): classes, activity (PATCH is Other in
 * 1.3.0), type_uid, verdicts (allowed, denied, held, rate-limited), url parts,
 * endpoints, DNS answers, metadata.profiles; an allowed request's event waits
 * for its response record (http_response is required) and one without an HTTP
 * status becomes a Network Activity "No Response".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include "audit/writer_int.h"

static long
sd_of(const char *line, char *out, size_t cap)
{
	struct audit_record rec;
	long n;

	assert_int_equal(audit_record_parse(&rec, line, strlen(line)), 0);
	n = audit_sd_format("sluice@32473", &rec, line, strlen(line), out, cap);
	audit_record_dispose(&rec);
	if (n >= 0)
		out[n] = '\0';
	return n;
}

static void
test_sd_exact(void **state)
{
	/* '"', '\' and ']' escaped; a control byte as '?'; an object flattened; an array as JSON; bools, numbers */
	static const char line[] = "{\"seq\":7,\"type\":\"request\",\"path\":\"/a\\\"]\\\\b\\u0001\\u00e9\",\"status\":429,"
	                           "\"upstream_tls\":true,\"limit\":{\"kind\":\"rate\",\"retry_after\":3},"
	                           "\"secrets\":[{\"name\":\"gh\"}],\"prev\":\"ab\"}";
	char hash[AUDIT_HASH_HEX + 1], want[1024], got[2048];

	(void)state;
	audit_sha256_hex(line, sizeof(line) - 1, hash);
	snprintf(want, sizeof(want),
	         "[sluice@32473 hash=\"%s\" seq=\"7\" type=\"request\" path=\"/a\\\"\\]\\\\b?\xc3\xa9\" status=\"429\" "
	         "upstream_tls=\"true\" limit.kind=\"rate\" limit.retry_after=\"3\" secrets=\"[{\\\"name\\\":\\\"gh\\\"}\\]\" "
	         "prev=\"ab\"]",
	         hash);
	assert_true(sd_of(line, got, sizeof(got)) > 0);
	assert_string_equal(got, want);
}

static void
test_sd_names(void **state)
{
	/* a member whose name is not a PARAM-NAME is left out; a nested one longer than 32 too */
	static const char line[] = "{\"seq\":1,\"a=b\":\"x\",\"a b\":\"x\",\"a]\":\"x\",\"a\\\"\":\"x\",\"\":\"x\","
	                           "\"abcdefghijklmnopqrstuvwxyz0123456\":\"x\",\"abcdefghijklmnopqrstuvwxyz012345\":\"y\","
	                           "\"abcdefghijklmnopqrstuvwxyz01\":{\"long1\":1,\"k1\":2}}";
	char got[2048];

	(void)state;
	assert_true(sd_of(line, got, sizeof(got)) > 0);
	assert_non_null(strstr(got, " seq=\"1\" abcdefghijklmnopqrstuvwxyz012345=\"y\" abcdefghijklmnopqrstuvwxyz01.k1=\"2\"]"));
	assert_null(strstr(got, "=\"x\""));
	assert_null(strstr(got, "long1"));
	assert_int_equal(audit_sd_name_ok("ok.name", 7), 0);
	assert_int_equal(audit_sd_name_ok("", 0), -1);
	assert_int_equal(audit_sd_name_ok("\x7f", 1), -1);
	assert_int_equal(audit_sd_enterprise_ok("32473"), 0);
	assert_int_equal(audit_sd_enterprise_ok("32473.1.2"), 0);
	assert_int_equal(audit_sd_enterprise_ok("32473."), -1);
	assert_int_equal(audit_sd_enterprise_ok(".1"), -1);
	assert_int_equal(audit_sd_enterprise_ok("1..2"), -1);
	assert_int_equal(audit_sd_enterprise_ok("1a"), -1);
	assert_int_equal(audit_sd_enterprise_ok(""), -1);
	assert_int_equal(audit_sd_enterprise_ok("1234567890123456789012345"), 0);   /* 7 + 25 = 32 */
	assert_int_equal(audit_sd_enterprise_ok("12345678901234567890123456"), -1);
}

static void
test_sd_bounded(void **state)
{
	/* a line of AUDIT_LINE_MAX bytes, every byte one to escape, fits AUDIT_SD_MAX; a short buffer is refused */
	char *line = malloc(AUDIT_LINE_MAX + 1), *out = malloc(AUDIT_SD_MAX);
	size_t i, n;

	(void)state;
	n = (size_t)snprintf(line, AUDIT_LINE_MAX, "{\"seq\":1,\"path\":\"");
	for (i = n; i < AUDIT_LINE_MAX - 2; i++)
		line[i] = ']';
	memcpy(line + AUDIT_LINE_MAX - 2, "\"}", 3);
	assert_true(sd_of(line, out, AUDIT_SD_MAX) > (long)(2 * (AUDIT_LINE_MAX - 20)));
	assert_int_equal(sd_of(line, out, 100), -1);
	/* the most a name costs: a 26-byte parent of distinct 1- and 2-byte keys, "k":1 each (6.2 times its bytes) */
	n = (size_t)snprintf(line, AUDIT_LINE_MAX, "{\"seq\":1,\"abcdefghijklmnopqrstuvwxyz\":{");
	for (i = 0; n + 16 < AUDIT_LINE_MAX && i < 62 + 62 * 62; i++) {
		static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
		char k[3] = {al[i < 62 ? i : (i - 62) / 62], i < 62 ? '\0' : al[(i - 62) % 62], '\0'};

		n += (size_t)snprintf(line + n, AUDIT_LINE_MAX - n, "%s\"%s\":1", i ? "," : "", k);
	}
	memcpy(line + n, "}}", 3);
	assert_true(sd_of(line, out, AUDIT_SD_MAX) > 0);
	free(line);
	free(out);
}

static int
udp_listener(int *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

static void
send_line(struct audit_export *e, const char *line)
{
	struct audit_record rec;

	assert_int_equal(audit_record_parse(&rec, line, strlen(line)), 0);
	audit_export_rec(e, &rec, line, strlen(line));
	audit_record_dispose(&rec);
}

static void
test_export_udp(void **state)
{
	static const char line[] = "{\"seq\":3,\"time\":\"2026-12-01T04:07:07.123Z\",\"type\":\"dns\",\"host\":\"a.test\",\"prev\":\"00\"}";
	char addr[64], err[256], buf[4096];
	struct audit_export *e;
	int fd, port;
	ssize_t n;

	(void)state;
	fd = udp_listener(&port);
	snprintf(addr, sizeof(addr), "udp://127.0.0.1:%d", port);
	e = audit_export_open(addr, "32473.7", err, sizeof(err));
	assert_non_null(e);
	send_line(e, line);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_true(strncmp(buf, "<86>1 ", 6) == 0);
	assert_non_null(strstr(buf, " sluice "));
	assert_non_null(strstr(buf, " dns [sluice@32473.7 hash=\""));
	assert_non_null(strstr(buf, " host=\"a.test\" prev=\"00\"] {\"seq\":3,"));
	assert_string_equal(buf + n - (sizeof(line) - 1), line);
	assert_int_equal(audit_export_dropped(e), 0);
	audit_export_close(e);
	close(fd);
	/* a bad enterprise, a bad address */
	assert_null(audit_export_open(addr, "x", err, sizeof(err)));
	assert_non_null(strstr(err, "audit.syslog.enterprise"));
	assert_null(audit_export_open("unix:relative", NULL, err, sizeof(err)));
	assert_null(audit_export_open("tcp://127.0.0.1", NULL, err, sizeof(err)));
}

static void
test_export_tcp_down(void **state)
{
	static const char line[] = "{\"seq\":1,\"type\":\"start\",\"prev\":\"00\"}";
	char addr[64], err[256];
	struct audit_export *e;
	int fd, port, i;

	(void)state;
	fd = udp_listener(&port);  /* a port number nothing listens on over TCP */
	snprintf(addr, sizeof(addr), "tcp://127.0.0.1:%d", port);
	e = audit_export_open(addr, NULL, err, sizeof(err));
	assert_non_null(e);
	for (i = 0; i < 50; i++) {
		send_line(e, line);
		usleep(1000);
	}
	/* the first ones were queued while connecting, then lost with the refused connection; later ones dropped */
	assert_true(audit_export_dropped(e) >= 49);
	assert_true(audit_export_dropped(e) <= 50);
	audit_export_close(e);
	close(fd);
}

/* The copies' thread: a batch it cannot hold is dropped and counted, line by line; what it holds is sent. */
static void
test_sinks_thread(void **state)
{
	static const char line[] = "{\"seq\":4,\"type\":\"request\",\"prev\":\"00\"}\n";
	size_t n = 4 * 1024 * 1024 / (sizeof(line) - 1) + 1, i;
	char addr[64], err[256], buf[4096], *big = malloc(n * (sizeof(line) - 1));
	struct audit_export *e;
	struct audit_sinks *s;
	int fd, port;
	ssize_t got;

	(void)state;
	for (i = 0; i < n; i++)
		memcpy(big + i * (sizeof(line) - 1), line, sizeof(line) - 1);
	fd = udp_listener(&port);
	snprintf(addr, sizeof(addr), "udp://127.0.0.1:%d", port);
	e = audit_export_open(addr, NULL, err, sizeof(err));
	assert_non_null(e);
	assert_null(audit_sinks_start(NULL, NULL));
	s = audit_sinks_start(e, NULL);
	assert_non_null(s);
	audit_sinks_push(s, big, n * (sizeof(line) - 1));  /* more than the buffer: never waited for */
	assert_int_equal(audit_export_dropped(e), n);
	audit_sinks_push(s, line, sizeof(line) - 1);
	audit_sinks_stop(s);  /* what was queued is copied before the thread ends */
	got = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(got > 0);
	buf[got] = '\0';
	assert_non_null(strstr(buf, " request [sluice@32473 hash=\""));
	assert_int_equal(audit_export_dropped(e), n);
	audit_export_close(e);
	close(fd);
	free(big);
}

static json_t *
ev_of(const char *line)
{
	struct audit_record rec;
	json_t *ev;

	assert_int_equal(audit_record_parse(&rec, line, strlen(line)), 0);
	ev = audit_ocsf_event(&rec);
	audit_record_dispose(&rec);
	return ev;
}

/* The member at dotted <path> of <o>, or NULL. */
static json_t *
at(json_t *o, const char *path)
{
	char key[64];
	const char *dot;
	size_t n;

	while (o != NULL) {
		dot = strchr(path, '.');
		n = dot != NULL ? (size_t)(dot - path) : strlen(path);
		assert_true(n < sizeof(key));
		memcpy(key, path, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		if (dot == NULL)
			break;
		path = dot + 1;
	}
	return o;
}

static json_int_t
geti(json_t *o, const char *path)
{
	json_t *v = at(o, path);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static const char *
gets_(json_t *o, const char *path)
{
	return json_string_value(at(o, path));
}

static void
test_ocsf_http(void **state)
{
	json_t *ev;

	(void)state;
	ev = ev_of("{\"seq\":5,\"time\":\"2026-12-01T04:07:07.123Z\",\"type\":\"request\",\"sandbox\":\"agent-1\",\"id\":\"1-1\","
	           "\"client\":\"10.200.0.2:40000\",\"dest\":\"[fd00:5c::1]:443\",\"host\":\"api.example.test\",\"method\":\"POST\","
	           "\"path\":\"/v1/x?a=1\",\"http_version\":\"2\",\"verdict\":\"allow\",\"rule\":\"api/rules/0\","
	           "\"hold\":{\"id\":\"h1\",\"outcome\":\"approved\",\"by\":\"uid:0\"},\"prev\":\"00\"}");
	assert_non_null(ev);
	assert_int_equal(geti(ev, "class_uid"), 4002);
	assert_int_equal(geti(ev, "category_uid"), 4);
	assert_int_equal(geti(ev, "activity_id"), 6);
	assert_string_equal(gets_(ev, "activity_name"), "Post");
	assert_int_equal(geti(ev, "type_uid"), 400206);
	assert_int_equal(geti(ev, "time"), 1796098027123LL);
	assert_int_equal(geti(ev, "action_id"), 1);
	assert_int_equal(geti(ev, "disposition_id"), 14);  /* held, then approved: Delayed */
	assert_string_equal(gets_(ev, "status_detail"), "approved");
	assert_string_equal(gets_(ev, "http_request.url.path"), "/v1/x");
	assert_string_equal(gets_(ev, "http_request.url.query_string"), "a=1");
	assert_string_equal(gets_(ev, "http_request.url.url_string"), "https://api.example.test/v1/x?a=1");
	assert_string_equal(gets_(ev, "src_endpoint.name"), "agent-1");
	assert_string_equal(gets_(ev, "src_endpoint.ip"), "10.200.0.2");
	assert_int_equal(geti(ev, "src_endpoint.port"), 40000);
	assert_string_equal(gets_(ev, "dst_endpoint.ip"), "fd00:5c::1");
	assert_string_equal(gets_(ev, "firewall_rule.uid"), "api/rules/0");
	assert_string_equal(gets_(ev, "metadata.product.name"), "Sluice");
	assert_string_equal(gets_(ev, "metadata.version"), "1.3.0");
	assert_string_equal(json_string_value(json_array_get(at(ev, "metadata.profiles"), 0)), "security_control");
	assert_int_equal(geti(ev, "metadata.sequence"), 5);
	assert_null(at(ev, "http_response"));  /* allowed: the status comes with the response record */
	assert_null(at(ev, "http_status"));    /* deprecated since 1.1.0 */
	json_decref(ev);

	ev = ev_of("{\"seq\":6,\"type\":\"request\",\"method\":\"PROPFIND\",\"host\":\"h\",\"path\":\"/\",\"verdict\":\"deny\","
	           "\"status\":429,\"limit\":{\"key\":\"k\",\"kind\":\"rate\"},\"prev\":\"00\"}");
	assert_int_equal(geti(ev, "activity_id"), 99);
	assert_string_equal(gets_(ev, "activity_name"), "PROPFIND");
	assert_int_equal(geti(ev, "type_uid"), 400299);
	assert_int_equal(geti(ev, "action_id"), 2);
	assert_int_equal(geti(ev, "disposition_id"), 2);
	assert_string_equal(gets_(ev, "status_detail"), "rate-limited");
	assert_int_equal(geti(ev, "http_response.code"), 429);
	assert_null(at(ev, "http_status"));
	json_decref(ev);

	/* 1.3.0 has no Patch activity (1..8, 99): PATCH is Other, the method as activity_name */
	ev = ev_of("{\"seq\":7,\"type\":\"request\",\"method\":\"PATCH\",\"host\":\"h\",\"path\":\"/\","
	           "\"verdict\":\"deny\",\"status\":403,\"prev\":\"00\"}");
	assert_int_equal(geti(ev, "activity_id"), 99);
	assert_int_equal(geti(ev, "type_uid"), 400299);
	assert_string_equal(gets_(ev, "activity_name"), "PATCH");
	json_decref(ev);

	/* an address literal host is an ip, never a hostname_t; an IPv6 one is bracketed in url_string */
	ev = ev_of("{\"seq\":8,\"type\":\"request\",\"method\":\"GET\",\"host\":\"fd00:5c::1\",\"path\":\"/\","
	           "\"verdict\":\"deny\",\"status\":403,\"prev\":\"00\"}");
	assert_null(at(ev, "http_request.url.hostname"));
	assert_string_equal(gets_(ev, "http_request.url.url_string"), "https://[fd00:5c::1]/");
	assert_null(at(ev, "dst_endpoint.hostname"));
	assert_string_equal(gets_(ev, "dst_endpoint.ip"), "fd00:5c::1");
	json_decref(ev);
}

/* Feeds <lines> (NULL-terminated) to an audit.ocsf file of its own, closes it, and returns its lines parsed. */
static json_t *
ocsf_run(const char *const *lines)
{
	char path[] = "/tmp/test_sinks_ocsf.XXXXXX", err[256], buf[1 << 16];
	int fd = mkstemp(path);
	struct audit_ocsf *o;
	struct audit_record rec;
	json_t *out = json_array();
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	o = audit_ocsf_open(path, err, sizeof(err));
	assert_non_null(o);
	for (; *lines != NULL; lines++) {
		assert_int_equal(audit_record_parse(&rec, *lines, strlen(*lines)), 0);
		audit_ocsf_rec(o, &rec);
		audit_record_dispose(&rec);
	}
	audit_ocsf_close(o);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f) != NULL) {
		json_t *ev = json_loads(buf, 0, NULL);

		assert_non_null(ev);
		json_array_append_new(out, ev);
	}
	fclose(f);
	unlink(path);
	return out;
}

static void
test_ocsf_pairing(void **state)
{
	static const char *const lines[] = {
		/* allowed: waits; its response (status 201) completes it, after a DNS event written at once */
		"{\"seq\":2,\"type\":\"request\",\"id\":\"1-1\",\"method\":\"GET\",\"host\":\"a.test\",\"path\":\"/x\","
		"\"verdict\":\"allow\",\"prev\":\"00\"}",
		"{\"seq\":3,\"type\":\"dns\",\"host\":\"a.test\",\"qtype\":\"A\",\"answer\":\"A 198.18.0.7\","
		"\"verdict\":\"allow\",\"prev\":\"00\"}",
		"{\"seq\":4,\"type\":\"request\",\"id\":\"1-2\",\"method\":\"POST\",\"host\":\"a.test\",\"path\":\"/y\","
		"\"verdict\":\"allow\",\"prev\":\"00\"}",
		"{\"seq\":5,\"type\":\"response\",\"id\":\"1-1\",\"status\":201,\"bytes_down\":12,\"duration_ms\":3,"
		"\"prev\":\"00\"}",
		/* an exchange without an HTTP status: Network Activity, activity Other */
		"{\"seq\":6,\"type\":\"response\",\"id\":\"1-2\",\"bytes_down\":0,\"prev\":\"00\"}",
		/* a response nothing waits for: no event */
		"{\"seq\":7,\"type\":\"response\",\"id\":\"9-9\",\"status\":200,\"prev\":\"00\"}",
		/* refused: its status is in the request record, written at once */
		"{\"seq\":8,\"type\":\"request\",\"id\":\"1-3\",\"method\":\"GET\",\"host\":\"a.test\",\"path\":\"/z\","
		"\"verdict\":\"deny\",\"status\":403,\"prev\":\"00\"}",
		/* refused without a status: no response record comes, written unanswered at once */
		"{\"seq\":10,\"type\":\"request\",\"id\":\"1-5\",\"method\":\"GET\",\"host\":\"a.test\",\"path\":\"/v\","
		"\"verdict\":\"deny\",\"prev\":\"00\"}",
		/* still waiting when the file closes: written unanswered */
		"{\"seq\":9,\"type\":\"request\",\"id\":\"1-4\",\"method\":\"GET\",\"host\":\"a.test\",\"path\":\"/w\","
		"\"verdict\":\"allow\",\"prev\":\"00\"}",
		NULL,
	};
	json_t *evs, *ev;

	(void)state;
	evs = ocsf_run(lines);
	assert_int_equal(json_array_size(evs), 6);
	ev = json_array_get(evs, 0);
	assert_int_equal(geti(ev, "class_uid"), 4003);
	ev = json_array_get(evs, 1);
	assert_int_equal(geti(ev, "class_uid"), 4002);
	assert_int_equal(geti(ev, "metadata.sequence"), 2);  /* the request's line, not the response's */
	assert_int_equal(geti(ev, "http_response.code"), 201);
	assert_int_equal(geti(ev, "http_response.length"), 12);
	assert_int_equal(geti(ev, "http_response.latency"), 3);
	ev = json_array_get(evs, 2);
	assert_int_equal(geti(ev, "class_uid"), 4001);
	assert_int_equal(geti(ev, "activity_id"), 99);
	assert_int_equal(geti(ev, "type_uid"), 400199);
	assert_string_equal(gets_(ev, "activity_name"), "No Response");
	assert_string_equal(gets_(ev, "url.path"), "/y");
	assert_null(at(ev, "http_request"));
	assert_int_equal(geti(ev, "metadata.sequence"), 4);
	ev = json_array_get(evs, 3);
	assert_int_equal(geti(ev, "class_uid"), 4002);
	assert_int_equal(geti(ev, "http_response.code"), 403);
	ev = json_array_get(evs, 4);
	assert_int_equal(geti(ev, "class_uid"), 4001);
	assert_int_equal(geti(ev, "metadata.sequence"), 10);
	assert_int_equal(geti(ev, "action_id"), 2);
	ev = json_array_get(evs, 5);
	assert_int_equal(geti(ev, "class_uid"), 4001);
	assert_int_equal(geti(ev, "metadata.sequence"), 9);
	json_decref(evs);
}

/* More allowed requests in flight than the table holds: the oldest goes out unanswered, the rest pair. */
static void
test_ocsf_pending_full(void **state)
{
	enum { N = 1024 + 3 };  /* OCSF_PENDING_MAX + 3 */
	char **lines = calloc(2 * N + 1, sizeof(*lines));
	size_t i, net = 0, http = 0;
	json_t *evs;

	(void)state;
	for (i = 0; i < N; i++) {
		lines[i] = malloc(200);
		snprintf(lines[i], 200, "{\"seq\":%zu,\"type\":\"request\",\"id\":\"r%zu\",\"method\":\"GET\","
		         "\"host\":\"a.test\",\"path\":\"/\",\"verdict\":\"allow\",\"prev\":\"00\"}", i + 1, i);
		lines[N + i] = malloc(200);
		snprintf(lines[N + i], 200, "{\"seq\":%zu,\"type\":\"response\",\"id\":\"r%zu\",\"status\":200,"
		         "\"prev\":\"00\"}", N + i + 1, i);
	}
	evs = ocsf_run((const char *const *)lines);
	assert_int_equal(json_array_size(evs), N);
	for (i = 0; i < json_array_size(evs); i++) {
		json_t *ev = json_array_get(evs, i);

		if (geti(ev, "class_uid") == 4001) {
			net++;
			assert_true(geti(ev, "metadata.sequence") <= 3);  /* the three oldest */
		} else {
			http++;
			assert_int_equal(geti(ev, "http_response.code"), 200);
		}
	}
	assert_int_equal(net, 3);
	assert_int_equal(http, N - 3);
	json_decref(evs);
	for (i = 0; i < 2 * N; i++)
		free(lines[i]);
	free(lines);
}

static void
test_ocsf_dns_denial(void **state)
{
	json_t *ev;

	(void)state;
	ev = ev_of("{\"seq\":2,\"type\":\"dns\",\"sandbox\":\"s\",\"client\":\"10.200.0.2\",\"host\":\"a.test\",\"qtype\":\"A\","
	           "\"answer\":\"A 198.18.0.7\",\"verdict\":\"allow\",\"prev\":\"00\"}");
	assert_int_equal(geti(ev, "class_uid"), 4003);
	assert_int_equal(geti(ev, "type_uid"), 400302);
	assert_string_equal(gets_(ev, "query.hostname"), "a.test");
	assert_string_equal(gets_(ev, "query.type"), "A");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(ev, "answers"), 0), "rdata")),
	                    "198.18.0.7");
	assert_int_equal(geti(ev, "rcode_id"), 0);
	assert_string_equal(gets_(ev, "src_endpoint.ip"), "10.200.0.2");
	json_decref(ev);
	ev = ev_of("{\"seq\":2,\"type\":\"dns\",\"host\":\"b.test\",\"qtype\":\"AAAA\",\"answer\":\"NXDOMAIN\",\"verdict\":\"deny\","
	           "\"prev\":\"00\"}");
	assert_int_equal(geti(ev, "rcode_id"), 3);
	assert_int_equal(json_array_size(json_object_get(ev, "answers")), 0);
	assert_int_equal(geti(ev, "action_id"), 2);
	json_decref(ev);
	ev = ev_of("{\"seq\":9,\"type\":\"denial\",\"client\":\"127.0.0.1\",\"host\":\"other.test\",\"rule\":\"default\","
	           "\"reason\":\"host not in policy\",\"status\":403,\"prev\":\"00\"}");
	assert_int_equal(geti(ev, "class_uid"), 4001);
	assert_int_equal(geti(ev, "activity_id"), 5);
	assert_int_equal(geti(ev, "type_uid"), 400105);
	assert_string_equal(gets_(ev, "firewall_rule.condition"), "host not in policy");
	json_decref(ev);
	assert_null(ev_of("{\"seq\":1,\"type\":\"start\",\"prev\":\"00\"}"));
	assert_null(ev_of("{\"seq\":1,\"type\":\"response\",\"prev\":\"00\"}"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sd_exact),        cmocka_unit_test(test_sd_names),
		cmocka_unit_test(test_sd_bounded),      cmocka_unit_test(test_export_udp),
		cmocka_unit_test(test_export_tcp_down), cmocka_unit_test(test_ocsf_http),
		cmocka_unit_test(test_ocsf_dns_denial), cmocka_unit_test(test_ocsf_pairing),
		cmocka_unit_test(test_ocsf_pending_full), cmocka_unit_test(test_sinks_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
