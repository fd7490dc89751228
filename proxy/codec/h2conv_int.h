/*
 * proxy/codec/h2conv_int.h - the checks proxy/codec/h2conv.c (h2 -> h1) and
 * proxy/codec/h2conv_nv.c (h1 -> h2) share.  Private to those two files.
 */
#ifndef SLUICE_PROXY_H2CONV_INT_H
#define SLUICE_PROXY_H2CONV_INT_H
#include <stddef.h>
#include <stdint.h>

int h2conv_is_tchar(unsigned char c);
unsigned char h2conv_lower(unsigned char c);
/* Case-insensitive comparison of <p>/<n> with the NUL-terminated <lit>. */
int h2conv_ieq(const void *p, size_t n, const char *lit);
/* 1 if the comma-separated list <v>/<n> holds the token <tok> (ignoring case and OWS). */
int h2conv_list_has(const char *v, size_t n, const char *tok);
/* RFC 9113 8.2.2 plus RFC 9110 7.6.1: fields that only mean something on one hop. */
int h2conv_is_connection_specific(const void *name, size_t n);
/* RFC 3986 authority bytes (unreserved, pct-encoded, sub-delims, ':', '[', ']'), no '@'. */
int h2conv_authority_ok(const uint8_t *v, size_t n);
/* RFC 9113 8.2.1 and RFC 9110 5.5, narrowed to what h1_parse accepts. */
const char *h2conv_value_check(const uint8_t *p, size_t n);

#endif
