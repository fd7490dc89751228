/*
 * cli/audit.c - `sluice audit verify|query|tail|summary|keygen`: the auditor's
 * tools over the audit log (docs/auditor.md, docs/audit-schema.md).
 *
 * Everything in a log is hostile: tables show values through
 * audit_term_escape(); --format json prints lines exactly as read.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "common/clock.h"
#include "common/sluice.h"
#include "audit/audit.h"
#include "cli/cli.h"

#define EXIT_USAGE 2
#define TAIL_MAX 100000        /* -n bound: the kept rows are held in memory */
#define FOLLOW_POLL_NS 200000000L

static const char usage_audit[] =
	"usage: sluice audit verify FILE... [--checkpoints FILE] [--key-file FILE]\n"
	"       sluice audit query FILE... [FILTERS] [--format table|json]\n"
	"       sluice audit tail [-f] [-n N] FILE [FILTERS] [--format table|json]\n"
	"       sluice audit summary FILE... [--since T] [--until T]\n"
	"       sluice audit keygen FILE\n"
	"FILTERS: --since T --until T (RFC 3339, or 10m, 2h, 1d ago; both inclusive) --sandbox S\n"
	"         --host H (or *.domain) --type T[,T...] --verdict allow|deny --secret NAME --status N|Nxx\n"
	"         --tool NAME (an MCP tool, prompt or resource URI a request names, or its response's)\n"
	"Give rotated files oldest first. See docs/auditor.md.\n";

static const char usage_verify[] =
	"usage: sluice audit verify FILE... [--checkpoints FILE] [--key-file FILE]\n"
	"Checks the hash chain across FILE... (rotated files oldest first, the current one last): every seq\n"
	"present once and in order, every prev the SHA-256 of the line before, with --key-file every mac\n"
	"(the INITIAL key, kept off the gateway's host), with --checkpoints every checkpoint (e.g. syslog lines\n"
	"'seq=N hash=H') and that the log reaches the last one.\n"
	"Prints 'ok: ...' and exits 0, or prints 'FILE:LINE: seq N: <why>' for the first bad record and exits 1.\n"
	"An incomplete last record (a crash during a write) is only a warning.\n";

static const char usage_keygen[] =
	"usage: sluice audit keygen FILE\n"
	"Writes a fresh audit key file (seq 1, mode 0600; refuses to overwrite) for audit.key_file.\n"
	"Copy it off the host before starting the gateway: verify --key-file needs this initial copy.\n";

static const char usage_summary[] =
	"usage: sluice audit summary FILE... [--since T] [--until T]\n"
	"Per sandbox: requests, denials, exfiltration attempts, secrets used, hosts contacted (with counts);\n"
	"then, when requests named MCP tools, per tool: calls, denials, holds, the sandboxes that called it.\n";

static int
open_log(const char *cmd, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd == -1)
		fprintf(stderr, "sluice audit %s: %s: %s\n", cmd, path, strerror(errno));
	return fd;
}

/* ---- verify ---- */

static int
verify_file(struct audit_verify *v, const char *path)
{
	struct audit_reader r;
	const char *line;
	size_t len;
	int fd, rc, done = 0;

	fd = open_log("verify", path);
	if (fd == -1)
		return -1;
	audit_verify_file(v, path);
	audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
	while (!done) {
		rc = audit_reader_next(&r, &line, &len);
		if (rc == 1) {
			done = audit_verify_line(v, line, len, r.lineno, 1);
		} else if (rc == SLUICE_ETOOBIG) {
			done = audit_verify_too_long(v, r.lineno);
		} else if (rc == 0) {
			if (audit_reader_pending(&r) > 0)
				audit_verify_line(v, r.buf + r.start, r.end - r.start, r.lineno + 1, 0);
			break;
		} else {
			fprintf(stderr, "sluice audit verify: %s: %s\n", path, strerror(errno));
			audit_reader_dispose(&r);
			close(fd);
			return -1;
		}
	}
	audit_reader_dispose(&r);
	close(fd);
	return done;
}

static int
cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{"checkpoints", required_argument, NULL, 'c'},
		{"key-file", required_argument, NULL, 'k'},
		{NULL, 0, NULL, 0},
	};
	struct audit_checkpoints cp;
	struct audit_verify_opts vo;
	struct audit_verify *v;
	struct audit_key key;
	const char *cpath = NULL, *kpath = NULL, *err = NULL;
	int ch, i, rc, ret = 1;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_verify, stdout);
		return 0;
	}
	optind = 0;  /* GNU getopt: a full reset; options may come after the files */
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'c')
			cpath = optarg;
		else if (ch == 'k')
			kpath = optarg;
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	memset(&cp, 0, sizeof(cp));
	memset(&vo, 0, sizeof(vo));
	memset(&key, 0, sizeof(key));
	if (kpath != NULL) {
		if (audit_key_load(kpath, &key, &err) != 0) {
			fprintf(stderr, "sluice audit verify: key file %s: %s\n", kpath, err);
			return 1;
		}
		vo.key = &key;
	}
	if (cpath != NULL) {
		if (audit_checkpoints_load(&cp, cpath, &err) != 0) {
			fprintf(stderr, "sluice audit verify: checkpoints %s: %s\n", cpath, err);
			sluice_wipe(&key, sizeof(key));
			return 1;
		}
		vo.cp = &cp;
	}
	v = audit_verify_create(&vo);
	for (i = optind; i < argc; i++) {
		rc = verify_file(v, argv[i]);
		if (rc < 0)
			goto out;
		if (rc > 0)
			break;
	}
	ret = audit_verify_finish(v, NULL) == AUDIT_FAULT_NONE ? 0 : 1;
	fputs(audit_verify_report(v), stdout);
out:
	audit_verify_destroy(v);
	audit_checkpoints_dispose(&cp);
	sluice_wipe(&key, sizeof(key));
	return ret;
usage:
	fputs(usage_verify, stderr);
	return EXIT_USAGE;
}

/* ---- keygen ---- */

static int
cmd_keygen(int argc, char **argv)
{
	const char *err = NULL;
	int r;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_keygen, stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs(usage_keygen, stderr);
		return EXIT_USAGE;
	}
	r = audit_key_generate(argv[1], &err);
	if (r == SLUICE_EEXIST) {
		fprintf(stderr, "sluice audit keygen: %s exists; refusing to overwrite it\n", argv[1]);
		return 1;
	}
	if (r != 0) {
		fprintf(stderr, "sluice audit keygen: %s: %s\n", argv[1], err ? err : sluice_strerror(r));
		return 1;
	}
	printf("wrote a new audit key (seq 1) to %s (mode 0600)\n"
	       "BEFORE starting the gateway, copy this file off this host (where the auditors keep it): the gateway\n"
	       "evolves the key in place and wipes each old one, so your copy is the only way to check the macs\n"
	       "later with `sluice audit verify --key-file COPY FILE...`. Then set audit.key_file: %s\n",
	       argv[1], argv[1]);
	return 0;
}

/* ---- query, tail, summary ---- */

struct qargs {
	struct audit_filter f;
	int json, follow;
	long tail_n;
	char **files;
	int nfiles;
};

static int
parse_query_args(const char *cmd, int argc, char **argv, struct qargs *q, int tail)
{
	static const struct option opts[] = {
		{"since", required_argument, NULL, 'S'},   {"until", required_argument, NULL, 'U'},
		{"sandbox", required_argument, NULL, 's'}, {"host", required_argument, NULL, 'H'},
		{"type", required_argument, NULL, 't'},    {"verdict", required_argument, NULL, 'v'},
		{"secret", required_argument, NULL, 'x'},  {"status", required_argument, NULL, 'c'},
		{"format", required_argument, NULL, 'F'},  {"follow", no_argument, NULL, 'f'},
		{"lines", required_argument, NULL, 'n'},   {"tool", required_argument, NULL, 'T'},
		{NULL, 0, NULL, 0},
	};
	int64_t now = (int64_t)clock_wall_ms();
	char *end;
	int ch;

	memset(q, 0, sizeof(*q));
	audit_filter_init(&q->f);
	q->tail_n = 10;
	optind = 0;
	while ((ch = getopt_long(argc, argv, tail ? "fn:" : "", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
		case 'U':
			if (audit_time_parse(optarg, now, ch == 'S' ? &q->f.since_ms : &q->f.until_ms) != 0) {
				fprintf(stderr, "sluice audit %s: bad time '%s' (RFC 3339, or 10m, 2h, 1d ago)\n", cmd, optarg);
				return -1;
			}
			break;
		case 's': q->f.sandbox = optarg; break;
		case 'H': q->f.host = optarg; break;
		case 't': q->f.type = optarg; break;
		case 'x': q->f.secret = optarg; break;
		case 'T': q->f.tool = optarg; break;
		case 'v':
			if (strcmp(optarg, "allow") != 0 && strcmp(optarg, "deny") != 0) {
				fprintf(stderr, "sluice audit %s: --verdict is allow or deny\n", cmd);
				return -1;
			}
			q->f.verdict = optarg;
			break;
		case 'c':
			if (audit_filter_status(&q->f, optarg) != 0) {
				fprintf(stderr, "sluice audit %s: --status is a status (404) or a class (4xx)\n", cmd);
				return -1;
			}
			break;
		case 'F':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0) {
				fprintf(stderr, "sluice audit %s: --format is table or json\n", cmd);
				return -1;
			}
			q->json = strcmp(optarg, "json") == 0;
			break;
		case 'f':
			if (!tail)
				return -1;
			q->follow = 1;
			break;
		case 'n':
			errno = 0;
			q->tail_n = strtol(optarg, &end, 10);
			if (!tail || errno != 0 || *end != '\0' || end == optarg || q->tail_n < 0 || q->tail_n > TAIL_MAX) {
				fprintf(stderr, "sluice audit %s: -n is 0..%d\n", cmd, TAIL_MAX);
				return -1;
			}
			break;
		default:
			return -1;
		}
	}
	q->files = argv + optind;
	q->nfiles = argc - optind;
	if (q->nfiles < 1 || (tail && q->nfiles != 1))
		return -1;
	return 0;
}

/* One row (table or raw json) as a malloc'd string. */
static char *
render(const struct qargs *q, const char *line, size_t len, const struct audit_record *rec,
       const struct audit_record *req)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	if (m == NULL)
		abort();  /* out of memory */
	if (q->json) {
		fwrite(line, 1, len, m);
		fputc('\n', m);
	} else {
		audit_table_row(m, rec, req);
	}
	fclose(m);
	return buf;
}

/*
 * Per-line work shared by query and tail: *<row> is the rendered row when
 * <line> matches, else NULL.  Returns 0, or -1 when the line is not a record.
 */
static int
consider(const struct qargs *q, struct audit_join *j, const char *line, size_t len, char **row)
{
	struct audit_record rec;
	const struct audit_record *req;

	*row = NULL;
	if (audit_record_parse(&rec, line, len) != 0)
		return -1;
	audit_join_add(j, &rec);
	req = audit_join_find(j, &rec);
	if (audit_filter_match(&q->f, &rec, req))
		*row = render(q, line, len, &rec, req);
	audit_record_dispose(&rec);
	return 0;
}

/*
 * Reads <fd> to its current end through <r>; each matching row goes to
 * <emit>.  <warn>: report unreadable lines on stderr.
 */
static int
scan(const struct qargs *q, struct audit_join *j, struct audit_reader *r, const char *path, int warn,
     void (*emit)(void *, char *), void *arg)
{
	const char *line;
	size_t len;
	char *row;
	int rc;

	for (;;) {
		rc = audit_reader_next(r, &line, &len);
		if (rc == 0)
			return 0;
		if (rc == SLUICE_ETOOBIG) {
			if (warn)
				fprintf(stderr, "sluice audit: %s:%llu: skipped: longer than %d bytes\n", path,
				        (unsigned long long)r->lineno, AUDIT_READ_LINE_MAX);
			continue;
		}
		if (rc < 0) {
			fprintf(stderr, "sluice audit: %s: %s\n", path, strerror(errno));
			return -1;
		}
		if (consider(q, j, line, len, &row) != 0) {
			if (warn)
				fprintf(stderr, "sluice audit: %s:%llu: skipped: not a JSON record\n", path,
			        (unsigned long long)r->lineno);
		} else if (row != NULL) {
			emit(arg, row);
		}
	}
}

static void
emit_print(void *arg, char *row)
{
	(void)arg;
	fputs(row, stdout);
	free(row);
}

static int
cmd_query(int argc, char **argv)
{
	struct audit_reader r;
	struct audit_join *j;
	struct qargs q;
	int i, fd, ret = 0;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_audit, stdout);
		return 0;
	}
	if (parse_query_args("query", argc, argv, &q, 0) != 0) {
		fputs(usage_audit, stderr);
		return EXIT_USAGE;
	}
	j = audit_join_create();
	if (!q.json)
		audit_table_header(stdout);
	for (i = 0; i < q.nfiles && ret == 0; i++) {
		fd = open_log("query", q.files[i]);
		if (fd == -1) {
			ret = 1;
			break;
		}
		audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
		if (scan(&q, j, &r, q.files[i], 1, emit_print, NULL) != 0)
			ret = 1;
		if (audit_reader_pending(&r) > 0)
			fprintf(stderr, "sluice audit: %s:%llu: skipped: incomplete last record\n", q.files[i],
			        (unsigned long long)r.lineno + 1);
		audit_reader_dispose(&r);
		close(fd);
	}
	audit_join_destroy(j);
	return ret;
}

/* The last <n> rows, in a ring. */
struct ring {
	char **v;
	size_t n, head, count;
};

static void
emit_ring(void *arg, char *row)
{
	struct ring *rg = arg;

	if (rg->n == 0) {
		free(row);
		return;
	}
	free(rg->v[rg->head]);
	rg->v[rg->head] = row;
	rg->head = (rg->head + 1) % rg->n;
	if (rg->count < rg->n)
		rg->count++;
}

static void
emit_flush(void *arg, char *row)
{
	emit_print(arg, row);
	fflush(stdout);
}

static int
cmd_tail(int argc, char **argv)
{
	struct timespec ts = {0, FOLLOW_POLL_NS};
	struct audit_reader r;
	struct audit_join *j;
	struct stat st, now;
	struct ring rg;
	struct qargs q;
	const char *path;
	off_t off;
	size_t i;
	int fd, nfd, ret = 0;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_audit, stdout);
		return 0;
	}
	if (parse_query_args("tail", argc, argv, &q, 1) != 0) {
		fputs(usage_audit, stderr);
		return EXIT_USAGE;
	}
	path = q.files[0];
	fd = open_log("tail", path);
	if (fd == -1)
		return 1;
	j = audit_join_create();
	rg.n = (size_t)q.tail_n;
	rg.v = xcalloc(rg.n + 1, sizeof(*rg.v));
	rg.head = rg.count = 0;
	audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
	if (scan(&q, j, &r, path, 0, emit_ring, &rg) != 0)
		ret = 1;
	if (!q.json)
		audit_table_header(stdout);
	for (i = 0; i < rg.count; i++) {
		size_t k = (rg.head + rg.n - rg.count + i) % rg.n;

		fputs(rg.v[k], stdout);
		free(rg.v[k]);
		rg.v[k] = NULL;
	}
	free(rg.v);
	fflush(stdout);
	while (q.follow && ret == 0) {
		nanosleep(&ts, NULL);
		if (scan(&q, j, &r, path, 0, emit_flush, NULL) != 0) {
			ret = 1;
			break;
		}
		if (fstat(fd, &st) == -1 || stat(path, &now) == -1)
			continue;  /* between rotation's rename and the new file: wait */
		off = lseek(fd, 0, SEEK_CUR);
		if (st.st_ino == now.st_ino && st.st_dev == now.st_dev) {
			if (off != -1 && now.st_size < off) {
				/* truncated in place (copytruncate): start over */
				audit_reader_dispose(&r);
				lseek(fd, 0, SEEK_SET);
				audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
			}
			continue;
		}
		/* replaced (rotation): read what reached the old file since, then follow the new one */
		nfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (nfd == -1)
			continue;
		if (scan(&q, j, &r, path, 0, emit_flush, NULL) != 0)
			ret = 1;
		audit_reader_dispose(&r);
		close(fd);
		fd = nfd;
		audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
	}
	audit_reader_dispose(&r);
	close(fd);
	audit_join_destroy(j);
	return ret;
}

static int
cmd_summary(int argc, char **argv)
{
	struct audit_summary *s;
	struct audit_reader r;
	struct audit_record rec;
	struct qargs q;
	const char *line;
	size_t len;
	int i, fd, rc, ret = 0;

	if (cli_wants_help(argc, argv)) {
		fputs(usage_summary, stdout);
		return 0;
	}
	if (parse_query_args("summary", argc, argv, &q, 0) != 0 || q.f.sandbox || q.f.host || q.f.type ||
	    q.f.verdict || q.f.secret || q.f.tool || q.f.status >= 0 || q.json) {
		fputs(usage_summary, stderr);
		return EXIT_USAGE;
	}
	s = audit_summary_create();
	for (i = 0; i < q.nfiles && ret == 0; i++) {
		fd = open_log("summary", q.files[i]);
		if (fd == -1) {
			ret = 1;
			break;
		}
		audit_reader_init(&r, fd, AUDIT_READ_LINE_MAX);
		while ((rc = audit_reader_next(&r, &line, &len)) != 0) {
			if (rc == SLUICE_ETOOBIG)
				continue;
			if (rc < 0) {
				fprintf(stderr, "sluice audit summary: %s: %s\n", q.files[i], strerror(errno));
				ret = 1;
				break;
			}
			if (audit_record_parse(&rec, line, len) != 0)
				continue;
			if (audit_filter_match(&q.f, &rec, NULL))
				audit_summary_add(s, &rec);
			audit_record_dispose(&rec);
		}
		audit_reader_dispose(&r);
		close(fd);
	}
	if (ret == 0)
		audit_summary_print(s, stdout);
	audit_summary_destroy(s);
	return ret;
}

int
cmd_audit(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage_audit, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage_audit, stdout);
		return 0;
	}
	if (strcmp(argv[1], "verify") == 0)
		return cmd_verify(argc - 1, argv + 1);
	if (strcmp(argv[1], "keygen") == 0)
		return cmd_keygen(argc - 1, argv + 1);
	if (strcmp(argv[1], "query") == 0)
		return cmd_query(argc - 1, argv + 1);
	if (strcmp(argv[1], "tail") == 0)
		return cmd_tail(argc - 1, argv + 1);
	if (strcmp(argv[1], "summary") == 0)
		return cmd_summary(argc - 1, argv + 1);
	fputs(usage_audit, stderr);
	return EXIT_USAGE;
}
