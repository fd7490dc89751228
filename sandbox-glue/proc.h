/*
 * sandbox-glue/proc.h - small helpers the launcher's files share: error
 * messages into a caller's buffer, whole writes and bounded reads on a file
 * descriptor, memfds with given contents, and running a helper program
 * (nft, ip) the safe way.  Internal to sandbox-glue: the other modules use
 * the backends' headers.
 */
#ifndef SLUICE_SANDBOX_PROC_H
#define SLUICE_SANDBOX_PROC_H

#include <stddef.h>
#include <sys/types.h>

#define PROC_ARGS_MAX 15  /* words proc_run passes after argv[0] */

/*
 * Formats <fmt> into <err> (<errcap> bytes, always NUL-terminated, truncated
 * to fit).  Does nothing when <err> is NULL or <errcap> is 0.
 */
void proc_err_set(char *err, size_t errcap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Writes all <len> bytes of <p> to <fd>, retrying on EINTR and short
 * writes.  Returns 0, or SLUICE_EIO with errno set (a write that returns 0
 * counts as a failure, with errno EIO, rather than looping for ever).
 */
int proc_write_all(int fd, const void *p, size_t len);

/*
 * Reads from <fd> into <buf> until <len> bytes, end of file or a read error
 * other than EINTR, whichever comes first.  Returns the number of bytes read
 * (0..<len>); a caller that needs all <len> compares.  Never NUL-terminates.
 */
size_t proc_read_upto(int fd, void *buf, size_t len);

/*
 * A new memfd (close-on-exec, named <name> for /proc) holding the <len>
 * bytes of <data>, with its offset back at 0.  Returns the fd (owned by the
 * caller), or -1 with errno set.
 */
int proc_memfd_with(const char *name, const void *data, size_t len);

/*
 * Runs a helper program and waits for it.  The program is the first of
 * <paths> (<npaths> absolute paths, a fixed list: never $PATH, since the
 * caller's environment is not trusted) that access(X_OK) accepts; its argv[0]
 * is that path's last component and argv[1..] are <args> (NULL-terminated,
 * at most PROC_ARGS_MAX words, else SLUICE_EINVAL).  It runs with no shell,
 * the environment PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C only, and no
 * file descriptor of ours but 0, 1 and 2.  When <nsfd> is not -1 the child
 * joins that network namespace (setns) before the exec.
 *
 * stdin is a memfd holding <in> (NUL-terminated; NULL for empty); stderr is
 * a memfd; stdout is a memfd when <out> is given, else /dev/null.  With
 * memfds nothing can deadlock on a pipe and no SIGPIPE reaches the caller.
 * When <out> is given and the program succeeds, its whole stdout is stored
 * there, NUL-terminated (<outcap> bytes: SLUICE_ETOOBIG when it does not fit,
 * and <out> is then ""); <out> is "" on any other failure.
 *
 * Returns 0 when the program exited with status 0, else SLUICE_EIO (or
 * SLUICE_ETOOBIG as above) with a message in <err> (<errcap> bytes, may be
 * NULL): the first line of the program's stderr, at most <errcap> - 1 bytes,
 * control characters replaced with '?'; or, when it wrote none, how it
 * ended ("<path> exited with status N", "<path> killed by signal N"); or why
 * it could not run.  <err> is "" on success.
 *
 * Blocks until the program exits.  It forks and waits for its own child
 * only (waitpid on that pid): a caller that reaps children it did not start
 * (a SIGCHLD handler calling waitpid(-1)) makes it fail.  Only
 * async-signal-safe calls happen in the child, so callers may have threads.
 */
int proc_run(const char *const paths[], size_t npaths, const char *const args[], int nsfd, const char *in,
             char *out, size_t outcap, char *err, size_t errcap);

/*
 * 1 when the <len> bytes at <s> are all lower-case hex digits [0-9a-f] (a
 * sandbox id's alphabet), else 0.  Stops at the first byte that is not one,
 * so a NUL-terminated string shorter than <len> is never read past its NUL.
 */
int proc_hex_lower(const char *s, size_t len);

#endif
