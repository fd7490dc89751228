/*
 * proxy/store/fleet.h - approvals across a fleet of gateways (issue 22,
 * item 2): the signed records the gateways exchange through Redis, and the
 * main thread's client that publishes this gateway's holds, lists the
 * fleet's and carries decisions between gateways.
 *
 * Trust.  Redis is in the trusted base for counters, not for approvals:
 * whoever can write to it could otherwise release any hold.  So everything
 * a gateway reads back from Redis that decides is sealed: a record is
 *
 *   <64 lower-case hex digits of HMAC-SHA-256(fleet key, payload)> "." <payload>
 *
 * and the payload is a JSON object whose member "t" names what it is
 * ("hold" or "decision"), so a sealed hold can never be read as a decision.
 * The MAC covers the payload's bytes exactly as stored: nothing is
 * re-serialised before it is checked.  A record that does not verify is
 * never decidable (a hold: listed as "unverified" with its id only; a
 * decision: dropped and logged).  The fleet key (state.fleet_key) is shared
 * by the gateways only; it is held in a secret_buf and never logged.
 *
 * Replay.  A decision names the hold's id and its holding gateway.  Ids are
 * 64 random bits, never reused; a holding gateway applies a decision only
 * to one of its own holds still pending (approvals_decide), so a decision
 * read again (a second PUBLISH, the decision key read after reconnecting)
 * finds the hold decided and does nothing.  The deciding gateway takes the
 * id once fleet-wide with SET NX of the decision key: a second decision,
 * from any gateway, is refused (409).
 *
 * Keys (<p> the state.redis.key_prefix):
 *   <p>ap:h:<id>       a sealed hold, PX until FLEET_TTL_GRACE_MS past its expiry
 *   <p>ap:idx          a sorted set of the ids of published holds, scored by expiry (Unix ms)
 *   <p>ap:d:<id>       the sealed decision (SET NX), with the hold's TTL
 *   <p>ap:alive:<gw>   "1", PX FLEET_ALIVE_TTL_MS, refreshed every FLEET_TICK_MS by gateway <gw>
 *   channel <p>ap:decisions  sealed decisions, PUBLISHed after the SET NX
 */
#ifndef SLUICE_PROXY_STORE_FLEET_H
#define SLUICE_PROXY_STORE_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"

struct event_base;
struct evbuffer;
struct secret_buf;
struct store_opts;

#define FLEET_KEY_MIN 32             /* bytes of the fleet key, at least */
#define FLEET_REC_MAX 65536          /* bytes of a sealed record; a larger hold is not published */
#define FLEET_ID_LEN 16              /* = APPROVALS_ID_LEN */
#define FLEET_GW_MAX 64              /* bytes of a gateway id (policy_gateway_id_ok) */
#define FLEET_BY_MAX 128             /* bytes of "<by>@<from>" as the holder writes it, with its NUL */
#define FLEET_WHO_MAX 56             /* bytes of a decision's "by" with its NUL (the deciding peer, "uid:N(name)": at most 48) */
#define FLEET_LIST_MAX 1024          /* holds read from the index per refresh */
#define FLEET_TICK_MS 250            /* heartbeat, refresh of the listing, decision keys of our holds */
#define FLEET_ALIVE_TTL_MS 3000      /* a gateway unheard of for this long is "gone" */
#define FLEET_TTL_GRACE_MS 60000     /* a hold's record and decision outlive its expiry by this */
#define FLEET_UNREAD_MAX (16u << 20) /* bytes of one reply the command connection may buffer (a listing's MGET);
                                      * over it the connection is dropped and the listing is empty until it is back */
#define FLEET_SUB_UNREAD_MAX (2 * FLEET_REC_MAX)  /* ... the subscriber's (one message) */

enum fleet_err {
	FLEET_OK = 0,
	FLEET_EPARSE = -1,   /* not a record: bad framing, JSON, member, type or bound */
	FLEET_EFORGED = -2,  /* framed, but the MAC does not verify with our key */
	FLEET_ETOOBIG = -3,  /* sealing: the record would exceed FLEET_REC_MAX (or <cap>) */
	FLEET_EINVAL = -4,   /* sealing: a field out of its bounds */
};

/*
 * One hold as published.  Strings borrowed (seal) or owned by <_json> and
 * <_fields> (open: fleet_hold_dispose).  An opened hold points at nothing
 * inside itself, so it may be copied (moved) as a value: dispose one copy.
 */
struct fleet_hold {
	char id[FLEET_ID_LEN + 1];
	char gw[FLEET_GW_MAX + 1];       /* the holding gateway */
	const char *sandbox, *rule;      /* may be NULL */
	const char *method, *host, *path;
	const struct policy_field *fields;
	size_t nfields;                  /* <= POLICY_FIELDS_MAX */
	struct policy_field *_fields;    /* open: the array <fields> is (heap), NULL when none */
	char body_sha256[65];            /* hex */
	int64_t created_ms, expiry_ms;   /* Unix ms of the holding gateway's clock */
	void *_json;
};

/* One decision.  All inline. */
struct fleet_decision {
	char id[FLEET_ID_LEN + 1];
	char gw[FLEET_GW_MAX + 1];       /* the holding gateway it is for */
	int approve;                     /* 1 approve, 0 reject */
	char by[FLEET_WHO_MAX];          /* the deciding admin peer, printable ASCII */
	char from[FLEET_GW_MAX + 1];     /* the deciding gateway */
	int64_t time_ms;
};

/*
 * Seal <h> / <d> with <key> into <out> (<cap> bytes, NUL-terminated).  The
 * record's length, or FLEET_ETOOBIG / FLEET_EINVAL.  Pure.
 */
long fleet_hold_seal(const struct fleet_hold *h, const uint8_t *key, size_t keylen, char *out, size_t cap);
long fleet_decision_seal(const struct fleet_decision *d, const uint8_t *key, size_t keylen, char *out, size_t cap);

/*
 * Checks and reads a record of <len> bytes (not NUL-terminated; at most
 * FLEET_REC_MAX): FLEET_OK with *<h> / *<d> filled, FLEET_EFORGED when the
 * MAC does not verify (nothing is parsed), FLEET_EPARSE for anything not
 * exactly a record of that type: unknown or duplicate members, a missing
 * one, a wrong type, an id that is not 16 lower-case hex digits, a gateway
 * id or "by" out of its bounds or alphabet, a string with a NUL, more than
 * POLICY_FIELDS_MAX fields.  On FLEET_OK a hold owns parsed JSON: call
 * fleet_hold_dispose.  Pure.
 */
int fleet_hold_open(const char *rec, size_t len, const uint8_t *key, size_t keylen, struct fleet_hold *h);
int fleet_decision_open(const char *rec, size_t len, const uint8_t *key, size_t keylen, struct fleet_decision *d);
void fleet_hold_dispose(struct fleet_hold *h);

/* ---- the client (proxy/store/store_fleet.c) ---- */

/*
 * A decision for one of our holds arrived and verified: <id> is one of the
 * ids this gateway published and still holds, <by> is "<peer>@<from>".
 * The callee decides it (approvals_decide); a hold no longer pending makes
 * it a no-op.  Main thread.
 */
typedef void fleet_decision_fn(void *arg, const char *id, int approve, const char *by);
/* A decision this gateway made for another's hold was taken (SET NX answered OK): audit it.  Main thread. */
typedef void fleet_decided_fn(void *arg, const struct fleet_hold *h, int approve, const char *by);

struct fleet;

/*
 * Makes the fleet client on the main thread's <base>: two connections to
 * the store of <so> (commands; the subscriber), each with the store's
 * handshake, timeouts and backoff.  <key> is copied into a secret_buf of
 * its own.  <gateway_id> names this gateway.  NULL with *<err> (static).
 */
struct fleet *fleet_create(struct event_base *base, const struct store_opts *so, const char *gateway_id,
                           const struct secret_buf *key, fleet_decision_fn *on_decision, fleet_decided_fn *on_decided,
                           void *arg, const char **err);
void fleet_destroy(struct fleet *f);   /* NULL is fine */

/* 1 while the command connection is ready (remote decisions can be sent). */
int fleet_ready(const struct fleet *f);

/*
 * Our holds.  fleet_sync_begin marks every published hold unseen; each
 * fleet_sync_hold marks <h> seen (publishing it when new: SET, ZADD);
 * fleet_sync_end withdraws the unseen ones (DEL, ZREM).  <h> is borrowed
 * for the call (sealed at once).  A hold that cannot be sealed stays local
 * (logged).  After a reconnect every published hold is sent again.
 */
void fleet_sync_begin(struct fleet *f);
void fleet_sync_hold(struct fleet *f, const struct fleet_hold *h);
void fleet_sync_end(struct fleet *f);

enum fleet_decide_res {
	FLEET_DECIDE_SENT = 0,       /* SET NX sent: <done> will be called with the outcome */
	FLEET_DECIDE_DOWN = -1,      /* the store cannot be reached: nothing sent (503) */
	FLEET_DECIDE_UNKNOWN = -2,   /* no such hold of another gateway in the listing (404) */
	FLEET_DECIDE_UNDECIDABLE = -3, /* listed, but unverified, expired or its gateway gone (409) */
	FLEET_DECIDE_TAKEN = 1,      /* <done>: the decision is the hold's (SET NX answered OK), PUBLISHed, audited */
	FLEET_DECIDE_LATE = -4,      /* <done>: another decision, from any gateway, took the hold first (409) */
	FLEET_DECIDE_FAILED = -5,    /* <done>: the store did not confirm (timeout, lost, an error): not audited here;
	                              * a SET that reached Redis may still take the hold (503, "list again") */
};
/* The outcome of a decision that was sent: <gw> is the holding gateway.  Called once, main thread. */
typedef void fleet_decide_done(void *arg, enum fleet_decide_res res, const char *gw);
/*
 * Decides another gateway's hold <id> (main thread).  <by>: the admin peer
 * ("uid:N(name)").  FLEET_DECIDE_SENT: <done> is called once later, with
 * TAKEN, LATE or FAILED (FAILED also when the client is destroyed first);
 * any other answer: <done> is not called.
 */
enum fleet_decide_res fleet_decide(struct fleet *f, const char *id, int approve, const char *by,
                                   fleet_decide_done *done, void *done_arg);

/*
 * Appends the other gateways' holds to a JSON array being written in
 * <out>: for each, ",{...}" when <first> is 0, else without the comma;
 * returns the number written.  Each object has the local listing's members
 * plus "gateway" and "state" ("pending", "expired", "gateway_gone",
 * "unverified"; an unverified one has "id" and "state" only).  From the
 * last refresh (at most FLEET_TICK_MS old, plus the store's latency).
 */
size_t fleet_list_json(struct fleet *f, struct evbuffer *out, int first);

#endif
