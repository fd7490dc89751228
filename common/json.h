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
/* Appends "}\n" when <newline>, else "}". Returns the length, or -1 on overflow. */
long jb_finish(struct jbuf *jb, int newline);

#endif
