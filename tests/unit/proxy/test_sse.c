/*
 * tests/unit/proxy/test_sse.c - the text/event-stream parser
 * (proxy/codec/sse.c): events and their fields, the three line endings,
 * splits anywhere (every split point and 1-byte feeds give the same units),
 * heartbeats handed out at once, the bound, a BOM, and re-emitting an event
 * with new data while the rest of the stream stays byte-identical.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proxy/codec/sse.h"

#define UNITS_MAX 64
#define TEXT_MAX 4096

/* The units of a stream as text: "<E|P>[data]<raw>\n" per unit, and whether it failed. */
struct transcript {
	char s[TEXT_MAX * 4];
	size_t n;
	char raw[TEXT_MAX];     /* every unit's bytes, concatenated */
	size_t rawn;
	int units, events, failed;
	char data[UNITS_MAX][256];
};

static void
note(struct transcript *t, const struct sse_unit *u)
{
	int k = snprintf(t->s + t->n, sizeof(t->s) - t->n, "%c[%.*s|%.*s|%.*s]{%.*s}\n", u->kind == SSE_UNIT_EVENT ? 'E' : 'P',
	                 u->has_data ? (int)u->data_len : 0, u->has_data ? u->data : "", (int)u->event_len,
	                 u->event != NULL ? u->event : "", (int)u->id_len, u->id != NULL ? u->id : "", (int)u->raw_len, u->raw);

	t->n += (size_t)k;
	memcpy(t->raw + t->rawn, u->raw, u->raw_len);
	t->rawn += u->raw_len;
	if (u->kind == SSE_UNIT_EVENT && t->events < UNITS_MAX)
		snprintf(t->data[t->events++], 256, "%.*s", u->has_data ? (int)u->data_len : 0, u->has_data ? u->data : "");
	t->units++;
}

/* Feeds <s>/<n> in pieces of <piece> bytes (0: whole). */
static void
run(const char *s, size_t n, size_t piece, size_t max, struct transcript *t)
{
	struct sse_parser p;
	struct sse_unit u;
	size_t off = 0;

	memset(t, 0, sizeof(*t));
	sse_parser_init(&p, max);
	while (off < n && !t->failed) {
		size_t len = piece == 0 || n - off < piece ? n - off : piece, at = 0;

		while (at < len) {
			long r = sse_parse(&p, s + off + at, len - at, &u);

			if (r == -1) {
				t->failed = 1;
				break;
			}
			if (r == -2)
				break;
			assert_true(r > 0 && (size_t)r <= len - at);
			note(t, &u);
			at += (size_t)r;
		}
		off += len;
	}
	sse_parser_dispose(&p);
}

static void
test_events(void **state)
{
	static const char s[] = ": hello\n"
	                        "event: message\nid: 7\ndata: {\"a\":1}\n\n"
	                        "data: line1\ndata: line2\ndata\n\n"
	                        "retry: 1000\nid: 8\n\n"
	                        "data:no-space\ndata:  two-spaces\n\n"
	                        "data\ndata: after-empty\n\n";
	struct transcript t;

	(void)state;
	run(s, sizeof(s) - 1, 0, 0, &t);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.units, 6);
	assert_int_equal(t.events, 5);
	assert_string_equal(t.data[0], "{\"a\":1}");
	assert_string_equal(t.data[1], "line1\nline2\n");
	assert_string_equal(t.data[2], "");
	assert_string_equal(t.data[3], "no-space\n two-spaces");
	/* a leading empty data line is a line of the data (before: dropped, so the gateway judged "after-empty"
	 * where a client reads "\nafter-empty") */
	assert_string_equal(t.data[4], "\nafter-empty");
	assert_non_null(strstr(t.s, "P[||]{: hello\n}"));
	assert_non_null(strstr(t.s, "E[{\"a\":1}|message|7]"));
	assert_non_null(strstr(t.s, "E[||8]{retry: 1000\nid: 8\n\n}")); /* no data: has_data 0 */
	/* every byte passes: the units are the stream */
	assert_int_equal(t.rawn, sizeof(s) - 1);
	assert_memory_equal(t.raw, s, t.rawn);
}

/* \n, \r\n and \r, and mixtures: the same events. */
static void
test_line_endings(void **state)
{
	static const char lf[] = "data: a\ndata: b\n\n: hb\n\nid: 1\ndata: c\n\n";
	static const char crlf[] = "data: a\r\ndata: b\r\n\r\n: hb\r\n\r\nid: 1\r\ndata: c\r\n\r\n";
	static const char cr[] = "data: a\rdata: b\r\r: hb\r\rid: 1\rdata: c\r\r";
	static const char mixed[] = "data: a\r\ndata: b\r\n\r: hb\n\rid: 1\rdata: c\n\r\n";
	struct transcript a, b;
	const char *v[] = {crlf, cr, mixed};
	size_t i;

	(void)state;
	run(lf, sizeof(lf) - 1, 0, 0, &a);
	assert_int_equal(a.events, 2);
	assert_string_equal(a.data[0], "a\nb");
	assert_string_equal(a.data[1], "c");
	for (i = 0; i < 3; i++) {
		run(v[i], strlen(v[i]), 0, 0, &b);
		assert_int_equal(b.failed, 0);
		assert_int_equal(b.events, 2);
		assert_string_equal(b.data[0], "a\nb");
		assert_string_equal(b.data[1], "c");
		assert_int_equal(b.rawn, strlen(v[i]));
		assert_memory_equal(b.raw, v[i], b.rawn);
	}
}

/* Every split point, and 1-, 2-, 3-byte pieces, give the units of the whole. */
static void
test_splits(void **state)
{
	static const char s[] = "\xef\xbb\xbf" "data: x\r\n: ping\r\n\r\nevent: e\rdata: {\"jsonrpc\":\"2.0\"}\r\r\n: hb\n"
	                        "data: 1\ndata: 2\n\n\n\ndata: end\r\r";
	struct transcript whole, part;
	size_t cut, piece;

	(void)state;
	run(s, sizeof(s) - 1, 0, 0, &whole);
	assert_int_equal(whole.failed, 0);
	assert_int_equal(whole.rawn, sizeof(s) - 1);
	assert_string_equal(whole.data[0], "x"); /* the BOM is not part of the field name */
	for (piece = 1; piece <= 3; piece++) {
		run(s, sizeof(s) - 1, piece, 0, &part);
		assert_string_equal(part.s, whole.s);
	}
	for (cut = 1; cut < sizeof(s) - 1; cut++) {
		struct sse_parser p;
		struct sse_unit u;
		struct transcript t;
		size_t at;
		long r;

		memset(&t, 0, sizeof(t));
		sse_parser_init(&p, 0);
		for (at = 0; at < cut; at += (size_t)r)
			if ((r = sse_parse(&p, s + at, cut - at, &u)) == -2)
				break;
			else
				note(&t, &u);
		for (at = cut; at < sizeof(s) - 1; at += (size_t)r)
			if ((r = sse_parse(&p, s + at, sizeof(s) - 1 - at, &u)) == -2)
				break;
			else
				note(&t, &u);
		sse_parser_dispose(&p);
		if (strcmp(t.s, whole.s) != 0)
			fail_msg("split at %zu differs:\n%s\nvs\n%s", cut, t.s, whole.s);
	}
}

/* A heartbeat between events is handed out at once, not held until the next blank line. */
static void
test_heartbeat_not_held(void **state)
{
	struct sse_parser p;
	struct sse_unit u;

	(void)state;
	sse_parser_init(&p, 0);
	assert_int_equal(sse_parse(&p, ": keepalive\n", 12, &u), 12);
	assert_int_equal(u.kind, SSE_UNIT_PASS);
	assert_int_equal(u.raw_len, 12);
	/* a comment inside an event stays in it */
	assert_int_equal(sse_parse(&p, "data: a\n: c\n", 12, &u), -2);
	assert_int_equal(sse_parse(&p, "\n", 1, &u), 1);
	assert_int_equal(u.kind, SSE_UNIT_EVENT);
	assert_int_equal(u.raw_len, 13);
	assert_memory_equal(u.raw, "data: a\n: c\n\n", 13);
	/* a CR-ended event goes out at the CR; the LF after it is its own unit */
	assert_int_equal(sse_parse(&p, "data: b\r\r", 9, &u), 9);
	assert_int_equal(u.kind, SSE_UNIT_EVENT);
	assert_int_equal(sse_parse(&p, "\n", 1, &u), 1);
	assert_int_equal(u.kind, SSE_UNIT_PASS);
	sse_parser_dispose(&p);
}

/* The bound: an event (or a line without an end) over it fails, and stays failed; at it, passes. */
static void
test_bound(void **state)
{
	size_t max = 64, i;
	char s[200];
	struct transcript t;
	struct sse_parser p;
	struct sse_unit u;

	(void)state;
	memcpy(s, "data: ", 6);
	for (i = 6; i < 62; i++)
		s[i] = 'x';
	s[62] = '\n';
	s[63] = '\n';
	run(s, 64, 0, max, &t);
	assert_int_equal(t.failed, 0);
	assert_int_equal(t.events, 1);
	run(s, 64, 1, max, &t);
	assert_int_equal(t.failed, 0);
	s[63] = 'y';
	s[64] = '\n';
	s[65] = '\n';
	run(s, 66, 0, max, &t);
	assert_int_equal(t.failed, 1);
	run(s, 66, 1, max, &t);
	assert_int_equal(t.failed, 1);
	/* a 10 MiB event against the default 1 MiB bound, fed in 64 KiB pieces: fails, never grows past the bound */
	{
		size_t big = 10u << 20, off = 0;
		char *b = malloc(big);
		long r = 0;

		memset(b, 'z', big);
		memcpy(b, "data: ", 6);
		sse_parser_init(&p, 0);
		for (off = 0; off < big; off += 65536)
			if ((r = sse_parse(&p, b + off, 65536, &u)) == -1)
				break;
		assert_int_equal(r, -1);
		assert_true(off < (2u << 20));
		assert_true(p._cap <= SSE_EVENT_MAX_DEFAULT);
		assert_int_equal(sse_parse(&p, "\n\n", 2, &u), -1);
		sse_parser_dispose(&p);
		free(b);
	}
}

/* Re-emitting: only the data lines change; id, event, comments, retry and line endings stay. */
static void
test_rewrite(void **state)
{
	static const char s[] = "id: 9\r\nevent: message\r\n: note\r\ndata: {\"tools\":[1,\r\ndata: 2]}\r\nretry: 5\r\n\r";
	struct sse_parser p;
	struct sse_unit u;
	char out[256];
	size_t n;
	struct transcript t;

	(void)state;
	sse_parser_init(&p, 0);
	assert_int_equal(sse_parse(&p, s, sizeof(s) - 1, &u), (long)sizeof(s) - 1);
	assert_int_equal(u.kind, SSE_UNIT_EVENT);
	assert_int_equal(u.data_len, 16);
	assert_memory_equal(u.data, "{\"tools\":[1,\n2]}", 16);
	n = sse_unit_rewrite(&u, "{\"tools\":[]}", 12, out, sizeof(out));
	assert_int_equal(n, strlen("id: 9\r\nevent: message\r\n: note\r\ndata: {\"tools\":[]}\r\nretry: 5\r\n\r"));
	assert_memory_equal(out, "id: 9\r\nevent: message\r\n: note\r\ndata: {\"tools\":[]}\r\nretry: 5\r\n\r", n);
	/* the rendering parses back to the new data and the same fields */
	run(out, n, 0, 0, &t);
	assert_int_equal(t.events, 1);
	assert_string_equal(t.data[0], "{\"tools\":[]}");
	assert_non_null(strstr(t.s, "|message|9]"));
	/* multi-line data is split into data lines; a short buffer gets the length needed */
	n = sse_unit_rewrite(&u, "a\nb\r\nc", 6, out, 4);
	assert_int_equal(n, strlen("id: 9\r\nevent: message\r\n: note\r\ndata: a\r\ndata: b\r\ndata: c\r\nretry: 5\r\n\r"));
	n = sse_unit_rewrite(&u, "a\nb\r\nc", 6, out, sizeof(out));
	run(out, n, 0, 0, &t);
	assert_string_equal(t.data[0], "a\nb\nc");
	/* a dropped data line between a CR and an LF: the LF must not become the CR's CRLF (fuzz_sse found it) */
	{
		static const char m[] = "data: a\ry: 1\rdata: b\n\n";
		struct sse_parser q;
		struct sse_unit w;

		sse_parser_init(&q, 0);
		assert_int_equal(sse_parse(&q, m, sizeof(m) - 1, &w), (long)sizeof(m) - 1);
		n = sse_unit_rewrite(&w, "z", 1, out, sizeof(out));
		run(out, n, 0, 0, &t);
		assert_int_equal(t.events, 1);
		assert_string_equal(t.data[0], "z");
		assert_int_equal(t.rawn, n);
		sse_parser_dispose(&q);
	}
	/* empty data stays an event with data */
	n = sse_unit_rewrite(&u, "", 0, out, sizeof(out));
	run(out, n, 0, 0, &t);
	assert_int_equal(t.events, 1);
	assert_non_null(strstr(t.s, "data: \r\n"));
	sse_parser_dispose(&p);
}

/* A stream of events where one is rewritten: every other byte is identical. */
static void
test_rewrite_in_stream(void **state)
{
	static const char s[] = ": hb\n\ndata: keep1\n\ndata: {\"old\":true}\nid: 2\n\n: hb2\ndata: keep2\n\n";
	static const char want[] = ": hb\n\ndata: keep1\n\ndata: {\"new\":1}\nid: 2\n\n: hb2\ndata: keep2\n\n";
	struct sse_parser p;
	struct sse_unit u;
	char out[512];
	size_t o = 0, at = 0, i;
	long r;

	(void)state;
	for (i = 1; i <= 2; i++) {
		sse_parser_init(&p, 0);
		o = 0;
		for (at = 0; at < sizeof(s) - 1; ) {
			size_t piece = i == 1 ? sizeof(s) - 1 - at : 1;

			r = sse_parse(&p, s + at, piece, &u);
			assert_true(r != -1);
			if (r == -2) {
				at += piece;
				continue;
			}
			if (u.kind == SSE_UNIT_EVENT && u.has_data && u.data_len > 0 && u.data[0] == '{') {
				o += sse_unit_rewrite(&u, "{\"new\":1}", 9, out + o, sizeof(out) - o);
			} else {
				memcpy(out + o, u.raw, u.raw_len);
				o += u.raw_len;
			}
			at += (size_t)r;
		}
		sse_parser_dispose(&p);
		assert_int_equal(o, sizeof(want) - 1);
		assert_memory_equal(out, want, o);
	}
}

/* A stream of 10,000 small events: bounded memory (the buffer never grows past one event). */
static void
test_many_events(void **state)
{
	static const char ev[] = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
	struct sse_parser p;
	struct sse_unit u;
	size_t i, events = 0, at;
	long r;

	(void)state;
	sse_parser_init(&p, 0);
	for (i = 0; i < 10000; i++) {
		/* split each event in two to force the copy path */
		size_t half = (i % (sizeof(ev) - 2)) + 1;

		assert_int_equal(sse_parse(&p, ev, half, &u), -2);
		for (at = half; at < sizeof(ev) - 1; at += (size_t)r) {
			r = sse_parse(&p, ev + at, sizeof(ev) - 1 - at, &u);
			assert_true(r > 0);
			events += u.kind == SSE_UNIT_EVENT;
		}
	}
	assert_int_equal(events, 10000);
	assert_true(p._cap <= 256);
	sse_parser_dispose(&p);
}

/*
 * Fields read from the lines the parser noted while scanning (up to
 * SSE_LINES_MAX) and from the walk over the event (more lines than that)
 * agree: the same event with comment lines among its fields, written with
 * each line ending, with a BOM and with a partial BOM, fed whole and one byte
 * at a time, padded to SSE_LINES_MAX lines and past them.
 */
static void
test_noted_lines(void **state)
{
	static const char *const ends[] = {"\n", "\r\n", "\r"};
	static const char *const heads[] = {"", "\xef\xbb\xbf", "\xef\xbb"};
	char s[1024];
	struct transcript a, b;
	size_t e, h, pad, i, n;

	(void)state;
	for (e = 0; e < 3; e++)
		for (h = 0; h < 3; h++)
			for (pad = SSE_LINES_MAX - 4; pad <= SSE_LINES_MAX + 1; pad++) {
				/* four field lines of note, a comment among them, and <pad> unknown fields after */
				n = (size_t)snprintf(s, sizeof(s), "%sid: 3%s: note%sevent: e1%sdata: x%sdata:y", heads[h], ends[e],
				                     ends[e], ends[e], ends[e]);
				for (i = 0; i < pad; i++)
					n += (size_t)snprintf(s + n, sizeof(s) - n, "%sf%zu: v", ends[e], i);
				n += (size_t)snprintf(s + n, sizeof(s) - n, "%s%s", ends[e], ends[e]);
				run(s, n, 0, 0, &a);
				run(s, n, 1, 0, &b);
				assert_int_equal(a.failed, 0);
				assert_int_equal(a.events, 1);
				if (h == 2) {
					/* a partial BOM is the first line's bytes: that line is "\xef\xbbid", no id */
					assert_non_null(strstr(a.s, "E[x\ny|e1|]"));
				} else {
					assert_non_null(strstr(a.s, "E[x\ny|e1|3]"));
				}
				assert_string_equal(a.s, b.s);
			}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_line_endings),
		cmocka_unit_test(test_splits),
		cmocka_unit_test(test_heartbeat_not_held),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_rewrite_in_stream),
		cmocka_unit_test(test_many_events),
		cmocka_unit_test(test_noted_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
