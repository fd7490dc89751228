/*
 * tests/unit/sandbox/test_qemu.c - the qemu backend (qemu.c): argv golden files, refusals, the CA cpio
 * parsed back, the composed initrd, cpuinfo parsing, MAC derivation.
 *
 * With arguments it is also the helper of tests/integration/test_qemu_boot.sh:
 *   test_qemu --argv --kernel K --initrd I --tap T --sbx4 A --host4 G [--sbx6 A6 --host6 G6] [--id HEX]
 *             [--memory MIB] [--log FILE] [--kvm] [--env NAME=VALUE]... -- CMD...
 *       prints QEMU's argv, one argument per line (tsc_early_khz from /proc/cpuinfo)
 *   test_qemu --compose IMAGE_INITRD CA_PEM OUT      writes the per-run initrd
 *   test_qemu --kvm-usable                           prints 0 or 1
 * Set SLUICE_GOLDEN_UPDATE=1 to rewrite the golden files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sluice.h"
#include "sandbox-glue/qemu.h"

#define STORE_CAP 8192
#define FILE_MAX (1u << 21)

static const char *cmd_default[] = { "sh", "-c", "curl -sS https://api.example.test/ && echo \"$GITHUB_TOKEN\"",
	                             NULL };
static const char *env_default[] = { "GITHUB_TOKEN=sluice-ph-0a1b2c3d-GITHUB_TOKEN", "OPENAI_API_KEY=ph_2", NULL };

static char tmpdir[64];

static void
net_fill(struct sandbox_net *n, int v6)
{
	memset(n, 0, sizeof(*n));
	assert_int_equal(sandbox_net_plan(n, "0a1b2c3d", 1, 15001, 15353), 0);
	if (!v6) {
		n->sbx_v6[0] = '\0';
		n->host_v6[0] = '\0';
	}
}

static void
vm_fill(struct qemu_vm *vm, const struct sandbox_net *n)
{
	memset(vm, 0, sizeof(*vm));
	vm->kernel = "/var/lib/sluice/vm/vmlinux";
	vm->initrd = "/run/sluice/0a1b2c3d/initrd";
	vm->accel = QEMU_ACCEL_TCG;
	vm->memory_mib = 256;
	vm->tsc_khz = 2096014;
	vm->tap = "slh0a1b2c3d";
	qemu_mac_derive("0a1b2c3d", vm->mac);
	vm->net = n;
	vm->env = env_default;
	vm->cmd = cmd_default;
}

/* the argv, one argument per line, as the golden files hold it */
static char *
argv_render(char **argv, int argc)
{
	size_t len = 0, o = 0;
	char *s;
	int i;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = malloc(len + 1);
	assert_non_null(s);
	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		memcpy(s + o, argv[i], n);
		o += n;
		s[o++] = '\n';
	}
	s[o] = '\0';
	return s;
}

static char *
file_slurp(const char *path, size_t *lenp)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (f == NULL)
		return NULL;
	buf = malloc(FILE_MAX + 1);
	assert_non_null(buf);
	n = fread(buf, 1, FILE_MAX, f);
	fclose(f);
	buf[n] = '\0';
	if (lenp != NULL)
		*lenp = n;
	return buf;
}

static void
file_write(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void
golden_check(const char *name, const struct qemu_vm *vm)
{
	char *argv[QEMU_ARGV_MAX], store[STORE_CAP], path[512];
	char *got, *want;
	int argc;

	argc = qemu_argv_build(vm, argv, QEMU_ARGV_MAX, store, sizeof(store));
	assert_true(argc > 0);
	assert_null(argv[argc]);
	got = argv_render(argv, argc);
	snprintf(path, sizeof(path), "%s/%s", SLUICE_GOLDEN_DIR, name);
	if (getenv("SLUICE_GOLDEN_UPDATE") != NULL)
		file_write(path, got, strlen(got));
	want = file_slurp(path, NULL);
	assert_non_null(want);
	assert_string_equal(got, want);
	free(got);
	free(want);
}

static void
test_golden_tcg(void **state)
{
	struct sandbox_net n;
	struct qemu_vm vm;

	(void)state;
	net_fill(&n, 1);
	vm_fill(&vm, &n);
	golden_check("qemu_tcg.txt", &vm);
}

static void
test_golden_kvm_log(void **state)
{
	static const char *cmd[] = { "/bin/true", "", "two words", NULL };
	struct sandbox_net n;
	struct qemu_vm vm;

	(void)state;
	net_fill(&n, 0);
	vm_fill(&vm, &n);
	vm.accel = QEMU_ACCEL_KVM;
	vm.binary = "/usr/bin/qemu-system-x86_64";
	vm.memory_mib = 512;
	vm.tsc_khz = 0;
	vm.serial_log = "/run/sluice/a,b/console.log";  /* the comma is doubled for QEMU */
	vm.env = NULL;
	vm.cmd = cmd;
	golden_check("qemu_kvm_log.txt", &vm);
}

/* the base64 of the command decodes to the argv joined by NUL (checked here against a fixed string) */
static void
test_cmd_encoding(void **state)
{
	static const char *cmd[] = { "a", "", "bc", NULL };
	char *argv[QEMU_ARGV_MAX], store[STORE_CAP];
	struct sandbox_net n;
	struct qemu_vm vm;
	const char *app = NULL;
	int argc, i;

	(void)state;
	net_fill(&n, 0);
	vm_fill(&vm, &n);
	vm.cmd = cmd;
	argc = qemu_argv_build(&vm, argv, QEMU_ARGV_MAX, store, sizeof(store));
	assert_true(argc > 0);
	for (i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], "-append") == 0)
			app = argv[i + 1];
	assert_non_null(app);
	/* "a\0\0bc" = 61 00 00 62 63 -> YQAAYmM= */
	assert_non_null(strstr(app, " sluice.cmd=YQAAYmM="));
	assert_null(strstr(app, "sluice.ip6"));
	assert_non_null(strstr(app, "sluice.ip4=10.200.0.6/30 sluice.gw4=10.200.0.5 "));
}

static int
build(const struct qemu_vm *vm)
{
	char *argv[QEMU_ARGV_MAX], store[STORE_CAP];

	return qemu_argv_build(vm, argv, QEMU_ARGV_MAX, store, sizeof(store));
}

static void
test_refusals(void **state)
{
	static const char *bad_env[] = {
		"lower=x", "1ABC=x", "A-B=x", "=x", "NOEQUALS", "PATH=/tmp", "LD_PRELOAD=/x.so", "SSL_CERT_FILE=/x",
		"CURL_CA_BUNDLE=/x", "HOME=/x", "TOKEN=a b", "TOKEN=a\"b", "TOKEN=a'b", "TOKEN=a\\b", "TOKEN=a\nb",
		"TOKEN=\x7f", "TOKEN=\xc3\xa9",
	};
	static const char *empty_cmd[] = { NULL };
	static const char *blank_cmd[] = { "", NULL };
	struct sandbox_net n, n2;
	struct qemu_vm vm;
	const char *env1[2] = { NULL, NULL };
	char bigval[QEMU_ENV_VALUE_MAX + 8], *bigcmd;
	const char *cmdv[2] = { NULL, NULL };
	size_t i;

	(void)state;
	net_fill(&n, 1);
	for (i = 0; i < sizeof(bad_env) / sizeof(bad_env[0]); i++) {
		vm_fill(&vm, &n);
		env1[0] = bad_env[i];
		vm.env = env1;
		assert_int_equal(build(&vm), SLUICE_EINVAL);
	}
	vm_fill(&vm, &n);
	env1[0] = "TOKEN=";  /* an empty value is fine */
	vm.env = env1;
	assert_true(build(&vm) > 0);

	memset(bigval, 'x', sizeof(bigval));
	memcpy(bigval, "TOKEN=", 6);
	bigval[6 + QEMU_ENV_VALUE_MAX + 1] = '\0';
	env1[0] = bigval;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	bigval[6 + QEMU_ENV_VALUE_MAX] = '\0';
	assert_true(build(&vm) > 0);

	vm_fill(&vm, &n);
	vm.cmd = empty_cmd;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm.cmd = blank_cmd;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm.cmd = NULL;
	assert_int_equal(build(&vm), SLUICE_EINVAL);

	/* a command too long for the kernel command line */
	vm_fill(&vm, &n);
	bigcmd = malloc(QEMU_APPEND_MAX);
	assert_non_null(bigcmd);
	memset(bigcmd, 'c', QEMU_APPEND_MAX - 1);
	bigcmd[QEMU_APPEND_MAX - 1] = '\0';
	cmdv[0] = bigcmd;
	vm.cmd = cmdv;
	assert_int_equal(build(&vm), SLUICE_ETOOBIG);
	bigcmd[1000] = '\0';  /* 1336 base64 characters: still fits */
	assert_true(build(&vm) > 0);
	bigcmd[1000] = 'c';
	bigcmd[1300] = '\0';  /* 1736: not with the rest of the line */
	assert_int_equal(build(&vm), SLUICE_ETOOBIG);
	free(bigcmd);

	vm_fill(&vm, &n);
	vm.tap = "";
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm.tap = "tap,script=/x";
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm.tap = "0123456789abcdef";  /* 16: no room for IFNAMSIZ's NUL */
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm.tap = NULL;
	assert_int_equal(build(&vm), SLUICE_EINVAL);

	vm_fill(&vm, &n);
	vm.memory_mib = QEMU_MEMORY_MIN - 1;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm.memory_mib = QEMU_MEMORY_MAX + 1;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm_fill(&vm, &n);
	vm.kernel = NULL;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm_fill(&vm, &n);
	vm.initrd = "";
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm_fill(&vm, &n);
	vm.serial_log = "";
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm_fill(&vm, &n);
	vm.accel = (enum qemu_accel)7;
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm_fill(&vm, &n);
	vm.mac[0] = 0x03;  /* multicast */
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	vm_fill(&vm, &n);
	vm.net = NULL;
	assert_int_equal(build(&vm), SLUICE_EINVAL);

	/* addresses are checked: nothing else can ride along on the command line */
	n2 = n;
	memcpy(n2.sbx_v4, "10.0.0.1 x=y", 13);
	vm_fill(&vm, &n2);
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	n2 = n;
	memcpy(n2.host_v6, "fd00::zz", 9);
	vm_fill(&vm, &n2);
	assert_int_equal(build(&vm), SLUICE_EINVAL);
	n2 = n;
	n2.host_v6[0] = '\0';  /* half of a v6 plan */
	vm_fill(&vm, &n2);
	assert_int_equal(build(&vm), SLUICE_EINVAL);
}

static void
test_small_buffers(void **state)
{
	char *argv[QEMU_ARGV_MAX], store[STORE_CAP];
	struct sandbox_net n;
	struct qemu_vm vm;
	int argc, ret;
	size_t cap;

	(void)state;
	net_fill(&n, 1);
	vm_fill(&vm, &n);
	argc = qemu_argv_build(&vm, argv, QEMU_ARGV_MAX, store, sizeof(store));
	assert_true(argc > 0 && argc + 1 <= QEMU_ARGV_MAX);
	/* exactly argc + 1 entries is enough, one fewer is not */
	assert_int_equal(qemu_argv_build(&vm, argv, (size_t)argc + 1, store, sizeof(store)), argc);
	assert_int_equal(qemu_argv_build(&vm, argv, (size_t)argc, store, sizeof(store)), SLUICE_ETOOBIG);
	assert_null(argv[0]);
	assert_int_equal(qemu_argv_build(&vm, argv, 0, store, sizeof(store)), SLUICE_ETOOBIG);
	/* a store of every size up to the one that fits: an error, never an overflow (ASan watches) */
	for (cap = 1; cap < sizeof(store); cap++) {
		char *small = malloc(cap);

		assert_non_null(small);
		ret = qemu_argv_build(&vm, argv, QEMU_ARGV_MAX, small, cap);
		free(small);
		if (ret > 0)
			break;
		assert_int_equal(ret, SLUICE_ETOOBIG);
	}
	assert_int_equal(ret, argc);
	assert_true(cap <= QEMU_STORE_MIN);
}

/* --- cpio --------------------------------------------------------------------------------------------------- */

static unsigned
hex8(const char *p)
{
	char tmp[9], *end;
	unsigned long v;

	memcpy(tmp, p, 8);
	tmp[8] = '\0';
	v = strtoul(tmp, &end, 16);
	assert_true(end == tmp + 8);
	return (unsigned)v;
}

struct entry {
	char name[64];
	unsigned mode, nlink, size;
	const char *data;
};

/* parses newc entries of <buf> from <off> (4-aligned) up to and including the trailer; returns the count */
static size_t
cpio_parse(const char *buf, size_t len, size_t off, struct entry *e, size_t max)
{
	size_t n = 0;

	for (;;) {
		unsigned namesize;

		assert_true(n < max);
		assert_true(off % 4 == 0);
		assert_true(off + 110 <= len);
		assert_memory_equal(buf + off, "070701", 6);
		e[n].mode = hex8(buf + off + 6 + 8);
		assert_int_equal(hex8(buf + off + 6 + 16), 0);  /* uid */
		assert_int_equal(hex8(buf + off + 6 + 24), 0);  /* gid */
		e[n].nlink = hex8(buf + off + 6 + 32);
		e[n].size = hex8(buf + off + 6 + 48);
		namesize = hex8(buf + off + 6 + 88);
		assert_int_equal(hex8(buf + off + 6 + 96), 0);  /* check */
		assert_true(namesize >= 2 && namesize < sizeof(e[n].name));
		assert_true(off + 110 + namesize <= len);
		assert_int_equal(buf[off + 110 + namesize - 1], '\0');
		memcpy(e[n].name, buf + off + 110, namesize);
		off = (off + 110 + namesize + 3) & ~(size_t)3;
		assert_true(off + e[n].size <= len);
		e[n].data = buf + off;
		off = (off + e[n].size + 3) & ~(size_t)3;
		if (strcmp(e[n++].name, "TRAILER!!!") == 0)
			break;
	}
	assert_int_equal(off, len);
	return n;
}

static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";  /* 63 bytes */

static void
tmp_path(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void
test_ca_archive(void **state)
{
	char ca[128], out[128];
	struct entry e[8];
	struct stat st;
	size_t len, n;
	char *buf;

	(void)state;
	tmp_path(ca, sizeof(ca), "ca.pem");
	tmp_path(out, sizeof(out), "ca.cpio");
	file_write(ca, pem, sizeof(pem) - 1);
	assert_int_equal(qemu_ca_archive(ca, out), 0);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	buf = file_slurp(out, &len);
	assert_non_null(buf);
	n = cpio_parse(buf, len, 0, e, 8);
	assert_int_equal(n, 3);
	assert_string_equal(e[0].name, "sluice");
	assert_int_equal(e[0].mode, 040755);
	assert_int_equal(e[0].size, 0);
	assert_string_equal(e[1].name, "sluice/ca.pem");
	assert_int_equal(e[1].mode, 0100644);
	assert_int_equal(e[1].nlink, 1);
	assert_int_equal(e[1].size, sizeof(pem) - 1);
	assert_memory_equal(e[1].data, pem, sizeof(pem) - 1);
	assert_int_equal(e[2].size, 0);
	/* the exact first header: fixed inode, mode, no owner, nlink 2, mtime 0 */
	assert_memory_equal(buf,
	                    "070701"
	                    "00000001" "000041ED" "00000000" "00000000" "00000002" "00000000" "00000000"
	                    "00000000" "00000000" "00000000" "00000000" "00000007" "00000000"
	                    "sluice\0",
	                    117);
	free(buf);
}

static void
test_ca_refusals(void **state)
{
	static const char key[] = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
	                          "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n";
	static const char nul[] = "-----BEGIN CERTIFICATE-----\n\0x\n";
	char ca[128], out[128], *big;

	(void)state;
	tmp_path(ca, sizeof(ca), "bad.pem");
	tmp_path(out, sizeof(out), "bad.cpio");
	unlink(out);
	assert_int_equal(qemu_ca_archive("/nonexistent/ca.pem", out), SLUICE_ENOENT);
	file_write(ca, key, sizeof(key) - 1);
	assert_int_equal(qemu_ca_archive(ca, out), SLUICE_EINVAL);
	file_write(ca, "hello\n", 6);
	assert_int_equal(qemu_ca_archive(ca, out), SLUICE_EINVAL);
	file_write(ca, nul, sizeof(nul) - 1);
	assert_int_equal(qemu_ca_archive(ca, out), SLUICE_EINVAL);
	file_write(ca, "", 0);
	assert_int_equal(qemu_ca_archive(ca, out), SLUICE_EINVAL);
	big = malloc(QEMU_CA_MAX + 1);
	assert_non_null(big);
	memset(big, 'A', QEMU_CA_MAX + 1);
	memcpy(big, pem, sizeof(pem) - 1);
	file_write(ca, big, QEMU_CA_MAX + 1);
	assert_int_equal(qemu_ca_archive(ca, out), SLUICE_ETOOBIG);
	file_write(ca, big, QEMU_CA_MAX);
	assert_int_equal(qemu_ca_archive(ca, out), 0);
	free(big);
	assert_int_equal(qemu_ca_archive(tmpdir, out), SLUICE_EIO);  /* a directory */
	assert_int_equal(access(out, F_OK), 0);
	/* an output path that is a symlink is not followed */
	tmp_path(out, sizeof(out), "link.cpio");
	assert_int_equal(symlink("/nonexistent-target", out), 0);
	file_write(ca, pem, sizeof(pem) - 1);
	assert_int_equal(qemu_ca_archive(ca, out), SLUICE_EIO);
	unlink(out);
}

static void
test_initrd_compose(void **state)
{
	char ca[128], img[128], out[128], *buf;
	struct entry e[8];
	size_t len, base, off;

	(void)state;
	tmp_path(ca, sizeof(ca), "ca.pem");
	tmp_path(img, sizeof(img), "initrd.gz");
	tmp_path(out, sizeof(out), "run.img");
	file_write(ca, pem, sizeof(pem) - 1);
	for (base = 1; base <= 9; base++) {  /* every remainder mod 4 */
		file_write(img, "\x1f\x8b\x08zzzzz", base);
		assert_int_equal(qemu_initrd_compose(img, ca, out), 0);
		buf = file_slurp(out, &len);
		assert_non_null(buf);
		assert_memory_equal(buf, "\x1f\x8b\x08zzzzz", base);
		for (off = base; off % 4 != 0; off++)
			assert_int_equal(buf[off], '\0');  /* the zero padding */
		assert_int_equal(cpio_parse(buf, len, off, e, 8), 3);
		assert_memory_equal(e[1].data, pem, sizeof(pem) - 1);
		free(buf);
	}
	file_write(img, "", 0);
	assert_int_equal(qemu_initrd_compose(img, ca, out), SLUICE_EINVAL);
	assert_int_equal(qemu_initrd_compose("/nonexistent/initrd.gz", ca, out), SLUICE_ENOENT);
	assert_int_equal(qemu_initrd_compose(img, "/nonexistent/ca.pem", out), SLUICE_ENOENT);
}

static void
test_host_khz(void **state)
{
	static const struct {
		const char *text;
		int ret;
		unsigned khz;
	} cases[] = {
		{ "processor\t: 0\ncpu MHz\t\t: 2096.014\ncache size\t: 512 KB\ncpu MHz\t\t: 1.000\n", 0, 2096014 },
		{ "cpu MHz : 3000\n", 0, 3000000 },
		{ "cpu MHz\t: 2400.5\n", 0, 2400500 },
		{ "cpu MHz\t: 2400.123456\n", 0, 2400123 },
		{ "cpu MHz\t: 2400.", 0, 2400000 },
		{ "processor : 0\n", SLUICE_EPARSE, 0 },
		{ "cpu MHz\t: \n", SLUICE_EPARSE, 0 },
		{ "cpu MHz\t: -5\n", SLUICE_EPARSE, 0 },
		{ "cpu MHz\t: 0.5\n", SLUICE_EPARSE, 0 },
		{ "cpu MHz\t: 99999999999999999999999\n", SLUICE_EPARSE, 0 },
		{ "cpu MHz\t: 2400x\n", SLUICE_EPARSE, 0 },
		{ "cpu MHz 2400\n", SLUICE_EPARSE, 0 },
		{ "", SLUICE_EPARSE, 0 },
	};
	char path[128];
	unsigned khz;
	size_t i;

	(void)state;
	tmp_path(path, sizeof(path), "cpuinfo");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		file_write(path, cases[i].text, strlen(cases[i].text));
		khz = 7;
		assert_int_equal(qemu_host_khz(path, &khz), cases[i].ret);
		assert_int_equal(khz, cases[i].ret == 0 ? cases[i].khz : 7);
	}
	assert_int_equal(qemu_host_khz("/nonexistent/cpuinfo", &khz), SLUICE_ENOENT);
}

static void
test_mac(void **state)
{
	uint8_t mac[6];

	(void)state;
	qemu_mac_derive("0a1b2c3d", mac);
	assert_memory_equal(mac, "\x02\x5c\x0a\x1b\x2c\x3d", 6);
	qemu_mac_derive("FFEEDDCC99", mac);
	assert_memory_equal(mac, "\x02\x5c\xff\xee\xdd\xcc", 6);
	qemu_mac_derive("0a1b", mac);  /* short: no read past the NUL */
	assert_memory_equal(mac, "\x02\x5c\x00\x00\x00\x00", 6);
	qemu_mac_derive("0a1bxx3d", mac);
	assert_memory_equal(mac, "\x02\x5c\x00\x00\x00\x00", 6);
	qemu_mac_derive(NULL, mac);
	assert_memory_equal(mac, "\x02\x5c\x00\x00\x00\x00", 6);
}

static void
test_kvm_probe(void **state)
{
	int k = qemu_kvm_usable();

	(void)state;
	assert_true(k == 0 || k == 1);
	if (access("/dev/kvm", F_OK) != 0)
		assert_int_equal(k, 0);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_qemu.XXXXXX");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	const char *names[] = { "ca.pem", "ca.cpio", "bad.pem", "bad.cpio", "link.cpio", "initrd.gz", "run.img",
		                "cpuinfo" };
	char path[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		tmp_path(path, sizeof(path), names[i]);
		unlink(path);
	}
	return rmdir(tmpdir);
}

/* --- the integration test's helper ------------------------------------------------------------------------------ */

static int
usage(void)
{
	fprintf(stderr, "usage: test_qemu --argv --kernel K --initrd I --tap T --sbx4 A --host4 G [--sbx6 A6 --host6 G6]"
	                " [--id HEX] [--memory MIB] [--log FILE] [--kvm] [--env N=V]... -- CMD...\n"
	                "       test_qemu --compose IMAGE_INITRD CA_PEM OUT | --kvm-usable\n");
	return 2;
}

static int
copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

static int
helper_argv(int argc, char **argv)
{
	static const char *env[64];
	char *out[QEMU_ARGV_MAX], store[STORE_CAP];
	struct sandbox_net n;
	struct qemu_vm vm;
	const char *id = "00000000";
	size_t nenv = 0;
	int i, k, ret;

	memset(&n, 0, sizeof(n));
	memset(&vm, 0, sizeof(vm));
	vm.memory_mib = 256;
	vm.accel = QEMU_ACCEL_TCG;
	for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--kvm") == 0) {
			vm.accel = QEMU_ACCEL_KVM;
			continue;
		}
		if (v == NULL)
			return usage();
		i++;
		if (strcmp(o, "--kernel") == 0)
			vm.kernel = v;
		else if (strcmp(o, "--initrd") == 0)
			vm.initrd = v;
		else if (strcmp(o, "--tap") == 0)
			vm.tap = v;
		else if (strcmp(o, "--log") == 0)
			vm.serial_log = v;
		else if (strcmp(o, "--id") == 0)
			id = v;
		else if (strcmp(o, "--memory") == 0) {
			char *end;
			unsigned long m = strtoul(v, &end, 10);

			if (*v == '\0' || *end != '\0' || m > QEMU_MEMORY_MAX)
				return usage();
			vm.memory_mib = (unsigned)m;
		} else if (strcmp(o, "--env") == 0 && nenv + 1 < sizeof(env) / sizeof(env[0]))
			env[nenv++] = v;
		else if ((strcmp(o, "--sbx4") == 0 && copy_field(n.sbx_v4, sizeof(n.sbx_v4), v) == 0) ||
		         (strcmp(o, "--host4") == 0 && copy_field(n.host_v4, sizeof(n.host_v4), v) == 0) ||
		         (strcmp(o, "--sbx6") == 0 && copy_field(n.sbx_v6, sizeof(n.sbx_v6), v) == 0) ||
		         (strcmp(o, "--host6") == 0 && copy_field(n.host_v6, sizeof(n.host_v6), v) == 0))
			continue;
		else
			return usage();
	}
	if (i >= argc)
		return usage();
	env[nenv] = NULL;
	vm.env = env;
	vm.cmd = (const char *const *)(argv + i + 1);
	vm.net = &n;
	qemu_mac_derive(id, vm.mac);
	if (qemu_host_khz(NULL, &vm.tsc_khz) != 0)
		vm.tsc_khz = 0;
	ret = qemu_argv_build(&vm, out, QEMU_ARGV_MAX, store, sizeof(store));
	if (ret < 0) {
		fprintf(stderr, "test_qemu: qemu_argv_build: %s\n", sluice_strerror(ret));
		return 1;
	}
	for (k = 0; k < ret; k++)
		printf("%s\n", out[k]);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_tcg),     cmocka_unit_test(test_golden_kvm_log),
		cmocka_unit_test(test_cmd_encoding),   cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_small_buffers),  cmocka_unit_test(test_ca_archive),
		cmocka_unit_test(test_ca_refusals),    cmocka_unit_test(test_initrd_compose),
		cmocka_unit_test(test_host_khz),       cmocka_unit_test(test_mac),
		cmocka_unit_test(test_kvm_probe),
	};

	if (argc > 1 && strcmp(argv[1], "--argv") == 0)
		return helper_argv(argc, argv);
	if (argc == 5 && strcmp(argv[1], "--compose") == 0) {
		int ret = qemu_initrd_compose(argv[2], argv[3], argv[4]);

		if (ret != 0)
			fprintf(stderr, "test_qemu: qemu_initrd_compose: %s\n", sluice_strerror(ret));
		return ret != 0;
	}
	if (argc == 2 && strcmp(argv[1], "--kvm-usable") == 0) {
		printf("%d\n", qemu_kvm_usable());
		return 0;
	}
	if (argc > 1)
		return usage();
	return cmocka_run_group_tests(tests, setup, teardown);
}
