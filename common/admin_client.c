/*
 * common/admin_client.c - one HTTP/1.1 request to the gateway's admin unix
 * socket (admin_client.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/admin_client.h"
#include "common/sluice.h"

int
admin_client_request(const char *sock, const char *method, const char *path, const char *body, size_t max,
                     int *status, char **resp, char *err, size_t errcap)
{
	struct sockaddr_un sa;
	struct timeval tv = {ADMIN_CLIENT_TIMEOUT_MS / 1000, (ADMIN_CLIENT_TIMEOUT_MS % 1000) * 1000};
	char head[512], *in = NULL, *p, *end;
	size_t hl, bl = body != NULL ? strlen(body) : 0, got = 0, off, cap = max < 65536 ? max + 1 : 65536;
	unsigned long code;
	int fd = -1, ret = SLUICE_EIO;

	*status = 0;
	*resp = NULL;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		snprintf(err, errcap, "admin socket path too long");
		return SLUICE_EINVAL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		snprintf(err, errcap, "%s: %s", sock, strerror(errno));
		goto out;
	}
	hl = (size_t)snprintf(head, sizeof(head),
	                      "%s %s HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n%sContent-Length: %zu\r\n\r\n",
	                      method, path, body != NULL ? "Content-Type: application/json\r\n" : "", bl);
	if (hl >= sizeof(head)) {
		snprintf(err, errcap, "request path too long");
		ret = SLUICE_EINVAL;
		goto out;
	}
	for (off = 0; off < hl + bl;) {
		const char *src = off < hl ? head + off : body + (off - hl);
		size_t len = off < hl ? hl - off : bl - (off - hl);
		ssize_t w = send(fd, src, len, MSG_NOSIGNAL);

		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, errcap, "%s: sending: %s", sock, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	in = xmalloc(cap + 1);
	for (;;) {
		ssize_t r;

		if (got == cap) {
			if (got > max) {
				snprintf(err, errcap, "%s: reply over %zu bytes", sock, max);
				ret = SLUICE_ETOOBIG;
				goto out;
			}
			cap = cap > max / 2 ? max + 1 : cap * 2;
			in = xrealloc(in, cap + 1);
		}
		r = recv(fd, in + got, cap - got, 0);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errcap, "%s: reading: %s", sock, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	in[got] = '\0';
	ret = SLUICE_EPARSE;
	if (got < 12 || memcmp(in, "HTTP/1.", 7) != 0 || (in[7] != '0' && in[7] != '1') || in[8] != ' ') {
		snprintf(err, errcap, "%s: not an HTTP reply", sock);
		goto out;
	}
	errno = 0;
	code = strtoul(in + 9, &end, 10);
	if (errno != 0 || end != in + 12 || code < 100 || code > 599) {
		snprintf(err, errcap, "%s: bad HTTP status line", sock);
		goto out;
	}
	if ((p = strstr(in, "\r\n\r\n")) == NULL) {
		snprintf(err, errcap, "%s: reply head not ended", sock);
		goto out;
	}
	*status = (int)code;
	p += 4;
	memmove(in, p, got - (size_t)(p - in) + 1);
	*resp = in;
	in = NULL;
	ret = 0;
out:
	free(in);
	if (fd != -1)
		close(fd);
	return ret;
}

int
admin_client_call(const char *sock, const char *method, const char *path, const char *body, int *status, char *resp,
                  size_t cap, char *err, size_t errcap)
{
	char *in;
	int ret;

	if (resp != NULL && cap > 0)
		resp[0] = '\0';
	ret = admin_client_request(sock, method, path, body, ADMIN_CLIENT_REPLY_MAX, status, &in, err, errcap);
	if (ret != 0)
		return ret;
	if (resp != NULL && cap > 0) {
		size_t n = strlen(in);

		if (n >= cap)
			n = cap - 1;
		memcpy(resp, in, n);
		resp[n] = '\0';
	}
	free(in);
	return 0;
}
