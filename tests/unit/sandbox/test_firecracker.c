/*
 * tests/unit/sandbox/test_firecracker.c - the Firecracker backend (firecracker.c):
 * the config file against golden files, the refusals, the response parser, the
 * fault message, and the API driver against an in-process fake socket server.
 *
 * With `--boot SOCK KERNEL INITRD TAP [TIMEOUT_MS]` it runs fc_api_boot once
 * instead (vcpus 2, 256 MiB, boot_args "quiet", MAC 02:5c:00:00:00:01),
 * prints "ok" or "error <code>: <message>" and exits 0 or 1: the integration
 * test tests/integration/test_firecracker_api.sh drives it that way.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sluice.h"
#include "sandbox-glue/firecracker.h"

static const struct fc_vm base_vm = {
	.kernel = "/var/lib/sluice/vm/vmlinux",
	.initrd = "/var/lib/sluice/vm/initrd.gz",
	.boot_args = "sluice.ip4=10.200.0.6/30 sluice.gw4=10.200.0.5",
	.vcpus = 2,
	.mem_mib = 256,
	.tap = "slh0123abcd",
	.guest_mac = "02:5c:01:23:ab:cd",
};

static char *
slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *b;
	long n;

	snprintf(path, sizeof(path), "%s/%s", SLUICE_GOLDEN_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void
check_golden(const struct fc_vm *vm, const char *name)
{
	char buf[8192];
	size_t glen;
	char *g = slurp(name, &glen);
	int n = fc_config_render(vm, buf, sizeof(buf));

	if (n != (int)glen || memcmp(buf, g, glen) != 0)
		fprintf(stderr, "# %s differs; rendered:\n%s", name, n > 0 ? buf : "(error)\n");
	assert_int_equal(n, (int)glen);
	assert_int_equal(memcmp(buf, g, glen), 0);
	assert_int_equal(buf[n], '\0');
	free(g);
}

static void
test_golden(void **state)
{
	struct fc_vm vm = base_vm;

	(void)state;
	check_golden(&vm, "fc_config.json");
	/* escaping: quote, backslash, non-ASCII; no MAC (Firecracker picks one); no extra boot args */
	vm.kernel = "/vm/a\"b\\c/vmlinux";
	vm.initrd = "/vm/caf\xc3\xa9/initrd \xe2\x82\xac.gz";
	vm.boot_args = "sluice.ph=\"a b\"";
	vm.guest_mac = NULL;
	vm.vcpus = 1;
	vm.mem_mib = 128;
	check_golden(&vm, "fc_escape.json");
}

static void
test_render_small_buffer(void **state)
{
	char buf[64];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(fc_config_render(&base_vm, buf, sizeof(buf)), SLUICE_ETOOBIG);
	assert_string_equal(buf, "");
	assert_int_equal(fc_config_render(&base_vm, buf, 0), SLUICE_ETOOBIG);
}

static void
test_refusals(void **state)
{
	static const char *const bad_text[] = {"a\nb", "\t", "x\x7f", "a\rb", "\x1b[0m", "bad\xc3", "\xc0\xaf",
	                                       "\xed\xa0\x80", NULL};
	struct fc_vm vm;
	char buf[8192];
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; bad_text[i] != NULL; i++) {
		vm = base_vm;
		vm.kernel = bad_text[i];
		assert_int_equal(fc_config_render(&vm, buf, sizeof(buf)), SLUICE_EINVAL);
		vm = base_vm;
		vm.initrd = bad_text[i];
		assert_int_equal(fc_config_render(&vm, buf, sizeof(buf)), SLUICE_EINVAL);
		vm = base_vm;
		vm.boot_args = bad_text[i];
		assert_int_equal(fc_config_render(&vm, buf, sizeof(buf)), SLUICE_EINVAL);
		assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
		assert_string_equal(why, "boot args with control bytes or invalid UTF-8");
	}
	vm = base_vm;
	vm.kernel = NULL;
	assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
	assert_string_equal(why, "kernel path missing, too long, or with control bytes");
	vm = base_vm;
	vm.initrd = "";
	assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
	vm = base_vm;
	vm.vcpus = 0;
	assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
	assert_string_equal(why, "vcpus out of range");
	vm.vcpus = FC_VCPUS_MAX + 1;
	assert_int_equal(fc_vm_check(&vm, NULL), SLUICE_EINVAL);
	vm.vcpus = FC_VCPUS_MAX;
	assert_int_equal(fc_vm_check(&vm, NULL), 0);
	vm = base_vm;
	vm.mem_mib = 0;
	assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
	assert_string_equal(why, "memory out of range");
	static const char *const bad_tap[] = {NULL, "", "a b", "tap/0", "0123456789abcdef", "..", "t\"", NULL};
	for (i = 0; i < 7; i++) {
		vm = base_vm;
		vm.tap = bad_tap[i];
		assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
		assert_string_equal(why, "tap name missing or invalid");
	}
	vm.tap = "0123456789abcde"; /* 15 */
	assert_int_equal(fc_vm_check(&vm, NULL), 0);
	static const char *const bad_mac[] = {"", "02:5c:01:23:ab", "02:5c:01:23:ab:cd:", "02-5c-01-23-ab-cd",
	                                      "03:5c:01:23:ab:cd", "02:5c:01:23:ab:cg", "02:5c:01:23:ab:c\n", NULL};
	for (i = 0; bad_mac[i] != NULL; i++) {
		vm = base_vm;
		vm.guest_mac = bad_mac[i];
		assert_int_equal(fc_vm_check(&vm, &why), SLUICE_EINVAL);
		assert_string_equal(why, "guest MAC invalid");
	}
	vm.guest_mac = "02:5C:01:23:AB:CD";
	assert_int_equal(fc_vm_check(&vm, NULL), 0);
	assert_int_equal(fc_vm_check(NULL, &why), SLUICE_EINVAL);
}

static void
test_boot_args_bound(void **state)
{
	char args[FC_BOOT_ARGS_MAX + 2], out[FC_BOOT_ARGS_MAX + 1], buf[16384];
	size_t base = strlen(FC_BOOT_ARGS_BASE), room = FC_BOOT_ARGS_MAX - base - 1;
	struct fc_vm vm = base_vm;
	const char *why;

	(void)state;
	assert_int_equal(FC_BOOT_ARGS_MAX, 2048 - 1 - 64);
	vm.boot_args = NULL;
	assert_int_equal(fc_boot_args_build(&vm, out, sizeof(out)), (int)base);
	assert_string_equal(out, "console=ttyS0 reboot=k panic=1");
	vm.boot_args = "";
	assert_int_equal(fc_boot_args_build(&vm, out, sizeof(out)), (int)base);
	vm.boot_args = "quiet";
	assert_int_equal(fc_boot_args_build(&vm, out, sizeof(out)), (int)base + 6);
	assert_string_equal(out, "console=ttyS0 reboot=k panic=1 quiet");
	assert_int_equal(fc_boot_args_build(&vm, out, base + 6), SLUICE_ETOOBIG); /* no room for the NUL */

	memset(args, 'a', room);
	args[room] = '\0';
	vm.boot_args = args;
	assert_int_equal(fc_boot_args_build(&vm, out, sizeof(out)), FC_BOOT_ARGS_MAX);
	assert_int_equal(fc_vm_check(&vm, NULL), 0);
	assert_true(fc_config_render(&vm, buf, sizeof(buf)) > FC_BOOT_ARGS_MAX);
	args[room] = 'a';
	args[room + 1] = '\0';
	assert_int_equal(fc_boot_args_build(&vm, out, sizeof(out)), SLUICE_ETOOBIG);
	assert_int_equal(fc_vm_check(&vm, &why), SLUICE_ETOOBIG);
	assert_string_equal(why, "boot args longer than Firecracker's command line allows");
	assert_int_equal(fc_config_render(&vm, buf, sizeof(buf)), SLUICE_EINVAL);
	{
		static char huge[FC_CMDLINE_MAX * 4];
		memset(huge, 'b', sizeof(huge) - 1);
		vm.boot_args = huge;
		assert_int_equal(fc_vm_check(&vm, NULL), SLUICE_ETOOBIG);
	}
}

static void
test_guest_mac(void **state)
{
	char mac[FC_MAC_LEN + 1];

	(void)state;
	assert_int_equal(fc_guest_mac("0123abCD", mac), 0);
	assert_string_equal(mac, "02:5c:01:23:ab:cd");
	assert_int_equal(fc_guest_mac("0123abc", mac), SLUICE_EINVAL);
	assert_int_equal(fc_guest_mac("0123abcde", mac), SLUICE_EINVAL);
	assert_int_equal(fc_guest_mac("0123abcg", mac), SLUICE_EINVAL);
	assert_int_equal(fc_guest_mac(NULL, mac), SLUICE_EINVAL);
}

/* ------------------------------------------------------------------ parser */

static int
parse(const char *s, struct fc_response *r, const char **err)
{
	return fc_response_parse(s, strlen(s), r, err);
}

static void
expect_bad(const char *s, const char *why)
{
	struct fc_response r;
	const char *err = NULL;

	assert_int_equal(parse(s, &r, &err), -1);
	assert_non_null(err);
	assert_string_equal(err, why);
}

static void
test_parse_good(void **state)
{
	static const char fc204[] = "HTTP/1.1 204 \r\nServer: Firecracker API\r\nConnection: keep-alive\r\n\r\n";
	static const char fc400[] = "HTTP/1.1 400 \r\nServer: Firecracker API\r\nConnection: keep-alive\r\n"
	                            "Content-Type: application/json\r\nContent-Length: 41\r\n\r\n"
	                            "{\"fault_message\": \"Invalid kernel path\"}\n";
	struct fc_response r;
	const char *err;
	size_t k;

	(void)state;
	assert_int_equal(parse(fc204, &r, &err), (int)strlen(fc204));
	assert_int_equal(r.status, 204);
	assert_int_equal(r.body_len, 0);
	assert_int_equal(r.close, 0);
	assert_int_equal(parse(fc400, &r, &err), (int)strlen(fc400));
	assert_int_equal(r.status, 400);
	assert_int_equal(r.body_len, 41);
	assert_memory_equal(fc400 + r.body_off, "{\"fault_message\"", 16);
	/* every strict prefix needs more */
	for (k = 0; k < strlen(fc400); k++)
		assert_int_equal(fc_response_parse(fc400, k, &r, &err), -2);
	for (k = 0; k < strlen(fc204); k++)
		assert_int_equal(fc_response_parse(fc204, k, &r, &err), -2);
	assert_int_equal(parse("HTTP/1.1 204\r\n\r\n", &r, NULL), 16);
	assert_int_equal(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &r, NULL), 38);
	{
		static const char c[] = "HTTP/1.1 204 No Content\r\ncontent-LENGTH:  0 \r\nConnection: close\r\n\r\n";
		assert_int_equal(parse(c, &r, NULL), (int)strlen(c));
	}
	assert_int_equal(r.close, 1);
	/* bytes after the answer are not consumed */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP", &r, NULL), 40);
	assert_int_equal(r.body_len, 2);
	/* the body bound itself is fine; the body just has to arrive */
	assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\nabc", &r, NULL), -2);
	assert_int_equal(parse("HTTP/1.1 599 \xff\xfe\r\nContent-Length: 0\r\n\r\n", &r, NULL), 38);
}

static void
test_parse_bad(void **state)
{
	char big[FC_RESPONSE_HEAD_MAX + 64];
	struct fc_response r;
	const char *err;
	size_t n;
	int i;

	(void)state;
	expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	           "Transfer-Encoding refused");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 65537\r\n\r\n", "Content-Length over the body bound");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\n",
	           "Content-Length over the body bound");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", "bad Content-Length");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n", "bad Content-Length");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", "empty Content-Length");
	expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", "duplicate Content-Length");
	expect_bad("HTTP/1.1 400 \r\nServer: x\r\n\r\n", "no Content-Length");
	expect_bad("HTTP/1.1 200 OK\r\n\r\n", "no Content-Length");
	expect_bad("HTTP/1.1 204 \r\nContent-Length: 5\r\n\r\nhello", "a body on a 204/304 answer");
	expect_bad("HTTP/1.1 204 \n\n", "bare LF");
	expect_bad("HTTP/1.1 204 \r\nServer: x\n\r\n", "bare LF");
	expect_bad("HTTP/1.1 204 \r\nServer: x\r\n\n", "bare LF");
	expect_bad("\n", "bare LF");
	expect_bad("HTTP/1.1 204 \r\nServer: x\r\n folded\r\n\r\n", "obsolete line folding");
	expect_bad("HTTP/1.1 204 \r\nSer ver: x\r\n\r\n", "bad header name");
	expect_bad("HTTP/1.1 204 \r\n: x\r\n\r\n", "bad header name");
	expect_bad("HTTP/1.1 204 \r\nServer x\r\n\r\n", "bad header name");
	expect_bad("HTTP/1.1 204 \r\nServer: a\rb\r\n\r\n", "control byte in a header value");
	expect_bad("HTTP/1.1 204 \r\nServer: a\x01\r\n\r\n", "control byte in a header value");
	expect_bad("HTTP/1.1 204 a\x7f\r\n\r\n", "control byte in the reason phrase");
	expect_bad("HTTP/1.1 100 Continue\r\n\r\n", "unexpected 1xx answer");
	expect_bad("HTTP/2.0 204 \r\n\r\n", "bad status line");
	expect_bad("HTTP/1.2 204 \r\n\r\n", "bad status line");
	expect_bad("HTTP/1.1 20 \r\n\r\n", "bad status line");
	expect_bad("HTTP/1.1 600 \r\n\r\n", "bad status line");
	expect_bad("HTTP/1.1 099 \r\n\r\n", "bad status line");
	expect_bad("HTTP/1.1 2040\r\n\r\n", "bad status line");
	expect_bad("HTTP/1.1  204\r\n\r\n", "bad status line");
	expect_bad("http/1.1 204\r\n\r\n", "bad status line");
	expect_bad("\r\n", "bad status line");

	/* an endless head: -2 below the bound, -1 at it */
	memcpy(big, "HTTP/1.1 204 \r\nX: ", 18);
	memset(big + 18, 'a', sizeof(big) - 18);
	assert_int_equal(fc_response_parse(big, FC_RESPONSE_HEAD_MAX - 1, &r, &err), -2);
	assert_int_equal(fc_response_parse(big, FC_RESPONSE_HEAD_MAX, &r, &err), -1);
	assert_string_equal(err, "response head too long");
	assert_int_equal(fc_response_parse(big, sizeof(big), &r, &err), -1);

	/* FC_RESPONSE_HEADERS_MAX headers pass, one more does not */
	n = (size_t)snprintf(big, sizeof(big), "HTTP/1.1 204 \r\n");
	for (i = 0; i < FC_RESPONSE_HEADERS_MAX; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "X%d: y\r\n", i);
	memcpy(big + n, "\r\n", 3);
	assert_int_equal(fc_response_parse(big, n + 2, &r, &err), (int)n + 2);
	n += (size_t)snprintf(big + n, sizeof(big) - n, "Xz: y\r\n\r\n");
	assert_int_equal(fc_response_parse(big, n, &r, &err), -1);
	assert_string_equal(err, "too many headers");
}

static void
test_fault(void **state)
{
	char out[32];
	static const char b1[] = "{\"fault_message\": \"Invalid kernel path\"}";
	static const char b2[] = "{\"fault_message\": \"a\\nb\\u0000c\\u00e9\"}";
	static const char b3[] = "not json\nat all";
	static const char b4[] = "{\"fault_message\": 3}";
	static const char b5[] = "{\"fault_message\": \"x\", \"fault_message\": \"y\"}";

	(void)state;
	assert_int_equal(fc_response_fault(b1, strlen(b1), out, sizeof(out)), 0);
	assert_string_equal(out, "Invalid kernel path");
	assert_int_equal(fc_response_fault(b2, strlen(b2), out, sizeof(out)), 0);
	assert_string_equal(out, "a?b?c??");
	assert_int_equal(fc_response_fault(b3, strlen(b3), out, sizeof(out)), SLUICE_EPARSE);
	assert_string_equal(out, "not json?at all");
	assert_int_equal(fc_response_fault(b4, strlen(b4), out, sizeof(out)), SLUICE_EPARSE);
	assert_int_equal(fc_response_fault(b5, strlen(b5), out, sizeof(out)), SLUICE_EPARSE);
	assert_int_equal(fc_response_fault(b1, strlen(b1), out, 8), 0);
	assert_string_equal(out, "Invalid");
	assert_int_equal(fc_response_fault(b1, strlen(b1), out, 0), 0);
	assert_int_equal(fc_response_fault("", 0, out, sizeof(out)), SLUICE_EPARSE);
	assert_string_equal(out, "");
}

/* ------------------------------------------------------------------ driver against a fake server */

#define FAKE_MAX 8
struct fake {
	char path[108];
	int lfd;
	const char *answers[FAKE_MAX]; /* one per request; NULL: stop answering (hang until closed) */
	int close_after[FAKE_MAX];     /* close the connection after this answer */
	char log[16384];               /* every request, verbatim */
	size_t loglen;
	int conns;
	pthread_t th;
};

/* Reads one request (head + Content-Length body) into the log; 0 at EOF. */
static int
fake_read_request(struct fake *f, int c)
{
	char buf[8192];
	size_t len = 0, need = 0;
	ssize_t got;
	char *end, *cl;

	for (;;) {
		got = recv(c, buf + len, sizeof(buf) - 1 - len, 0);
		if (got <= 0)
			return 0;
		len += (size_t)got;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end == NULL)
			continue;
		cl = strstr(buf, "Content-Length: ");
		need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
		if (len >= need)
			break;
	}
	if (f->loglen + len < sizeof(f->log)) {
		memcpy(f->log + f->loglen, buf, len);
		f->loglen += len;
	}
	return 1;
}

static void *
fake_run(void *arg)
{
	struct fake *f = arg;
	int c = -1, i = 0;
	char sink[256];

	while (i < FAKE_MAX && f->answers[i] != NULL) {
		if (c == -1) {
			c = accept(f->lfd, NULL, NULL);
			if (c == -1)
				return NULL;
			f->conns++;
		}
		if (!fake_read_request(f, c))
			break;
		if (send(c, f->answers[i], strlen(f->answers[i]), MSG_NOSIGNAL) == -1)
			break;
		if (f->close_after[i]) {
			close(c);
			c = -1;
		}
		i++;
	}
	if (c != -1) {
		while (recv(c, sink, sizeof(sink), 0) > 0) /* hang: wait for the client to give up */
			;
		close(c);
	}
	return NULL;
}

static void
fake_start(struct fake *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(f->path, sizeof(f->path), "/tmp/sluice-fc-unit-%ld.sock", (long)getpid());
	unlink(f->path);
	memcpy(sa.sun_path, f->path, strlen(f->path) + 1);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	assert_int_equal(pthread_create(&f->th, NULL, fake_run, f), 0);
}

static void
fake_stop(struct fake *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	close(f->lfd);
	pthread_join(f->th, NULL);
	unlink(f->path);
}

#define OK204 "HTTP/1.1 204 \r\nServer: Firecracker API\r\nConnection: keep-alive\r\n\r\n"

static void
test_boot_sequence(void **state)
{
	static const char expect[] =
		"PUT /boot-source HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
		"Content-Type: application/json\r\nContent-Length: 187\r\n\r\n"
		"{\"kernel_image_path\":\"/var/lib/sluice/vm/vmlinux\",\"initrd_path\":\"/var/lib/sluice/vm/initrd.gz\","
		"\"boot_args\":\"console=ttyS0 reboot=k panic=1 sluice.ip4=10.200.0.6/30 sluice.gw4=10.200.0.5\"}"
		"PUT /machine-config HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
		"Content-Type: application/json\r\nContent-Length: 47\r\n\r\n"
		"{\"vcpu_count\":2,\"mem_size_mib\":256,\"smt\":false}"
		"PUT /network-interfaces/eth0 HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
		"Content-Type: application/json\r\nContent-Length: 81\r\n\r\n"
		"{\"iface_id\":\"eth0\",\"guest_mac\":\"02:5c:01:23:ab:cd\",\"host_dev_name\":\"slh0123abcd\"}"
		"PUT /actions HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
		"Content-Type: application/json\r\nContent-Length: 31\r\n\r\n"
		"{\"action_type\":\"InstanceStart\"}";
	struct fake f = {.answers = {OK204, OK204, OK204, OK204}};
	char err[256] = "untouched";

	(void)state;
	fake_start(&f);
	assert_int_equal(fc_api_boot(f.path, &base_vm, 5000, err, sizeof(err)), 0);
	fake_stop(&f);
	assert_string_equal(err, "");
	assert_int_equal(f.conns, 1);
	assert_int_equal(f.loglen, strlen(expect));
	assert_memory_equal(f.log, expect, f.loglen);
}

static void
test_boot_fault(void **state)
{
	struct fake f = {.answers = {OK204,
	                             "HTTP/1.1 400 \r\nContent-Type: application/json\r\nContent-Length: 59\r\n\r\n"
	                             "{\"fault_message\": \"Invalid memory size\\nsecond line\\u001b\"}",
	                             OK204, OK204}};
	char err[256];

	(void)state;
	fake_start(&f);
	assert_int_equal(fc_api_boot(f.path, &base_vm, 5000, err, sizeof(err)), SLUICE_EDENIED);
	fake_stop(&f);
	assert_string_equal(err, "PUT /machine-config: 400: Invalid memory size?second line?");
	assert_non_null(strstr(f.log, "PUT /machine-config"));
	assert_null(strstr(f.log, "PUT /network-interfaces"));
	assert_null(strstr(f.log, "PUT /actions"));
}

static void
test_boot_reconnect_and_bad(void **state)
{
	struct fake f = {.answers = {OK204, "HTTP/1.1 204 \r\nConnection: close\r\n\r\n", OK204, OK204},
	                 .close_after = {0, 1, 0, 0}};
	struct fake g = {.answers = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}};
	struct fake h = {.answers = {"HTTP/1.1 204 \r\n\r\nHTTP/1.1 204 \r\n\r\n"}};
	struct fake t = {.answers = {OK204, NULL}};
	char err[256], small[12];

	(void)state;
	fake_start(&f);
	assert_int_equal(fc_api_boot(f.path, &base_vm, 5000, err, sizeof(err)), 0);
	fake_stop(&f);
	assert_int_equal(f.conns, 2);
	assert_non_null(strstr(f.log, "PUT /actions"));

	fake_start(&g);
	assert_int_equal(fc_api_boot(g.path, &base_vm, 5000, err, sizeof(err)), SLUICE_EPARSE);
	fake_stop(&g);
	assert_string_equal(err, "PUT /boot-source: bad answer: Transfer-Encoding refused");

	fake_start(&h);
	assert_int_equal(fc_api_boot(h.path, &base_vm, 5000, err, sizeof(err)), SLUICE_EPARSE);
	fake_stop(&h);
	assert_string_equal(err, "PUT /boot-source: unexpected bytes after the answer");

	/* answers once, then never again: the deadline ends it; a tiny err buffer stays terminated */
	fake_start(&t);
	assert_int_equal(fc_api_boot(t.path, &base_vm, 300, small, sizeof(small)), SLUICE_ETIMEDOUT);
	fake_stop(&t);
	assert_string_equal(small, "PUT /machin");
}

static void
test_boot_args_refused(void **state)
{
	struct fc_vm vm = base_vm;
	char err[256], longpath[200];

	(void)state;
	vm.kernel = "/k\n";
	assert_int_equal(fc_api_boot("/nonexistent.sock", &vm, 100, err, sizeof(err)), SLUICE_EINVAL);
	assert_string_equal(err, "vm refused: kernel path missing, too long, or with control bytes");
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(fc_api_boot(longpath, &base_vm, 100, err, sizeof(err)), SLUICE_EINVAL);
	assert_int_equal(fc_api_boot("/x.sock", &base_vm, 0, err, sizeof(err)), SLUICE_EINVAL);
	assert_int_equal(fc_api_boot("/nonexistent/fc.sock", &base_vm, 100, err, sizeof(err)), SLUICE_ETIMEDOUT);
	assert_string_equal(err, "connect /nonexistent/fc.sock: timed out (No such file or directory)");
}

static int
boot_main(int argc, char **argv)
{
	struct fc_vm vm = {.boot_args = "quiet", .vcpus = 2, .mem_mib = 256, .guest_mac = "02:5c:00:00:00:01"};
	char err[1024];
	unsigned long t = 5000;
	char *end;
	int ret;

	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: %s --boot SOCK KERNEL INITRD TAP [TIMEOUT_MS]\n", argv[0]);
		return 2;
	}
	vm.kernel = argv[3];
	vm.initrd = argv[4];
	vm.tap = argv[5];
	if (argc == 7) {
		errno = 0;
		t = strtoul(argv[6], &end, 10);
		if (errno != 0 || *end != '\0' || end == argv[6] || t == 0 || t > 600000) {
			fprintf(stderr, "bad timeout\n");
			return 2;
		}
	}
	ret = fc_api_boot(argv[2], &vm, (int)t, err, sizeof(err));
	if (ret == 0) {
		printf("ok\n");
		return 0;
	}
	printf("error %s: %s\n", sluice_strerror(ret), err);
	return 1;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_render_small_buffer),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_boot_args_bound),
		cmocka_unit_test(test_guest_mac),
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_fault),
		cmocka_unit_test(test_boot_sequence),
		cmocka_unit_test(test_boot_fault),
		cmocka_unit_test(test_boot_reconnect_and_bad),
		cmocka_unit_test(test_boot_args_refused),
	};

	if (argc > 1 && strcmp(argv[1], "--boot") == 0)
		return boot_main(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
