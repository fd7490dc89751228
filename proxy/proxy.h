/*
 * proxy/proxy.h - the gateway: start, reload, stop.
 *
 * gateway_create binds every listener (so it runs as root when ports need
 * it), gateway_drop_privileges then switches to the configured user, and
 * gateway_run serves until SIGTERM/SIGINT (drain, then stop).  SIGHUP
 * reloads the policy from the same file; a file that fails to load keeps
 * the previous policy and logs why.  Under systemd (NOTIFY_SOCKET) the
 * gateway reports READY=1 once it serves, RELOADING=1 ... READY=1 around a
 * reload and STOPPING=1 when it drains (sd_notify; nothing without it).
 */
#ifndef SLUICE_PROXY_PROXY_H
#define SLUICE_PROXY_PROXY_H

#include "policy/policy.h"
#include "ca/ca.h"

struct gateway;

/*
 * Creates the gateway from <cfg> (borrowed; must outlive the gateway) and
 * <pol> (taken: the gateway owns that reference, also on failure), with
 * leaves from <ca> (borrowed).  <config_path> is re-read on SIGHUP.
 * Binds all listeners (one SO_REUSEPORT socket per worker) and opens the
 * audit file.  Returns NULL with *<err> set on failure.
 */
struct gateway *gateway_create(const char *config_path, const struct policy_config *cfg,
                               struct policy *pol, struct ca *ca, const char **err);

/*
 * Switches to <user> (setgroups/setgid/setuid; "root" keeps root and warns),
 * and makes the process non-dumpable.  Not started as root (systemd's
 * User=), there is nothing to switch: <user> is ignored (logged).  Returns 0
 * or a negative SLUICE_E*.
 */
int gateway_drop_privileges(struct gateway *gw, const char *user, const char **err);

/* Starts the workers and serves until stopped. Returns 0 on a clean stop. */
int gateway_run(struct gateway *gw);

void gateway_destroy(struct gateway *gw);

#endif
