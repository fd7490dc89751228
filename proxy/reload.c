/*
 * proxy/reload.c - hot reload and the counters' state file, on the
 * gateway's main thread.
 *
 * A reload (SIGHUP, or a change of the config file when reload.watch is
 * on) compiles the file again.  A policy that loads is handed to every
 * worker (worker_post): connections accepted from then on use it, a
 * request in flight finishes under the policy it started with, and the next
 * request on an open connection is judged under the new one.  A reload that
 * changes the secrets or the sandboxes also ends the open connections' use
 * of the old ones (revoke.c).  A policy that does not load changes nothing.  Either way the
 * result is logged (with the policy's warnings), counted for /metrics and
 * /healthz, and audited as a config_reload record.
 *
 * The file watch is inotify on the file's directory, for IN_CLOSE_WRITE,
 * IN_MOVED_TO and IN_CREATE of the file's name: a write in place, an
 * editor's rename over it, a new file or symlink.  Changes are debounced
 * (RELOAD_DEBOUNCE_MS after the last one) and a text identical to the one
 * last read (SHA-256) is not reloaded.
 *
 * The counters (limits.h) are read from <state_dir>/counters when the
 * gateway is created and saved every second (when something changed) and
 * at stop.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include <systemd/sd-daemon.h>
#include <openssl/evp.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/limits.h"
#include "proxy/metrics.h"
#include "proxy/store/store.h"
#include "secrets/secrets.h"
#include "gateway_int.h"

#define RELOAD_DEBOUNCE_MS 200
#define RELOAD_ERR_MAX 1024          /* bytes of a failed reload's message (file:line:col: ...) */
#define RELOAD_WARNINGS_LOGGED 50    /* policy warnings logged per load; the rest are counted */
#define RELOAD_PERSIST_MS 1000       /* how often changed counters are saved */
#define INOTIFY_BUF (16 * (sizeof(struct inotify_event) + NAME_MAX + 1))

struct reload_state {
	int64_t generation;              /* 1 at start, +1 per successful reload (as /healthz counts) */
	char *state_file;                /* <state_dir>/counters */
	struct event *persist_ev;
	int ifd;                         /* inotify, -1 when not watching */
	struct event *watch_ev;
	struct event *debounce_ev;
	char *dir;                       /* the config file's directory and name */
	char *name;
	unsigned char sha[32];           /* the text last read by a reload (or at start) */
	int have_sha;
};

static char open_err[RELOAD_ERR_MAX];   /* gateway_create's error text (main thread, before anything runs) */

/* SHA-256 of the file at <path>: 0, or -1 when it cannot be read. */
static int
file_sha256(const char *path, unsigned char out[32])
{
	unsigned char buf[16384];
	EVP_MD_CTX *ctx;
	unsigned int n = 0;
	size_t got;
	FILE *f;
	int ret = -1;

	f = fopen(path, "rbe");
	if (f == NULL)
		return -1;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
		if (EVP_DigestUpdate(ctx, buf, got) != 1)
			goto out;
	if (!ferror(f) && EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 32)
		ret = 0;
out:
	EVP_MD_CTX_free(ctx);
	fclose(f);
	return ret;
}

static void
log_warnings(const struct policy *pol, const char *when)
{
	size_t i, n = policy_warning_count(pol);

	for (i = 0; i < n && i < RELOAD_WARNINGS_LOGGED; i++)
		log_warnx("policy (%s): %s", when, policy_warning_get(pol, i));
	if (n > RELOAD_WARNINGS_LOGGED)
		log_warnx("policy (%s): %zu more warnings (sluice policy check lists them all)", when,
		          n - RELOAD_WARNINGS_LOGGED);
}

static void
audit_reload(struct gateway *gw, const char *result, const char *error, int64_t warnings)
{
	struct audit_rec r = {
		.kind = AUDIT_KIND_CONFIG_RELOAD,
		.result = result,
		.generation = gw->reload->generation,
		.error = error,
		.warnings = warnings,
		.status = -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
	};

	if (audit_write(gw->audit, &r) == 0 && audit_enabled(gw->audit))
		log_warnx("the config_reload record could not be queued (the audit log is failing)");
}

void
gateway_reload(struct gateway *gw, const char *why)
{
	struct reload_state *rs = gw->reload;
	struct policy *pol = NULL;
	char errbuf[RELOAD_ERR_MAX];
	uint64_t rgen;
	unsigned i;
	int notify;

	if (rs == NULL)
		return;
	/*
	 * systemd (Type=notify): reloading since now, ready again below whatever
	 * the outcome; never READY=1 again once a drain said STOPPING=1.  No-ops
	 * without NOTIFY_SOCKET.
	 */
	notify = !gw->stopping;
	if (notify)
		sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)clock_mono_us());
	/* this reload reads the file as it is now: a change waiting for its debounce is covered */
	if (rs->debounce_ev != NULL)
		event_del(rs->debounce_ev);
	if (file_sha256(gw->config_path, rs->sha) == 0)
		rs->have_sha = 1;
	if (policy_load_file(gw->config_path, NULL, &pol, errbuf, sizeof(errbuf)) != 0) {
		log_warnx("reload failed, keeping the previous policy: %s (reload on %s)", errbuf, why);
		metrics_reload_failed(gw->metrics, errbuf);
		audit_reload(gw, "error", errbuf, -1);
		if (notify)
			sd_notify(0, "READY=1\nSTATUS=reload failed, the previous policy serves");
		return;
	}
	cred_store_sync(gw->creds, pol);
	rs->generation++;
	/*
	 * Revocation (revoke.c): the generations change before any worker hears of
	 * the policy, so a request judged under the old one and not yet sent is
	 * refused at once rather than when its worker reads its mail.
	 */
	rgen = atomic_load(&gw->revoke_gen) + (revoke_policies_differ(gw->pol, pol) ? 1 : 0);
	atomic_store(&gw->revoke_gen, rgen);
	atomic_store(&gw->pol_gen, (uint64_t)rs->generation);
	for (i = 0; i < gw->nworkers; i++)
		worker_post(&gw->workers[i], policy_ref(pol), (uint64_t)rs->generation, rgen, 0);
	policy_unref(gw->pol);
	gw->pol = pol;
	metrics_policy_loaded(gw->metrics, pol);
	log_info("reloaded the policy from %s (%s): generation %lld, %zu warnings (listeners, limits:, audit:, "
	         "state_dir and upstream settings need a restart)",
	         gw->config_path, why, (long long)rs->generation, policy_warning_count(pol));
	log_warnings(pol, "reload");
	audit_reload(gw, "ok", NULL, (int64_t)policy_warning_count(pol));
	if (notify)
		sd_notifyf(0, "READY=1\nSTATUS=serving, policy generation %lld", (long long)rs->generation);
}

/* mkdir -p <path>: parents 0755, the last one 0700.  1 created, 0 existed, -1 failed (errno). */
static int
make_dirs(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path), i;
	struct stat st;

	if (n == 0 || n >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
	memcpy(buf, path, n + 1);
	for (i = 1; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			return -1;
		buf[i] = '/';
	}
	if (mkdir(buf, 0700) == -1)
		return errno == EEXIST ? 0 : -1;
	return 1;
}

int
reload_init(struct gateway *gw, const char **err)
{
	const struct policy_config *cfg = gw->cfg;
	struct reload_state *rs;
	const char *dir = cfg->state_dir != NULL ? cfg->state_dir : POLICY_STATE_DIR_DEFAULT;
	size_t n = strlen(dir) + sizeof("/counters");
	int made;

	if (cfg->state_backend == POLICY_STATE_REDIS) {
		/* the shared counters: each worker makes its store from these (worker_start); the local
		 * counters below stay, for on_error: local */
		gw->store_opts = xcalloc(1, sizeof(*gw->store_opts));
		if (store_opts_from_config(cfg, gw->store_opts, &gw->store_pw, err) != 0)
			return -1;
		/* read here, before privileges are dropped, as the password is (gateway_run starts the fleet client) */
		if (store_fleet_key_from_config(cfg, &gw->fleet_key, err) != 0)
			return -1;
	}
	rs = xcalloc(1, sizeof(*rs));
	gw->reload = rs;
	rs->generation = 1;
	atomic_store(&gw->pol_gen, 1);
	rs->ifd = -1;
	rs->state_file = xmalloc(n);
	snprintf(rs->state_file, n, "%s/counters", dir);
	made = make_dirs(dir);
	if (made == 1 && geteuid() == 0 && cfg->user != NULL && strcmp(cfg->user, "root") != 0) {
		/* created by root for the user the gateway runs as: it renames its state file in there */
		struct passwd *pw = getpwnam(cfg->user);

		if (pw != NULL && chown(dir, pw->pw_uid, pw->pw_gid) == -1)
			log_warn("state_dir %s: chown to %s", dir, cfg->user);
	}
	gw->limits = limits_open(rs->state_file, open_err, sizeof(open_err));
	if (gw->limits == NULL) {
		*err = open_err;
		return -1;
	}
	if (made == -1) {
		log_warn("state_dir %s cannot be created: requests that take from a rate limit or a budget are "
		         "refused (503) until it can be written", dir);
		limits_set_unsaveable(gw->limits, 1);
	}
	return 0;
}

static void
persist_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;

	(void)fd;
	(void)what;
	(void)limits_persist(gw->limits);   /* logs its own failures, and fails closed when they last */
}

static void
debounce_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	struct reload_state *rs = gw->reload;
	unsigned char sha[32];

	(void)fd;
	(void)what;
	if (rs->have_sha && file_sha256(gw->config_path, sha) == 0 && memcmp(sha, rs->sha, 32) == 0) {
		log_debug("%s changed on disk but its text did not: not reloaded", gw->config_path);
		return;
	}
	gateway_reload(gw, "file changed");
}

static void
watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gateway *gw = arg;
	struct reload_state *rs = gw->reload;
	char buf[INOTIFY_BUF] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct timeval tv = {0, RELOAD_DEBOUNCE_MS * 1000};
	ssize_t n, off;
	int hit = 0;

	(void)what;
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + off);

			if (ev->mask & IN_IGNORED) {
				log_warnx("%s: its directory is gone, the config file is no longer watched (SIGHUP still "
				          "reloads)", gw->config_path);
				event_del(rs->watch_ev);
				return;
			}
			if (ev->len > 0 && strcmp(ev->name, rs->name) == 0)
				hit = 1;
			off += (ssize_t)sizeof(struct inotify_event) + ev->len;
		}
	}
	if (hit)
		event_add(rs->debounce_ev, &tv);   /* re-armed by every change: fires once they settle */
}

static void
watch_start(struct gateway *gw)
{
	struct reload_state *rs = gw->reload;
	const char *path = gw->config_path, *slash = strrchr(path, '/');

	rs->dir = slash == NULL ? xstrdup(".") : slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
	rs->name = xstrdup(slash == NULL ? path : slash + 1);
	rs->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (rs->ifd == -1 || inotify_add_watch(rs->ifd, rs->dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) == -1) {
		log_warn("cannot watch %s for changes (reload.watch); SIGHUP still reloads", rs->dir);
		if (rs->ifd != -1)
			close(rs->ifd);
		rs->ifd = -1;
		return;
	}
	rs->watch_ev = event_new(gw->base, rs->ifd, EV_READ | EV_PERSIST, watch_cb, gw);
	rs->debounce_ev = evtimer_new(gw->base, debounce_cb, gw);
	event_add(rs->watch_ev, NULL);
	if (file_sha256(path, rs->sha) == 0)
		rs->have_sha = 1;
	log_info("watching %s for changes (reload.watch)", path);
}

void
reload_start(struct gateway *gw)
{
	struct reload_state *rs = gw->reload;
	const char *dir = gw->cfg->state_dir != NULL ? gw->cfg->state_dir : POLICY_STATE_DIR_DEFAULT;
	const struct timeval tv = {RELOAD_PERSIST_MS / 1000, (RELOAD_PERSIST_MS % 1000) * 1000};

	log_warnings(gw->pol, "start");
	/* after the privilege drop: the user the gateway runs as must be able to replace the state file */
	if (!limits_unsaveable(gw->limits) && access(dir, W_OK | X_OK) == -1) {
		log_warn("state_dir %s is not writable by this process: requests that take from a rate limit or a "
		         "budget are refused (503) until it is", dir);
		limits_set_unsaveable(gw->limits, 1);
	}
	rs->persist_ev = event_new(gw->base, -1, EV_PERSIST, persist_cb, gw);
	event_add(rs->persist_ev, &tv);
	if (gw->cfg->reload_watch && gw->config_path != NULL)
		watch_start(gw);
}

void
reload_stop(struct gateway *gw)
{
	struct reload_state *rs = gw->reload;

	if (rs == NULL)
		return;
	if (rs->watch_ev != NULL)
		event_free(rs->watch_ev);
	if (rs->debounce_ev != NULL)
		event_free(rs->debounce_ev);
	if (rs->persist_ev != NULL)
		event_free(rs->persist_ev);
	rs->watch_ev = rs->debounce_ev = rs->persist_ev = NULL;
	if (rs->ifd != -1)
		close(rs->ifd);
	rs->ifd = -1;
	/* the workers are gone: what they counted last is saved now */
	if (limits_persist(gw->limits) != 0)
		log_warnx("the counters could not be saved at stop");
}

void
reload_free(struct gateway *gw)
{
	struct reload_state *rs = gw->reload;

	limits_close(gw->limits);
	gw->limits = NULL;
	free(gw->store_opts);  /* the workers' stores are gone (worker_join) */
	gw->store_opts = NULL;
	secret_buf_free(gw->store_pw);
	gw->store_pw = NULL;
	secret_buf_free(gw->fleet_key);
	gw->fleet_key = NULL;
	if (rs == NULL)
		return;
	reload_stop(gw);
	free(rs->state_file);
	free(rs->dir);
	free(rs->name);
	free(rs);
	gw->reload = NULL;
}
