/*
 * audit/writer.c - the audit log, the workers' side: a record's members
 * formatted on the thread that has them, queued with a seq for the writer
 * thread (writer_thread.c), and requests parked until their record is in the
 * file.
 *
 * Why park: a request's record is written when it is decided, and none of
 * its bytes go upstream before that record is written (a crash cannot hide
 * a request that was sent).  The worker queues the record and goes on with
 * its other connections; the writer, after each write(2), wakes the threads
 * whose parked requests it covers (one event per worker thread, made active
 * from the writer), and each resumes them.
 *
 * The record's JSON line is formatted by audit/rec_json.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include "common/clock.h"
#include "common/hex.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "writer_int.h"

/* A request waiting for its record (or a passthrough for its connection's). */
struct audit_parked {
	uint64_t seq;
	void (*fn)(void *);
	void *arg;
};

/* A passthrough connection's "allow" record, queued on this thread and maybe not written yet. */
struct audit_conn_seq {
	uint64_t conn_id;
	uint64_t seq;
};

/* One worker thread's parked requests and the event the writer makes active for them. */
struct audit_waker {
	struct audit *a;
	struct event *ev;
	struct event *flush_ev;         /* end of the loop round: tells the writer what this thread queued */
	int flush_armed;
	_Atomic uint64_t want;          /* the lowest parked seq (0: none); the writer reads it */
	struct audit_parked *p;
	size_t np, capp;
	struct audit_conn_seq *cs;
	size_t ncs, capcs;
	struct audit_waker *next;       /* a->wakers, under a->mu */
};

static _Thread_local struct audit_waker *tl_waker;
static char open_err[512];

/* Records of work already let through are never refused for want of room: they are bounded by that work. */
static int
bounded(enum audit_kind k)
{
	return k != AUDIT_KIND_RESPONSE && k != AUDIT_KIND_SCRUB;
}

/*
 * Records that something waits for: an allowed request's (its first byte
 * goes upstream after it) and a passthrough's "allow".  Those wake the
 * writer; the others ride along with the next write, AUDIT_LAZY_MS at most.
 */
static int
awaited(const struct audit_rec *r)
{
	return r->verdict == AUDIT_VERDICT_ALLOW && (r->kind == AUDIT_KIND_REQUEST || r->kind == AUDIT_KIND_CONNECTION);
}

static void
conn_seq_add(struct audit_waker *w, uint64_t conn_id, uint64_t seq)
{
	if (w->ncs == w->capcs) {
		w->capcs = w->capcs ? 2 * w->capcs : 16;
		w->cs = xrealloc(w->cs, w->capcs * sizeof(*w->cs));
	}
	w->cs[w->ncs].conn_id = conn_id;
	w->cs[w->ncs].seq = seq;
	w->ncs++;
}

uint64_t
audit_write(struct audit *a, const struct audit_rec *rec)
{
	char buf[AUDIT_BODY_MAX];
	struct audit_rec tmp;
	uint64_t seq;
	long n;

	if (a == NULL)
		return 0;
	if (rec->kind == AUDIT_KIND_CONNECTION && rec->verdict == AUDIT_VERDICT_DENY) {
		/* a connection refused before HTTP (conn.c) is a denial (docs/audit-schema.md) */
		tmp = *rec;
		tmp.kind = AUDIT_KIND_DENIAL;
		rec = &tmp;
	}
	if (a->count != NULL)
		a->count(a->count_arg, rec);
	if (a->path == NULL)
		return 0;
	n = audit_rec_format(rec, buf, sizeof(buf), (size_t)-1);
	if (n < 0)  /* only the path is unbounded: cut it, and its length says so */
		n = audit_rec_format(rec, buf, sizeof(buf), AUDIT_PATH_CUT);
	if (n < 2) {
		atomic_fetch_add(&a->errors, 1);
		log_warnx("audit: a %s record does not fit in %d bytes: not written", audit_kind_name(rec->kind), AUDIT_BODY_MAX);
		return 0;
	}
	/*
	 * A worker flushes once per loop round (flush_cb), not per record: the
	 * records of one round share one write(2), made on the worker itself
	 * (audit_combine) unless the writer thread is writing, which it then
	 * wakes.  A record nothing waits for (a response, a refusal) wakes
	 * nobody: it goes with the next round's, or the writer's lazy one.
	 */
	if (rec->mcp_nhmac > 0) {
		/* the fingerprints need the record's key: made on the writer thread, of copies it owns */
		seq = audit_enqueue_args(a, buf + 1, (size_t)n - 2, bounded(rec->kind), awaited(rec) && !(tl_waker != NULL &&
		                         tl_waker->a == a), rec->mcp_hmac_args, rec->mcp_nhmac);
		if (seq != 0 && awaited(rec) && tl_waker != NULL && tl_waker->a == a && !tl_waker->flush_armed) {
			tl_waker->flush_armed = 1;
			event_active(tl_waker->flush_ev, EV_TIMEOUT, 1);
		}
	} else if (!awaited(rec)) {
		seq = audit_enqueue(a, buf + 1, (size_t)n - 2, bounded(rec->kind), 0);
	} else if (tl_waker != NULL && tl_waker->a == a) {
		seq = audit_enqueue(a, buf + 1, (size_t)n - 2, bounded(rec->kind), 0);
		if (seq != 0 && !tl_waker->flush_armed) {
			tl_waker->flush_armed = 1;
			event_active(tl_waker->flush_ev, EV_TIMEOUT, 1);
		}
	} else {
		seq = audit_enqueue(a, buf + 1, (size_t)n - 2, bounded(rec->kind), 1);
	}
	if (rec->conn_id != 0 && rec->kind == AUDIT_KIND_CONNECTION && rec->verdict == AUDIT_VERDICT_ALLOW && tl_waker != NULL &&
	    tl_waker->a == a)
		/* a passthrough waits for this record; one that could not be queued is never written: it waits for good */
		conn_seq_add(tl_waker, rec->conn_id, seq != 0 ? seq : UINT64_MAX);
	return seq;
}

int
audit_enabled(struct audit *a)
{
	return a != NULL && a->path != NULL;
}

int
audit_healthy(struct audit *a)
{
	return a == NULL || a->path == NULL || atomic_load(&a->healthy);
}

size_t
audit_queue_depth(struct audit *a)
{
	size_t n;

	if (a == NULL || a->path == NULL)
		return 0;
	pthread_mutex_lock(&a->mu);
	n = a->depth;
	pthread_mutex_unlock(&a->mu);
	return n;
}

uint64_t
audit_write_errors(struct audit *a)
{
	return a == NULL ? 0 : atomic_load(&a->errors);
}

uint64_t
audit_syslog_dropped(struct audit *a)
{
	return a != NULL ? audit_export_dropped(a->exp) : 0;
}

uint64_t
audit_ocsf_errors(struct audit *a)
{
	return a != NULL ? audit_ocsf_dropped(a->ocsf) : 0;
}

int
audit_written(struct audit *a, uint64_t seq)
{
	return a == NULL || a->path == NULL || seq == 0 || atomic_load(&a->written) >= seq;
}

/* ---- parking ---- */

static void
want_update(struct audit_waker *w)
{
	uint64_t min = 0;
	size_t i;

	for (i = 0; i < w->np; i++)
		if (min == 0 || w->p[i].seq < min)
			min = w->p[i].seq;
	atomic_store(&w->want, min);
}

static void
conn_seq_purge(struct audit_waker *w, uint64_t done)
{
	size_t i, k = 0;

	for (i = 0; i < w->ncs; i++)
		if (w->cs[i].seq > done)
			w->cs[k++] = w->cs[i];
	w->ncs = k;
}

static void
wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct audit_waker *w = arg;
	struct audit_parked p;
	uint64_t done;
	size_t i;

	(void)fd;
	(void)what;
	for (;;) {
		done = atomic_load(&w->a->written);
		/* in parking order; a resume may unpark others (a stream's session closing), so rescan each time */
		for (i = 0; i < w->np && w->p[i].seq > done; i++)
			;
		if (i == w->np)
			break;
		p = w->p[i];
		memmove(w->p + i, w->p + i + 1, (w->np - i - 1) * sizeof(*w->p));
		w->np--;
		want_update(w);
		p.fn(p.arg);
	}
	conn_seq_purge(w, done);
	want_update(w);
	/* the writer may have passed the new lowest seq between its check and our update */
	if (atomic_load(&w->want) != 0 && atomic_load(&w->want) <= atomic_load(&w->a->written))
		event_active(w->ev, EV_TIMEOUT, 1);
}

static void
flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct audit_waker *w = arg;

	(void)fd;
	(void)what;
	w->flush_armed = 0;
	/* this round's records: written here when nobody else is writing, else by the writer thread */
	if (audit_combine(w->a) != 0)
		audit_signal_writer(w->a);
}

void
audit_wake_workers(struct audit *a, uint64_t done)
{
	struct audit_waker *w;
	uint64_t want;

	pthread_mutex_lock(&a->mu);
	for (w = a->wakers; w != NULL; w = w->next) {
		want = atomic_load(&w->want);
		if (want != 0 && want <= done)
			event_active(w->ev, EV_TIMEOUT, 1);
	}
	pthread_mutex_unlock(&a->mu);
}

void
audit_worker_attach(struct audit *a, struct event_base *base)
{
	struct audit_waker *w;

	if (a == NULL || a->path == NULL || tl_waker != NULL)
		return;
	w = xcalloc(1, sizeof(*w));
	w->a = a;
	w->ev = event_new(base, -1, 0, wake_cb, w);
	w->flush_ev = event_new(base, -1, 0, flush_cb, w);
	if (w->ev == NULL || w->flush_ev == NULL)
		fatalx("out of memory");
	atomic_init(&w->want, 0);
	pthread_mutex_lock(&a->mu);
	w->next = a->wakers;
	a->wakers = w;
	pthread_mutex_unlock(&a->mu);
	tl_waker = w;
}

void
audit_worker_detach(void)
{
	struct audit_waker *w = tl_waker, **pp;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->a->mu);
	for (pp = &w->a->wakers; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	pthread_mutex_unlock(&w->a->mu);
	if (w->flush_armed)
		audit_signal_writer(w->a);
	event_free(w->ev);
	event_free(w->flush_ev);
	free(w->p);
	free(w->cs);
	free(w);
	tl_waker = NULL;
}

int
audit_park(struct audit *a, uint64_t seq, void (*resume)(void *), void *arg)
{
	struct audit_waker *w = tl_waker;
	size_t i;

	if (audit_written(a, seq) || w == NULL || w->a != a)
		return 1;
	for (i = 0; i < w->np; i++)
		if (w->p[i].arg == arg && w->p[i].seq == seq)
			return 0;
	if (w->np == w->capp) {
		w->capp = w->capp ? 2 * w->capp : 64;
		w->p = xrealloc(w->p, w->capp * sizeof(*w->p));
	}
	w->p[w->np].seq = seq;
	w->p[w->np].fn = resume;
	w->p[w->np].arg = arg;
	w->np++;
	want_update(w);
	/* the writer publishes, then reads want; we store want, then read what it published */
	if (audit_written(a, seq)) {
		w->np--;
		want_update(w);
		return 1;
	}
	return 0;
}

void
audit_unpark(void *arg)
{
	struct audit_waker *w = tl_waker;
	size_t i, k = 0;

	if (w == NULL || w->np == 0)
		return;
	for (i = 0; i < w->np; i++)
		if (w->p[i].arg != arg)
			w->p[k++] = w->p[i];
	if (k != w->np) {
		w->np = k;
		want_update(w);
	}
}

int
audit_conn_gate(struct audit *a, uint64_t conn_id, void (*resume)(void *), void *arg)
{
	struct audit_waker *w = tl_waker;
	size_t i;

	if (w == NULL || w->a != a || w->ncs == 0)
		return 0;
	for (i = 0; i < w->ncs && w->cs[i].conn_id != conn_id; i++)
		;
	if (i == w->ncs)
		return 0;
	if (audit_park(a, w->cs[i].seq, resume, arg) == 0)
		return 1;
	w->cs[i] = w->cs[--w->ncs];
	return 0;
}

/* ---- life cycle ---- */

struct audit *
audit_open(const struct audit_opts *opts, const char *config_path, audit_count_cb count, void *count_arg,
           const char **err)
{
	struct audit *a = xcalloc(1, sizeof(*a));
	pthread_condattr_t ca;
	uint8_t run[AUDIT_RUN_HEX / 2];

	a->fd = -1;
	a->ckpt_fd = -1;
	a->count = count;
	a->count_arg = count_arg;
	a->tail = &a->head;
	a->next_seq = 1;
	atomic_init(&a->written, 0);
	atomic_init(&a->healthy, 1);
	atomic_init(&a->errors, 0);
	atomic_init(&a->combined, 0);
	pthread_mutex_init(&a->fmu, NULL);
	pthread_mutex_init(&a->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (opts->file == NULL)
		return a;
	a->path = xstrdup(opts->file);
	a->key_path = opts->key_file != NULL ? xstrdup(opts->key_file) : NULL;
	a->ckpt_path = opts->checkpoint_file != NULL ? xstrdup(opts->checkpoint_file) : NULL;
	a->config_path = config_path != NULL ? xstrdup(config_path) : NULL;
	a->fsync_ms = opts->fsync_ms;
	a->ckpt_ms = opts->checkpoint_ms;
	a->rotate_size = opts->rotate_size;
	a->rotate_ms = opts->rotate_ms;
	a->queue_max = opts->queue > 0 ? opts->queue : 65536;
	if (RAND_bytes(run, sizeof(run)) != 1) {
		*err = "audit: no random bytes for the run id";
		goto fail;
	}
	hex_encode(a->run, run, sizeof(run));
	if (audit_file_open(a, open_err, sizeof(open_err)) != 0) {
		*err = open_err;
		goto fail;
	}
	a->next_seq = a->chain.seq;
	atomic_store(&a->written, a->chain.seq - 1);
	a->synced_seq = a->chain.seq - 1;
	if (a->ckpt_path != NULL &&
	    (a->ckpt_fd = open(a->ckpt_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640)) == -1) {
		snprintf(open_err, sizeof(open_err), "audit.checkpoint_file %s: %s", a->ckpt_path, strerror(errno));
		*err = open_err;
		goto fail;
	}
	if (opts->syslog && (a->exp = audit_export_open(opts->syslog_address != NULL ?
	                                                     opts->syslog_address : "local",
	                                                     opts->syslog_enterprise, open_err,
	                                                     sizeof(open_err))) == NULL) {
		*err = open_err;
		goto fail;
	}
	if (opts->ocsf_file != NULL && (a->ocsf = audit_ocsf_open(opts->ocsf_file, open_err, sizeof(open_err))) == NULL) {
		*err = open_err;
		goto fail;
	}
	return a;
fail:
	audit_close(a);
	return NULL;
}

int
audit_start(struct audit *a, const char **err)
{
	char buf[1024], now[40];
	struct jbuf jb;
	long n;

	if (a == NULL || a->path == NULL || a->started)
		return 0;
	audit_time_now(now, sizeof(now));
	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, AUDIT_FIELD_TIME, now);
	jb_str(&jb, AUDIT_FIELD_TYPE, audit_kind_name(AUDIT_KIND_START));
	jb_str(&jb, "sandbox", "-");
	jb_str(&jb, "run", a->run);
	jb_str(&jb, "version", SLUICE_VERSION);
	jb_int(&jb, "pid", (int64_t)getpid());
	if (a->config_path != NULL)
		jb_strn(&jb, "config", a->config_path, strnlen(a->config_path, 1024));
	if (a->recovered > 0)
		jb_int(&jb, "recovered_bytes", (int64_t)a->recovered);
	n = jb_finish(&jb, 0);
	if (n < 2 || audit_enqueue(a, buf + 1, (size_t)n - 2, 0, 1) == 0) {
		*err = "audit: cannot queue the start record";
		return -1;
	}
	a->sinks = audit_sinks_start(a->exp, a->ocsf);  /* before the writer: it pushes from its first batch */
	if (pthread_create(&a->thread, NULL, audit_writer_main, a) != 0) {
		*err = "audit: cannot start the writer thread";
		return -1;
	}
	a->started = 1;
	return 0;
}

void
audit_rotate(struct audit *a)
{
	if (a == NULL || a->path == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->rotate_req = 1;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

void
audit_stop(struct audit *a, const char *reason)
{
	if (a == NULL || !a->started)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	a->stop_reason = reason != NULL ? reason : "exit";
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	a->started = 0;
	audit_sinks_stop(a->sinks);  /* after the stop record: its copies go too */
	a->sinks = NULL;
}

void
audit_close(struct audit *a)
{
	struct audit_item *it;

	if (a == NULL)
		return;
	audit_stop(a, "exit");
	while ((it = a->head) != NULL) {
		a->head = it->next;
		audit_item_free(it);
	}
	if (a->fd != -1)
		close(a->fd);
	if (a->ckpt_fd != -1)
		close(a->ckpt_fd);
	audit_sinks_stop(a->sinks);  /* started but the writer was not (audit_start failed) */
	audit_export_close(a->exp);
	audit_ocsf_close(a->ocsf);
	audit_chain_wipe(&a->chain);
	free(a->wbuf);
	free(a->path);
	free(a->key_path);
	free(a->ckpt_path);
	free(a->config_path);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->fmu);
	free(a);
}
