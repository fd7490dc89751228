/*
 * proxy/codec/sse.c - the text/event-stream parser (proxy/codec/sse.h).
 *
 * Bytes are scanned once.  A unit ends at a line ending, so the parser only
 * needs, per line, its length and first byte (the bytes between are skipped
 * in a tight loop, not stepped through the state machine): a blank line ends an event (or
 * is a unit of its own outside one), a comment line outside an event is a
 * unit of its own, any other line makes the pending unit an event.  A field
 * line is noted (where it lies in the unit, its length) as its end is found,
 * and the fields are read when the event is complete, from its bytes,
 * without a second scan for line ends (an event of more than SSE_LINES_MAX
 * field lines is walked again).  A unit that
 * starts and ends inside one call's input is handed out in place; only a
 * unit split across calls is copied, into a buffer capped at the bound.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bytescan.h"
#include "proxy/codec/sse.h"

static const unsigned char bom[3] = {0xef, 0xbb, 0xbf};

/* The first CR or LF in <s>[<i>..<n>), or <n> (common/bytescan.h: 16 bytes a step). */
static size_t
eol_find(const char *s, size_t i, size_t n)
{
	return i + bytescan2(s + i, n - i, '\n', '\r');
}

void
sse_parser_init(struct sse_parser *p, size_t max)
{
	memset(p, 0, sizeof(*p));
	p->_max = max != 0 ? max : SSE_EVENT_MAX_DEFAULT;
	p->_line_first = -1;
}

void
sse_parser_dispose(struct sse_parser *p)
{
	free(p->_buf);
	free(p->_data);
	p->_buf = NULL;
	p->_data = NULL;
	p->_len = p->_cap = p->_dcap = 0;
}

/* Appends <s>/<n> to the pending bytes (the bound was checked): 0, or -1. */
static int
keep(struct sse_parser *p, const char *s, size_t n)
{
	if (n == 0)
		return 0;
	if (p->_len + n > p->_cap) {
		size_t cap = p->_cap != 0 ? p->_cap : 256;
		char *b;

		while (cap < p->_len + n)
			cap *= 2;
		if (cap > p->_max)
			cap = p->_max;
		if ((b = realloc(p->_buf, cap)) == NULL)
			return -1;
		p->_buf = b;
		p->_cap = cap;
	}
	memcpy(p->_buf + p->_len, s, n);
	p->_len += n;
	return 0;
}

/* The end of the line at <s> (before <e>): its length; *<term> gets its ending's bytes (0 at <e>). */
static size_t
line_at(const char *s, const char *e, size_t *term)
{
	const char *q = s + eol_find(s, 0, (size_t)(e - s));

	*term = q == e ? 0 : (*q == '\r' && q + 1 < e && q[1] == '\n') ? 2 : 1;
	return (size_t)(q - s);
}

/* A field line: its name length, and its value. */
static size_t
field_of(const char *s, size_t n, const char **val, size_t *vlen)
{
	const char *colon = s, *e = s + n;
	size_t k;

	while (colon < e && *colon != ':')
		colon++; /* a field's name is short: a loop, not a call */
	if (colon == e) {
		*val = s + n;
		*vlen = 0;
		return n;
	}
	k = (size_t)(colon - s);
	*val = colon + 1;
	*vlen = n - k - 1;
	if (*vlen > 0 && **val == ' ') {
		(*val)++;
		(*vlen)--;
	}
	return k;
}

static int
name_is(const char *s, size_t n, const char *lit, size_t litn)
{
	return n == litn && memcmp(s, lit, n) == 0;
}

/*
 * The next field line of an event at *<s> (before <e>), comments skipped:
 * its start, with its name length in *<k> and its value; *<s> moves past it.
 * NULL at the blank line that ends the event (or at <e>).
 */
static const char *
next_field(const char **s, const char *e, size_t *k, const char **val, size_t *vlen)
{
	size_t n, term;

	while (*s < e) {
		const char *line = *s;

		n = line_at(line, e, &term);
		if (n == 0)
			return NULL;
		*s = line + n + term;
		if (line[0] == ':')
			continue;
		*k = field_of(line, n, val, vlen);
		return line;
	}
	return NULL;
}

/*
 * The next field line of the event <u> for pass 1 of read_event: from the
 * lines the parser noted (*<i> the next of them), or by the walk when it
 * could not note them all.
 */
static const char *
noted_field(const struct sse_parser *p, const struct sse_unit *u, unsigned *i, const char **s, size_t *k,
            const char **val, size_t *vlen)
{
	const char *line;

	if (p->_nlines > SSE_LINES_MAX)
		return next_field(s, u->raw + u->raw_len, k, val, vlen);
	if (*i >= p->_nlines)
		return NULL;
	line = u->raw + p->_lines[*i].at;
	*k = field_of(line, p->_lines[*i].len, val, vlen);
	(*i)++;
	return line;
}

/* Reads the fields of the complete event in u->raw (after <skip> BOM bytes): 0, or -1 (memory). */
static int
read_event(struct sse_parser *p, struct sse_unit *u, size_t skip)
{
	const char *s = u->raw + skip, *e = u->raw + u->raw_len, *val, *first = NULL, *f;
	size_t k, vlen, ndata = 0, total = 0, o = 0, joined = 0;
	unsigned i = 0;

	/* pass 1: event, id, and how much data */
	while ((f = noted_field(p, u, &i, &s, &k, &val, &vlen)) != NULL) {
		if (name_is(f, k, "data", 4)) {
			if (ndata++ == 0) {
				first = val;
				u->data_len = vlen;
			}
			total += vlen + (ndata > 1);
		} else if (name_is(f, k, "event", 5)) {
			u->event = val;
			u->event_len = vlen;
		} else if (name_is(f, k, "id", 2) && memchr(val, '\0', vlen) == NULL) {
			u->id = val;
			u->id_len = vlen;
		}
	}
	u->has_data = ndata > 0;
	u->_one_data = ndata == 1;
	u->data = first;
	if (ndata <= 1)
		return 0;
	/* pass 2: several data lines, joined by "\n" */
	if (total > p->_dcap) {
		char *d = realloc(p->_data, total);

		if (d == NULL)
			return -1;
		p->_data = d;
		p->_dcap = total;
	}
	s = u->raw + skip;
	while ((f = next_field(&s, e, &k, &val, &vlen)) != NULL) {
		if (!name_is(f, k, "data", 4))
			continue;
		/* after every data line but the last: a leading empty one too ("data\ndata: x" is "\nx") */
		if (joined++ > 0)
			p->_data[o++] = '\n';
		memcpy(p->_data + o, val, vlen);
		o += vlen;
	}
	u->data = p->_data;
	u->data_len = o;
	return 0;
}

/* Hands out the unit ending at <buf>[<end>): <end>, or -1. */
static long
emit(struct sse_parser *p, const char *buf, size_t end, enum sse_unit_kind kind, struct sse_unit *u)
{
	size_t skip;

	/* field by field, not memset: a call (rep stos) per unit showed in the profile */
	u->kind = kind;
	u->has_data = u->_one_data = 0;
	u->data = u->event = u->id = NULL;
	u->data_len = u->event_len = u->id_len = 0;
	if (p->_len > 0) {
		if (keep(p, buf, end) != 0)
			goto fail;
		u->raw = p->_buf;
		u->raw_len = p->_len;
	} else {
		u->raw = buf;
		u->raw_len = end;
	}
	/* the BOM is in the first unit's bytes only */
	skip = p->_bom == 3 && p->_pos == u->raw_len ? 3 : 0;
	u->_skip = skip;
	if (kind == SSE_UNIT_EVENT && read_event(p, u, skip) != 0)
		goto fail;
	p->_emitted = 1;
	p->_fields = 0;
	p->_nlines = 0;
	p->_unit_at = p->_pos;
	return (long)end;
fail:
	p->_failed = 1;
	return -1;
}

long
sse_parse(struct sse_parser *p, const char *buf, size_t len, struct sse_unit *u)
{
	size_t i;

	if (p->_failed)
		return -1;
	if (p->_emitted) {
		p->_len = 0;
		p->_emitted = 0;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		int cr = p->_after_cr;

		if (p->_pos >= 3 && !p->_after_cr && c != '\n' && c != '\r') {
			/* inside a line, past the BOM: only the line's first byte and its length matter; skip to its end */
			size_t j = eol_find(buf, i + 1, len);

			if (p->_len + j > p->_max) {
				p->_failed = 1;
				return -1;
			}
			if (p->_line_first < 0)
				p->_line_first = c;
			p->_line_len += j - i;
			p->_pos += j - i;
			i = j - 1;
			continue;
		}
		if (p->_len + i + 1 > p->_max) {
			p->_failed = 1;
			return -1;
		}
		p->_pos++;
		p->_after_cr = 0;
		if (cr && c == '\n') {
			/* the LF of a CRLF: inside the unit, or (its CR ended the last one) a unit of its own */
			if (p->_len == 0 && i == 0)
				return emit(p, buf, 1, SSE_UNIT_PASS, u);
			continue;
		}
		if (p->_pos <= 3 && p->_bom == (int)p->_pos - 1 && c == bom[p->_pos - 1]) {
			p->_bom = (int)p->_pos; /* a leading BOM: not a line byte */
			continue;
		}
		if (p->_bom == 1 || p->_bom == 2) {
			/* a partial BOM: its bytes were line bytes after all */
			if (p->_line_first < 0)
				p->_line_first = bom[0];
			p->_line_len += (size_t)p->_bom;
			p->_bom = -1;
		} else if (p->_bom == 0) {
			p->_bom = -1;
		}
		if (c == '\r' || c == '\n') {
			size_t n = p->_line_len;
			int first = p->_line_first;

			p->_after_cr = c == '\r';
			p->_line_len = 0;
			p->_line_first = -1;
			if (n == 0)
				return emit(p, buf, i + 1, p->_fields ? SSE_UNIT_EVENT : SSE_UNIT_PASS, u);
			if (first == ':' && !p->_fields)
				return emit(p, buf, i + 1, SSE_UNIT_PASS, u);
			p->_fields = 1;
			if (first != ':' && p->_nlines < SSE_LINES_MAX) {
				/* a field line: it ends at this byte, the stream's (_pos - 1)th */
				p->_lines[p->_nlines].at = (size_t)(p->_pos - 1 - p->_unit_at) - n;
				p->_lines[p->_nlines++].len = n;
			} else if (first != ':') {
				p->_nlines = SSE_LINES_MAX + 1;
			}
			continue;
		}
		if (p->_line_first < 0)
			p->_line_first = c;
		p->_line_len++;
	}
	if (keep(p, buf, len) != 0) {
		p->_failed = 1;
		return -1;
	}
	return -2;
}

/* Copies <s>/<n> to <out> at *<o> while it fits; *<o> counts on regardless. */
static void
put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
	if (*o < cap && n > 0)
		memcpy(out + *o, s, n <= cap - *o ? n : cap - *o);
	*o += n;
}

#define PUT_LIT(out, cap, o, lit) put((out), (cap), (o), (lit), sizeof(lit) - 1)

/*
 * 1 when <u>'s one data line reads "data: <value>" and <data>/<dlen> is one
 * line: then the rendering is the unit's bytes with the value replaced, and
 * needs no walk over its lines (the same bytes the walk writes).
 */
static int
one_line_swap(const struct sse_unit *u, const char *data, size_t dlen)
{
	const char *start = u->raw + u->_skip, *line;

	/* with one data line u->data points at its value in the unit's bytes (with several, at the joined copy) */
	if (!u->_one_data || (size_t)(u->data - start) < 6)
		return 0;
	line = u->data - 6;
	return memcmp(line, "data: ", 6) == 0 && (line == start || line[-1] == '\n' || line[-1] == '\r') &&
	       eol_find(data, 0, dlen) == dlen;
}

size_t
sse_unit_rewrite(const struct sse_unit *u, const char *data, size_t dlen, char *out, size_t cap)
{
	const char *s = u->raw, *e = u->raw + u->raw_len, *val;
	size_t n, term, k, vlen, o = 0;
	int done = 0, lone_cr = 0;

	if (one_line_swap(u, data, dlen)) {
		size_t head = (size_t)(u->data - u->raw), tail = u->raw_len - head - u->data_len;

		put(out, cap, &o, u->raw, head);
		put(out, cap, &o, data, dlen);
		put(out, cap, &o, u->data + u->data_len, tail);
		return o;
	}

	/* a BOM at the start of the stream is not a line */
	put(out, cap, &o, s, u->_skip);
	for (s += u->_skip; s < e; s += n + term) {
		n = line_at(s, e, &term);
		if (n == 0 && term == 1 && s[0] == '\n' && lone_cr) {
			/* a dropped data line stood between a CR and this LF: they would read as one CRLF */
			PUT_LIT(out, cap, &o, "\r\n");
			lone_cr = 0;
			continue;
		}
		if (n == 0 || s[0] == ':' || !name_is(s, field_of(s, n, &val, &vlen), "data", 4)) {
			put(out, cap, &o, s, n + term);
			lone_cr = term == 1 && s[n] == '\r';
			continue;
		}
		if (done)
			continue;
		done = 1;
		/* the new data, one line per line of it, each ended like the first data line was */
		k = 0;
		for (;;) {
			size_t seg = 0, t = 0;

			while (k + seg < dlen && data[k + seg] != '\n' && data[k + seg] != '\r')
				seg++;
			PUT_LIT(out, cap, &o, "data: ");
			put(out, cap, &o, data + k, seg);
			put(out, cap, &o, s + n, term);
			lone_cr = term == 1 && s[n] == '\r';
			if (k + seg == dlen)
				break;
			t = data[k + seg] == '\r' && k + seg + 1 < dlen && data[k + seg + 1] == '\n' ? 2 : 1;
			k += seg + t;
		}
	}
	return o;
}
