/* proxy/session/respond.c - answers the gateway writes itself: short JSON bodies that say why */
#include <event2/buffer.h>
#include <stdio.h>
#include <string.h>
#include "common/json.h"
#include "proxy/session/session.h"
#include "proxy/core/refusal.h"

const char *
respond_status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 421: return "Misdirected Request";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

void
respond_json(struct evbuffer *out, int status, const char *error, const char *host, const char *rule,
             const char *reason, int close)
{
	respond_json_phrase(out, status, NULL, error, host, rule, reason, close);
}

/*
 * The one JSON answer: {"error","host","rule","reason"} and, for a 429,
 * its limit's members and Retry-After.  A body that does not fit (1024
 * bytes, 2048 with a limit) is replaced by {"error":...} alone.
 */
static void
answer(struct evbuffer *out, int status, const char *phrase, const char *error, const char *host, const char *rule,
       const char *reason, const struct refusal_limit *l, int close)
{
	char body[2048];
	struct jbuf jb;
	char retry[40] = "";
	long n;

	jb_init(&jb, body, l != NULL ? sizeof(body) : sizeof(body) / 2);
	jb_str(&jb, "error", error);
	if (host != NULL && host[0] != '\0')
		jb_str(&jb, "host", host);
	jb_str(&jb, "rule", rule);
	jb_str(&jb, "reason", reason);
	if (l != NULL) {
		jb_str(&jb, "limit", l->key);
		jb_str(&jb, "kind", l->kind);
		jb_int(&jb, "retry_after", l->retry_after);
		jb_str(&jb, "reset", l->reset);
		snprintf(retry, sizeof(retry), "Retry-After: %u\r\n", l->retry_after);
	}
	n = jb_finish(&jb, 1);
	if (n < 0)
		n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", l != NULL ? "rate limited" : "refused");
	evbuffer_add_printf(out,
	                    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %ld\r\n"
	                    "%sCache-Control: no-store\r\n%s\r\n",
	                    status, phrase != NULL ? phrase : respond_status_text(status), n, retry,
	                    close ? "Connection: close\r\n" : "");
	evbuffer_add(out, body, (size_t)n);
}

void
respond_json_phrase(struct evbuffer *out, int status, const char *phrase, const char *error, const char *host,
                    const char *rule, const char *reason, int close)
{
	answer(out, status, phrase, error, host, rule, reason, NULL, close);
}

/*
 * One JSON-RPC error object for id <id> (JSON text; NULL: null) of refusal <rf>
 * into <out>/<cap> (struct refusal_jsonrpc, proxy/core/refusal.h): its length, or -1.
 */
static long
rpc_error(char *out, size_t cap, const struct refusal *rf, const char *id)
{
	char rule[512], reason[1024], extra[64] = "";
	const char *ru = rf->rule != NULL ? rf->rule : "", *re = rf->reason != NULL ? rf->reason : "";
	size_t a = json_escape(rule, sizeof(rule), ru, strlen(ru), 0), b;
	int n;

	b = json_escape(reason, sizeof(reason), re, strlen(re), 0);
	if (a >= sizeof(rule) || b >= sizeof(reason))
		return -1;
	rule[a] = '\0';
	reason[b] = '\0';
	if (rf->limit.key != NULL)
		snprintf(extra, sizeof(extra), ",\"retry_after\":%u", rf->limit.retry_after);
	n = snprintf(out, cap,
	             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":\"%s\","
	             "\"data\":{\"rule\":\"%s\",\"reason\":\"%s\"%s}}}",
	             id != NULL ? id : "null", rf->jsonrpc->code, refusal_err_text(rf->err), rule, reason, extra);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

/*
 * A refusal on an MCP endpoint: one JSON-RPC error per id (a JSON array for a
 * batch), HTTP 200 for a 403 or 429 (a 429 keeps its Retry-After), else the
 * refusal's status with one error of id null.
 */
static void
answer_jsonrpc(struct evbuffer *out, const struct refusal *rf, int close)
{
	const struct refusal_jsonrpc *j = rf->jsonrpc;
	char one[2048], retry[40] = "";
	struct evbuffer *body = evbuffer_new();
	size_t i, n = j->nids > 0 ? j->nids : 1;
	long k;
	int status = refusal_http_status(rf);

	if (body == NULL) {
		respond_json(out, rf->status, refusal_err_text(rf->err), NULL, rf->rule, rf->reason, 1);
		return;
	}
	if (j->batch)
		evbuffer_add(body, "[", 1);
	for (i = 0; i < n; i++) {
		k = rpc_error(one, sizeof(one), rf, j->nids > 0 ? j->ids[i] : NULL);
		if (k < 0)
			k = snprintf(one, sizeof(one), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
			             j->nids > 0 && strlen(j->ids[i]) < 1024 ? j->ids[i] : "null", j->code,
			             refusal_err_text(rf->err));
		if (i > 0)
			evbuffer_add(body, ",", 1);
		evbuffer_add(body, one, (size_t)k);
	}
	evbuffer_add(body, j->batch ? "]\n" : "\n", j->batch ? 2 : 1);
	if (rf->limit.key != NULL)
		snprintf(retry, sizeof(retry), "Retry-After: %u\r\n", rf->limit.retry_after);
	evbuffer_add_printf(out,
	                    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
	                    "%sCache-Control: no-store\r\n%s\r\n",
	                    status, respond_status_text(status), evbuffer_get_length(body), retry,
	                    close ? "Connection: close\r\n" : "");
	evbuffer_add_buffer(out, body);
	evbuffer_free(body);
}

void
respond_refusal(struct evbuffer *out, const struct refusal *rf, const char *host, int close)
{
	if (rf->jsonrpc != NULL) {
		answer_jsonrpc(out, rf, close);
		return;
	}
	answer(out, rf->status, rf->phrase, refusal_err_text(rf->err), host, rf->rule, rf->reason,
	       rf->limit.key != NULL ? &rf->limit : NULL, close);
}
