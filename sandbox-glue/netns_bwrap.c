/*
 * sandbox-glue/netns_bwrap.c - the netns backend's workload: bubblewrap
 * started inside the sandbox's namespace (netns_spawn), and finding the
 * command's pid (netns_command_pid).  See netns.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common/sluice.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/proc.h"

#define CHILDREN_MAX 256       /* bytes of /proc/PID/task/PID/children we read */
#define BWRAP_FIXED_ARGS 96    /* bwrap options before the command, without the hidden paths */

#define FD_RESOLV 3
#define FD_BUNDLE 4
#define FD_STATUS 5
/* FD_STATUS + 1: the child's error pipe until the exec */
#define FD_HOSTS 7

/* The sandbox's /etc/hosts: its own name (bwrap --hostname sandbox) in both families, localhost, nothing of the host's. */
#define SANDBOX_HOSTS                                                                      \
	"127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback sandbox\n"
#define FD_WORKSPACE 8   /* after the hosts file */

struct args {
	const char **v;
	size_t n, cap;
};

static void
arg(struct args *a, const char *s)
{
	if (a->n + 1 < a->cap)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

/* /bin, /lib, ...: the same symlink when the host has one, else a read-only bind of the directory */
static void
system_dir(struct args *a, const char *path, char *store, size_t cap)
{
	struct stat st;
	ssize_t got;

	if (lstat(path, &st) == -1)
		return;
	if (S_ISLNK(st.st_mode)) {
		got = readlink(path, store, cap - 1);
		if (got <= 0)
			return;
		store[got] = '\0';
		arg(a, "--symlink");
		arg(a, store);
		arg(a, path);
	} else if (S_ISDIR(st.st_mode)) {
		arg(a, "--ro-bind");
		arg(a, path);
		arg(a, path);
	}
}

/* a path under /etc or /usr the sandbox must not read: an empty tmpfs over a directory, /dev/null over a file */
static void
hide(struct args *a, const char *path)
{
	struct stat st;

	if ((strncmp(path, "/etc/", 5) != 0 && strncmp(path, "/usr/", 5) != 0) || stat(path, &st) == -1)
		return;
	if (S_ISDIR(st.st_mode)) {
		arg(a, "--tmpfs");
		arg(a, path);
	} else {
		arg(a, "--ro-bind");
		arg(a, "/dev/null");
		arg(a, path);
	}
}

static void
child_fail(int efd, int step)
{
	int e[2] = {step, errno};

	(void)!write(efd, e, sizeof(e));
	_exit(127);
}

int
netns_spawn(const struct netns_sandbox *sb, const struct netns_exec *x, pid_t *pid, int *status_fd, char *err,
            size_t errcap)
{
	static const char *const steps[] = {"?", "setns", "setpgid", "drop privileges", "parent death signal",
	                                    "file descriptors", ("exec " NETNS_BWRAP)};
	static const char *const sysdirs[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"};
	char links[6][256], uidbuf[16], gidbuf[16], nspath[64], fdr[8], fdb[8], fds[8], fdh[8], fdw[8];
	struct args a;
	int nsfd = -1, rfd = -1, bfd = -1, hfd = -1, sp[2] = {-1, -1}, ep[2] = {-1, -1}, e[2], ret = SLUICE_EIO;
	size_t i, nargv;
	pid_t parent = getpid(), p;
	ssize_t got;

	*pid = -1;
	*status_fd = -1;
	for (nargv = 0; x->argv[nargv] != NULL; nargv++)
		;
	if (nargv == 0 || nargv > NETNS_ARGV_MAX || x->uid == 0 || x->gid == 0 || x->nhide > NETNS_HIDE_MAX) {
		proc_err_set(err, errcap, "bad command or uid");
		return SLUICE_EINVAL;
	}
	a.cap = BWRAP_FIXED_ARGS + 3 * x->nhide + nargv + 1;
	a.v = xcalloc(a.cap, sizeof(*a.v));
	a.n = 0;
	snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)x->uid);
	snprintf(gidbuf, sizeof(gidbuf), "%u", (unsigned)x->gid);
	snprintf(fdr, sizeof(fdr), "%d", FD_RESOLV);
	snprintf(fdb, sizeof(fdb), "%d", FD_BUNDLE);
	snprintf(fdw, sizeof(fdw), "%d", FD_WORKSPACE);
	snprintf(fds, sizeof(fds), "%d", FD_STATUS);
	snprintf(fdh, sizeof(fdh), "%d", FD_HOSTS);
	arg(&a, "bwrap");
	/* a user namespace mapping uid U to U: inside it nothing is root, and root's files stay root's */
	arg(&a, "--unshare-user");
	arg(&a, "--disable-userns");
	arg(&a, "--unshare-pid");
	arg(&a, "--unshare-ipc");
	arg(&a, "--unshare-uts");
	arg(&a, "--unshare-cgroup-try");
	arg(&a, "--die-with-parent");
	arg(&a, "--new-session");  /* no TIOCSTI into the launcher's terminal */
	arg(&a, "--cap-drop");
	arg(&a, "ALL");
	arg(&a, "--uid");
	arg(&a, uidbuf);
	arg(&a, "--gid");
	arg(&a, gidbuf);
	arg(&a, "--hostname");
	arg(&a, "sandbox");
	arg(&a, "--ro-bind");
	arg(&a, "/usr");
	arg(&a, "/usr");
	for (i = 0; i < sizeof(sysdirs) / sizeof(sysdirs[0]); i++)
		system_dir(&a, sysdirs[i], links[i], sizeof(links[i]));
	arg(&a, "--ro-bind");
	arg(&a, "/etc");
	arg(&a, "/etc");
	for (i = 0; i < x->nhide; i++)
		hide(&a, x->hide[i]);
	arg(&a, "--ro-bind-data");
	arg(&a, fdr);
	arg(&a, "/etc/resolv.conf");
	/* its own host name resolves (git looks it up on every command): no DNS query for it, no denial audited */
	arg(&a, "--ro-bind-data");
	arg(&a, fdh);
	arg(&a, "/etc/hosts");
	arg(&a, "--ro-bind-data");
	arg(&a, fdb);
	arg(&a, NETNS_CA_PATH);
	arg(&a, "--proc");
	arg(&a, "/proc");
	arg(&a, "--dev");
	arg(&a, "/dev");
	arg(&a, "--tmpfs");
	arg(&a, "/tmp");
	arg(&a, "--tmpfs");
	arg(&a, "/run");
	if (x->workspace != NULL) {
		/* the directory run_workspace_open checked, by its descriptor: no path is looked up again */
		arg(&a, "--bind-fd");
		arg(&a, fdw);
		arg(&a, "/workspace");
		arg(&a, "--chdir");
		arg(&a, "/workspace");
	} else {
		arg(&a, "--chdir");
		arg(&a, "/tmp");
	}
	arg(&a, "--json-status-fd");
	arg(&a, fds);
	arg(&a, "--");
	for (i = 0; i < nargv; i++)
		arg(&a, x->argv[i]);

	snprintf(nspath, sizeof(nspath), "/run/netns/%s", sb->net.netns);
	nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
	if (nsfd == -1) {
		proc_err_set(err, errcap, "%s: %s", nspath, strerror(errno));
		goto out;
	}
	rfd = proc_memfd_with("resolv.conf", x->resolv, x->resolv_len);
	bfd = proc_memfd_with("ca-certificates.crt", x->bundle, x->bundle_len);
	hfd = proc_memfd_with("hosts", SANDBOX_HOSTS, sizeof(SANDBOX_HOSTS) - 1);
	if (rfd == -1 || bfd == -1 || hfd == -1 || pipe2(sp, O_CLOEXEC) == -1 || pipe2(ep, O_CLOEXEC) == -1) {
		proc_err_set(err, errcap, "memfd or pipe: %s", strerror(errno));
		goto out;
	}
	p = fork();
	if (p == -1) {
		proc_err_set(err, errcap, "fork: %s", strerror(errno));
		goto out;
	}
	if (p == 0) {
		sigset_t none;
		int hr, hb, hs, he, hh, hw = -1;

		if (setns(nsfd, CLONE_NEWNET) == -1)
			child_fail(ep[1], 1);
		if (setpgid(0, 0) == -1)
			child_fail(ep[1], 2);
		if (setgroups(0, NULL) == -1 || setresgid(x->gid, x->gid, x->gid) == -1 ||
		    setresuid(x->uid, x->uid, x->uid) == -1)
			child_fail(ep[1], 3);
		/* after the uid change, which clears it: bwrap must not outlive the launcher */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
			child_fail(ep[1], 4);
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* the fds bwrap reads land on 3, 4, 5 and 7 (dup2 clears close-on-exec); the rest close */
		hr = fcntl(rfd, F_DUPFD_CLOEXEC, 16);
		hb = fcntl(bfd, F_DUPFD_CLOEXEC, 16);
		hs = fcntl(sp[1], F_DUPFD_CLOEXEC, 16);
		he = fcntl(ep[1], F_DUPFD_CLOEXEC, 16);
		hh = fcntl(hfd, F_DUPFD_CLOEXEC, 16);
		if (x->workspace != NULL)  /* moved up first too: it may sit on one of the numbers below */
			hw = fcntl(x->workspace_fd, F_DUPFD_CLOEXEC, 16);
		if (hr == -1 || hb == -1 || hs == -1 || he == -1 || hh == -1 || (x->workspace != NULL && hw == -1))
			child_fail(ep[1], 5);
		if (dup2(hr, FD_RESOLV) == -1 || dup2(hb, FD_BUNDLE) == -1 || dup2(hs, FD_STATUS) == -1 ||
		    dup2(he, FD_STATUS + 1) == -1 || dup2(hh, FD_HOSTS) == -1)
			child_fail(he, 5);
		if (fcntl(FD_STATUS + 1, F_SETFD, FD_CLOEXEC) == -1)
			child_fail(he, 5);
		if (hw != -1 && dup2(hw, FD_WORKSPACE) == -1)
			child_fail(FD_STATUS + 1, 5);
		close_range(FD_WORKSPACE + 1, ~0U, 0);
		execve(NETNS_BWRAP, SLUICE_DECONST(char *const *, a.v), x->envp);
		child_fail(FD_STATUS + 1, 6);
	}
	close(ep[1]);
	ep[1] = -1;
	close(sp[1]);
	sp[1] = -1;
	/* EOF: bwrap was exec'd; else the child's step and errno */
	do
		got = read(ep[0], e, sizeof(e));
	while (got == -1 && errno == EINTR);
	if (got == (ssize_t)sizeof(e)) {
		int status;

		waitpid(p, &status, 0);
		proc_err_set(err, errcap, "starting bubblewrap: %s: %s", steps[e[0] >= 1 && e[0] <= 6 ? e[0] : 0],
		        strerror(e[1]));
		goto out;
	}
	*pid = p;
	*status_fd = sp[0];
	sp[0] = -1;
	ret = 0;
out:
	if (nsfd != -1)
		close(nsfd);
	if (rfd != -1)
		close(rfd);
	if (bfd != -1)
		close(bfd);
	if (hfd != -1)
		close(hfd);
	for (i = 0; i < 2; i++) {
		if (sp[i] != -1)
			close(sp[i]);
		if (ep[i] != -1)
			close(ep[i]);
	}
	free(a.v);
	return ret;
}

pid_t
netns_command_pid(pid_t init_pid, int execed)
{
	char path[64], buf[CHILDREN_MAX], exe[sizeof(NETNS_BWRAP) + 16], *end;
	unsigned long v;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)init_pid, (long)init_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno != 0 || end == buf || v == 0 || v > (unsigned long)INT32_MAX)
		return 0;
	if (execed) {
		snprintf(path, sizeof(path), "/proc/%lu/exe", v);
		got = readlink(path, exe, sizeof(exe) - 1);
		if (got == -1)
			return 0;
		exe[got] = '\0';
		if (strcmp(exe, NETNS_BWRAP) == 0)
			return 0;
	}
	return (pid_t)v;
}
