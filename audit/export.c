/*
 * audit/export.c - a copy of every audit line to syslog, as RFC 5424
 * messages (audit.syslog): to the local socket /dev/log (which journald and
 * rsyslog read), or to a collector over UDP (one datagram per message) or
 * TCP (octet-counting framing, RFC 6587).
 *
 *   <86>1 2026-12-01T04:07:07.123Z gw1 sluice 4242 audit - {"seq":7,...}
 *
 * PRI 86 is authpriv.info.  The message is the JSON line as written (pure
 * ASCII: the writer escapes every other byte), so a collector can parse it
 * and check its chain.  The export never holds up the log: sends do not
 * block, a message that cannot go now is dropped and counted, and a lost
 * collector is reconnected at most every AUDIT_EXPORT_RETRY_MS.  The file
 * stays the record; syslog is a copy for where auditors already look.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "writer_int.h"

#define AUDIT_EXPORT_RETRY_MS 2000
#define AUDIT_EXPORT_HEAD_MAX 512      /* PRI, version, time, host, app, pid, msgid, SD */
#define AUDIT_EXPORT_PRI 86            /* LOG_AUTHPRIV | LOG_INFO */

enum export_kind { EXPORT_LOCAL = 1, EXPORT_UDP = 2, EXPORT_TCP = 3 };

struct audit_export {
	enum export_kind kind;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int fd;
	int connecting;                 /* TCP: a non-blocking connect under way */
	uint64_t retry_ms;
	char host[256];
	char what[300];                 /* the address, for messages */
	int failing;                    /* what stderr was last told */
	uint64_t dropped;
	char *out;                      /* TCP: bytes not yet sent */
	size_t outlen;
	char *msg;
};

static int
parse(struct audit_export *e, const char *address, char *err, size_t cap)
{
	struct addrinfo hints, *res = NULL;
	char host[256], port[16];
	const char *hp, *colon, *hend;
	size_t hl;
	int rc;

	snprintf(e->what, sizeof(e->what), "%s", address);
	if (strcmp(address, "local") == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&e->addr;

		e->kind = EXPORT_LOCAL;
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, "/dev/log", sizeof("/dev/log"));
		e->addrlen = sizeof(*un);
		return 0;
	}
	if (strncmp(address, "udp://", 6) == 0)
		e->kind = EXPORT_UDP;
	else if (strncmp(address, "tcp://", 6) == 0)
		e->kind = EXPORT_TCP;
	else
		goto bad;
	hp = address + 6;
	if (*hp == '[') {
		hend = strchr(hp, ']');
		if (hend == NULL || hend[1] != ':')
			goto bad;
		hp++;
		colon = hend + 1;
	} else {
		colon = strrchr(hp, ':');
		if (colon == NULL)
			goto bad;
		hend = colon;
	}
	hl = (size_t)(hend - hp);
	if (hl == 0 || hl >= sizeof(host) || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof(port) ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		goto bad;
	memcpy(host, hp, hl);
	host[hl] = '\0';
	snprintf(port, sizeof(port), "%s", colon + 1);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = e->kind == EXPORT_UDP ? SOCK_DGRAM : SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0 || res == NULL || res->ai_addrlen > sizeof(e->addr)) {
		snprintf(err, cap, "audit.syslog.address %s: %s", address, rc != 0 ? gai_strerror(rc) : "no address");
		if (res != NULL)
			freeaddrinfo(res);
		return -1;
	}
	memcpy(&e->addr, res->ai_addr, res->ai_addrlen);
	e->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
bad:
	snprintf(err, cap, "audit.syslog.address %s: expected \"local\", \"udp://host:port\" or \"tcp://host:port\"",
	         address);
	return -1;
}

struct audit_export *
audit_export_open(const char *address, char *err, size_t cap)
{
	struct audit_export *e = xcalloc(1, sizeof(*e));

	e->fd = -1;
	if (parse(e, address, err, cap) != 0) {
		free(e);
		return NULL;
	}
	if (gethostname(e->host, sizeof(e->host)) != 0 || e->host[0] == '\0')
		snprintf(e->host, sizeof(e->host), "-");
	e->host[sizeof(e->host) - 1] = '\0';
	for (char *p = e->host; *p != '\0'; p++)  /* RFC 5424 HOSTNAME: PRINTUSASCII, no spaces */
		if (*p <= ' ' || *p > '~')
			*p = '-';
	e->msg = xmalloc(AUDIT_EXPORT_HEAD_MAX + AUDIT_LINE_MAX + 32);
	return e;
}

static void
drop_conn(struct audit_export *e)
{
	if (e->fd != -1)
		close(e->fd);
	e->fd = -1;
	e->connecting = 0;
	e->outlen = 0;
	e->retry_ms = clock_mono_ms() + AUDIT_EXPORT_RETRY_MS;
}

static void
say(struct audit_export *e, int failing, const char *why)
{
	if (failing == e->failing)
		return;
	e->failing = failing;
	if (failing)
		log_warnx("audit: syslog export to %s failing (%s): lines are dropped until it works (the file has them)",
		          e->what, why);
	else
		log_warnx("audit: syslog export to %s works again (%" PRIu64 " lines dropped so far)", e->what, e->dropped);
}

/* 1 when e->fd can take bytes now. */
static int
ready(struct audit_export *e)
{
	struct pollfd pfd;
	int soerr = 0, type;
	socklen_t sl = sizeof(soerr);

	if (e->fd == -1) {
		if (clock_mono_ms() < e->retry_ms)
			return 0;
		type = e->kind == EXPORT_TCP ? SOCK_STREAM : SOCK_DGRAM;
		e->fd = socket(e->addr.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (e->fd == -1) {
			drop_conn(e);
			say(e, 1, strerror(errno));
			return 0;
		}
		if (connect(e->fd, (struct sockaddr *)&e->addr, e->addrlen) == -1) {
			if (errno != EINPROGRESS) {
				say(e, 1, strerror(errno));
				drop_conn(e);
				return 0;
			}
			e->connecting = 1;
		}
	}
	if (!e->connecting)
		return 1;
	pfd.fd = e->fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, 0) != 1)
		return 0;
	if (getsockopt(e->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1 || soerr != 0) {
		say(e, 1, strerror(soerr != 0 ? soerr : errno));
		drop_conn(e);
		return 0;
	}
	e->connecting = 0;
	return 1;
}

static void
tcp_push(struct audit_export *e)
{
	ssize_t n;

	while (e->outlen > 0) {
		n = send(e->fd, e->out, e->outlen, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			say(e, 1, n == 0 ? "closed" : strerror(errno));
			drop_conn(e);
			return;
		}
		memmove(e->out, e->out + n, e->outlen - (size_t)n);
		e->outlen -= (size_t)n;
	}
}

void
audit_export_line(struct audit_export *e, const char *line, size_t len)
{
	char now[40], lenbuf[24];
	int h, lh = 0;
	ssize_t n;

	if (e == NULL)
		return;
	if (len > AUDIT_LINE_MAX || !ready(e)) {
		e->dropped++;
		return;
	}
	audit_time_now(now, sizeof(now));
	h = snprintf(e->msg, AUDIT_EXPORT_HEAD_MAX, "<%d>1 %s %s sluice %ld audit - ", AUDIT_EXPORT_PRI, now,
	             e->host, (long)getpid());
	if (h < 0 || h >= AUDIT_EXPORT_HEAD_MAX) {
		e->dropped++;
		return;
	}
	memcpy(e->msg + h, line, len);
	if (e->kind != EXPORT_TCP) {
		n = send(e->fd, e->msg, (size_t)h + len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1) {
			e->dropped++;
			say(e, 1, strerror(errno));
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
				drop_conn(e);
			return;
		}
		say(e, 0, NULL);
		return;
	}
	/* octet counting: "<length> <message>" */
	lh = snprintf(lenbuf, sizeof(lenbuf), "%zu ", (size_t)h + len);
	if (e->outlen + (size_t)lh + (size_t)h + len > AUDIT_EXPORT_BUF_MAX) {
		e->dropped++;
		say(e, 1, "collector too slow");
		tcp_push(e);
		return;
	}
	if (e->out == NULL)
		e->out = xmalloc(AUDIT_EXPORT_BUF_MAX);
	memcpy(e->out + e->outlen, lenbuf, (size_t)lh);
	memcpy(e->out + e->outlen + lh, e->msg, (size_t)h + len);
	e->outlen += (size_t)lh + (size_t)h + len;
	tcp_push(e);
	if (e->fd != -1)
		say(e, 0, NULL);
}

void
audit_export_close(struct audit_export *e)
{
	if (e == NULL)
		return;
	if (e->fd != -1 && e->kind == EXPORT_TCP && e->outlen > 0 && !e->connecting) {
		/* one last try for what is queued, without waiting */
		tcp_push(e);
	}
	if (e->fd != -1)
		close(e->fd);
	free(e->out);
	free(e->msg);
	free(e);
}
