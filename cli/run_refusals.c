/*
 * cli/run_refusals.c - what the gateway refused for a sandbox during its run,
 * printed by `sluice run` when the command exits non-zero (issue 24).
 *
 * A name outside the policy resolves to NXDOMAIN, so the client prints
 * "Could not resolve host" and nothing else; a refused request shows what the
 * client shows of it.  The audit knows why: its records for this sandbox's
 * name since the run started are read back (the last RUN_REFUSALS_TAIL bytes
 * of audit.file, which the launcher, root, can read) and the refusals are
 * printed, one line each, deduplicated, at most RUN_REFUSALS_LINES.  Peer
 * bytes in them (host names, paths) are escaped for the terminal.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "audit/audit.h"
#include "common/sluice.h"
#include "cli/cli.h"

#define RUN_REFUSALS_TAIL (8 << 20)   /* bytes of the audit file's end read back */
#define RUN_REFUSALS_LINES 10         /* distinct refusals printed */
#define RUN_REFUSALS_WAIT_MS 200      /* the gateway writes a record nothing waits for within 20 ms (AUDIT_LAZY_MS) */
#define RUN_REFUSAL_LEN 320           /* bytes of one printed line */

static const char *
str(const struct audit_record *rec, const char *key)
{
	json_t *v = json_object_get(rec->obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void
esc(char *out, size_t cap, const char *s, size_t width)
{
	out[0] = '\0';
	if (s != NULL)
		audit_term_escape(out, cap, s, strlen(s), width);
}

/* One line for a refusal record, or 0 when <rec> is none. */
static int
describe(const struct audit_record *rec, char *line, size_t cap)
{
	char host[128], reason[160], rule[80], path[96];
	const char *t = rec->type;

	esc(host, sizeof(host), rec->host != NULL ? rec->host : rec->sni, 60);
	esc(reason, sizeof(reason), str(rec, "reason"), 100);
	esc(rule, sizeof(rule), str(rec, "rule"), 40);
	if (t == NULL)
		return 0;
	if (strcmp(t, "dns") == 0 && rec->verdict != NULL && strcmp(rec->verdict, "deny") == 0) {
		snprintf(line, cap, "%s: not in the policy (its DNS answer was %s)", host[0] ? host : "?",
		         str(rec, "answer") != NULL ? str(rec, "answer") : "a refusal");
		return 1;
	}
	if (strcmp(t, "denial") == 0 || strcmp(t, "no_request") == 0) {
		snprintf(line, cap, "%s: %s (rule %s)", host[0] ? host : str(rec, "dest") != NULL ? str(rec, "dest") : "?",
		         reason[0] ? reason : "refused", rule[0] ? rule : "?");
		return 1;
	}
	if (strcmp(t, "request") == 0 && rec->verdict != NULL && strcmp(rec->verdict, "deny") == 0) {
		esc(path, sizeof(path), rec->path, 50);
		snprintf(line, cap, "%s: %s %s: %s (rule %s)", host[0] ? host : "?", rec->method != NULL ? rec->method : "?",
		         path, reason[0] ? reason : "refused", rule[0] ? rule : "?");
		return 1;
	}
	return 0;
}

void
run_refusals_print(const char *audit_path, const char *sandbox, int64_t since_ms, int status)
{
	char seen[RUN_REFUSALS_LINES][RUN_REFUSAL_LEN], line[RUN_REFUSAL_LEN];
	struct audit_reader rd;
	struct timespec ts = {0, RUN_REFUSALS_WAIT_MS * 1000000L};
	const char *l;
	size_t len, nseen = 0, i, more = 0;
	off_t end;
	int fd, rc, first;

	if (audit_path == NULL || sandbox == NULL || sandbox[0] == '\0')
		return;
	nanosleep(&ts, NULL);
	fd = open(audit_path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return;
	end = lseek(fd, 0, SEEK_END);
	first = end > RUN_REFUSALS_TAIL;  /* a cut first line is skipped */
	if (end == -1 || lseek(fd, first ? end - RUN_REFUSALS_TAIL : 0, SEEK_SET) == -1) {
		close(fd);
		return;
	}
	audit_reader_init(&rd, fd, 64 * 1024);
	while ((rc = audit_reader_next(&rd, &l, &len)) != 0) {
		struct audit_record rec;

		if (rc < 0) {
			if (rc == SLUICE_ETOOBIG)
				continue;
			break;
		}
		if (first) {
			first = 0;
			continue;
		}
		if (audit_record_parse(&rec, l, len) != 0)
			continue;
		if (rec.sandbox != NULL && strcmp(rec.sandbox, sandbox) == 0 && rec.time_ms >= since_ms &&
		    describe(&rec, line, sizeof(line))) {
			for (i = 0; i < nseen && strcmp(seen[i], line) != 0; i++)
				;
			if (i == nseen && nseen < RUN_REFUSALS_LINES)
				memcpy(seen[nseen++], line, sizeof(line));
			else if (i == nseen)
				more++;
		}
		audit_record_dispose(&rec);
	}
	audit_reader_dispose(&rd);
	close(fd);
	if (nseen == 0)
		return;
	fprintf(stderr, "sluice run: the command exited with status %d; the gateway refused, for sandbox %s:\n", status,
	        sandbox);
	for (i = 0; i < nseen; i++)
		fprintf(stderr, "sluice run:   %s\n", seen[i]);
	if (more > 0)
		fprintf(stderr, "sluice run:   ... and %zu more: sluice audit query --sandbox %s --verdict deny\n", more,
		        sandbox);
}
