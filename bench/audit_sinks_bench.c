/*
 * bench/audit_sinks_bench.c - what the SIEM copies cost the audit writer
 * thread per record (issue 22 item 3): one parse of a typical request line
 * (audit_record_parse), its RFC 5424 STRUCTURED-DATA (audit_sd_format) and
 * its OCSF event serialised (audit_ocsf_event + json_dumps), timed apart.
 * Not a test (no assertions on time); `make audit_sinks_bench`, then
 * ./audit/audit_sinks_bench [N].  Figures go to docs/performance.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "audit/writer_int.h"

static const char line[] =
	"{\"seq\":123456,\"time\":\"2026-12-01T04:07:07.123Z\",\"type\":\"request\",\"sandbox\":\"agent-7\",\"id\":\"42-3\","
	"\"client\":\"10.200.0.2:40000\",\"dest\":\"198.18.0.7:443\",\"sni\":\"api.example.test\",\"host\":\"api.example.test\","
	"\"method\":\"POST\",\"path\":\"/v1/charges\",\"http_version\":\"1.1\",\"verdict\":\"allow\",\"rule\":\"api.example.test/rules/2\","
	"\"budget\":{\"key\":\"stripe/day\",\"amount\":\"12.5\"},\"conn\":42,"
	"\"prev\":\"4a9bc1703bd7d767385af2658c6a2ef14292daef399c3cec2048036f0b92463a\"}";

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	long i, n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
	char *sd = malloc(AUDIT_SD_MAX);
	struct audit_record rec;
	double t0, t_parse = 0, t_sd = 0, t_ocsf = 0;
	size_t sink = 0;

	for (i = 0; i < n; i++) {
		json_t *ev;
		char *s;

		t0 = now_s();
		if (audit_record_parse(&rec, line, sizeof(line) - 1) != 0)
			return 1;
		t_parse += now_s() - t0;
		t0 = now_s();
		sink += (size_t)audit_sd_format("sluice@32473", &rec, line, sizeof(line) - 1, sd, AUDIT_SD_MAX);
		t_sd += now_s() - t0;
		t0 = now_s();
		ev = audit_ocsf_event(&rec);
		s = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
		sink += strlen(s);
		free(s);
		json_decref(ev);
		t_ocsf += now_s() - t0;
		audit_record_dispose(&rec);
	}
	printf("records %ld (line %zu bytes)\n", n, sizeof(line) - 1);
	printf("parse   %.2f us/record\n", t_parse / (double)n * 1e6);
	printf("sd      %.2f us/record (with the line's SHA-256)\n", t_sd / (double)n * 1e6);
	printf("ocsf    %.2f us/record (event built and serialised)\n", t_ocsf / (double)n * 1e6);
	printf("total   %.2f us/record, %.0f records/s on one writer thread\n", (t_parse + t_sd + t_ocsf) / (double)n * 1e6,
	       (double)n / (t_parse + t_sd + t_ocsf));
	free(sd);
	return sink == 0;
}
