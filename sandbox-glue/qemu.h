/*
 * sandbox-glue/qemu.h - the qemu backend: a QEMU -M microvm guest on a tap device.
 *
 * The guest boots an uncompressed ELF kernel (PVH, no firmware) and an initramfs built by
 * scripts/vm-image.sh, whose /init is sandbox-glue/vm-init.sh.  Everything per run reaches the guest
 * in two ways:
 *   - the kernel command line: eth0's addresses and gateways (the gateway is also its DNS server), the
 *     placeholders to export (sluice.env.NAME=VALUE) and the command (sluice.cmd=base64 of its argv
 *     joined by NUL);
 *   - a second cpio archive appended to the image's initrd.gz (qemu_initrd_compose), holding the CA
 *     the guest must trust as /sluice/ca.pem.
 * The guest prints "SLUICE_EXIT <status>" on its serial console and powers off.
 *
 * Nothing here runs QEMU: qemu_argv_build() writes the argument vector, the launcher executes it
 * (inside the sandbox's network namespace, where the tap lives).
 */
#ifndef SLUICE_SANDBOX_QEMU_H
#define SLUICE_SANDBOX_QEMU_H

#include <stddef.h>
#include <stdint.h>

#include "sandbox-glue/sandbox.h"

#define QEMU_BINARY "qemu-system-x86_64"
#define QEMU_ARGV_MAX 48        /* entries qemu_argv_build() may need, the final NULL included */
#define QEMU_STORE_MIN 4096     /* a store this big always holds the strings of a valid qemu_vm */
#define QEMU_APPEND_MAX 1792    /* our -append; the x86 kernel takes 2048 and QEMU may add its own */
#define QEMU_ENV_VALUE_MAX 256  /* one placeholder value */
#define QEMU_CA_MAX (1u << 20)  /* the CA PEM we put into the guest */
#define QEMU_MEMORY_MIN 64      /* MiB */
#define QEMU_MEMORY_MAX 65536   /* MiB */
#define QEMU_GUEST_STATUS_FAILED 125 /* SLUICE_EXIT status of a guest whose /init failed before the command */

enum qemu_accel {
	QEMU_ACCEL_TCG = 0,
	QEMU_ACCEL_KVM = 1,
};

struct qemu_vm {
	const char *binary;                  /* NULL: QEMU_BINARY (looked up in PATH) */
	const char *kernel;                  /* uncompressed ELF vmlinux (PVH) */
	const char *initrd;                  /* the per-run initrd (qemu_initrd_compose's output) */
	enum qemu_accel accel;               /* what to use; pick KVM only when qemu_kvm_usable() said so */
	unsigned memory_mib;                 /* QEMU_MEMORY_MIN..QEMU_MEMORY_MAX */
	unsigned tsc_khz;                    /* tsc_early_khz= (see qemu_host_khz); 0 leaves it out */
	const char *tap;                     /* the tap's ifname, 1..SANDBOX_IFNAME_MAX-1 of [A-Za-z0-9_.-] */
	int tap_fd;                          /* > 2: QEMU inherits the tap open on this fd (-netdev tap,fd=N), so it
	                                        needs no access to /dev/net/tun; else it opens <tap> by name */
	uint8_t mac[6];                      /* the guest's MAC (qemu_mac_derive) */
	const struct sandbox_net *net;       /* guest side sbx_v4/sbx_v6, gateways host_v4/host_v6 ("" = no v6) */
	const char *serial_log;              /* NULL: -serial stdio; else the console goes to this file */
	const char *const *env;              /* NULL-terminated "NAME=VALUE" placeholders, or NULL */
	const char *const *cmd;              /* NULL-terminated argv of the command, at least one word */
};

/*
 * Writes QEMU's argument vector for <vm> into <argv> (at most <max> entries, NULL-terminated), its
 * strings into <store> (<storecap> bytes; the argv entries point into it).  Returns the number of
 * arguments (argv[n] == NULL), SLUICE_EINVAL for an invalid <vm> (a missing path, a bad tap name or
 * address, a placeholder name outside [A-Z_][A-Z0-9_]* or one the guest's /init owns, a value with
 * blanks, quotes or control characters, an empty command), or SLUICE_ETOOBIG when the kernel command
 * line would exceed QEMU_APPEND_MAX or argv/store are too small.  Nothing is allocated.
 */
int qemu_argv_build(const struct qemu_vm *vm, char **argv, size_t max, char *store, size_t storecap);

/*
 * Writes what vm-init.sh reads from the kernel command line, without a leading blank:
 * "sluice.ip4=A/30 sluice.gw4=G [sluice.ip6=A6/126 sluice.gw6=G6] [sluice.env.NAME=VALUE ...]
 * sluice.cmd=BASE64" into <buf> (<cap> bytes, NUL-terminated), from <net> (guest side sbx_v4/sbx_v6, gateways
 * host_v4/host_v6; "" sbx_v6 = no IPv6), <env> (NULL-terminated "NAME=VALUE", or NULL) and <cmd>
 * (NULL-terminated, at least one non-empty word).  The same words qemu_argv_build puts into -append: the
 * firecracker backend uses this for its boot_args.  Returns the length, SLUICE_EINVAL (as qemu_argv_build) or
 * SLUICE_ETOOBIG (over QEMU_APPEND_MAX or <cap>).
 */
int qemu_guest_args(const struct sandbox_net *net, const char *const *env, const char *const *cmd, char *buf,
                    size_t cap);

/*
 * 1 when "NAME=VALUE" <kv> can be a placeholder on the kernel command line: NAME in [A-Z_][A-Z0-9_]* and not
 * one the guest's /init owns (PATH, HOME, the CA variables, LD_*, proxies, ...), VALUE at most
 * QEMU_ENV_VALUE_MAX printable ASCII bytes without blanks, quotes or backslashes.  0 otherwise.
 */
int qemu_env_valid(const char *kv);

/*
 * Writes a cpio archive (newc, uncompressed) holding the directory "sluice" and the file
 * "sluice/ca.pem", a copy of <ca_pem_path> (at most QEMU_CA_MAX bytes), to <out_path> (created 0600,
 * replaced if it exists).  Returns 0, SLUICE_ENOENT, SLUICE_ETOOBIG or SLUICE_EIO.
 */
int qemu_ca_archive(const char *ca_pem_path, const char *out_path);

/*
 * Writes the per-run initrd <out_path> (0600, replaced): the image's <image_initrd> (initrd.gz),
 * zero padding to a multiple of 4 bytes (the kernel skips it between archives and wants an
 * uncompressed cpio 4-aligned), then the CA archive of qemu_ca_archive().  Returns 0 or as above.
 */
int qemu_initrd_compose(const char *image_initrd, const char *ca_pem_path, const char *out_path);

/*
 * 1 when KVM can run a guest: /dev/kvm opens, speaks API version 12, and a one-instruction guest
 * (hlt) runs to its KVM_EXIT_HLT.  0 otherwise.  Even then a full kernel may not boot (a nested host
 * can pass this probe), which is why the backend uses KVM only when the configuration asks for it.
 */
int qemu_kvm_usable(void);

/*
 * Reads the host's TSC frequency for tsc_early_khz from <cpuinfo_path> (NULL: /proc/cpuinfo): the
 * first "cpu MHz" line, times 1000.  Returns 0 and sets <khz>, SLUICE_ENOENT or SLUICE_EPARSE.
 */
int qemu_host_khz(const char *cpuinfo_path, unsigned *khz);

/* Sets <mac> to a locally administered unicast address derived from the sandbox id <id> (02:5c:...). */
void qemu_mac_derive(const char *id, uint8_t mac[6]);

#endif
