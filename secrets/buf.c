/*
 * secrets/buf.c - memory for secret values: its own pages, excluded from
 * core dumps, locked in RAM where RLIMIT_MEMLOCK allows, wiped before unmap.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common/sluice.h"
#include "secrets/secrets.h"

struct secret_buf *
secret_buf_new(size_t cap)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	struct secret_buf *b;
	void *p;

	if (page <= 0 || cap == 0 || cap > SECRET_MAX_BYTES + 3)
		return NULL;
	len = (cap + (size_t)page - 1) / (size_t)page * (size_t)page;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* a core dump or a forked child must not carry the value */
	madvise(p, len, MADV_DONTDUMP);
	madvise(p, len, MADV_DONTFORK);
	(void)mlock(p, len);  /* best effort: no swap when the limit allows it */
	b = xcalloc(1, sizeof(*b));
	b->p = p;
	b->cap = len;
	return b;
}

void
secret_buf_free(struct secret_buf *b)
{
	if (b == NULL)
		return;
	sluice_wipe(b->p, b->cap);
	munlock(b->p, b->cap);
	munmap(b->p, b->cap);
	sluice_wipe(b, sizeof(*b));
	free(b);
}
