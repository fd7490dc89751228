/*
 * sandbox-glue/proc.c - the launcher's shared helpers (see proc.h): error
 * messages, whole writes, bounded reads, memfds, running nft and ip.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common/sluice.h"
#include "sandbox-glue/proc.h"

#define MEMFD_NAME_MAX 64  /* "<program>-stdout" */

void
proc_err_set(char *err, size_t errcap, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errcap == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errcap, fmt, ap);
	va_end(ap);
}

int
proc_write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len > 0) {
		ssize_t w = write(fd, c, len);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return SLUICE_EIO;
		if (w == 0) {
			errno = EIO;
			return SLUICE_EIO;
		}
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

size_t
proc_read_upto(int fd, void *buf, size_t len)
{
	char *c = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, c + got, len - got);

		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

int
proc_memfd_with(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC), e;

	if (fd == -1)
		return -1;
	if (proc_write_all(fd, data, len) != 0 || lseek(fd, 0, SEEK_SET) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
proc_hex_lower(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* the first line of what the program wrote to <fd>, bounded, with control characters replaced */
static void
err_from_fd(int fd, char *err, size_t errcap)
{
	ssize_t got;
	size_t k;

	if (err == NULL || errcap == 0)
		return;
	got = pread(fd, err, errcap - 1, 0);
	if (got <= 0) {
		err[0] = '\0';
		return;
	}
	err[got] = '\0';
	for (k = 0; k < (size_t)got; k++) {
		if (err[k] == '\n') {
			err[k] = '\0';
			break;
		}
		if ((unsigned char)err[k] < 0x20 || err[k] == 0x7f)
			err[k] = '?';
	}
}

/* "a, b, c": the candidate paths, for the message when none is there */
static void
paths_list(const char *const paths[], size_t npaths, char *buf, size_t cap)
{
	size_t k, len = 0;

	buf[0] = '\0';
	for (k = 0; k < npaths && len < cap; k++) {
		int w = snprintf(buf + len, cap - len, "%s%s", k > 0 ? ", " : "", paths[k]);

		if (w < 0)
			break;
		len += (size_t)w;
	}
}

/* <out> gets the program's whole stdout from <fd>, NUL-terminated */
static int
out_read(int fd, const char *name, char *out, size_t outcap, char *err, size_t errcap)
{
	off_t outlen = lseek(fd, 0, SEEK_END);
	ssize_t got;

	if (outlen == -1 || outcap == 0 || (uint64_t)outlen >= outcap) {
		proc_err_set(err, errcap, "%s output larger than %zu bytes", name, outcap);
		return outlen == -1 ? SLUICE_EIO : SLUICE_ETOOBIG;
	}
	got = pread(fd, out, (size_t)outlen, 0);
	if (got != (ssize_t)outlen) {
		out[0] = '\0';
		proc_err_set(err, errcap, "reading %s output failed", name);
		return SLUICE_EIO;
	}
	out[got] = '\0';
	return 0;
}

int
proc_run(const char *const paths[], size_t npaths, const char *const args[], int nsfd, const char *in,
         char *out, size_t outcap, char *err, size_t errcap)
{
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	const char *argv[PROC_ARGS_MAX + 2], *path = NULL, *name, *slash;
	char mname[MEMFD_NAME_MAX], list[256];
	int fin = -1, fout = -1, ferr = -1, status, ret = SLUICE_EIO;
	size_t k, na;
	pid_t pid;

	if (out != NULL && outcap > 0)
		out[0] = '\0';
	if (err != NULL && errcap > 0)
		err[0] = '\0';
	for (k = 0; k < npaths; k++)
		if (access(paths[k], X_OK) == 0) {
			path = paths[k];
			break;
		}
	if (path == NULL) {
		paths_list(paths, npaths, list, sizeof(list));
		slash = npaths > 0 ? strrchr(paths[0], '/') : NULL;
		proc_err_set(err, errcap, "%s not found (%s)", slash != NULL ? slash + 1 : "program", list);
		return SLUICE_EIO;
	}
	slash = strrchr(path, '/');
	name = slash != NULL ? slash + 1 : path;
	argv[0] = name;
	for (na = 1; args[na - 1] != NULL; na++) {
		if (na > PROC_ARGS_MAX) {
			proc_err_set(err, errcap, "%s: more than %d arguments", name, PROC_ARGS_MAX);
			return SLUICE_EINVAL;
		}
		argv[na] = args[na - 1];
	}
	argv[na] = NULL;

	snprintf(mname, sizeof(mname), "%s-stdin", name);
	fin = proc_memfd_with(mname, in != NULL ? in : "", in != NULL ? strlen(in) : 0);
	if (fin == -1) {
		proc_err_set(err, errcap, "stdin of %s to a memfd: %s", name, strerror(errno));
		goto out;
	}
	snprintf(mname, sizeof(mname), "%s-stdout", name);
	fout = out != NULL ? memfd_create(mname, MFD_CLOEXEC) : open("/dev/null", O_WRONLY | O_CLOEXEC);
	snprintf(mname, sizeof(mname), "%s-stderr", name);
	ferr = memfd_create(mname, MFD_CLOEXEC);
	if (fout == -1 || ferr == -1) {
		proc_err_set(err, errcap, "memfd_create: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == -1) {
		proc_err_set(err, errcap, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* only async-signal-safe calls here: the caller may have threads */
		if (dup2(fin, 0) == -1 || dup2(fout, 1) == -1 || dup2(ferr, 2) == -1)
			_exit(126);
		/* setns here, not `ip -n`: that also makes a mount namespace and remounts /sys */
		if (nsfd != -1 && setns(nsfd, CLONE_NEWNET) == -1)
			_exit(125);
		if (close_range(3, ~0U, 0) == -1) {
			int fd;

			for (fd = 3; fd < 1024; fd++)
				close(fd);
		}
		execve(path, SLUICE_DECONST(char *const *, argv), envp);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR) {
			proc_err_set(err, errcap, "waitpid: %s", strerror(errno));
			goto out;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		err_from_fd(ferr, err, errcap);
		if (err != NULL && errcap > 0 && err[0] == '\0') {
			if (WIFEXITED(status))
				proc_err_set(err, errcap, "%s exited with status %d", path, WEXITSTATUS(status));
			else
				proc_err_set(err, errcap, "%s killed by signal %d", path,
				             WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		}
		goto out;
	}
	ret = out != NULL ? out_read(fout, name, out, outcap, err, errcap) : 0;
out:
	if (fin != -1)
		close(fin);
	if (fout != -1)
		close(fout);
	if (ferr != -1)
		close(ferr);
	return ret;
}
