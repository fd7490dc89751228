/*
 * common/b64.h - the one base64 encoder (RFC 4648 section 4: the standard
 * alphabet, '=' padding).  The one decoder is OpenSSL's EVP_DecodeBlock,
 * called where Basic credentials are read (proxy/cred/credhead.c).
 */
#ifndef SLUICE_COMMON_B64_H
#define SLUICE_COMMON_B64_H

#include <stddef.h>

/* The length of the encoding of <n> bytes: 4 * ceil(<n> / 3). */
#define B64_ENCODED_LEN(n) (((n) + 2) / 3 * 4)

/*
 * Writes the base64 of <in>/<n> to <out> (room for B64_ENCODED_LEN(<n>); no
 * NUL).  Returns the length written.
 */
size_t b64_encode(char *out, const void *in, size_t n);

#endif
