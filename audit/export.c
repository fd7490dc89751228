/*
 * audit/export.c - a copy of every audit line to syslog, as RFC 5424
 * messages (audit.syslog): to the local socket /dev/log (which journald and
 * rsyslog read), or to a collector over UDP (one datagram per message) or
 * TCP (octet-counting framing, RFC 6587).
 *
 *   <86>1 2026-12-01T04:07:07.123Z gw1 sluice 4242 request
 *     [sluice@32473 hash="<64 hex>" seq="7" time="..." type="request" ... prev="<64 hex>"] {"seq":7,...}
 *
 * PRI 86 is authpriv.info; MSGID is the record's kind.  The STRUCTURED-DATA
 * element (audit_sd_format) carries the line's hash and every member of the
 * record as an SD-PARAM, so a SIEM can index them and see gaps in seq; the
 * message is the JSON line as written (pure ASCII: the writer escapes every
 * other byte), so a collector can parse it and check its chain.  The export never holds up the log: sends do not
 * block, a message that cannot go now is dropped and counted, and a lost
 * collector is reconnected at most every AUDIT_EXPORT_RETRY_MS.  The file
 * stays the record; syslog is a copy for where auditors already look.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
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
#define AUDIT_EXPORT_HEAD_MAX 512      /* PRI, version, time, host, app, pid, msgid */
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
	_Atomic uint64_t dropped;       /* read by /metrics on another thread */
	char sd_id[AUDIT_SD_NAME_MAX + 1];  /* "sluice@<enterprise>" */
	char *sd;                       /* the SD element being built */
	char *out;                      /* TCP: bytes not yet sent (queued while connecting, or the collector is slow) */
	size_t outlen;
	uint32_t qlen[AUDIT_EXPORT_QUEUE_MAX];  /* TCP: the framed length of each message in <out>, a ring */
	size_t qhead, qn;               /* its first message and how many */
	size_t qsent;                   /* bytes of the first message already sent */
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
	if (strcmp(address, "local") == 0 || strncmp(address, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&e->addr;
		const char *path = strcmp(address, "local") == 0 ? "/dev/log" : address + 5;
		size_t pl = strlen(path);

		if (pl == 0 || path[0] != '/' || pl >= sizeof(un->sun_path))
			goto bad;
		e->kind = EXPORT_LOCAL;
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, path, pl + 1);
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
	snprintf(err, cap, "audit.syslog.address %s: expected \"local\", \"unix:/path\", \"udp://host:port\" or "
	         "\"tcp://host:port\"", address);
	return -1;
}

struct audit_export *
audit_export_open(const char *address, const char *enterprise, char *err, size_t cap)
{
	struct audit_export *e = xcalloc(1, sizeof(*e));
	int n;

	e->fd = -1;
	if (enterprise == NULL)
		enterprise = AUDIT_SD_PEN_DEFAULT;
	n = snprintf(e->sd_id, sizeof(e->sd_id), "%s@%s", AUDIT_SD_NAME, enterprise);
	if (n < 0 || (size_t)n >= sizeof(e->sd_id) || audit_sd_enterprise_ok(enterprise) != 0) {
		snprintf(err, cap, "audit.syslog.enterprise %s: expected an enterprise number (\"32473\", \"32473.1\")",
		         enterprise);
		free(e);
		return NULL;
	}
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
	e->msg = xmalloc(AUDIT_EXPORT_HEAD_MAX + AUDIT_SD_MAX + AUDIT_LINE_MAX + 32);
	e->sd = xmalloc(AUDIT_SD_MAX);
	return e;
}

static void
drop_conn(struct audit_export *e)
{
	if (e->fd != -1)
		close(e->fd);
	e->fd = -1;
	e->connecting = 0;
	/* what was queued is lost (a message partly sent counts too): the file has it */
	atomic_fetch_add(&e->dropped, e->qn);
	e->qn = e->qhead = e->qsent = 0;
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
		log_warnx("audit: syslog export to %s works again (%" PRIu64 " lines dropped so far)", e->what,
		          atomic_load(&e->dropped));
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
		return e->kind == EXPORT_TCP;  /* still connecting: TCP queues the message meanwhile */
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
		e->qsent += (size_t)n;
		while (e->qn > 0 && e->qsent >= e->qlen[e->qhead]) {
			e->qsent -= e->qlen[e->qhead];
			e->qhead = (e->qhead + 1) % AUDIT_EXPORT_QUEUE_MAX;
			e->qn--;
		}
	}
}

static void
dropped(struct audit_export *e)
{
	atomic_fetch_add(&e->dropped, 1);
}

void
audit_export_rec(struct audit_export *e, const struct audit_record *rec, const char *line, size_t len)
{
	char now[40], lenbuf[24];
	const char *msgid;
	long sdl;
	int h, lh = 0;
	size_t mlen;
	ssize_t n;

	if (e == NULL)
		return;
	if (len > AUDIT_LINE_MAX || !ready(e)) {
		dropped(e);
		return;
	}
	sdl = audit_sd_format(e->sd_id, rec, line, len, e->sd, AUDIT_SD_MAX);
	if (sdl < 0) {
		dropped(e);
		return;
	}
	/* MSGID: the kind, 1*32 PRINTUSASCII (every kind name is) */
	msgid = rec->obj != NULL && rec->type != NULL ? audit_kind_name(rec->kind) : "-";
	audit_time_now(now, sizeof(now));
	h = snprintf(e->msg, AUDIT_EXPORT_HEAD_MAX, "<%d>1 %s %s sluice %ld %s ", AUDIT_EXPORT_PRI, now, e->host,
	             (long)getpid(), msgid);
	if (h < 0 || h >= AUDIT_EXPORT_HEAD_MAX) {
		dropped(e);
		return;
	}
	memcpy(e->msg + h, e->sd, (size_t)sdl);
	e->msg[h + sdl] = ' ';
	memcpy(e->msg + h + sdl + 1, line, len);
	mlen = (size_t)h + (size_t)sdl + 1 + len;
	if (e->kind != EXPORT_TCP) {
		n = send(e->fd, e->msg, mlen, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1) {
			dropped(e);
			say(e, 1, strerror(errno));
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS && errno != EMSGSIZE)
				drop_conn(e);
			return;
		}
		say(e, 0, NULL);
		return;
	}
	/* octet counting (RFC 6587 3.4.1): "<length> <message>" */
	lh = snprintf(lenbuf, sizeof(lenbuf), "%zu ", mlen);
	if (e->outlen + (size_t)lh + mlen > AUDIT_EXPORT_BUF_MAX || e->qn == AUDIT_EXPORT_QUEUE_MAX) {
		dropped(e);
		if (!e->connecting) {
			say(e, 1, "collector too slow");
			tcp_push(e);
		}
		return;
	}
	if (e->out == NULL)
		e->out = xmalloc(AUDIT_EXPORT_BUF_MAX);
	memcpy(e->out + e->outlen, lenbuf, (size_t)lh);
	memcpy(e->out + e->outlen + lh, e->msg, mlen);
	e->outlen += (size_t)lh + mlen;
	e->qlen[(e->qhead + e->qn) % AUDIT_EXPORT_QUEUE_MAX] = (uint32_t)((size_t)lh + mlen);
	e->qn++;
	if (e->connecting)
		return;
	tcp_push(e);
	if (e->fd != -1)
		say(e, 0, NULL);
}

void
audit_export_poll(struct audit_export *e)
{
	if (e == NULL || e->kind != EXPORT_TCP || e->fd == -1 || e->outlen == 0)
		return;
	if (ready(e) && !e->connecting)
		tcp_push(e);
}

void
audit_export_count_dropped(struct audit_export *e, uint64_t n)
{
	if (e != NULL)
		atomic_fetch_add(&e->dropped, n);
}

uint64_t
audit_export_dropped(const struct audit_export *e)
{
	return e != NULL ? atomic_load(&e->dropped) : 0;
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
	free(e->sd);
	free(e);
}
