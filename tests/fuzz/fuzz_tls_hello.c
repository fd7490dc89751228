/*
 * tests/fuzz/fuzz_tls_hello.c - tls_hello_parse on arbitrary bytes.
 *
 * Checks the result is well-formed and that a ClientHello found in the whole
 * buffer needs more bytes at every shorter prefix.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/codec/tls_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PREFIX_CHECK_MAX 4096

static struct tls_hello h, h2;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i, k;
	int r;

	r = tls_hello_parse(data, size, &h);
	if (r == 0 || r < -2 || (r > 0 && (size_t)r > size) || r > TLS_HELLO_MAX_BYTES)
		abort();
	if (r > 0 && !tls_hello_looks_tls(data, size))
		abort();
	if (r <= 0)
		return 0;
	if (h.has_sni) {
		if (h.sni_len < 1 || h.sni_len > 255 || h.sni[h.sni_len] != '\0' || strlen(h.sni) != h.sni_len)
			abort();
		for (i = 0; i < h.sni_len; i++)
			if ((unsigned char)h.sni[i] < 0x21 || (unsigned char)h.sni[i] > 0x7e)
				abort();
	} else if (h.sni_len != 0) {
		abort();
	}
	if (h.nalpn > TLS_HELLO_MAX_ALPN)
		abort();
	for (i = 0; i < h.nalpn; i++)
		if (h.alpn[i].len < 1 || h.alpn[i].len > 255 || h.alpn[i].name[h.alpn[i].len] != '\0')
			abort();
	if (tls_hello_parse(data, (size_t)r, &h2) != r || memcmp(&h, &h2, sizeof(h)) != 0)
		abort();
	if ((size_t)r <= PREFIX_CHECK_MAX)
		for (k = 0; k < (size_t)r; k++)
			if (tls_hello_parse(data, k, &h2) != -2)
				abort();
	return 0;
}
