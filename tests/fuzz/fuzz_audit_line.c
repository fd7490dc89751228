/*
 * fuzz_audit_line.c - the audit reader on arbitrary log bytes: the line reader
 * (a small cap, so too-long lines are common), chain verification with a key
 * and checkpoints, record parsing, filters, the request join, the table and
 * the summary.  Properties: no crash, no leak, a verdict always has a report,
 * and no table output ever holds a raw control byte other than "\n".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common/sluice.h"
#include "audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_LINE_CAP 512

static FILE *sink;

static void
check_harmless(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n') || c >= 0x7f) {
			fprintf(stderr, "raw byte 0x%02x in: %.*s\n", c, (int)(n - i < 200 ? n - i : 200), s + (i > 100 ? i - 100 : 0));
			abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char cptext[] = "seq=2 hash=0000000000000000000000000000000000000000000000000000000000000000\n";
	struct audit_verify_opts vo = {0};
	struct audit_checkpoints cp = {0};
	struct audit_key key = {.seq = 1};
	struct audit_reader r;
	struct audit_verify *v;
	struct audit_record rec;
	struct audit_filter f;
	struct audit_join *j;
	struct audit_summary *sum;
	const char *line;
	char *out = NULL;
	size_t len, outlen = 0;
	int fd, rc, done = 0;
	FILE *tbl;

	if (sink == NULL)
		sink = fopen("/dev/null", "w");
	fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd == -1 || (size > 0 && write(fd, data, size) != (ssize_t)size) || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	audit_checkpoints_parse(&cp, cptext, sizeof(cptext) - 1, 1);
	audit_checkpoints_sort(&cp);
	vo.key = &key;
	vo.cp = &cp;
	vo.evolve_max = 64;  /* a hostile seq must not make the fuzzer slow */
	v = audit_verify_create(&vo);
	audit_verify_file(v, "fuzz");
	j = audit_join_create();
	sum = audit_summary_create();
	audit_filter_init(&f);
	f.host = data[0 % (size ? size : 1)] & 1 ? "*.test" : "api.test";
	f.verdict = "allow";
	tbl = open_memstream(&out, &outlen);
	audit_reader_init(&r, fd, FUZZ_LINE_CAP);
	for (;;) {
		rc = audit_reader_next(&r, &line, &len);
		if (rc == 0 || rc == SLUICE_EIO)
			break;
		if (rc == SLUICE_ETOOBIG) {
			if (!done)
				done = audit_verify_too_long(v, r.lineno);
			continue;
		}
		if (!done)
			done = audit_verify_line(v, line, len, r.lineno, 1);
		if (audit_record_parse(&rec, line, len) == 0) {
			audit_join_add(j, &rec);
			const struct audit_record *req = audit_join_find(j, &rec);
			audit_table_row(tbl, &rec, req);
			(void)audit_filter_match(&f, &rec, req);
			audit_summary_add(sum, &rec);
			audit_record_dispose(&rec);
		}
	}
	if (!done && audit_reader_pending(&r) > 0)
		audit_verify_line(v, r.buf + r.start, r.end - r.start, r.lineno + 1, 0);
	audit_verify_finish(v, NULL);
	if (audit_verify_report(v)[0] == '\0')
		abort();
	check_harmless(audit_verify_report(v), strlen(audit_verify_report(v)) - 0);
	audit_summary_print(sum, tbl);
	fclose(tbl);
	check_harmless(out, outlen);
	free(out);
	audit_reader_dispose(&r);
	audit_verify_destroy(v);
	audit_join_destroy(j);
	audit_summary_destroy(sum);
	audit_checkpoints_dispose(&cp);
	close(fd);
	return 0;
}
