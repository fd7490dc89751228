/*
 * proxy/judge/limits_state.c - the counters' state file: a versioned text format,
 * read once at start and written atomically (tmp + fsync + rename + fsync
 * of the directory) by limits_persist.
 *
 *   sluice-counters v1
 *   rate <key> <sandbox> <tokens-thousandths> <last_ms>
 *   budget <key> <sandbox> <window_start_ms> <sum-millionths>
 *   end <number of counter lines>
 *
 * <key> and <sandbox> are escaped: a byte outside '!'..'~', and '%' and '*',
 * is written %XX (upper-case hex), so no key can break a line or a field;
 * the sandbox of a global counter is a lone "*".  Numbers are decimal
 * without sign or leading zeros.  The end line makes a file cut at a line
 * boundary as detectable as one cut inside a line: either is refused, with
 * its line, and the gateway does not start (a budget must never reset
 * silently).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/pct.h"
#include "common/sluice.h"
#include "limits_int.h"

#define STATE_HEADER "sluice-counters v1"
#define RATE_TOKENS_MAX INT64_C(4294967295000)   /* UINT32_MAX tokens, in thousandths */
#define STATE_MS_MAX UINT64_C(9223372036854775807)

static int
safe_byte(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '%' && c != '*';
}

/* Appends <s> escaped to <out> (room checked by the caller: 3 bytes per input byte). */
static size_t
escape(char *out, const char *s)
{
	return pct_encode(out, s, strlen(s), safe_byte, PCT_UPPER);
}

/* Decodes field <f>/<len> into <out> (capacity <cap>, NUL-terminated): 0, or -1 with *<why>. */
static int
unescape(const char *f, size_t len, char *out, size_t cap, const char **why)
{
	size_t i, n = 0;

	if (len == 0) {
		*why = "empty field";
		return -1;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)f[i];
		int hi, lo;

		if (n + 1 >= cap) {
			*why = "name too long";
			return -1;
		}
		if (safe_byte(c)) {
			out[n++] = (char)c;
			continue;
		}
		if (c != '%' || len - i < 3) {
			*why = "bad byte in a name (not escaped)";
			return -1;
		}
		hi = sluice_hexval((unsigned char)f[i + 1]);
		lo = sluice_hexval((unsigned char)f[i + 2]);
		/* one spelling per byte: upper-case hex, only for bytes that must be escaped */
		if (hi < 0 || lo < 0 || (f[i + 1] >= 'a' && f[i + 1] <= 'f') || (f[i + 2] >= 'a' && f[i + 2] <= 'f')) {
			*why = "bad %XX escape in a name";
			return -1;
		}
		c = (unsigned char)(hi * 16 + lo);
		if (c == 0 || safe_byte(c)) {
			*why = "bad %XX escape in a name";
			return -1;
		}
		out[n++] = (char)c;
		i += 2;
	}
	out[n] = '\0';
	return 0;
}

/* A decimal number <= <max>: 0, or -1. */
static int
number(const char *f, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20 || (len > 1 && f[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		unsigned d;

		if (f[i] < '0' || f[i] > '9')
			return -1;
		d = (unsigned)(f[i] - '0');
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int
field_is(const char *f, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(f, lit, len) == 0;
}

/* One counter line's fields (after the kind): 0, or -1 with *<why>. */
static int
counter_line(struct limits *l, enum limits_kind kind, const char *const *f, const size_t *fl, const char **why)
{
	char key[LIMITS_KEY_MAX + 1], sandbox[LIMITS_SANDBOX_MAX + 1];
	struct limits_ctr *c;
	uint64_t a, b;
	uint32_t h;

	if (unescape(f[0], fl[0], key, sizeof(key), why) != 0)
		return -1;
	if (field_is(f[1], fl[1], LIMITS_GLOBAL)) {
		memcpy(sandbox, LIMITS_GLOBAL, sizeof(LIMITS_GLOBAL));
	} else if (unescape(f[1], fl[1], sandbox, sizeof(sandbox), why) != 0) {
		return -1;
	}
	if (number(f[2], fl[2], kind == LIMITS_RATE ? (uint64_t)RATE_TOKENS_MAX : STATE_MS_MAX, &a) != 0 ||
	    number(f[3], fl[3], kind == LIMITS_RATE ? STATE_MS_MAX : (uint64_t)POLICY_AMOUNT_MAX, &b) != 0) {
		*why = kind == LIMITS_RATE ? "expected <tokens> <last_ms> (decimal numbers)"
		                           : "expected <window_start_ms> <sum> (decimal numbers, sum at most 9e18)";
		return -1;
	}
	h = limits_hash(kind, key, sandbox);
	if (limits_find(l, h, kind, key, sandbox) != NULL) {
		*why = "the same counter twice";
		return -1;
	}
	if (atomic_load(&l->n) >= LIMITS_COUNTERS_MAX) {
		*why = "more counters than LIMITS_COUNTERS_MAX";
		return -1;
	}
	atomic_fetch_add(&l->n, 1);
	c = limits_insert(l, h, kind, key, sandbox);
	if (kind == LIMITS_RATE) {
		c->val = (int64_t)a;
		c->ms = b;
	} else {
		c->ms = a;
		c->val = (int64_t)b;
	}
	return 0;
}

#define NFIELDS 5

int
limits_state_parse(struct limits *l, const char *name, const char *buf, size_t len, char *err, size_t errcap)
{
	const char *p = buf, *end = buf + len, *nl, *why = NULL;
	const char *f[NFIELDS];
	size_t fl[NFIELDS], nf, lines = 0, nctr = 0;
	int ended = 0;

	while (p < end) {
		const char *q;

		lines++;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL) {
			why = "truncated (the last line has no newline)";
			goto bad;
		}
		if ((size_t)(nl - p) > LIMITS_LINE_MAX) {
			why = "line too long";
			goto bad;
		}
		if (ended) {
			why = "text after the end line";
			goto bad;
		}
		if (lines == 1) {
			if (!field_is(p, (size_t)(nl - p), STATE_HEADER)) {
				why = "not a counters file (expected the header \"" STATE_HEADER "\")";
				goto bad;
			}
			p = nl + 1;
			continue;
		}
		/* fields separated by one space each; a sixth one makes nf NFIELDS + 1 */
		for (nf = 0, q = p;;) {
			const char *s = memchr(q, ' ', (size_t)(nl - q));

			if (nf == NFIELDS) {
				nf++;
				break;
			}
			f[nf] = q;
			fl[nf] = (size_t)((s != NULL ? s : nl) - q);
			nf++;
			if (s == NULL)
				break;
			q = s + 1;
		}
		if (nf == 2 && field_is(f[0], fl[0], "end")) {
			uint64_t n;

			if (number(f[1], fl[1], LIMITS_COUNTERS_MAX, &n) != 0 || n != nctr) {
				why = "the end line does not count the counter lines";
				goto bad;
			}
			ended = 1;
		} else if (nf == NFIELDS && (field_is(f[0], fl[0], "rate") || field_is(f[0], fl[0], "budget"))) {
			if (counter_line(l, f[0][0] == 'r' ? LIMITS_RATE : LIMITS_BUDGET, f + 1, fl + 1, &why) != 0)
				goto bad;
			nctr++;
		} else {
			why = "expected \"rate <key> <sandbox> <tokens> <last_ms>\", \"budget <key> <sandbox> "
			      "<window_start_ms> <sum>\" or \"end <n>\"";
			goto bad;
		}
		p = nl + 1;
	}
	if (lines == 0) {
		lines = 1;
		why = "empty file (expected the header \"" STATE_HEADER "\")";
		goto bad;
	}
	if (!ended) {
		lines++;
		why = "truncated (no end line)";
		goto bad;
	}
	return 0;
bad:
	snprintf(err, errcap, "%s:%zu: %s", name, lines, why);
	return -1;
}

int
limits_state_load(struct limits *l, char *err, size_t errcap)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	ssize_t r;
	int fd, ret = -1;

	fd = open(l->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;   /* the first start: no counters yet */
		snprintf(err, errcap, "%s: %s", l->path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > LIMITS_FILE_MAX) {
		snprintf(err, errcap, "%s: not a regular file of at most %u bytes", l->path, LIMITS_FILE_MAX);
		goto out;
	}
	buf = try_malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		snprintf(err, errcap, "%s: out of memory", l->path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errcap, "%s: %s", l->path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	ret = limits_state_parse(l, l->path, buf, got, err, errcap);
out:
	free(buf);
	close(fd);
	return ret;
}

struct sbuf {
	char *p;
	size_t len, cap;
};

static int
room(struct sbuf *b, size_t n)
{
	char *np;
	size_t cap;

	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	np = realloc(b->p, cap);
	if (np == NULL)
		return SLUICE_ENOMEM;
	b->p = np;
	b->cap = cap;
	return 0;
}

static int
put_line(struct sbuf *b, const struct limits_ctr *c)
{
	const char *kw;
	size_t n;

	if (room(b, 16 + 3 * strlen(c->key) + 3 * strlen(c->sandbox) + 48) != 0)
		return SLUICE_ENOMEM;
	kw = c->kind == LIMITS_RATE ? "rate " : "budget ";
	n = strlen(kw);
	memcpy(b->p + b->len, kw, n);
	b->len += n;
	b->len += escape(b->p + b->len, c->key);
	b->p[b->len++] = ' ';
	if (strcmp(c->sandbox, LIMITS_GLOBAL) == 0)
		b->p[b->len++] = '*';
	else
		b->len += escape(b->p + b->len, c->sandbox);
	b->len += (size_t)snprintf(b->p + b->len, b->cap - b->len, " %llu %llu\n",
	                           (unsigned long long)(c->kind == LIMITS_RATE ? (uint64_t)c->val : c->ms),
	                           (unsigned long long)(c->kind == LIMITS_RATE ? c->ms : (uint64_t)c->val));
	return 0;
}

int
limits_state_format(struct limits *l, uint64_t gc_now_ms, char **out, size_t *outlen)
{
	struct sbuf b = {NULL, 0, 0};
	struct limits_ctr **pp, *c;
	size_t nctr = 0;
	unsigned i, k;
	int ret = 0;

	if (room(&b, sizeof(STATE_HEADER) + 1) != 0)
		return SLUICE_ENOMEM;
	memcpy(b.p, STATE_HEADER "\n", sizeof(STATE_HEADER));
	b.len = sizeof(STATE_HEADER);
	for (i = 0; i < LIMITS_SHARDS && ret == 0; i++) {
		pthread_mutex_lock(&l->shards[i].mu);
		for (k = 0; k < LIMITS_BUCKETS && ret == 0; k++) {
			for (pp = &l->shards[i].b[k]; (c = *pp) != NULL;) {
				if (gc_now_ms != 0 && limits_expired(c, gc_now_ms)) {
					*pp = c->next;
					free(c);
					atomic_fetch_sub(&l->n, 1);
					continue;
				}
				if ((ret = put_line(&b, c)) != 0)
					break;
				nctr++;
				pp = &c->next;
			}
		}
		pthread_mutex_unlock(&l->shards[i].mu);
	}
	if (ret == 0 && (ret = room(&b, 32)) == 0)
		b.len += (size_t)snprintf(b.p + b.len, b.cap - b.len, "end %zu\n", nctr);
	if (ret != 0) {
		free(b.p);
		return ret;
	}
	*out = b.p;
	*outlen = b.len;
	return 0;
}

static int
write_all(int fd, const char *buf, size_t len)
{
	ssize_t w;

	while (len > 0) {
		w = write(fd, buf, len);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

int
limits_state_write(struct limits *l, const char *buf, size_t len)
{
	int fd, dfd, saved;

	fd = open(l->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		return SLUICE_EIO;
	if (write_all(fd, buf, len) != 0 || fsync(fd) == -1) {
		saved = errno;
		close(fd);
		unlink(l->tmp);
		errno = saved;
		return SLUICE_EIO;
	}
	if (close(fd) == -1 || rename(l->tmp, l->path) == -1) {
		saved = errno;
		unlink(l->tmp);
		errno = saved;
		return SLUICE_EIO;
	}
	/* the rename itself is durable only once the directory is */
	dfd = open(l->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		return SLUICE_EIO;
	if (fsync(dfd) == -1) {
		saved = errno;
		close(dfd);
		errno = saved;
		return SLUICE_EIO;
	}
	close(dfd);
	return 0;
}
