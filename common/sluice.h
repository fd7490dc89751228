/*
 * common/sluice.h - what every module shares: error codes, (ptr, len) views,
 * allocation helpers, secret wiping.
 *
 * Error convention (STYLE.md section 4): a function returns 0 on success or a
 * negative SLUICE_E* code; sluice_strerror() gives the text.  Parsers are the
 * exception: they return bytes consumed, -2 for "need more", -1 for an error.
 */
#ifndef SLUICE_COMMON_SLUICE_H
#define SLUICE_COMMON_SLUICE_H

#include <stddef.h>
#include <stdint.h>

#define SLUICE_VERSION "0.1.0"

enum {
	SLUICE_OK = 0,
	SLUICE_ENOMEM = -1,   /* allocation failed (peer-sized allocations only) */
	SLUICE_EINVAL = -2,   /* bad argument or malformed input */
	SLUICE_EIO = -3,      /* a system call failed; errno has detail */
	SLUICE_ENOENT = -4,   /* no such file or entry */
	SLUICE_EEXIST = -5,   /* refusing to overwrite */
	SLUICE_EPARSE = -6,   /* a document did not parse */
	SLUICE_EDENIED = -7,  /* refused by policy */
	SLUICE_ETOOBIG = -8,  /* a named bound was exceeded */
	SLUICE_ETLS = -9,     /* a TLS operation failed */
	SLUICE_ETIMEDOUT = -10,
	SLUICE_ECLOSED = -11, /* the peer went away */
};

/* Returns a static string describing <err> (a SLUICE_E* code). */
const char *sluice_strerror(int err);

/* A borrowed view of bytes; never owns <base>. */
struct sluice_iov {
	const char *base;
	size_t len;
};

#define SLUICE_IOV_LIT(s) ((struct sluice_iov){(s), sizeof(s) - 1})

/*
 * A string literal as the two arguments (pointer, length) of an append:
 * evbuffer_add(b, SLUICE_LIT("\r\n")), memcpy(p, SLUICE_LIT("Basic ")).  The
 * length comes from sizeof, never from a hand count (curl's STRCONST); the
 * "" makes anything but a literal fail to compile.
 */
#define SLUICE_LIT(s) ("" s), (sizeof(s) - 1)

/* Allocation for small, fixed-size objects: abort on OOM (STYLE.md section 4). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Peer-sized allocations: NULL on failure, which the caller turns into an error. */
__attribute__((warn_unused_result)) void *try_malloc(size_t n);

/* Overwrites <n> bytes at <p> in a way the compiler may not elide. */
void sluice_wipe(void *p, size_t n);

/* Wipes then frees a NUL-terminated string that held a secret (NULL is fine). */
void sluice_free_secret(char *s);

/*
 * <p> without its const, for the two places -Wcast-qual must let through, each named where it is used: a
 * library taking a non-const pointer it does not write through (jansson's object iteration, execve's argv),
 * and freeing memory the code owns but holds as const (an array of borrowed and allocated strings).  The
 * round trip through uintptr_t is what keeps the warning quiet; grep for the macro to find every such cast.
 */
#define SLUICE_DECONST(type, p) ((type)(uintptr_t)(const void *)(p))

/* Case-insensitive comparison of <a>/<alen> with the NUL-terminated <lit>. */
int sluice_iov_ieq(const char *a, size_t alen, const char *lit);
/* The value of hex digit <c> (either case), or -1. */
int sluice_hexval(int c);

#endif
