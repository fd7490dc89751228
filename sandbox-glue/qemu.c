/*
 * sandbox-glue/qemu.c - the qemu backend's command line, CA archive and KVM probe (see qemu.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/b64.h"
#include "common/sluice.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/qemu.h"

#define CPIO_HEADER_LEN 110       /* "070701" and 13 fields of 8 hex digits */
#define CPUINFO_MAX (1u << 20)    /* we read at most this much of /proc/cpuinfo */
#define COPY_CHUNK 65536

/* --- the argument vector --------------------------------------------------------------------------------- */

struct argb {
	char **argv;
	size_t max, argc;
	char *store;
	size_t cap, used;
	int err;
};

static void
arg_add(struct argb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
arg_add(struct argb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err != 0)
		return;
	if (b->argc + 1 >= b->max || b->used >= b->cap) {
		b->err = SLUICE_ETOOBIG;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(b->store + b->used, b->cap - b->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->used) {
		b->err = SLUICE_ETOOBIG;
		return;
	}
	b->argv[b->argc++] = b->store + b->used;
	b->argv[b->argc] = NULL;
	b->used += (size_t)n + 1;
}

/* a bounded string builder for the kernel command line */
struct line {
	char buf[QEMU_APPEND_MAX + 1];
	size_t len;
	int err;
};

static void
line_add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->err != 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(l->buf) - l->len) {
		l->err = SLUICE_ETOOBIG;
		l->buf[l->len] = '\0';
		return;
	}
	l->len += (size_t)n;
}

/* appends base64 of <p, n> (standard alphabet, padded) */
static void
line_base64(struct line *l, const unsigned char *p, size_t n)
{
	if (l->err != 0)
		return;
	if (B64_ENCODED_LEN(n) >= sizeof(l->buf) - l->len) {
		l->err = SLUICE_ETOOBIG;
		return;
	}
	l->len += b64_encode(l->buf + l->len, p, n);
	l->buf[l->len] = '\0';
}

static int
tap_valid(const char *s)
{
	size_t i, n;

	if (s == NULL || (n = strlen(s)) == 0 || n >= SANDBOX_IFNAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

static int
addr_valid(int af, const char *s)
{
	unsigned char tmp[sizeof(struct in6_addr)];

	return s != NULL && inet_pton(af, s, tmp) == 1;
}

/*
 * Placeholder names the guest's /init sets itself, or that would change how every program in the
 * guest runs: a policy cannot name them.
 */
static int
env_name_reserved(const char *name, size_t n)
{
	static const char *const reserved[] = {
		"PATH", "HOME", "SHELL", "IFS", "ENV", "PS4", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
		"REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "NODE_OPTIONS", "GIT_SSL_CAINFO", "PIP_CERT",
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
	};
	size_t i;

	if (n >= 3 && memcmp(name, "LD_", 3) == 0)
		return 1;
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strlen(reserved[i]) == n && memcmp(reserved[i], name, n) == 0)
			return 1;
	return 0;
}

/* "NAME=VALUE": NAME in [A-Z_][A-Z0-9_]*, not reserved; VALUE printable ASCII without blanks, quotes or '\' */
int
qemu_env_valid(const char *kv)
{
	const char *eq = kv != NULL ? strchr(kv, '=') : NULL;
	size_t i, n;

	if (eq == NULL || eq == kv || (kv[0] >= '0' && kv[0] <= '9'))
		return 0;
	n = (size_t)(eq - kv);
	for (i = 0; i < n; i++)
		if (!((kv[i] >= 'A' && kv[i] <= 'Z') || (kv[i] >= '0' && kv[i] <= '9') || kv[i] == '_'))
			return 0;
	if (env_name_reserved(kv, n))
		return 0;
	if (strlen(eq + 1) > QEMU_ENV_VALUE_MAX)
		return 0;
	for (i = 1; eq[i] != '\0'; i++) {
		unsigned char c = (unsigned char)eq[i];

		if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\')
			return 0;
	}
	return 1;
}

/* what vm-init.sh reads, each word after a blank */
static int
guest_words(const struct sandbox_net *net, const char *const *env, const char *const *cmd, struct line *l)
{
	unsigned char raw[QEMU_APPEND_MAX];
	size_t i, rawlen = 0;

	line_add(l, " sluice.ip4=%s/30 sluice.gw4=%s", net->sbx_v4, net->host_v4);
	if (net->sbx_v6[0] != '\0')
		line_add(l, " sluice.ip6=%s/126 sluice.gw6=%s", net->sbx_v6, net->host_v6);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		line_add(l, " sluice.env.%s", env[i]);
	for (i = 0; cmd[i] != NULL; i++) {
		size_t n = strlen(cmd[i]) + (i > 0);

		if (n > sizeof(raw) - rawlen)
			return SLUICE_ETOOBIG;
		if (i > 0)
			raw[rawlen++] = '\0';
		memcpy(raw + rawlen, cmd[i], n - (i > 0));
		rawlen += n - (i > 0);
	}
	line_add(l, " sluice.cmd=");
	line_base64(l, raw, rawlen);
	return l->err;
}

/* the kernel command line: console and clock first, then what vm-init.sh reads */
static int
append_build(const struct qemu_vm *vm, struct line *l)
{
	line_add(l, "console=ttyS0 reboot=k panic=-1 quiet");
	if (vm->tsc_khz != 0)
		line_add(l, " tsc_early_khz=%u", vm->tsc_khz);
	return guest_words(vm->net, vm->env, vm->cmd, l);
}

/* the guest's addresses, placeholders and command */
static int
guest_valid(const struct sandbox_net *net, const char *const *env, const char *const *cmd)
{
	size_t i;

	if (net == NULL || !addr_valid(AF_INET, net->sbx_v4) || !addr_valid(AF_INET, net->host_v4))
		return 0;
	if ((net->sbx_v6[0] != '\0' || net->host_v6[0] != '\0') &&
	    (!addr_valid(AF_INET6, net->sbx_v6) || !addr_valid(AF_INET6, net->host_v6)))
		return 0;
	for (i = 0; env != NULL && env[i] != NULL; i++)
		if (!qemu_env_valid(env[i]))
			return 0;
	return cmd != NULL && cmd[0] != NULL && cmd[0][0] != '\0';
}

static int
vm_valid(const struct qemu_vm *vm)
{
	if (vm->kernel == NULL || vm->kernel[0] == '\0' || vm->initrd == NULL || vm->initrd[0] == '\0')
		return 0;
	if (vm->binary != NULL && vm->binary[0] == '\0')
		return 0;
	if (vm->serial_log != NULL && vm->serial_log[0] == '\0')
		return 0;
	if (vm->accel != QEMU_ACCEL_TCG && vm->accel != QEMU_ACCEL_KVM)
		return 0;
	if (vm->memory_mib < QEMU_MEMORY_MIN || vm->memory_mib > QEMU_MEMORY_MAX || !tap_valid(vm->tap))
		return 0;
	if (vm->mac[0] & 1)  /* multicast */
		return 0;
	return guest_valid(vm->net, vm->env, vm->cmd);
}

int
qemu_guest_args(const struct sandbox_net *net, const char *const *env, const char *const *cmd, char *buf,
                size_t cap)
{
	struct line *l;
	int ret;

	if (cap > 0)
		buf[0] = '\0';
	if (!guest_valid(net, env, cmd))
		return SLUICE_EINVAL;
	l = xcalloc(1, sizeof(*l));
	ret = guest_words(net, env, cmd, l);
	if (ret == 0 && l->len > cap)  /* the leading blank is not copied: l->len - 1 bytes and the NUL */
		ret = SLUICE_ETOOBIG;
	if (ret == 0) {
		memcpy(buf, l->buf + 1, l->len);
		ret = (int)(l->len - 1);
	}
	free(l);
	return ret;
}

/* QEMU's option parser splits on ','; a literal comma in a value is written twice */
static int
comma_escape(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; *s != '\0'; s++) {
		if (o + 2 >= cap)
			return SLUICE_ETOOBIG;
		out[o++] = *s;
		if (*s == ',')
			out[o++] = ',';
	}
	out[o] = '\0';
	return 0;
}

int
qemu_argv_build(const struct qemu_vm *vm, char **argv, size_t max, char *store, size_t storecap)
{
	struct argb b = { argv, max, 0, store, storecap, 0, 0 };
	struct line *l;
	const uint8_t *m = vm->mac;
	int ret;

	if (max == 0)
		return SLUICE_ETOOBIG;
	argv[0] = NULL;
	if (storecap == 0)
		return SLUICE_ETOOBIG;
	if (!vm_valid(vm))
		return SLUICE_EINVAL;
	l = xcalloc(1, sizeof(*l));
	if ((ret = append_build(vm, l)) != 0)
		goto out;

	arg_add(&b, "%s", vm->binary != NULL ? vm->binary : QEMU_BINARY);
	/*
	 * microvm: no PCI, no firmware, virtio-mmio devices described by ACPI (whose power-off ends the
	 * run).  No option ROMs and no legacy PIC/PIT: nothing the guest needs, less for it to poke at.
	 * The RTC stays: without it the guest's clock starts in 1970 and no certificate is valid yet.
	 */
	arg_add(&b, "-M");
	arg_add(&b, "microvm,x-option-roms=off,pit=off,pic=off");
	arg_add(&b, "-accel");
	arg_add(&b, "%s", vm->accel == QEMU_ACCEL_KVM ? "kvm" : "tcg");
	arg_add(&b, "-cpu");
	arg_add(&b, "%s", vm->accel == QEMU_ACCEL_KVM ? "host" : "max");
	arg_add(&b, "-smp");
	arg_add(&b, "1");
	arg_add(&b, "-m");
	arg_add(&b, "%uM", vm->memory_mib);
	arg_add(&b, "-kernel");
	arg_add(&b, "%s", vm->kernel);
	arg_add(&b, "-initrd");
	arg_add(&b, "%s", vm->initrd);
	arg_add(&b, "-append");
	arg_add(&b, "%s", l->buf);
	arg_add(&b, "-netdev");
	if (vm->tap_fd > 2)
		arg_add(&b, "tap,id=n0,fd=%d", vm->tap_fd);
	else
		arg_add(&b, "tap,id=n0,ifname=%s,script=no,downscript=no", vm->tap);
	arg_add(&b, "-device");
	arg_add(&b, "virtio-net-device,netdev=n0,mac=%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
	        m[5]);
	arg_add(&b, "-nodefaults");
	arg_add(&b, "-no-user-config");
	arg_add(&b, "-nographic");
	arg_add(&b, "-no-reboot");
	/* the guest is hostile: a QEMU escape should at least not get exec, setuid or the obsolete calls */
	arg_add(&b, "-sandbox");
	arg_add(&b, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	if (vm->serial_log == NULL) {
		arg_add(&b, "-serial");
		arg_add(&b, "stdio");
	} else {
		char esc[2 * 4096 + 1];

		if (strlen(vm->serial_log) > 4096 || comma_escape(vm->serial_log, esc, sizeof(esc)) != 0) {
			ret = SLUICE_ETOOBIG;
			goto out;
		}
		arg_add(&b, "-chardev");
		arg_add(&b, "file,id=con0,path=%s", esc);
		arg_add(&b, "-serial");
		arg_add(&b, "chardev:con0");
	}
	ret = b.err != 0 ? b.err : (int)b.argc;
out:
	free(l);
	if (ret < 0)
		argv[0] = NULL;
	return ret;
}

/* --- the CA archive ------------------------------------------------------------------------------------------ */

static int
write_zeros(int fd, size_t n)
{
	static const char z[4];

	return n == 0 ? 0 : proc_write_all(fd, z, n);
}

/* one newc entry: header, name and NUL padded to 4, data padded to 4 */
static int
cpio_entry(int fd, unsigned ino, unsigned mode, unsigned nlink, const char *name, const void *data, size_t len)
{
	char h[CPIO_HEADER_LEN + 1];
	size_t namesize = strlen(name) + 1;
	int ret;

	snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode, 0u, 0u, nlink,
	         0u, (unsigned)len, 0u, 0u, 0u, 0u, (unsigned)namesize, 0u);
	if ((ret = proc_write_all(fd, h, CPIO_HEADER_LEN)) != 0 || (ret = proc_write_all(fd, name, namesize)) != 0 ||
	    (ret = write_zeros(fd, (4 - (CPIO_HEADER_LEN + namesize) % 4) % 4)) != 0)
		return ret;
	if (len > 0 && ((ret = proc_write_all(fd, data, len)) != 0 || (ret = write_zeros(fd, (4 - len % 4) % 4)) != 0))
		return ret;
	return 0;
}

/* reads the CA PEM: a regular file of at most QEMU_CA_MAX bytes, certificates only */
static int
ca_read(const char *path, char **out, size_t *outlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		ret = SLUICE_EIO;
		goto out;
	}
	if (st.st_size <= 0 || (unsigned long long)st.st_size > QEMU_CA_MAX) {
		ret = st.st_size <= 0 ? SLUICE_EINVAL : SLUICE_ETOOBIG;
		goto out;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	got = proc_read_upto(fd, buf, (size_t)st.st_size);
	if (got != (size_t)st.st_size) {
		ret = SLUICE_EIO;
		goto out;
	}
	buf[got] = '\0';
	/* the sandbox gets certificates: never a key, even if the caller mixed up two paths */
	if (memchr(buf, '\0', got) != NULL || strstr(buf, "-----BEGIN CERTIFICATE-----") == NULL ||
	    strstr(buf, "PRIVATE KEY") != NULL) {
		ret = SLUICE_EINVAL;
		goto out;
	}
	*out = buf;
	*outlen = got;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

static int
ca_cpio_write(int fd, const char *pem, size_t len)
{
	int ret;

	if ((ret = cpio_entry(fd, 1, 040755, 2, "sluice", NULL, 0)) != 0 ||
	    (ret = cpio_entry(fd, 2, 0100644, 1, "sluice/ca.pem", pem, len)) != 0)
		return ret;
	return cpio_entry(fd, 0, 0, 1, "TRAILER!!!", NULL, 0);
}

static int
out_open(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
}

int
qemu_ca_archive(const char *ca_pem_path, const char *out_path)
{
	char *pem = NULL;
	size_t len = 0;
	int fd, ret;

	if ((ret = ca_read(ca_pem_path, &pem, &len)) != 0)
		return ret;
	if ((fd = out_open(out_path)) == -1) {
		free(pem);
		return SLUICE_EIO;
	}
	ret = ca_cpio_write(fd, pem, len);
	if (close(fd) == -1 && ret == 0)
		ret = SLUICE_EIO;
	free(pem);
	return ret;
}

int
qemu_initrd_compose(const char *image_initrd, const char *ca_pem_path, const char *out_path)
{
	char *pem = NULL, *buf = NULL;
	size_t len = 0;
	unsigned long long total = 0;
	int in = -1, fd = -1, ret;

	if ((ret = ca_read(ca_pem_path, &pem, &len)) != 0)
		return ret;
	if ((in = open(image_initrd, O_RDONLY | O_CLOEXEC)) == -1) {
		ret = errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
		goto out;
	}
	if ((fd = out_open(out_path)) == -1) {
		ret = SLUICE_EIO;
		goto out;
	}
	buf = xmalloc(COPY_CHUNK);
	for (;;) {
		ssize_t r = read(in, buf, COPY_CHUNK);

		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			ret = SLUICE_EIO;
			goto out;
		}
		if (r == 0)
			break;
		if ((ret = proc_write_all(fd, buf, (size_t)r)) != 0)
			goto out;
		total += (unsigned long long)r;
	}
	if (total == 0) {
		ret = SLUICE_EINVAL;
		goto out;
	}
	if ((ret = write_zeros(fd, (size_t)((4 - total % 4) % 4))) != 0 || (ret = ca_cpio_write(fd, pem, len)) != 0)
		goto out;
	ret = close(fd) == -1 ? SLUICE_EIO : 0;
	fd = -1;
out:
	if (fd != -1)
		close(fd);
	if (in != -1)
		close(in);
	free(buf);
	free(pem);
	return ret;
}

/* --- host facts ------------------------------------------------------------------------------------------- */

/* real mode at 0x1000: the guest executes one hlt */
static int
kvm_probe(int kvm)
{
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run = MAP_FAILED;
	void *mem = MAP_FAILED;
	int vm = -1, vcpu = -1, ok = 0, runsz = 0;

	if ((vm = ioctl(kvm, KVM_CREATE_VM, 0)) == -1)
		goto out;
	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		goto out;
	((unsigned char *)mem)[0] = 0xf4;  /* hlt */
	memset(&region, 0, sizeof(region));
	region.guest_phys_addr = 0x1000;
	region.memory_size = 4096;
	region.userspace_addr = (uint64_t)(uintptr_t)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) == -1 || (vcpu = ioctl(vm, KVM_CREATE_VCPU, 0)) == -1)
		goto out;
	if ((runsz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0)
		goto out;
	run = mmap(NULL, (size_t)runsz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED || ioctl(vcpu, KVM_GET_SREGS, &sregs) == -1)
		goto out;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	memset(&regs, 0, sizeof(regs));
	regs.rip = 0x1000;
	regs.rflags = 2;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) == -1 || ioctl(vcpu, KVM_SET_REGS, &regs) == -1)
		goto out;
	ok = ioctl(vcpu, KVM_RUN, 0) == 0 && run->exit_reason == KVM_EXIT_HLT;
out:
	if (run != MAP_FAILED)
		munmap(run, (size_t)runsz);
	if (vcpu != -1)
		close(vcpu);
	if (mem != MAP_FAILED)
		munmap(mem, 4096);
	if (vm != -1)
		close(vm);
	return ok;
}

int
qemu_kvm_usable(void)
{
	int kvm, ok = 0;

	if ((kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1)
		return 0;
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) == KVM_API_VERSION)
		ok = kvm_probe(kvm);
	close(kvm);
	return ok;
}

int
qemu_host_khz(const char *cpuinfo_path, unsigned *khz)
{
	char *buf, *p, *end;
	size_t got = 0;
	unsigned long mhz, frac = 0;
	unsigned scale = 100;
	int fd, ret = SLUICE_EPARSE;

	if ((fd = open(cpuinfo_path != NULL ? cpuinfo_path : "/proc/cpuinfo", O_RDONLY | O_CLOEXEC)) == -1)
		return SLUICE_ENOENT;
	buf = xmalloc(CPUINFO_MAX + 1);
	got = proc_read_upto(fd, buf, CPUINFO_MAX);
	close(fd);
	buf[got] = '\0';
	for (p = buf; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p != NULL ? p + 1 : NULL) {
		if (strncmp(p, "cpu MHz", 7) != 0)
			continue;
		p += 7;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p++ != ':')
			break;
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		mhz = strtoul(p, &end, 10);
		if (errno != 0 || end == p || mhz == 0 || mhz > 100000)
			break;
		if (*end == '.')
			for (end++; *end >= '0' && *end <= '9'; end++, scale /= 10)
				if (scale > 0)
					frac += (unsigned long)(*end - '0') * scale;
		if (*end != '\n' && *end != '\0' && *end != ' ')
			break;
		*khz = (unsigned)(mhz * 1000 + frac);
		ret = 0;
		break;
	}
	free(buf);
	return ret;
}

void
qemu_mac_derive(const char *id, uint8_t mac[6])
{
	size_t i;

	mac[0] = 0x02;  /* locally administered, unicast */
	mac[1] = 0x5c;
	memset(mac + 2, 0, 4);
	/* stops at the first character that is not hex, so never reads past a short id's NUL */
	for (i = 0; id != NULL && i < 8; i++) {
		int v = sluice_hexval((unsigned char)id[i]);

		if (v < 0) {
			memset(mac + 2, 0, 4);
			return;
		}
		mac[2 + i / 2] = (uint8_t)(mac[2 + i / 2] | (i % 2 == 0 ? v << 4 : v));
	}
}
