/*
 * proxy/audit.c - the audit log: one JSON line per request and per refused
 * connection, appended with O_APPEND.  A worker thread gathers the lines of
 * one round of its event loop and appends them with one write(2) at the end
 * of the round (audit_batch_*): on this machine a write(2) costs about as
 * much as the rest of a small request.  Lines are whole either way, and a
 * batch is written before the loop waits for the network again.
 *
 * Every string goes through the JSON writer, which escapes all bytes a peer
 * could use to end a line or forge a field.  No header values are recorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/proxy_int.h"

#define AUDIT_LINE_MAX 8192   /* a record longer than this is written with its path truncated */
#define AUDIT_BATCH_MAX (64 * 1024)  /* a worker's pending lines: written at once when they would pass this */

/* A worker thread's pending lines (audit_batch_begin), written by one event at the end of the round. */
struct audit_batch {
	struct audit *a;
	struct event *ev;
	size_t len;
	char buf[AUDIT_BATCH_MAX];
};

static _Thread_local struct audit_batch *tl_batch;

struct audit {
	int fd;
	pthread_mutex_t mu;
};

struct audit *
audit_open(const char *path, const char **err)
{
	struct audit *a = xcalloc(1, sizeof(*a));

	a->fd = -1;
	pthread_mutex_init(&a->mu, NULL);
	if (path == NULL)
		return a;
	a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (a->fd == -1) {
		*err = "cannot open the audit file";
		pthread_mutex_destroy(&a->mu);
		free(a);
		return NULL;
	}
	return a;
}

static void
rfc3339_ms(char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

static long
format(const struct audit_rec *r, char *buf, size_t cap, size_t path_max)
{
	struct jbuf jb;
	char now[96];

	rfc3339_ms(now, sizeof(now));
	jb_init(&jb, buf, cap);
	jb_str(&jb, "time", now);
	jb_str(&jb, "type", r->type);
	jb_str(&jb, "sandbox", r->sandbox);
	jb_str(&jb, "client", r->client);
	jb_str(&jb, "dest", r->dest);
	jb_str(&jb, "sni", r->sni);
	jb_str(&jb, "host", r->host);
	jb_str(&jb, "qtype", r->dns_qtype);
	jb_str(&jb, "answer", r->dns_answer);
	jb_str(&jb, "method", r->method);
	if (r->path != NULL)
		jb_strn(&jb, "path", r->path, strnlen(r->path, path_max));
	jb_str(&jb, "http_version", r->http_version);
	jb_str(&jb, "verdict", r->verdict);
	jb_str(&jb, "rule", r->rule);
	jb_str(&jb, "reason", r->reason);
	if (r->status >= 0)
		jb_int(&jb, "status", r->status);
	if (r->bytes_up >= 0)
		jb_int(&jb, "bytes_up", r->bytes_up);
	if (r->bytes_down >= 0)
		jb_int(&jb, "bytes_down", r->bytes_down);
	if (r->duration_ms >= 0)
		jb_int(&jb, "duration_ms", r->duration_ms);
	if (r->upstream_tls >= 0)
		jb_bool(&jb, "upstream_tls", r->upstream_tls);
	jb_str(&jb, "event", r->event);
	jb_str(&jb, "secret", r->secret);
	jb_str(&jb, "place", r->place);
	jb_pairs(&jb, "secrets", "name", r->secret_names, "place", r->secret_places, r->nsecrets);
	jb_pairs(&jb, "scrubbed", NULL, r->scrubbed, NULL, NULL, r->nscrubbed);
	jb_int(&jb, "conn", (int64_t)r->conn_id);
	return jb_finish(&jb, 1);
}

void
audit_write(struct audit *a, const struct audit_rec *r)
{
	char buf[AUDIT_LINE_MAX];
	long n;
	ssize_t w;

	if (a == NULL || a->fd == -1)
		return;
	n = format(r, buf, sizeof(buf), (size_t)-1);
	if (n < 0)  /* only the path is unbounded: cut it and say so by its length */
		n = format(r, buf, sizeof(buf), 2048);
	if (n < 0)
		return;
	if (tl_batch != NULL && tl_batch->a == a) {
		if (tl_batch->len + (size_t)n > sizeof(tl_batch->buf))
			audit_batch_flush();
		if (tl_batch->len == 0)
			event_active(tl_batch->ev, EV_TIMEOUT, 1);
		memcpy(tl_batch->buf + tl_batch->len, buf, (size_t)n);
		tl_batch->len += (size_t)n;
		return;
	}
	pthread_mutex_lock(&a->mu);
	w = write(a->fd, buf, (size_t)n);
	pthread_mutex_unlock(&a->mu);
	if (w != n)
		log_warn("audit: short write (%zd of %ld bytes)", w, n);
}

void
audit_batch_flush(void)
{
	struct audit_batch *b = tl_batch;
	ssize_t w;

	if (b == NULL || b->len == 0)
		return;
	pthread_mutex_lock(&b->a->mu);
	w = write(b->a->fd, b->buf, b->len);
	pthread_mutex_unlock(&b->a->mu);
	if (w < 0 || (size_t)w != b->len)
		log_warn("audit: short write (%zd of %zu bytes)", w, b->len);
	b->len = 0;
}

static void
batch_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	audit_batch_flush();
}

void
audit_batch_begin(struct audit *a, struct event_base *base)
{
	struct audit_batch *b;

	if (a == NULL || a->fd == -1 || tl_batch != NULL)
		return;
	b = xcalloc(1, sizeof(*b));
	b->a = a;
	b->ev = event_new(base, -1, 0, batch_cb, NULL);
	if (b->ev == NULL)
		fatalx("out of memory");
	tl_batch = b;
}

void
audit_batch_end(void)
{
	struct audit_batch *b = tl_batch;

	if (b == NULL)
		return;
	audit_batch_flush();
	event_free(b->ev);
	tl_batch = NULL;
	free(b);
}

void
audit_close(struct audit *a)
{
	if (a == NULL)
		return;
	if (a->fd != -1)
		close(a->fd);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
