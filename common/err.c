/* common/err.c - error texts and small shared helpers */
#include <string.h>
#include <strings.h>
#include "common/sluice.h"

const char *
sluice_strerror(int err)
{
	switch (err) {
	case SLUICE_OK: return "success";
	case SLUICE_ENOMEM: return "out of memory";
	case SLUICE_EINVAL: return "invalid argument";
	case SLUICE_EIO: return "input/output error";
	case SLUICE_ENOENT: return "not found";
	case SLUICE_EEXIST: return "already exists";
	case SLUICE_EPARSE: return "parse error";
	case SLUICE_EDENIED: return "denied";
	case SLUICE_ETOOBIG: return "limit exceeded";
	case SLUICE_ETLS: return "TLS error";
	case SLUICE_ETIMEDOUT: return "timed out";
	case SLUICE_ECLOSED: return "connection closed";
	}
	return "unknown error";
}

int
sluice_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
sluice_iov_ieq(const char *a, size_t alen, const char *lit)
{
	size_t n = strlen(lit);

	return alen == n && (n == 0 || strncasecmp(a, lit, n) == 0);
}
