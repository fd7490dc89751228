/*
 * proxy/admin.c - the admin endpoint: HTTP/JSON on a unix socket (mode 0600,
 * never reachable from a sandbox), served by the main thread.
 *
 *   GET    /health            the gateway's state and counters
 *   GET    /sandboxes         the sandboxes registered at run time (sbxreg.h)
 *   POST   /sandboxes         register one: {"name", "backend", "addresses", "secrets"}
 *   DELETE /sandboxes/<name>  remove it
 *
 * Errors answer a JSON {"error": ...} with 400 (bad body), 404 (no such
 * path or sandbox), 405 (method), 409 (name or address taken), 507 (full).
 */
#include <string.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/proxy_int.h"

static void
admin_health(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	struct evbuffer *b = evbuffer_new();
	unsigned long minted = 0, hits = 0;

	ca_stats(gw->ca, &minted, &hits);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evbuffer_add_printf(b,
	                    "{\"status\":\"%s\",\"workers\":%u,\"connections\":%lu,\"requests\":%lu,\"denied\":%lu,"
	                    "\"leaf_cache\":%zu,\"leaf_cache_capacity\":%zu,\"leaves_minted\":%lu}\n",
	                    gw->stopping ? "draining" : "ok", gw->nworkers, atomic_load(&gw->nconns),
	                    atomic_load(&gw->nrequests), atomic_load(&gw->ndenied), ca_cache_count(gw->ca),
	                    ca_cache_capacity(gw->ca), minted);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

/* A JSON answer {"error": <msg>} with <code>. */
static void
reply_error(struct evhttp_request *req, int code, const char *reason, const char *msg)
{
	struct evbuffer *b = evbuffer_new();
	char buf[512];
	struct jbuf jb;
	long n;

	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, "error", msg);
	n = jb_finish(&jb, 1);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	if (n > 0)
		evbuffer_add(b, buf, (size_t)n);
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

static void
sandboxes_post(struct gateway *gw, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	char err[200], name[SBXREG_NAME_MAX + 1];
	int rc;

	if (len > SBXREG_BODY_MAX) {
		reply_error(req, 400, "Bad Request", "registration too large");
		return;
	}
	rc = sbxreg_add(gw->sbx, (const char *)evbuffer_pullup(in, -1), len, name, err, sizeof(err));
	if (rc == SLUICE_EEXIST) {
		reply_error(req, 409, "Conflict", err);
	} else if (rc == SLUICE_ETOOBIG) {
		reply_error(req, 507, "Insufficient Storage", err);
	} else if (rc != 0) {
		reply_error(req, 400, "Bad Request", err);
	} else {
		log_info("sandbox %s registered over the admin socket", name);
		evhttp_send_reply(req, 201, "Created", NULL);
	}
}

/* /sandboxes and /sandboxes/<name> */
static void
admin_generic(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	const char *uri = evhttp_request_get_uri(req);
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct evbuffer *b;

	if (strcmp(uri, "/sandboxes") == 0) {
		if (m == EVHTTP_REQ_POST) {
			sandboxes_post(gw, req);
		} else if (m == EVHTTP_REQ_GET) {
			b = evbuffer_new();
			sbxreg_list_json(gw->sbx, b);
			evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
			evhttp_send_reply(req, 200, "OK", b);
			evbuffer_free(b);
		} else {
			reply_error(req, 405, "Method Not Allowed", "GET or POST");
		}
		return;
	}
	if (strncmp(uri, "/sandboxes/", 11) == 0 && m == EVHTTP_REQ_DELETE) {
		if (sbxreg_remove(gw->sbx, uri + 11) == 0) {
			log_info("sandbox %.*s removed over the admin socket", SBXREG_NAME_MAX, uri + 11);
			evhttp_send_reply(req, 204, "No Content", NULL);
		} else {
			reply_error(req, 404, "Not Found", "no such sandbox");
		}
		return;
	}
	reply_error(req, 404, "Not Found", "no such admin path");
}

void
admin_start(struct gateway *gw)
{
	gw->admin = evhttp_new(gw->base);
	evhttp_set_cb(gw->admin, "/health", admin_health, gw);
	evhttp_set_gencb(gw->admin, admin_generic, gw);
	evhttp_set_allowed_methods(gw->admin, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_max_body_size(gw->admin, SBXREG_BODY_MAX);
	if (evhttp_accept_socket(gw->admin, gw->admin_fd) != 0)
		log_warnx("cannot serve the admin socket");
}
