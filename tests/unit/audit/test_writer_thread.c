/*
 * test_writer_thread.c - the audit writer thread and its files
 * (audit/writer_thread.c, file.c): seq and prev continue across
 * restarts and rotations; a partial last line is cut and reported, an
 * unreadable last line refuses; macs verify from the initial key, and the
 * key file moves forward and never keeps a used key; a key file ahead of
 * the log refuses; checkpoints name the right line; a parked request
 * resumes once its record is written; a log that cannot be written fails
 * closed (/dev/full).  Hashes and macs are checked with OpenSSL directly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <jansson.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "audit/writer_int.h"

static char dir[] = "/tmp/sluice-test-auditw-XXXXXX";
static char logp[256], keyp[256], ckp[256];

static int
setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	snprintf(keyp, sizeof(keyp), "%s/audit.key", dir);
	snprintf(ckp, sizeof(ckp), "%s/checkpoints", dir);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Empties the directory between tests. */
static void
clean(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/* '%s'/.[!.]* 2>/dev/null; true", dir, dir);
	assert_int_equal(system(cmd), 0);
}

static struct audit_opts
cfg_for(char *key, unsigned ckpt_ms)
{
	struct audit_opts c;

	memset(&c, 0, sizeof(c));
	c.file = logp;
	c.key_file = key;
	c.fsync_ms = 1000;
	c.checkpoint_ms = ckpt_ms;
	c.checkpoint_file = ckpt_ms ? ckp : NULL;
	c.queue = 1024;
	return c;
}

static struct audit *
start(char *key, unsigned ckpt_ms)
{
	struct audit_opts c = cfg_for(key, ckpt_ms);
	const char *err = NULL;
	struct audit *a = audit_open(&c, "cfg.yaml", NULL, NULL, &err);

	if (a == NULL)
		fail_msg("audit_open: %s", err);
	assert_int_equal(audit_start(a, &err), 0);
	return a;
}

static uint64_t
put(struct audit *a, const char *host)
{
	struct audit_rec r = {
		.kind = AUDIT_KIND_DNS, .sandbox = "sb", .client = "10.0.0.2", .host = host, .dns_qtype = "A",
		.dns_answer = "NXDOMAIN", .verdict = AUDIT_VERDICT_DENY, .status = -1, .bytes_up = -1, .bytes_down = -1,
		.duration_ms = -1, .upstream_tls = -1,
	};

	return audit_write(a, &r);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void
sha_hex(const void *p, size_t n, char out[65])
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned len = 0, i;

	assert_int_equal(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL), 1);
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

struct chain {
	uint64_t seq;            /* the last seq seen */
	char prev[65];           /* hash of the last line */
	int keyed;
	uint8_t key[32];         /* K_(seq+1) */
	uint64_t nlines;
};

static void
evolve(uint8_t key[32])
{
	uint8_t in[51], md[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	memcpy(in, "sluice-audit-key-v1", 19);
	memcpy(in + 19, key, 32);
	assert_int_equal(EVP_Digest(in, sizeof(in), md, &len, EVP_sha256(), NULL), 1);
	memcpy(key, md, 32);
}

/* Verifies the lines of <path> against <ch> (seq contiguous, prev, mac); the text is returned for more checks. */
static char *
verify_file(const char *path, struct chain *ch)
{
	size_t len, off = 0, n;
	char *buf = slurp(path, &len), h[65], mac[65];
	uint8_t md[32];
	unsigned mdlen = 0;
	uint64_t seq;

	assert_true(len == 0 || buf[len - 1] == '\n');
	while (off < len) {
		char *line = buf + off, *nl = memchr(line, '\n', len - off), *p, *m;

		n = (size_t)(nl - line);
		assert_int_equal(audit_line_seq(line, n, &seq), 0);
		if (ch->seq != 0 || seq != 1)
			assert_true(seq == ch->seq + 1);
		p = strstr(line, ",\"prev\":\"");
		assert_true(p != NULL && p < nl);
		if (ch->seq == 0)
			assert_memory_equal(p + 9, "0000000000000000000000000000000000000000000000000000000000000000", 64);
		else
			assert_memory_equal(p + 9, ch->prev, 64);
		m = strstr(line, ",\"mac\":\"");
		if (ch->keyed) {
			char cov[AUDIT_LINE_MAX];

			assert_true(m != NULL && m < nl);
			assert_int_equal((size_t)(m - line) + 8 + 64 + 2, n);
			memcpy(cov, line, (size_t)(m - line));
			cov[m - line] = '}';
			assert_non_null(HMAC(EVP_sha256(), ch->key, 32, (uint8_t *)cov, (size_t)(m - line) + 1, md, &mdlen));
			for (unsigned i = 0; i < 32; i++)
				snprintf(mac + 2 * i, 3, "%02x", md[i]);
			assert_memory_equal(m + 8, mac, 64);
			evolve(ch->key);
		} else {
			assert_true(m == NULL || m > nl);
		}
		sha_hex(line, n, h);
		memcpy(ch->prev, h, 65);
		ch->seq = seq;
		ch->nlines++;
		off += n + 1;
	}
	return buf;
}

static void
test_chain_across_restarts(void **state)
{
	struct chain ch = {0};
	struct audit *a;
	char *text;
	int i;

	(void)state;
	clean();
	a = start(NULL, 0);
	for (i = 0; i < 5; i++)
		assert_true(put(a, "a.test") == (uint64_t)i + 2);
	audit_close(a);
	a = start(NULL, 0);
	assert_true(put(a, "b.test") == 9);  /* start 1, 5, stop 7; start 8 */
	audit_close(a);
	text = verify_file(logp, &ch);
	assert_true(ch.seq == 10);
	assert_non_null(strstr(text, "{\"seq\":7,"));
	assert_non_null(strstr(strstr(text, "{\"seq\":7,"), "\"type\":\"stop\",\"sandbox\":\"-\",\"reason\":\"exit\",\"records\":7,"));
	assert_non_null(strstr(strstr(text, "{\"seq\":8,"), "\"type\":\"start\""));
	free(text);
}

static void
test_partial_line_cut_and_reported(void **state)
{
	struct chain ch = {0};
	struct audit *a;
	char *text;
	const char *s;
	FILE *f;

	(void)state;
	clean();
	a = start(NULL, 0);
	put(a, "a.test");
	audit_close(a);
	/* a crash inside a write: the file ends in part of a line */
	f = fopen(logp, "a");
	fputs("{\"seq\":4,\"time\":\"2026-", f);
	fclose(f);
	a = start(NULL, 0);
	assert_true(put(a, "after.test") == 5);
	audit_close(a);
	text = verify_file(logp, &ch);
	assert_true(ch.seq == 6);
	s = strstr(text, "{\"seq\":4,");
	assert_non_null(s);
	assert_non_null(strstr(s, "\"type\":\"start\""));
	assert_non_null(strstr(s, ",\"recovered_bytes\":22,"));
	assert_null(strstr(text, "2026-{"));
	free(text);
}

static void
test_unreadable_last_line_refuses(void **state)
{
	struct audit_opts c = cfg_for(NULL, 0);
	const char *err = NULL;
	char want[512];
	FILE *f;

	(void)state;
	clean();
	f = fopen(logp, "w");
	fputs("{\"time\":\"old format, no seq\"}\n", f);
	fclose(f);
	assert_null(audit_open(&c, NULL, NULL, NULL, &err));
	snprintf(want, sizeof(want), "audit file %s: last record unreadable; rotate it away", logp);
	assert_string_equal(err, want);
	/* and the file is left as it was */
	{
		size_t len;
		char *t = slurp(logp, &len);
		assert_string_equal(t, "{\"time\":\"old format, no seq\"}\n");
		free(t);
	}
}

static void
write_key(uint64_t seq, const uint8_t key[32])
{
	struct audit_key k = {(int64_t)seq, {0}};
	char buf[AUDIT_KEY_FILE_MAX];
	int n;
	FILE *f = fopen(keyp, "w");

	memcpy(k.key, key, sizeof(k.key));
	n = audit_key_format(&k, buf, sizeof(buf));

	assert_true(n > 0);
	fwrite(buf, 1, (size_t)n, f);
	fclose(f);
}

static void
test_macs_and_key_file(void **state)
{
	struct chain ch = {0};
	struct audit_opts c;
	struct audit *a;
	uint8_t k1[32];
	struct audit_key kf;
	const char *err = NULL;
	char *text, want[512];
	size_t len;
	int i;

	(void)state;
	clean();
	for (i = 0; i < 32; i++)
		k1[i] = (uint8_t)(0xa0 + i);
	write_key(1, k1);
	a = start(keyp, 0);
	for (i = 0; i < 10; i++)
		put(a, "k.test");
	audit_close(a);
	/* every mac verifies from the initial key */
	ch.keyed = 1;
	memcpy(ch.key, k1, 32);
	text = verify_file(logp, &ch);
	free(text);
	assert_true(ch.seq == 12);
	/* the key file now holds K_13 only: ch.key has been evolved to exactly that */
	text = slurp(keyp, &len);
	assert_int_equal(audit_key_parse(text, len, &kf, &err), 0);
	assert_true(kf.seq == 13);
	assert_memory_equal(kf.key, ch.key, 32);
	assert_memory_not_equal(kf.key, k1, 32);
	free(text);
	{
		struct stat st;
		assert_int_equal(stat(keyp, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
	}
	/* a key file behind the log is evolved forward: the macs still verify */
	write_key(1, k1);
	a = start(keyp, 0);
	put(a, "k2.test");
	audit_close(a);
	memset(&ch, 0, sizeof(ch));
	ch.keyed = 1;
	memcpy(ch.key, k1, 32);
	text = verify_file(logp, &ch);
	free(text);
	assert_true(ch.seq == 15);
	/* a key file ahead of the log means records were cut off the end: refused */
	write_key(99, k1);
	c = cfg_for(keyp, 0);
	assert_null(audit_open(&c, NULL, NULL, NULL, &err));
	snprintf(want, sizeof(want), "audit.key_file %s holds the key of record 99 but the log's next record is 16: "
	         "records were cut off the end of the log (or the key belongs to another log)", keyp);
	assert_string_equal(err, want);
	/* not a key file */
	{
		FILE *f = fopen(keyp, "w");
		fputs("sluice-audit-key v1 1 zz\n", f);
		fclose(f);
	}
	assert_null(audit_open(&c, NULL, NULL, NULL, &err));
	assert_non_null(strstr(err, "not a key file"));
}

/* A request record of an MCP message: <batch> NULL, one fingerprint of <args>; else the batch text, with two. */
static void
put_mcp(struct audit *a, const json_t *args, const char *batch)
{
	const json_t *fp[2] = {args, NULL};
	struct audit_rec r = AUDIT_REC_INIT(AUDIT_KIND_REQUEST);

	r.sandbox = "sb";
	r.id = "1-1";
	r.host = "mcp.test";
	r.method = "POST";
	r.path = "/mcp";
	r.verdict = AUDIT_VERDICT_ALLOW;
	r.mcp_method = "tools/call";
	r.mcp_tool = "get_issue";
	r.mcp_rpc_id = "7";
	r.mcp_batch = batch;
	r.mcp_hmac_args = fp;
	r.mcp_nhmac = batch != NULL ? 2 : 1;
	assert_true(audit_write(a, &r) != 0);
}

/* The line of record <seq> in <text>, parsed. */
static json_t *
line_of(const char *text, uint64_t seq)
{
	const char *p = text, *e;
	json_t *o;

	while (*p != '\0' && (e = strchr(p, '\n')) != NULL) {
		o = json_loadb(p, (size_t)(e - p), 0, NULL);
		assert_non_null(o);
		if ((uint64_t)json_integer_value(json_object_get(o, "seq")) == seq)
			return o;
		json_decref(o);
		p = e + 1;
	}
	fail_msg("no record %llu", (unsigned long long)seq);
	return NULL;
}

static void
test_args_hmac(void **state)
{
	static const char batch[] = "[{\"mcp_method\":\"tools/call\",\"tool\":\"a\"" AUDIT_ARGS_HMAC_PH "},"
	                            "{\"mcp_method\":\"ping\"},{\"mcp_method\":\"prompts/get\"" AUDIT_ARGS_HMAC_PH "}]";
	struct chain ch = {0};
	json_t *args = json_pack("{s:s,s:i}", "repo", "widgets", "n", 1), *o, *e, *empty = json_object();
	uint8_t k1[32], k[32];
	char want[AUDIT_HASH_HEX + 1], *text;
	size_t len;
	int i;

	(void)state;
	clean();
	for (i = 0; i < 32; i++)
		k1[i] = (uint8_t)(0x30 + i);
	write_key(1, k1);
	{
		struct audit *a = start(keyp, 0);

		put_mcp(a, args, NULL);  /* seq 2 (1 is the start record) */
		put_mcp(a, NULL, batch); /* seq 3 */
		audit_close(a);
	}
	ch.keyed = 1;
	memcpy(ch.key, k1, 32);
	free(verify_file(logp, &ch));  /* every mac verifies: the fingerprints were in place before the mac */
	text = slurp(logp, &len);
	/* record 2: HMAC(K_args, JCS(args)) under K_2 */
	memcpy(k, k1, 32);
	evolve(k);
	assert_int_equal(audit_args_hmac(k, args, want), 0);
	o = line_of(text, 2);
	assert_string_equal(json_string_value(json_object_get(o, "args_hmac")), want);
	json_decref(o);
	/* record 3: each placeholder of the batch in order; the second fingerprints absent arguments as {} */
	evolve(k);
	o = line_of(text, 3);
	e = json_array_get(json_object_get(o, "mcp_batch"), 0);
	assert_int_equal(audit_args_hmac(k, NULL, want), 0);
	assert_string_equal(json_string_value(json_object_get(e, "args_hmac")), want);
	e = json_array_get(json_object_get(o, "mcp_batch"), 2);
	assert_int_equal(audit_args_hmac(k, empty, want), 0);
	assert_string_equal(json_string_value(json_object_get(e, "args_hmac")), want);
	assert_null(json_object_get(json_array_get(json_object_get(o, "mcp_batch"), 1), "args_hmac"));
	json_decref(o);
	free(text);
	/* no key file: no fingerprint, the members removed and the records still JSON */
	clean();
	{
		struct audit *a = start(NULL, 0);

		put_mcp(a, args, NULL);
		put_mcp(a, NULL, batch);
		audit_close(a);
	}
	text = slurp(logp, &len);
	assert_null(strstr(text, "args_hmac"));
	o = line_of(text, 2);
	assert_string_equal(json_string_value(json_object_get(o, "tool")), "get_issue");
	json_decref(o);
	o = line_of(text, 3);
	assert_int_equal(json_array_size(json_object_get(o, "mcp_batch")), 3);
	json_decref(o);
	free(text);
	json_decref(args);
	json_decref(empty);
}

static void
test_rotation_continues_chain(void **state)
{
	struct chain ch = {0};
	struct audit *a;
	char cmd[600], rotated[512], *text;
	FILE *p;
	int i;

	(void)state;
	clean();
	a = start(NULL, 0);
	for (i = 0; i < 3; i++)
		put(a, "before.test");
	while (!audit_written(a, 4))
		usleep(1000);
	audit_rotate(a);
	for (i = 0; i < 200; i++) {
		struct stat st;
		if (stat(logp, &st) == 0 && st.st_size == 0)
			break;
		usleep(10000);
	}
	put(a, "after.test");
	audit_close(a);
	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -E '^audit\\.jsonl\\.[0-9]{8}T[0-9]{6}Z$'", dir);
	p = popen(cmd, "r");
	assert_non_null(fgets(rotated, sizeof(rotated), p));
	pclose(p);
	rotated[strcspn(rotated, "\n")] = '\0';
	snprintf(cmd, sizeof(cmd), "%s/%s", dir, rotated);
	text = verify_file(cmd, &ch);
	assert_true(ch.seq == 4);
	free(text);
	text = verify_file(logp, &ch);  /* the new file's first prev is the old file's last hash */
	assert_true(ch.seq == 6);
	assert_memory_equal(text, "{\"seq\":5,", 9);
	free(text);
	/* logrotate moved the file away and nothing made a new one: the chain goes on from the newest rotated file */
	snprintf(cmd, sizeof(cmd), "%s/audit.jsonl.29991231T235959Z", dir);
	assert_int_equal(rename(logp, cmd), 0);
	a = start(NULL, 0);
	audit_close(a);
	text = verify_file(logp, &ch);
	assert_true(ch.seq == 8);
	assert_memory_equal(text, "{\"seq\":7,", 9);
	free(text);
}

static void
test_checkpoints(void **state)
{
	struct chain ch = {0};
	struct audit *a;
	char *text, *ck, want[512], *line, *save = NULL;
	char hashes[16][65];
	size_t len;
	uint64_t seq;
	int found = 0;

	(void)state;
	clean();
	a = start(NULL, 100);
	put(a, "c.test");
	put(a, "c.test");
	usleep(400 * 1000);
	audit_close(a);
	text = verify_file(logp, &ch);
	assert_true(ch.seq < 16);
	/* hash of each line by seq */
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		assert_int_equal(audit_line_seq(line, strlen(line), &seq), 0);
		sha_hex(line, strlen(line), hashes[seq]);
		if (strstr(line, "\"type\":\"checkpoint\"") != NULL) {
			snprintf(want, sizeof(want), "\"head_seq\":%llu,\"head_hash\":\"%s\",",
			         (unsigned long long)seq - 1, hashes[seq - 1]);
			assert_non_null(strstr(line, want));
			found++;
		}
	}
	/* one checkpoint: nothing was written after it, so no second one */
	assert_int_equal(found, 1);
	ck = slurp(ckp, &len);
	for (seq = 1; seq < 16; seq++) {
		snprintf(want, sizeof(want), "sluice-audit checkpoint file=%s seq=%llu hash=%s\n", logp,
		         (unsigned long long)seq, hashes[seq]);
		if (strcmp(ck, want) == 0)
			break;
	}
	assert_true(seq < 16);
	free(ck);
	free(text);
}

static int resumed;

static void
on_resume(void *arg)
{
	resumed += *(int *)arg;
}

static void
test_park_until_written(void **state)
{
	struct event_base *base = event_base_new();
	struct audit_opts c = cfg_for(NULL, 0);
	const char *err = NULL;
	struct audit *a;
	int one = 1, hundred = 100, i;
	uint64_t seq;

	(void)state;
	clean();
	a = audit_open(&c, NULL, NULL, NULL, &err);
	assert_non_null(a);
	audit_worker_attach(a, base);
	/* no writer yet: the record cannot be written, so the request waits */
	seq = put(a, "p.test");
	assert_true(seq == 1);
	assert_false(audit_written(a, seq));
	assert_int_equal(audit_park(a, seq, on_resume, &one), 0);
	assert_int_equal(audit_park(a, seq, on_resume, &hundred), 0);
	audit_unpark(&hundred);  /* that one went away */
	resumed = 0;
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(resumed, 0);
	assert_int_equal(audit_start(a, &err), 0);  /* start is seq 2, after ours */
	for (i = 0; i < 500 && resumed == 0; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(2000);
	}
	assert_int_equal(resumed, 1);
	assert_true(audit_written(a, seq));
	/* once written, parking says go on at once */
	assert_int_equal(audit_park(a, seq, on_resume, &one), 1);
	audit_worker_detach();
	audit_close(a);
	event_base_free(base);
}

static uint64_t
put_request(struct audit *a, const char *path)
{
	struct audit_rec r = AUDIT_REC_INIT(AUDIT_KIND_REQUEST);

	r.sandbox = "sb";
	r.id = "1-1";
	r.client = "10.0.0.2";
	r.host = "api.test";
	r.method = "GET";
	r.path = path;
	r.verdict = AUDIT_VERDICT_ALLOW;
	return audit_write(a, &r);
}

/*
 * Issue 20: a worker writes its round's records itself.  An allowed
 * request's record parks the request; the worker's own loop round (one
 * non-blocking pass, no sleep, so the writer thread had no time to be woken)
 * writes it and resumes the request.  The writer thread may hold the lock
 * at that instant (then the worker hands over, as before), so the attempt is
 * repeated and must succeed most of the time; the chain stays one.  With
 * `fsync: record` the worker never writes: the writer thread does.
 */
static void
run_rounds(unsigned fsync_ms, int *on_worker, int *tries)
{
	struct event_base *base = event_base_new();
	struct audit_opts c = cfg_for(NULL, 0);
	const char *err = NULL;
	struct chain ch = {0};
	struct audit *a;
	uint64_t seq, before;
	int one = 1, i, k;
	char path[32];

	clean();
	c.fsync_ms = fsync_ms;
	a = audit_open(&c, NULL, NULL, NULL, &err);
	assert_non_null(a);
	audit_worker_attach(a, base);
	assert_int_equal(audit_start(a, &err), 0);
	for (k = 0; k < 200 && !audit_written(a, 1); k++)
		usleep(1000);  /* the start record */
	*on_worker = *tries = 0;
	for (i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "/r/%d", i);
		before = atomic_load(&a->combined);
		resumed = 0;
		seq = put_request(a, path);
		assert_true(seq != 0);
		if (audit_park(a, seq, on_resume, &one) == 1)
			continue;  /* the writer thread was quicker */
		(*tries)++;
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (resumed == 1 && atomic_load(&a->combined) > before)
			(*on_worker)++;
		for (k = 0; k < 500 && resumed == 0; k++) {
			event_base_loop(base, EVLOOP_NONBLOCK);
			usleep(1000);
		}
		assert_int_equal(resumed, 1);
	}
	audit_worker_detach();
	audit_close(a);
	free(verify_file(logp, &ch));
	assert_int_equal(ch.nlines, 1 + 40 + 1);  /* start, the requests, stop: one chain */
	event_base_free(base);
}

static void
test_worker_writes_its_round(void **state)
{
	int on_worker, tries;

	(void)state;
	run_rounds(1000, &on_worker, &tries);
	assert_true(tries >= 20);
	assert_true(on_worker * 4 >= tries * 3);  /* at least three in four written by the worker's own round */
	run_rounds(0, &on_worker, &tries);          /* fsync: record */
	assert_int_equal(on_worker, 0);
}

static void
test_fails_closed_on_a_full_disk(void **state)
{
	struct audit_opts c = cfg_for(NULL, 0);
	const char *err = NULL;
	struct audit *a;
	uint64_t got = 0;
	int i;

	(void)state;
	c.file = "/dev/full";  /* every write(2): ENOSPC */
	c.queue = 16;
	a = audit_open(&c, NULL, NULL, NULL, &err);
	if (a == NULL)
		skip();
	assert_true(audit_healthy(a));
	assert_int_equal(audit_start(a, &err), 0);
	for (i = 0; i < 300 && audit_healthy(a); i++)
		usleep(10000);
	assert_false(audit_healthy(a));
	assert_true(audit_write_errors(a) >= 1);
	assert_false(audit_written(a, 1));
	/* bounded: past audit.queue new records are refused and counted */
	for (i = 0; i < 20; i++)
		got += put(a, "full.test") != 0;
	assert_true(got == 15);  /* 16 pending: the start record and 15 of these */
	assert_int_equal(audit_queue_depth(a), 16);
	assert_true(audit_write_errors(a) >= 6);
	audit_close(a);  /* gives up after AUDIT_STOP_GIVEUP_MS */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_across_restarts),
		cmocka_unit_test(test_partial_line_cut_and_reported),
		cmocka_unit_test(test_unreadable_last_line_refuses),
		cmocka_unit_test(test_macs_and_key_file),
		cmocka_unit_test(test_args_hmac),
		cmocka_unit_test(test_rotation_continues_chain),
		cmocka_unit_test(test_checkpoints),
		cmocka_unit_test(test_park_until_written),
		cmocka_unit_test(test_worker_writes_its_round),
		cmocka_unit_test(test_fails_closed_on_a_full_disk),
	};

	evthread_use_pthreads();  /* the writer thread makes a worker's event active, as in the gateway */
	return cmocka_run_group_tests(tests, setup, teardown);
}
