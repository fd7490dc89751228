/*
 * sandbox-glue/run_netns.c - `sluice run` with the netns backend: the
 * workload runs through bubblewrap in the sandbox's namespace (netns.h,
 * netns_bwrap.c); run.c did the checks before and tears down after.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common/clock.h"
#include "common/sluice.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/run.h"
#include "run_int.h"
#include "sandbox-glue/sandbox.h"

#define STATUS_MAX 4096        /* what bwrap writes on its status fd */

/* The bubblewrap side of a run. */
struct run_nsx {
	struct run_common *c;
	int status_fd;        /* bwrap's JSON status */
	pid_t bwrap;
	pid_t child_pid;      /* the sandbox's pid 1, from bwrap */
	int exit_code;        /* from bwrap, -1 until known */
	char status[STATUS_MAX];
	size_t status_len;
	uint64_t t_spawn;     /* bwrap started */
	uint64_t t_exec;      /* the command's exec seen (--timing) */
	uint64_t t_exit;      /* bwrap reported the command's exit (--timing: the bound when its exec was too quick to see) */
};

/* ---------------------------------------------------------------- bwrap's status */

static int
json_int(const char *buf, const char *key, long lo, long hi, long *out)
{
	const char *p = strstr(buf, key), *q;
	char *end;
	long v;

	if (p == NULL)
		return 0;
	q = p + strlen(key);
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q != ':')
		return 0;
	q++;
	while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
		q++;
	if (*q < '0' || *q > '9')
		return 0;
	errno = 0;
	v = strtol(q, &end, 10);
	if (errno != 0 || v < lo || v > hi)
		return 0;
	*out = v;
	return 1;
}

void
run_status_parse(const char *buf, pid_t *child_pid, int *exit_code)
{
	long v;

	if (json_int(buf, "\"child-pid\"", 1, INT32_MAX, &v))
		*child_pid = (pid_t)v;
	if (json_int(buf, "\"exit-code\"", 0, 255, &v))
		*exit_code = (int)v;
}

/* ---------------------------------------------------------------- files */

/* appends the file <path> (at most <max> bytes) to <buf>; 0 or -1 with errno */
static int
file_append(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	size_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		if (errno == 0 || S_ISREG(st.st_mode))
			errno = EFBIG;
		close(fd);
		return -1;
	}
	*buf = xrealloc(*buf, *len + (size_t)st.st_size + 2);
	got = proc_read_upto(fd, *buf + *len, (size_t)st.st_size);
	close(fd);
	*len += got;
	if (*len > 0 && (*buf)[*len - 1] != '\n')
		(*buf)[(*len)++] = '\n';
	(*buf)[*len] = '\0';
	return 0;
}

/* reads what bwrap wrote; 1 at EOF */
static int
status_read(struct run_nsx *r)
{
	char tmp[512];
	ssize_t got = read(r->status_fd, tmp, sizeof(tmp));

	if (got == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0)
		return 1;
	if (r->status_len + (size_t)got < sizeof(r->status)) {
		memcpy(r->status + r->status_len, tmp, (size_t)got);
		r->status_len += (size_t)got;
		r->status[r->status_len] = '\0';
	}
	run_status_parse(r->status, &r->child_pid, &r->exit_code);
	if (r->exit_code >= 0 && r->t_exit == 0)
		r->t_exit = clock_mono_ns();
	return 0;
}

static void
forward(struct run_nsx *r, int sig)
{
	pid_t cmd = r->child_pid > 0 ? netns_command_pid(r->child_pid, 0) : 0;

	if (cmd > 0)
		kill(cmd, sig);
	else
		kill(r->bwrap, SIGKILL);  /* nothing started yet: stop the sandbox */
}

/* waits for bwrap, forwarding signals; returns its wait status */
static int
supervise(struct run_nsx *r)
{
	uint64_t deadline = 0;
	int status = 0, eof = 0, signals = 0;

	for (;;) {
		struct pollfd pf[2] = {{r->c->sfd, POLLIN, 0}, {eof ? -1 : r->status_fd, POLLIN, 0}};
		int timeout = -1;
		pid_t w;

		/* watching for the exec costs a wake-up per ms: only with --timing, and for 5 s at most */
		if (r->c->o->timing && r->t_exec == 0 && clock_mono_ns() - r->t_spawn < 5000000000u)
			timeout = 1;
		if (deadline != 0) {
			uint64_t now = clock_mono_ns();
			int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;

			timeout = timeout == -1 || left < timeout ? left : timeout;
		}
		if (poll(pf, 2, timeout) == -1 && errno != EINTR)
			kill(r->bwrap, SIGKILL);
		if (pf[1].revents != 0 && status_read(r))
			eof = 1;
		if (r->c->o->timing && r->t_exec == 0 && r->child_pid > 0 && netns_command_pid(r->child_pid, 1) > 0)
			r->t_exec = clock_mono_ns();
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(r->c->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo != SIGCHLD) {
				if (signals++ == 0) {
					forward(r, (int)si.ssi_signo);
					deadline = clock_mono_ns() + (uint64_t)RUN_GRACE_MS * 1000000u;
				} else {
					kill(r->bwrap, SIGKILL);
				}
			}
		}
		if (deadline != 0 && clock_mono_ns() >= deadline) {
			kill(r->bwrap, SIGKILL);
			deadline = 0;
		}
		w = waitpid(r->bwrap, &status, WNOHANG);
		if (w == r->bwrap)
			break;
	}
	r->bwrap = -1;
	/* the last status line may still be in the pipe */
	while (!eof && status_read(r) == 0 && r->exit_code < 0)
		;
	return status;
}

static int
bundle_make(const struct run_opts *o, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	if (file_append(RUN_SYSTEM_BUNDLE, RUN_BUNDLE_MAX, buf, len) == -1 && errno != ENOENT) {
		run_say("%s: %s", RUN_SYSTEM_BUNDLE, strerror(errno));
		return SLUICE_EIO;
	}
	if (file_append(o->ca_pem, RUN_CA_MAX, buf, len) == -1) {
		run_say("the gateway's CA certificate %s: %s", o->ca_pem, strerror(errno));
		return SLUICE_EIO;
	}
	return 0;
}

int
run_netns(struct run_common *c)
{
	const struct run_opts *o = c->o;
	struct run_nsx *r = xcalloc(1, sizeof(*r));
	struct netns_exec x;
	char err[NETNS_ERR_MAX], resolv[64], *bundle = NULL, *envp[RUN_ENV_MAX + 1];
	size_t bundle_len = 0;
	int ret = 1, st, n;

	r->c = c;
	r->status_fd = -1;
	r->bwrap = -1;
	r->exit_code = -1;
	envp[0] = NULL;
	if (bundle_make(o, &bundle, &bundle_len) != 0)
		goto out;
	n = run_env_make(o->env, o->nenv, o->workspace != NULL, envp, RUN_ENV_MAX + 1);
	if (n < 0) {
		run_say("the environment: %s", sluice_strerror(n));
		goto out;
	}
	if (run_claim(c) != 0)
		goto out;
	if (netns_setup(&c->sb, err, sizeof(err)) != 0) {
		run_say("%s", err);
		goto out;
	}
	c->t_net = clock_mono_ns();
	if (run_register(c) != 0)
		goto out;
	/* a SIGINT/SIGTERM during setup: the command never starts */
	if ((n = run_pending_signal()) != 0) {
		ret = n;
		goto out;
	}
	snprintf(resolv, sizeof(resolv), "nameserver %s\n", c->sb.net.host_v4);
	memset(&x, 0, sizeof(x));
	x.argv = o->argv;
	x.envp = envp;
	x.uid = o->uid;
	x.gid = (gid_t)o->uid;
	x.workspace = o->workspace;
	x.workspace_fd = o->workspace_fd;
	x.resolv = resolv;
	x.resolv_len = strlen(resolv);
	x.bundle = bundle;
	x.bundle_len = bundle_len;
	x.hide = o->hide;
	x.nhide = o->nhide;
	if (netns_spawn(&c->sb, &x, &r->bwrap, &r->status_fd, err, sizeof(err)) != 0) {
		run_say("%s", err);
		goto out;
	}
	r->t_spawn = clock_mono_ns();
	st = supervise(r);
	if (r->exit_code >= 0)
		ret = r->exit_code;
	else if (WIFEXITED(st))
		ret = WEXITSTATUS(st);
	else
		ret = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
	if (o->timing) {
		if (r->t_exec != 0)
			run_say("timing: %.1f ms from start to the command's exec (config %.1f, stale check and claim %.1f, "
			        "network %.1f, registration %.1f, bubblewrap %.1f)",
			        run_ms(o->t0_ns, r->t_exec), run_ms(o->t0_ns, c->t_in), run_ms(c->t_in, c->t_claim),
			        run_ms(c->t_claim, c->t_net), run_ms(c->t_net, c->t_reg), run_ms(c->t_reg, r->t_exec));
		else if (r->t_exit != 0)
			/* a command quicker than the 1 ms watch (`-- true`): its exit bounds its exec */
			run_say("timing: %.1f ms from start to the command's exec, at most (it had exited before its exec "
			        "was seen: the figure is its exit; config %.1f, stale check and claim %.1f, network %.1f, "
			        "registration %.1f, bubblewrap to exit %.1f)",
			        run_ms(o->t0_ns, r->t_exit), run_ms(o->t0_ns, c->t_in), run_ms(c->t_in, c->t_claim),
			        run_ms(c->t_claim, c->t_net), run_ms(c->t_net, c->t_reg), run_ms(c->t_reg, r->t_exit));
		else
			run_say("timing: the command's exec was not observed (%.1f ms to bubblewrap's start)",
			        run_ms(o->t0_ns, r->t_spawn));
	}
out:
	if (r->bwrap > 0) {
		int s;

		kill(r->bwrap, SIGKILL);
		waitpid(r->bwrap, &s, 0);
	}
	if (r->status_fd != -1)
		close(r->status_fd);
	run_env_free(envp);
	free(bundle);
	free(r);
	return ret;
}
