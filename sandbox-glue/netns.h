/*
 * sandbox-glue/netns.h - the netns backend: a network namespace on a veth
 * pair whose only way out is the gateway (nft.h), and the workload started
 * in it through bubblewrap.
 *
 * Wiring is done with iproute2's `ip`, executed directly (no shell, empty
 * environment, from /usr/sbin, /sbin or /usr/bin), three runs per sandbox:
 * `ip netns add`, one `ip -batch -` on the host side and one `ip -n NS
 * -batch -` inside.  The nft table comes from nft_render and nft_apply.
 *
 * Who is alive: every sandbox (of any backend that follows this protocol)
 * holds an flock(2) on <NETNS_STATE_DIR>/<id>.lock for its whole life.  The
 * file holds four lines: pid, index, the name the sandbox is registered
 * under at the gateway, and that gateway's admin socket (empty when none),
 * so a later run can also remove a dead sandbox's registration.  A lock
 * file nobody holds, and any table `sluice_<id>`, veth or tap `slh<id>`,
 * namespace `sluice_<id>` or VM directory NETNS_VM_DIR/<id> whose id has no
 * held lock file, is stale: what a SIGKILLed run left behind.  netns_claim
 * removes it.  Claims
 * are serialised by an flock on <NETNS_STATE_DIR>/.plan.lock, so two starts
 * never pick the same index.  The kernel drops an flock when its holder dies,
 * so a recycled pid can never make a dead sandbox look alive.
 */
#ifndef SLUICE_SANDBOX_NETNS_H
#define SLUICE_SANDBOX_NETNS_H

#include <stddef.h>
#include <sys/types.h>
#include "sandbox-glue/sandbox.h"

#define NETNS_STATE_DIR "/run/sluice/sandboxes"  /* mode 0700, root only */
#define NETNS_ERR_MAX 256                        /* a useful size for the <err> buffers below */
#define NETNS_BWRAP "/usr/bin/bwrap"
#define NETNS_CA_PATH "/etc/ssl/certs/ca-certificates.crt"  /* where the bundle appears inside */
#define NETNS_ARGV_MAX 256                       /* command words (after the bwrap options) */
#define NETNS_STALE_MAX 256                      /* leftovers removed per start */
#define NETNS_HIDE_MAX 16                        /* netns_exec.hide entries */
#define NETNS_VM_DIR "/run/sluice/vm"            /* per-run files of the VM backends: <id>/ (see netns_vm_dir) */

/* What exists of a sandbox: teardown removes exactly these. */
enum netns_have {
	NETNS_HAVE_LOCK = 1,
	NETNS_HAVE_NETNS = 2,
	NETNS_HAVE_VETH = 4,
	NETNS_HAVE_TABLE = 8,
	NETNS_HAVE_TAP = 16,
	NETNS_HAVE_VMDIR = 32,
};

struct netns_sandbox {
	struct sandbox_net net;
	char name[SANDBOX_NAME_MAX + 1];   /* the name it is registered under */
	int _lock_fd;      /* the held lock file, -1 when none */
	unsigned _have;    /* enum netns_have bits */
	char _lock_path[96];
	char _vm_dir[64];  /* NETNS_VM_DIR/<id> */
};

/* A dead sandbox's registration, found by the stale cleanup. */
struct netns_stale {
	char name[SANDBOX_NAME_MAX + 1];
	char admin[108];                   /* its gateway's admin socket path, "" when none */
};
#define NETNS_STALE_REG_MAX 16         /* registrations reported per start */

/* Sets <sb> to "nothing exists" so netns_teardown on it is harmless. */
void netns_init(struct netns_sandbox *sb);

/*
 * Removes stale leftovers (see above), then picks a fresh id
 * (sandbox_id_new) and the lowest free index (no held lock file claims it
 * and no interface on the host has an address in its /30), plans the
 * sandbox (sandbox_net_plan with the two ports), names it (<name>, or
 * "sbx-<id>" when NULL; an invalid name is SLUICE_EINVAL) and creates and
 * locks its lock file, recording <admin> (may be NULL).  *<removed> (may be
 * NULL) gets the number of stale sandboxes removed; the registrations of
 * those that had one go to <stale> (at most <max>; *<nstale> gets the count)
 * for the caller to remove at their gateway.  Returns 0, SLUICE_EIO (state
 * dir, lock) or SLUICE_ETOOBIG (no free index), with a message in <err>.
 * Needs root.
 */
int netns_claim(struct netns_sandbox *sb, const char *name, const char *admin, uint16_t transparent_port,
                uint16_t dns_port, unsigned *removed, struct netns_stale *stale, size_t max, size_t *nstale,
                char *err, size_t errcap);

/*
 * Only the stale cleanup of netns_claim (under the same plan lock): returns
 * 0 with *<removed> set, or SLUICE_EIO with <err>.
 */
int netns_stale_cleanup(unsigned *removed, char *err, size_t errcap);

/*
 * Creates the namespace <sb->net.netns>, the veth pair (host side up with
 * host_v4/30 and host_v6/126; sandbox side moved in, renamed eth0, with
 * sbx_v4/30 and sbx_v6/126, default routes via the host side, lo up) and
 * applies the nft table.  Changes no sysctl.  Returns 0 or SLUICE_EIO with
 * <err>; what was made before a failure is recorded for netns_teardown.
 */
int netns_setup(struct netns_sandbox *sb, char *err, size_t errcap);

/*
 * The VM backends' network: in the root namespace, the tap <sb->net.host_if>
 * (`ip tuntap add ... mode tap user <uid> group <gid>`, so a VM monitor
 * running as <uid> may attach to it), with host_v4/30 and host_v6/126
 * (nodad), up; then the same nft table as netns_setup (it matches the
 * host-side interface by name).  No namespace, no route, no sysctl.
 * Returns 0 or SLUICE_EIO with <err>; what was made before a failure is
 * recorded for netns_teardown.
 */
int netns_tap_setup(struct netns_sandbox *sb, uid_t uid, gid_t gid, char *err, size_t errcap);

/*
 * Makes the sandbox's private directory NETNS_VM_DIR/<id> for the files a
 * VM monitor reads (the per-run initrd, a Firecracker config): owned by
 * root, group <gid>, mode 0750 (NETNS_VM_DIR itself root's, 0711), so the
 * monitor running as <gid> reads and nobody but root writes.  Its path goes
 * to <path> (<cap> bytes).  netns_teardown empties and removes it, and the
 * stale cleanup removes those of dead sandboxes.  Returns 0, or SLUICE_EIO
 * (SLUICE_EINVAL: <cap> too small) with <err>.
 */
int netns_vm_dir(struct netns_sandbox *sb, gid_t gid, char *path, size_t cap, char *err, size_t errcap);

/*
 * Removes what netns_setup, netns_tap_setup, netns_vm_dir and netns_claim
 * made (table, veth or tap, namespace, VM directory, lock file), in that
 * order, ignoring what is already gone.  Idempotent.
 */
void netns_teardown(struct netns_sandbox *sb);

/* How the workload runs (all borrowed). */
struct netns_exec {
	char *const *argv;          /* the command, NULL-terminated, argv[0] looked up in the sandbox's PATH */
	char *const *envp;          /* its whole environment, NULL-terminated */
	uid_t uid;                  /* uid and gid inside and outside (never 0) */
	gid_t gid;
	const char *workspace;      /* host directory bound read-write on /workspace, or NULL */
	int workspace_fd;           /* with a workspace: the descriptor that is bound (the directory checked) */
	const char *resolv;         /* contents of /etc/resolv.conf inside */
	size_t resolv_len;
	const char *bundle;         /* contents of NETNS_CA_PATH inside */
	size_t bundle_len;
	const char *const *hide;    /* absolute, canonical paths under /etc or /usr to cover (others are not */
	size_t nhide;               /* visible anyway): the gateway's config, CA and audit directories */
};

/*
 * Starts bubblewrap inside <sb>'s namespace: the child joins the namespace
 * (setns), drops to <x->uid>/<x->gid> with no supplementary groups, puts
 * itself in its own process group, asks for SIGKILL when this process dies,
 * and execs NETNS_BWRAP with a new user, pid, ipc, uts and cgroup
 * namespace, --die-with-parent, --new-session, every capability dropped, a
 * private /proc, /dev, /tmp and /run, /usr and /etc read-only (with
 * resolv.conf and the CA bundle read-only over theirs, from memfds, and the
 * <x->hide> paths covered), the /bin /lib /lib64 /sbin links, and the
 * workspace (else the working directory is /tmp).  bwrap writes its JSON
 * status ({"child-pid": N} ... {"exit-code": N}) to *<status_fd> (the read
 * end, O_CLOEXEC, owned by the caller).  Returns 0 with *<pid> (bwrap's pid),
 * or SLUICE_EIO with <err>.
 */
int netns_spawn(const struct netns_sandbox *sb, const struct netns_exec *x, pid_t *pid, int *status_fd, char *err,
                size_t errcap);

/*
 * The pid (in this pid namespace) of the command bwrap started: the first
 * child of <init_pid> (bwrap's "child-pid", the sandbox's pid 1), and when
 * <execed> only once its executable is no longer bwrap (it has exec'd the
 * command).  Returns the pid, 0 when there is none (yet), or -1 when
 * <init_pid> is gone.
 */
pid_t netns_command_pid(pid_t init_pid, int execed);

#endif
