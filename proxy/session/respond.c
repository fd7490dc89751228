/* proxy/session/respond.c - answers the gateway writes itself: short JSON bodies that say why */
#include <event2/buffer.h>
#include <string.h>
#include "common/json.h"
#include "proxy/proxy_int.h"

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

void
respond_json_phrase(struct evbuffer *out, int status, const char *phrase, const char *error, const char *host,
                    const char *rule, const char *reason, int close)
{
	char body[1024];
	struct jbuf jb;
	long n;

	jb_init(&jb, body, sizeof(body));
	jb_str(&jb, "error", error);
	if (host != NULL && host[0] != '\0')
		jb_str(&jb, "host", host);
	jb_str(&jb, "rule", rule);
	jb_str(&jb, "reason", reason);
	n = jb_finish(&jb, 1);
	if (n < 0) {
		static const char fallback[] = "{\"error\":\"refused\"}\n";

		memcpy(body, fallback, sizeof(fallback));
		n = (long)sizeof(fallback) - 1;
	}
	evbuffer_add_printf(out,
	                    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %ld\r\n"
	                    "Cache-Control: no-store\r\n%s\r\n",
	                    status, phrase != NULL ? phrase : respond_status_text(status), n,
	                    close ? "Connection: close\r\n" : "");
	evbuffer_add(out, body, (size_t)n);
}
