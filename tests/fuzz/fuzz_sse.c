/*
 * tests/fuzz/fuzz_sse.c - the text/event-stream parser (proxy/codec/sse.c).
 *
 * Layout: a byte of bound (the unit bound is 16 + 8 * it), a byte of piece
 * size (1 + it % 64), then the stream.  Checks:
 *   - differential: the stream fed whole, in 1-byte pieces and in the given
 *     pieces gives the same units (kind, bytes, data, event, id) and fails at
 *     the same point;
 *   - the units are the stream: their bytes concatenated are a prefix of it,
 *     and all of it up to what is pending when nothing failed;
 *   - no unit is over the bound; data is never longer than the unit;
 *   - an event's fields are what a reading of its bytes by the
 *     specification's rules gives (check_fields, apart from the parser:
 *     the lines the parser notes while scanning must say the same);
 *   - an event rewritten with its own data parses back to the same data.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/codec/sse.h"

#define LOG_MAX (1u << 20)

struct log {
	char *s;
	size_t n;
	size_t raw;      /* bytes of the units */
	int failed;
};

static void
add(struct log *l, const void *p, size_t n)
{
	if (l->n + n > LOG_MAX)
		abort();
	memcpy(l->s + l->n, p, n);
	l->n += n;
}

static void
add_field(struct log *l, const char *p, size_t n, int present)
{
	unsigned char m = (unsigned char)present;

	add(l, &m, 1);
	add(l, &n, sizeof(n));
	if (present && n > 0)
		add(l, p, n);
}

/*
 * <u> rendered with <data>/<dlen> and read back by a fresh parser into *<v>
 * (*<p> to dispose, *<out> to free): 1, or 0 when the rendering opens with
 * EF BB BF that are a field name's (a fresh parser would take them for a
 * BOM: nothing to compare).  Aborts unless the rendering is one event, all
 * of it read (or all but the LF of a blank line written "\r\n" after a CR
 * whose data line was dropped).
 */
static int
render(const struct sse_unit *u, const char *data, size_t dlen, size_t max, struct sse_parser *p,
       struct sse_unit *v, char **out)
{
	size_t need = sse_unit_rewrite(u, data, dlen, NULL, 0);
	long r;

	if (need == 0 || (*out = malloc(need)) == NULL || sse_unit_rewrite(u, data, dlen, *out, need) != need)
		abort();
	if (u->_skip == 0 && need >= 3 && memcmp(*out, "\xef\xbb\xbf", 3) == 0) {
		free(*out);
		return 0;
	}
	/* a line may grow by "data: ": allow for it */
	sse_parser_init(p, max + need);
	r = sse_parse(p, *out, need, v);
	if (!(r == (long)need || (r == (long)need - 1 && (*out)[need - 1] == '\n' && (*out)[need - 2] == '\r')) ||
	    v->kind != SSE_UNIT_EVENT || !v->has_data)
		abort();
	return 1;
}

/* 1 if the optional fields <a>/<an> and <b>/<bn> (NULL: absent) are the same. */
static int
same_field(const char *a, size_t an, const char *b, size_t bn)
{
	return (a == NULL) == (b == NULL) && (a == NULL || (an == bn && memcmp(a, b, an) == 0));
}

/*
 * Aborts unless <u>'s fields are those of its bytes read line by line (CRLF,
 * CR or LF; comments skipped; the value after the first colon, less one
 * space; data lines joined by LF; the last event, the last id without NUL).
 */
static void
check_fields(const struct sse_unit *u)
{
	const char *s = u->raw + u->_skip, *e = u->raw + u->raw_len, *ev = NULL, *id = NULL;
	char *data = malloc(u->raw_len + 1);
	size_t dn = 0, evn = 0, idn = 0, nd = 0;

	if (data == NULL)
		abort();
	while (s < e) {
		const char *q = s, *c, *v;
		size_t n, k, vn;

		while (q < e && *q != '\r' && *q != '\n')
			q++;
		if ((n = (size_t)(q - s)) == 0)
			break;
		if (s[0] != ':') {
			c = memchr(s, ':', n);
			k = c != NULL ? (size_t)(c - s) : n;
			v = c != NULL ? c + 1 : s + n;
			vn = c != NULL ? n - k - 1 : 0;
			if (vn > 0 && *v == ' ') {
				v++;
				vn--;
			}
			if (k == 4 && memcmp(s, "data", 4) == 0) {
				if (nd++ > 0)
					data[dn++] = '\n';
				memcpy(data + dn, v, vn);
				dn += vn;
			} else if (k == 5 && memcmp(s, "event", 5) == 0) {
				ev = v;
				evn = vn;
			} else if (k == 2 && memcmp(s, "id", 2) == 0 && memchr(v, '\0', vn) == NULL) {
				id = v;
				idn = vn;
			}
		}
		s = q == e ? e : (*q == '\r' && q + 1 < e && q[1] == '\n') ? q + 2 : q + 1;
	}
	if ((nd > 0) != (u->has_data != 0) || (nd > 0 && (dn != u->data_len || memcmp(data, u->data, dn) != 0)) ||
	    !same_field(ev, evn, u->event, u->event_len) || !same_field(id, idn, u->id, u->id_len))
		abort();
	free(data);
}

static void
check_rewrite(const struct sse_unit *u, size_t max)
{
	struct sse_parser p;
	struct sse_unit v;
	char *out;
	size_t i;

	/* the same data: the same data read back */
	if (render(u, u->data, u->data_len, max, &p, &v, &out)) {
		if (v.data_len != u->data_len)
			abort();
		for (i = 0; i < v.data_len; i++)
			if (v.data[i] != u->data[i] && !(u->data[i] == '\n' && v.data[i] == '\n'))
				abort();
		sse_parser_dispose(&p);
		free(out);
	}
	/* new data of one line (the in-place swap of a one-data-line event, or the walk): read back as it is, the
	 * event and id fields as they were */
	if (render(u, "{\"x\":1}", 7, max, &p, &v, &out)) {
		if (v.data_len != 7 || memcmp(v.data, "{\"x\":1}", 7) != 0 ||
		    !same_field(v.event, v.event_len, u->event, u->event_len) || !same_field(v.id, v.id_len, u->id, u->id_len))
			abort();
		sse_parser_dispose(&p);
		free(out);
	}
}

static void
feed(const uint8_t *s, size_t n, size_t piece, size_t max, struct log *l, int rewrite)
{
	struct sse_parser p;
	struct sse_unit u;
	size_t off = 0;

	l->n = l->raw = 0;
	l->failed = 0;
	sse_parser_init(&p, max);
	while (off < n && !l->failed) {
		size_t len = piece == 0 || n - off < piece ? n - off : piece, at = 0;

		while (at < len) {
			long r = sse_parse(&p, (const char *)s + off + at, len - at, &u);

			if (r == -1) {
				l->failed = 1;
				add(l, "F", 1);
				add(l, &off, sizeof(off)); /* where: the same piece start only when pieces agree */
				l->n -= sizeof(off);
				break;
			}
			if (r == -2)
				break;
			if (r <= 0 || (size_t)r > len - at || u.raw_len > max || u.raw_len == 0)
				abort();
			/* the unit's bytes are the stream's next bytes */
			if (l->raw + u.raw_len > n || memcmp(s + l->raw, u.raw, u.raw_len) != 0)
				abort();
			l->raw += u.raw_len;
			add(l, u.kind == SSE_UNIT_EVENT ? "E" : "P", 1);
			add_field(l, u.raw, u.raw_len, 1);
			if (u.kind == SSE_UNIT_EVENT) {
				if (u.has_data && u.data_len > u.raw_len)
					abort();
				add_field(l, u.data, u.data_len, u.has_data);
				add_field(l, u.event, u.event_len, u.event != NULL);
				add_field(l, u.id, u.id_len, u.id != NULL);
				check_fields(&u);
				if (rewrite && u.has_data)
					check_rewrite(&u, max);
			} else if (u.has_data || u.event != NULL || u.id != NULL) {
				abort();
			}
			at += (size_t)r;
		}
		off += len;
	}
	sse_parser_dispose(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct log a, b, c;
	size_t max, piece;

	if (size < 2)
		return 0;
	if (a.s == NULL) {
		a.s = malloc(LOG_MAX);
		b.s = malloc(LOG_MAX);
		c.s = malloc(LOG_MAX);
	}
	max = 16 + 8 * (size_t)data[0];
	piece = 1 + data[1] % 64;
	data += 2;
	size -= 2;
	feed(data, size, 0, max, &a, 1);
	feed(data, size, 1, max, &b, 0);
	feed(data, size, piece, max, &c, 0);
	if (a.n != b.n || memcmp(a.s, b.s, a.n) != 0 || a.n != c.n || memcmp(a.s, c.s, a.n) != 0)
		abort();
	if (a.failed != b.failed || a.failed != c.failed || a.raw != b.raw)
		abort();
	return 0;
}
