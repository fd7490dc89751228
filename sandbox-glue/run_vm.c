/*
 * sandbox-glue/run_vm.c - `sluice run` with a tap backend: QEMU (-M microvm)
 * or Firecracker.
 *
 * After the claim (run.c), the tap slh<id> is made in the root namespace,
 * owned by the sandbox's uid, with the host side's addresses and the
 * sandbox's nft table (netns_tap_setup); the sandbox is registered; the
 * per-run files go into the sandbox's VM directory (netns_vm_dir: root's,
 * readable by the sandbox's gid): the image's initrd with the gateway's CA
 * appended (qemu_initrd_compose) and, for Firecracker, its config file.
 * The monitor then runs as the sandbox's uid and gid (no other group but,
 * when KVM is used, /dev/kvm's), in its own process group, with an empty
 * environment, stdin /dev/null, dying with us (PR_SET_PDEATHSIG), its
 * stdout (the guest's serial console) a pipe that run_console.c cuts into
 * lines.  QEMU gets the tap as an open fd, so it needs no /dev/net/tun;
 * Firecracker opens it by name.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#include "common/clock.h"
#include "common/sluice.h"
#include "sandbox-glue/firecracker.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/proc.h"
#include "sandbox-glue/qemu.h"
#include "sandbox-glue/run.h"
#include "run_int.h"
#include "sandbox-glue/sandbox.h"

#define FC_BINARY "firecracker"
#define VM_PATH_MAX 512          /* a monitor found in PATH, a file in the VM directory */
#define VM_TAP_FD 3              /* where QEMU finds the tap */
#define VM_ERR_FD 4              /* the child's error pipe, close-on-exec */
#define VM_DEFAULT_MIB 256
#define FC_CONFIG_MAX 16384      /* Firecracker's config: two paths of at most 4096, the boot args */
#define VM_ENV_MAX (RUN_ENV_MAX + 1)
#define KVM_DEV "/dev/kvm"

static const char *const steps[] = {"?", "process group", "groups and ids", "parent-death signal", "file descriptors",
                                    "exec"};

/* The VM side of a run. */
struct run_vmx {
	struct run_common *c;
	struct run_console con;
	char dir[64];                /* the VM directory: NETNS_VM_DIR/<id> */
	char initrd[VM_PATH_MAX];    /* the composed initrd in it */
	char fc_config[VM_PATH_MAX]; /* Firecracker's config in it */
	char binary[VM_PATH_MAX];
	pid_t pid;                   /* the monitor, -1 when none */
	int console;                 /* the read end of its stdout, -1 at EOF */
	int tap_fd;
	int signalled;               /* the signal we stopped the VM for, 0 when none */
	uint64_t t_files, t_spawn, t_start;
};

/* ---------------------------------------------------------------- the console's output */

static void
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return;  /* a closed stdout loses the output, not the teardown (SIGPIPE is ignored) */
		p += w;
		n -= (size_t)w;
	}
}

/* stdout gets the command's bytes as they are; stderr lines are marked and their control bytes replaced */
static void
emit(void *arg, enum run_console_to to, const char *p, size_t len, int nl)
{
	char buf[RUN_CONSOLE_LINE_MAX + 32];
	size_t i, n;

	(void)arg;
	if (to == RUN_CONSOLE_STDOUT) {
		write_all(STDOUT_FILENO, p, len);
		if (nl)
			write_all(STDOUT_FILENO, "\n", 1);
		return;
	}
	n = (size_t)snprintf(buf, sizeof(buf), "sluice run: guest: ");
	for (i = 0; i < len && n < sizeof(buf) - 1; i++)
		buf[n++] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
	buf[n++] = '\n';
	write_all(STDERR_FILENO, buf, n);
}

/* ---------------------------------------------------------------- host facts */

/* <name> in our PATH (or /usr/bin:/bin) into <out>: 0, or SLUICE_ENOENT */
static int
exe_find(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH"), *p, *end;

	if (path == NULL || path[0] == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p != '\0'; p = *end == ':' ? end + 1 : end) {
		size_t dl;
		struct stat st;

		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		dl = (size_t)(end - p);
		if (dl == 0 || p[0] != '/')  /* an empty or relative entry would mean the working directory */
			continue;
		if (snprintf(out, cap, "%.*s/%s", (int)dl, p, name) >= (int)cap)
			continue;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0)
			return 0;
	}
	out[0] = '\0';
	return SLUICE_ENOENT;
}

/* /dev/kvm's group when it grants the group read and write (the one extra group a KVM monitor keeps), else 0 */
static gid_t
kvm_group(void)
{
	struct stat st;

	if (stat(KVM_DEV, &st) == -1 || !S_ISCHR(st.st_mode) || (st.st_mode & 060) != 060)
		return 0;
	return st.st_gid;
}

/* the tap, opened here (as root) for QEMU: it then needs no access to /dev/net/tun and can attach to no other */
static int
tap_open(const char *ifname, char *err, size_t errcap)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd == -1) {
		proc_err_set(err, errcap, "/dev/net/tun: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) == -1) {
		proc_err_set(err, errcap, "attaching to the tap %s: %s", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* ---------------------------------------------------------------- the per-run files */

/* a file we wrote into the VM directory: root's, readable by the sandbox's group only */
static int
file_share(const char *path, gid_t gid)
{
	if (chown(path, 0, gid) == -1 || chmod(path, 0640) == -1) {
		run_say("%s: %s", path, strerror(errno));
		return SLUICE_EIO;
	}
	return 0;
}

static int
initrd_make(struct run_vmx *v, gid_t gid)
{
	const struct run_opts *o = v->c->o;
	int ret;

	snprintf(v->initrd, sizeof(v->initrd), "%s/initrd.img", v->dir);
	ret = qemu_initrd_compose(o->vm_initrd, o->ca_pem, v->initrd);
	if (ret != 0) {
		run_say("the guest's initrd (%s with the CA %s appended): %s", o->vm_initrd, o->ca_pem,
		        sluice_strerror(ret));
		return ret;
	}
	return file_share(v->initrd, gid);
}

/* the environment as vm-init.sh takes it: each entry checked, so the message can name it */
static int
env_list(const struct run_opts *o, const char **envv)
{
	size_t i;

	if (o->nenv >= VM_ENV_MAX) {
		run_say("too many variables for the guest (%zu)", o->nenv);
		return SLUICE_ETOOBIG;
	}
	for (i = 0; i < o->nenv; i++) {
		const char *eq = strchr(o->env[i], '=');

		if (!qemu_env_valid(o->env[i])) {
			run_say("the variable %.*s cannot go to the guest on its kernel command line: names are "
			        "[A-Z_][A-Z0-9_]* (not PATH, HOME, the CA or proxy variables, LD_*), values at most %u "
			        "printable bytes without blanks, quotes or backslashes",
			        eq != NULL ? (int)(eq - o->env[i]) : 64, o->env[i], (unsigned)QEMU_ENV_VALUE_MAX);
			return SLUICE_EINVAL;
		}
		envv[i] = o->env[i];
	}
	envv[i] = NULL;
	return 0;
}

static void
args_error(int ret)
{
	if (ret == SLUICE_ETOOBIG)
		run_say("the command and the placeholders do not fit the guest's kernel command line (%u bytes)",
		        (unsigned)QEMU_APPEND_MAX);
	else
		run_say("the guest's kernel command line: %s", sluice_strerror(ret));
}

/* QEMU's argv into <argv>/<store> */
static int
qemu_prepare(struct run_vmx *v, const char **envv, char **argv, char *store, size_t storecap)
{
	const struct run_opts *o = v->c->o;
	struct qemu_vm vm;
	unsigned khz = 0;
	int ret;

	memset(&vm, 0, sizeof(vm));
	vm.binary = v->binary;
	vm.kernel = o->vm_kernel;
	vm.initrd = v->initrd;
	vm.accel = QEMU_ACCEL_TCG;
	if (o->vm_kvm) {
		if (qemu_kvm_usable())
			vm.accel = QEMU_ACCEL_KVM;
		else
			run_say("warning: sandbox.qemu.accel is kvm, but KVM cannot run a guest here: using TCG");
	}
	vm.memory_mib = o->vm_memory_mib != 0 ? o->vm_memory_mib : VM_DEFAULT_MIB;
	if (qemu_host_khz(NULL, &khz) == 0)
		vm.tsc_khz = khz;
	vm.tap = v->c->sb.net.host_if;
	vm.tap_fd = VM_TAP_FD;
	qemu_mac_derive(v->c->sb.net.id, vm.mac);
	vm.net = &v->c->sb.net;
	vm.env = envv;
	vm.cmd = (const char *const *)o->argv;
	ret = qemu_argv_build(&vm, argv, QEMU_ARGV_MAX, store, storecap);
	if (ret < 0)
		args_error(ret);
	return ret < 0 ? ret : 0;
}

/* Firecracker's config file, and its argv */
static int
fc_prepare(struct run_vmx *v, const char **envv, gid_t gid, char **argv)
{
	const struct run_opts *o = v->c->o;
	struct fc_vm vm;
	char mac[FC_MAC_LEN + 1], args[FC_BOOT_ARGS_MAX + 1], *json = NULL;
	const char *why = NULL;
	int ret, fd = -1, n;

	memcpy(args, SLUICE_LIT("quiet "));
	n = qemu_guest_args(&v->c->sb.net, envv, (const char *const *)o->argv, args + 6, sizeof(args) - 6);
	if (n < 0) {
		args_error(n);
		return n;
	}
	if ((ret = fc_guest_mac(v->c->sb.net.id, mac)) != 0)
		return ret;
	memset(&vm, 0, sizeof(vm));
	vm.kernel = o->vm_kernel;
	vm.initrd = v->initrd;
	vm.boot_args = args;
	vm.vcpus = 1;
	vm.mem_mib = o->vm_memory_mib != 0 ? o->vm_memory_mib : VM_DEFAULT_MIB;
	vm.tap = v->c->sb.net.host_if;
	vm.guest_mac = mac;
	if ((ret = fc_vm_check(&vm, &why)) != 0) {
		run_say("the Firecracker VM: %s", why != NULL ? why : sluice_strerror(ret));
		return ret;
	}
	json = xmalloc(FC_CONFIG_MAX);
	n = fc_config_render(&vm, json, FC_CONFIG_MAX);
	snprintf(v->fc_config, sizeof(v->fc_config), "%s/firecracker.json", v->dir);
	if (n < 0) {
		run_say("the Firecracker config: %s", sluice_strerror(n));
		ret = n;
		goto out;
	}
	fd = open(v->fc_config, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1 || proc_write_all(fd, json, (size_t)n) != 0) {
		run_say("%s: %s", v->fc_config, strerror(errno));
		ret = SLUICE_EIO;
		goto out;
	}
	if ((ret = file_share(v->fc_config, gid)) != 0)
		goto out;
	argv[0] = v->binary;
	argv[1] = "--no-api";
	argv[2] = "--config-file";
	argv[3] = v->fc_config;
	argv[4] = NULL;
	ret = 0;
out:
	if (fd != -1)
		close(fd);
	free(json);
	return ret;
}

/* ---------------------------------------------------------------- the monitor */

static void
child_fail(int fd, int step)
{
	int e[2] = {step, errno};

	(void)!write(fd, e, sizeof(e));
	_exit(127);
}

/*
 * Starts <argv> as <uid>/<gid> (plus <extra> as the only supplementary group when not 0), its stdout a pipe
 * (v->console), stdin /dev/null, stderr ours, the tap (when open) on VM_TAP_FD, nothing else.  Only
 * async-signal-safe calls after the fork.
 */
static int
spawn(struct run_vmx *v, char *const *argv, uid_t uid, gid_t gid, gid_t extra)
{
	static char *const no_env[] = {NULL};
	pid_t parent = getpid(), p;
	int out[2] = {-1, -1}, ep[2] = {-1, -1}, e[2], devnull, i, ret = SLUICE_EIO;
	ssize_t got;

	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull == -1 || pipe2(out, O_CLOEXEC) == -1 || pipe2(ep, O_CLOEXEC) == -1) {
		run_say("pipe: %s", strerror(errno));
		goto out;
	}
	p = fork();
	if (p == -1) {
		run_say("fork: %s", strerror(errno));
		goto out;
	}
	if (p == 0) {
		sigset_t none;
		int he, ho, ht = -1;

		if (setpgid(0, 0) == -1)
			child_fail(ep[1], 1);
		if (setgroups(extra != 0 ? 1 : 0, &extra) == -1 || setresgid(gid, gid, gid) == -1 ||
		    setresuid(uid, uid, uid) == -1)
			child_fail(ep[1], 2);
		/* after the uid change, which clears it: the VM must not outlive the launcher */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
			child_fail(ep[1], 3);
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		he = fcntl(ep[1], F_DUPFD_CLOEXEC, 16);
		ho = fcntl(out[1], F_DUPFD_CLOEXEC, 16);
		if (v->tap_fd != -1)
			ht = fcntl(v->tap_fd, F_DUPFD_CLOEXEC, 16);
		if (he == -1 || ho == -1 || (v->tap_fd != -1 && ht == -1))
			child_fail(ep[1], 4);
		/* dup2 clears close-on-exec on 0, 1 and 3; the error pipe keeps it on 4 (EOF: the exec worked) */
		if (dup2(devnull, STDIN_FILENO) == -1 || dup2(ho, STDOUT_FILENO) == -1 || dup2(he, VM_ERR_FD) == -1 ||
		    fcntl(VM_ERR_FD, F_SETFD, FD_CLOEXEC) == -1)
			child_fail(he, 4);
		if (ht != -1 ? dup2(ht, VM_TAP_FD) == -1 : (close(VM_TAP_FD) == -1 && errno != EBADF))
			child_fail(VM_ERR_FD, 4);
		close_range(VM_ERR_FD + 1, ~0U, 0);
		if (chdir("/") == -1)
			child_fail(VM_ERR_FD, 4);
		execve(argv[0], argv, no_env);
		child_fail(VM_ERR_FD, 5);
	}
	close(ep[1]);
	ep[1] = -1;
	close(out[1]);
	out[1] = -1;
	do
		got = read(ep[0], e, sizeof(e));
	while (got == -1 && errno == EINTR);
	if (got == (ssize_t)sizeof(e)) {
		int status;

		waitpid(p, &status, 0);
		run_say("starting %s: %s: %s", argv[0], steps[e[0] >= 1 && e[0] <= 5 ? e[0] : 0], strerror(e[1]));
		goto out;
	}
	v->pid = p;
	v->console = out[0];
	out[0] = -1;
	ret = 0;
out:
	if (devnull != -1)
		close(devnull);
	for (i = 0; i < 2; i++) {
		if (out[i] != -1)
			close(out[i]);
		if (ep[i] != -1)
			close(ep[i]);
	}
	return ret;
}

/* ---------------------------------------------------------------- the run */

static void
console_read(struct run_vmx *v, char *buf)
{
	ssize_t n = read(v->console, buf, RUN_VM_READ_MAX);

	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(v->console);
		v->console = -1;
		return;
	}
	run_console_feed(&v->con, buf, (size_t)n);
	if (v->con.started_now) {
		v->con.started_now = 0;
		v->t_start = clock_mono_ns();
	}
}

/* SIGINT, SIGTERM, SIGHUP: the first stops the VM (SIGTERM: QEMU and Firecracker quit), a second kills it */
static void
signals_read(struct run_vmx *v, uint64_t *deadline)
{
	struct signalfd_siginfo si;

	while (read(v->c->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		if (v->signalled == 0) {
			v->signalled = (int)si.ssi_signo;
			kill(v->pid, SIGTERM);
			*deadline = clock_mono_ns() + (uint64_t)RUN_GRACE_MS * 1000000u;
		} else {
			kill(v->pid, SIGKILL);
		}
	}
}

/* until the monitor is gone and its console read to the end; returns its wait status */
static int
supervise(struct run_vmx *v)
{
	char *buf = xmalloc(RUN_VM_READ_MAX);
	uint64_t deadline = 0;
	int status = 0;

	for (;;) {
		struct pollfd pf[2] = {{v->c->sfd, POLLIN, 0}, {v->console, POLLIN, 0}};
		int timeout = -1;

		if (deadline != 0) {
			uint64_t now = clock_mono_ns();

			timeout = now >= deadline ? 0 : (int)((deadline - now) / 1000000u) + 1;
		}
		if (poll(pf, 2, timeout) == -1 && errno != EINTR)
			kill(v->pid, SIGKILL);
		if (pf[1].revents != 0)
			console_read(v, buf);
		if (pf[0].revents & POLLIN)
			signals_read(v, &deadline);
		if (deadline != 0 && clock_mono_ns() >= deadline) {
			kill(v->pid, SIGKILL);
			deadline = 0;
		}
		if (waitpid(v->pid, &status, WNOHANG) == v->pid)
			break;
	}
	v->pid = -1;
	/* what is still in the pipe: the monitor is gone, so nobody else can keep it open for long */
	if (v->console != -1 && fcntl(v->console, F_SETFL, O_NONBLOCK) == 0)
		while (v->console != -1) {
			ssize_t n = read(v->console, buf, RUN_VM_READ_MAX);

			if (n <= 0) {
				close(v->console);
				v->console = -1;
				break;
			}
			run_console_feed(&v->con, buf, (size_t)n);
		}
	run_console_end(&v->con);
	free(buf);
	return status;
}

static void
wait_describe(int st, char *out, size_t cap)
{
	if (WIFEXITED(st))
		snprintf(out, cap, "the monitor exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, cap, "the monitor was killed by signal %d", WTERMSIG(st));
	else
		snprintf(out, cap, "wait status %d", st);
}

static void
timing(const struct run_vmx *v, const char *monitor)
{
	const struct run_common *c = v->c;
	const struct run_opts *o = c->o;

	if (v->t_start == 0) {
		run_say("timing: the guest never said it started the command (%.1f ms to the %s start)",
		        run_ms(o->t0_ns, v->t_spawn), monitor);
		return;
	}
	run_say("timing: %.1f ms from start to the command's start in the guest (config %.1f, stale check and claim "
	        "%.1f, network %.1f, registration %.1f, VM files %.1f, %s to the start marker %.1f)",
	        run_ms(o->t0_ns, v->t_start), run_ms(o->t0_ns, c->t_in), run_ms(c->t_in, c->t_claim),
	        run_ms(c->t_claim, c->t_net), run_ms(c->t_net, c->t_reg), run_ms(c->t_reg, v->t_files), monitor,
	        run_ms(v->t_files, v->t_start));
}

static int
binary_pick(struct run_vmx *v, int fc)
{
	const struct run_opts *o = v->c->o;

	if (o->vm_binary != NULL) {
		if (o->vm_binary[0] != '/' || strlen(o->vm_binary) >= sizeof(v->binary)) {
			run_say("the VM monitor must be an absolute path: %s", o->vm_binary);
			return SLUICE_EINVAL;
		}
		memcpy(v->binary, o->vm_binary, strlen(o->vm_binary) + 1);
		return 0;
	}
	if (exe_find(fc ? FC_BINARY : QEMU_BINARY, v->binary, sizeof(v->binary)) == 0)
		return 0;
	if (fc)
		run_say("firecracker is not installed here (no `firecracker` in PATH): see docs/firecracker.md for "
		        "how to install it and what it needs (KVM)");
	else
		run_say("%s is not installed here (not in PATH): install Debian's qemu-system-x86", QEMU_BINARY);
	return SLUICE_ENOENT;
}

int
run_vm(struct run_common *c)
{
	const struct run_opts *o = c->o;
	struct run_vmx *v = xcalloc(1, sizeof(*v));
	struct sigaction ign, old_pipe;
	const char *envv[VM_ENV_MAX + 1];
	const char *monitor = o->backend == RUN_BACKEND_FIRECRACKER ? "Firecracker" : "QEMU";
	char *argv[QEMU_ARGV_MAX], *store = NULL, err[NETNS_ERR_MAX], why[96];
	gid_t gid = (gid_t)o->uid, extra = 0;
	int fc = o->backend == RUN_BACKEND_FIRECRACKER, ret = 1, n, st, pipe_saved = 0;

	v->c = c;
	v->pid = -1;
	v->console = v->tap_fd = -1;
	run_console_init(&v->con, emit, v, fc);
	if (o->vm_kernel == NULL || o->vm_initrd == NULL) {
		run_say("no guest kernel or initrd (sandbox.qemu.kernel, sandbox.qemu.initrd): build them with "
		        "scripts/vm-image.sh DIR");
		goto out;
	}
	if (binary_pick(v, fc) != 0 || env_list(o, envv) != 0)
		goto out;
	if (run_claim(c) != 0)
		goto out;
	if (netns_tap_setup(&c->sb, o->uid, gid, err, sizeof(err)) != 0) {
		run_say("%s", err);
		goto out;
	}
	c->t_net = clock_mono_ns();
	if (run_register(c) != 0)
		goto out;
	/* a SIGINT/SIGTERM during setup: the VM never starts */
	if ((n = run_pending_signal()) != 0) {
		ret = n;
		goto out;
	}
	if (netns_vm_dir(&c->sb, gid, v->dir, sizeof(v->dir), err, sizeof(err)) != 0) {
		run_say("%s", err);
		goto out;
	}
	if (initrd_make(v, gid) != 0)
		goto out;
	if (fc) {
		if (fc_prepare(v, envv, gid, argv) != 0)
			goto out;
		extra = kvm_group();  /* Firecracker always needs KVM */
	} else {
		store = xmalloc(2 * QEMU_STORE_MIN);
		if (qemu_prepare(v, envv, argv, store, 2 * QEMU_STORE_MIN) != 0)
			goto out;
		for (n = 0; argv[n] != NULL; n++)
			if (strcmp(argv[n], "-accel") == 0 && argv[n + 1] != NULL && strcmp(argv[n + 1], "kvm") == 0)
				extra = kvm_group();
		if ((v->tap_fd = tap_open(c->sb.net.host_if, err, sizeof(err))) == -1) {
			run_say("%s", err);
			goto out;
		}
	}
	v->t_files = clock_mono_ns();
	/* the console goes to our stdout: a reader that went away must not kill us before the teardown */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	pipe_saved = sigaction(SIGPIPE, &ign, &old_pipe) == 0;
	if (spawn(v, argv, o->uid, gid, extra) != 0)
		goto out;
	v->t_spawn = clock_mono_ns();
	if (v->tap_fd != -1) {
		close(v->tap_fd);  /* QEMU holds it now */
		v->tap_fd = -1;
	}
	st = supervise(v);
	if (v->con.status >= 0) {
		ret = v->con.status;
	} else if (v->signalled != 0) {
		ret = 128 + v->signalled;
	} else {
		wait_describe(st, why, sizeof(why));
		run_say("the VM ended without reporting a status (%s)", why);
		ret = 1;
	}
	if (o->timing)
		timing(v, monitor);
out:
	if (v->pid > 0) {
		int s;

		kill(v->pid, SIGKILL);
		waitpid(v->pid, &s, 0);
	}
	if (v->console != -1)
		close(v->console);
	if (v->tap_fd != -1)
		close(v->tap_fd);
	if (pipe_saved)
		sigaction(SIGPIPE, &old_pipe, NULL);
	free(store);
	free(v);
	return ret;
}
