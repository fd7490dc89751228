/*
 * proxy/judge/approvals_fleet.h - approvals across the fleet (issue 22,
 * item 2), with `state.backend: redis`: the glue between this gateway's
 * registry (approvals.h) and the fleet client (proxy/store/fleet.h).
 *
 * Main thread only, but for the watch hook: the registry calls it from any
 * thread under its mutex, and it only makes an event active on the main
 * base (thread-safe with evthread_use_pthreads).  On that event, and every
 * FLEET_TICK_MS, the pending holds are synced to the fleet (published, or
 * withdrawn once decided, timed out or cancelled).  A decision from another
 * gateway that verifies is applied with approvals_decide, so a hold is
 * still decided exactly once and still times out on its own gateway, Redis
 * or not.
 */
#ifndef SLUICE_PROXY_APPROVALS_FLEET_H
#define SLUICE_PROXY_APPROVALS_FLEET_H

#include <event2/buffer.h>
#include <event2/event.h>
#include "proxy/judge/approvals.h"
#include "proxy/store/fleet.h"

struct approvals_fleet;

/*
 * Starts the fleet side of <a> on the main thread's <base>.  <note> is
 * called (main thread) with the `approval` record of each decision this
 * gateway made for another gateway's hold (info->gateway set).  NULL with
 * *<err> (static) when the client cannot be made (no fleet key, ...).
 */
struct approvals_fleet *approvals_fleet_start(struct approvals *a, struct event_base *base,
                                              const struct store_opts *so, const char *gateway_id,
                                              const struct secret_buf *key, approval_note_fn note, void *note_arg,
                                              const char **err);
/* Withdraws nothing (the records expire), closes the connections.  Before approvals_free.  NULL is fine. */
void approvals_fleet_stop(struct approvals_fleet *af);

/* The listing: this gateway's pending approvals, then the fleet's (fleet_list_json). */
void approvals_fleet_list_json(struct approvals_fleet *af, struct evbuffer *out);

/* Decides an id that is not pending here (after approvals_decide answered SLUICE_ENOENT): fleet_decide. */
enum fleet_decide_res approvals_fleet_decide(struct approvals_fleet *af, const char *id, int approve, const char *by,
                                             fleet_decide_done *done, void *done_arg);

#endif
