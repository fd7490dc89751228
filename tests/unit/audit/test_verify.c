/*
 * tests/unit/audit/test_verify.c - audit_verify over hand-built chains
 * (SHA-256 and HMAC-SHA-256 computed here with OpenSSL, per
 * docs/audit-schema.md): each kind of fault names the right seq and line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include "audit/audit.h"

int test_verify_run(void);

#define NMAX 16
#define LMAX 1024
#pragma GCC diagnostic ignored "-Wformat-truncation"  /* the test lines are far shorter */

struct chain {
	char line[NMAX][LMAX];
	int n;
};

static const uint8_t key1[AUDIT_KEY_BYTES] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                              17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static void
hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static void
sha_hex(const char *s, char *out)
{
	uint8_t md[32];

	SHA256((const unsigned char *)s, strlen(s), md);
	hex(md, 32, out);
}

static void
evolve(uint8_t k[32])
{
	uint8_t in[19 + 32];

	memcpy(in, "sluice-audit-key-v1", 19);
	memcpy(in + 19, k, 32);
	SHA256(in, sizeof(in), k);
}

/*
 * Builds <n> records from seq <first> (prev of the first: genesis when 1,
 * else 64 'a'), each a request with path "/p<seq>"; with <mac> every record
 * carries a mac from key1 = K_1 evolved to its seq.
 */
static void
build(struct chain *c, int n, int first, int mac)
{
	char prev[65], body[LMAX], m[65];
	uint8_t k[32], md[32];
	unsigned int mdlen;
	int i, s;

	memset(prev, first == 1 ? '0' : 'a', 64);
	prev[64] = '\0';
	memcpy(k, key1, 32);
	for (s = 1; s < first; s++)
		evolve(k);
	c->n = n;
	for (i = 0; i < n; i++) {
		s = first + i;
		snprintf(body, sizeof(body),
		         "{\"seq\":%d,\"time\":\"2026-12-01T04:07:%02d.000Z\",\"type\":\"request\",\"sandbox\":\"a\","
		         "\"id\":\"1-%d\",\"host\":\"h.test\",\"method\":\"GET\",\"path\":\"/p%d\",\"verdict\":\"allow\","
		         "\"prev\":\"%s\"",
		         s, s % 60, s, s, prev);
		if (mac) {
			char covered[LMAX];

			snprintf(covered, sizeof(covered), "%s}", body);
			HMAC(EVP_sha256(), k, 32, (const unsigned char *)covered, strlen(covered), md, &mdlen);
			hex(md, 32, m);
			snprintf(c->line[i], LMAX, "%s,\"mac\":\"%s\"}", body, m);
		} else {
			snprintf(c->line[i], LMAX, "%s}", body);
		}
		evolve(k);
		sha_hex(c->line[i], prev);
	}
}

static void
del(struct chain *c, int idx)
{
	memmove(c->line[idx], c->line[idx + 1], (size_t)(c->n - idx - 1) * LMAX);
	c->n--;
}

static void
swap(struct chain *c, int a, int b)
{
	char t[LMAX];

	memcpy(t, c->line[a], LMAX);
	memcpy(c->line[a], c->line[b], LMAX);
	memcpy(c->line[b], t, LMAX);
}

/* Replaces the first <from> in line <idx> by <to> (same length). */
static void
edit(struct chain *c, int idx, const char *from, const char *to)
{
	char *p = strstr(c->line[idx], from);

	assert_non_null(p);
	assert_int_equal(strlen(from), strlen(to));
	memcpy(p, to, strlen(to));
}

struct run {
	enum audit_fault fault;
	int64_t seq;
	char report[2048];
};

/* Feeds <c> as file "f" (the last line without "\n" when <partial>). */
static void
run_opts(const struct chain *c, int partial, const struct audit_verify_opts *o, struct run *r)
{
	struct audit_verify *v = audit_verify_create(o);
	int i;

	audit_verify_file(v, "f");
	for (i = 0; i < c->n; i++)
		if (audit_verify_line(v, c->line[i], strlen(c->line[i]), (uint64_t)i + 1, !(partial && i == c->n - 1)))
			break;
	r->fault = audit_verify_finish(v, &r->seq);
	snprintf(r->report, sizeof(r->report), "%s", audit_verify_report(v));
	audit_verify_destroy(v);
}

static void
run(const struct chain *c, int partial, struct run *r)
{
	struct audit_verify_opts o = {0};

	run_opts(c, partial, &o, r);
}

static struct chain C;

static void
test_good(void **state)
{
	struct run r;
	char h[65], want[512];

	(void)state;
	build(&C, 5, 1, 0);
	run(&C, 0, &r);
	sha_hex(C.line[4], h);
	snprintf(want, sizeof(want),
	         "ok: 5 records, seq 1..5, 2026-12-01T04:07:01.000Z .. 2026-12-01T04:07:05.000Z, final hash %s\n", h);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	assert_string_equal(r.report, want);
}

static void
test_edited_body(void **state)
{
	struct run r;

	(void)state;
	build(&C, 5, 1, 0);
	edit(&C, 2, "/p3", "/p9");
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_EDITED);
	assert_int_equal(r.seq, 3);
	assert_string_equal(r.report, "f:3: seq 3: edited (its line no longer matches the prev of seq 4)\n");
	/* the first line too */
	build(&C, 5, 1, 0);
	edit(&C, 0, "GET", "PUT");
	run(&C, 0, &r);
	assert_string_equal(r.report, "f:1: seq 1: edited (its line no longer matches the prev of seq 2)\n");
}

static void
test_edited_prev(void **state)
{
	struct run r;
	char *p;

	(void)state;
	build(&C, 5, 1, 0);
	p = strstr(C.line[2], "\"prev\":\"") + 8;
	*p = *p == '0' ? '1' : '0';
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_EDITED);
	assert_int_equal(r.seq, 3);
	assert_string_equal(r.report,
	                    "f:3: seq 3: edited (its prev does not match the line of seq 2, nor its line the prev of seq 4)\n");
}

static void
test_edited_seq(void **state)
{
	struct run r;

	(void)state;
	build(&C, 5, 1, 0);
	edit(&C, 2, "\"seq\":3", "\"seq\":8");
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_EDITED);
	assert_int_equal(r.seq, 3);
	assert_string_equal(r.report, "f:3: seq 3: edited (it says seq 8, but its prev is the hash of seq 2)\n");
}

static void
test_genesis(void **state)
{
	struct run r;

	(void)state;
	build(&C, 3, 1, 0);
	edit(&C, 0, "\"prev\":\"0", "\"prev\":\"1");
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_EDITED);
	assert_int_equal(r.seq, 1);
	assert_string_equal(r.report, "f:1: seq 1: edited (seq 1's prev is not the genesis value)\n");
}

static void
test_removed(void **state)
{
	struct run r;

	(void)state;
	build(&C, 6, 1, 0);
	del(&C, 2);
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_REMOVED);
	assert_int_equal(r.seq, 3);
	assert_string_equal(r.report, "f:3: seq 3: removed (seq 3 is missing: this line has seq 4)\n");
	build(&C, 6, 1, 0);
	del(&C, 1);
	del(&C, 1);
	run(&C, 0, &r);
	assert_string_equal(r.report, "f:2: seq 2: removed (seq 2..3 are missing: this line has seq 4)\n");
}

static void
test_reordered(void **state)
{
	struct run r;

	(void)state;
	build(&C, 5, 1, 0);
	swap(&C, 2, 3);
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_REORDERED);
	assert_int_equal(r.seq, 4);
	assert_string_equal(r.report, "f:3: seq 4: reordered (seq 3 was expected here; it comes later, at f:4)\n");
	/* moved later, by more than one */
	build(&C, 6, 1, 0);
	swap(&C, 1, 2);
	swap(&C, 2, 3);  /* 1,3,4,2,5,6 */
	run(&C, 0, &r);
	assert_string_equal(r.report, "f:2: seq 3: reordered (seq 2 was expected here; it comes later, at f:4)\n");
	/* a repeated line */
	build(&C, 5, 1, 0);
	memcpy(C.line[3], C.line[2], LMAX);
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_REORDERED);
	assert_string_equal(r.report, "f:4: seq 3: reordered (it repeats seq 3)\n");
}

static void
test_truncated(void **state)
{
	struct run r;

	(void)state;
	build(&C, 5, 1, 0);
	C.line[2][60] = '\0';
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_TRUNCATED);
	assert_int_equal(r.seq, 3);
	assert_string_equal(r.report, "f:3: seq 3: truncated in the middle (an incomplete record followed by more lines)\n");
	/* not JSON at all */
	build(&C, 5, 1, 0);
	snprintf(C.line[1], LMAX, "hello}");
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_EDITED);
	assert_string_equal(r.report, "f:2: seq 2: edited (not a JSON record: '[' or '{' expected near 'hello')\n");
	/* JSON without seq */
	snprintf(C.line[1], LMAX, "{\"type\":\"request\"}");
	run(&C, 0, &r);
	assert_string_equal(r.report,
	                    "f:2: seq 2: edited (not a record: an integer seq and a 64-hex prev are required)\n");
}

static void
test_partial_last(void **state)
{
	struct run r;
	char h[65], want[768];

	(void)state;
	build(&C, 5, 1, 0);
	C.line[4][30] = '\0';
	run(&C, 1, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	sha_hex(C.line[3], h);
	snprintf(want, sizeof(want),
	         "ok: 4 records, seq 1..4, 2026-12-01T04:07:01.000Z .. 2026-12-01T04:07:04.000Z, final hash %s\n"
	         "warning: f:5: incomplete last record (30 bytes without a final newline, as a crash during a write "
	         "leaves it; not verified)\n",
	         h);
	assert_string_equal(r.report, want);
}

static void
test_starts_later(void **state)
{
	struct run r;

	(void)state;
	build(&C, 3, 7, 0);
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	assert_non_null(strstr(r.report, "ok: 3 records, seq 7..9, "));
	assert_non_null(strstr(r.report, "\nnote: the prev of seq 7 is not checked: the chain starts before these files\n"));
}

static void
feed(struct audit_verify *v, const char *file, const struct chain *c, int from, int to)
{
	int i;

	audit_verify_file(v, file);
	for (i = from; i < to; i++)
		audit_verify_line(v, c->line[i], strlen(c->line[i]), (uint64_t)(i - from) + 1, 1);
}

static void
test_files(void **state)
{
	struct audit_verify_opts o = {0};
	struct audit_verify *v;
	int64_t seq;

	(void)state;
	build(&C, 7, 1, 0);
	v = audit_verify_create(&o);
	feed(v, "a.1", &C, 0, 3);
	feed(v, "a", &C, 3, 7);
	assert_int_equal(audit_verify_finish(v, &seq), AUDIT_FAULT_NONE);
	assert_non_null(strstr(audit_verify_report(v), "ok: 7 records, seq 1..7"));
	audit_verify_destroy(v);
	/* given newest first */
	v = audit_verify_create(&o);
	feed(v, "a", &C, 3, 7);
	feed(v, "a.1", &C, 0, 3);
	assert_int_equal(audit_verify_finish(v, &seq), AUDIT_FAULT_REORDERED);
	assert_string_equal(audit_verify_report(v),
	                    "a.1:1: seq 1: reordered (it comes after seq 7; give rotated files oldest first)\n");
	audit_verify_destroy(v);
	/* a rotated file missing in between */
	v = audit_verify_create(&o);
	feed(v, "a.1", &C, 0, 3);
	feed(v, "a", &C, 5, 7);
	assert_int_equal(audit_verify_finish(v, &seq), AUDIT_FAULT_REMOVED);
	assert_int_equal(seq, 4);
	assert_string_equal(audit_verify_report(v), "a:1: seq 4: removed (seq 4..5 are missing: this line has seq 6; "
	                                            "the previous file a.1 ended at seq 3)\n");
	audit_verify_destroy(v);
	/* a partial line at the end of a rotated file, then more records */
	v = audit_verify_create(&o);
	audit_verify_file(v, "a.1");
	audit_verify_line(v, C.line[0], strlen(C.line[0]), 1, 1);
	audit_verify_line(v, C.line[1], 20, 2, 0);
	feed(v, "a", &C, 2, 4);
	assert_int_equal(audit_verify_finish(v, &seq), AUDIT_FAULT_TRUNCATED);
	assert_string_equal(audit_verify_report(v), "a.1:2: seq 2: truncated in the middle (an incomplete record, "
	                                            "20 bytes without a newline, is followed by more)\n");
	audit_verify_destroy(v);
}

static void
test_mac(void **state)
{
	struct audit_verify_opts o = {0};
	struct audit_key k;
	struct run r;

	(void)state;
	k.seq = 1;
	memcpy(k.key, key1, 32);
	o.key = &k;
	build(&C, 5, 1, 1);
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	assert_non_null(strstr(r.report, "\nnote: macs: 5 checked with the key file from seq 1\n"));
	/* without a key the macs are only noted */
	run(&C, 0, &r);
	assert_non_null(strstr(r.report, "\nnote: macs present but not checked (no --key-file)\n"));
	/* the last line edited: only the mac can tell */
	edit(&C, 4, "/p5", "/p6");
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_EDITED);
	assert_string_equal(r.report, "f:5: seq 5: edited (mac mismatch)\n");
	run(&C, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	/* an edited prev member: the good mac of seq 2 settles the blame on seq 3 at once */
	build(&C, 5, 1, 1);
	edit(&C, 2, "\"seq\":3", "\"seq\":3");
	{
		char *p = strstr(C.line[2], "\"prev\":\"") + 8;
		*p = *p == '0' ? '1' : '0';
	}
	run_opts(&C, 0, &o, &r);
	assert_string_equal(r.report, "f:3: seq 3: edited (mac mismatch)\n");
	/* a key file from seq 3 (a later copy) */
	build(&C, 5, 1, 1);
	evolve(k.key);
	evolve(k.key);
	k.seq = 3;
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	assert_non_null(strstr(r.report, "\nnote: macs: 3 checked with the key file from seq 3; 2 records before "
	                                 "seq 3 cannot be checked with it\n"));
	/* the wrong key */
	memset(k.key, 7, 32);
	k.seq = 1;
	run_opts(&C, 0, &o, &r);
	assert_string_equal(r.report, "f:1: seq 1: edited (mac mismatch)\n");
	/* no mac at all */
	build(&C, 3, 1, 0);
	run_opts(&C, 0, &o, &r);
	assert_string_equal(r.report, "f:1: seq 1: edited (it has no mac, but --key-file was given)\n");
	/* too far to evolve */
	memcpy(k.key, key1, 32);
	o.evolve_max = 3;
	build(&C, 2, 7, 1);
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_UNREADABLE);
	assert_string_equal(r.report, "f:1: seq 7: cannot check its mac: the key file is for seq 1, more than 3 "
	                              "evolutions back\n");
}

static void
test_checkpoints(void **state)
{
	struct audit_checkpoints cp;
	struct audit_verify_opts o = {0};
	struct run r;
	char h[65], text[512];

	(void)state;
	build(&C, 5, 1, 0);
	memset(&cp, 0, sizeof(cp));
	cp.path = strdup("cps");
	sha_hex(C.line[2], h);
	snprintf(text, sizeof(text), "Dec  1 04:07:10 host sluice[1]: sluice-audit checkpoint file=/x seq=3 hash=%s\n", h);
	assert_int_equal(audit_checkpoints_parse(&cp, text, strlen(text), 1), 1);
	audit_checkpoints_sort(&cp);
	o.cp = &cp;
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	assert_non_null(strstr(r.report, "\nnote: checkpoints: 1 matched\n"));
	/* the log was cut after seq 5, but a checkpoint names seq 7 */
	snprintf(text, sizeof(text), "seq=7 hash=%s\n", h);
	assert_int_equal(audit_checkpoints_parse(&cp, text, strlen(text), 2), 1);
	audit_checkpoints_sort(&cp);
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_SHORT);
	assert_int_equal(r.seq, 6);
	assert_string_equal(r.report, "f:6: seq 6: truncated: the log ends at seq 5 but a checkpoint names seq 7 (cps:2)\n");
	/* seq 3 edited where a checkpoint saw it: blamed directly */
	cp.n = 1;
	edit(&C, 2, "/p3", "/p4");
	run_opts(&C, 0, &o, &r);
	assert_string_equal(r.report, "f:3: seq 3: edited (its hash differs from the checkpoint at cps:1)\n");
	/* seq 2 edited: seq 3's line is confirmed, so seq 2 is the one */
	build(&C, 5, 1, 0);
	edit(&C, 1, "/p2", "/p7");
	run_opts(&C, 0, &o, &r);
	assert_string_equal(r.report, "f:2: seq 2: edited (its line no longer matches the prev of seq 3, which its "
	                              "mac or a checkpoint confirms)\n");
	/* a checkpoint before the files given is noted, not checked */
	build(&C, 3, 4, 0);
	cp.n = 0;
	snprintf(text, sizeof(text), "seq=2 hash=%s\n", h);
	audit_checkpoints_parse(&cp, text, strlen(text), 1);
	run_opts(&C, 0, &o, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	assert_non_null(strstr(r.report, "\nnote: checkpoints: 0 matched; 1 name records before seq 4, not in these files\n"));
	audit_checkpoints_dispose(&cp);
}

static void
test_checkpoint_record(void **state)
{
	struct chain c;
	char prev[65], h1[65];
	struct run r;

	(void)state;
	build(&c, 2, 1, 0);
	sha_hex(c.line[1], prev);
	sha_hex(c.line[1], h1);
	snprintf(c.line[2], LMAX,
	         "{\"seq\":3,\"time\":\"2026-12-01T04:07:03.000Z\",\"type\":\"checkpoint\",\"sandbox\":\"-\","
	         "\"head_seq\":2,\"head_hash\":\"%s\",\"prev\":\"%s\"}", h1, prev);
	c.n = 3;
	run(&c, 0, &r);
	assert_int_equal(r.fault, AUDIT_FAULT_NONE);
	edit(&c, 2, "\"head_seq\":2", "\"head_seq\":1");
	run(&c, 0, &r);
	assert_string_equal(r.report, "f:3: seq 3: edited (its head_seq/head_hash do not name the record before it)\n");
}

static void
test_too_long(void **state)
{
	struct audit_verify_opts o = {0};
	struct audit_verify *v;
	int64_t seq;

	(void)state;
	build(&C, 3, 1, 0);
	v = audit_verify_create(&o);
	feed(v, "f", &C, 0, 2);
	assert_int_equal(audit_verify_too_long(v, 3), 1);
	assert_int_equal(audit_verify_finish(v, &seq), AUDIT_FAULT_UNREADABLE);
	assert_string_equal(audit_verify_report(v), "f:3: seq 3: unreadable (the line is longer than 1048576 bytes)\n");
	audit_verify_destroy(v);
	/* empty log */
	v = audit_verify_create(&o);
	audit_verify_file(v, "f");
	assert_int_equal(audit_verify_finish(v, &seq), AUDIT_FAULT_NONE);
	assert_string_equal(audit_verify_report(v), "ok: 0 records\n");
	audit_verify_destroy(v);
}

int
test_verify_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),        cmocka_unit_test(test_edited_body),
		cmocka_unit_test(test_edited_prev), cmocka_unit_test(test_edited_seq),
		cmocka_unit_test(test_genesis),     cmocka_unit_test(test_removed),
		cmocka_unit_test(test_reordered),   cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_partial_last), cmocka_unit_test(test_starts_later),
		cmocka_unit_test(test_files),       cmocka_unit_test(test_mac),
		cmocka_unit_test(test_checkpoints), cmocka_unit_test(test_checkpoint_record),
		cmocka_unit_test(test_too_long),
	};

	return cmocka_run_group_tests_name("audit/verify", tests, NULL, NULL);
}
