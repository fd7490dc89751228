/*
 * cli/policy_cases.c - `sluice policy test FILE CASES.yaml`: table-driven
 * request cases, judged in order with limit and budget counters that start
 * at zero (time stands still between cases), each compared with what it
 * expects.  Every mismatch is printed with the case's line; the exit status
 * is 1 on any mismatch, so policies can be tested in CI.
 *
 *   cases:                          # or a top-level list
 *     - name: post to the bots channel
 *       request:
 *         method: POST              # default GET
 *         url: https://slack.com/api/chat.postMessage
 *         headers: { X-Trace: "1" } # a value or a list of values
 *         json: { channel: C0BOTS } # a map (written as JSON) or a string (sent as is)
 *         form: { amount: 100 }     # a map (urlencoded; a list repeats the field) or a string
 *         body: "raw bytes"         # with content_type:
 *         content_type: text/plain
 *         sandbox: agent-1          # counters per sandbox
 *       expect: { verdict: allow, rule: post-to-bots, status: 200, report: { verdict: deny, rule: x } }
 *
 *   An MCP message instead of a body (method POST, application/json by
 *   default; a list of them is a batch), rendered as the JSON-RPC text:
 *         mcp: { method: tools/call, tool: create_issue, arguments: { repo: x }, id: 7 }
 *   method defaults to tools/call; id to 1, except for a "notifications/..."
 *   method (none); tool (or uri, for resources/read) and arguments make
 *   params, or params: gives it whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/json.h"
#include "common/pct.h"
#include "common/sluice.h"
#include "cli/policy_cli.h"

#define EXIT_USAGE 2
#define BODY_MAX (16u * 1024 * 1024 + 1) /* a generated body: one byte over the largest max_body */
#define CHUNK 256                         /* input bytes escaped per step */

/* A growing text buffer, capped at BODY_MAX. */
struct tbuf {
	char *s;
	size_t len, cap;
	int over;
};

static void
tb_put(struct tbuf *b, const char *s, size_t n)
{
	if (b->over || b->len + n + 1 > BODY_MAX) {
		b->over = 1;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		while (b->len + n + 1 > b->cap)
			b->cap = b->cap ? b->cap * 2 : 256;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void
tb_str(struct tbuf *b, const char *s)
{
	tb_put(b, s, strlen(s));
}

struct cases {
	const char *file;
	yaml_document_t doc;
	char err[1024];
};

static int
bad(struct cases *cs, const yaml_node_t *n, const char *msg)
{
	snprintf(cs->err, sizeof(cs->err), "%s:%zu:%zu: %s", cs->file, n->start_mark.line + 1,
	         n->start_mark.column + 1, msg);
	return -1;
}

static yaml_node_t *
node(struct cases *cs, int id)
{
	return yaml_document_get_node(&cs->doc, id);
}

static int
is_scalar(const yaml_node_t *n, const char *s)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
	       memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

static const char *
sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* The values of <keys> in map <n>; unknown keys are errors. */
static int
fields(struct cases *cs, yaml_node_t *n, const char *what, const char *const *keys, size_t nkeys, yaml_node_t **v)
{
	yaml_node_pair_t *p;
	char msg[256];
	size_t i;

	for (i = 0; i < nkeys; i++)
		v[i] = NULL;
	if (n->type != YAML_MAPPING_NODE) {
		snprintf(msg, sizeof(msg), "expected a map for %s", what);
		return bad(cs, n, msg);
	}
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(cs, p->key);

		for (i = 0; i < nkeys && k != NULL; i++)
			if (is_scalar(k, keys[i]))
				break;
		if (k == NULL || i == nkeys || v[i] != NULL) {
			snprintf(msg, sizeof(msg), "%s key in %s", k != NULL && i < nkeys ? "duplicate" : "unknown", what);
			return bad(cs, k != NULL ? k : n, msg);
		}
		v[i] = node(cs, p->value);
	}
	return 0;
}

static int
json_number_text(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i == n || s[i] < '0' || s[i] > '9' || (s[i] == '0' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9'))
		return 0;
	while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' ||
	                 s[i] == '-'))
		i++;
	return i == n;
}

static void
json_string(struct tbuf *b, const char *s, size_t n)
{
	char e[JSON_ESCAPED_MAX(CHUNK)];
	size_t i, k;

	tb_put(b, SLUICE_LIT("\""));
	for (i = 0; i < n; i += k) {  /* the escape of a byte does not depend on its neighbours */
		k = n - i < CHUNK ? n - i : CHUNK;
		tb_put(b, e, json_escape(e, sizeof(e), s + i, k, JSON_ESC_PLAIN));
	}
	tb_put(b, SLUICE_LIT("\""));
}

/* YAML to JSON text: plain scalars that look like numbers, booleans or null keep their type and spelling. */
static int
to_json(struct cases *cs, yaml_node_t *n, struct tbuf *b, int depth)
{
	const char *s;
	size_t len;

	if (depth > 64)
		return bad(cs, n, "json nested too deeply");
	if (n->type == YAML_SCALAR_NODE) {
		s = sval(n);
		len = n->data.scalar.length;
		if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    (json_number_text(s, len) || is_scalar(n, "true") || is_scalar(n, "false") || is_scalar(n, "null")))
			tb_put(b, s, len);
		else if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (len == 0 || is_scalar(n, "~")))
			tb_str(b, "null");
		else
			json_string(b, s, len);
		return 0;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;

		tb_str(b, "[");
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			yaml_node_t *e = node(cs, *it);

			if (it != n->data.sequence.items.start)
				tb_str(b, ",");
			if (e == NULL || to_json(cs, e, b, depth + 1) != 0)
				return -1;
		}
		tb_str(b, "]");
		return 0;
	}
	{
		yaml_node_pair_t *p;

		tb_str(b, "{");
		for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node(cs, p->key), *v = node(cs, p->value);

			if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
				return bad(cs, n, "expected string keys in json");
			if (p != n->data.mapping.pairs.start)
				tb_str(b, ",");
			json_string(b, sval(k), k->data.scalar.length);
			tb_str(b, ":");
			if (to_json(cs, v, b, depth + 1) != 0)
				return -1;
		}
		tb_str(b, "}");
	}
	return 0;
}

static void
urlenc(struct tbuf *b, const char *s, size_t n)
{
	char e[PCT_ENCODED_MAX(CHUNK)];
	size_t i, k;

	for (i = 0; i < n; i += k) {
		k = n - i < CHUNK ? n - i : CHUNK;
		tb_put(b, e, pct_encode(e, s + i, k, pct_unreserved, PCT_UPPER));
	}
}

static int
to_form(struct cases *cs, yaml_node_t *n, struct tbuf *b)
{
	yaml_node_pair_t *p;

	if (n->type == YAML_SCALAR_NODE) {
		tb_put(b, sval(n), n->data.scalar.length);
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE)
		return bad(cs, n, "expected a map of fields or a string for form");
	tb_put(b, SLUICE_LIT(""));
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(cs, p->key), *v = node(cs, p->value);
		yaml_node_item_t *it, *end;

		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
			return bad(cs, n, "expected a map of fields for form");
		if (v->type == YAML_SCALAR_NODE) {
			it = NULL;
			end = NULL;
		} else if (v->type == YAML_SEQUENCE_NODE) {
			it = v->data.sequence.items.start;
			end = v->data.sequence.items.top;
		} else {
			return bad(cs, v, "expected a value or a list of values");
		}
		do {
			yaml_node_t *e = it != NULL ? node(cs, *it) : v;

			if (e == NULL || e->type != YAML_SCALAR_NODE)
				return bad(cs, v, "expected a value or a list of values");
			if (b->len > 0)
				tb_str(b, "&");
			urlenc(b, sval(k), k->data.scalar.length);
			tb_str(b, "=");
			urlenc(b, sval(e), e->data.scalar.length);
		} while (it != NULL && ++it < end);
	}
	return 0;
}

enum { M_METHOD, M_TOOL, M_URI, M_ARGS, M_ID, M_PARAMS, NMCP };

/* One JSON-RPC message of an mcp: case (see the top of this file). */
static int
mcp_message(struct cases *cs, yaml_node_t *n, struct tbuf *b)
{
	static const char *const keys[NMCP] = {"method", "tool", "uri", "arguments", "id", "params"};
	yaml_node_t *v[NMCP];
	const char *method = "tools/call";
	size_t mlen = 10;

	if (fields(cs, n, "mcp", keys, NMCP, v) != 0)
		return -1;
	if (v[M_METHOD] != NULL) {
		if (v[M_METHOD]->type != YAML_SCALAR_NODE)
			return bad(cs, v[M_METHOD], "expected a JSON-RPC method in mcp");
		method = sval(v[M_METHOD]);
		mlen = v[M_METHOD]->data.scalar.length;
	}
	if (v[M_PARAMS] != NULL && (v[M_TOOL] != NULL || v[M_URI] != NULL || v[M_ARGS] != NULL))
		return bad(cs, n, "expected params, or tool, uri and arguments, in mcp");
	if ((v[M_TOOL] != NULL && v[M_TOOL]->type != YAML_SCALAR_NODE) ||
	    (v[M_URI] != NULL && v[M_URI]->type != YAML_SCALAR_NODE))
		return bad(cs, n, "expected a string for mcp.tool and mcp.uri");
	tb_str(b, "{\"jsonrpc\":\"2.0\"");
	if (v[M_ID] != NULL) {
		tb_str(b, ",\"id\":");
		if (to_json(cs, v[M_ID], b, 1) != 0)
			return -1;
	} else if (!(mlen >= 14 && memcmp(method, "notifications/", 14) == 0)) {
		tb_str(b, ",\"id\":1");
	}
	tb_str(b, ",\"method\":");
	json_string(b, method, mlen);
	if (v[M_PARAMS] != NULL) {
		tb_str(b, ",\"params\":");
		if (to_json(cs, v[M_PARAMS], b, 1) != 0)
			return -1;
	} else if (v[M_TOOL] != NULL || v[M_URI] != NULL || v[M_ARGS] != NULL) {
		const char *sep = "";

		tb_str(b, ",\"params\":{");
		if (v[M_TOOL] != NULL) {
			tb_str(b, "\"name\":");
			json_string(b, sval(v[M_TOOL]), v[M_TOOL]->data.scalar.length);
			sep = ",";
		}
		if (v[M_URI] != NULL) {
			tb_str(b, sep);
			tb_str(b, "\"uri\":");
			json_string(b, sval(v[M_URI]), v[M_URI]->data.scalar.length);
			sep = ",";
		}
		if (v[M_ARGS] != NULL) {
			tb_str(b, sep);
			tb_str(b, "\"arguments\":");
			if (to_json(cs, v[M_ARGS], b, 1) != 0)
				return -1;
		}
		tb_str(b, "}");
	}
	tb_str(b, "}");
	return 0;
}

/* mcp: one message (a map) or a batch (a list of them). */
static int
mcp_body(struct cases *cs, yaml_node_t *n, struct tbuf *b)
{
	yaml_node_item_t *it;

	if (n->type != YAML_SEQUENCE_NODE)
		return mcp_message(cs, n, b);
	tb_str(b, "[");
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = node(cs, *it);

		if (it != n->data.sequence.items.start)
			tb_str(b, ",");
		if (e == NULL || mcp_message(cs, e, b) != 0)
			return e == NULL ? bad(cs, n, "expected a list of messages in mcp") : -1;
	}
	tb_str(b, "]");
	return 0;
}

enum { R_METHOD, R_URL, R_HEADERS, R_JSON, R_FORM, R_BODY, R_CTYPE, R_SANDBOX, R_MCP, NREQ };

/* request: into <rq>; the body text is kept in <body>. */
static int
request(struct cases *cs, yaml_node_t *n, struct cli_req *rq, struct tbuf *body)
{
	static const char *const keys[NREQ] = {"method", "url", "headers", "json", "form", "body", "content_type",
	                                       "sandbox", "mcp"};
	yaml_node_t *v[NREQ];
	yaml_node_pair_t *p;
	int nb;

	if (fields(cs, n, "request", keys, NREQ, v) != 0)
		return -1;
	if (v[R_URL] == NULL || v[R_URL]->type != YAML_SCALAR_NODE)
		return bad(cs, v[R_URL] != NULL ? v[R_URL] : n, "expected a url in request");
	rq->url = sval(v[R_URL]);
	rq->method = v[R_MCP] != NULL ? "POST" : "GET";
	if (v[R_METHOD] != NULL) {
		if (v[R_METHOD]->type != YAML_SCALAR_NODE || v[R_METHOD]->data.scalar.length == 0)
			return bad(cs, v[R_METHOD], "expected a method");
		rq->method = sval(v[R_METHOD]);
	}
	if (v[R_SANDBOX] != NULL) {
		if (v[R_SANDBOX]->type != YAML_SCALAR_NODE)
			return bad(cs, v[R_SANDBOX], "expected a sandbox name");
		rq->sandbox = sval(v[R_SANDBOX]);
	}
	if (v[R_HEADERS] != NULL) {
		if (v[R_HEADERS]->type != YAML_MAPPING_NODE)
			return bad(cs, v[R_HEADERS], "expected a map of headers");
		for (p = v[R_HEADERS]->data.mapping.pairs.start; p < v[R_HEADERS]->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node(cs, p->key), *hv = node(cs, p->value);
			yaml_node_item_t *it = NULL;

			if (k == NULL || hv == NULL || k->type != YAML_SCALAR_NODE)
				return bad(cs, v[R_HEADERS], "expected a map of headers");
			if (hv->type == YAML_SEQUENCE_NODE)
				it = hv->data.sequence.items.start;
			do {
				yaml_node_t *e = it != NULL ? node(cs, *it) : hv;

				if (e == NULL || e->type != YAML_SCALAR_NODE || rq->nheaders == CLI_HEADERS_MAX)
					return bad(cs, hv, "expected a header value or a list of values");
				rq->headers[rq->nheaders].name = sval(k);
				rq->headers[rq->nheaders].name_len = k->data.scalar.length;
				rq->headers[rq->nheaders].value = sval(e);
				rq->headers[rq->nheaders].value_len = e->data.scalar.length;
				if (sluice_iov_ieq(sval(k), k->data.scalar.length, "content-type")) {
					rq->content_type = sval(e);
					rq->ct_in_headers = 1;
				}
				rq->nheaders++;
			} while (it != NULL && ++it < hv->data.sequence.items.top);
		}
	}
	nb = (v[R_JSON] != NULL) + (v[R_FORM] != NULL) + (v[R_BODY] != NULL) + (v[R_MCP] != NULL);
	if (nb > 1)
		return bad(cs, n, "expected at most one of json, form, body, mcp in request");
	if (v[R_MCP] != NULL) {
		if (mcp_body(cs, v[R_MCP], body) != 0)
			return -1;
		if (rq->content_type == NULL)
			rq->content_type = "application/json";
	} else if (v[R_JSON] != NULL) {
		if (v[R_JSON]->type == YAML_SCALAR_NODE)
			tb_put(body, sval(v[R_JSON]), v[R_JSON]->data.scalar.length);
		else if (to_json(cs, v[R_JSON], body, 0) != 0)
			return -1;
		if (rq->content_type == NULL)
			rq->content_type = "application/json";
	} else if (v[R_FORM] != NULL) {
		if (to_form(cs, v[R_FORM], body) != 0)
			return -1;
		if (rq->content_type == NULL)
			rq->content_type = "application/x-www-form-urlencoded";
	} else if (v[R_BODY] != NULL) {
		if (v[R_BODY]->type != YAML_SCALAR_NODE)
			return bad(cs, v[R_BODY], "expected a string for body");
		tb_put(body, sval(v[R_BODY]), v[R_BODY]->data.scalar.length);
	}
	if (v[R_CTYPE] != NULL) {
		if (v[R_CTYPE]->type != YAML_SCALAR_NODE)
			return bad(cs, v[R_CTYPE], "expected a content type");
		rq->content_type = sval(v[R_CTYPE]);
		rq->ct_in_headers = 0;  /* sent as the one Content-Type */
	}
	if (body->over)
		return bad(cs, n, "body too large");
	if (nb > 0) {
		tb_put(body, SLUICE_LIT(""));
		rq->body = body->s != NULL ? body->s : "";
		rq->body_len = body->len;
	}
	return 0;
}

/* Compares one expected text; appends the mismatch to <out>. */
static void
want(char *out, size_t cap, const char *what, const yaml_node_t *exp, const char *got)
{
	size_t o = strlen(out);

	if (exp == NULL || (got != NULL && is_scalar(exp, got)))
		return;
	snprintf(out + o, cap - o, "%s%s: expected '%s', got '%s'", o ? "; " : "", what, sval(exp),
	         got != NULL ? got : "(none)");
}

static int
run_case(struct cases *cs, const struct policy *pol, yaml_node_t *c, struct cli_counters *ctr, int *failed)
{
	static const char *const ckeys[] = {"name", "request", "expect"};
	static const char *const ekeys[] = {"verdict", "rule", "status", "report"};
	static const char *const rkeys[] = {"verdict", "rule"};
	yaml_node_t *cv[3], *ev[4], *rv[2] = {NULL, NULL};
	struct judge_outcome *res = xcalloc(1, sizeof(*res));
	struct cli_described *d = xcalloc(1, sizeof(*d));
	struct tbuf body = {NULL, 0, 0, 0};
	struct cli_req rq;
	size_t nbatch = 0, at = 0;
	char mism[1024] = "", status[16], err[512];
	const char *verdict;
	int ret = -1, rc;

	memset(&rq, 0, sizeof(rq));
	if (fields(cs, c, "a case", ckeys, 3, cv) != 0)
		goto out;
	if (cv[0] == NULL || cv[0]->type != YAML_SCALAR_NODE || cv[1] == NULL || cv[2] == NULL) {
		bad(cs, c, "a case needs name, request and expect");
		goto out;
	}
	if (request(cs, cv[1], &rq, &body) != 0 || fields(cs, cv[2], "expect", ekeys, 4, ev) != 0)
		goto out;
	if (ev[0] == NULL || !(is_scalar(ev[0], "allow") || is_scalar(ev[0], "deny") || is_scalar(ev[0], "hold") ||
	                       is_scalar(ev[0], "passthrough"))) {
		bad(cs, ev[0] != NULL ? ev[0] : cv[2], "expect needs verdict: allow, deny, hold or passthrough");
		goto out;
	}
	if (ev[3] != NULL && fields(cs, ev[3], "expect.report", rkeys, 2, rv) != 0)
		goto out;
	rc = cli_describe(pol, &rq, d, res, err, sizeof(err));
	if (rc < 0) {
		bad(cs, cv[1], err);
		goto out;
	}
	if (rc == 0) /* judged by the gateway's judge, then its takes applied, in case order */
		cli_judge(pol, d, ctr, rq.sandbox, res, &nbatch, &at, NULL, NULL);
	verdict = policy_judge_verdict_name(res->verdict);
	snprintf(status, sizeof(status), "%d", res->status);
	want(mism, sizeof(mism), "verdict", ev[0], verdict);
	want(mism, sizeof(mism), "rule", ev[1], res->rule);
	want(mism, sizeof(mism), "status", ev[2], status);
	if (ev[3] != NULL) {
		int rep = res->decided && res->dec.reported;

		want(mism, sizeof(mism), "report.verdict", rv[0], rep ? policy_verdict_name(res->dec.report.verdict) : NULL);
		want(mism, sizeof(mism), "report.rule", rv[1], rep ? res->dec.report.rule : NULL);
	}
	if (mism[0] != '\0') {
		char el[64] = "";

		if (nbatch > 0)
			snprintf(el, sizeof(el), " [batch: element %zu of %zu decided]", at + 1, nbatch);
		printf("FAIL %s:%zu: %s: %s%s (decided: %s by rule '%s'%s%s, status %d)\n", cs->file,
		       c->start_mark.line + 1, sval(cv[0]), mism, el, verdict, res->rule, res->reason ? ": " : "",
		       res->reason ? res->reason : "", res->status);
		(*failed)++;
	}
	ret = 0;
out:
	free(body.s);
	free(res);
	free(d);
	return ret;
}

static int
load_cases(struct cases *cs)
{
	yaml_parser_t parser;
	FILE *f = fopen(cs->file, "rb");
	int ok;

	if (f == NULL) {
		snprintf(cs->err, sizeof(cs->err), "%s: cannot open", cs->file);
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		return -1;
	}
	yaml_parser_set_input_file(&parser, f);
	ok = yaml_parser_load(&parser, &cs->doc);
	if (!ok)
		snprintf(cs->err, sizeof(cs->err), "%s:%zu:%zu: YAML syntax error: %s", cs->file,
		         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
		         parser.problem != NULL ? parser.problem : "cannot parse");
	yaml_parser_delete(&parser);
	fclose(f);
	return ok ? 0 : -1;
}

int
cli_policy_test(int argc, char **argv)
{
	struct cases cs;
	struct policy *pol = NULL;
	struct cli_counters ctr = {NULL, 0};
	yaml_node_t *root, *list;
	yaml_node_item_t *it;
	char errbuf[1024];
	int failed = 0, n = 0, ret = 1;

	if (argc != 3) {
		fputs("usage: sluice policy test FILE CASES.yaml\n", stderr);
		return EXIT_USAGE;
	}
	memset(&cs, 0, sizeof(cs));
	cs.file = argv[2];
	if (policy_load_file(argv[1], NULL, &pol, errbuf, sizeof(errbuf)) != 0) {
		fprintf(stderr, "%s\n", errbuf);
		return 1;
	}
	if (load_cases(&cs) != 0) {
		fprintf(stderr, "%s\n", cs.err);
		policy_unref(pol);
		return 1;
	}
	root = yaml_document_get_root_node(&cs.doc);
	list = root;
	if (root != NULL && root->type == YAML_MAPPING_NODE) {
		static const char *const keys[] = {"cases"};

		if (fields(&cs, root, "the top level", keys, 1, &list) != 0)
			goto fail;
	}
	if (list == NULL || list->type != YAML_SEQUENCE_NODE) {
		snprintf(cs.err, sizeof(cs.err), "%s: expected a list of cases (or cases: with one)", cs.file);
		goto fail;
	}
	for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
		yaml_node_t *c = node(&cs, *it);

		if (c == NULL || run_case(&cs, pol, c, &ctr, &failed) != 0)
			goto fail;
		n++;
	}
	printf("%s: %d case%s, %d passed, %d failed\n", cs.file, n, n == 1 ? "" : "s", n - failed, failed);
	ret = failed > 0 ? 1 : 0;
	goto out;
fail:
	fprintf(stderr, "%s\n", cs.err);
out:
	cli_counters_free(&ctr);
	yaml_document_delete(&cs.doc);
	policy_unref(pol);
	return ret;
}
