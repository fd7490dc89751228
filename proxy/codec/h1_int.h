/*
 * proxy/codec/h1_int.h - helpers shared by the HTTP/1.1 head parser (h1_parse.c)
 * and the chunked decoder (h1_chunked.c).  Not for other files.
 */
#ifndef SLUICE_PROXY_H1_INT_H
#define SLUICE_PROXY_H1_INT_H

#include <stddef.h>
#include "proxy/codec/h1_parse.h"

/* line_find results */
enum {
	LINE_OK = 1,
	LINE_MORE = 0,
	LINE_BAD = -1,   /* bare CR or bare LF */
	LINE_LONG = -3,  /* no CRLF within the window */
};

int h1_is_tchar(unsigned char c);
/* field-vchar / SP / HTAB: VCHAR and obs-text, no controls and no DEL. */
int h1_is_field_byte(unsigned char c);
int h1_is_ows(char c);
/*
 * Finds the CRLF ending the line at <p> within <window> bytes of <avail>;
 * LINE_OK with *<line_len> (without CRLF), LINE_MORE, LINE_BAD or LINE_LONG.
 */
int h1_line_find(const char *p, size_t avail, size_t window, size_t *line_len);
/* Parses one header field line <l>/<n> into <h>; 0 or -1 with *<err>. */
int h1_field_parse(const char *l, size_t n, struct h1_header *h, const char **err);

#endif
