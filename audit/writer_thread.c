/*
 * audit/writer_thread.c - the audit writer thread: the queue, the chain, the
 * file, fsync, checkpoints, rotation, and failing closed.
 *
 * Each round the writer takes what the workers queued (up to
 * AUDIT_BATCH_BYTES), wraps each record in seq order (seq, prev, mac),
 * appends them with one write(2), and only then publishes how far the file
 * is written: parked requests go upstream after that (writer.c).  With
 * `fsync: record` it also fsyncs before publishing; otherwise every
 * audit.fsync.  After each fsync the key file is rewritten with the key of
 * the next record (the keys of records already written are gone).
 *
 * "The writer" is whoever holds a->fmu.  A worker at the end of its loop
 * round takes it (audit_combine, a trylock) and writes the queue itself:
 * the records its requests wait for go into the file on the worker's own
 * thread, with no wake-up of this thread and none back (issue 20: that hop
 * was two context switches, a futex and an eventfd round a request).  The
 * chain stays one: the queue hands out seqs in order and only the holder of
 * fmu takes from it and appends.  This thread still does everything that
 * waits (fsync, rotation, checkpoints, retrying a failing log, records
 * nobody waits for, the stop record), and all of it with `fsync: record`;
 * when it holds fmu a worker does not wait: it signals this thread, as it
 * did before.
 *
 * Failing closed.  A failed write(2) or fsync(2) (ENOSPC, EIO), or a queue
 * at audit.queue, makes audit_healthy() 0: the gateway refuses new requests
 * with 503 until the writer can write again.  The lines of a failed write
 * stay in the writer's buffer and are retried every AUDIT_RETRY_MS; their
 * requests stay parked, so nothing the gateway let through is missing from
 * the log.  stderr says when this starts and when it ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "writer_int.h"

void
audit_signal_writer(struct audit *a)
{
	pthread_mutex_lock(&a->mu);
	if (a->writer_waiting && !a->signalled && a->head != NULL) {
		a->signalled = 1;
		pthread_cond_signal(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
}

void
audit_item_free(struct audit_item *it)
{
	size_t i;

	for (i = 0; i < it->nargs; i++)
		json_decref(it->args[i]);
	free(it->args);
	free(it);
}

uint64_t
audit_enqueue(struct audit *a, const char *body, size_t len, int bounded, int signal)
{
	return audit_enqueue_args(a, body, len, bounded, signal, NULL, 0);
}

uint64_t
audit_enqueue_args(struct audit *a, const char *body, size_t len, int bounded, int signal, const json_t *const *args,
                   size_t nargs)
{
	struct audit_item *it = try_malloc(sizeof(*it) + len);
	uint64_t seq = 0;
	size_t i;

	if (it == NULL) {
		atomic_fetch_add(&a->errors, 1);
		return 0;
	}
	it->next = NULL;
	it->len = len;
	it->args = NULL;
	it->nargs = 0;
	it->placeholders = nargs > 0;
	memcpy(it->body, body, len);
	if (nargs > 0 && nargs <= AUDIT_ARGS_PER_REC && (it->args = try_malloc(nargs * sizeof(*it->args))) != NULL) {
		/* an entry that cannot be copied leaves the copies before it: the rest of the members are removed */
		for (i = 0; i < nargs; i++) {
			if (args[i] == NULL)
				it->args[i] = NULL;
			else if ((it->args[i] = json_deep_copy(args[i])) == NULL)
				break;
			it->nargs = i + 1;
		}
	}
	pthread_mutex_lock(&a->mu);
	if (a->closed || (bounded && a->depth >= a->queue_max)) {
		if (!a->closed) {
			a->full = 1;
			atomic_store(&a->healthy, 0);
			if (a->writer_waiting && !a->signalled) {
				a->signalled = 1;   /* let it say so on stderr */
				pthread_cond_signal(&a->cv);
			}
		}
		pthread_mutex_unlock(&a->mu);
		audit_item_free(it);
		atomic_fetch_add(&a->errors, 1);
		return 0;
	}
	seq = a->next_seq++;
	it->seq = seq;
	*a->tail = it;
	a->tail = &it->next;
	a->depth++;
	if (signal && a->writer_waiting && !a->signalled) {
		a->signalled = 1;
		pthread_cond_signal(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
	return seq;
}

static void
say_health(struct audit *a)
{
	int full, healthy;
	size_t depth;

	pthread_mutex_lock(&a->mu);
	if (a->full && a->depth <= a->queue_max / 2)
		a->full = 0;
	full = a->full;
	depth = a->depth;
	healthy = !a->failing && !full;
	atomic_store(&a->healthy, healthy);
	pthread_mutex_unlock(&a->mu);
	if (healthy == !a->said_unhealthy)
		return;
	a->said_unhealthy = !healthy;
	if (healthy)
		log_warnx("audit: %s is written again (%zu records pending): accepting new requests", a->path, depth);
	else if (a->failing)
		log_warnx("audit: cannot %s %s: %s: refusing new requests (503) until the log can be written; "
		          "%zu records pending, retried every %d ms", a->fail_what, a->path, strerror(a->fail_errno), depth,
		          AUDIT_RETRY_MS);
	else
		log_warnx("audit: %zu records wait for %s (audit.queue %zu): refusing new requests (503)", depth, a->path,
		          a->queue_max);
}

static void
fail(struct audit *a, const char *what, int err)
{
	atomic_fetch_add(&a->errors, 1);
	a->failing = 1;
	a->fail_what = what;
	a->fail_errno = err;
	a->retry_ms = clock_mono_ms() + AUDIT_RETRY_MS;
	atomic_store(&a->healthy, 0);
	say_health(a);
}

static void
wbuf_reserve(struct audit *a, size_t n)
{
	if (a->wlen + n <= a->wcap)
		return;
	a->wcap = a->wcap * 2 > a->wlen + n ? a->wcap * 2 : a->wlen + n + AUDIT_LINE_MAX;
	a->wbuf = xrealloc(a->wbuf, a->wcap);
}

/*
 * The args_hmac members of item <it> (AUDIT_ARGS_HMAC_PH, in order): each
 * filled with the fingerprint of its arguments under the record's key K_seq
 * (the chain's current key: <it> is the next record), or removed when there
 * is no key, no copy of its arguments, or the fingerprint fails.
 */
static void
args_fill(struct audit *a, struct audit_item *it)
{
	static const char ph[] = AUDIT_ARGS_HMAC_PH;
	char hex[AUDIT_HASH_HEX + 1];
	size_t off = 0, i = 0, at;
	char *p;

	while (off < it->len && (p = memmem(it->body + off, it->len - off, ph, sizeof(ph) - 1)) != NULL) {
		at = (size_t)(p - it->body);
		hex[0] = '\0';
		if (a->chain.keyed && i < it->nargs && audit_args_hmac(a->chain.key, it->args[i], hex) == 0 &&
		    strlen(hex) == AUDIT_HASH_HEX) {
			memcpy(p + AUDIT_ARGS_HMAC_AT, hex, AUDIT_HASH_HEX);
			off = at + sizeof(ph) - 1;
		} else {
			memmove(p, p + sizeof(ph) - 1, it->len - at - (sizeof(ph) - 1));
			it->len -= sizeof(ph) - 1;
			off = at;
		}
		i++;
	}
}

/* Wraps members <body>/<len> as record <seq> at the end of the write buffer. */
static void
append(struct audit *a, uint64_t seq, const char *body, size_t len)
{
	long n;

	if (seq != a->chain.seq)  /* the queue hands out seqs in order: this cannot happen */
		fatalx("audit: record %" PRIu64 " where %" PRIu64 " was due", seq, a->chain.seq);
	wbuf_reserve(a, len + AUDIT_WRAP_EXTRA);
	n = audit_chain_wrap(&a->chain, body, len, a->wbuf + a->wlen, a->wcap - a->wlen);
	if (n < 0)
		fatalx("audit: cannot wrap record %" PRIu64, seq);
	a->wlen += (size_t)n;
	a->wcount++;
	a->wlast = seq;
}

/* A record the writer makes itself (checkpoint, stop): members from <jb> after time, type, sandbox. */
static void
own_record(struct audit *a, uint64_t seq, enum audit_kind kind, uint64_t head_seq, const char *head_hash,
           const char *reason)
{
	char buf[1024], now[40];
	struct jbuf jb;
	long n;

	audit_time_now(now, sizeof(now));
	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, AUDIT_FIELD_TIME, now);
	jb_str(&jb, AUDIT_FIELD_TYPE, audit_kind_name(kind));
	jb_str(&jb, "sandbox", "-");
	if (kind == AUDIT_KIND_CHECKPOINT) {
		jb_int(&jb, "head_seq", (int64_t)head_seq);
		jb_str(&jb, "head_hash", head_hash);
	} else {
		jb_str(&jb, "reason", reason);
		/* this run's records, the stop record included */
		jb_int(&jb, "records", (int64_t)(a->records + a->wcount + 1));
	}
	n = jb_finish(&jb, 0);
	if (n < 2)
		fatalx("audit: cannot format a %s record", audit_kind_name(kind));
	append(a, seq, buf + 1, (size_t)n - 2);
}

/* Writes the buffer; when all of it is in the file (and fsynced with `fsync: record`), publishes it. */
static void
flush(struct audit *a)
{
	ssize_t n;

	if (a->wlen == 0)
		return;
	while (a->woff < a->wlen) {
		n = write(a->fd, a->wbuf + a->woff, a->wlen - a->woff);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fail(a, "write", errno);
			return;
		}
		if (!a->dirty) {
			a->dirty = 1;
			a->next_fsync_ms = clock_mono_ms() + a->fsync_ms;
		}
		a->woff += (size_t)n;
		a->file_size += (uint64_t)n;
	}
	if (a->fsync_ms == 0) {
		if (fdatasync(a->fd) == -1) {
			fail(a, "fsync", errno);
			return;
		}
		a->dirty = 0;
		a->synced_seq = a->wlast;
	}
	a->failing = 0;
	/* in the file: the requests waiting for these records may go upstream */
	atomic_store(&a->written, a->wlast);
	audit_wake_workers(a, a->wlast);
	pthread_mutex_lock(&a->mu);
	a->depth -= a->wcount;
	pthread_mutex_unlock(&a->mu);
	a->records += a->wcount;
	audit_sinks_push(a->sinks, a->wbuf, a->wlen);  /* the syslog and OCSF copies, on their own thread */
	a->wlen = a->woff = a->wcount = 0;
	if (a->fsync_ms == 0)
		audit_key_save(a);
}

static void
sync_if_due(struct audit *a, uint64_t now, int force)
{
	if (a->failing || !a->dirty || a->wlen != 0 || (!force && now < a->next_fsync_ms))
		return;
	if (fdatasync(a->fd) == -1) {
		fail(a, "fsync", errno);
		return;
	}
	a->dirty = 0;
	a->synced_seq = atomic_load(&a->written);
	audit_key_save(a);  /* every record before a->chain.seq is in the file: only its key remains */
}

/* Once the checkpoint record is fsynced: its seq and hash to syslog and the checkpoint file. */
static void
announce_checkpoint(struct audit *a)
{
	char line[4096 + 160];
	int n;

	if (a->ckpt_out_seq == 0 || a->synced_seq < a->ckpt_out_seq)
		return;
	n = snprintf(line, sizeof(line), "sluice-audit checkpoint file=%s seq=%" PRIu64 " hash=%s", a->path,
	             a->ckpt_out_seq, a->ckpt_out_hash);
	a->ckpt_out_seq = 0;
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		return;
	if (!a->ident_open) {
		openlog("sluice", LOG_PID, LOG_AUTHPRIV);
		a->ident_open = 1;
	}
	syslog(LOG_AUTHPRIV | LOG_INFO, "%s", line);
	if (a->ckpt_fd != -1) {
		line[n++] = '\n';
		if (write(a->ckpt_fd, line, (size_t)n) != n || fdatasync(a->ckpt_fd) == -1)
			log_warn("audit: cannot append to audit.checkpoint_file %s", a->ckpt_path);
	}
}

static void
rotate_if_due(struct audit *a, uint64_t now, int asked)
{
	int due;

	if (a->failing || a->wlen != 0)
		return;
	due = asked || (now >= a->rotate_hold_ms &&
	                ((a->rotate_size > 0 && a->file_size >= a->rotate_size) ||
	                 (a->rotate_ms > 0 && now >= a->file_opened_ms + a->rotate_ms)));
	if (!due)
		return;
	if (!asked && a->file_size == 0) {  /* an empty file is not worth a rotated copy */
		a->file_opened_ms = now;
		return;
	}
	if (audit_file_rotate(a) != 0) {
		atomic_fetch_add(&a->errors, 1);
		a->rotate_hold_ms = now + AUDIT_ROTATE_HOLD_MS;
		return;
	}
	a->dirty = 0;
	audit_sinks_reopen(a->sinks);
}

static uint64_t
deadline(const struct audit *a, uint64_t stop_by)
{
	uint64_t d = clock_mono_ms() + AUDIT_LAZY_MS, t;  /* records nobody woke us for wait this long at most */

	if (a->failing && a->retry_ms < d)
		d = a->retry_ms;
	if (a->dirty && a->fsync_ms > 0 && a->next_fsync_ms < d)
		d = a->next_fsync_ms;
	if (a->ckpt_ms > 0 && a->next_ckpt_ms < d)
		d = a->next_ckpt_ms;
	if (a->rotate_ms > 0) {
		t = a->file_opened_ms + a->rotate_ms;
		if (t < a->rotate_hold_ms)
			t = a->rotate_hold_ms;
		if (t < d)
			d = t;
	}
	if (stop_by != 0 && stop_by < d)
		d = stop_by;
	return d;
}

static void
wait_until(struct audit *a, uint64_t ms)
{
	struct timespec ts;

	if (ms == UINT64_MAX) {
		pthread_cond_wait(&a->cv, &a->mu);
		return;
	}
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	pthread_cond_timedwait(&a->cv, &a->mu, &ts);
}

/* Wraps the records of <batch> (taken from the queue, in seq order) into the write buffer, and frees them. */
static void
append_batch(struct audit *a, struct audit_item *batch)
{
	struct audit_item *it, *next;

	for (it = batch; it != NULL; it = next) {
		next = it->next;
		if (it->placeholders)
			args_fill(a, it);
		append(a, it->seq, it->body, it->len);
		audit_item_free(it);
		if (a->wlen >= AUDIT_BATCH_BYTES && !a->failing)
			flush(a);  /* one write(2) per AUDIT_BATCH_BYTES at most; a failure keeps the rest */
	}
}

/* Takes every queued record (under a->mu): O(1), the lock is held no longer than a swap. */
static struct audit_item *
take(struct audit *a)
{
	struct audit_item *batch = a->head;

	a->head = NULL;
	a->tail = &a->head;
	return batch;
}

void *
audit_writer_main(void *arg)
{
	struct audit *a = arg;
	struct audit_item *batch;
	uint64_t now, ck_seq, stop_seq, stop_by = 0, dl;
	int rot, failing;

	pthread_mutex_lock(&a->fmu);
	now = clock_mono_ms();
	a->next_fsync_ms = now + a->fsync_ms;
	a->next_ckpt_ms = now + a->ckpt_ms;
	a->writer_live = 1;
	pthread_mutex_unlock(&a->fmu);
	for (;;) {
		/* fmu for the round (a worker may hold it: then this waits for its one write) */
		pthread_mutex_lock(&a->fmu);
		pthread_mutex_lock(&a->mu);
		dl = deadline(a, stop_by);
		failing = a->failing;
		if (!a->rotate_req && (failing || (a->head == NULL && !(a->stop && !a->closed))) && clock_mono_ms() < dl) {
			/* workers may write while this thread sleeps: fmu is theirs until it wakes (order: fmu, mu) */
			pthread_mutex_unlock(&a->fmu);
			while (!a->rotate_req && (failing || (a->head == NULL && !(a->stop && !a->closed))) &&
			       clock_mono_ms() < dl) {
				a->writer_waiting = 1;
				wait_until(a, dl);
				a->writer_waiting = 0;
				a->signalled = 0;
			}
			pthread_mutex_unlock(&a->mu);
			pthread_mutex_lock(&a->fmu);
			pthread_mutex_lock(&a->mu);
		}
		now = clock_mono_ms();
		batch = NULL;
		ck_seq = stop_seq = 0;
		if (!a->failing) {
			batch = take(a);
			if (a->ckpt_ms > 0 && now >= a->next_ckpt_ms) {
				a->next_ckpt_ms = now + a->ckpt_ms;
				if (a->next_seq - 1 != a->ckpt_head) {  /* something was written since the last one */
					ck_seq = a->next_seq++;
					a->depth++;
				}
			}
			if (a->stop && !a->closed) {
				stop_seq = a->next_seq++;
				a->depth++;
				a->closed = 1;
			}
		}
		rot = a->rotate_req;
		a->rotate_req = 0;
		pthread_mutex_unlock(&a->mu);

		append_batch(a, batch);
		if (ck_seq != 0) {
			own_record(a, ck_seq, AUDIT_KIND_CHECKPOINT, ck_seq - 1, a->chain.prev, NULL);
			a->ckpt_head = ck_seq;
			a->ckpt_out_seq = ck_seq;
			memcpy(a->ckpt_out_hash, a->chain.prev, sizeof(a->ckpt_out_hash));
		}
		if (stop_seq != 0)
			own_record(a, stop_seq, AUDIT_KIND_STOP, 0, NULL, a->stop_reason);
		if (a->failing && now >= a->retry_ms)
			a->failing = 0;  /* try again */
		if (!a->failing)
			flush(a);
		sync_if_due(a, now, ck_seq != 0 || a->closed);
		announce_checkpoint(a);
		rotate_if_due(a, now, rot);
		say_health(a);
		if (a->closed && a->wlen == 0 && !a->failing && !a->dirty)
			break;
		if (a->stop && stop_by == 0)
			stop_by = now + AUDIT_STOP_GIVEUP_MS;
		if (a->stop && a->failing && now >= stop_by) {
			log_warnx("audit: stopping with %zu records that could not be written to %s", a->depth, a->path);
			break;
		}
		pthread_mutex_unlock(&a->fmu);  /* between rounds, a worker may write */
	}
	a->writer_done = 1;
	pthread_mutex_unlock(&a->fmu);
	if (a->ident_open)
		closelog();
	return NULL;
}

int
audit_combine(struct audit *a)
{
	struct audit_item *batch;
	int rc;

	if (a->fsync_ms == 0 || pthread_mutex_trylock(&a->fmu) != 0)
		return -1;
	if (!a->writer_live || a->writer_done || a->failing) {
		pthread_mutex_unlock(&a->fmu);
		return -1;
	}
	pthread_mutex_lock(&a->mu);
	batch = take(a);
	pthread_mutex_unlock(&a->mu);
	append_batch(a, batch);
	if (!a->failing)
		flush(a);   /* publishes, wakes the workers whose requests wait (this one's too, on its own base) */
	if (batch != NULL)
		atomic_fetch_add(&a->combined, 1);
	rc = a->failing ? -1 : 0;
	pthread_mutex_unlock(&a->fmu);
	return rc;
}
