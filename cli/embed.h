/*
 * cli/embed.h - what `sluice run` needs around the sandbox: a configuration
 * when none is given, and a gateway when none is running.
 *
 * The built-in default lives in the user's state directory
 * ($SLUICE_STATE_DIR, else $XDG_STATE_HOME/sluice, else, as root,
 * /var/lib/sluice-run, else $HOME/.local/state/sluice): a CA made on
 * first use, a state/ directory owned by the gateway's user (nobody: its
 * counters and audit trail), and a sluice.yaml that allows nothing
 * (default: deny, no hosts) which the user widens by editing it, readable by
 * the gateway's user so that reloads work after the privilege drop.  Nothing
 * is overwritten once it exists.
 *
 * The embedded gateway: when the configuration's admin socket does not
 * answer GET /health, `sluice run` starts `sluice serve -c FILE` itself, in
 * a session of its own (so a terminal's ^C reaches the sandbox, not the
 * gateway), logging to <admin socket>.log, and records its pid in
 * <admin socket>.embedded.  Every run that ends looks, under an flock on
 * <admin socket>.lock, at the gateway's registered sandboxes: when none is
 * left and the gateway is an embedded one, it stops it.  So concurrent runs
 * share one gateway, and the last one out turns it off.  A gateway the
 * operator started (no .embedded file) is never stopped.
 */
#ifndef SLUICE_CLI_EMBED_H
#define SLUICE_CLI_EMBED_H

#include <stddef.h>
#include <sys/types.h>

#define EMBED_START_MS 10000   /* how long an embedded gateway may take to answer GET /health */
#define EMBED_STOP_MS 10000    /* how long it may take to stop after SIGTERM, then SIGKILL */
#define EMBED_PATH_MAX 4096

/* The state directory (see above), without creating it.  Returns 0, or SLUICE_EINVAL when no variable names one. */
int embed_state_dir(char *out, size_t cap);

/*
 * Makes the built-in default under the state directory if it is not there
 * (the directory 0700, `ca/` by ca_init_dir, `sluice.yaml` 0600 written
 * atomically), and writes the path of its sluice.yaml into <out>.  Says on
 * stderr what it created.  Returns 0 or a negative SLUICE_E* (message on
 * stderr).
 */
int embed_default_config(char *out, size_t cap);

struct embed_gateway {
	int lock_fd;          /* <admin>.lock, -1 when not open */
	char admin[EMBED_PATH_MAX];
};

/*
 * Makes sure a gateway answers on the unix socket <admin_path>: if it does
 * not, starts one for <config_path> as described above and waits up to
 * EMBED_START_MS for it.  <self> is this program (for exec).  Fills <g>
 * for embed_gateway_release.  Returns 0, or SLUICE_EIO with the reason on
 * stderr (and the gateway's log named).
 */
int embed_gateway_ensure(struct embed_gateway *g, const char *config_path, const char *admin_path);

/* After the run: stops the embedded gateway when no sandbox is registered with it any more. */
void embed_gateway_release(struct embed_gateway *g);

#endif
