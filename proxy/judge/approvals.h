/*
 * proxy/judge/approvals.h - requests held for an operator's approval (a `hold`
 * rule): the registry the request path parks them in, and the admin side
 * that lists and decides them (GET /approvals, POST /approvals/<id>/approve
 * or /reject on the admin socket; `sluice approvals`).
 *
 * Threads.  A held request is parked (approvals_add), cancelled
 * (approvals_cancel) and called back on its worker's thread, the thread of
 * <base>; decisions (approvals_decide) and listings come from the main
 * thread.  One mutex guards the registry; each approval owns one event on
 * its <base>, with its timeout, which is the only way its callback runs:
 *
 *   - a decision (main thread), under the mutex, finds the approval still
 *     PENDING, marks it DECIDED with the outcome and makes its event active
 *     (event_active, still under the mutex);
 *   - a timeout fires the same event on the worker: under the mutex, a
 *     PENDING approval becomes DECIDED(-1, "timeout"); one already DECIDED
 *     keeps the operator's decision;
 *   - the event's callback (worker), under the mutex, takes the approval out
 *     of the registry, then, without the mutex, frees the event (which also
 *     drops an activation a decision queued while a timeout was running),
 *     runs the caller's callback and frees the approval;
 *   - approvals_cancel (worker), under the mutex, takes the approval out of
 *     the registry whatever its state, then frees its event.
 *
 * Cancel and the event's callback run on the same thread, so one of them
 * comes first and the other finds nothing.  A decision activates the event
 * only under the mutex and only while the approval is in the registry, and
 * cancel removes it under that mutex before freeing the event: after cancel
 * returns no activation can be queued and none is left queued, so no
 * callback follows.  Lock order: the registry's mutex, then a base's lock
 * (event_active, event_add); a callback never runs with either held.
 * Requires libevent's threading (evthread_use_pthreads) before the bases
 * are made.
 *
 * Who may decide: whoever can connect to the admin socket (mode 0600, owned
 * by the user that started the gateway), and, with state.fleet_key, whoever
 * can on another gateway of the fleet: approvals_fleet.c applies a decision
 * that verified with the fleet key through approvals_decide, on the main
 * thread, so it takes the same path (and wins or loses the same race) as a
 * local one.  The body hash shown is of the
 * exact body held: the request that goes on after an approval is that body.
 */
#ifndef SLUICE_PROXY_APPROVALS_H
#define SLUICE_PROXY_APPROVALS_H

#include <stddef.h>
#include <stdint.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include "policy/policy.h"

#define APPROVALS_MAX_PENDING 1024 /* default bound of approvals waiting at once */
#define APPROVALS_ID_LEN 16        /* hex characters of an id (64 random bits) */
#define APPROVALS_BY_MAX 128       /* "uid:N(name)" or, decided from another gateway, "uid:N(name)@<gateway>"
                                    * (FLEET_BY_MAX) as stored; longer ones are cut */

struct approvals;
struct approval_info {                 /* what the operator sees; all copied by approvals_add */
	const char *sandbox, *method, *host, *path, *rule;
	const struct policy_field *fields; size_t nfields;   /* secrets already shown as placeholders by the caller */
	uint8_t body_sha256[32];           /* of the exact body held (empty body: sha256 of "") */
	/* Extension: the held request's id ("<conn>-<n>"), written in the approval's audit record; may be NULL. */
	const char *request_id;
	/* Extension (fleet): the gateway that holds the request, when it is not this one (an `approval` record of a
	 * decision made here for another gateway's hold); NULL otherwise. */
	const char *gateway;
};
/*
 * How an approval ended.  The values are fixed (the admin API's "approve"
 * is 1 or 0); the text ("approved", ...) is approvals_decision_name()'s, for
 * the audit line and logs only.
 */
enum approval_decision {
	APPROVAL_REJECTED = 0,
	APPROVAL_APPROVED = 1,
	APPROVAL_TIMEOUT = -1,    /* the hold's timeout ran out */
	APPROVAL_SHUTDOWN = -2,   /* the gateway is stopping */
	APPROVAL_CANCELLED = -3,  /* approvals_cancel: the client went away */
};
/* <by>: who decided ("uid:N(name)" from SO_PEERCRED, "timeout", "shutdown"); valid during the call. Runs on the
 * thread of <base>; never with APPROVAL_CANCELLED. */
typedef void (*approval_cb)(void *arg, enum approval_decision decision, const char *by);
struct approvals *approvals_new(size_t max_pending);   /* APPROVALS_MAX_PENDING default 1024 */
/*
 * Pending ones get -2 first (as approvals_shutdown); the registry itself is
 * freed once the last of their callbacks has run.  Their <base>s must still
 * exist: the gateway frees it after its workers closed every connection,
 * and a connection cancels its hold when it closes, so none is left.
 * NULL is fine.
 */
void approvals_free(struct approvals *a);              /* pending ones get -2 first */
/* Parks a held request: returns 0 and its id (random 16 hex chars, unguessable) in <id>, or SLUICE_ETOOBIG
 * when max_pending are waiting (the caller answers 503). <cb> runs exactly once on <base>'s thread unless
 * approvals_cancel ran first on that same thread.
 * Extension: also SLUICE_EINVAL (NULL method, host or path, nfields > POLICY_FIELDS_MAX), SLUICE_ENOMEM
 * (copying <info> failed), SLUICE_EIO (no randomness, or the event could not be set up), SLUICE_ECLOSED
 * (after approvals_shutdown): the caller answers 503 to each.  <timeout_ms> 0 times out at once. */
int approvals_add(struct approvals *a, const struct approval_info *info, unsigned timeout_ms,
                  struct event_base *base, approval_cb cb, void *arg, char id[17]);
/* The client went away: no callback will run after this returns (call on <base>'s thread). */
void approvals_cancel(struct approvals *a, const char *id);
/* Admin side (main thread): list as JSON into <out>; decide by id (returns 0, SLUICE_ENOENT when no such
 * pending approval, SLUICE_EINVAL). */
void approvals_list_json(struct approvals *a, struct evbuffer *out);
int approvals_decide(struct approvals *a, const char *id, int approve, const char *by);  /* <approve>: 1 or 0 */

/* ---- extensions ---- */

/*
 * The listing is a JSON array, oldest first, of
 *   {"id","age_ms","timeout_left_ms","sandbox","method","host","path","rule",
 *    "body_sha256","fields":[{"place","value"}...]}
 * ("sandbox" and "rule" omitted when NULL).  Every string is escaped by
 * common/json.h: control bytes, quote, backslash, DEL and bytes >= 0x80 as
 * \u00XX, so a peer's bytes cannot forge a member.
 */

/* Text of a decision: "approved", "rejected", "timeout", "shutdown", "cancelled"; "?" otherwise. */
const char *approvals_decision_name(enum approval_decision decision);

/*
 * Called for every outcome, once per approval: APPROVAL_APPROVED and
 * APPROVAL_REJECTED (on the thread that decided), APPROVAL_TIMEOUT (on
 * <base>'s thread), APPROVAL_SHUTDOWN (approvals_shutdown or approvals_free)
 * and APPROVAL_CANCELLED (approvals_cancel of one still pending).  <info> and <id> are valid during the call.  Runs with the
 * registry's mutex held: it must not call approvals_*; the gateway writes the
 * `approval` audit record from it.
 */
typedef void (*approval_note_fn)(void *arg, const char *id, const struct approval_info *info,
                                 enum approval_decision decision, const char *by);
/* Sets the note hook (before any approvals_add). */
void approvals_set_note(struct approvals *a, approval_note_fn fn, void *arg);

/*
 * The gateway is stopping (main thread): every pending approval is decided
 * -2 "shutdown" (its callback runs on its worker), and approvals_add fails
 * with SLUICE_ECLOSED from now on.  Idempotent.
 */
void approvals_shutdown(struct approvals *a);

/* Approvals pending (not decided yet). */
size_t approvals_pending(struct approvals *a);

/*
 * Fleet (approvals_fleet.c).  <fn> is called, under the registry's mutex,
 * whenever the set of pending approvals changes (an add, a decision, a
 * timeout, a cancel), on whatever thread made the change; it must not call
 * approvals_* (the fleet glue only makes an event active).  Set before any
 * approvals_add.
 */
void approvals_set_watch(struct approvals *a, void (*fn)(void *arg), void *arg);
/*
 * Calls <fn> for every pending approval, oldest first, under the mutex
 * (<fn> must not call approvals_*): its id, its info (valid during the
 * call), how long it has waited and how long it has left, in ms.
 */
typedef void approvals_each_fn(void *arg, const char *id, const struct approval_info *info, uint64_t age_ms,
                               uint64_t left_ms);
void approvals_each_pending(struct approvals *a, approvals_each_fn *fn, void *arg);
/* The pending approvals' JSON objects (as approvals_list_json's), comma-separated, no brackets: their number. */
size_t approvals_list_entries(struct approvals *a, struct evbuffer *out);

/* 1 when <s> is a well-formed id: exactly APPROVALS_ID_LEN lower-case hex digits, NUL-terminated. */
int approvals_id_valid(const char *s);

#endif
