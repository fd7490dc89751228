/*
 * proxy/net/tlsbuf.c - a per-thread cache of OpenSSL's record buffers (see tlsbuf.h).
 *
 * OpenSSL's free does not say how large the block is; malloc_usable_size
 * does, and only blocks of record-buffer size are kept.  Everything else
 * goes straight to malloc.  The cache is per thread, so it takes no lock: a
 * buffer freed by another thread than the one that took it simply joins
 * that thread's cache.
 */
#include <malloc.h>
#include <stdlib.h>
#include <openssl/crypto.h>
#include "proxy/net/tlsbuf.h"

static _Thread_local void *cache[TLSBUF_CACHE_MAX];
static _Thread_local unsigned ncache;

static void *
buf_malloc(size_t n, const char *file, int line)
{
	unsigned i;

	(void)file;
	(void)line;
	if (n >= TLSBUF_MIN && n <= TLSBUF_MAX) {
		for (i = ncache; i-- > 0;) {
			void *p = cache[i];

			if (malloc_usable_size(p) >= n) {
				cache[i] = cache[--ncache];
				return p;
			}
		}
	}
	return malloc(n);
}

static void *
buf_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return realloc(p, n);
}

static void
buf_free(void *p, const char *file, int line)
{
	size_t n;

	(void)file;
	(void)line;
	if (p == NULL)
		return;
	n = malloc_usable_size(p);
	if (n >= TLSBUF_MIN && n <= TLSBUF_MAX && ncache < TLSBUF_CACHE_MAX) {
		cache[ncache++] = p;
		return;
	}
	free(p);
}

int
tlsbuf_init(void)
{
	return CRYPTO_set_mem_functions(buf_malloc, buf_realloc, buf_free) ? 0 : -1;
}

void
tlsbuf_thread_flush(void)
{
	while (ncache > 0)
		free(cache[--ncache]);
}

unsigned
tlsbuf_cached(void)
{
	return ncache;
}
