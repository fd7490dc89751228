/*
 * cli/embed.c - the built-in default configuration and the embedded gateway
 * of `sluice run` (see embed.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ca/ca.h"
#include "cli/embed.h"
#include "common/admin_client.h"
#include "common/clock.h"
#include "common/sluice.h"
#include "sandbox-glue/run.h"

#define PID_FILE_MAX 32   /* "<pid>\n" */
#define EMBED_USER "nobody"                          /* the built-in default's gateway user */
#define EMBED_ROOT_STATE_DIR "/var/lib/sluice-run" /* root's built-in default: not in the package's /var/lib/sluice (0700, its own user) */

static void
say(const char *what, const char *detail)
{
	fprintf(stderr, "sluice run: %s%s%s\n", what, detail != NULL ? ": " : "", detail != NULL ? detail : "");
}

static int
path_join(char *out, size_t cap, const char *a, const char *b)
{
	int n = snprintf(out, cap, "%s%s", a, b);

	return n < 0 || (size_t)n >= cap ? SLUICE_ETOOBIG : 0;
}

int
embed_state_dir(char *out, size_t cap)
{
	const char *v;

	if ((v = getenv("SLUICE_STATE_DIR")) != NULL && v[0] == '/')
		return path_join(out, cap, v, "");
	if ((v = getenv("XDG_STATE_HOME")) != NULL && v[0] == '/')
		return path_join(out, cap, v, "/sluice");
	/* root's home is 0700: the gateway, which drops to EMBED_USER, could not reach its own files there */
	if (geteuid() == 0)
		return path_join(out, cap, EMBED_ROOT_STATE_DIR, "");
	if ((v = getenv("HOME")) != NULL && v[0] == '/')
		return path_join(out, cap, v, "/.local/state/sluice");
	return SLUICE_EINVAL;
}

/*
 * Whether <pw> can walk down to <path>: search permission on every directory
 * from / (the gateway reads its configuration on a reload, watches its
 * directory and writes its state there after dropping to <pw>).
 */
static int
reachable(const char *path, const struct passwd *pw)
{
	char buf[EMBED_PATH_MAX];
	struct stat st;
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (stat(buf, &st) == -1)
			return 0;
		if (!((st.st_uid == pw->pw_uid && (st.st_mode & S_IXUSR)) ||
		      (st.st_gid == pw->pw_gid && (st.st_mode & S_IXGRP)) || (st.st_mode & S_IXOTH)))
			return 0;
		buf[i] = i == n ? '\0' : '/';
	}
	return 1;
}

/* mkdir -p with <mode> for the directories it makes */
static int
mkdirs(const char *path, mode_t mode)
{
	char buf[EMBED_PATH_MAX];
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			return -1;
		buf[i] = i == n ? '\0' : '/';
	}
	return 0;
}

/* the default policy: nothing may leave until the user names a host */
static int
write_default(const char *dir, const char *path)
{
	char tmp[EMBED_PATH_MAX], *text = NULL;
	size_t len;
	int fd, ret = SLUICE_EIO;
	FILE *f;

	if (path_join(tmp, sizeof(tmp), path, ".tmp") != 0)
		return SLUICE_ETOOBIG;
	f = open_memstream(&text, &len);
	if (f == NULL)
		return SLUICE_ENOMEM;
	fprintf(f,
	        "# sluice.yaml - the built-in default of `sluice run` when no -c is given.\n"
	        "# It allows nothing: no name resolves (the DNS responder answers NXDOMAIN), a connection\n"
	        "# to an address is refused (a plain-HTTP request with a 403 saying why), and all is audited.\n"
	        "# Widen it by adding hosts (docs/policy.md), e.g.\n"
	        "#   hosts:\n"
	        "#     api.github.com:\n"
	        "#       rules:\n"
	        "#         - allow: { method: GET, path: \"/repos/**\" }\n"
	        "# and check it with `sluice policy check %s`.\n"
	        "listen:\n"
	        "  transparent: \"[::]:15001\"     # nftables redirects sandbox TCP here\n"
	        "  dns: \"[::]:15353\"             # and sandbox UDP 53 here\n"
	        "  admin: \"unix:%s/admin.sock\"\n"
	        "user: " EMBED_USER "                   # the gateway drops to it after binding\n"
	        "ca: %s/ca\n"
	        "state_dir: %s/state            # counters of limits and budgets (the gateway's user writes it)\n"
	        "audit:\n"
	        "  file: %s/state/audit.jsonl   # there too: rotation makes new files as the gateway's user\n"
	        "default: deny\n"
	        "hosts: {}\n",
	        path, dir, dir, dir, dir);
	if (fclose(f) != 0) {
		free(text);
		return SLUICE_EIO;
	}
	/* readable by the gateway's user, which reads it again on every reload; it holds no secret */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd != -1 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0 && close(fd) == 0) {
		fd = -1;
		/* link, not rename: a run that made it meanwhile wins, and nothing is overwritten */
		if (link(tmp, path) == 0 || errno == EEXIST)
			ret = 0;
	}
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(text);
	return ret;
}

int
embed_default_config(char *out, size_t cap)
{
	char dir[EMBED_PATH_MAX], ca[EMBED_PATH_MAX], pem[EMBED_PATH_MAX], state[EMBED_PATH_MAX];
	struct passwd *pw;
	const char *err = NULL;
	struct stat st;
	int ret;

	if (embed_state_dir(dir, sizeof(dir)) != 0) {
		say("no -c and no state directory for the built-in default", "set HOME, XDG_STATE_HOME or SLUICE_STATE_DIR");
		return SLUICE_EINVAL;
	}
	if (path_join(out, cap, dir, "/sluice.yaml") != 0 || path_join(ca, sizeof(ca), dir, "/ca") != 0 ||
	    path_join(pem, sizeof(pem), ca, "/ca.pem") != 0)
		return SLUICE_ETOOBIG;
	if (mkdirs(dir, 0755) != 0 || path_join(state, sizeof(state), dir, "/state") != 0 ||
	    (mkdir(state, 0700) == -1 && errno != EEXIST)) {
		fprintf(stderr, "sluice run: the state directory %s: %s\n", dir, strerror(errno));
		return SLUICE_EIO;
	}
	/* the counters and the audit trail are written by the gateway after it dropped to EMBED_USER */
	if ((pw = getpwnam(EMBED_USER)) != NULL && geteuid() == 0 && lchown(state, pw->pw_uid, pw->pw_gid) == -1) {
		fprintf(stderr, "sluice run: %s: %s\n", state, strerror(errno));
		return SLUICE_EIO;
	}
	if (pw != NULL && geteuid() == 0 && !reachable(state, pw))
		fprintf(stderr, "sluice run: warning: the gateway (user %s) cannot reach %s: its reloads, counters and "
		        "audit rotation will fail; set SLUICE_STATE_DIR to a directory it can reach\n", EMBED_USER, dir);
	if (stat(pem, &st) == -1) {
		if (ca_init_dir(ca, 0, &err) != 0) {
			fprintf(stderr, "sluice run: a CA in %s: %s\n", ca, err != NULL ? err : "failed");
			return SLUICE_EIO;
		}
		fprintf(stderr, "sluice run: made a CA for the built-in default: %s\n", pem);
	}
	if (stat(out, &st) == -1) {
		if ((ret = write_default(dir, out)) != 0) {
			fprintf(stderr, "sluice run: cannot write %s: %s\n", out, sluice_strerror(ret));
			return ret;
		}
		fprintf(stderr, "sluice run: wrote the built-in default policy (deny all) to %s; edit it to allow hosts\n",
		        out);
	}
	return 0;
}

static int
healthy(const char *admin)
{
	char err[128];
	int status = 0;

	return admin_client_call(admin, "GET", "/health", NULL, &status, NULL, 0, err, sizeof(err)) == 0 && status == 200;
}

static void
nap(void)
{
	struct timespec ts = {0, 20 * 1000000L};

	nanosleep(&ts, NULL);
}

/* the embedded gateway: fork, new session, log file, exec ourselves as `serve` */
static pid_t
spawn(const char *config, const char *log)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	sigset_t none;
	pid_t pid;

	if (fd == -1)
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null == -1 || dup2(null, 0) == -1 || dup2(fd, 1) == -1 || dup2(fd, 2) == -1 || setsid() == -1)
			_exit(127);
		/* `sluice run` blocks signals for its signalfd: the gateway must see its own */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl("/proc/self/exe", "sluice", "serve", "-c", config, (char *)NULL);
		_exit(127);
	}
	close(fd);
	return pid;
}

static int
write_pid(const char *path, pid_t pid)
{
	char buf[PID_FILE_MAX];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)pid);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd == -1)
		return -1;
	if (write(fd, buf, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static pid_t
read_pid(const char *path)
{
	char buf[PID_FILE_MAX], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;
	long v;

	if (fd == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno != 0 || end == buf || (*end != '\n' && *end != '\0') || v <= 1 || v > 0x3fffffff)
		return -1;
	return (pid_t)v;
}

/* 1 when <pid> is a `sluice serve -c ...` (what spawn() started), so a recycled pid is never signalled */
static int
is_gateway(pid_t pid)
{
	static const char want[] = "sluice\0serve\0-c\0";
	char path[64], buf[sizeof(want)];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n == (ssize_t)sizeof(want) - 1 && memcmp(buf, want, sizeof(want) - 1) == 0;
}

int
embed_gateway_ensure(struct embed_gateway *g, const char *config_path, const char *admin_path)
{
	char lock[EMBED_PATH_MAX], log[EMBED_PATH_MAX], pidf[EMBED_PATH_MAX], *config;
	uint64_t deadline;
	pid_t pid;
	int st;

	g->lock_fd = -1;
	if (path_join(g->admin, sizeof(g->admin), admin_path, "") != 0 ||
	    path_join(lock, sizeof(lock), admin_path, ".lock") != 0 ||
	    path_join(log, sizeof(log), admin_path, ".log") != 0 ||
	    path_join(pidf, sizeof(pidf), admin_path, ".embedded") != 0)
		return SLUICE_ETOOBIG;
	g->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (g->lock_fd == -1 || flock(g->lock_fd, LOCK_EX) == -1) {
		fprintf(stderr, "sluice run: %s: %s\n", lock, strerror(errno));
		return SLUICE_EIO;
	}
	if (healthy(admin_path)) {
		flock(g->lock_fd, LOCK_UN);
		return 0;
	}
	config = realpath(config_path, NULL);
	if (config == NULL) {
		fprintf(stderr, "sluice run: %s: %s\n", config_path, strerror(errno));
		return SLUICE_EIO;
	}
	pid = spawn(config, log);
	free(config);
	if (pid == -1 || write_pid(pidf, pid) != 0) {
		fprintf(stderr, "sluice run: cannot start a gateway for %s: %s\n", config_path, strerror(errno));
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
		return SLUICE_EIO;
	}
	deadline = clock_mono_ms() + EMBED_START_MS;
	while (!healthy(admin_path)) {
		if (waitpid(pid, &st, WNOHANG) == pid || clock_mono_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			unlink(pidf);
			fprintf(stderr, "sluice run: the gateway for %s did not start; its log: %s\n", config_path, log);
			return SLUICE_EIO;
		}
		nap();
	}
	fprintf(stderr, "sluice run: started a gateway for %s (pid %ld, log %s)\n", config_path, (long)pid, log);
	flock(g->lock_fd, LOCK_UN);
	return 0;
}

void
embed_gateway_release(struct embed_gateway *g)
{
	char pidf[EMBED_PATH_MAX], resp[64], err[128];
	int status = 0;
	uint64_t deadline;
	pid_t pid;

	if (g->lock_fd == -1)
		return;
	if (flock(g->lock_fd, LOCK_EX) == -1 || path_join(pidf, sizeof(pidf), g->admin, ".embedded") != 0)
		goto out;
	pid = read_pid(pidf);
	if (pid <= 0)
		goto out;  /* the operator's gateway: not ours to stop */
	if (!is_gateway(pid)) {
		unlink(pidf);  /* it is gone (and its pid may be someone else's now) */
		goto out;
	}
	if (admin_client_call(g->admin, "GET", "/sandboxes", NULL, &status, resp, sizeof(resp), err, sizeof(err)) == 0 &&
	    (status != 200 || strspn(resp, "[] \r\n") != strlen(resp) || strchr(resp, '[') == NULL))
		goto out;  /* other sandboxes still use it (or it answers oddly: leave it) */
	/* it no longer answers, or has nobody left: stop it */
	if (kill(pid, SIGTERM) == 0) {
		deadline = clock_mono_ms() + EMBED_STOP_MS;
		while (kill(pid, 0) == 0 && clock_mono_ms() < deadline) {
			waitpid(pid, NULL, WNOHANG);  /* reaps it when it is our child */
			nap();
		}
		if (kill(pid, 0) == 0)
			kill(pid, SIGKILL);
		waitpid(pid, NULL, WNOHANG);
	}
	unlink(pidf);
out:
	close(g->lock_fd);
	g->lock_fd = -1;
}
