/*
 * audit/verify.c - checks one hash chain (docs/audit-schema.md) line by line.
 *
 * Which record to blame: a line's hash is named by the NEXT record's prev, so
 * a mismatch between record k's prev and line k-1 means either line k-1 was
 * changed, or k's own prev member was.  One line of lookahead decides: when
 * record k+1's prev does not match line k either, k is the odd one out;
 * otherwise k-1 is.  A mac or checkpoint that vouches for a line settles it at
 * once.  Likewise a forward jump of seq is "removed" unless a missing seq comes
 * later ("reordered"), so the rest is scanned before deciding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "common/sluice.h"
#include "audit/audit.h"

#define TIME_SHOW 48      /* columns of a record's time in the report */
#define REPORT_MAX 2048

/* 1 when <prev> (a 64-hex member) is seq 1's: the genesis value. */
static int
is_genesis(const char *prev)
{
	size_t i;

	for (i = 0; i < AUDIT_HASH_HEX; i++)
		if (prev[i] != AUDIT_GENESIS_DIGIT)
			return 0;
	return prev[i] == '\0';
}

struct rec {
	int64_t seq;
	char hash[AUDIT_HASH_HEX + 1];
	uint64_t lineno;
	size_t file;
	int vouched;  /* its mac or a checkpoint confirmed this very line */
};

enum pending {
	PEND_NONE = 0,
	PEND_PREV,  /* last's prev does not match before_last's line */
	PEND_JUMP,  /* jump: seq <expect>..<jump.seq - 1> missing so far */
};

struct audit_verify {
	struct audit_verify_opts opts;
	struct audit_key key;  /* evolving copy of opts.key */
	char **files;
	size_t nfiles;
	uint64_t nrec;
	struct rec first, last, before;
	int have_last, have_before;
	char first_time[TIME_SHOW + 8], last_time[TIME_SHOW + 8];
	enum pending pending;
	struct rec jump;
	int64_t expect;
	/* a last line without "\n" */
	int partial;
	uint64_t partial_lineno;
	size_t partial_len, partial_file;
	/* verdict */
	enum audit_fault fault;
	int64_t fault_seq;
	char msg[AUDIT_MSG_MAX];
	/* notes */
	int first_prev_unchecked, macs_present;
	uint64_t macs_checked, macs_before;
	size_t cp_idx;
	uint64_t cp_matched;
	char report[REPORT_MAX];
};

struct audit_verify *
audit_verify_create(const struct audit_verify_opts *opts)
{
	struct audit_verify *v = xcalloc(1, sizeof(*v));

	v->opts = *opts;
	if (v->opts.evolve_max <= 0)
		v->opts.evolve_max = AUDIT_KEY_EVOLVE_MAX;
	if (opts->key != NULL)
		v->key = *opts->key;
	return v;
}

void
audit_verify_destroy(struct audit_verify *v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < v->nfiles; i++)
		free(v->files[i]);
	free(v->files);
	sluice_wipe(&v->key, sizeof(v->key));
	free(v);
}

void
audit_verify_file(struct audit_verify *v, const char *name)
{
	v->files = xrealloc(v->files, (v->nfiles + 1) * sizeof(*v->files));
	v->files[v->nfiles++] = xstrdup(name);
}

static const char *
fname(const struct audit_verify *v, size_t file)
{
	return file < v->nfiles ? v->files[file] : "-";
}

static size_t
cur_file(const struct audit_verify *v)
{
	return v->nfiles ? v->nfiles - 1 : 0;
}

/* Records the (first) fault: "FILE:LINE: seq N: why". */
__attribute__((format(printf, 6, 7))) static void
fail(struct audit_verify *v, enum audit_fault kind, size_t file, uint64_t lineno, int64_t seq, const char *fmt, ...)
{
	char why[AUDIT_MSG_MAX / 2];
	va_list ap;

	if (v->fault != AUDIT_FAULT_NONE)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	v->fault = kind;
	v->fault_seq = seq;
	v->pending = PEND_NONE;
	if (seq > 0)
		snprintf(v->msg, sizeof(v->msg), "%s:%llu: seq %lld: %s", fname(v, file), (unsigned long long)lineno,
		         (long long)seq, why);
	else
		snprintf(v->msg, sizeof(v->msg), "%s:%llu: seq ?: %s", fname(v, file), (unsigned long long)lineno, why);
}

/* The blame for a PEND_PREV, decided by <next> (NULL: none came). */
static void
resolve_prev(struct audit_verify *v, const struct rec *next, const char *next_prev)
{
	const struct rec *p = &v->last, *q = &v->before;

	if (next != NULL && next->seq == p->seq + 1 && strcmp(next_prev, p->hash) != 0)
		fail(v, AUDIT_FAULT_EDITED, p->file, p->lineno, p->seq,
		     "edited (its prev does not match the line of seq %lld, nor its line the prev of seq %lld)",
		     (long long)q->seq, (long long)next->seq);
	else
		fail(v, AUDIT_FAULT_EDITED, q->file, q->lineno, q->seq,
		     "edited (its line no longer matches the prev of seq %lld)", (long long)p->seq);
}

static void
resolve_jump(struct audit_verify *v)
{
	const struct rec *j = &v->jump;
	char from[160] = "";

	if (v->have_last && v->last.file != j->file)
		snprintf(from, sizeof(from), "; the previous file %s ended at seq %lld", fname(v, v->last.file),
		         (long long)v->last.seq);
	if (j->seq - 1 == v->expect)
		fail(v, AUDIT_FAULT_REMOVED, j->file, j->lineno, v->expect,
		     "removed (seq %lld is missing: this line has seq %lld%s)", (long long)v->expect,
		     (long long)j->seq, from);
	else
		fail(v, AUDIT_FAULT_REMOVED, j->file, j->lineno, v->expect,
		     "removed (seq %lld..%lld are missing: this line has seq %lld%s)", (long long)v->expect,
		     (long long)(j->seq - 1), (long long)j->seq, from);
}

/* Best guess of an unreadable line's seq: its own `{"seq":N` prefix, else the one expected. */
static int64_t
guess_seq(const struct audit_verify *v, const char *line, size_t len)
{
	int64_t s = 0;
	size_t i = sizeof(AUDIT_LINE_HEAD) - 1, d = 0;

	if (len > i && memcmp(line, AUDIT_LINE_HEAD, i) == 0) {
		for (; i < len && line[i] >= '0' && line[i] <= '9' && d < 15; i++, d++)
			s = s * 10 + (line[i] - '0');
		if (d > 0 && s > 0)
			return s;
	}
	return v->have_last ? v->last.seq + 1 : 0;
}

static int
is_hash(const char *s)
{
	size_t i;

	if (s == NULL || strlen(s) != AUDIT_HASH_HEX)
		return 0;
	for (i = 0; i < AUDIT_HASH_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static void
unreadable_line(struct audit_verify *v, const char *line, size_t len, uint64_t lineno, const json_error_t *jerr,
                int parsed)
{
	int64_t seq = guess_seq(v, line, len);

	if (!parsed && json_error_code(jerr) == json_error_premature_end_of_input &&
	    (len == 0 || line[len - 1] != '}'))
		fail(v, AUDIT_FAULT_TRUNCATED, cur_file(v), lineno, seq,
		     "truncated in the middle (an incomplete record followed by more lines)");
	else if (!parsed) {
		/* jansson quotes the bytes near the error: hostile, escaped like any value */
		char why[128];

		why[0] = '\0';
		audit_term_escape(why, sizeof(why), jerr->text, strlen(jerr->text), 100);
		fail(v, AUDIT_FAULT_EDITED, cur_file(v), lineno, seq, "edited (not a JSON record: %s)", why);
	}
	else
		fail(v, AUDIT_FAULT_EDITED, cur_file(v), lineno, seq,
		     "edited (not a record: an integer seq and a 64-hex prev are required)");
}

/* The mac of record <r>: 1 vouched, 0 not checkable, -1 a fault was recorded. */
static int
check_mac(struct audit_verify *v, const struct rec *r, const char *line, size_t len, int has_mac)
{
	int rc;

	if (v->opts.key == NULL)
		return 0;
	if (r->seq < v->key.seq) {
		v->macs_before++;
		return 0;
	}
	if (r->seq - v->key.seq > v->opts.evolve_max) {
		fail(v, AUDIT_FAULT_UNREADABLE, r->file, r->lineno, r->seq,
		     "cannot check its mac: the key file is for seq %lld, more than %lld evolutions back",
		     (long long)v->key.seq, (long long)v->opts.evolve_max);
		return -1;
	}
	while (v->key.seq < r->seq) {
		audit_key_evolve(v->key.key);
		v->key.seq++;
	}
	rc = audit_mac_check(&v->key, line, len);
	if (rc == 0) {
		v->macs_checked++;
		return 1;
	}
	fail(v, AUDIT_FAULT_EDITED, r->file, r->lineno, r->seq, rc == 1 ? "edited (mac mismatch)" :
	     has_mac ? "edited (its mac member is not the last one, or malformed)" :
	     "edited (it has no mac, but --key-file was given)");
	return -1;
}

/* Checkpoints naming seq <r>: 1 one vouched, 0 none, -1 a fault. */
static int
check_checkpoints(struct audit_verify *v, const struct rec *r)
{
	const struct audit_checkpoints *cp = v->opts.cp;
	int vouched = 0;

	if (cp == NULL)
		return 0;
	while (v->cp_idx < cp->n && cp->v[v->cp_idx].seq < r->seq)
		v->cp_idx++;  /* before the first record read: not checkable */
	for (; v->cp_idx < cp->n && cp->v[v->cp_idx].seq == r->seq; v->cp_idx++) {
		if (strcmp(cp->v[v->cp_idx].hash, r->hash) != 0) {
			fail(v, AUDIT_FAULT_EDITED, r->file, r->lineno, r->seq,
			     "edited (its hash differs from the checkpoint at %s:%llu)", cp->path ? cp->path : "checkpoints",
			     (unsigned long long)cp->v[v->cp_idx].lineno);
			return -1;
		}
		v->cp_matched++;
		vouched = 1;
	}
	return vouched;
}

/* A checkpoint record names the line before it: head_seq and head_hash must agree with seq and prev. */
static int
check_head(struct audit_verify *v, const struct rec *r, json_t *o, const char *prev)
{
	const char *type = json_string_value(json_object_get(o, AUDIT_FIELD_TYPE));
	json_t *hs = json_object_get(o, "head_seq");
	const char *hh = json_string_value(json_object_get(o, "head_hash"));

	if (audit_kind_parse(type) != AUDIT_KIND_CHECKPOINT || r->seq == 1)
		return 0;
	if (!json_is_integer(hs) || json_integer_value(hs) != r->seq - 1 || hh == NULL || strcmp(hh, prev) != 0) {
		fail(v, AUDIT_FAULT_EDITED, r->file, r->lineno, r->seq,
		     "edited (its head_seq/head_hash do not name the record before it)");
		return -1;
	}
	return 0;
}

static void
remember_time(char *dst, size_t cap, json_t *o)
{
	json_t *t = json_object_get(o, "time");

	dst[0] = '\0';
	if (json_is_string(t))
		audit_term_escape(dst, cap, json_string_value(t), json_string_length(t), TIME_SHOW);
	else
		snprintf(dst, cap, "?");
}

static void
take(struct audit_verify *v, const struct rec *r, json_t *o)
{
	if (v->have_last) {
		v->before = v->last;
		v->have_before = 1;
	} else {
		v->first = *r;
		remember_time(v->first_time, sizeof(v->first_time), o);
	}
	v->last = *r;
	v->have_last = 1;
	v->nrec++;
	remember_time(v->last_time, sizeof(v->last_time), o);
}

/* The chain checks of a parsed record <r> whose prev is <prev>. */
static void
check_record(struct audit_verify *v, struct rec *r, const char *prev, json_t *o, const char *line, size_t len)
{
	const struct rec *l = &v->last;
	int m, c;

	if (v->have_last && r->seq != l->seq + 1) {
		if (strcmp(prev, l->hash) == 0) {
			/* it chains onto the last line: its own seq member was changed */
			fail(v, AUDIT_FAULT_EDITED, r->file, r->lineno, l->seq + 1,
			     "edited (it says seq %lld, but its prev is the hash of seq %lld)", (long long)r->seq,
			     (long long)l->seq);
		} else if (r->seq > l->seq + 1) {
			v->pending = PEND_JUMP;
			v->jump = *r;
			v->expect = l->seq + 1;
		} else {
			fail(v, AUDIT_FAULT_REORDERED, r->file, r->lineno, r->seq, "reordered (%s seq %lld%s)",
			     r->seq == l->seq ? "it repeats" : "it comes after", (long long)l->seq,
			     r->file != l->file ? "; give rotated files oldest first" : "");
		}
		return;
	}
	m = check_mac(v, r, line, len, json_object_get(o, AUDIT_FIELD_MAC) != NULL);
	if (m < 0)
		return;
	if (json_object_get(o, AUDIT_FIELD_MAC) != NULL)
		v->macs_present = 1;
	c = check_checkpoints(v, r);
	if (c < 0)
		return;
	r->vouched = m > 0 || c > 0;
	if (!v->have_last) {
		if (r->seq == 1 && !is_genesis(prev)) {
			fail(v, AUDIT_FAULT_EDITED, r->file, r->lineno, 1, "edited (seq 1's prev is not the genesis value)");
			return;
		}
		v->first_prev_unchecked = r->seq > 1;
	} else if (strcmp(prev, l->hash) != 0) {
		if (l->vouched)
			fail(v, AUDIT_FAULT_EDITED, r->file, r->lineno, r->seq,
			     "edited (its prev does not match the line of seq %lld, which its mac or a checkpoint confirms)",
			     (long long)l->seq);
		else if (r->vouched)
			fail(v, AUDIT_FAULT_EDITED, l->file, l->lineno, l->seq,
			     "edited (its line no longer matches the prev of seq %lld, which its mac or a checkpoint confirms)",
			     (long long)r->seq);
		else
			v->pending = PEND_PREV;
		if (v->pending != PEND_PREV)
			return;
	}
	if (check_head(v, r, o, prev) < 0)
		return;
	take(v, r, o);
}

int
audit_verify_line(struct audit_verify *v, const char *line, size_t len, uint64_t lineno, int complete)
{
	json_error_t jerr;
	json_t *o = NULL, *js;
	const char *prev = NULL;
	struct rec r;

	if (v->fault != AUDIT_FAULT_NONE)
		return 1;
	if (v->partial) {
		fail(v, AUDIT_FAULT_TRUNCATED, v->partial_file, v->partial_lineno, v->have_last ? v->last.seq + 1 : 0,
		     "truncated in the middle (an incomplete record, %zu bytes without a newline, is followed by more)",
		     v->partial_len);
		return 1;
	}
	if (!complete) {
		v->partial = 1;
		v->partial_lineno = lineno;
		v->partial_len = len;
		v->partial_file = cur_file(v);
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.file = cur_file(v);
	r.lineno = lineno;
	r.seq = -1;
	audit_sha256_hex(line, len, r.hash);
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (o != NULL && json_is_object(o)) {
		js = json_object_get(o, AUDIT_FIELD_SEQ);
		if (json_is_integer(js) && json_integer_value(js) >= 1 && json_integer_value(js) <= AUDIT_SEQ_MAX)
			r.seq = json_integer_value(js);
		prev = json_string_value(json_object_get(o, AUDIT_FIELD_PREV));
	}
	if (r.seq < 0 || !is_hash(prev)) {
		if (v->pending == PEND_PREV)
			resolve_prev(v, NULL, NULL);
		else if (v->pending == PEND_NONE)
			unreadable_line(v, line, len, lineno, &jerr, o != NULL);
		json_decref(o);
		return v->fault != AUDIT_FAULT_NONE;
	}
	if (v->pending == PEND_JUMP) {
		/* only looking for a missing seq */
		if (r.seq >= v->expect && r.seq < v->jump.seq)
			fail(v, AUDIT_FAULT_REORDERED, v->jump.file, v->jump.lineno, v->jump.seq,
			     "reordered (seq %lld was expected here; it comes later, at %s:%llu)", (long long)v->expect,
			     fname(v, r.file), (unsigned long long)r.lineno);
	} else if (v->pending == PEND_PREV) {
		resolve_prev(v, &r, prev);
	} else {
		check_record(v, &r, prev, o, line, len);
	}
	json_decref(o);
	return v->fault != AUDIT_FAULT_NONE;
}

int
audit_verify_too_long(struct audit_verify *v, uint64_t lineno)
{
	if (v->pending == PEND_JUMP)
		return 0;  /* still scanning for the missing seq */
	if (v->pending == PEND_PREV)
		resolve_prev(v, NULL, NULL);
	fail(v, AUDIT_FAULT_UNREADABLE, cur_file(v), lineno, v->have_last ? v->last.seq + 1 : 0,
	     "unreadable (the line is longer than %d bytes)", AUDIT_READ_LINE_MAX);
	return 1;
}

enum audit_fault
audit_verify_finish(struct audit_verify *v, int64_t *seq)
{
	const struct audit_checkpoints *cp = v->opts.cp;

	if (v->pending == PEND_PREV)
		resolve_prev(v, NULL, NULL);
	else if (v->pending == PEND_JUMP)
		resolve_jump(v);
	if (v->fault == AUDIT_FAULT_NONE && cp != NULL && cp->n > 0 &&
	    (!v->have_last || cp->v[cp->n - 1].seq > v->last.seq)) {
		const struct audit_checkpoint *c = &cp->v[cp->n - 1];
		int64_t end = v->have_last ? v->last.seq : 0;

		fail(v, AUDIT_FAULT_SHORT, v->have_last ? v->last.file : cur_file(v),
		     v->have_last ? v->last.lineno + 1 : 1, end + 1,
		     "truncated: the log ends at seq %lld but a checkpoint names seq %lld (%s:%llu)", (long long)end,
		     (long long)c->seq, cp->path ? cp->path : "checkpoints", (unsigned long long)c->lineno);
	}
	if (seq != NULL)
		*seq = v->fault_seq;
	return v->fault;
}

/* Appends to the report (cut at REPORT_MAX). */
__attribute__((format(printf, 3, 4))) static void
add(struct audit_verify *v, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= sizeof(v->report) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(v->report + *off, sizeof(v->report) - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n < sizeof(v->report) - *off ? (size_t)n : sizeof(v->report) - *off - 1;
}

const char *
audit_verify_report(struct audit_verify *v)
{
	size_t off = 0;

	if (v->fault != AUDIT_FAULT_NONE) {
		add(v, &off, "%s\n", v->msg);
		return v->report;
	}
	if (v->nrec == 0)
		add(v, &off, "ok: 0 records\n");
	else
		add(v, &off, "ok: %llu records, seq %lld..%lld, %s .. %s, final hash %s\n", (unsigned long long)v->nrec,
		    (long long)v->first.seq, (long long)v->last.seq, v->first_time, v->last_time, v->last.hash);
	if (v->first_prev_unchecked)
		add(v, &off, "note: the prev of seq %lld is not checked: the chain starts before these files\n",
		    (long long)v->first.seq);
	if (v->opts.key != NULL) {
		add(v, &off, "note: macs: %llu checked with the key file from seq %lld", (unsigned long long)v->macs_checked,
		    (long long)v->opts.key->seq);
		if (v->macs_before > 0)
			add(v, &off, "; %llu records before seq %lld cannot be checked with it", (unsigned long long)v->macs_before,
			    (long long)v->opts.key->seq);
		add(v, &off, "\n");
	} else if (v->macs_present) {
		add(v, &off, "note: macs present but not checked (no --key-file)\n");
	}
	if (v->opts.cp != NULL) {
		add(v, &off, "note: checkpoints: %llu matched", (unsigned long long)v->cp_matched);
		if (v->cp_matched < v->opts.cp->n)
			add(v, &off, "; %llu name records before seq %lld, not in these files",
			    (unsigned long long)(v->opts.cp->n - v->cp_matched), (long long)v->first.seq);
		add(v, &off, "\n");
	}
	if (v->partial)
		add(v, &off, "warning: %s:%llu: incomplete last record (%zu bytes without a final newline, as a crash during a "
		    "write leaves it; not verified)\n",
		    fname(v, v->partial_file), (unsigned long long)v->partial_lineno, v->partial_len);
	return v->report;
}
