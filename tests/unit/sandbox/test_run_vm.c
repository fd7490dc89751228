/*
 * tests/unit/sandbox/test_run_vm.c - the pure parts of the tap backends: the VM console cut into lines
 * (run_console.c: what goes to stdout or stderr, the status, the start marker, the bounds), and the kernel
 * command line words both VMs share (qemu_guest_args, qemu_env_valid).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/sluice.h"
#include "sandbox-glue/qemu.h"
#include "sandbox-glue/run_int.h"

#define SINK_MAX (1u << 17)

/* what the console emitted: stdout bytes as they go out, stderr as "E:" lines */
struct sink {
	char out[SINK_MAX];
	size_t outlen;
	char err[SINK_MAX];
	size_t errlen;
};

static void
put(char *buf, size_t *len, const char *p, size_t n)
{
	assert_true(*len + n < SINK_MAX);
	memcpy(buf + *len, p, n);
	*len += n;
	buf[*len] = '\0';
}

static void
sink_emit(void *arg, enum run_console_to to, const char *p, size_t len, int nl)
{
	struct sink *s = arg;

	if (to == RUN_CONSOLE_STDOUT) {
		put(s->out, &s->outlen, p, len);
		if (nl)
			put(s->out, &s->outlen, "\n", 1);
		return;
	}
	assert_int_equal(to, RUN_CONSOLE_STDERR);
	assert_true(nl);
	put(s->err, &s->errlen, "E:", 2);
	put(s->err, &s->errlen, p, len);
	put(s->err, &s->errlen, "\n", 1);
}

static struct sink *
sink_new(void)
{
	return calloc(1, sizeof(struct sink));
}

/* the whole of <text> through a fresh console, fed in pieces of <step> bytes (0: all at once) */
static void
run_text(struct run_console *c, struct sink *s, const char *text, size_t len, size_t step, int fc)
{
	size_t off;

	memset(s, 0, sizeof(*s));
	run_console_init(c, sink_emit, s, fc);
	if (step == 0)
		step = len > 0 ? len : 1;
	for (off = 0; off < len; off += step)
		run_console_feed(c, text + off, len - off < step ? len - off : step);
	run_console_end(c);
}

static const char boot[] =
	"[    0.000000] Linux version 6.1.0\r\n"
	"sluice-init: start (uptime 0.50)\r\n"
	"[    0.600000] virtio_net: something\r\n"
	"sluice-init: ready (uptime 1.20), running the command\r\n"
	"hello from the guest\r\n"
	"[   12.345678] oom-killer: invoked\r\n"
	"sluice-init: error: the command did not run\r\n"
	"SLUICE_EXIT 0\r\n"
	"line after the fake\r\n"
	"\r\n"
	"SLUICE_EXIT 7\r\n"
	"[   13.000000] reboot: Power down\r\n";

static void
test_console_lines(void **state)
{
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new();

	(void)state;
	run_text(c, s, boot, strlen(boot), 0, 0);
	assert_string_equal(s->out, "hello from the guest\nline after the fake\n\n");
	assert_string_equal(s->err, "E:[   12.345678] oom-killer: invoked\n"
	                            "E:sluice-init: error: the command did not run\n");
	assert_int_equal(c->status, 7);  /* the last one */
	assert_true(c->started);
	assert_true(c->started_now);
	free(c);
	free(s);
}

/* every split of the input gives the same result */
static void
test_console_splits(void **state)
{
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new(), *ref = sink_new();
	size_t step, cut, len = strlen(boot);

	(void)state;
	run_text(c, ref, boot, len, 0, 0);
	for (step = 1; step <= 7; step++) {
		run_text(c, s, boot, len, step, 0);
		assert_string_equal(s->out, ref->out);
		assert_string_equal(s->err, ref->err);
		assert_int_equal(c->status, 7);
	}
	for (cut = 1; cut < len; cut++) {
		memset(s, 0, sizeof(*s));
		run_console_init(c, sink_emit, s, 0);
		run_console_feed(c, boot, cut);
		run_console_feed(c, boot + cut, len - cut);
		run_console_end(c);
		assert_string_equal(s->out, ref->out);
		assert_string_equal(s->err, ref->err);
		assert_int_equal(c->status, 7);
	}
	free(c);
	free(s);
	free(ref);
}

static void
test_console_exit_strict(void **state)
{
	static const struct {
		const char *line;
		int status;  /* -1: not a status line, so forwarded */
	} cases[] = {
		{"SLUICE_EXIT 0", 0},     {"SLUICE_EXIT 255", 255}, {"SLUICE_EXIT 007", 7},  {"SLUICE_EXIT 256", -1},
		{"SLUICE_EXIT 0001", -1}, {"SLUICE_EXIT -1", -1},   {"SLUICE_EXIT ", -1},    {"SLUICE_EXIT 1 ", -1},
		{"SLUICE_EXIT 1x", -1},   {"SLUICE_EXIT  1", -1},   {"sluice_exit 1", -1},   {" SLUICE_EXIT 1", -1},
		{"SLUICE_EXIT\t1", -1},   {"SLUICE_EXIT 99999999999999999999", -1},
	};
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new();
	char text[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = snprintf(text, sizeof(text), "sluice-init: ready\n%s\r\n", cases[i].line);

		run_text(c, s, text, (size_t)n, 0, 0);
		assert_int_equal(c->status, cases[i].status);
		if (cases[i].status < 0) {
			char want[256];

			snprintf(want, sizeof(want), "%s\n", cases[i].line);
			assert_string_equal(s->out, want);
		} else {
			assert_string_equal(s->out, "");
		}
	}
	/* a status before the start (the /init failed) counts too, and the boot lines are shown */
	snprintf(text, sizeof(text), "booting\nsluice-init: error: no CA archive\nSLUICE_EXIT 125");
	run_text(c, s, text, strlen(text), 0, 0);
	assert_int_equal(c->status, 125);
	assert_false(c->started);
	assert_string_equal(s->err, "E:sluice-init: error: no CA archive\nE:booting\n");
	assert_string_equal(s->out, "");
	free(c);
	free(s);
}

static void
test_console_early_ring(void **state)
{
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new();
	char *text = malloc(65536), want[8192], line[512];
	size_t len = 0, wl = 0, i;

	(void)state;
	for (i = 0; i < RUN_CONSOLE_EARLY_MAX + 10; i++)
		len += (size_t)snprintf(text + len, 65536 - len, "boot line %zu\r\n", i);
	/* one long boot line: kept cut to RUN_CONSOLE_EARLY_LINE - 1 bytes, the rest of it dropped */
	memset(line, 'L', sizeof(line));
	memcpy(text + len, line, sizeof(line));
	len += sizeof(line);
	text[len++] = '\n';
	run_text(c, s, text, len, 3, 0);
	assert_false(c->started);
	assert_int_equal(c->status, -1);
	assert_string_equal(s->out, "");
	for (i = 11; i < RUN_CONSOLE_EARLY_MAX + 10; i++)
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "E:boot line %zu\n", i);
	memcpy(want + wl, "E:", 2);
	wl += 2;
	memset(want + wl, 'L', RUN_CONSOLE_EARLY_LINE - 1);
	wl += RUN_CONSOLE_EARLY_LINE - 1;
	want[wl++] = '\n';
	want[wl] = '\0';
	assert_string_equal(s->err, want);
	free(text);
	free(c);
	free(s);
}

/* a line over the bound goes on byte for byte, unjudged, and the next line is judged again */
static void
test_console_long_lines(void **state)
{
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new();
	size_t big = 3 * RUN_CONSOLE_LINE_MAX + 17, len = 0, k, step;
	char *text = malloc(big + 256), *want = malloc(big + 256);

	(void)state;
	len += (size_t)snprintf(text, 256, "sluice-init: ready\n");
	memcpy(text + len, "SLUICE_EXIT 5", 13);
	for (k = 13; k < big; k++)
		text[len + k] = (char)('a' + k % 26);
	memcpy(want, text + len, big);
	want[big] = '\n';
	len += big;
	len += (size_t)snprintf(text + len, 256, "\r\nSLUICE_EXIT 9\r\n");
	for (step = 0; step <= 4096; step += 1024) {
		run_text(c, s, text, len, step, 0);
		assert_int_equal(s->outlen, big + 1);
		assert_memory_equal(s->out, want, big + 1);
		assert_int_equal(c->status, 9);
	}
	/* exactly RUN_CONSOLE_LINE_MAX bytes: the same bytes, one line end */
	len = (size_t)snprintf(text, 256, "sluice-init: ready\n");
	memset(text + len, 'x', RUN_CONSOLE_LINE_MAX);
	len += RUN_CONSOLE_LINE_MAX;
	text[len++] = '\n';
	run_text(c, s, text, len, 0, 0);
	assert_int_equal(s->outlen, RUN_CONSOLE_LINE_MAX + 1);
	assert_int_equal(s->out[RUN_CONSOLE_LINE_MAX], '\n');
	free(text);
	free(want);
	free(c);
	free(s);
}

static void
test_console_firecracker(void **state)
{
	static const char text[] = "2024-05-01T10:00:00.000000001 [anonymous-instance:main] Running Firecracker\n"
	                           "sluice-init: ready\n"
	                           "2024-05-01T10:00:00.500000000 [anonymous-instance:fc_vcpu 0] mid-run\n"
	                           "2024-05-01 not a log line\n"
	                           "out\n";
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new();

	(void)state;
	run_text(c, s, text, strlen(text), 0, 1);
	assert_string_equal(s->out, "2024-05-01 not a log line\nout\n");
	assert_string_equal(s->err, "E:2024-05-01T10:00:00.500000000 [anonymous-instance:fc_vcpu 0] mid-run\n");
	/* QEMU's console has no such lines: the command's own output of that shape stays on stdout */
	run_text(c, s, text, strlen(text), 0, 0);
	assert_string_equal(s->out, "2024-05-01T10:00:00.500000000 [anonymous-instance:fc_vcpu 0] mid-run\n"
	                            "2024-05-01 not a log line\nout\n");
	free(c);
	free(s);
}

/* random bytes: never more than was fed comes out, nothing crashes (ASan), the status is always in range */
static void
test_console_random(void **state)
{
	static const char *const frags[] = {"SLUICE_EXIT ", "sluice-init: ready", "\r", "\n", "[ 1.2] ", "1", "255",
	                                    "2024-05-01T10:00:00.", "sluice-init: error:", "\0"};
	struct run_console *c = malloc(sizeof(*c));
	struct sink *s = sink_new();
	char *buf = malloc(1 << 16);
	uint32_t x = 12345;
	int round;

	(void)state;
	for (round = 0; round < 300; round++) {
		size_t len = 0;

		memset(s, 0, sizeof(*s));
		run_console_init(c, sink_emit, s, round & 1);
		while (len < 6000) {
			x = x * 1103515245u + 12345u;
			if ((x >> 16) % 3 == 0) {
				const char *f = frags[(x >> 8) % (sizeof(frags) / sizeof(frags[0]))];
				size_t fl = f[0] == '\0' ? 1 : strlen(f);

				memcpy(buf + len, f, fl);
				len += fl;
			} else {
				buf[len++] = (char)(x >> 24);
			}
		}
		run_console_feed(c, buf, len / 2);
		run_console_feed(c, buf + len / 2, len - len / 2);
		run_console_end(c);
		assert_true(s->outlen <= len + 1);
		assert_true(c->status >= -1 && c->status <= 255);
	}
	free(buf);
	free(c);
	free(s);
}

/* ---------------------------------------------------------------- the kernel command line words */

static void
test_guest_args(void **state)
{
	static const char *const env[] = {"GITHUB_TOKEN=sluice_ph_abc", "X_1=v", NULL};
	static const char *const cmd[] = {"sh", "-c", "echo hi", NULL};
	static const char *const bad_env[] = {"PATH=/x", NULL};
	static const char *const empty[] = {NULL};
	struct sandbox_net n;
	char buf[QEMU_APPEND_MAX + 1], small[40];
	int len;

	(void)state;
	assert_int_equal(sandbox_net_plan(&n, "0a1b2c3d", 1, 15001, 15353), 0);
	len = qemu_guest_args(&n, env, cmd, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal((size_t)len, strlen(buf));
	/* base64("sh\0-c\0echo hi") = c2gALWMAZWNobyBoaQ== */
	assert_string_equal(buf, "sluice.ip4=10.200.0.6/30 sluice.gw4=10.200.0.5 sluice.ip6=fd00:5c::6/126 "
	                         "sluice.gw6=fd00:5c::5 sluice.env.GITHUB_TOKEN=sluice_ph_abc sluice.env.X_1=v "
	                         "sluice.cmd=c2gALWMAZWNobyBoaQ==");
	/* exactly enough room, and one byte less */
	assert_int_equal(qemu_guest_args(&n, env, cmd, buf, (size_t)len + 1), len);
	assert_int_equal(qemu_guest_args(&n, env, cmd, buf, (size_t)len), SLUICE_ETOOBIG);
	assert_string_equal(buf, "");
	assert_int_equal(qemu_guest_args(&n, env, cmd, small, sizeof(small)), SLUICE_ETOOBIG);
	assert_int_equal(qemu_guest_args(&n, bad_env, cmd, buf, sizeof(buf)), SLUICE_EINVAL);
	assert_int_equal(qemu_guest_args(&n, env, empty, buf, sizeof(buf)), SLUICE_EINVAL);
	len = qemu_guest_args(&n, NULL, cmd, buf, sizeof(buf));
	assert_int_equal(len, (int)strlen(buf));
	assert_null(strstr(buf, "sluice.env."));
	n.sbx_v6[0] = n.host_v6[0] = '\0';
	assert_true(qemu_guest_args(&n, NULL, cmd, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, "sluice.ip6"));
	memcpy(n.sbx_v4, "10.200.0.x", 11);
	assert_int_equal(qemu_guest_args(&n, NULL, cmd, buf, sizeof(buf)), SLUICE_EINVAL);
}

static void
test_env_valid(void **state)
{
	char big[QEMU_ENV_VALUE_MAX + 8];

	(void)state;
	assert_true(qemu_env_valid("GITHUB_TOKEN=sluice_ph_x"));
	assert_true(qemu_env_valid("_A1="));
	assert_false(qemu_env_valid("lower=x"));
	assert_false(qemu_env_valid("1A=x"));
	assert_false(qemu_env_valid("=x"));
	assert_false(qemu_env_valid("NOEQUALS"));
	assert_false(qemu_env_valid("A=two words"));
	assert_false(qemu_env_valid("A=q\"uote"));
	assert_false(qemu_env_valid("A=back\\slash"));
	assert_false(qemu_env_valid("PATH=/bin"));
	assert_false(qemu_env_valid("LD_PRELOAD=/x.so"));
	assert_false(qemu_env_valid("HTTPS_PROXY=x"));
	memset(big, 'v', sizeof(big));
	memcpy(big, "A=", 2);
	big[QEMU_ENV_VALUE_MAX + 2] = '\0';
	assert_true(qemu_env_valid(big));
	big[QEMU_ENV_VALUE_MAX + 2] = 'v';
	big[QEMU_ENV_VALUE_MAX + 3] = '\0';
	assert_false(qemu_env_valid(big));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_console_lines),
		cmocka_unit_test(test_console_splits),
		cmocka_unit_test(test_console_exit_strict),
		cmocka_unit_test(test_console_early_ring),
		cmocka_unit_test(test_console_long_lines),
		cmocka_unit_test(test_console_firecracker),
		cmocka_unit_test(test_console_random),
		cmocka_unit_test(test_guest_args),
		cmocka_unit_test(test_env_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
