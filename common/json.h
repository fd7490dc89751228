/*
 * common/json.h - a bounded JSON object writer for log lines and error bodies.
 *
 * Every string is escaped (control bytes, quote, backslash, DEL and bytes >= 0x80
 * as \u00XX), so no peer value can end a line or forge a field.
 */
#ifndef SLUICE_COMMON_JSON_H
#define SLUICE_COMMON_JSON_H

#include <stddef.h>
#include <stdint.h>

/*
 * How json_escape() writes a string's bytes.  Always: '"' and '\\' as \" and
 * \\, other bytes below 0x20 as \u00xx; every other byte as itself unless a
 * flag says otherwise.
 */
enum json_esc_flags {
	JSON_ESC_PLAIN = 0,
	JSON_ESC_ASCII = 1 << 0, /* DEL and bytes >= 0x80 as \u00xx too: pure ASCII out (log and audit lines) */
	JSON_ESC_SHORT = 1 << 1, /* \b \f \n \r \t instead of their \u00xx */
	JSON_ESC_SLASH = 1 << 2, /* '/' as \/ (PHP's json_encode) */
	JSON_ESC_HTML = 1 << 3,  /* < > & as \u003c \u003e \u0026 (Go's encoding/json) */
};

/* The most bytes json_escape() writes for <n> input bytes. */
#define JSON_ESCAPED_MAX(n) (6 * (n))

/*
 * The one JSON string escaper: writes the escaped form of <in>/<n> (no
 * quotes, no NUL) to <out>, at most <cap> bytes of it.  Returns the length
 * of the whole escaped form; when that is over <cap> the output is cut
 * short and unusable (snprintf's convention; <out> may be NULL with <cap> 0
 * to measure).
 */
size_t json_escape(char *out, size_t cap, const void *in, size_t n, unsigned flags);

struct jbuf {
	char *buf;
	size_t cap;
	size_t len;
	int overflow; /* set once anything did not fit; the output is then unusable */
	int nfields;
};

/* Starts an object "{" in <buf>/<cap> (storage owned by the caller). */
void jb_init(struct jbuf *jb, char *buf, size_t cap);
void jb_str(struct jbuf *jb, const char *key, const char *val);           /* NULL val: skipped */
void jb_strn(struct jbuf *jb, const char *key, const char *val, size_t n);
void jb_int(struct jbuf *jb, const char *key, int64_t v);
void jb_bool(struct jbuf *jb, const char *key, int v);
void jb_null(struct jbuf *jb, const char *key);
/*
 * An array of <n> objects under <k>: {"<k1>": v1[i], "<k2>": v2[i]} (<k2> NULL:
 * one field each; <k1> NULL: the strings v1[i] themselves).  Nothing when <n> is 0.
 */
void jb_pairs(struct jbuf *jb, const char *k, const char *k1, const char *const *v1, const char *k2,
              const char *const *v2, size_t n);
/* "<key>":[] (jb_pairs writes nothing for an empty array). */
void jb_empty_array(struct jbuf *jb, const char *key);
/* Appends "}\n" when <newline>, else "}". Returns the length, or -1 on overflow. */
long jb_finish(struct jbuf *jb, int newline);

#endif
