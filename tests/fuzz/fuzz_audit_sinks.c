/*
 * fuzz_audit_sinks.c - the SIEM copies of an audit line (issue 22 item 3):
 * arbitrary bytes as a line, parsed as the writer thread does
 * (audit_record_parse), then its RFC 5424 STRUCTURED-DATA (audit/sd.c) at
 * every capacity up to AUDIT_SD_MAX and its OCSF event (audit/ocsf.c).
 * The SD must be one well-formed element: it starts "[sluice@32473 hash=",
 * ends "]", every '"' inside a value is escaped, and no control byte is in
 * it; nothing may read or write out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "audit/writer_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_sd(const char *sd, long n)
{
	long i;
	int inval = 0;

	if (n < 2 || memcmp(sd, "[sluice@32473 hash=\"", 20) != 0 || sd[n - 1] != ']')
		abort();
	for (i = 1; i < n - 1; i++) {
		unsigned char c = (unsigned char)sd[i];

		if (c < 0x20 || c == 0x7f)
			abort();
		if (inval && c == '\\') {
			i++;  /* an escape: the next byte is \ " or ] */
			if (sd[i] != '\\' && sd[i] != '"' && sd[i] != ']')
				abort();
			continue;
		}
		if (c == '"')
			inval = !inval;
		else if (inval && c == ']')
			abort();
	}
	if (inval)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct audit_record rec;
	char *line, *sd;
	json_t *ev;
	long n, m;
	size_t cap;

	if (size > AUDIT_LINE_MAX)
		return 0;
	line = malloc(size ? size : 1);
	memcpy(line, data, size);
	if (audit_record_parse(&rec, line, size) != 0)
		rec.obj = NULL;
	sd = malloc(AUDIT_SD_MAX);
	n = audit_sd_format("sluice@32473", &rec, line, size, sd, AUDIT_SD_MAX);
	if (n < 0)
		abort();  /* a line of at most AUDIT_LINE_MAX bytes always fits */
	check_sd(sd, n);
	for (cap = 0; cap < (size_t)n; cap += 1 + (size_t)n / 7) {
		char *small = malloc(cap ? cap : 1);

		m = audit_sd_format("sluice@32473", &rec, line, size, small, cap);
		if (m >= 0 && (size_t)m > cap)
			abort();
		free(small);
	}
	ev = audit_ocsf_event(&rec);
	if (ev != NULL) {  /* the pairing: the same line as its response record, and no response at all */
		json_t *copy = json_deep_copy(ev);

		audit_ocsf_answer(ev, &rec);
		if (copy != NULL)
			audit_ocsf_answer(copy, NULL);
		json_decref(copy);
	}
	json_decref(ev);
	audit_record_dispose(&rec);
	free(sd);
	free(line);
	return 0;
}
