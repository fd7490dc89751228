/* common/mem.c - allocation helpers and secret wiping */
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "common/log.h"

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		fatalx("out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		fatalx("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		fatalx("out of memory (%zu bytes)", n);
	return q;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *
try_malloc(size_t n)
{
	return malloc(n ? n : 1);
}

void
sluice_wipe(void *p, size_t n)
{
	if (p != NULL && n > 0)
		explicit_bzero(p, n);
}

void
sluice_free_secret(char *s)
{
	if (s == NULL)
		return;
	sluice_wipe(s, strlen(s));
	free(s);
}
