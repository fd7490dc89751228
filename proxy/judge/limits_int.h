/*
 * proxy/judge/limits_int.h - private types of the counters (limits.c) and their
 * state file (limits_state.c).
 */
#ifndef SLUICE_PROXY_LIMITS_INT_H
#define SLUICE_PROXY_LIMITS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "proxy/judge/limits.h"

#define LIMITS_SHARDS 64              /* mutexes; a counter's shard is its hash's low bits */
#define LIMITS_BUCKETS 256            /* hash chains per shard */
#define LIMITS_PERIOD_UNKNOWN_S 86400 /* a counter read from the file and not used since: the longest period */
#define LIMITS_GLOBAL "*"             /* the sandbox of a global counter */
#define LIMITS_NOBODY "?"             /* the sandbox of a per-sandbox counter for a client without a name */

struct limits_ctr {
	struct limits_ctr *next;      /* the shard's chain */
	uint32_t hash;
	enum limits_kind kind;
	uint32_t period_s;            /* 0: unknown (read from the file, not used since start) */
	uint32_t count;               /* rate: bucket size (0: unknown) */
	uint32_t frac;                /* rate: credit under a thousandth, in 1/period_s of one */
	int64_t val;                  /* rate: tokens in thousandths; budget: the window's sum in millionths */
	uint64_t ms;                  /* rate: the time the tokens were computed for; budget: the window's start */
	char *sandbox;                /* points into key's allocation */
	char key[];
};

struct limits_shard {
	pthread_mutex_t mu;
	struct limits_ctr *b[LIMITS_BUCKETS];
};

struct limits {
	char *path;                   /* the state file, NULL: in memory only */
	char *tmp;                    /* <path>.tmp */
	char *dir;                    /* its directory, fsynced after the rename */
	atomic_size_t n;              /* counters held */
	atomic_uint_fast64_t changes; /* bumped by every change */
	uint64_t saved;               /* <changes> as of the last good write (persist's thread only) */
	atomic_int unsaveable;
	int failing;                  /* the last write failed (persist's thread only) */
	uint64_t fail_since_ms;
	struct limits_shard shards[LIMITS_SHARDS];
};

/* limits.c */
uint32_t limits_hash(enum limits_kind kind, const char *key, const char *sandbox);
/* The counter, or NULL; the caller holds its shard's lock. */
struct limits_ctr *limits_find(struct limits *l, uint32_t h, enum limits_kind kind, const char *key,
                               const char *sandbox);
/* A new counter in its shard (the caller holds the lock, and has reserved one in l->n). */
struct limits_ctr *limits_insert(struct limits *l, uint32_t h, enum limits_kind kind, const char *key,
                                 const char *sandbox);
/* 1 when <c> is back to its initial state at <now_ms> (a full bucket, an ended window): it can be dropped. */
int limits_expired(const struct limits_ctr *c, uint64_t now_ms);
struct limits *limits_alloc(void);
void limits_free(struct limits *l);

/* limits_state.c */
/* Adds the counters of state text <buf>/<len> to <l> (empty, not shared yet): 0, or -1 with "name:line: why". */
int limits_state_parse(struct limits *l, const char *name, const char *buf, size_t len, char *err, size_t errcap);
/* Reads <l->path> (absent: nothing) into <l>: 0, or -1 with the reason in <err>. */
int limits_state_load(struct limits *l, char *err, size_t errcap);
/*
 * The state as text into a new buffer (*<out>, *<outlen>; the caller
 * frees it).  With <gc_now_ms> non-zero, counters expired at that time are
 * dropped instead of written.  0, or SLUICE_ENOMEM.
 */
int limits_state_format(struct limits *l, uint64_t gc_now_ms, char **out, size_t *outlen);
/* Writes <buf>/<len> to l->path atomically (tmp, fsync, rename, fsync dir): 0 or SLUICE_EIO (errno set). */
int limits_state_write(struct limits *l, const char *buf, size_t len);

#endif
