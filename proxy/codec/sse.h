/*
 * proxy/codec/sse.h - an incremental parser of text/event-stream (Server-Sent
 * Events, WHATWG HTML "event stream interpretation"), for MCP answers.  Pure:
 * no libevent, no I/O.
 *
 * The stream is cut into units, each handed out whole and byte for byte as
 * it arrived, so that a caller that passes every unit on unchanged sends
 * exactly the stream it received:
 *   - SSE_UNIT_EVENT: the lines of one event up to and including the blank
 *     line that ends it (with its data: lines joined by "\n");
 *   - SSE_UNIT_PASS: a comment line (": ping", a heartbeat) or a blank line
 *     outside an event, or the LF of a CRLF whose CR ended the unit before
 *     it: handed out at once, so heartbeats are never held back.
 * Lines end in "\n", "\r\n" or "\r"; input may be split anywhere (1-byte
 * pieces give the same units as the whole).  A unit is held until it is
 * complete, up to a bound: a longer one is an error (the caller closes the
 * stream and audits it).  A leading UTF-8 BOM is ignored when reading
 * fields, as browsers do, and kept in the bytes.
 */
#ifndef SLUICE_PROXY_CODEC_SSE_H
#define SLUICE_PROXY_CODEC_SSE_H

#include <stddef.h>

#define SSE_EVENT_MAX_DEFAULT (1u << 20) /* bytes of one unit, unless the caller says otherwise */
#define SSE_LINES_MAX 8                  /* field lines of an event the parser notes as it scans (more: read again) */

enum sse_unit_kind {
	SSE_UNIT_EVENT = 1,
	SSE_UNIT_PASS = 2,
};

/* One unit; every pointer is valid until the next sse_parse or sse_parser_dispose. */
struct sse_unit {
	enum sse_unit_kind kind;
	const char *raw;          /* the unit's bytes, as received */
	size_t raw_len;
	/* SSE_UNIT_EVENT only */
	int has_data;             /* at least one data field (else a browser dispatches nothing) */
	const char *data;         /* the data fields joined by "\n" (no final "\n") */
	size_t data_len;
	const char *event;        /* the last event field, NULL when none */
	size_t event_len;
	const char *id;           /* the last id field, NULL when none */
	size_t id_len;
	size_t _skip;             /* BOM bytes before the first line (the stream's first unit only) */
	int _one_data;            /* exactly one data line: data points into raw */
};

struct sse_parser {
	size_t _max;              /* bound of one unit */
	char *_buf;               /* bytes of the pending unit from earlier calls */
	size_t _len, _cap;
	char *_data;              /* joined data of the last event (when it had several data lines) */
	size_t _dcap;
	size_t _line_len;         /* bytes of the current line so far (BOM not counted) */
	int _line_first;          /* first byte of the current line, -1 before it */
	int _fields;              /* the pending unit holds a field line: it is an event */
	int _after_cr;            /* the last byte was a CR: an LF now belongs to it */
	int _emitted;             /* a unit was handed out: drop its bytes at the next call */
	int _failed;
	unsigned long long _pos;  /* bytes of the stream seen (for the BOM) */
	int _bom;                 /* leading BOM bytes matched: 0..2 so far, 3 all, -1 none */
	/* the field lines of the pending unit, found as its bytes were scanned, so that its fields are read
	 * without a second pass over it: offset in the unit's bytes and length; _nlines > SSE_LINES_MAX when
	 * more came than fit (then they are found again by a walk over the unit) */
	struct {
		size_t at, len;
	} _lines[SSE_LINES_MAX];
	unsigned _nlines;
	unsigned long long _unit_at; /* _pos where the pending unit starts */
};

/* Prepares <p> (caller storage) for one stream; units longer than <max> bytes (0: SSE_EVENT_MAX_DEFAULT) fail. */
void sse_parser_init(struct sse_parser *p, size_t max);
/* Frees what <p> holds; <p> may be initialised again. */
void sse_parser_dispose(struct sse_parser *p);

/*
 * Feeds <buf>/<len>.  Returns the bytes of <buf> consumed (> 0) with a
 * complete unit in *<u>; -2 when all of <buf> was taken and no unit is
 * complete yet (it is kept); -1 when the pending unit is over the bound or
 * memory ran out (the stream must be closed; every later call returns -1).
 * The caller loops, feeding what is left, until -2.
 */
long sse_parse(struct sse_parser *p, const char *buf, size_t len, struct sse_unit *u);

/*
 * Renders <u> (an SSE_UNIT_EVENT) with its data replaced by <data>/<dlen>:
 * every line but the data lines is kept as it was (id, event, retry,
 * comments, unknown fields), the new data lines ("data: " + each line of
 * <data>, split at "\n", "\r\n" and "\r") stand where the first data line
 * stood, with the line ending the event used.  Writes at most <cap> bytes to
 * <out>; returns the length of the whole rendering (when larger than <cap>,
 * nothing useful was written: call again with that much room).
 */
size_t sse_unit_rewrite(const struct sse_unit *u, const char *data, size_t dlen, char *out, size_t cap);

#endif
