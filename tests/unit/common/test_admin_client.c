/*
 * tests/unit/common/test_admin_client.c - the admin-socket client against a
 * canned server: the request it sends, the replies it accepts and refuses,
 * its reply bound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/admin_client.h"
#include "common/sluice.h"

int test_admin_client_run(void);

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
	char dir[] = "/tmp/sluice-test-admin.XXXXXX", err[256];
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
	ret = admin_client_call(sa.sun_path, method, "/sandboxes", body, status, resp, cap, err, sizeof(err));
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
	big = malloc(ADMIN_CLIENT_REPLY_MAX + 100);
	memset(big, 'x', ADMIN_CLIENT_REPLY_MAX + 100);
	memcpy(big, SLUICE_LIT("HTTP/1.1 200 OK\r\n\r\n"));
	assert_int_equal(call(big, ADMIN_CLIENT_REPLY_MAX + 100, "GET", NULL, &status, NULL, 0, NULL), SLUICE_ETOOBIG);
	free(big);
	/* exactly at the bound is fine */
	big = malloc(ADMIN_CLIENT_REPLY_MAX);
	memset(big, 'x', ADMIN_CLIENT_REPLY_MAX);
	memcpy(big, SLUICE_LIT("HTTP/1.1 200 OK\r\n\r\n"));
	assert_int_equal(call(big, ADMIN_CLIENT_REPLY_MAX, "GET", NULL, &status, NULL, 0, NULL), 0);
	assert_int_equal(status, 200);
	free(big);
}

static void
test_admin_unreachable(void **state)
{
	char err[256];
	int status = 1;

	(void)state;
	assert_int_equal(admin_client_call("/nonexistent/sluice-admin.sock", "GET", "/health", NULL, &status, NULL, 0, err,
	                                sizeof(err)),
	                 SLUICE_EIO);
	assert_int_equal(status, 0);
	assert_non_null(strstr(err, "/nonexistent/sluice-admin.sock"));
}

int
test_admin_client_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admin_call),
		cmocka_unit_test(test_admin_unreachable),
	};

	return cmocka_run_group_tests_name("common/admin_client", tests, NULL, NULL);
}
