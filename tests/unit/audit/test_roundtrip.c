/*
 * test_roundtrip.c - one record format (audit/format.h) for both sides:
 * what the writer makes (audit/chain.c, and the whole writer: queue, thread,
 * file, key file) the reader's code verifies (audit/verify.c, keys.c,
 * record.c), with the mac computed by the one function both call
 * (audit_mac_compute); an edit anywhere in a line the writer made is caught
 * by the reader; every kind and verdict the writer names the reader parses
 * back to the same enum.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>
#include "common/sluice.h"
#include "audit/audit.h"
#include "audit/format.h"
#include "audit/writer_int.h"

#define NREC 6
#define LINE_CAP 4096

static const uint8_t key1[AUDIT_KEY_BYTES] = {0x51, 0x1c, 0xe0, 3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                              16,   17,   18,   19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* Record bodies as the writer formats them (members, no braces): kinds of each shape, escaped bytes. */
static const char *const bodies[NREC] = {
	"\"time\":\"2026-12-01T04:07:07.123Z\",\"type\":\"start\",\"sandbox\":\"-\",\"run\":\"00ff\"",
	"\"time\":\"2026-12-01T04:07:07.124Z\",\"type\":\"connection\",\"sandbox\":\"a\",\"verdict\":\"allow\"",
	"\"time\":\"2026-12-01T04:07:07.125Z\",\"type\":\"request\",\"sandbox\":\"a\",\"id\":\"1-1\","
	"\"verdict\":\"deny\",\"path\":\"/x\\u0000\\u00ff\\\"}\"",
	"\"time\":\"2026-12-01T04:07:07.126Z\",\"type\":\"response\",\"sandbox\":\"a\",\"id\":\"1-1\",\"status\":200",
	"\"time\":\"2026-12-01T04:07:07.127Z\",\"type\":\"dns\",\"sandbox\":\"a\",\"answer\":\"NXDOMAIN\"",
	"",  /* no members at all: {"seq":N,"prev":...} */
};

/* Lines of a keyed chain from seq 1 (without their "\n") into <lines>; their lengths into <lens>. */
static void
make_chain(char lines[NREC][LINE_CAP], size_t lens[NREC])
{
	struct audit_chain ch;
	long n;
	int i;

	audit_chain_init(&ch, 1, NULL, key1);
	for (i = 0; i < NREC; i++) {
		n = audit_chain_wrap(&ch, bodies[i], strlen(bodies[i]), lines[i], LINE_CAP);
		assert_true(n > 1);
		assert_int_equal(lines[i][n - 1], '\n');
		lens[i] = (size_t)n - 1;
	}
	audit_chain_wipe(&ch);
}

/* The reader's verdict over <lines> with K_1 (or no key). */
static enum audit_fault
verify_lines(char lines[NREC][LINE_CAP], const size_t lens[NREC], int keyed, int64_t *seq)
{
	struct audit_key k = {.seq = 1};
	struct audit_verify_opts o = {.key = keyed ? &k : NULL};
	struct audit_verify *v;
	enum audit_fault f;
	int i;

	memcpy(k.key, key1, sizeof(k.key));
	v = audit_verify_create(&o);
	assert_non_null(v);
	audit_verify_file(v, "mem.jsonl");
	for (i = 0; i < NREC; i++)
		if (audit_verify_line(v, lines[i], lens[i], (uint64_t)i + 1, 1) == 1)
			break;
	f = audit_verify_finish(v, seq);
	audit_verify_destroy(v);
	sluice_wipe(k.key, sizeof(k.key));
	return f;
}

static void
test_writer_lines_verify_with_reader(void **state)
{
	char lines[NREC][LINE_CAP];
	size_t lens[NREC];
	struct audit_key k = {.seq = 1};
	struct audit_record rec;
	uint64_t seq;
	int i;

	(void)state;
	make_chain(lines, lens);
	assert_int_equal(verify_lines(lines, lens, 1, NULL), AUDIT_FAULT_NONE);
	assert_int_equal(verify_lines(lines, lens, 0, NULL), AUDIT_FAULT_NONE);
	/* each mac, one by one, with the reader's check and the key the reader evolves */
	memcpy(k.key, key1, sizeof(k.key));
	for (i = 0; i < NREC; i++, k.seq++) {
		assert_int_equal(audit_mac_check(&k, lines[i], lens[i]), 0);
		assert_int_equal(audit_line_seq(lines[i], lens[i], &seq), 0);
		assert_true(seq == (uint64_t)i + 1);
		assert_int_equal(audit_record_parse(&rec, lines[i], lens[i]), 0);
		assert_true(rec.seq == i + 1);
		audit_record_dispose(&rec);
		audit_key_evolve(k.key);
	}
	/* the wrong key's mac does not check */
	k.seq = 1;
	memcpy(k.key, key1, sizeof(k.key));
	k.key[0] ^= 1;
	assert_int_equal(audit_mac_check(&k, lines[0], lens[0]), 1);
}

/* Every byte of every line the writer made, changed, is caught by the reader (the mac or the chain). */
static void
test_any_edit_is_caught(void **state)
{
	char lines[NREC][LINE_CAP];
	size_t lens[NREC], i;
	int r;
	int64_t seq;
	enum audit_fault f;

	(void)state;
	make_chain(lines, lens);
	for (r = 0; r < NREC; r++) {
		for (i = 0; i < lens[r]; i++) {
			char was = lines[r][i];

			lines[r][i] = (char)(was == 'a' ? 'b' : was == '0' ? '1' : 'a');
			seq = 0;
			f = verify_lines(lines, lens, 1, &seq);
			lines[r][i] = was;
			if (f == AUDIT_FAULT_NONE)
				fail_msg("an edit of byte %zu of record %d went unnoticed", i, r + 1);
		}
	}
	assert_int_equal(verify_lines(lines, lens, 1, NULL), AUDIT_FAULT_NONE);
}

/* The whole writer (audit_open .. audit_close) with a key file made by the reader's keygen, read back by the reader. */
static void
test_writer_file_verifies_with_reader(void **state)
{
	char dir[] = "/tmp/sluice-roundtrip-XXXXXX", logp[256], keyp[256];
	struct audit_opts o = {0};
	struct audit_key k;
	struct audit_reader rd;
	struct audit_record rec;
	struct audit_verify_opts vo = {.key = &k};
	struct audit_verify *v;
	struct audit *a;
	const char *err = NULL, *line;
	enum audit_kind seen[8];
	size_t len, nseen = 0;
	int fd, i, rc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	snprintf(keyp, sizeof(keyp), "%s/audit.key", dir);
	assert_int_equal(audit_key_generate(keyp, &err), 0);
	assert_int_equal(audit_key_load(keyp, &k, &err), 0);  /* K_1, before the writer evolves the file */
	o.file = logp;
	o.key_file = keyp;
	o.fsync_ms = 1000;
	o.queue = 64;
	a = audit_open(&o, NULL, NULL, NULL, &err);
	assert_non_null(a);
	assert_int_equal(audit_start(a, &err), 0);
	for (i = 0; i < 3; i++) {
		struct audit_rec r = AUDIT_REC_INIT(i == 1 ? AUDIT_KIND_DENIAL : AUDIT_KIND_REQUEST);

		r.sandbox = "rt";
		r.id = "7-1";
		r.host = "api.example.test";
		r.method = "POST";
		r.path = "/v1/\"quoted\"\n";
		r.verdict = i == 2 ? AUDIT_VERDICT_DENY : AUDIT_VERDICT_ALLOW;
		r.status = i == 2 ? 403 : -1;
		assert_true(audit_write(a, &r) > 0);
	}
	audit_stop(a, "test");
	audit_close(a);

	fd = open(logp, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	audit_reader_init(&rd, fd, AUDIT_READ_LINE_MAX);
	v = audit_verify_create(&vo);
	audit_verify_file(v, logp);
	while ((rc = audit_reader_next(&rd, &line, &len)) == 1) {
		assert_int_equal(audit_verify_line(v, line, len, rd.lineno, 1), 0);
		assert_int_equal(audit_record_parse(&rec, line, len), 0);
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = rec.kind;
		if (rec.kind == AUDIT_KIND_REQUEST)
			assert_true(rec.verdict_kind == AUDIT_VERDICT_ALLOW || rec.verdict_kind == AUDIT_VERDICT_DENY);
		audit_record_dispose(&rec);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(audit_verify_finish(v, NULL), AUDIT_FAULT_NONE);
	assert_non_null(strstr(audit_verify_report(v), "5 records"));
	assert_non_null(strstr(audit_verify_report(v), "macs: 5 checked"));
	audit_verify_destroy(v);
	audit_reader_dispose(&rd);
	close(fd);
	sluice_wipe(k.key, sizeof(k.key));
	assert_int_equal(nseen, 5);
	assert_int_equal(seen[0], AUDIT_KIND_START);
	assert_int_equal(seen[1], AUDIT_KIND_REQUEST);
	assert_int_equal(seen[2], AUDIT_KIND_DENIAL);
	assert_int_equal(seen[3], AUDIT_KIND_REQUEST);
	assert_int_equal(seen[4], AUDIT_KIND_STOP);
	unlink(logp);
	unlink(keyp);
	rmdir(dir);
}

/* Every kind and verdict the writer names, the reader parses back to the same value; other text is unknown. */
static void
test_kinds_and_verdicts_round_trip(void **state)
{
	unsigned k;

	(void)state;
	for (k = AUDIT_KIND_UNKNOWN + 1; k < AUDIT_KIND_COUNT; k++) {
		assert_string_not_equal(audit_kind_name((enum audit_kind)k), "unknown");
		assert_int_equal(audit_kind_parse(audit_kind_name((enum audit_kind)k)), k);
	}
	assert_int_equal(audit_kind_parse("unknown"), AUDIT_KIND_UNKNOWN);
	assert_int_equal(audit_kind_parse("Request"), AUDIT_KIND_UNKNOWN);
	assert_int_equal(audit_kind_parse("request "), AUDIT_KIND_UNKNOWN);
	assert_int_equal(audit_kind_parse(""), AUDIT_KIND_UNKNOWN);
	assert_int_equal(audit_kind_parse(NULL), AUDIT_KIND_UNKNOWN);
	assert_int_equal(audit_verdict_parse(audit_verdict_name(AUDIT_VERDICT_ALLOW)), AUDIT_VERDICT_ALLOW);
	assert_int_equal(audit_verdict_parse(audit_verdict_name(AUDIT_VERDICT_DENY)), AUDIT_VERDICT_DENY);
	assert_int_equal(audit_verdict_parse(NULL), AUDIT_VERDICT_NONE);
	assert_int_equal(audit_verdict_parse("DENY"), AUDIT_VERDICT_NONE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_lines_verify_with_reader),
		cmocka_unit_test(test_any_edit_is_caught),
		cmocka_unit_test(test_writer_file_verifies_with_reader),
		cmocka_unit_test(test_kinds_and_verdicts_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
