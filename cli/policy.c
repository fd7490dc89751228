/*
 * cli/policy.c - `sluice policy check [--strict] FILE` and `sluice policy
 * explain FILE --method M --url URL ...`, and what `policy test` shares with
 * explain: a described request turned into the facts the gateway's judge
 * (policy/judge.h) reads, and counters that stand still between cases.
 *
 * Exit status: 0 ok, 1 the policy (or a case) fails, 2 bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/host.h"
#include "common/sluice.h"
#include "policy/mcp.h"
#include "cli/policy_cli.h"

#define EXIT_USAGE 2
#define BODY_FILE_MAX (64u * 1024 * 1024) /* --body-file */

int cli_policy_main(int argc, char **argv);

static const char usage_policy[] =
	"usage: sluice policy check [--strict] FILE\n"
	"       sluice policy test FILE CASES.yaml\n"
	"       sluice policy explain FILE --method M --url URL [--header 'N: V']...\n"
	"                             [--json BODY | --form BODY | --body-file F --content-type T]\n"
	"\n"
	"check    validates FILE as `sluice serve` would: errors (file:line:column) and warnings\n"
	"         (shadowed rules, overlapping wildcards, secrets bound to hosts they cannot reach);\n"
	"         --strict turns warnings into errors\n"
	"test     runs the request cases of CASES.yaml against FILE; exits 1 on any mismatch\n"
	"explain  shows every rule considered for one request, and why it matched or not\n";

void
cli_counters_free(struct cli_counters *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->v[i].key);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

/* The counter of <key> for <sandbox> (one for all when global), made at zero on first use. */
static struct cli_counter *
counter(struct cli_counters *c, const char *key, enum policy_scope scope, const char *sandbox)
{
	char k[512];
	size_t i;

	snprintf(k, sizeof(k), "%s\n%s", key, scope == POLICY_SCOPE_GLOBAL ? "*" : sandbox != NULL ? sandbox : "");
	for (i = 0; i < c->n; i++)
		if (strcmp(c->v[i].key, k) == 0)
			return &c->v[i];
	c->v = xrealloc(c->v, (c->n + 1) * sizeof(*c->v));
	memset(&c->v[c->n], 0, sizeof(c->v[c->n]));
	c->v[c->n].key = xstrdup(k);
	return &c->v[c->n++];
}

static uint64_t
rate_left(void *arg, const struct policy_limit *lim, const char *sandbox)
{
	const struct cli_counter *l = counter(arg, lim->key, lim->scope, sandbox);

	return l->used >= lim->count ? 0 : lim->count - l->used;
}

static int64_t
budget_left(void *arg, const struct policy_budget *b, const char *sandbox)
{
	return b->max - counter(arg, b->key, b->scope, sandbox)->spent;
}

void
cli_counters_view(struct cli_counters *c, struct judge_counters *view)
{
	view->rate_left = rate_left;
	view->budget_left = budget_left;
	view->arg = c;
}

void
cli_counters_apply(struct cli_counters *c, const struct judge_outcome *o, const char *sandbox)
{
	if (o->verdict != JUDGE_ALLOW && o->verdict != JUDGE_HOLD)
		return;
	if (o->limit != NULL && o->refused_take != JUDGE_TAKE_LIMIT)
		counter(c, o->limit->key, o->limit->scope, sandbox)->used++;
	if (o->budget != NULL && o->refused_take == JUDGE_TAKE_ALL)
		counter(c, o->budget->key, o->budget->scope, sandbox)->spent += o->amount;
}

/* Splits <url> into host, port, path and query. */
static int
split_url(const char *url, char *host, unsigned *port, const char **path, size_t *plen, const char **query,
          size_t *qlen, int *plain, const char **err)
{
	const char *a, *slash, *q, *end = url + strlen(url);
	unsigned dport;

	if (strncmp(url, "https://", 8) == 0) {
		a = url + 8;
		dport = 443;
		*plain = 0;
	} else if (strncmp(url, "http://", 7) == 0) {
		a = url + 7;
		dport = 80;
		*plain = 1;
	} else {
		*err = "the URL must start with https:// or http://";
		return -1;
	}
	if (memchr(url, '#', (size_t)(end - url)) != NULL || strlen(url) > CLI_URL_MAX - 1) {
		*err = "the URL has a fragment or is too long";
		return -1;
	}
	slash = a + strcspn(a, "/?");
	if (memchr(a, '@', (size_t)(slash - a)) != NULL) {
		*err = "user information in the URL is not supported";
		return -1;
	}
	if (host_split_authority(a, (size_t)(slash - a), dport, host, port, err) < 0)
		return -1;
	q = strchr(slash, '?');
	*path = *slash == '/' ? slash : "/";
	*plen = *slash == '/' ? (size_t)((q != NULL ? q : end) - slash) : 1;
	*query = q != NULL ? q + 1 : NULL;
	*qlen = q != NULL ? (size_t)(end - q - 1) : 0;
	return 0;
}

int
cli_describe(const struct policy *pol, const struct cli_req *rq, struct cli_described *d,
             struct judge_outcome *out, char *err, size_t errlen)
{
	const char *path, *query, *e = NULL;
	size_t plen, qlen, i, n = 0;
	unsigned port;
	long nl;
	int plain;

	memset(&d->cf, 0, sizeof(d->cf));
	memset(&d->rq, 0, sizeof(d->rq));
	if (split_url(rq->url, d->host, &port, &path, &plen, &query, &qlen, &plain, &e) != 0) {
		snprintf(err, errlen, "bad URL '%s': %s", rq->url, e != NULL ? e : "bad host");
		return -1;
	}
	d->cf.sandbox = rq->sandbox;
	d->cf.host = d->host;
	d->cf.port = port;
	d->cf.mode = JUDGE_CONN_EXPLICIT;
	d->cf.tls = !plain;
	d->rq.method = rq->method;
	d->rq.method_len = strlen(rq->method);
	/* the connection first (as the gateway: the CONNECT or the ClientHello, before any request), then the path */
	policy_judge_conn(pol, &d->cf, out);
	if (out->verdict != JUDGE_ALLOW)
		return 1;
	d->cf.judged = 1;
	d->cf.entry = out->entry;
	nl = policy_judge_path(d->cf.entry, path, plen, d->path, sizeof(d->path), out);
	if (nl < 0)
		return 1;
	d->rq.path = d->path;
	d->rq.path_len = (size_t)nl;
	d->rq.query = query;
	d->rq.query_len = qlen;
	/* the head as sent: one Content-Type, the one given (or the json/form default), unless headers carry it */
	for (i = 0; i < rq->nheaders; i++)
		if (rq->ct_in_headers || !sluice_iov_ieq(rq->headers[i].name, rq->headers[i].name_len, "content-type"))
			d->headers[n++] = rq->headers[i];
	if (!rq->ct_in_headers && rq->content_type != NULL) {
		d->headers[n].name = "Content-Type";
		d->headers[n].name_len = 12;
		d->headers[n].value = rq->content_type;
		d->headers[n].value_len = strlen(rq->content_type);
		n++;
	}
	d->rq.headers = d->headers;
	d->rq.nheaders = n;
	d->rq.has_body = rq->body != NULL && rq->body_len > 0;
	d->rq.body_len_known = 1;
	d->rq.body_total = rq->body != NULL ? rq->body_len : 0;
	d->rq.body = rq->body;
	d->rq.body_len = rq->body != NULL ? rq->body_len : 0;
	d->rq.body_complete = 1;
	return 0;
}

/*
 * What the gateway refuses on an MCP endpoint before any rule (proxy/judge/mcp_req.c): a body that is not a
 * JSON-RPC message it judges (400), a response the client POSTs (403: no server request is known here).  1 with
 * <out> filled, else 0.
 */
static int
mcp_refused(const struct cli_described *d, const struct policy_mcp_body *b, int parsed, enum policy_mcp_error e,
            struct judge_outcome *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->verdict = JUDGE_DENY;
	out->stage = JUDGE_AT_BODY;
	out->rule = "mcp";
	out->entry = d->cf.entry;
	if (!parsed) {
		snprintf(out->_reason, sizeof(out->_reason), "malformed JSON-RPC body: %s",
		         d->rq.body == NULL || d->rq.body_len == 0 ? "not JSON" : policy_mcp_strerror(e));
		out->status = 400;
		out->reason = out->_reason;
		return 1;
	}
	for (i = 0; i < b->nmsgs; i++)
		if (b->msgs[i].kind == POLICY_MCP_RESPONSE) {
			out->status = 403;
			out->stage = JUDGE_AT_RULES;
			out->reason = "a JSON-RPC response that answers no server request seen on this connection";
			return 1;
		}
	return 0;
}

void
cli_judge(const struct policy *pol, struct cli_described *d, struct cli_counters *ctr, const char *sandbox,
          struct judge_outcome *out, size_t *nbatch, size_t *at, policy_explain_fn explain, void *arg)
{
	struct judge_counters view, *vp = NULL;
	struct judge_outcome *each;
	struct policy_mcp_body b;
	enum policy_mcp_error e;
	const char *ep = NULL;
	int code, batch, parsed;
	size_t i;

	*nbatch = 0;
	*at = 0;
	memset(&b, 0, sizeof(b));
	if (ctr != NULL) {
		cli_counters_view(ctr, &view);
		vp = &view;
	}
	batch = 0;
	if (policy_host_mcp(d->cf.entry, &ep, &code) && strcmp(d->rq.path, ep) == 0 && d->rq.method_len == 4 &&
	    memcmp(d->rq.method, "POST", 4) == 0) {
		/* the gateway judges an MCP POST per message: what it refuses first, refused here the same */
		e = POLICY_MCP_E_JSON;
		parsed = d->rq.body != NULL && d->rq.body_len > 0 && policy_mcp_parse(d->rq.body, d->rq.body_len, &b, &e) == 0;
		if (mcp_refused(d, &b, parsed, e, out)) {
			policy_mcp_body_dispose(&b);
			return;
		}
		batch = b.batch;
	}
	if (!batch) {
		policy_mcp_body_dispose(&b);
		policy_judge(pol, &d->cf, &d->rq, vp, out, explain, arg);
		if (ctr != NULL)
			cli_counters_apply(ctr, out, sandbox);
		return;
	}
	each = xcalloc(b.nmsgs, sizeof(*each));
	policy_judge_mcp_batch(pol, &d->cf, &d->rq, &b, vp, out, each, at, explain, arg);
	*nbatch = b.nmsgs;
	if (ctr != NULL && (out->verdict == JUDGE_ALLOW || out->verdict == JUDGE_HOLD) && out->status != 429)
		for (i = 0; i < b.nmsgs; i++)
			cli_counters_apply(ctr, &each[i], sandbox);
	free(each);
	policy_mcp_body_dispose(&b);
}

/* ---- check ---- */

static int
cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {{"strict", no_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	char errbuf[1024];
	size_t i, nw, nerr;
	int ch, strict = 0, ret;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (ch != 's') {
			fputs(usage_policy, stderr);
			return EXIT_USAGE;
		}
		strict = 1;
	}
	if (optind != argc - 1) {
		fputs(usage_policy, stderr);
		return EXIT_USAGE;
	}
	if (policy_load_file_flags(argv[optind], POLICY_LOAD_LINT_ERRORS_OK, &cfg, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "%s\n", errbuf);
		return 1;
	}
	nw = policy_warning_count(pol);
	nerr = policy_lint_errors(pol);
	for (i = 0; i < nw; i++)
		fprintf(stderr, "%s\n", policy_warning_get(pol, i));
	nw -= nerr;
	if (nerr > 0 || (strict && nw > 0)) {
		printf("%s: %zu error%s, %zu warning%s%s\n", argv[optind], nerr, nerr == 1 ? "" : "s", nw,
		       nw == 1 ? "" : "s", strict && nw > 0 ? " (--strict: warnings are errors)" : "");
		ret = 1;
	} else if (nw > 0) {
		printf("%s: ok (%zu warning%s)\n", argv[optind], nw, nw == 1 ? "" : "s");
		ret = 0;
	} else {
		printf("%s: ok\n", argv[optind]);
		ret = 0;
	}
	policy_unref(pol);
	policy_config_free(cfg);
	return ret;
}

/* ---- explain ---- */

/* Which batch element the steps are of: a step whose index is not past the last one starts the next element. */
struct explain_state {
	size_t element;
	size_t last;
};

static void
explain_step(void *arg, const struct policy_explain_step *st)
{
	static const char *const results[] = {"skipped", "no match", "match", "match (cannot judge: refused)"};
	struct explain_state *es = arg;

	if (es != NULL && (es->last == (size_t)-1 || st->index <= es->last) && es->element++ > 0)
		printf(" element %zu:\n", es->element);
	if (es != NULL)
		es->last = st->index;
	printf("  rule %zu '%s' (%s%s%s, line %u): %s%s%s\n", st->index, st->rule, policy_verdict_name(st->verdict),
	       st->mode != POLICY_MODE_ENFORCE ? ", mode " : "", st->mode != POLICY_MODE_ENFORCE ?
	       policy_mode_name(st->mode) : "", st->line, results[st->result + 1], st->why != NULL ? ": " : "",
	       st->why != NULL ? st->why : "");
}

static void
print_outcome(const char *label, const struct policy_outcome *o)
{
	char a[64], m[64];
	unsigned t = o->hold_ms / 1000;

	printf("%s: %s by rule '%s'%s%s\n", label, policy_verdict_name(o->verdict), o->rule, o->reason ? ": " : "",
	       o->reason ? o->reason : "");
	if (o->limit != NULL)
		printf("  limit: %u/%s, %s (counter %s)\n", o->limit->count, policy_period_name(o->limit->period_s),
		       o->limit->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox", o->limit->key);
	if (o->budget != NULL)
		printf("  budget: %s of %s per %s, %s (counter %s); this request: %s\n",
		       policy_amount_fmt(o->budget->max, m, sizeof(m)), o->budget->sum, policy_period_name(o->budget->period_s),
		       o->budget->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox", o->budget->key,
		       policy_amount_fmt(o->amount, a, sizeof(a)));
	if (o->verdict == POLICY_REQ_HOLD)
		printf("  hold: up to %u%s for an operator's approval, then 403\n", t % 3600 == 0 ? t / 3600 :
		       t % 60 == 0 ? t / 60 : t, t % 3600 == 0 ? "h" : t % 60 == 0 ? "m" : "s");
}

/* Reads a file of at most BODY_FILE_MAX bytes into a new buffer. */
static char *
read_file(const char *path, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return NULL;
	buf = xmalloc(cap);
	for (;;) {
		ssize_t r;

		if (n == cap) {
			if (cap >= BODY_FILE_MAX) {
				errno = EFBIG;
				goto fail;
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + n, cap - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

static int
cmd_explain(int argc, char **argv)
{
	static const struct option opts[] = {
		{"method", required_argument, NULL, 'm'}, {"url", required_argument, NULL, 'u'},
		{"header", required_argument, NULL, 'H'}, {"json", required_argument, NULL, 'j'},
		{"form", required_argument, NULL, 'f'}, {"body-file", required_argument, NULL, 'b'},
		{"content-type", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
	};
	struct policy *pol = NULL;
	struct judge_outcome *res = xcalloc(1, sizeof(*res));
	struct cli_described *d = xcalloc(1, sizeof(*d));
	struct cli_req rq;
	char errbuf[1024], *file = NULL;
	const char *bodyfile = NULL;
	size_t i, nbodies = 0, nbatch = 0, at = 0;
	int ch, rc, ret = EXIT_USAGE;

	memset(&rq, 0, sizeof(rq));
	rq.method = "GET";
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		const char *colon;

		switch (ch) {
		case 'm':
			rq.method = optarg;
			break;
		case 'u':
			rq.url = optarg;
			break;
		case 'H':
			colon = strchr(optarg, ':');
			if (colon == NULL || colon == optarg || rq.nheaders == CLI_HEADERS_MAX)
				goto usage;
			rq.headers[rq.nheaders].name = optarg;
			rq.headers[rq.nheaders].name_len = (size_t)(colon - optarg);
			rq.headers[rq.nheaders].value = colon + 1 + strspn(colon + 1, " \t");
			rq.headers[rq.nheaders].value_len = strlen(rq.headers[rq.nheaders].value);
			if (sluice_iov_ieq(optarg, (size_t)(colon - optarg), "content-type")) {
				rq.content_type = rq.headers[rq.nheaders].value;
				rq.ct_in_headers = 1;
			}
			rq.nheaders++;
			break;
		case 'j':
		case 'f':
			rq.body = optarg;
			rq.body_len = strlen(optarg);
			if (rq.content_type == NULL)
				rq.content_type = ch == 'j' ? "application/json" : "application/x-www-form-urlencoded";
			nbodies++;
			break;
		case 'b':
			bodyfile = optarg;
			nbodies++;
			break;
		case 't':
			rq.content_type = optarg;
			rq.ct_in_headers = 0;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || rq.url == NULL || nbodies > 1)
		goto usage;
	if (bodyfile != NULL) {
		file = read_file(bodyfile, &rq.body_len);
		if (file == NULL) {
			fprintf(stderr, "sluice policy explain: %s: %s\n", bodyfile, strerror(errno));
			ret = 1;
			goto out;
		}
		rq.body = file;
	}
	if (policy_load_file(argv[optind], NULL, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "%s\n", errbuf);
		ret = 1;
		goto out;
	}
	printf("request: %s %s\n", rq.method, rq.url);
	rc = cli_describe(pol, &rq, d, res, errbuf, sizeof(errbuf));
	if (rc < 0) {
		fprintf(stderr, "sluice policy explain: %s\n", errbuf);
		ret = EXIT_USAGE;
		goto out;
	}
	if (rc == 0) {
		struct explain_state es = {0, (size_t)-1};

		cli_judge(pol, d, NULL, NULL, res, &nbatch, &at, explain_step, &es);
		if (nbatch > 0)
			printf("batch of %zu messages: decided by element %zu (a batch passes only if every element does)\n",
			       nbatch, at + 1);
	}
	if (!res->decided) {
		printf("decision: %s by rule '%s'%s%s (status %d)\n", policy_judge_verdict_name(res->verdict), res->rule,
		       res->reason ? ": " : "", res->reason ? res->reason : "", res->status);
	} else {
		if (res->dec.reported)
			print_outcome("report", &res->dec.report);
		print_outcome(res->report_mode ? "decision (report mode: passes)" : "decision", &res->dec.act);
		if (res->stage != JUDGE_AT_RULES)  /* decided after the rules (a _method form field) */
			printf("then: %s by rule '%s'%s%s (status %d)\n", policy_judge_verdict_name(res->verdict), res->rule,
			       res->reason ? ": " : "", res->reason ? res->reason : "", res->status);
		for (i = 0; i < res->dec.nfields; i++)
			printf("  field %s = %s\n", res->dec.fields[i].place, res->dec.fields[i].value);
	}
	ret = 0;
	goto out;
usage:
	fputs(usage_policy, stderr);
out:
	free(file);
	free(res);
	free(d);
	policy_unref(pol);
	return ret;
}

int
cli_policy_main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage_policy, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
		fputs(usage_policy, stdout);
		return 0;
	}
	if (strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "test") == 0)
		return cli_policy_test(argc - 1, argv + 1);
	if (strcmp(argv[1], "explain") == 0)
		return cmd_explain(argc - 1, argv + 1);
	fputs(usage_policy, stderr);
	return EXIT_USAGE;
}
