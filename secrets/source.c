/*
 * secrets/source.c - where a secret's value comes from: an environment
 * variable, a file, or a program that prints it (re-run by the caller when
 * the value expires).  Values are read straight into a secret_buf; error
 * strings are static and never quote what was read.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common/clock.h"
#include "common/sluice.h"
#include "secrets/secrets.h"

#define EXEC_ARGS_MAX 32
/* file:$CREDENTIALS_DIRECTORY/NAME: a credential systemd's LoadCredential= put in the service's own directory */
#define CRED_PREFIX "$CREDENTIALS_DIRECTORY/"
#define CRED_NAME_MAX 255
#define CRED_PATH_MAX 4096

extern char **environ;

static int
env_name_ok(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (s++; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* A systemd credential name: what LoadCredential=NAME:... accepts, and nothing that leaves the directory. */
static int
cred_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= CRED_NAME_MAX && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/*
 * The path a file: source reads: itself, or for $CREDENTIALS_DIRECTORY/NAME
 * the credential in the directory systemd gives this service now (read at
 * every fetch: the variable is set only under the unit).
 */
static int
file_path(const char *arg, char *buf, size_t cap, const char **err)
{
	const char *dir;
	int n;

	if (strncmp(arg, CRED_PREFIX, sizeof(CRED_PREFIX) - 1) != 0) {
		n = snprintf(buf, cap, "%s", arg);
	} else {
		dir = getenv("CREDENTIALS_DIRECTORY");
		if (dir == NULL || dir[0] != '/') {
			*err = "CREDENTIALS_DIRECTORY is not set (no LoadCredential= in the unit?)";
			return SLUICE_ENOENT;
		}
		n = snprintf(buf, cap, "%s/%s", dir, arg + sizeof(CRED_PREFIX) - 1);
	}
	if (n < 0 || (size_t)n >= cap) {
		*err = "the secret's file path is too long";
		return SLUICE_ETOOBIG;
	}
	return 0;
}

int
secret_source_parse(const char *spec, struct secret_source *out, const char **err)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(spec, "env:", 4) == 0) {
		if (!env_name_ok(spec + 4)) {
			*err = "env: needs a variable name ([A-Za-z_][A-Za-z0-9_]*)";
			return SLUICE_EINVAL;
		}
		out->kind = SECRET_SRC_ENV;
	} else if (strncmp(spec, "file:", 5) == 0) {
		if (strncmp(spec + 5, CRED_PREFIX, sizeof(CRED_PREFIX) - 1) == 0) {
			if (!cred_name_ok(spec + 5 + sizeof(CRED_PREFIX) - 1)) {
				*err = "file:$CREDENTIALS_DIRECTORY/ needs a credential name (1-255 bytes, no '/', not . or ..)";
				return SLUICE_EINVAL;
			}
		} else if (spec[5] != '/') {
			*err = "file: needs an absolute path (or $CREDENTIALS_DIRECTORY/NAME)";
			return SLUICE_EINVAL;
		}
		out->kind = SECRET_SRC_FILE;
	} else if (strncmp(spec, "exec:", 5) == 0) {
		const char *p = spec + 5;
		while (*p == ' ')
			p++;
		if (*p == '\0') {
			*err = "exec: needs a program";
			return SLUICE_EINVAL;
		}
		out->kind = SECRET_SRC_EXEC;
	} else {
		*err = "a secret source is env:VAR, file:/path or exec:program [args]";
		return SLUICE_EINVAL;
	}
	out->arg = xstrdup(strchr(spec, ':') + 1);
	return 0;
}

void
secret_source_dispose(struct secret_source *src)
{
	free(src->arg);
	src->arg = NULL;
}

/* Drops one trailing newline and checks what is left; 0 or SLUICE_EINVAL. */
static int
finish(struct secret_buf *b, const char **err)
{
	if (b->len > 0 && b->p[b->len - 1] == '\n')
		b->len--;
	if (b->len > 0 && b->p[b->len - 1] == '\r')
		b->len--;
	if (b->len == 0) {
		*err = "the secret's source gave an empty value";
		return SLUICE_EINVAL;
	}
	if (b->len > SECRET_MAX_BYTES) {
		*err = "the secret's value is longer than 8192 bytes";
		return SLUICE_ETOOBIG;
	}
	/* a value goes into headers: a line break or NUL in it would split or cut the request */
	if (memchr(b->p, '\0', b->len) != NULL || memchr(b->p, '\n', b->len) != NULL ||
	    memchr(b->p, '\r', b->len) != NULL) {
		*err = "the secret's value contains a NUL or a line break";
		return SLUICE_EINVAL;
	}
	return 0;
}

/* Reads <fd> to EOF into <b>; until <deadline_ms> (CLOCK_MONOTONIC) when not 0. */
static int
read_all(int fd, struct secret_buf *b, uint64_t deadline_ms, const char **err)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	uint64_t now;
	ssize_t n;
	int r;

	for (;;) {
		if (deadline_ms != 0) {
			now = clock_mono_ms();
			if (now >= deadline_ms) {
				*err = "the secret's program did not finish in time";
				return SLUICE_ETIMEDOUT;
			}
			r = poll(&pfd, 1, (int)(deadline_ms - now));
			if (r == -1 && errno == EINTR)
				continue;
			if (r == -1) {
				*err = "cannot wait for the secret's program";
				return SLUICE_EIO;
			}
			if (r == 0)
				continue;
		}
		/* one byte of room beyond the bound tells "too long" from "exactly full" */
		if (b->len > SECRET_MAX_BYTES + 2) {
			*err = "the secret's value is longer than 8192 bytes";
			return SLUICE_ETOOBIG;
		}
		n = read(fd, b->p + b->len, SECRET_MAX_BYTES + 3 - b->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			*err = "cannot read the secret's source";
			return SLUICE_EIO;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	return 0;
}

static int
fetch_exec(const char *cmdline, unsigned timeout_ms, struct secret_buf *b, const char **err)
{
	char *line = xstrdup(cmdline), *argv[EXEC_ARGS_MAX + 1], *save = NULL, *tok;
	posix_spawn_file_actions_t fa;
	int fds[2] = {-1, -1}, argc = 0, status, ret;
	pid_t pid = -1;

	for (tok = strtok_r(line, " ", &save); tok != NULL && argc < EXEC_ARGS_MAX; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	if (argc == 0 || tok != NULL) {
		*err = argc == 0 ? "exec: needs a program" : "exec: has more than 32 arguments";
		ret = SLUICE_EINVAL;
		goto out;
	}
	if (pipe2(fds, O_CLOEXEC) == -1) {
		*err = "cannot create a pipe for the secret's program";
		ret = SLUICE_EIO;
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	/* stderr to /dev/null: a program that prints the value there must not put it in our log */
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	fds[1] = -1;
	if (ret != 0) {
		pid = -1;
		*err = "cannot start the secret's program";
		ret = SLUICE_EIO;
		goto out;
	}
	ret = read_all(fds[0], b, clock_mono_ms() + (timeout_ms ? timeout_ms : SECRET_EXEC_TIMEOUT_MS), err);
	if (ret != 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	pid = -1;
	if (ret == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		*err = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "the secret's program was not found"
		                                                       : "the secret's program failed";
		ret = SLUICE_EIO;
	}
out:
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
	free(line);
	return ret;
}

int
secret_fetch(const struct secret_source *src, unsigned timeout_ms, struct secret_buf **out, const char **err)
{
	struct secret_buf *b = secret_buf_new(SECRET_MAX_BYTES + 3);
	char path[CRED_PATH_MAX];
	const char *v;
	int fd, ret = 0;

	*out = NULL;
	if (b == NULL) {
		*err = "cannot allocate memory for a secret";
		return SLUICE_ENOMEM;
	}
	switch (src->kind) {
	case SECRET_SRC_ENV:
		v = getenv(src->arg);
		if (v == NULL) {
			*err = "the secret's environment variable is not set";
			ret = SLUICE_ENOENT;
		} else if (strlen(v) > SECRET_MAX_BYTES + 2) {
			*err = "the secret's value is longer than 8192 bytes";
			ret = SLUICE_ETOOBIG;
		} else {
			b->len = strlen(v);
			memcpy(b->p, v, b->len);
		}
		break;
	case SECRET_SRC_FILE:
		if ((ret = file_path(src->arg, path, sizeof(path), err)) != 0)
			break;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd == -1) {
			*err = errno == ENOENT ? "the secret's file does not exist" : "cannot open the secret's file";
			ret = errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
			break;
		}
		ret = read_all(fd, b, 0, err);
		close(fd);
		break;
	case SECRET_SRC_EXEC:
		ret = fetch_exec(src->arg, timeout_ms, b, err);
		break;
	default:
		*err = "unknown secret source";
		ret = SLUICE_EINVAL;
	}
	if (ret == 0)
		ret = finish(b, err);
	if (ret != 0) {
		secret_buf_free(b);
		return ret;
	}
	*out = b;
	return 0;
}

int
secret_value_check(const struct secret_buf *b, const char **err)
{
	if (b->len < SECRET_MIN_BYTES) {
		*err = "the secret's value is shorter than 8 bytes: its echo in a response could not be scrubbed";
		return SLUICE_EINVAL;
	}
	return 0;
}
