/*
 * audit/writer_int.h - private to the writer (audit/writer.c, writer_thread.c,
 * chain.c, file.c, export.c, sd.c, ocsf.c): its state, the chain arithmetic and the pieces
 * the unit tests reach.  The record format itself is audit/format.h.
 *
 * Who does what (docs/audit-schema.md fixes the bytes):
 *   workers (writer.c)        format a record's members ("time", "type",
 *                             "sandbox", fields) and queue them with a seq;
 *   the writer (writer_thread.c) wraps each in seq order as
 *                             {"seq":N,<members>,"prev":"<hex>"[,"mac":"<hex>"]},
 *                             appends with one write(2) per batch, then
 *                             publishes how far the file is written so parked
 *                             requests go on (audit_park).  Whoever holds
 *                             <fmu> is the writer: the writer thread (fsync,
 *                             rotation, checkpoints, retries, lazy records),
 *                             or a worker at the end of its loop round
 *                             (audit_combine: the records its requests wait
 *                             for, and whatever else is queued, without a
 *                             thread hop; not with `fsync: record`);
 *   chain.c                   the pure functions: wrapping, hashes, the
 *                             forward-secure key, the key file's text;
 *   file.c                    opening, crash recovery, rotation, the key file;
 *   export.c                  the copy of each line to syslog (RFC 5424);
 *   sd.c                      ... its STRUCTURED-DATA: the record's members;
 *   ocsf.c                    request, dns and denial records as OCSF events.
 *   sinks.c                   the thread that makes those copies: the writer
 *                             hands it each batch once it is in the file.
 */
#ifndef SLUICE_AUDIT_WRITER_INT_H
#define SLUICE_AUDIT_WRITER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit/audit.h"     /* the key file's text: audit_key_parse, audit_key_load, audit_key_format */
#include "audit/format.h"    /* AUDIT_HASH_HEX, AUDIT_KEY_BYTES, the hashes, the mac and the key evolution */
#include "audit/writer.h"

#define AUDIT_BODY_MAX 8192                     /* a record's members; a longer path is cut to fit */
#define AUDIT_PATH_CUT 2048                     /* ... to this many bytes */
#define AUDIT_WRAP_EXTRA 192                    /* {"seq":N, ,"prev":"<64>" ,"mac":"<64>" } and "\n" */
#define AUDIT_LINE_MAX (AUDIT_BODY_MAX + AUDIT_WRAP_EXTRA)
#define AUDIT_TAIL_MAX (2 * AUDIT_LINE_MAX)     /* bytes read back from a file's end to find its last line */
#define AUDIT_RETRY_MS 250                      /* a failed write or fsync is retried this often */
#define AUDIT_STOP_GIVEUP_MS 5000               /* at stop, a failing log is retried this long */
#define AUDIT_EXPORT_BUF_MAX (1024 * 1024)      /* bytes queued toward a TCP syslog collector */
#define AUDIT_EXPORT_QUEUE_MAX 8192             /* ... and messages */
#define AUDIT_RUN_HEX 16                        /* the start record's run id */
#define AUDIT_BATCH_BYTES (1024 * 1024)         /* bytes of lines per write(2): a larger batch goes in parts */
#define AUDIT_ROTATE_HOLD_MS 60000              /* after a failed rotation */
#define AUDIT_LAZY_MS 20                        /* a record nothing waits for is written within this */

/* ---- chain.c: pure functions ---- */

struct audit_chain {
	uint64_t seq;                         /* the seq the next record gets */
	char prev[AUDIT_HASH_HEX + 1];        /* hex SHA-256 of the previous line, or 64 '0' */
	int keyed;                            /* <key> is K_seq: records carry a mac */
	uint8_t key[AUDIT_KEY_BYTES];
};

/* Sets <ch> at <seq> after a line hashing to <prev_hex> (NULL: genesis), with K_seq <key> (NULL: no mac). */
void audit_chain_init(struct audit_chain *ch, uint64_t seq, const char *prev_hex, const uint8_t *key);
/* Wipes the key. */
void audit_chain_wipe(struct audit_chain *ch);
/*
 * Wraps members <body>/<blen> (a JSON object's inside, no braces) into the
 * record line for ch->seq, "\n" included, in <out>/<cap>; then advances:
 * seq + 1, prev = the line's hash, K evolved and the old one wiped.
 * Returns the line's length, or -1 when <cap> is too small (nothing changes).
 */
long audit_chain_wrap(struct audit_chain *ch, const char *body, size_t blen, char *out, size_t cap);
/* (The mac, the key evolution, the line hash and a line's seq are the record format's: audit/format.h.) */
/* (The key file's text is the reader's too: audit_key_parse, audit_key_load, audit_key_format.) */

/* ---- writer.c: record members ---- */

/*
 * The members of <r> for its type ("time" first, then "type", "sandbox",
 * the type's fields), as a JSON object "{...}" in <buf>/<cap>; <path_max>
 * bounds the path.  Returns the length, or -1 when it does not fit.
 */
long audit_rec_format(const struct audit_rec *r, char *buf, size_t cap, size_t path_max);

/* ---- the writer's state ---- */

struct audit_item {
	struct audit_item *next;
	uint64_t seq;
	size_t len;
	json_t **args;                    /* the arguments its args_hmac placeholders fingerprint (copies, owned) */
	size_t nargs;
	int placeholders;                 /* the body holds AUDIT_ARGS_HMAC_PH members (nargs of them, or fewer args) */
	char body[];                      /* the members, no braces */
};

struct audit_waker;
struct audit_export;
struct metrics;

struct audit {
	/* settings, fixed at open */
	char *path;                       /* NULL: no log (records only counted) */
	char *key_path;
	char *ckpt_path;
	char *config_path;
	unsigned fsync_ms;                /* 0: fsync after every write, before the records count as written */
	unsigned ckpt_ms;
	uint64_t rotate_size;             /* 0: never by size */
	unsigned rotate_ms;               /* 0: never by age */
	size_t queue_max;
	char run[AUDIT_RUN_HEX + 1];
	uint64_t recovered;               /* bytes of a partial last line cut off at open */
	audit_count_cb count;             /* audit_open: what counts each record, or NULL */
	void *count_arg;

	/*
	 * <fmu>: the writer's own state below ("the writer's"), held by whoever
	 * writes (the writer thread each round, a worker in audit_combine).
	 * Lock order: fmu, then mu, then a worker base's lock (event_active).
	 */
	pthread_mutex_t fmu;

	/* the queue: <mu> */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct audit_item *head, **tail;
	size_t depth;                     /* records queued or formatted, not yet written */
	uint64_t next_seq;                /* the seq the next queued record gets */
	int writer_waiting;
	int signalled;
	int stop;
	const char *stop_reason;          /* static text */
	int closed;                       /* the stop record is formatted: nothing more is queued */
	int rotate_req;
	int full;                         /* depth reached queue_max: refusing until it halves */
	struct audit_waker *wakers;       /* worker threads that may park requests */

	/* published */
	_Atomic uint64_t written;         /* every record up to this seq is in the file */
	atomic_int healthy;
	_Atomic uint64_t errors;          /* failed write/fsync calls, and records dropped (queue full) */

	/* the writer thread's */
	pthread_t thread;
	int started;

	/* the writer's: <fmu> */
	int writer_live;                  /* the writer thread has begun (workers write only once it has) */
	int writer_done;                  /* the writer thread has ended: nothing more is written */
	_Atomic uint64_t combined;        /* batches workers wrote themselves (audit_combine; tests, metrics) */
	int fd;
	int ckpt_fd;
	dev_t dev;
	ino_t ino;
	uint64_t file_size;
	uint64_t file_opened_ms;          /* CLOCK_MONOTONIC of the current file's opening */
	struct audit_chain chain;
	char *wbuf;                       /* formatted lines not yet written: [woff, wlen) */
	size_t wlen, woff, wcap;
	size_t wcount;                    /* records in wbuf */
	uint64_t wlast;                   /* seq of the last record in wbuf */
	int failing;                      /* the last write or fsync failed */
	int fsync_failed;
	int said_unhealthy;               /* what stderr was last told */
	int dirty;                        /* written, not fsynced */
	uint64_t synced_seq;              /* fsynced up to */
	uint64_t next_fsync_ms;
	uint64_t next_ckpt_ms;
	uint64_t retry_ms;
	uint64_t rotate_hold_ms;          /* a failed rotation is not retried before this */
	int fail_errno;
	const char *fail_what;
	uint64_t ckpt_head;               /* seq of the last checkpoint record */
	uint64_t ckpt_out_seq;            /* a checkpoint written, to announce once fsynced (0: none) */
	char ckpt_out_hash[AUDIT_HASH_HEX + 1];
	uint64_t records;                 /* written this run */
	struct audit_export *exp;
	struct audit_ocsf *ocsf;
	struct audit_sinks *sinks;        /* the thread that makes their copies (audit_start) */
	int ident_open;
	int key_failing;                  /* the last key file rewrite failed (said once) */
};

/* Now as RFC 3339 UTC with milliseconds ("2026-12-01T04:07:07.123Z") into <out>/<cap> (24 bytes and more). */
void audit_time_now(char *out, size_t cap);
/* The writer wrote every record up to <done>: make active the event of each worker with a request parked on one. */
void audit_wake_workers(struct audit *a, uint64_t done);

/* file.c */
/* Opens a->path, cuts a partial last line, sets a->chain from the last record; key file read and evolved. */
int audit_file_open(struct audit *a, char *err, size_t cap);
/* Rotates: renames the file (unless it was moved away already) and opens a fresh one; the chain goes on. */
int audit_file_rotate(struct audit *a);
/* Rewrites the key file with (chain.seq, K) atomically.  0 or -1. */
int audit_key_save(struct audit *a);

/* writer_thread.c */
void *audit_writer_main(void *arg);
/*
 * Queues <body>/<len> under a->mu; <bounded>: refused past queue_max;
 * <signal>: wake the writer now (else the caller does, audit_signal_writer).
 * The seq, or 0.
 */
uint64_t audit_enqueue(struct audit *a, const char *body, size_t len, int bounded, int signal);
/*
 * audit_enqueue of a record with <n> args_hmac placeholders (AUDIT_ARGS_HMAC_PH):
 * <args> (borrowed; entries may be NULL) are deep-copied for the writer, which
 * fingerprints them with the record's key (audit_args_hmac) or removes the
 * members (no key file, a copy or fingerprint that failed).
 */
uint64_t audit_enqueue_args(struct audit *a, const char *body, size_t len, int bounded, int signal,
                            const json_t *const *args, size_t n);
/* Frees a queued item and the copies it owns. */
void audit_item_free(struct audit_item *it);
/* Wakes the writer if it waits and something is queued. */
void audit_signal_writer(struct audit *a);
/*
 * A worker writes what is queued itself (its loop round's records and any
 * other), as the writer thread would: 0 when the queue was written (or was
 * empty), -1 when it cannot now (the writer thread holds <fmu>, the log is
 * failing or stopped, `fsync: record`): then signal the writer.  Never
 * blocks on the writer's fsync or rotation (a trylock).
 */
int audit_combine(struct audit *a);

/*
 * export.c: "local" (/dev/log), "unix:/path", "udp://host:port", "tcp://host:port"; <enterprise> the
 * SD-ID's number (NULL: AUDIT_SD_PEN_DEFAULT).  audit_export_rec sends line <line>/<len>, parsed as <rec>
 * (rec->obj NULL when it did not parse: the SD then has the hash only), or counts it dropped.
 */
struct audit_export *audit_export_open(const char *address, const char *enterprise, char *err, size_t cap);
void audit_export_rec(struct audit_export *e, const struct audit_record *rec, const char *line, size_t len);
uint64_t audit_export_dropped(const struct audit_export *e);  /* any thread */
void audit_export_count_dropped(struct audit_export *e, uint64_t n);  /* any thread; NULL is fine */
/* TCP: sends what is queued if the connection can take it now (the writer calls it when it wakes). */
void audit_export_poll(struct audit_export *e);
void audit_export_close(struct audit_export *e);

/* sd.c: RFC 5424 STRUCTURED-DATA */
#define AUDIT_SD_NAME "sluice"                  /* SD-ID "sluice@<enterprise>" */
#define AUDIT_SD_PEN_DEFAULT "32473"            /* RFC 5612's example enterprise number */
#define AUDIT_SD_NAME_MAX 32                    /* SD-NAME and PARAM-NAME: 1*32 */
#define AUDIT_SD_MAX (8 * AUDIT_LINE_MAX)       /* the SD element of one line: values escaped (x2), a nested
                                                 * name "parent.k" (<= 32) per member of >= 6 bytes (< x6.2) */
/* 0 when <s>/<n> is a valid SD-NAME (1..32 PRINTUSASCII but '=', ' ', ']', '"'), else -1. */
int audit_sd_name_ok(const char *s, size_t n);
/* (audit_sd_enterprise_ok, which the loader calls too, is in audit/writer.h.) */
/* The SD element "[<sd_id> hash=... <members>]" of <line>/<len> parsed as <rec> into <out>/<cap>: its length, or -1. */
long audit_sd_format(const char *sd_id, const struct audit_record *rec, const char *line, size_t len, char *out,
                     size_t cap);

/* ocsf.c: audit.ocsf, one OCSF 1.3.0 event a line (request, dns, denial records) */
struct audit_ocsf;
/* Opens (O_APPEND, creating) <path>; NULL with <err>. */
struct audit_ocsf *audit_ocsf_open(const char *path, char *err, size_t cap);
/* The event of <rec> (a new reference), or NULL for a kind with no OCSF class.  An allowed request's HTTP
 * Activity has no http_response yet (its record has no status): audit_ocsf_answer completes it. */
json_t *audit_ocsf_event(const struct audit_record *rec);
/* Completes the HTTP Activity <ev> (borrowed, changed) with the status of response record <resp>; when <resp> is
 * NULL or has no status, turns it into a Network Activity, activity Other ("No Response"), URL kept. */
void audit_ocsf_answer(json_t *ev, const struct audit_record *resp);
/* Appends <rec>'s event (if it has one), an allowed request's once its response record comes (at most
 * OCSF_PENDING_MAX wait); a failed write is counted. The copies' thread (sinks.c). */
void audit_ocsf_rec(struct audit_ocsf *o, const struct audit_record *rec);
/* Reopens the file by name (after the audit file rotated). */
void audit_ocsf_reopen(struct audit_ocsf *o);
uint64_t audit_ocsf_dropped(const struct audit_ocsf *o);  /* any thread */
void audit_ocsf_count_dropped(struct audit_ocsf *o, uint64_t n);  /* any thread; NULL is fine */

/*
 * sinks.c: the thread of the copies.  Started (audit_start) when either sink is on, with both borrowed
 * (NULL: none); the writer pushes each written batch of complete lines (dropped and counted when the
 * copies are AUDIT_SINKS_BUF_MAX behind), asks for the OCSF file's reopening after a rotation, and stops
 * it after its own stop record (what is queued is copied first).
 */
struct audit_sinks;
struct audit_sinks *audit_sinks_start(struct audit_export *exp, struct audit_ocsf *ocsf);
void audit_sinks_push(struct audit_sinks *s, const char *lines, size_t len);
void audit_sinks_reopen(struct audit_sinks *s);
void audit_sinks_stop(struct audit_sinks *s);
/* Writes the events still waiting for a response record (unanswered), closes and frees <o> (NULL is fine). */
void audit_ocsf_close(struct audit_ocsf *o);

#endif
