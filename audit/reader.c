/* audit/reader.c - bounded line reading over a file that may still grow */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "common/sluice.h"
#include "audit/audit.h"

long
audit_line_split(const char *buf, size_t len, size_t max)
{
	size_t scan = len < max + 1 ? len : max + 1;
	const char *nl = memchr(buf, '\n', scan);

	if (nl != NULL)
		return (long)(nl - buf) + 1;
	if (len > max)
		return -1;
	return -2;
}

void
audit_reader_init(struct audit_reader *r, int fd, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->cap = cap;
	r->buf = xmalloc(cap + 1);
}

void
audit_reader_dispose(struct audit_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

size_t
audit_reader_pending(const struct audit_reader *r)
{
	return r->skipping ? 0 : r->end - r->start;
}

/* Moves the unread bytes to the front and reads more; returns bytes read, 0 at EOF, -1 on error. */
static ssize_t
fill(struct audit_reader *r)
{
	ssize_t n;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end >= r->cap + 1)
		return -2;  /* full: the caller decides (a too-long line) */
	do
		n = read(r->fd, r->buf + r->end, r->cap + 1 - r->end);
	while (n == -1 && errno == EINTR);
	if (n > 0)
		r->end += (size_t)n;
	r->eof = n == 0;
	return n;
}

int
audit_reader_next(struct audit_reader *r, const char **line, size_t *len)
{
	long k;
	ssize_t n;

	for (;;) {
		if (r->skipping) {
			const char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);

			if (nl != NULL) {
				r->start = (size_t)(nl - r->buf) + 1;
				r->skipping = 0;
				continue;
			}
			r->start = r->end = 0;
		} else {
			k = audit_line_split(r->buf + r->start, r->end - r->start, r->cap);
			if (k > 0) {
				*line = r->buf + r->start;
				*len = (size_t)k - 1;
				r->start += (size_t)k;
				r->lineno++;
				return 1;
			}
			if (k == -1) {
				/* count it, drop it up to its "\n" */
				r->lineno++;
				r->skipping = 1;
				r->start = r->end = 0;
				return SLUICE_ETOOBIG;
			}
		}
		n = fill(r);
		if (n < 0)
			return SLUICE_EIO;
		if (n == 0)
			return 0;
	}
}
