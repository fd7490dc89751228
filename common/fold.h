/*
 * common/fold.h - Unicode simple case folding of JSON object keys, exactly
 * as Go's encoding/json matches keys to struct fields (bytes.EqualFold:
 * "amount", "AMOUNT" and "amoun\u212A"-style spellings with KELVIN SIGN or
 * LONG S are one key).  Upstreams written in Go (and ASP.NET Core's web
 * defaults, which fold too) read such keys as one field; a gateway that
 * reads them as different fields judges something else than what runs.
 *
 * The table (common/fold_table_int.h) is generated from Go's unicode package
 * by scripts/gen_fold.go.  Bytes that are not valid UTF-8 fold to U+FFFD,
 * as Go decodes them.
 */
#ifndef SLUICE_COMMON_FOLD_H
#define SLUICE_COMMON_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* The smallest code point of <r>'s simple case folding orbit (ASCII letters: upper case). */
uint32_t sluice_fold_rune(uint32_t r);

/* 1 if <a>/<alen> and <b>/<blen> are equal under simple case folding (Go's bytes.EqualFold), else 0. */
int sluice_fold_eq(const char *a, size_t alen, const char *b, size_t blen);

/*
 * Writes the folded form of <in>/<len> (each rune replaced by sluice_fold_rune
 * of it, UTF-8) into <out>, which must hold 3 * <len> bytes (an invalid byte
 * becomes the 3-byte U+FFFD); two strings are fold-equal exactly when their
 * folded forms are byte-equal.  Returns the length written.
 */
size_t sluice_fold_key(const char *in, size_t len, char *out);

#endif
