/*
 * audit/file.c - the audit log's files: opening after a crash,
 * rotation, and the forward-secure key file.
 *
 * Recovery.  The file may end in a partial line (the gateway died inside a
 * write, or the disk filled up): it is cut off at the end of the last
 * complete line, and the start record says how many bytes were cut.  The
 * last complete line names the seq the chain goes on from and hashes to
 * the next record's prev.  A last line that is not a record of ours
 * refuses to start: appending after it would hide what it is.  An empty
 * file (a new one, or one logrotate made) continues the chain of the newest
 * rotated file next to it, when there is one.
 *
 * The key file holds (seq, K_seq) for the next record to write: the writer
 * rewrites it atomically after each fsync of the log.  A key file behind the
 * log is evolved forward; one ahead of the log means records were cut off
 * the end (or it belongs to another log): refused.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/crypto.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "writer_int.h"

#define STAMP_LEN 16   /* yyyymmddThhmmssZ */

/* The directory part of <path> into <out>/<cap> ("." when none). */
static void
dir_of(const char *path, char *out, size_t cap)
{
	const char *sl = strrchr(path, '/');

	if (sl == NULL)
		snprintf(out, cap, ".");
	else if (sl == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(sl - path), path);
}

static void
fsync_dir(const char *path)
{
	char dir[4096];
	int fd;

	dir_of(path, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return;
	(void)fsync(fd);
	close(fd);
}

static int
pread_full(int fd, char *buf, size_t n, off_t off)
{
	ssize_t r;
	size_t got = 0;

	while (got < n) {
		r = pread(fd, buf + got, n - got, off + (off_t)got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/*
 * The last complete record of <fd> (<size> bytes): 1 with its seq and line
 * hash; 0 when the file holds no complete line; -1 when the last complete
 * line is not a record (or longer than any record); -2 on a read error.
 * *<cut>: bytes after the last "\n" (a partial line).
 */
static int
last_record(int fd, uint64_t size, uint64_t *seq, char hash[AUDIT_HASH_HEX + 1], uint64_t *cut)
{
	size_t n = size < AUDIT_TAIL_MAX ? (size_t)size : AUDIT_TAIL_MAX, e, s;
	uint64_t off = size - n;
	char *buf;
	int ret;

	*cut = 0;
	if (n == 0)
		return 0;
	buf = xmalloc(n);
	if (pread_full(fd, buf, n, (off_t)off) != 0) {
		ret = -2;
		goto out;
	}
	for (e = n; e > 0 && buf[e - 1] != '\n'; e--)
		;
	if (e == 0) {
		/* no "\n" at all: a file that is one partial line, or junk longer than any record */
		*cut = n;
		ret = off == 0 ? 0 : -1;
		goto out;
	}
	*cut = n - e;
	e--;  /* the "\n" ending the last complete line */
	for (s = e; s > 0 && buf[s - 1] != '\n'; s--)
		;
	if (s == 0 && off > 0) {
		ret = -1;  /* longer than a record can be */
		goto out;
	}
	if (audit_line_seq(buf + s, e - s, seq) != 0) {
		ret = -1;
		goto out;
	}
	audit_sha256_hex(buf + s, e - s, hash);
	ret = 1;
out:
	free(buf);
	return ret;
}

/* "<base>.<yyyymmddThhmmssZ>[.N]": 1 with the stamp and N, else 0. */
static int
rotated_name(const char *name, const char *base, size_t blen, char stamp[STAMP_LEN + 1], unsigned long *nth)
{
	const char *p;
	char *end;
	size_t i;

	if (strncmp(name, base, blen) != 0 || name[blen] != '.')
		return 0;
	p = name + blen + 1;
	for (i = 0; i < STAMP_LEN; i++) {
		char c = p[i];
		int ok = i == 8 ? c == 'T' : i == 15 ? c == 'Z' : (c >= '0' && c <= '9');
		if (!ok)
			return 0;
	}
	memcpy(stamp, p, STAMP_LEN);
	stamp[STAMP_LEN] = '\0';
	*nth = 0;
	p += STAMP_LEN;
	if (*p == '\0')
		return 1;
	if (*p != '.' || p[1] < '1' || p[1] > '9')
		return 0;
	errno = 0;
	*nth = strtoul(p + 1, &end, 10);
	return errno == 0 && *end == '\0';
}

/* The newest rotated file of a->path into <out>/<cap>: 1, or 0 when there is none. */
static int
newest_rotated(const struct audit *a, char *out, size_t cap)
{
	char dir[4096], best[STAMP_LEN + 1] = "", stamp[STAMP_LEN + 1], bestname[512] = "";
	const char *base = strrchr(a->path, '/');
	unsigned long nth, bestn = 0;
	struct dirent *de;
	size_t blen;
	DIR *d;
	int n;

	base = base != NULL ? base + 1 : a->path;
	blen = strlen(base);
	dir_of(a->path, dir, sizeof(dir));
	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (!rotated_name(de->d_name, base, blen, stamp, &nth) || strlen(de->d_name) >= sizeof(bestname))
			continue;
		if (best[0] == '\0' || strcmp(stamp, best) > 0 || (strcmp(stamp, best) == 0 && nth > bestn)) {
			memcpy(best, stamp, sizeof(best));
			bestn = nth;
			snprintf(bestname, sizeof(bestname), "%s", de->d_name);
		}
	}
	closedir(d);
	if (bestname[0] == '\0')
		return 0;
	n = snprintf(out, cap, "%s/%s", dir, bestname);
	return n > 0 && (size_t)n < cap;
}

static int
key_load(struct audit *a, char *err, size_t cap)
{
	struct audit_key k;
	const char *why = NULL;
	uint64_t kseq, steps = 0;
	int ret;

	ret = audit_key_load(a->key_path, &k, &why);
	if (ret == SLUICE_ENOENT || ret == SLUICE_EIO) {
		snprintf(err, cap, "audit.key_file %s: %s%s", a->key_path, why,
		         ret == SLUICE_ENOENT ? " (make one with `sluice audit keygen FILE`)" : "");
		return -1;
	}
	if (ret != 0) {
		snprintf(err, cap, "audit.key_file %s: not a key file (%s)", a->key_path, why);
		return -1;
	}
	kseq = (uint64_t)k.seq;
	ret = -1;
	if (kseq > a->chain.seq) {
		snprintf(err, cap, "audit.key_file %s holds the key of record %" PRIu64 " but the log's next record is %"
		         PRIu64 ": records were cut off the end of the log (or the key belongs to another log)",
		         a->key_path, kseq, a->chain.seq);
		goto out;
	}
	for (; kseq < a->chain.seq; kseq++, steps++)
		audit_key_evolve(k.key);
	if (steps > 0)
		log_info("audit: key file %s evolved %" PRIu64 " steps to record %" PRIu64, a->key_path, steps, kseq);
	a->chain.keyed = 1;
	memcpy(a->chain.key, k.key, AUDIT_KEY_BYTES);
	ret = 0;
out:
	sluice_wipe(k.key, sizeof(k.key));
	return ret;
}

int
audit_file_open(struct audit *a, char *err, size_t cap)
{
	char hash[AUDIT_HASH_HEX + 1], prev[4096];
	uint64_t seq = 0, cut = 0, pcut;
	struct stat st;
	int r, pfd;

	a->fd = open(a->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (a->fd == -1 || fstat(a->fd, &st) == -1) {
		snprintf(err, cap, "audit.file %s: %s", a->path, strerror(errno));
		return -1;
	}
	r = last_record(a->fd, (uint64_t)st.st_size, &seq, hash, &cut);
	if (r == -2) {
		snprintf(err, cap, "audit file %s: cannot read it back: %s", a->path, strerror(errno));
		return -1;
	}
	if (r == -1) {
		snprintf(err, cap, "audit file %s: last record unreadable; rotate it away", a->path);
		return -1;
	}
	if (cut > 0) {
		if (ftruncate(a->fd, st.st_size - (off_t)cut) == -1 || fsync(a->fd) == -1) {
			snprintf(err, cap, "audit file %s: cannot cut its partial last line: %s", a->path, strerror(errno));
			return -1;
		}
		a->recovered = cut;
		log_warnx("audit file %s: cut a partial last line (%" PRIu64 " bytes) left by a crash or a full disk",
		          a->path, cut);
	}
	if (r == 0 && newest_rotated(a, prev, sizeof(prev))) {
		/* an empty file after a rotation: the chain goes on from the rotated file */
		pfd = open(prev, O_RDONLY | O_CLOEXEC);
		if (pfd == -1 || fstat(pfd, &st) == -1) {
			snprintf(err, cap, "audit file %s: cannot read the rotated file %s: %s", a->path, prev, strerror(errno));
			if (pfd != -1)
				close(pfd);
			return -1;
		}
		r = last_record(pfd, (uint64_t)st.st_size, &seq, hash, &pcut);
		close(pfd);
		if (r < 0) {
			snprintf(err, cap, "audit file %s: the last record of the rotated file %s is unreadable; move it away",
			         a->path, prev);
			return -1;
		}
		if (r == 1)
			log_info("audit: %s continues the chain of %s (record %" PRIu64 ")", a->path, prev, seq);
	}
	audit_chain_init(&a->chain, r == 1 ? seq + 1 : 1, r == 1 ? hash : NULL, NULL);
	if (fstat(a->fd, &st) == -1) {
		snprintf(err, cap, "audit.file %s: %s", a->path, strerror(errno));
		return -1;
	}
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	a->file_size = (uint64_t)st.st_size;
	a->file_opened_ms = clock_mono_ms();
	if (a->key_path != NULL && key_load(a, err, cap) != 0)
		return -1;
	return 0;
}

int
audit_file_rotate(struct audit *a)
{
	char name[4096], stamp[STAMP_LEN + 1];
	struct stat st;
	struct tm tm;
	time_t now = time(NULL);
	int moved, fd, i;

	moved = stat(a->path, &st) == -1 || st.st_dev != a->dev || st.st_ino != a->ino;
	if (!moved && a->file_size == 0)
		return 0;  /* nothing to rotate */
	if (fsync(a->fd) == -1) {
		log_warn("audit: rotation: fsync %s", a->path);
		return -1;
	}
	if (!moved) {
		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		for (i = 0; i < 1000; i++) {
			if (i == 0)
				snprintf(name, sizeof(name), "%s.%s", a->path, stamp);
			else
				snprintf(name, sizeof(name), "%s.%s.%d", a->path, stamp, i);
			/* link() never replaces: a name taken (a second rotation within the second) tries the next */
			if (link(a->path, name) == 0)
				break;
			if (errno != EEXIST) {
				log_warn("audit: rotation: cannot link %s to %s", a->path, name);
				return -1;
			}
		}
		if (i == 1000 || unlink(a->path) == -1) {
			log_warn("audit: rotation: cannot move %s away", a->path);
			return -1;
		}
	}
	fd = open(a->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd == -1 || fstat(fd, &st) == -1) {
		log_warn("audit: rotation: cannot open a new %s (still writing the old file)", a->path);
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (st.st_size != 0) {
		log_warnx("audit: rotation: a new %s is not empty: not ours, left alone (still writing the old file)",
		          a->path);
		close(fd);
		return -1;
	}
	close(a->fd);
	a->fd = fd;
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	a->file_size = 0;
	a->file_opened_ms = clock_mono_ms();
	fsync_dir(a->path);
	if (moved)
		log_info("audit: %s was moved away: reopened it, the chain goes on from record %" PRIu64, a->path,
		         a->chain.seq);
	else
		log_info("audit: rotated %s to %s, the chain goes on from record %" PRIu64, a->path, name, a->chain.seq);
	return 0;
}

int
audit_key_save(struct audit *a)
{
	char tmp[4096], buf[AUDIT_KEY_FILE_MAX];
	struct audit_key k;
	int fd, n, ret = -1;
	ssize_t w;

	if (a->key_path == NULL || !a->chain.keyed)
		return 0;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", a->key_path) >= sizeof(tmp))
		return -1;
	k.seq = (int64_t)a->chain.seq;
	memcpy(k.key, a->chain.key, sizeof(k.key));
	n = audit_key_format(&k, buf, sizeof(buf));
	sluice_wipe(k.key, sizeof(k.key));
	if (n < 0)
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		goto out;
	w = write(fd, buf, (size_t)n);
	if (w != n || fsync(fd) == -1) {
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, a->key_path) == -1) {
		unlink(tmp);
		goto out;
	}
	fsync_dir(a->key_path);
	ret = 0;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	if (ret != 0 && !a->key_failing) {
		/* once per failure, not at every fsync; a file left behind only holds an older key */
		log_warn("audit: cannot rewrite the key file %s (it keeps an older key until it can)", a->key_path);
		atomic_fetch_add(&a->errors, 1);
	} else if (ret == 0 && a->key_failing) {
		log_warnx("audit: the key file %s is rewritten again", a->key_path);
	}
	a->key_failing = ret != 0;
	return ret;
}
