/*
 * sandbox-glue/netns.c - the netns backend (see netns.h): state and stale
 * cleanup, the namespace and its veth (or the VM backends' tap and private
 * directory), the nft table (bubblewrap: netns_bwrap.c).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/sluice.h"
#include "sandbox-glue/netns.h"
#include "sandbox-glue/nft.h"
#include "sandbox-glue/proc.h"

#define PLAN_LOCK NETNS_STATE_DIR "/.plan.lock"
#define IP_BATCH_MAX 4096      /* one `ip -batch` script */
#define LOCK_CONTENT_MAX 512   /* "PID\nINDEX\nNAME\nADMIN\n" */

static const char *const ip_paths[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"};

/*
 * Runs `ip <args>` (NULL-terminated) with <in> on stdin through proc_run,
 * inside the network namespace <nsfd> when it is not -1.  0, or SLUICE_EIO
 * with the first line of ip's stderr in <err>.
 */
static int
run_ip(const char *const args[], const char *in, int nsfd, char *err, size_t errcap)
{
	return proc_run(ip_paths, sizeof(ip_paths) / sizeof(ip_paths[0]), args, nsfd, in, NULL, 0, err, errcap);
}

/* "<prefix><8 hex><suffix>" -> the id into <id>; 1 if it matched */
static int
name_id(const char *name, const char *prefix, const char *suffix, char id[SANDBOX_ID_LEN + 1])
{
	size_t pl = strlen(prefix), sl = strlen(suffix), n = strlen(name);

	if (n != pl + SANDBOX_ID_LEN + sl || strncmp(name, prefix, pl) != 0 || strcmp(name + pl + SANDBOX_ID_LEN, suffix) != 0)
		return 0;
	if (!proc_hex_lower(name + pl, SANDBOX_ID_LEN))
		return 0;
	memcpy(id, name + pl, SANDBOX_ID_LEN);
	id[SANDBOX_ID_LEN] = '\0';
	return 1;
}

static int
state_dir_make(char *err, size_t errcap)
{
	struct stat st;

	if (mkdir("/run/sluice", 0755) == -1 && errno != EEXIST)
		goto bad;
	if (mkdir(NETNS_STATE_DIR, 0700) == -1 && errno != EEXIST)
		goto bad;
	/* another user's directory here would let them fake or hide live sandboxes */
	if (lstat(NETNS_STATE_DIR, &st) == -1)
		goto bad;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0) {
		proc_err_set(err, errcap, "%s is not a root-owned directory writable only by root", NETNS_STATE_DIR);
		return SLUICE_EIO;
	}
	return 0;
bad:
	proc_err_set(err, errcap, "%s: %s", NETNS_STATE_DIR, strerror(errno));
	return SLUICE_EIO;
}

/* the held plan lock's fd, or -1 */
static int
plan_lock(char *err, size_t errcap)
{
	int fd;

	if (state_dir_make(err, errcap) != 0)
		return -1;
	fd = open(PLAN_LOCK, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		proc_err_set(err, errcap, "%s: %s", PLAN_LOCK, strerror(errno));
		return -1;
	}
	while (flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			proc_err_set(err, errcap, "flock %s: %s", PLAN_LOCK, strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* What one scan of the state found: live sandboxes (ids and indexes), and stale ids. */
struct scan {
	char live[NETNS_STALE_MAX][SANDBOX_ID_LEN + 1];
	unsigned live_index[NETNS_STALE_MAX];
	size_t nlive;
	char stale[NETNS_STALE_MAX][SANDBOX_ID_LEN + 1];
	size_t nstale;
	unsigned removed;
	struct netns_stale reg[NETNS_STALE_REG_MAX];
	size_t nreg;
};

/* line <k> (0-based) of <buf> into <out> (<cap>), "" when absent or too long */
static void
lock_line(const char *buf, int k, char *out, size_t cap)
{
	const char *p = buf, *nl;
	size_t len;

	out[0] = '\0';
	while (k-- > 0) {
		p = strchr(p, '\n');
		if (p == NULL)
			return;
		p++;
	}
	nl = strchr(p, '\n');
	len = nl != NULL ? (size_t)(nl - p) : strlen(p);
	if (len >= cap)
		return;
	memcpy(out, p, len);
	out[len] = '\0';
}

/* reads a lock file: its index (0 when unreadable) and, into <reg> when not NULL, its registration */
static unsigned
lock_read(int fd, struct netns_stale *reg)
{
	char buf[LOCK_CONTENT_MAX], idx[16], *end;
	unsigned long v;
	ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[got > 0 ? got : 0] = '\0';
	if (reg != NULL) {
		lock_line(buf, 2, reg->name, sizeof(reg->name));
		lock_line(buf, 3, reg->admin, sizeof(reg->admin));
		if (!sandbox_name_valid(reg->name) || (reg->admin[0] != '\0' && reg->admin[0] != '/'))
			reg->name[0] = reg->admin[0] = '\0';
	}
	lock_line(buf, 1, idx, sizeof(idx));
	errno = 0;
	v = strtoul(idx, &end, 10);
	if (errno != 0 || end == idx || *end != '\0' || v > SANDBOX_MAX_INDEX)
		return 0;
	return (unsigned)v;
}

static int
is_live(const struct scan *s, const char *id)
{
	size_t i;

	for (i = 0; i < s->nlive; i++)
		if (strcmp(s->live[i], id) == 0)
			return 1;
	return 0;
}

static void
add_stale(struct scan *s, const char *id)
{
	size_t i;

	if (is_live(s, id))
		return;
	for (i = 0; i < s->nstale; i++)
		if (strcmp(s->stale[i], id) == 0)
			return;
	if (s->nstale < NETNS_STALE_MAX)
		memcpy(s->stale[s->nstale++], id, SANDBOX_ID_LEN + 1);
}

/* lock files: held ones are live; the others are unlinked and their ids stale */
static int
scan_locks(struct scan *s, char *err, size_t errcap)
{
	char id[SANDBOX_ID_LEN + 1], path[128];
	struct dirent *de;
	DIR *d = opendir(NETNS_STATE_DIR);

	if (d == NULL) {
		proc_err_set(err, errcap, "%s: %s", NETNS_STATE_DIR, strerror(errno));
		return SLUICE_EIO;
	}
	while ((de = readdir(d)) != NULL) {
		int fd;

		if (!name_id(de->d_name, "", ".lock", id))
			continue;
		snprintf(path, sizeof(path), "%s/%s.lock", NETNS_STATE_DIR, id);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd == -1)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			/* held: alive */
			if (s->nlive < NETNS_STALE_MAX) {
				memcpy(s->live[s->nlive], id, sizeof(id));
				s->live_index[s->nlive++] = lock_read(fd, NULL);
			}
		} else {
			/* nobody holds it: its owner died; we hold it now while removing it */
			struct netns_stale reg;

			(void)lock_read(fd, &reg);
			if (reg.name[0] != '\0' && s->nreg < NETNS_STALE_REG_MAX)
				s->reg[s->nreg++] = reg;
			unlink(path);
			if (s->nstale < NETNS_STALE_MAX)
				memcpy(s->stale[s->nstale++], id, sizeof(id));
		}
		close(fd);
	}
	closedir(d);
	return 0;
}

static void
scan_dir(struct scan *s, const char *dir, const char *prefix)
{
	char id[SANDBOX_ID_LEN + 1];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (name_id(de->d_name, prefix, "", id))
			add_stale(s, id);
	closedir(d);
}

static void
scan_tables(struct scan *s)
{
	static char names[NETNS_STALE_MAX][NFT_TABLE_NAME_MAX];
	char *out = xmalloc(NFT_LIST_MAX), e[NFT_ERR_MAX], id[SANDBOX_ID_LEN + 1];
	size_t n = 0, i;

	if (nft_list_tables(out, NFT_LIST_MAX, e, sizeof(e)) == 0) {
		nft_stale_tables(out, names, NETNS_STALE_MAX, &n);
		for (i = 0; i < n; i++)
			if (name_id(names[i], "sluice_", "", id))
				add_stale(s, id);
	}
	free(out);
}

/*
 * Empties and removes the VM directory <path>: root's, and nobody else can write into it, so its entries are
 * the files we wrote; unlinkat never follows a link, and a subdirectory (there is none) would stay.
 */
static void
vm_dir_remove(const char *path)
{
	struct dirent *de;
	DIR *d;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd == -1)
		return;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			(void)unlinkat(fd, de->d_name, 0);
	closedir(d);
	(void)rmdir(path);
}

/* One nft script and one `ip -force -batch` for every id of <ids>. */
static void
remove_ids(char ids[][SANDBOX_ID_LEN + 1], size_t n)
{
	static const char *const ip_args[] = {"-force", "-batch", "-", NULL};
	char *script = xmalloc(NFT_SCRIPT_MAX), *ipb = xmalloc(IP_BATCH_MAX), e[NFT_ERR_MAX], vm[64];
	size_t i, k, start = 0;

	while (start < n) {
		size_t sl = 0, il = 0;

		script[0] = ipb[0] = '\0';
		for (i = start; i < n; i++) {
			struct sandbox_net net;
			int w;

			if (sandbox_net_plan(&net, ids[i], 1, 1, 2) != 0)
				continue;
			w = nft_render_delete(&net, script + sl, NFT_SCRIPT_MAX - sl);
			if (w < 0 || IP_BATCH_MAX - il < 128)
				break;
			sl += (size_t)w;
			il += (size_t)snprintf(ipb + il, IP_BATCH_MAX - il, "link del %s\nnetns del %s\n", net.host_if,
			                       net.netns);
		}
		for (k = start; k < i; k++) {
			snprintf(vm, sizeof(vm), "%s/%s", NETNS_VM_DIR, ids[k]);
			vm_dir_remove(vm);
		}
		if (i == start)
			i++;  /* one that does not render: skip it */
		if (sl > 0)
			(void)nft_apply(script, e, sizeof(e));  /* best effort: each removal is idempotent */
		if (il > 0)
			(void)run_ip(ip_args, ipb, -1, e, sizeof(e));
		start = i;
	}
	free(script);
	free(ipb);
}

/* with the plan lock held */
static int
stale_locked(struct scan *s, char *err, size_t errcap)
{
	int ret;

	if ((ret = scan_locks(s, err, errcap)) != 0)
		return ret;
	scan_dir(s, "/run/netns", "sluice_");
	scan_dir(s, "/sys/class/net", "slh");  /* veths and taps alike */
	scan_dir(s, NETNS_VM_DIR, "");
	scan_tables(s);
	s->removed = (unsigned)s->nstale;
	if (s->nstale > 0)
		remove_ids(s->stale, s->nstale);
	return 0;
}

int
netns_stale_cleanup(unsigned *removed, char *err, size_t errcap)
{
	struct scan *s = xcalloc(1, sizeof(*s));
	int fd, ret = SLUICE_EIO;

	fd = plan_lock(err, errcap);
	if (fd != -1) {
		ret = stale_locked(s, err, errcap);
		close(fd);
	}
	if (removed != NULL)
		*removed = s->removed;
	free(s);
	return ret;
}

void
netns_init(struct netns_sandbox *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->_lock_fd = -1;
}

/* 1 when some host interface has an IPv4 address inside index <idx>'s /30 */
static int
index_on_host(const struct ifaddrs *ifs, unsigned idx)
{
	const struct ifaddrs *i;

	for (i = ifs; i != NULL; i = i->ifa_next) {
		uint32_t a;

		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		a = ntohl(((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr);
		if ((a >> 16) == ((10u << 8) | 200u) && ((a & 0xffff) >> 2) == idx)
			return 1;
	}
	return 0;
}

static int
claim_locked(struct netns_sandbox *sb, struct scan *s, const char *name, const char *admin, uint16_t tport,
             uint16_t dport, char *err, size_t errcap)
{
	char id[SANDBOX_ID_LEN + 1], buf[LOCK_CONTENT_MAX];
	struct ifaddrs *ifs = NULL;
	unsigned idx;
	size_t i;
	int fd, n;

	if (getifaddrs(&ifs) == -1) {
		proc_err_set(err, errcap, "getifaddrs: %s", strerror(errno));
		return SLUICE_EIO;
	}
	for (idx = 1; idx <= SANDBOX_MAX_INDEX; idx++) {
		for (i = 0; i < s->nlive; i++)
			if (s->live_index[i] == idx)
				break;
		if (i == s->nlive && !index_on_host(ifs, idx))
			break;
	}
	freeifaddrs(ifs);
	if (idx > SANDBOX_MAX_INDEX) {
		proc_err_set(err, errcap, "no free sandbox address block in 10.200.0.0/16");
		return SLUICE_ETOOBIG;
	}
	if (sandbox_id_new(id) != 0 || is_live(s, id)) {
		proc_err_set(err, errcap, "cannot make a fresh sandbox id");
		return SLUICE_EIO;
	}
	if (sandbox_net_plan(&sb->net, id, idx, tport, dport) != 0) {
		proc_err_set(err, errcap, "bad ports for the sandbox plan");
		return SLUICE_EINVAL;
	}
	snprintf(sb->name, sizeof(sb->name), "%s", name != NULL ? name : "");
	if (name == NULL)
		snprintf(sb->name, sizeof(sb->name), "sbx-%s", id);
	snprintf(sb->_lock_path, sizeof(sb->_lock_path), "%s/%s.lock", NETNS_STATE_DIR, id);
	fd = open(sb->_lock_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1) {
		proc_err_set(err, errcap, "%s: %s", sb->_lock_path, strerror(errno));
		if (fd != -1) {
			unlink(sb->_lock_path);
			close(fd);
		}
		return SLUICE_EIO;
	}
	sb->_lock_fd = fd;
	sb->_have |= NETNS_HAVE_LOCK;
	n = snprintf(buf, sizeof(buf), "%ld\n%u\n%s\n%s\n", (long)getpid(), idx, sb->name,
	             admin != NULL && strlen(admin) < sizeof(((struct netns_stale *)0)->admin) ? admin : "");
	if (n < 0 || (size_t)n >= sizeof(buf) || proc_write_all(fd, buf, (size_t)n) != 0) {
		proc_err_set(err, errcap, "%s: %s", sb->_lock_path, strerror(errno));
		return SLUICE_EIO;
	}
	return 0;
}

int
netns_claim(struct netns_sandbox *sb, const char *name, const char *admin, uint16_t transparent_port,
            uint16_t dns_port, unsigned *removed, struct netns_stale *stale, size_t max, size_t *nstale, char *err,
            size_t errcap)
{
	struct scan *s = xcalloc(1, sizeof(*s));
	size_t i;
	int fd, ret;

	if (removed != NULL)
		*removed = 0;
	if (nstale != NULL)
		*nstale = 0;
	netns_init(sb);
	if (name != NULL && !sandbox_name_valid(name)) {
		proc_err_set(err, errcap, "bad sandbox name");
		free(s);
		return SLUICE_EINVAL;
	}
	fd = plan_lock(err, errcap);
	if (fd == -1) {
		free(s);
		return SLUICE_EIO;
	}
	ret = stale_locked(s, err, errcap);
	if (ret == 0)
		ret = claim_locked(sb, s, name, admin, transparent_port, dns_port, err, errcap);
	close(fd);  /* releases the plan lock: our own lock file now stands for us */
	if (removed != NULL)
		*removed = s->removed;
	for (i = 0; stale != NULL && nstale != NULL && i < s->nreg && i < max; i++)
		stale[(*nstale)++] = s->reg[i];
	free(s);
	return ret;
}

/* applies sandbox <n>'s nft table; records it first, so teardown removes a half-applied one */
static int
table_apply(struct netns_sandbox *sb, char *buf, char *err, size_t errcap)
{
	const struct sandbox_net *n = &sb->net;
	char e[NFT_ERR_MAX];
	int ret, len = nft_render(n, buf, NFT_SCRIPT_MAX);

	if (len < 0) {
		proc_err_set(err, errcap, "nft rules for %s: %s", n->table, sluice_strerror(len));
		return len;
	}
	sb->_have |= NETNS_HAVE_TABLE;
	if ((ret = nft_apply(buf, e, sizeof(e))) != 0)
		proc_err_set(err, errcap, "nft table %s: %s", n->table, e);
	return ret;
}

int
netns_setup(struct netns_sandbox *sb, char *err, size_t errcap)
{
	static const char *const batch_args[] = {"-batch", "-", NULL};
	const struct sandbox_net *n = &sb->net;
	char *buf = xmalloc(NFT_SCRIPT_MAX), e[NFT_ERR_MAX], nspath[64];
	int ret, nsfd = -1;

	/* from here teardown tries to delete both: harmless when they do not exist */
	sb->_have |= NETNS_HAVE_NETNS | NETNS_HAVE_VETH;
	snprintf(buf, NFT_SCRIPT_MAX,
	         "netns add %s\n"
	         "link add %s type veth peer name %s netns %s\n"
	         "addr add %s/30 dev %s\n"
	         "addr add %s/126 dev %s nodad\n"
	         "link set %s up\n",
	         n->netns, n->host_if, n->sbx_if, n->netns, n->host_v4, n->host_if, n->host_v6, n->host_if, n->host_if);
	if ((ret = run_ip(batch_args, buf, -1, e, sizeof(e))) != 0) {
		proc_err_set(err, errcap, "namespace %s and host side %s: %s", n->netns, n->host_if, e);
		goto out;
	}
	snprintf(nspath, sizeof(nspath), "/run/netns/%s", n->netns);
	nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
	if (nsfd == -1) {
		ret = SLUICE_EIO;
		proc_err_set(err, errcap, "%s: %s", nspath, strerror(errno));
		goto out;
	}
	snprintf(buf, NFT_SCRIPT_MAX,
	         "link set lo up\n"
	         "link set %s name eth0\n"
	         "addr add %s/30 dev eth0\n"
	         "addr add %s/126 dev eth0 nodad\n"
	         "link set eth0 up\n"
	         "route add default via %s\n"
	         "route add default via %s\n",
	         n->sbx_if, n->sbx_v4, n->sbx_v6, n->host_v4, n->host_v6);
	if ((ret = run_ip(batch_args, buf, nsfd, e, sizeof(e))) != 0) {
		proc_err_set(err, errcap, "inside %s: %s", n->netns, e);
		goto out;
	}
	ret = table_apply(sb, buf, err, errcap);
out:
	if (nsfd != -1)
		close(nsfd);
	free(buf);
	return ret;
}

int
netns_tap_setup(struct netns_sandbox *sb, uid_t uid, gid_t gid, char *err, size_t errcap)
{
	static const char *const batch_args[] = {"-batch", "-", NULL};
	const struct sandbox_net *n = &sb->net;
	char *buf = xmalloc(NFT_SCRIPT_MAX), e[NFT_ERR_MAX];
	int ret;

	/* from here teardown deletes the link: harmless when it does not exist */
	sb->_have |= NETNS_HAVE_TAP;
	snprintf(buf, NFT_SCRIPT_MAX,
	         "tuntap add dev %s mode tap user %lu group %lu\n"
	         "addr add %s/30 dev %s\n"
	         "addr add %s/126 dev %s nodad\n"
	         "link set %s up\n",
	         n->host_if, (unsigned long)uid, (unsigned long)gid, n->host_v4, n->host_if, n->host_v6, n->host_if,
	         n->host_if);
	if ((ret = run_ip(batch_args, buf, -1, e, sizeof(e))) != 0) {
		proc_err_set(err, errcap, "tap %s: %s", n->host_if, e);
		goto out;
	}
	ret = table_apply(sb, buf, err, errcap);
out:
	free(buf);
	return ret;
}

int
netns_vm_dir(struct netns_sandbox *sb, gid_t gid, char *path, size_t cap, char *err, size_t errcap)
{
	struct stat st;

	if (mkdir(NETNS_VM_DIR, 0711) == -1 && errno != EEXIST)
		goto bad;
	/* another user's directory here could swap the files a VM monitor reads */
	if (lstat(NETNS_VM_DIR, &st) == -1)
		goto bad;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0) {
		proc_err_set(err, errcap, "%s is not a root-owned directory writable only by root", NETNS_VM_DIR);
		return SLUICE_EIO;
	}
	snprintf(sb->_vm_dir, sizeof(sb->_vm_dir), "%s/%s", NETNS_VM_DIR, sb->net.id);
	if (mkdir(sb->_vm_dir, 0750) == -1)
		goto bad;
	sb->_have |= NETNS_HAVE_VMDIR;
	/* mkdir's mode went through the umask; chown then chmod, so the group never gets more than r-x */
	if (chown(sb->_vm_dir, 0, gid) == -1 || chmod(sb->_vm_dir, 0750) == -1)
		goto bad;
	if (snprintf(path, cap, "%s", sb->_vm_dir) >= (int)cap) {
		proc_err_set(err, errcap, "%s: path buffer too small", sb->_vm_dir);
		return SLUICE_EINVAL;
	}
	return 0;
bad:
	proc_err_set(err, errcap, "%s: %s", sb->_vm_dir[0] != '\0' ? sb->_vm_dir : NETNS_VM_DIR, strerror(errno));
	return SLUICE_EIO;
}

void
netns_teardown(struct netns_sandbox *sb)
{
	static const char *const ip_args[] = {"-force", "-batch", "-", NULL};
	char buf[NFT_SCRIPT_MAX], e[NFT_ERR_MAX];
	size_t len = 0;

	if (sb->_have & NETNS_HAVE_TABLE) {
		if (nft_render_delete(&sb->net, buf, sizeof(buf)) > 0)
			(void)nft_apply(buf, e, sizeof(e));
	}
	buf[0] = '\0';
	if (sb->_have & (NETNS_HAVE_VETH | NETNS_HAVE_TAP))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "link del %s\n", sb->net.host_if);
	if (sb->_have & NETNS_HAVE_NETNS)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "netns del %s\n", sb->net.netns);
	if (len > 0)
		(void)run_ip(ip_args, buf, -1, e, sizeof(e));
	if (sb->_have & NETNS_HAVE_VMDIR)
		vm_dir_remove(sb->_vm_dir);
	if (sb->_have & NETNS_HAVE_LOCK) {
		unlink(sb->_lock_path);  /* before letting go of it: no one can find it stale meanwhile */
		close(sb->_lock_fd);
	}
	sb->_lock_fd = -1;
	sb->_have = 0;
}
