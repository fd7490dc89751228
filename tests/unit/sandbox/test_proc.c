/*
 * tests/unit/sandbox/test_proc.c - the launcher's shared helpers (proc.c).
 *
 * proc_run is exercised with ordinary programs (/bin/sh, /usr/bin/cat,
 * /usr/bin/env, /usr/bin/ls) standing in for nft and ip: the path list, the
 * argv and environment the child gets, the file descriptors it inherits,
 * stdin and stdout, the bounded and sanitised first line of stderr, the
 * messages for an exit status and a signal, the argument bound, the namespace
 * fd, and that it waits for its own child only.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sluice.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/sandbox.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const sh[] = {"/bin/sh"};
static const char *const cat[] = {"/nonexistent/bin/cat", "/usr/bin/cat"};

/* ------------------------------------------------------------------ small helpers */

static void
test_err_set(void **state)
{
	char err[4] = "xyz";

	(void)state;
	proc_err_set(NULL, 10, "ignored %d", 1);
	proc_err_set(err, 0, "ignored %d", 1);
	assert_string_equal(err, "xyz");
	proc_err_set(err, sizeof(err), "ab%s", "cdef");
	assert_string_equal(err, "abc");
	proc_err_set(err, sizeof(err), "%d", 7);
	assert_string_equal(err, "7");
}

static void
test_write_read(void **state)
{
	char buf[64];
	int fd = memfd_create("t", MFD_CLOEXEC), p[2];

	(void)state;
	assert_int_not_equal(fd, -1);
	assert_int_equal(proc_write_all(fd, "hello, world", 12), 0);
	assert_int_equal(proc_write_all(fd, "", 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	/* bounded by <len> ... */
	assert_int_equal(proc_read_upto(fd, buf, 5), 5);
	assert_memory_equal(buf, "hello", 5);
	/* ... and by the end of the file */
	assert_int_equal(proc_read_upto(fd, buf, sizeof(buf)), 7);
	assert_memory_equal(buf, ", world", 7);
	assert_int_equal(proc_read_upto(fd, buf, sizeof(buf)), 0);
	close(fd);

	/* several short reads add up (a pipe hands back what each write put in) */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(proc_write_all(p[1], "abc", 3), 0);
	assert_int_equal(proc_write_all(p[1], "def", 3), 0);
	close(p[1]);
	assert_int_equal(proc_read_upto(p[0], buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "abcdef", 6);
	close(p[0]);

	/* errors: a write error is SLUICE_EIO with errno, a read error ends the read */
	errno = 0;
	assert_int_equal(proc_write_all(-1, "x", 1), SLUICE_EIO);
	assert_int_equal(errno, EBADF);
	assert_int_equal(proc_read_upto(-1, buf, sizeof(buf)), 0);
}

static void
test_memfd_with(void **state)
{
	char buf[16];
	int fd;

	(void)state;
	fd = proc_memfd_with("t", "data\0more", 9);
	assert_int_not_equal(fd, -1);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	assert_int_equal(proc_read_upto(fd, buf, sizeof(buf)), 9);
	assert_memory_equal(buf, "data\0more", 9);
	close(fd);
	fd = proc_memfd_with("empty", NULL, 0);
	assert_int_not_equal(fd, -1);
	assert_int_equal(proc_read_upto(fd, buf, sizeof(buf)), 0);
	close(fd);
}

static void
test_hex_lower(void **state)
{
	char *shortid = malloc(4);  /* ASan: a read past "abc" and its NUL would be caught */

	(void)state;
	assert_true(proc_hex_lower("0123456789abcdef", 16));
	assert_true(proc_hex_lower("", 0));
	assert_true(proc_hex_lower("zz", 0));
	assert_false(proc_hex_lower("0123ABCD", 8));
	assert_false(proc_hex_lower("0123abcg", 8));
	assert_false(proc_hex_lower("0123 abc", 8));
	assert_false(proc_hex_lower("abcd\0ef0", 8));
	memcpy(shortid, "abc", 4);
	assert_false(proc_hex_lower(shortid, SANDBOX_ID_LEN));
	free(shortid);
}

/* ------------------------------------------------------------------ proc_run */

static void
test_run_not_found(void **state)
{
	static const char *const none[] = {"/nonexistent/a/nft", "/nonexistent/b/nft"};
	static const char *const args[] = {"-f", "-", NULL};
	char out[16] = "stale", err[128] = "stale";

	(void)state;
	assert_int_equal(proc_run(none, N(none), args, -1, "x", out, sizeof(out), err, sizeof(err)), SLUICE_EIO);
	assert_string_equal(err, "nft not found (/nonexistent/a/nft, /nonexistent/b/nft)");
	assert_string_equal(out, "");
	/* bounded: the message is cut, never overflows */
	assert_int_equal(proc_run(none, N(none), args, -1, "x", NULL, 0, err, 8), SLUICE_EIO);
	assert_string_equal(err, "nft not");
	assert_int_equal(proc_run(none, N(none), args, -1, "x", NULL, 0, NULL, 0), SLUICE_EIO);
}

static void
test_run_stdin_stdout(void **state)
{
	static const char *const noargs[] = {NULL};
	char out[64], err[64] = "stale";

	(void)state;
	/* the second path of the list is taken: the first does not exist */
	assert_int_equal(proc_run(cat, N(cat), noargs, -1, "hello\nworld\n", out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "hello\nworld\n");
	assert_string_equal(err, "");
	assert_int_equal(proc_run(cat, N(cat), noargs, -1, NULL, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "");
	/* exactly fits (with the NUL) / one byte too many */
	assert_int_equal(proc_run(cat, N(cat), noargs, -1, "hello\n", out, 7, err, sizeof(err)), 0);
	assert_string_equal(out, "hello\n");
	assert_int_equal(proc_run(cat, N(cat), noargs, -1, "hello\n", out, 6, err, sizeof(err)), SLUICE_ETOOBIG);
	assert_string_equal(out, "");
	assert_string_equal(err, "cat output larger than 6 bytes");
	assert_int_equal(proc_run(cat, N(cat), noargs, -1, "hello\n", out, 0, err, sizeof(err)), SLUICE_ETOOBIG);
	assert_string_equal(err, "cat output larger than 0 bytes");
	/* without <out>, stdout goes nowhere */
	assert_int_equal(proc_run(cat, N(cat), noargs, -1, "hello\n", NULL, 0, err, sizeof(err)), 0);
	assert_string_equal(err, "");
}

static void
test_run_argv_env_fds(void **state)
{
	static const char *const envp[] = {"/usr/bin/env"};
	static const char *const ls[] = {"/usr/bin/ls"};
	static const char *const cmdline[] = {"/proc/self/cmdline", NULL};
	static const char *const fdargs[] = {"/proc/self/fd", NULL};
	static const char *const noargs[] = {NULL};
	char out[256], err[64];
	int leak = open("/dev/null", O_RDONLY);  /* not close-on-exec: the child must not get it anyway */

	(void)state;
	assert_true(leak > 2);
	/* argv[0] is the path's last component, then the words as given */
	assert_int_equal(proc_run(cat, N(cat), cmdline, -1, NULL, out, sizeof(out), err, sizeof(err)), 0);
	assert_memory_equal(out, "cat\0/proc/self/cmdline\0", 23);
	/* the environment is ours, not the caller's */
	setenv("SLUICE_TEST_LEAK", "1", 1);
	assert_int_equal(proc_run(envp, N(envp), noargs, -1, NULL, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "PATH=/usr/sbin:/usr/bin:/sbin:/bin\nLC_ALL=C\n");
	/* 0, 1, 2 and ls's own directory fd: nothing else of ours */
	assert_int_equal(proc_run(ls, N(ls), fdargs, -1, NULL, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "0\n1\n2\n3\n");
	close(leak);
}

static void
test_run_stderr(void **state)
{
	static const char *const twolines[] = {"-c", "printf 'bad\\tthing\\001\\177\\nsecond line\\n' >&2; exit 3", NULL};
	static const char *const nul[] = {"-c", "printf 'a\\000b\\n' >&2; exit 1", NULL};
	static const char *const quiet[] = {"-c", "exit 3", NULL};
	static const char *const killed[] = {"-c", "kill -9 $$", NULL};
	static const char *const okbutnoisy[] = {"-c", "echo warning >&2; echo out", NULL};
	char err[64], out[16];

	(void)state;
	/* the first line only, control characters replaced */
	assert_int_equal(proc_run(sh, N(sh), twolines, -1, NULL, NULL, 0, err, sizeof(err)), SLUICE_EIO);
	assert_string_equal(err, "bad?thing??");
	/* bounded by <errcap> */
	assert_int_equal(proc_run(sh, N(sh), twolines, -1, NULL, NULL, 0, err, 5), SLUICE_EIO);
	assert_string_equal(err, "bad?");
	/* a NUL byte in stderr is a control character too, not the end */
	assert_int_equal(proc_run(sh, N(sh), nul, -1, NULL, NULL, 0, err, sizeof(err)), SLUICE_EIO);
	assert_string_equal(err, "a?b");
	/* nothing on stderr: how it ended */
	assert_int_equal(proc_run(sh, N(sh), quiet, -1, NULL, out, sizeof(out), err, sizeof(err)), SLUICE_EIO);
	assert_string_equal(err, "/bin/sh exited with status 3");
	assert_string_equal(out, "");
	assert_int_equal(proc_run(sh, N(sh), killed, -1, NULL, NULL, 0, err, sizeof(err)), SLUICE_EIO);
	assert_string_equal(err, "/bin/sh killed by signal 9");
	assert_int_equal(proc_run(sh, N(sh), quiet, -1, NULL, NULL, 0, NULL, 0), SLUICE_EIO);
	/* success: stderr is not an error, and <err> is emptied */
	memcpy(err, "stale", 6);
	assert_int_equal(proc_run(sh, N(sh), okbutnoisy, -1, NULL, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_string_equal(out, "out\n");
}

static void
test_run_args_bound(void **state)
{
	const char *args[PROC_ARGS_MAX + 2];
	char out[128], err[64];
	size_t i;

	(void)state;
	args[0] = "-c";
	args[1] = "echo $#";
	for (i = 2; i < PROC_ARGS_MAX; i++)
		args[i] = "x";
	args[PROC_ARGS_MAX] = NULL;
	/* PROC_ARGS_MAX words: sh gets "-c", the script, $0 and PROC_ARGS_MAX - 3 positional ones */
	assert_int_equal(proc_run(sh, N(sh), args, -1, NULL, out, sizeof(out), err, sizeof(err)), 0);
	snprintf(err, sizeof(err), "%d\n", PROC_ARGS_MAX - 3);
	assert_string_equal(out, err);
	args[PROC_ARGS_MAX] = "one too many";
	args[PROC_ARGS_MAX + 1] = NULL;
	assert_int_equal(proc_run(sh, N(sh), args, -1, NULL, out, sizeof(out), err, sizeof(err)), SLUICE_EINVAL);
	snprintf(out, sizeof(out), "sh: more than %d arguments", PROC_ARGS_MAX);
	assert_string_equal(err, out);
}

static void
test_run_netns(void **state)
{
	static const char *const ok[] = {"-c", "exit 0", NULL};
	char err[64];
	int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), notns = memfd_create("t", MFD_CLOEXEC);

	(void)state;
	assert_int_not_equal(ns, -1);
	/* our own namespace: joining it needs CAP_SYS_ADMIN, else the child stops before the exec (125) */
	if (geteuid() == 0) {
		assert_int_equal(proc_run(sh, N(sh), ok, ns, NULL, NULL, 0, err, sizeof(err)), 0);
	} else {
		assert_int_equal(proc_run(sh, N(sh), ok, ns, NULL, NULL, 0, err, sizeof(err)), SLUICE_EIO);
		assert_string_equal(err, "/bin/sh exited with status 125");
	}
	/* not a namespace: setns fails, the program never runs */
	assert_int_equal(proc_run(sh, N(sh), ok, notns, NULL, NULL, 0, err, sizeof(err)), SLUICE_EIO);
	assert_string_equal(err, "/bin/sh exited with status 125");
	close(ns);
	close(notns);
}

static void
test_run_own_child_only(void **state)
{
	static const char *const ok[] = {"-c", "exit 0", NULL};
	char err[64];
	int status = -1;
	pid_t other;

	(void)state;
	other = fork();
	assert_int_not_equal(other, -1);
	if (other == 0)
		_exit(7);
	/* let it exit: a waitpid(-1) inside proc_run would reap it */
	usleep(100000);
	assert_int_equal(proc_run(sh, N(sh), ok, -1, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(waitpid(other, &status, 0), other);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err_set),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_memfd_with),
		cmocka_unit_test(test_hex_lower),
		cmocka_unit_test(test_run_not_found),
		cmocka_unit_test(test_run_stdin_stdout),
		cmocka_unit_test(test_run_argv_env_fds),
		cmocka_unit_test(test_run_stderr),
		cmocka_unit_test(test_run_args_bound),
		cmocka_unit_test(test_run_netns),
		cmocka_unit_test(test_run_own_child_only),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
