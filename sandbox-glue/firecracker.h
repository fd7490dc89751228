/*
 * sandbox-glue/firecracker.h - the Firecracker backend: its --config-file
 * JSON, and a driver for its API socket (PUT /boot-source, /machine-config,
 * /network-interfaces/eth0, /actions InstanceStart).
 *
 * The VM boots a kernel and an initramfs (no drives) with one virtio-net
 * interface on the host tap that nftables wires to the gateway: the same
 * conventions as the qemu backend.  See docs/firecracker.md.
 *
 * The API socket is the Firecracker process's, so its answers are treated as
 * untrusted input: every response is parsed with named bounds and no answer
 * can make the driver assert, block past its deadline or overrun a buffer.
 */
#ifndef SLUICE_SANDBOX_FIRECRACKER_H
#define SLUICE_SANDBOX_FIRECRACKER_H

#include <stddef.h>

/*
 * The kernel command line every microVM backend starts from; the caller's
 * <boot_args> follow it after one space.
 */
#define FC_BOOT_ARGS_BASE "console=ttyS0 reboot=k panic=1"
/*
 * Firecracker's command-line capacity on x86_64 (arch layout CMDLINE_MAX_SIZE),
 * counting the terminating NUL.  Firecracker itself appends one
 * "virtio_mmio.device=4K@0x...:N" entry per MMIO device (here: the one network
 * interface), so the boot_args we send keep FC_CMDLINE_RESERVE bytes free for
 * it: at most FC_BOOT_ARGS_MAX bytes, base included.
 */
#define FC_CMDLINE_MAX 2048
#define FC_CMDLINE_RESERVE 64
#define FC_BOOT_ARGS_MAX (FC_CMDLINE_MAX - 1 - FC_CMDLINE_RESERVE)
#define FC_PATH_MAX 4096         /* kernel / initrd path length */
#define FC_VCPUS_MAX 32          /* Firecracker's vcpu_count limit */
#define FC_MEM_MAX_MIB (1u << 20) /* 1 TiB: a sanity bound, not Firecracker's */
#define FC_MAC_LEN 17            /* "02:5c:xx:xx:xx:xx" */

/* Bounds of an API response (named caps, STYLE.md section 5). */
#define FC_RESPONSE_HEAD_MAX 8192  /* status line plus headers */
#define FC_RESPONSE_HEADERS_MAX 64 /* header lines */
#define FC_RESPONSE_BODY_MAX 65536 /* Content-Length we accept */

/* The VM: all strings borrowed, NUL-terminated. */
struct fc_vm {
	const char *kernel;    /* kernel image path (uncompressed vmlinux ELF on x86_64); required */
	const char *initrd;    /* initramfs path; required (no drives: the root is the initramfs) */
	const char *boot_args; /* appended to FC_BOOT_ARGS_BASE; NULL or "" for none */
	unsigned vcpus;        /* 1..FC_VCPUS_MAX */
	unsigned mem_mib;      /* 1..FC_MEM_MAX_MIB */
	const char *tap;       /* host tap device (sandbox_net.host_if): 1..15 of [A-Za-z0-9_.-] */
	const char *guest_mac; /* "xx:xx:xx:xx:xx:xx" (hex, either case), or NULL to let Firecracker pick */
};

/*
 * Writes Firecracker's --config-file JSON for <vm> into <buf>/<cap>
 * (NUL-terminated, two-space indent, trailing newline): "boot-source"
 * {kernel_image_path, initrd_path, boot_args}, "drives": [], "machine-config"
 * {vcpu_count, mem_size_mib, smt: false}, "network-interfaces" [{iface_id
 * "eth0", guest_mac, host_dev_name}].  Returns the length written (without the
 * NUL), SLUICE_EINVAL for a field that fc_vm_check refuses, or SLUICE_ETOOBIG
 * when <cap> is too small (then <buf> holds "" when cap > 0).
 */
int fc_config_render(const struct fc_vm *vm, char *buf, size_t cap);

/*
 * Validates <vm>: required fields present, numbers in range, no control bytes
 * (< 0x20, 0x7f) and valid UTF-8 in the strings, a usable tap name and MAC,
 * and the full command line (base plus boot_args) no longer than
 * FC_BOOT_ARGS_MAX.  Returns 0 or SLUICE_EINVAL (SLUICE_ETOOBIG for an
 * over-long command line or path); *<why> (when not NULL) names the problem as
 * a static string.
 */
int fc_vm_check(const struct fc_vm *vm, const char **why);

/*
 * The full kernel command line for <vm> into <buf>/<cap>: FC_BOOT_ARGS_BASE,
 * then " " and vm->boot_args when given.  Returns its length, SLUICE_EINVAL
 * for control bytes, or SLUICE_ETOOBIG beyond FC_BOOT_ARGS_MAX or <cap>.
 */
int fc_boot_args_build(const struct fc_vm *vm, char *buf, size_t cap);

/*
 * A locally administered, unicast MAC for sandbox <id> (SANDBOX_ID_LEN hex):
 * "02:5c:" then the id's four bytes, into <mac> (NUL-terminated).  Returns 0
 * or SLUICE_EINVAL for an id that is not 8 hex characters.
 */
int fc_guest_mac(const char *id, char mac[FC_MAC_LEN + 1]);

/* One parsed API response; offsets index the buffer given to fc_response_parse. */
struct fc_response {
	int status;       /* 100..599 */
	size_t body_off;  /* where the body starts */
	size_t body_len;  /* Content-Length (0 for 204 or when absent on 204) */
	int close;        /* "Connection: close": the next request needs a new connection */
};

/*
 * Parses one HTTP/1.x response (status line, headers, body) at <buf>/<len>.
 * Strict: CRLF line ends only (a bare LF is an error), no obs-fold, header
 * names are tokens, values have no control bytes, Transfer-Encoding is
 * refused, Content-Length must be decimal, appear at most once and be at most
 * FC_RESPONSE_BODY_MAX, and is required unless the status is 204 (which must
 * have no body); 1xx answers are refused (Firecracker never sends them).
 * Returns the bytes consumed (head plus body), -2 when more bytes are needed
 * (never once the head exceeds FC_RESPONSE_HEAD_MAX), or -1 for an error, with
 * *<err> (when not NULL) naming it as a static string.  Fills <r> on success.
 */
int fc_response_parse(const char *buf, size_t len, struct fc_response *r, const char **err);

/*
 * Copies the "fault_message" string of Firecracker's JSON error body
 * <body>/<len> into <out>/<cap> (NUL-terminated, truncated to fit, control
 * bytes and non-ASCII replaced by '?').  Returns 0, or SLUICE_EPARSE when the
 * body is not a JSON object with a string fault_message (then <out> holds the
 * body's first bytes, sanitised the same way, so the operator still sees
 * something).
 */
int fc_response_fault(const char *body, size_t len, char *out, size_t cap);

/*
 * Boots <vm> through the Firecracker API socket at <sock_path>: one
 * connection (re-opened only if Firecracker answers "Connection: close"),
 * requests sent one after another, each awaiting its answer:
 * PUT /boot-source, PUT /machine-config, PUT /network-interfaces/eth0, then
 * PUT /actions {"action_type": "InstanceStart"}.  Every answer must be 2xx;
 * the first that is not stops the sequence.  <timeout_ms> (> 0) bounds the
 * whole sequence (connect, writes and reads, polled).
 * Returns 0, or: SLUICE_EINVAL (vm refused by fc_vm_check, or a bad
 * <sock_path>/<timeout_ms>), SLUICE_EIO (socket, connect or write failed),
 * SLUICE_ETIMEDOUT, SLUICE_ECLOSED (the socket closed before a whole answer),
 * SLUICE_EPARSE (an answer fc_response_parse refused), or SLUICE_EDENIED
 * (Firecracker answered a non-2xx status).  On any failure <err>/<errcap>
 * (when errcap > 0) holds a one-line reason naming the request, e.g.
 * "PUT /machine-config: 400: <fault_message>".
 */
int fc_api_boot(const char *sock_path, const struct fc_vm *vm, int timeout_ms, char *err, size_t errcap);

#endif
