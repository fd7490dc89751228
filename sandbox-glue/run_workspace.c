/*
 * sandbox-glue/run_workspace.c - the --workspace directory (run.h): checked
 * against every path the launcher hides from the sandbox, then bound by the
 * descriptor that was checked.
 *
 * A workspace that is, contains, or lies inside the CA directory, the audit
 * file, the admin socket or a file: secret would hand the sandbox what the
 * launcher hides, leaving only file modes between them.  Paths are compared
 * resolved, and by device and inode up every parent, so neither a symlink
 * nor a bind mount (the same directory under another name) hides an
 * overlap; a hidden directory's own tree is searched for the workspace's
 * inode, which finds a bind mount of one of its subdirectories; a hidden
 * file with a second hard link on the workspace's file system is refused,
 * since the link could be inside.  The directory is opened once (O_PATH)
 * and that descriptor is what bwrap binds (--bind-fd): a rename or symlink
 * swap after the check binds nothing else.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sluice.h"
#include "sandbox-glue/run.h"

#define WS_SCAN_MAX 20000   /* entries of a hidden directory's tree searched for the workspace */
#define WS_SCAN_DEPTH 32    /* its depth */

static int
same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* 1 if some directory from <path> up to "/" (each parent resolved by ".." from the one before) is <ws>. */
static int
up_is(const char *path, const struct stat *ws)
{
	struct stat st;
	int fd, up, hit = 0, n;

	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	for (n = 0; n < PATH_MAX / 2; n++) {
		struct stat pst;

		if (fstat(fd, &st) == -1)
			break;
		if (same(&st, ws)) {
			hit = 1;
			break;
		}
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up == -1 || fstat(up, &pst) == -1 || same(&pst, &st)) {  /* the root */
			if (up != -1)
				close(up);
			break;
		}
		close(fd);
		fd = up;
	}
	close(fd);
	return hit;
}

/* Searches the tree under the directory <dfd> (taken) for <ws>: 1 found, 0 not, -1 too large to search. */
static int
tree_has(int dfd, const struct stat *ws, int depth, size_t *seen)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int r = 0;

	if (depth > WS_SCAN_DEPTH || (d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return depth > WS_SCAN_DEPTH ? -1 : 0;
	}
	while (r == 0 && (de = readdir(d)) != NULL) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++*seen > WS_SCAN_MAX) {
			r = -1;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(st.st_mode))
			continue;
		if (same(&st, ws)) {
			r = 1;
			break;
		}
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub != -1)
			r = tree_has(sub, ws, depth + 1, seen);
	}
	closedir(d);
	return r;
}

/* 1 if <a> is <b> or below it, as strings of resolved paths. */
static int
path_under(const char *a, const char *b)
{
	size_t n = strlen(b);

	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/' || (n == 1 && b[0] == '/'));
}

/* Why <h> overlaps the workspace (<ws>, resolved <wpath>), or NULL. */
static const char *
overlap(const char *h, const struct stat *ws, const char *wpath)
{
	struct stat hs;
	char *real, *parent, *slash;
	const char *why = NULL;
	size_t seen = 0;
	int fd, t;

	real = realpath(h, NULL);
	if (real == NULL) {
		/* not there yet (an audit file, a socket): the directory it will be made in must not be inside */
		parent = xstrdup(h);
		slash = strrchr(parent, '/');
		if (slash != NULL && slash != parent)
			*slash = '\0';
		if (slash != NULL && (up_is(parent, ws) || ((real = realpath(parent, NULL)) != NULL && path_under(real, wpath))))
			why = "contains";
		free(parent);
		free(real);
		return why;
	}
	if (stat(real, &hs) == 0 && same(&hs, ws))
		why = "is";
	else if (path_under(real, wpath) || up_is(real, ws))
		why = "contains";
	else if (path_under(wpath, real))
		why = "is inside";
	else if (stat(real, &hs) == 0 && S_ISDIR(hs.st_mode) && up_is(wpath, &hs))
		why = "is inside";
	else if (stat(real, &hs) == 0 && S_ISDIR(hs.st_mode) &&
	         (fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1 && (t = tree_has(fd, ws, 0, &seen)) != 0)
		why = t > 0 ? "is inside (a bind mount of a directory)" : "may be inside (too large to search)";
	else if (stat(real, &hs) == 0 && !S_ISDIR(hs.st_mode) && hs.st_nlink > 1 && hs.st_dev == ws->st_dev)
		why = "may contain (a hidden file has another hard link on its file system)";
	free(real);
	return why;
}

int
run_workspace_open(const char *path, const char *const *hidden, size_t nhidden, int *fd, char *err, size_t errlen)
{
	char link[64], wpath[PATH_MAX];
	struct stat ws;
	const char *why;
	ssize_t n;
	size_t i;

	*fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*fd == -1) {
		snprintf(err, errlen, "--workspace %s: %s", path, strerror(errno));
		return SLUICE_EINVAL;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", *fd);
	if (fstat(*fd, &ws) == -1 || (n = readlink(link, wpath, sizeof(wpath) - 1)) <= 0) {
		snprintf(err, errlen, "--workspace %s: %s", path, strerror(errno));
		goto fail;
	}
	wpath[n] = '\0';
	for (i = 0; i < nhidden; i++) {
		if (hidden[i] == NULL)
			continue;
		if ((why = overlap(hidden[i], &ws, wpath)) != NULL) {
			snprintf(err, errlen, "--workspace %s %s %s, which the sandbox must not see", wpath, why, hidden[i]);
			goto fail;
		}
	}
	return 0;
fail:
	close(*fd);
	*fd = -1;
	return SLUICE_EINVAL;
}
