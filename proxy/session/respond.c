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

void
respond_refusal(struct evbuffer *out, const struct refusal *rf, const char *host, int close)
{
	answer(out, rf->status, rf->phrase, refusal_err_text(rf->err), host, rf->rule, rf->reason,
	       rf->limit.key != NULL ? &rf->limit : NULL, close);
}
