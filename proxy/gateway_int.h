/*
 * proxy/gateway_int.h - the top of proxy/: the gateway (gateway.c, main
 * thread), its workers (worker.c, one event loop each), hot reload
 * (reload.c) and the admin socket (admin.c).  Private to proxy/'s top
 * level; the sub-modules below see only their own headers.  The two
 * contexts (struct gateway, struct worker) and what threads share are in
 * proxy/core/context.h.
 */
#ifndef SLUICE_PROXY_GATEWAY_INT_H
#define SLUICE_PROXY_GATEWAY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/queue.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include "ca/ca.h"
#include "common/netaddr.h"
#include "policy/policy.h"
#include "audit/writer.h"
#include "proxy/judge/approvals.h"
#include "proxy/judge/approvals_fleet.h"
#include "proxy/net/net.h"
#include "proxy/h2/h2.h"
#include "proxy/cred/cred.h"
#include "proxy/session/session.h"
#include "proxy/dns/dns.h"
#include "proxy/core/context.h"

/*
 * ---- reload.c: hot reload and the counters' state file (main thread) ----
 * reload_init() (gateway_create, as root) makes state_dir (0700, given to
 * `user:`) and reads <state_dir>/counters into gw->limits: -1 with *<err>
 * (naming the file and the line) when it does not parse: the gateway does
 * not start.  reload_start() (gateway_run, after the privilege drop) logs
 * the policy's warnings, checks state_dir is writable (else takes fail
 * closed), starts the one-second save timer and, with reload.watch, the
 * config file watch.  reload_stop() (the workers have finished) stops them
 * and saves the counters; reload_free() (gateway_destroy) saves and frees.
 * gateway_reload() compiles the config file again and swaps the policy in
 * (open connections keep theirs), or keeps the old one; logs, counts
 * (metrics) and audits (config_reload) the result.  <why>: "SIGHUP", "file
 * changed".
 */
int reload_init(struct gateway *gw, const char **err);
void reload_start(struct gateway *gw);
void reload_stop(struct gateway *gw);
void reload_free(struct gateway *gw);
void gateway_reload(struct gateway *gw, const char *why);

int worker_start(struct worker *w);
/*
 * Hands <pol> (taken; its generation <gen> and secrets-and-sandboxes
 * generation <rgen>) and/or a drain order to <w>'s thread. Thread-safe.
 */
void worker_post(struct worker *w, struct policy *pol, uint64_t gen, uint64_t rgen, int drain);
/* Tells <w>'s thread a sandbox registration was removed: its connections are swept (revoke.c). Thread-safe. */
void worker_post_revoke(struct worker *w);
/* Stops <w>'s loop at once (drain deadline). Thread-safe. */
/* Serves the admin socket (admin.c) on the main thread's base. */
void admin_start(struct gateway *gw);
/* approvals' note hook (approvals_set_note, <arg> the gateway): writes each outcome's `approval` audit record. */
void admin_approval_note(void *arg, const char *id, const struct approval_info *info, enum approval_decision decision,
                         const char *by);


void worker_stop(struct worker *w);
void worker_join(struct worker *w);

#endif
