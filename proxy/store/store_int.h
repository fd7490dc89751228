/*
 * proxy/store/store_int.h - inside the store: its scripts and the readers
 * of Redis's replies.  The readers are pure functions over a redisReply
 * tree (hiredis's own RESP parser builds it), so that the unit test and
 * tests/fuzz/fuzz_store_reply.c can feed them every reply type.
 *
 * Every reader checks every field it reads: the type of the reply and of
 * each element, the number of elements, the range of each integer.  Any
 * other shape (garbage, an unexpected type, nil, an array of the wrong
 * length or types, integers out of range) is STORE_EREPLY: the operation
 * fails closed.  NULL is accepted as a reply and read as STORE_EDOWN (the
 * connection went away).
 */
#ifndef SLUICE_PROXY_STORE_INT_H
#define SLUICE_PROXY_STORE_INT_H

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include "proxy/store/fleet.h"
#include "proxy/store/store.h"

enum store_script {
	STORE_SCRIPT_RATE = 0,      /* KEYS[1] the counter; ARGV count, period_s, takes -> {granted, retry_ms} */
	STORE_SCRIPT_TAKE = 1,      /* KEYS[1] the budget's base; ARGV amount, max, period_s, grace_s -> {allowed, ms, window} */
	STORE_SCRIPT_REFUND = 2,    /* KEYS[1] the budget's base; ARGV amount, window -> {existed} */
	STORE_NSCRIPT = 3,
};

#define STORE_SHA_LEN 40            /* hex digits of a script's SHA1 (SCRIPT LOAD's answer) */
#define STORE_RETRY_MAX_MS (UINT64_C(400) * 86400 * 1000)  /* a retry_after a reply may give: 400 days */

/* The Lua text of <sc> (static). */
const char *store_script_text(enum store_script sc);

/*
 * Reads the reply to EVALSHA of <sc> into *<out>: STORE_ALLOWED or
 * STORE_REFUSED with its fields.  Returns out->outcome: also STORE_ENOSCRIPT
 * for an error reply starting "NOSCRIPT", STORE_EREPLY for any other error
 * or shape, STORE_EDOWN for NULL.  <bound>: for a budget take its period_s
 * (ms left <= period, window a multiple of it); for a rate take the number
 * of takes asked at once (1..STORE_BATCH_MAX): out->granted is how many of
 * them passed (0..bound), the outcome ALLOWED when at least one did, and
 * retry_after_ms is for the first refused one (0 when none was).
 */
#define STORE_BATCH_MAX 64          /* rate takes of one counter sent as one EVALSHA (store.c) */
enum store_outcome store_reply_script(enum store_script sc, uint32_t bound, const redisReply *r,
                                      struct store_result *out);

/* A status reply "OK" (AUTH, SELECT): 0, else STORE_EREPLY (or STORE_EDOWN for NULL). */
int store_reply_ok(const redisReply *r);

/* SCRIPT LOAD's answer: a bulk string of STORE_SHA_LEN lower-case hex digits copied to <sha> (NUL-terminated).
 * 0, else STORE_EREPLY (or STORE_EDOWN). */
int store_reply_sha(const redisReply *r, char sha[STORE_SHA_LEN + 1]);

enum store_evict {
	STORE_EVICT_NO = 0,        /* maxmemory-policy is noeviction */
	STORE_EVICT_YES = 1,       /* any other policy: keys may be dropped */
	STORE_EVICT_UNKNOWN = 2,   /* the reply did not say (CONFIG refused: ask INFO) */
};

/*
 * `CONFIG GET maxmemory-policy`'s answer: an array of exactly two bulk
 * strings, "maxmemory-policy" and the value.  Copies the value (escaped for
 * a log line) into <val> (<cap>).  An error reply or any other shape is
 * STORE_EVICT_UNKNOWN.
 */
enum store_evict store_reply_config_evict(const redisReply *r, char *val, size_t cap);
/* `INFO memory`'s answer: a bulk string with a line "maxmemory_policy:<value>"; as above. */
enum store_evict store_reply_info_evict(const redisReply *r, char *val, size_t cap);

/*
 * hiredis 0.14's reader allocates an array's declared element count before it
 * reads one element ("*300000000\r\n" is a 2.4 GB calloc) and has no bound of
 * its own.  These are hiredis's default reply functions with that bound:
 * an array declaring more than STORE_REPLY_ARRAY_MAX elements is not made (the
 * reader fails with an out-of-memory error, the connection is dropped: fail
 * closed).  Every reader of this store gets them (store.c at connect).  Static,
 * made once; any thread.
 */
#define STORE_REPLY_ARRAY_MAX 1024  /* the largest array a store command answers: the fleet's MGET of
                                    * FLEET_LIST_MAX keys (a counter's script answers 3) */
redisReplyObjectFunctions *store_reply_fns(void);

/* The escaping of store_key for one name into <out> (<cap>): its length, or -1 when it does not fit. */
long store_key_escape(char *out, size_t cap, const char *s, size_t len);

/*
 * Attaches <ac> to <base> (in place of hiredis's redisLibeventAttach): the
 * same events, and a bound on the bytes the reader holds unparsed, checked
 * before each read.  Over <max_unread>, <overflow>(ac, arg) runs instead of
 * the read, from the event's callback (not inside a hiredis callback), and
 * must free <ac> (redisAsyncFree).  Returns 0, or -1 (out of memory, or
 * something is already attached); on -1 nothing is attached.  The events
 * are freed with the context.
 */
#define STORE_UNREAD_MAX (64 * 1024)  /* the counters' replies are a few dozen bytes */
typedef void store_ev_overflow_fn(redisAsyncContext *ac, void *arg);
int store_ev_attach(redisAsyncContext *ac, struct event_base *base, size_t max_unread, store_ev_overflow_fn *overflow,
                    void *arg);
/* ---- raw commands and a subscriber (the fleet client, store_fleet.c) ---- */

#define STORE_RAW_ARGS_MAX 1040     /* arguments of one raw command (MGET of FLEET_LIST_MAX keys, ...) */

/*
 * The reply to a raw command: <r> (borrowed for the call) when Redis
 * answered (<o> STORE_ALLOWED, or STORE_EREPLY for an error reply, then <r>
 * is NULL), or NULL with <o> STORE_ETIMEOUT / STORE_EDOWN / STORE_ESHUTDOWN.
 * Called once, on the store's thread; the reader checks the type itself.
 */
typedef void store_raw_cb(const redisReply *r, enum store_outcome o, void *arg);
/*
 * Sends <argc> arguments (copied at once) on a ready store, with the
 * store's timeout and stall detection.  0 (then <cb>, when not NULL, is
 * called once), or STORE_EDOWN (not ready, or a subscriber), STORE_EBUSY,
 * STORE_EINVAL: no callback.
 */
int store_raw(struct store *s, int argc, const char **argv, const size_t *argl, store_raw_cb *cb, void *arg);

/* A message on a subscriber's channel: <p>/<n> borrowed for the call; store's thread. */
typedef void store_msg_cb(const char *p, size_t n, void *arg);
/*
 * A store that, after AUTH and SELECT, SUBSCRIBEs to <prefix><channel> and
 * gives each message to <cb>; it reconnects (and subscribes again) as any
 * store.  store_raw refuses it.  NULL with *<err> (static).
 */
struct store *store_create_sub(struct event_base *base, const struct store_opts *o, const char *channel,
                               store_msg_cb *cb, void *arg, const char **err);
/* The number of the ready connection (changes on every reconnect), 0 while not ready. */
uint64_t store_conn_id(const struct store *s);
/* The key prefix (state.redis.key_prefix; "" when none). */
const char *store_prefix(const struct store *s);

/*
 * A push on a subscribed connection: an array of 3, "message", <chan>
 * (<chanlen> bytes) and the payload (a bulk string of at most
 * FLEET_REC_MAX bytes): 1 with *<p> and *<n>.  A confirmation ("subscribe",
 * <chan>, an integer): 0.  Anything else (another channel, another type or
 * shape, a payload too long): -1.
 */
int store_reply_message(const redisReply *r, const char *chan, size_t chanlen, const char **p, size_t *n);

/*
 * The fleet's readers (store_fleet.c), over every reply type:
 * store_reply_ids: ZRANGEBYSCORE's answer, an array of at most <max>
 * elements: the members that are ids (16 lower-case hex digits) copied to
 * <ids> (room for <max>), others skipped; their number, or -1 for any other
 * shape.  store_reply_mget: 0 when <r> is an array of exactly <n>
 * elements, else -1; store_reply_mget_at: element <i> of such an answer: 1
 * with *<p> and *<len> for a bulk string of at most FLEET_REC_MAX bytes, 0
 * for nil, -1 for anything else.  store_reply_set_nx: SET NX's answer: 1
 * taken (status OK), 0 not taken (nil), -1 anything else.
 */
long store_reply_ids(const redisReply *r, size_t max, char (*ids)[FLEET_ID_LEN + 1]);
int store_reply_mget(const redisReply *r, size_t n);
int store_reply_mget_at(const redisReply *r, size_t i, const char **p, size_t *len);
int store_reply_set_nx(const redisReply *r);

#endif
