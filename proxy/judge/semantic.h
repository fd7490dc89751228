/*
 * proxy/judge/semantic.h - semantic rules in the request path (issue 6): the
 * request path's side of the one judge (policy/judge.h, which `sluice policy
 * test|explain` call too): the one place that gives the judge a request's
 * facts, holds the body the judge asks for, applies its outcome (deny,
 * allow with its limits, hold for an operator, report mode) and adds its
 * members to the audit record.
 * Every path runs it: plain and TLS, transparent and explicit, and HTTP/2
 * streams (their virtual connections run http.c like any connection).
 *
 * The order for one request:
 *   sem_head()        at the head: policy_judge decides, or asks for the
 *                     body (JUDGE_NEED_BODY)
 *   CONN_S_HOLD       the body is held (sem_hold_pump), up to the rules'
 *                     max_body (413 beyond), or only the git command
 *                     section; then judged again with it
 *   hold verdict      the whole body held, parked (approvals.h) until an
 *                     operator decides or it times out
 *   sem_admit()       (relay_dial) the limits of an allowed request: each
 *                     secret's limit, the rule's rate limit, its budget
 *   sem_sent()        the first byte went upstream: a budget taken is spent
 *   sem_req_free()    the request ends: a pending hold is cancelled, a
 *                     budget not spent is refunded, held bytes are released
 *
 * Bounds (proxy/session/session.h): a held body is at most the max_body of the rules that
 * read it (policy: at most 16 MiB); a hold whose rule reads no body holds at
 * most JUDGE_HOLD_BODY_MAX (policy/judge.h); the held bodies of one HTTP/2
 * connection's streams at most PROXY_H2_HELD_MAX, and of the whole gateway at most PROXY_HELD_MAX
 * (a request that would pass either is answered 503).
 */
#ifndef SLUICE_PROXY_SEMANTIC_H
#define SLUICE_PROXY_SEMANTIC_H

#include <stddef.h>

/* Bodies held for a decision or an approval (bounds named above) */
#define PROXY_H2_HELD_MAX (32u << 20)      /* held bodies across one HTTP/2 connection's streams: a stream past it gets 503 */
#define PROXY_HELD_MAX (512u << 20)        /* held bodies across the gateway: a request past it gets 503 */
#define PROXY_HOLD_GRACE_MS 5000           /* a request waiting for approval: its connection's deadline after the hold's */

struct conn;
struct req;
struct h1_message;
struct audit_rec;
struct refusal;

/*
 * Refusals (proxy/session/refusal.h): a function here that refuses fills
 * <rf> and returns -1; it answers nothing and frees nothing of the request.
 */

/*
 * The request head <m> is parsed and its path normalised (c->req): judges
 * what can be judged without the body.  0: go on (allowed, or the body is
 * to be held first: sem_holds_body); -1: refused (403, 413, 503: <rf>).
 */
int sem_head(struct conn *c, const struct h1_message *m, struct refusal *rf);
/* 1 when the request's body is to be held for a semantic decision or an approval (after sem_head). */
int sem_holds_body(const struct conn *c);
/* 1 when a hold verdict waits to be parked with no body to hold (after sem_head): call sem_park_start. */
int sem_park_pending(const struct conn *c);
/* Parks a held request that has no body (the session is in CONN_S_HOLD): 0, or -1 refused (503: <rf>). */
int sem_park_start(struct conn *c, struct refusal *rf);
/* 1 while the request is in the semantic part of CONN_S_HOLD (sem_hold_pump pumps it). */
int sem_pumps(const struct conn *c);
/*
 * CONN_S_HOLD: reads the body into r->hold, decides, parks: returns the step
 * the session takes (enum hold_step, proxy/core/conn.h): HOLD_REFUSED with
 * <rf>, HOLD_MORE(_MOVED), HOLD_PARKED, HOLD_CLIENT_GONE, or a send.
 */
int sem_hold_pump(struct conn *c, struct refusal *rf);
/* The length of a git push's command section the judge decided on, once (then 0): the session keeps it. */
size_t sem_git_section(struct conn *c);
/*
 * How the judge hands an operator's decision back (it arrives on an event of
 * the approvals registry): the session gives these (w->sem_hooks).  <step>
 * is HOLD_SEND_WHOLE / HOLD_SEND (approved) or HOLD_REFUSED with <rf>.
 */
struct sem_hooks {
	void (*resumed)(struct conn *c, int step, struct refusal *rf);
	/* The shared counters (state.backend: redis) answered a request sem_admit left waiting: <rf> NULL, the
	 * limits are taken (the session dials: relay_dial, whose sem_admit now returns 0), or the refusal to
	 * answer (429, 503).  The outermost frame of the store's event. */
	void (*admitted)(struct conn *c, struct refusal *rf);
};
/* CONN_S_HOLD timed out: 1 when it was a wait for an operator (a 403 in <rf> to answer), else 0. */
int sem_timeout(struct conn *c, struct refusal *rf);
/* 1 while the request waits for an operator's decision. */
int sem_waiting(const struct conn *c);
/*
 * relay_dial, before the request's record: takes the limits of the allowed
 * request (each secret it uses, then the rule's rate limit, then its
 * budget), once.  0: go on; -1: refused (429 with Retry-After, 503: <rf>);
 * 1: waiting for the shared counters (state.backend: redis, c->w->store):
 * the session parks the request (no read, no dial) until the judge calls
 * w->sem_hooks->admitted.  A request freed while waiting cancels its
 * operation (sem_req_free).
 */
int sem_admit(struct conn *c, struct refusal *rf);
/* 1 while sem_admit waits for the shared counters. */
int sem_admit_waiting(const struct conn *c);
/* The session's guard timer fired while sem_admit waited (the store's own timeout comes first): cancels the
 * operation, 1 with a 503 in <rf>; 0 when nothing waited. */
int sem_admit_timeout(struct conn *c, struct refusal *rf);
/* The request's first byte went upstream: its budget is spent (no refund from now on). */
void sem_sent(struct req *r);
/* The client went away from a request waiting for an operator: 1 when a pending hold was cancelled (the session
 * audits the request), else 0. */
int sem_cancel(struct conn *c);
/* The request ends (http_req_reset): cancels a pending hold, refunds a budget not spent, frees. */
void sem_req_free(struct conn *c);
/* Adds the semantic members (mode, report, limit, hold, budget) of the request to its audit record <a>. */
void sem_audit_fill(const struct req *r, struct audit_rec *a);

#endif
