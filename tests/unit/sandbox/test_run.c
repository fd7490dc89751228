/*
 * tests/unit/sandbox/test_run.c - sandbox-glue/run.c without root: the
 * workload's environment, bubblewrap's status documents, and the admin
 * socket client against a canned server.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "common/sluice.h"
#include "sandbox-glue/run.h"

static const char *
env_get(char **envp, const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

static void
test_env_base(void **state)
{
	char *envp[RUN_ENV_MAX + 1];
	const char *extra[] = {"GITHUB_TOKEN=ph_1", "FOO=bar", "FOO=baz", "SSL_CERT_FILE=/x"};
	int n;

	(void)state;
	setenv("TERM", "xterm-256color", 1);
	setenv("LANG", "bad value", 1);
	setenv("SECRET_OF_LAUNCHER", "s3cr3t", 1);
	n = run_env_make(extra, 4, 1, envp, RUN_ENV_MAX + 1);
	assert_true(n > 0);
	assert_null(envp[n]);
	assert_string_equal(env_get(envp, "HOME"), "/workspace");
	assert_string_equal(env_get(envp, "TERM"), "xterm-256color");
	assert_string_equal(env_get(envp, "LANG"), "C.UTF-8"); /* ours had a space: not passed */
	assert_string_equal(env_get(envp, "CURL_CA_BUNDLE"), "/etc/ssl/certs/ca-certificates.crt");
	assert_string_equal(env_get(envp, "npm_config_cafile"), "/etc/ssl/certs/ca-certificates.crt");
	assert_string_equal(env_get(envp, "SSL_CERT_FILE"), "/x"); /* a later entry wins */
	assert_string_equal(env_get(envp, "GITHUB_TOKEN"), "ph_1");
	assert_string_equal(env_get(envp, "FOO"), "baz");
	assert_null(env_get(envp, "SECRET_OF_LAUNCHER"));
	/* PATH HOME TERM LANG + 7 CA variables + GITHUB_TOKEN FOO */
	assert_int_equal(n, 13);
	run_env_free(envp);
	n = run_env_make(NULL, 0, 0, envp, RUN_ENV_MAX + 1);
	assert_string_equal(env_get(envp, "HOME"), "/tmp");
	run_env_free(envp);
}

static void
test_env_refusals(void **state)
{
	char *envp[RUN_ENV_MAX + 1], *big;
	const char *bad1[] = {"NOEQUALS"}, *bad2[] = {"1X=a"}, *bad3[] = {"A-B=c"}, *bad4[] = {"=v"}, *big1[1];

	(void)state;
	assert_int_equal(run_env_make(bad1, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	assert_int_equal(run_env_make(bad2, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	assert_int_equal(run_env_make(bad3, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	assert_int_equal(run_env_make(bad4, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	big = malloc(RUN_ENV_ENTRY_MAX + 2);
	memset(big, 'v', RUN_ENV_ENTRY_MAX + 1);
	memcpy(big, "A=", 2);
	big[RUN_ENV_ENTRY_MAX + 1] = '\0';
	big1[0] = big;
	assert_int_equal(run_env_make(big1, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	free(big);
	/* the base entries alone do not fit 5 slots */
	assert_int_equal(run_env_make(NULL, 0, 0, envp, 5), SLUICE_ETOOBIG);
	assert_int_equal(run_env_name_valid("A_1", 3), 1);
	assert_int_equal(run_env_name_valid("_", 1), 1);
	assert_int_equal(run_env_name_valid("", 0), 0);
	assert_int_equal(run_env_name_valid("9A", 2), 0);
	assert_int_equal(run_env_name_valid("A B", 3), 0);
}

static void
test_status_parse(void **state)
{
	pid_t pid = 0;
	int code = -1;

	(void)state;
	run_status_parse("{ \"child-pid\": 4242 }\n", &pid, &code);
	assert_int_equal(pid, 4242);
	assert_int_equal(code, -1);
	run_status_parse("{ \"child-pid\": 4242 }\n{ \"exit-code\": 7 }\n", &pid, &code);
	assert_int_equal(code, 7);
	pid = 0;
	code = -1;
	run_status_parse("{ \"child-pid\": -1, \"exit-code\": 300 }", &pid, &code);
	assert_int_equal(pid, 0);
	assert_int_equal(code, -1);
	run_status_parse("{ \"child-pid\" 5 \"exit-code\": x }", &pid, &code);
	assert_int_equal(pid, 0);
	assert_int_equal(code, -1);
	run_status_parse("{ \"child-pid\": 99999999999999999999 }", &pid, &code);
	assert_int_equal(pid, 0);
	run_status_parse("", &pid, &code);
	assert_int_equal(pid, 0);
}

/* ---- a canned admin server: one connection, reads the request head, sends <reply> (<len> bytes) */
struct canned {
	int lfd;
	const char *reply;
	size_t len;
	char request[2048];
};

static void *
serve_one(void *arg)
{
	struct canned *c = arg;
	int fd = accept(c->lfd, NULL, NULL);
	size_t got = 0, off = 0;
	ssize_t r;

	if (fd == -1)
		return NULL;
	while (got < sizeof(c->request) - 1 && (r = read(fd, c->request + got, sizeof(c->request) - 1 - got)) > 0) {
		got += (size_t)r;
		c->request[got] = '\0';
		if (strstr(c->request, "\r\n\r\n") != NULL &&
		    (strstr(c->request, "Content-Length: 0\r\n") != NULL || strchr(c->request, '}') != NULL))
			break;
	}
	while (off < c->len && (r = write(fd, c->reply + off, c->len - off)) > 0)
		off += (size_t)r;
	close(fd);
	return NULL;
}

static int
call(const char *reply, size_t len, const char *method, const char *body, int *status, char *resp, size_t cap,
     char *request_out)
{
	struct sockaddr_un sa;
	struct canned c;
	pthread_t th;
	char dir[] = "/tmp/sluice-test-run.XXXXXX", err[256];
	int ret;

	assert_non_null(mkdtemp(dir));
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/admin.sock", dir);
	memset(&c, 0, sizeof(c));
	c.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_not_equal(c.lfd, -1);
	assert_int_equal(bind(c.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(c.lfd, 1), 0);
	c.reply = reply;
	c.len = len;
	assert_int_equal(pthread_create(&th, NULL, serve_one, &c), 0);
	ret = run_admin_call(sa.sun_path, method, "/sandboxes", body, status, resp, cap, err, sizeof(err));
	pthread_join(th, NULL);
	if (request_out != NULL)
		memcpy(request_out, c.request, sizeof(c.request));
	close(c.lfd);
	unlink(sa.sun_path);
	rmdir(dir);
	return ret;
}

static void
test_admin_call(void **state)
{
	static const char ok[] = "HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";
	static const char nf[] = "HTTP/1.1 404 Not Found\r\n\r\n";
	static const char junk[] = "SSH-2.0-OpenSSH\r\n";
	static const char badcode[] = "HTTP/1.1 2000 OK\r\n\r\n";
	char resp[64], req[2048], *big;
	int status = 0;

	(void)state;
	assert_int_equal(call(ok, sizeof(ok) - 1, "POST", "{\"name\":\"a\"}", &status, resp, sizeof(resp), req), 0);
	assert_int_equal(status, 201);
	assert_string_equal(resp, "{\"ok\":true}");
	assert_non_null(strstr(req, "POST /sandboxes HTTP/1.1\r\n"));
	assert_non_null(strstr(req, "Content-Type: application/json\r\n"));
	assert_non_null(strstr(req, "Content-Length: 12\r\n\r\n{\"name\":\"a\"}"));
	/* the body is cut to the caller's buffer, NUL-terminated */
	assert_int_equal(call(ok, sizeof(ok) - 1, "POST", "{}", &status, resp, 5, NULL), 0);
	assert_string_equal(resp, "{\"ok");
	assert_int_equal(call(nf, sizeof(nf) - 1, "DELETE", NULL, &status, NULL, 0, req), 0);
	assert_int_equal(status, 404);
	assert_non_null(strstr(req, "DELETE /sandboxes HTTP/1.1\r\n"));
	assert_null(strstr(req, "Content-Type"));
	assert_int_equal(call(junk, sizeof(junk) - 1, "GET", NULL, &status, NULL, 0, NULL), SLUICE_EPARSE);
	assert_int_equal(status, 0);
	assert_int_equal(call(badcode, sizeof(badcode) - 1, "GET", NULL, &status, NULL, 0, NULL), SLUICE_EPARSE);
	assert_int_equal(call("", 0, "GET", NULL, &status, NULL, 0, NULL), SLUICE_EPARSE);
	/* a reply over the bound is refused, not buffered */
	big = malloc(RUN_HTTP_MAX + 100);
	memset(big, 'x', RUN_HTTP_MAX + 100);
	memcpy(big, "HTTP/1.1 200 OK\r\n\r\n", 19);
	assert_int_equal(call(big, RUN_HTTP_MAX + 100, "GET", NULL, &status, NULL, 0, NULL), SLUICE_ETOOBIG);
	free(big);
	/* exactly at the bound is fine */
	big = malloc(RUN_HTTP_MAX);
	memset(big, 'x', RUN_HTTP_MAX);
	memcpy(big, "HTTP/1.1 200 OK\r\n\r\n", 19);
	assert_int_equal(call(big, RUN_HTTP_MAX, "GET", NULL, &status, NULL, 0, NULL), 0);
	assert_int_equal(status, 200);
	free(big);
}

static void
test_admin_unreachable(void **state)
{
	char err[256];
	int status = 1;

	(void)state;
	assert_int_equal(run_admin_call("/nonexistent/sluice-admin.sock", "GET", "/health", NULL, &status, NULL, 0, err,
	                                sizeof(err)),
	                 SLUICE_EIO);
	assert_int_equal(status, 0);
	assert_non_null(strstr(err, "/nonexistent/sluice-admin.sock"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_base),
		cmocka_unit_test(test_env_refusals),
		cmocka_unit_test(test_status_parse),
		cmocka_unit_test(test_admin_call),
		cmocka_unit_test(test_admin_unreachable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
