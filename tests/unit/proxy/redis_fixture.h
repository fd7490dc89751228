/*
 * tests/unit/proxy/redis_fixture.h - a redis-server of the test's own, on a
 * unix socket in a temporary directory (and, with rfx_start_port, on
 * 127.0.0.1:<port> as well; else no TCP port: `port 0`), with a
 * password from the configuration file (never on a command line), no
 * persistence, and killed with the test process (PR_SET_PDEATHSIG) even
 * when the test crashes.  Used by test_store.c and bench/store_bench.c.
 *
 * rfx_start() starts it and waits (bounded) until it answers PING;
 * rfx_stop() kills it (SIGKILL: also when a test stopped it) and
 * removes the directory; rfx_admin() is a synchronous client for the test's
 * own commands (CONFIG SET, SCRIPT FLUSH, ...).
 */
#ifndef SLUICE_TESTS_REDIS_FIXTURE_H
#define SLUICE_TESTS_REDIS_FIXTURE_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define RFX_START_MS 5000       /* how long a redis-server may take to answer */

struct rfx {
	char dir[64];
	char sock[96];
	char conf[96];
	char password[33];          /* 32 hex digits, random per run */
	pid_t pid;
	unsigned port;              /* 0: the unix socket only; else also TCP on 127.0.0.1:<port> */
};

static inline void
rfx_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* A synchronous client authenticated as the default user, or NULL. */
static inline redisContext *
rfx_admin(const struct rfx *r)
{
	struct timeval tv = {2, 0};
	redisContext *c = redisConnectUnixWithTimeout(r->sock, tv);
	redisReply *rep;

	if (c == NULL || c->err) {
		if (c != NULL)
			redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	rep = redisCommand(c, "AUTH %s", r->password);
	if (rep == NULL || rep->type != REDIS_REPLY_STATUS) {
		if (rep != NULL)
			freeReplyObject(rep);
		redisFree(c);
		return NULL;
	}
	freeReplyObject(rep);
	return c;
}

/* Runs one command on a fresh admin connection; 0 when Redis answered without an error. */
static inline int
rfx_cmd(const struct rfx *r, const char *cmd)
{
	redisContext *c = rfx_admin(r);
	redisReply *rep;
	int ret;

	if (c == NULL)
		return -1;
	rep = redisCommand(c, cmd);
	ret = rep != NULL && rep->type != REDIS_REPLY_ERROR ? 0 : -1;
	if (rep != NULL)
		freeReplyObject(rep);
	redisFree(c);
	return ret;
}

/* Starts (or, with the same directory and password, restarts) the server: 0, or -1. */
static inline int
rfx_spawn(struct rfx *r)
{
	unsigned waited = 0;

	unlink(r->sock);
	r->pid = fork();
	if (r->pid == -1)
		return -1;
	if (r->pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd != -1) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("redis-server", "redis-server", r->conf, (char *)NULL);
		_exit(127);
	}
	while (waited < RFX_START_MS) {
		redisContext *c = rfx_admin(r);

		if (c != NULL) {
			redisFree(c);
			return 0;
		}
		rfx_sleep_ms(20);
		waited += 20;
	}
	return -1;
}

/* Starts a server on the unix socket and, when <port> is not 0, on 127.0.0.1:<port>: 0, or -1. */
static inline int
rfx_start_port(struct rfx *r, unsigned port)
{
	unsigned char rnd[16];
	FILE *f;
	int fd, i;

	memset(r, 0, sizeof(*r));
	r->port = port;
	snprintf(r->dir, sizeof(r->dir), "/tmp/sluice-redis-XXXXXX");
	if (mkdtemp(r->dir) == NULL)
		return -1;
	snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
	snprintf(r->conf, sizeof(r->conf), "%s/redis.conf", r->dir);
	if ((fd = open("/dev/urandom", O_RDONLY)) == -1 || read(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
		return -1;
	close(fd);
	for (i = 0; i < 16; i++)
		snprintf(r->password + 2 * i, 3, "%02x", rnd[i]);
	if ((fd = open(r->conf, O_WRONLY | O_CREAT | O_EXCL, 0600)) == -1 || (f = fdopen(fd, "w")) == NULL)
		return -1;
	if (port != 0)
		fprintf(f, "bind 127.0.0.1\nprotected-mode yes\n");
	fprintf(f, "port %u\nunixsocket %s\nunixsocketperm 700\ndir %s\nsave \"\"\nappendonly no\n"
	        "daemonize no\nlogfile %s/redis.log\nmaxmemory-policy noeviction\nrequirepass %s\n",
	        port, r->sock, r->dir, r->dir, r->password);
	fclose(f);
	return rfx_spawn(r);
}

static inline int
rfx_start(struct rfx *r)
{
	return rfx_start_port(r, 0);
}

/* Kills the server (it can be started again with rfx_spawn). */
static inline void
rfx_kill(struct rfx *r)
{
	if (r->pid <= 0)
		return;
	kill(r->pid, SIGKILL);   /* also ends a stopped process, which SIGCONT first would let answer */
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
}

static inline void
rfx_stop(struct rfx *r)
{
	char p[128];

	rfx_kill(r);
	if (r->dir[0] == '\0')
		return;
	unlink(r->sock);
	unlink(r->conf);
	snprintf(p, sizeof(p), "%s/redis.log", r->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/dump.rdb", r->dir);
	unlink(p);
	rmdir(r->dir);
	r->dir[0] = '\0';
}

#endif
