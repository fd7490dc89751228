/*
 * audit/sinks.c - the thread that makes the SIEM copies (audit.syslog,
 * audit.ocsf).  The writer thread hands it each batch of lines once they
 * are in the file (audit_sinks_push: one copy of the batch into a bounded
 * buffer, no allocation); this thread parses each line once and sends the
 * syslog message and writes the OCSF event.  When the buffer is full the
 * batch is dropped and counted on both sinks: the copies can fall behind,
 * the writer (and so the gateway) never waits for them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "writer_int.h"

#define AUDIT_SINKS_BUF_MAX (4 * 1024 * 1024)  /* bytes of lines waiting for the copies */
#define AUDIT_SINKS_TICK_MS 100                /* TCP: queued bytes are retried this often */

struct audit_sinks {
	struct audit_export *exp;   /* borrowed: struct audit owns and closes them */
	struct audit_ocsf *ocsf;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *in, *work;            /* <mu>: lines queued; the thread's own: lines being copied */
	size_t inlen;
	int stop, reopen;
};

static size_t
count_lines(const char *p, size_t n)
{
	size_t c = 0;
	const char *nl;

	while (n > 0 && (nl = memchr(p, '\n', n)) != NULL) {
		c++;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	return c;
}

static void
copy_lines(struct audit_sinks *s, const char *p, size_t n)
{
	const char *end = p + n, *nl;
	struct audit_record rec;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			break;
		if (audit_record_parse(&rec, p, (size_t)(nl - p)) != 0)
			rec.obj = NULL;  /* cannot happen for the writer's lines; the syslog copy still goes */
		audit_export_rec(s->exp, &rec, p, (size_t)(nl - p));
		audit_ocsf_rec(s->ocsf, &rec);
		audit_record_dispose(&rec);
	}
}

static void *
sinks_main(void *arg)
{
	struct audit_sinks *s = arg;
	struct timespec ts;
	char *t;
	size_t n;
	int stop, reopen;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		if (s->inlen == 0 && !s->stop && !s->reopen) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += AUDIT_SINKS_TICK_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
		}
		t = s->work;
		s->work = s->in;
		s->in = t;
		n = s->inlen;
		s->inlen = 0;
		stop = s->stop;
		reopen = s->reopen;
		s->reopen = 0;
		pthread_mutex_unlock(&s->mu);
		if (reopen)
			audit_ocsf_reopen(s->ocsf);
		copy_lines(s, s->work, n);
		audit_export_poll(s->exp);  /* TCP: what waited for the connection or a slow collector */
		if (stop && n == 0)
			break;
	}
	return NULL;
}

struct audit_sinks *
audit_sinks_start(struct audit_export *exp, struct audit_ocsf *ocsf)
{
	struct audit_sinks *s;
	pthread_condattr_t ca;

	if (exp == NULL && ocsf == NULL)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->exp = exp;
	s->ocsf = ocsf;
	s->in = xmalloc(AUDIT_SINKS_BUF_MAX);
	s->work = xmalloc(AUDIT_SINKS_BUF_MAX);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&s->thread, NULL, sinks_main, s) != 0) {
		log_warnx("audit: cannot start the thread of the syslog/OCSF copies: they are off");
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s->in);
		free(s->work);
		free(s);
		return NULL;
	}
	return s;
}

void
audit_sinks_push(struct audit_sinks *s, const char *lines, size_t len)
{
	size_t lost;

	if (s == NULL || len == 0)
		return;
	pthread_mutex_lock(&s->mu);
	if (len <= AUDIT_SINKS_BUF_MAX - s->inlen) {
		memcpy(s->in + s->inlen, lines, len);
		s->inlen += len;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	pthread_mutex_unlock(&s->mu);
	lost = count_lines(lines, len);  /* the copies are behind: this batch is dropped, counted on both */
	audit_export_count_dropped(s->exp, lost);
	audit_ocsf_count_dropped(s->ocsf, lost);
}

void
audit_sinks_reopen(struct audit_sinks *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->reopen = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void
audit_sinks_stop(struct audit_sinks *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->in);
	free(s->work);
	free(s);
}
