/*
 * tests/unit/common/test_log.c - log_escape, and the shape of log lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/log.h"

int test_log_run(void);

/* The full escape of <in>/<len>, as the contract describes it. */
static size_t
ref_escape(char *out, size_t cap, const char *in, size_t len)
{
	size_t o = 0, i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
			assert_true(o + 1 < cap);
			out[o++] = (char)c;
		} else {
			assert_true(o + 4 < cap);
			snprintf(out + o, cap - o, "\\x%02x", c);
			o += 4;
		}
	}
	out[o] = '\0';
	return o;
}

struct esc_case {
	const char *in;
	size_t len;
	const char *out;
};

#define E(s, o) {s, sizeof(s) - 1, o}

static const struct esc_case esc_cases[] = {
	E("", ""),
	E("abc XYZ 019 ~!@#$%^&*()_+{}|:<>?/.,;'[]=-`", "abc XYZ 019 ~!@#$%^&*()_+{}|:<>?/.,;'[]=-`"),
	E("a\nb", "a\\x0ab"),
	E("\r\n", "\\x0d\\x0a"),
	E("\t", "\\x09"),
	E("\x1b[31m", "\\x1b[31m"),
	E("\"", "\\x22"),
	E("\\", "\\x5c"),
	E("\\x41", "\\x5cx41"),
	E("a\0b", "a\\x00b"),
	E("\x7f", "\\x7f"),
	E("\x80\xff", "\\x80\\xff"),
	E("\xc3\xa4", "\\xc3\\xa4"),
};

static void
test_escape_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(esc_cases) / sizeof(esc_cases[0]); i++) {
		char out[256];

		memset(out, 'Z', sizeof(out));
		assert_ptr_equal(log_escape(out, sizeof(out), esc_cases[i].in, esc_cases[i].len), out);
		assert_string_equal(out, esc_cases[i].out);
	}
}

static void
test_escape_cap0_cap1(void **state)
{
	char out[4];

	(void)state;
	/* cap 0: nothing is written, not even a NUL */
	memset(out, 'Z', sizeof(out));
	assert_ptr_equal(log_escape(out, 0, "abc", 3), out);
	assert_int_equal(out[0], 'Z');
	/* cap 1: just the NUL */
	memset(out, 'Z', sizeof(out));
	log_escape(out, 1, "abc", 3);
	assert_int_equal(out[0], '\0');
	assert_int_equal(out[1], 'Z');
	memset(out, 'Z', sizeof(out));
	log_escape(out, 1, "", 0);
	assert_int_equal(out[0], '\0');
	/* cap 2 with an escape that cannot fit */
	memset(out, 'Z', sizeof(out));
	log_escape(out, 2, "\n", 1);
	assert_true(strlen(out) <= 1);
	assert_int_not_equal(out[0], '\n');
	/* NULL input with length 0 */
	memset(out, 'Z', sizeof(out));
	log_escape(out, sizeof(out), NULL, 0);
	assert_int_equal(out[0], '\0');
}

static void
test_escape_truncation(void **state)
{
	char out[64];

	(void)state;
	log_escape(out, 8, "abcdefghij", 10);
	assert_string_equal(out, "abcd...");
	/* an escape is never cut in half */
	log_escape(out, 8, "ab\ncdefgh", 9);
	assert_string_equal(out, "ab...");
	log_escape(out, 7, "abc\"", 4);
	assert_string_equal(out, "abc...");
}

/*
 * Every capacity 0..full+2 for several inputs: output within <cap>, NUL-
 * terminated, a prefix of the full escape at an escape boundary, followed by
 * "..." when anything was dropped (and cap allows it).  <cap> is an exact
 * heap allocation, so ASan reports any write past it.
 */
static void
test_escape_every_cap(void **state)
{
	static const struct esc_case inputs[] = {
		E("hello, world", NULL),
		E("\n\n\n\n", NULL),
		E("a\"b\\c\x01\xff" "d", NULL),
		E("GET /x HTTP/1.1\r\nHost: evil\r\n\r\n", NULL),
	};
	size_t i, cap;

	(void)state;
	for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		char full[512];
		unsigned char bound[512];
		size_t flen = ref_escape(full, sizeof(full), inputs[i].in, inputs[i].len), j, b = 0;

		/* bound[k]: offset k of the full escape lies between two input bytes */
		memset(bound, 0, sizeof(bound));
		bound[0] = 1;
		for (j = 0; j < inputs[i].len; j++) {
			unsigned char c = (unsigned char)inputs[i].in[j];

			b += (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') ? 1 : 4;
			bound[b] = 1;
		}

		for (cap = 0; cap <= flen + 2; cap++) {
			char *out = malloc(cap ? cap : 1);
			size_t olen, keep;

			assert_non_null(out);
			if (cap == 0)
				out[0] = 'Z';
			log_escape(out, cap, inputs[i].in, inputs[i].len);
			if (cap == 0) {
				assert_int_equal(out[0], 'Z');
				free(out);
				continue;
			}
			assert_non_null(memchr(out, '\0', cap));
			olen = strlen(out);
			assert_true(olen < cap);
			if (strcmp(out, full) != 0) {
				/* truncated: a prefix of the full escape, then "..." */
				keep = olen;
				if (olen >= 3 && memcmp(out + olen - 3, "...", 3) == 0)
					keep = olen - 3;
				else
					assert_true(cap < 4);  /* "..." is only missing when it cannot fit */
				assert_true(keep < flen);
				assert_memory_equal(out, full, keep);
				/* the kept part ends at an escape boundary */
				if (!bound[keep])
					fail_msg("cap %zu: escape cut in half: %s", cap, out);
			}
			free(out);
		}
	}
}

/*
 * "Truncates ... when <out> is too small": an escape that fits exactly (its
 * length + NUL == cap) is not too small, and must come out whole.
 */
static void
test_escape_exact_fit(void **state)
{
	char out[64];

	(void)state;
	log_escape(out, 8, "abcdefg", 7);
	assert_string_equal(out, "abcdefg");
	log_escape(out, 4, "abc", 3);
	assert_string_equal(out, "abc");
	log_escape(out, 5, "\n", 1);
	assert_string_equal(out, "\\x0a");
	log_escape(out, 2, "a", 1);
	assert_string_equal(out, "a");
	log_escape(out, 9, "abcdefg", 7);
	assert_string_equal(out, "abcdefg");
	log_escape(out, 10, "abcdefg", 7);
	assert_string_equal(out, "abcdefg");
	log_escape(out, 11, "abcdefg", 7);
	assert_string_equal(out, "abcdefg");
	log_escape(out, 9, "abc\"", 4);
	assert_string_equal(out, "abc\\x22");
}

/* Runs <fn> with stderr redirected to a temporary file; returns what was written. */
static size_t
capture(void (*fn)(void), char *buf, size_t cap)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	assert_non_null(tmp);
	assert_true(saved != -1);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) != -1);
	fn();
	assert_true(dup2(saved, STDERR_FILENO) != -1);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, cap - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return n;
}

static void
emit_warnx(void)
{
	log_init("unit", 0);
	log_warnx("hello %d", 5);
}

static void
emit_warn(void)
{
	log_init("unit", 0);
	errno = ENOENT;
	log_warn("open %s", "x");
	assert_int_equal(errno, ENOENT);  /* logging keeps errno */
}

static void
emit_debug_off(void)
{
	log_init("unit", 0);
	log_debug("invisible");
}

static void
emit_debug_on(void)
{
	log_init("unit", 1);
	log_debug("visible");
	log_init("unit", 0);
}

static char long_msg[5000];

static void
emit_long(void)
{
	log_init("unit", 0);
	log_warnx("%s", long_msg);
}

static void
emit_long_errno(void)
{
	log_init("unit", 0);
	errno = EACCES;
	log_warn("%s", long_msg);
}

static void
emit_fatalx(void)
{
	pid_t pid = fork();
	int status;

	assert_true(pid != -1);
	if (pid == 0) {
		log_init("unit", 0);
		fatalx("bye %s", "now");
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
}

/* As systemd does: JOURNAL_STREAM names the file stderr is now (or, with <other>, a different one). */
static void
journal_env(int other)
{
	struct stat st;
	char v[64];

	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino + (other ? 1 : 0));
	setenv("JOURNAL_STREAM", v, 1);
}

static void
emit_journal(void)
{
	journal_env(0);
	log_init("unit", 1);
	log_warnx("w");
	errno = EACCES;
	log_warn("e");
	log_info("i");
	log_debug("d");
	memset(long_msg, 'm', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = '\0';
	log_warnx("%s", long_msg);
	unsetenv("JOURNAL_STREAM");
	log_init("unit", 0);
}

static void
emit_journal_elsewhere(void)
{
	journal_env(1);  /* inherited by a process whose stderr is some other file: no prefixes */
	log_init("unit", 0);
	log_warnx("w");
	setenv("JOURNAL_STREAM", "garbage", 1);
	log_init("unit", 0);
	log_warnx("w");
	unsetenv("JOURNAL_STREAM");
	log_init("unit", 0);
}

/* Under journald every line starts with its syslog priority, and only then. */
static void
test_log_journal(void **state)
{
	char buf[16384], *line, *save = NULL;
	static const char *const want[] = {"<4>", "<4>", "<6>", "<7>", "<4>"};
	size_t n, i = 0;

	(void)state;
	n = capture(emit_journal, buf, sizeof(buf));
	assert_true(n > 0);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), i++) {
		assert_true(i < 5);
		assert_memory_equal(line, want[i], 3);
		assert_true(strlen(line) < 2048);
	}
	assert_int_equal(i, 5);
	assert_int_equal(buf[n - 1], '\0');  /* strtok_r cut the last newline: the long line still had one */
	capture(emit_journal_elsewhere, buf, sizeof(buf));
	assert_int_equal(buf[0] == '<', 0);
	assert_null(strstr(buf, "\n<"));
}

static int
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static void
test_log_lines(void **state)
{
	char buf[8192], prefix[64];
	size_t n;

	(void)state;
	snprintf(prefix, sizeof(prefix), " unit[%d] ", (int)getpid());

	n = capture(emit_warnx, buf, sizeof(buf));
	assert_true(n > 0);
	assert_true(ends_with(buf, "warning: hello 5\n"));
	assert_non_null(strstr(buf, prefix));
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);

	capture(emit_warn, buf, sizeof(buf));
	assert_true(ends_with(buf, "warning: open x: No such file or directory\n"));

	n = capture(emit_debug_off, buf, sizeof(buf));
	assert_int_equal(n, 0);
	capture(emit_debug_on, buf, sizeof(buf));
	assert_true(ends_with(buf, "debug: visible\n"));

	capture(emit_fatalx, buf, sizeof(buf));
	assert_true(ends_with(buf, "fatal: bye now\n"));
}

static void
test_log_long_line(void **state)
{
	char buf[16384];
	size_t n;

	(void)state;
	memset(long_msg, 'm', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = '\0';

	/* one line, bounded, still ending in a newline */
	n = capture(emit_long, buf, sizeof(buf));
	assert_true(n > 1000);
	assert_true(n <= 2048);
	assert_int_equal(buf[n - 1], '\n');
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	assert_ptr_equal(memchr(buf, '\0', n), NULL);

	n = capture(emit_long_errno, buf, sizeof(buf));
	assert_true(n <= 2048);
	assert_int_equal(buf[n - 1], '\n');
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	assert_ptr_equal(memchr(buf, '\0', n), NULL);
}

int
test_log_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_table),
		cmocka_unit_test(test_escape_cap0_cap1),
		cmocka_unit_test(test_escape_truncation),
		cmocka_unit_test(test_escape_every_cap),
		cmocka_unit_test(test_escape_exact_fit),
		cmocka_unit_test(test_log_lines),
		cmocka_unit_test(test_log_long_line),
		cmocka_unit_test(test_log_journal),
	};

	return cmocka_run_group_tests_name("common/log", tests, NULL, NULL);
}
