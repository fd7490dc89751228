/*
 * tests/integration/approvals_harness.c - test_approvals.sh's stand-in for
 * the request path, which does not park requests yet: the gateway's real
 * admin routes (proxy/admin.c), approvals registry and audit writer, on the
 * admin socket and audit file of CONFIG, with held requests parked by a
 * "worker" thread.  It is a test program, never part of `sluice`: the
 * gateway itself has no way to add an approval but a hold rule.
 *
 *   approvals_harness CONFIG TIMEOUT_MS...
 *
 * Parks one approval per TIMEOUT_MS (cycling through three requests: a
 * refund, a second refund, and one whose sandbox, path and field carry
 * terminal escapes and a bidi override), prints "held <id> <n>" for each,
 * then "ready".  Each callback prints "decided <id> <decision> <by>".
 * SIGTERM: approvals_shutdown (the pending ones get -2), then everything is
 * freed and the audit log stopped; prints "bye".
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <openssl/sha.h>
#include "common/log.h"
#include "common/netaddr.h"
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/judge/approvals.h"
#include "proxy/gateway_int.h"

#define HOLDS_MAX 64

struct held {
	char id[17];
	int n;
};

static struct gateway gw;
static struct event_base *wbase;
static unsigned timeouts[HOLDS_MAX];
static size_t nholds;
static struct held holds[HOLDS_MAX];
static pthread_mutex_t ready_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static int ready;

static const struct policy_field fields0[] = {{"form:amount", "5000"}, {"form:currency", "usd"}};
static const struct policy_field fields1[] = {{"form:amount", "99"}};
static const struct policy_field fields2[] = {{"json:$.note", "\x1b]0;owned\x07 hi"}};
static const char *const bodies[3] = {"amount=5000&currency=usd", "amount=99", "{\"note\":\"x\"}"};

static void
on_decided(void *arg, int decision, const char *by)
{
	struct held *h = arg;

	printf("decided %s %d %s\n", h->id, decision, by);
}

static void
info_of(int n, struct approval_info *in)
{
	const char *body = bodies[n];

	memset(in, 0, sizeof(*in));
	in->method = "POST";
	in->host = "api.stripe.com";
	in->rule = "refunds";
	switch (n) {
	case 0:
		in->sandbox = "sb-one";
		in->path = "/v1/refunds";
		in->fields = fields0;
		in->nfields = 2;
		in->request_id = "7-1";
		break;
	case 1:
		in->sandbox = "sb-two";
		in->path = "/v1/refunds?expand=charge";
		in->fields = fields1;
		in->nfields = 1;
		in->request_id = "8-1";
		break;
	default:
		in->sandbox = "sb-\x1b[31mred";
		in->path = "/v1/refunds/\x1b[2J\xe2\x80\xae""fdp.exe";
		in->fields = fields2;
		in->nfields = 1;
		break;
	}
	SHA256((const unsigned char *)body, strlen(body), in->body_sha256);
}

static void *
worker(void *arg)
{
	struct approval_info in;
	size_t i;
	int rc;

	(void)arg;
	for (i = 0; i < nholds; i++) {
		holds[i].n = (int)(i % 3);
		info_of(holds[i].n, &in);
		rc = approvals_add(gw.approvals, &in, timeouts[i], wbase, on_decided, &holds[i], holds[i].id);
		if (rc != 0) {
			printf("add failed: %s\n", sluice_strerror(rc));
			exit(1);
		}
		printf("held %s %d\n", holds[i].id, holds[i].n);
	}
	pthread_mutex_lock(&ready_mu);
	ready = 1;
	pthread_cond_signal(&ready_cv);
	pthread_mutex_unlock(&ready_mu);
	event_base_loop(wbase, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

static int
bind_unix(const char *path)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	mode_t old;
	int fd;

	if (strlen(path) >= sizeof(un.sun_path))
		return -1;
	memcpy(un.sun_path, path, strlen(path) + 1);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&un, sizeof(un)) == -1 || listen(fd, 16) == -1) {
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

static void
stop_later(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_base_loopexit(wbase, NULL);
	event_base_loopexit(gw.base, NULL);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	approvals_shutdown(gw.approvals);
	event_base_once(gw.base, -1, EV_TIMEOUT, stop_later, NULL, &(struct timeval){0, 300000});
}

int
main(int argc, char **argv)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct audit_opts aopts;
	struct netaddr_listen la;
	struct event *sigterm;
	pthread_t th;
	const char *err = NULL;
	char errbuf[512];
	int i;

	if (argc < 3 || argc - 2 > HOLDS_MAX) {
		fprintf(stderr, "usage: %s CONFIG TIMEOUT_MS...\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	log_init("approvals_harness", 0);
	evthread_use_pthreads();
	for (i = 2; i < argc; i++)
		timeouts[nholds++] = (unsigned)strtoul(argv[i], NULL, 10);
	if (policy_load_file(argv[1], &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "%s\n", errbuf);
		return 1;
	}
	if (cfg->listen_admin == NULL || netaddr_listen_parse(cfg->listen_admin, &la) != 0 || la.family != AF_UNIX) {
		fprintf(stderr, "no listen.admin unix socket\n");
		return 1;
	}
	gw.config_path = argv[1];
	gw.cfg = cfg;
	gw.pol = pol;
	gw.sbx = sbxreg_new();
	gw.approvals = approvals_new(APPROVALS_MAX_PENDING);
	approvals_set_note(gw.approvals, admin_approval_note, &gw);
	policy_audit_opts(cfg, &aopts);
	gw.audit = audit_open(&aopts, argv[1], NULL, NULL, &err);
	if (gw.audit == NULL || audit_start(gw.audit, &err) != 0) {
		fprintf(stderr, "audit: %s\n", err != NULL ? err : "?");
		return 1;
	}
	if ((gw.admin_fd = bind_unix(la.path)) == -1) {
		fprintf(stderr, "cannot bind %s\n", la.path);
		return 1;
	}
	gw.base = event_base_new();
	wbase = event_base_new();
	sigterm = evsignal_new(gw.base, SIGTERM, on_signal, NULL);
	event_add(sigterm, NULL);
	admin_start(&gw);
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		return 1;
	pthread_mutex_lock(&ready_mu);
	while (!ready)
		pthread_cond_wait(&ready_cv, &ready_mu);
	pthread_mutex_unlock(&ready_mu);
	printf("ready\n");
	event_base_dispatch(gw.base);
	pthread_join(th, NULL);
	approvals_free(gw.approvals);
	event_free(sigterm);
	evhttp_free(gw.admin);
	event_base_free(wbase);
	event_base_free(gw.base);
	audit_stop(gw.audit, "exit");
	audit_close(gw.audit);
	sbxreg_free(gw.sbx);
	policy_unref(pol);
	policy_config_free(cfg);
	printf("bye\n");
	return 0;
}
