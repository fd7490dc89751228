/*
 * sandbox-glue/run.h - `sluice run` once the configuration is read: check
 * the gateway, build the sandbox (netns.h), register it with the gateway,
 * run the command, forward signals, tear everything down, and hand back the
 * command's exit status.  cli/run.c parses the options and the config and
 * fills struct run_opts; nothing here reads YAML or knows secret values.
 *
 * Backends: netns (bubblewrap in a network namespace on a veth), and the
 * two "tap backends", qemu (a -M microvm guest, qemu.h) and firecracker
 * (firecracker.h): the VM monitor runs on the host as the sandbox's uid, on
 * a tap slh<id> in the root namespace that the sandbox's nft table locks to
 * the gateway, exactly as the netns backend's veth.
 */
#ifndef SLUICE_SANDBOX_RUN_H
#define SLUICE_SANDBOX_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RUN_ENV_MAX 128          /* entries of the workload's environment */
#define RUN_ENV_ENTRY_MAX 8192   /* bytes of one NAME=VALUE */
#define RUN_BUNDLE_MAX (4u << 20) /* the system CA bundle */
#define RUN_CA_MAX 65536          /* the Sluice CA certificate */
#define RUN_GRACE_MS 10000       /* after forwarding SIGINT/SIGTERM, then SIGKILL */
#define RUN_SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define RUN_VM_READ_MAX 65536     /* bytes read from a VM's console per wake-up */

enum run_backend {
	RUN_BACKEND_NETNS = 0,
	RUN_BACKEND_QEMU = 1,
	RUN_BACKEND_FIRECRACKER = 2,
};

struct run_opts {
	const char *name;             /* --name, NULL: "sbx-<id>"; must pass sandbox_name_valid */
	char *name_out;               /* NULL, or SANDBOX_NAME_MAX + 1 bytes: the name it was registered under */
	const char *workspace;        /* --workspace, canonical absolute path, or NULL */
	int workspace_fd;             /* with a workspace: its O_PATH descriptor from run_workspace_open, bound as is */
	uid_t uid;                    /* the workload's uid and gid; never 0 */
	int timing;                   /* print where the start-up time went */
	uint16_t transparent_port;    /* the gateway's transparent listener */
	uint16_t dns_port;            /* its DNS responder; 0 when none: then sandbox UDP 53 is redirected to a
	                                 UDP port this process binds (on ::, dual-stack) and connects to
	                                 [::1]:9 for the run, so no one else can take that port and every
	                                 query gets ICMP port unreachable (rejected) */
	const char *admin_path;       /* the admin unix socket, NULL when none is configured */
	const char *ca_pem;           /* the Sluice CA certificate (ca.pem) */
	const char *const *env;       /* extra "NAME=VALUE" for the workload, in order, later wins */
	size_t nenv;
	const char *const *secrets;   /* the secret names registered for the sandbox */
	size_t nsecrets;
	const char *const *hide;      /* host paths under /etc or /usr to hide (netns_exec.hide) */
	size_t nhide;
	char *const *argv;            /* the command, NULL-terminated */
	uint64_t t0_ns;               /* CLOCK_MONOTONIC when `sluice run` started */
	/* the tap backends (ignored by netns) */
	enum run_backend backend;     /* zero: netns */
	const char *vm_kernel;        /* uncompressed ELF vmlinux (sandbox.qemu.kernel) */
	const char *vm_initrd;        /* the image's initramfs (sandbox.qemu.initrd), to which the CA is appended */
	int vm_kvm;                   /* sandbox.qemu.accel is kvm: used only when qemu_kvm_usable() (qemu) */
	unsigned vm_memory_mib;       /* guest memory; 0: 256 */
	const char *vm_binary;        /* the monitor, absolute; NULL: qemu-system-x86_64 / firecracker from PATH */
};

/*
 * Runs <o->argv> in a fresh sandbox of <o->backend> and returns what `sluice
 * run` exits with: the command's status (128+N when signal N killed it), or
 * 1 when the launcher failed (message on stderr).  Teardown (registration,
 * nft table, veth or tap, namespace, VM directory, lock file) runs on every
 * path.  netns: SIGINT, SIGTERM and SIGHUP are forwarded to the command; a
 * second one, or RUN_GRACE_MS without the command ending, kills the sandbox.
 * qemu and firecracker: the status is the last "SLUICE_EXIT n" the guest
 * printed on its console (1 with a message when there is none); the console
 * is passed on to stdout without it; a signal stops the VM (SIGTERM to the
 * monitor, SIGKILL after RUN_GRACE_MS or at a second signal) and, without a
 * status from the guest, 128+N is returned.  Needs root.
 */
int run_sandbox(const struct run_opts *o);

/*
 * The workload's environment: PATH, HOME (/workspace with a workspace, else
 * /tmp), TERM and LANG (from ours when set and sane; LANG defaults to
 * C.UTF-8), the CA variables (SSL_CERT_FILE, CURL_CA_BUNDLE,
 * REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO, PIP_CERT,
 * npm_config_cafile) naming the bundle inside, then <extra> in order; a
 * later entry replaces an earlier one of the same name.  Stores xmalloc'd
 * strings and a NULL in <envp> (<max> slots): free with run_env_free.
 * Returns the count, or SLUICE_EINVAL for an <extra> entry that is not
 * NAME=VALUE with a valid name (run_env_name_valid) or is over
 * RUN_ENV_ENTRY_MAX, or SLUICE_ETOOBIG.
 */
int run_env_make(const char *const *extra, size_t nextra, int workspace, char **envp, size_t max);

/*
 * Opens the --workspace directory <path> (O_PATH | O_DIRECTORY, close-on-exec) and refuses it when it is,
 * contains, or is inside any of <hidden> (the CA directory, the audit file, the admin socket, file: secrets;
 * NULL entries skipped; paths that do not exist yet count by the directory they would be made in), comparing
 * resolved paths and device/inode up every parent (run_workspace.c says how far).  0 with *<fd> (owned by
 * the caller: the descriptor netns_spawn binds), or SLUICE_EINVAL with <err> and *<fd> -1.
 */
int run_workspace_open(const char *path, const char *const *hidden, size_t nhidden, int *fd, char *err,
                       size_t errlen);
void run_env_free(char **envp);

/* 1 if <name> (<len> bytes) is [A-Za-z_][A-Za-z0-9_]*, 1..255 bytes. */
int run_env_name_valid(const char *name, size_t len);

/*
 * Parses the JSON documents bubblewrap writes on --json-status-fd, as read
 * so far (<buf>, NUL-terminated): sets *<child_pid> and *<exit_code> when
 * their keys appear (values 1..INT32_MAX and 0..255), leaves them else.
 */
void run_status_parse(const char *buf, pid_t *child_pid, int *exit_code);

#endif
