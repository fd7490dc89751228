/*
 * proxy/admin.c - the admin endpoint: HTTP/JSON on a unix socket (mode 0600,
 * never reachable from a sandbox), served by the main thread.
 *
 *   GET    /health            the gateway's state and counters
 *   GET    /metrics           Prometheus text format 0.0.4 (metrics.h)
 *   GET    /healthz           {"status","audit","policy_generation","last_reload","uptime_s"}: 200, or 503
 *                             while the audit log fails
 *   GET    /sandboxes         the sandboxes registered at run time (sbxreg.h)
 *   POST   /sandboxes         register one: {"name", "backend", "addresses", "secrets"}
 *   DELETE /sandboxes/<name>  remove it
 *   GET    /approvals         requests held for approval (approvals.h has the members)
 *   POST   /approvals/<id>/approve, /approvals/<id>/reject
 *                             decide one: 204, or 404 (unknown or already decided); the decider is
 *                             the socket peer's uid (SO_PEERCRED), written in the `approval` audit record
 *
 * Errors answer a JSON {"error": ...} with 400 (bad body), 403 (the peer
 * cannot be identified), 404 (no such path, sandbox or approval), 405
 * (method), 409 (name or address taken), 507 (full).
 */
#include <pwd.h>
#include <string.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include "common/hex.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/metrics.h"
#include "proxy/store/store.h"
#include "gateway_int.h"

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

/* Sandboxes registered now: the length of sbxreg's own list (a scrape is rare; sbxreg has no count). */
static int64_t
sandboxes_registered(struct gateway *gw)
{
	struct evbuffer *b = evbuffer_new();
	json_t *list;
	int64_t n = -1;

	if (b == NULL)
		return -1;
	sbxreg_list_json(gw->sbx, b);
	list = json_loadb((const char *)evbuffer_pullup(b, -1), evbuffer_get_length(b), 0, NULL);
	if (json_is_array(list))
		n = (int64_t)json_array_size(list);
	json_decref(list);
	evbuffer_free(b);
	return n;
}

/* What the scrape reads outside the counters: the audit writer, the leaf cache, open connections. */
static void
gauges_read(struct gateway *gw, struct metrics_gauges *g)
{
	unsigned long hits = 0, misses = 0;

	metrics_gauges_init(g);
	if (gw->audit != NULL) {
		g->audit_healthy = audit_healthy(gw->audit) ? 1 : 0;
		g->audit_queue_depth = (int64_t)audit_queue_depth(gw->audit);
		g->audit_write_errors = (int64_t)audit_write_errors(gw->audit);
		g->audit_syslog_dropped = (int64_t)audit_syslog_dropped(gw->audit);
		g->audit_ocsf_errors = (int64_t)audit_ocsf_errors(gw->audit);
	}
	g->connections_open = (int64_t)atomic_load(&gw->nconns);
	g->leaf_cache_entries = (int64_t)ca_cache_count(gw->ca);
	ca_cache_lookups(gw->ca, &hits, &misses);
	g->leaf_cache_hits = (int64_t)hits;
	g->leaf_cache_misses = (int64_t)misses;
	g->sandboxes_registered = sandboxes_registered(gw);
}

/*
 * The shared counters (state.backend: redis), summed over the workers' stores: errors by kind, the latency
 * histogram, and how many stores are up.  Nothing with backend: file.  No address, no password: counts only.
 */
static void
store_metrics(struct gateway *gw, struct evbuffer *out)
{
	static const struct {
		enum store_outcome o;
		const char *name;
	} kinds[] = {
		{STORE_ETIMEOUT, "timeout"}, {STORE_EDOWN, "down"}, {STORE_EREPLY, "reply"}, {STORE_EUNSAFE, "evicting"},
		{STORE_EINVAL, "invalid"}, {STORE_EBUSY, "busy"}, {STORE_ESHUTDOWN, "shutdown"},
	};
	struct store_stats sum, st;
	uint64_t *a = (uint64_t *)&sum;
	const uint64_t *b = (const uint64_t *)&st;
	unsigned i, n = 0, up = 0;
	size_t k;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < gw->nworkers; i++) {
		if (gw->workers[i].store == NULL)
			continue;
		store_stats_get(gw->workers[i].store, &st);
		for (k = 0; k < sizeof(st) / sizeof(uint64_t); k++)
			a[k] += b[k];
		up += st.up != 0;
		n++;
	}
	if (n == 0)
		return;
	evbuffer_add_printf(out, "# HELP sluice_store_up Workers whose connection to the shared counters (Redis) is "
	                         "ready, of sluice_store_workers.\n# TYPE sluice_store_up gauge\nsluice_store_up %u\n"
	                         "# HELP sluice_store_workers Workers with a client of the shared counters.\n"
	                         "# TYPE sluice_store_workers gauge\nsluice_store_workers %u\n", up, n);
	evbuffer_add_printf(out, "# HELP sluice_store_operations_total Operations sent to the shared counters.\n"
	                         "# TYPE sluice_store_operations_total counter\nsluice_store_operations_total %llu\n",
	                    (unsigned long long)sum.ops);
	evbuffer_add(out, SLUICE_LIT("# HELP sluice_store_errors_total Operations of the shared counters that failed, "
	                             "by kind.\n# TYPE sluice_store_errors_total counter\n"));
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		evbuffer_add_printf(out, "sluice_store_errors_total{kind=\"%s\"} %llu\n", kinds[k].name,
		                    (unsigned long long)sum.err_kind[-kinds[k].o]);
	evbuffer_add_printf(out, "# HELP sluice_store_reconnects_total Connections to the shared counters that became "
	                         "ready.\n# TYPE sluice_store_reconnects_total counter\nsluice_store_reconnects_total "
	                         "%llu\n",
	                    (unsigned long long)sum.connects);
	evbuffer_add(out, SLUICE_LIT("# HELP sluice_store_latency_seconds Time from sending an operation to the shared "
	                             "counters to its reply.\n# TYPE sluice_store_latency_seconds histogram\n"));
	for (k = 0; k < STORE_LATENCY_BUCKETS; k++) {
		if (store_latency_bounds_us[k] == UINT64_MAX)
			evbuffer_add_printf(out, "sluice_store_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
			                    (unsigned long long)sum.latency_le[k]);
		else
			evbuffer_add_printf(out, "sluice_store_latency_seconds_bucket{le=\"%llu.%06llu\"} %llu\n",
			                    (unsigned long long)(store_latency_bounds_us[k] / 1000000u),
			                    (unsigned long long)(store_latency_bounds_us[k] % 1000000u),
			                    (unsigned long long)sum.latency_le[k]);
	}
	evbuffer_add_printf(out, "sluice_store_latency_seconds_sum %llu.%06llu\nsluice_store_latency_seconds_count %llu\n",
	                    (unsigned long long)(sum.latency_sum_us / 1000000u),
	                    (unsigned long long)(sum.latency_sum_us % 1000000u), (unsigned long long)sum.latency_count);
}

static int
get_only(struct evhttp_request *req)
{
	if (evhttp_request_get_command(req) == EVHTTP_REQ_GET)
		return 1;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
	evhttp_send_reply(req, 405, "Method Not Allowed", NULL);
	return 0;
}

static void
admin_metrics(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	struct metrics_gauges g;
	struct evbuffer *b;

	if (!get_only(req))
		return;
	b = evbuffer_new();
	gauges_read(gw, &g);
	metrics_render(gw->metrics, &g, b);
	store_metrics(gw, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", METRICS_CONTENT_TYPE);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
admin_healthz(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	struct metrics_gauges g;
	struct evbuffer *b;
	int code;

	if (!get_only(req))
		return;
	b = evbuffer_new();
	gauges_read(gw, &g);
	code = metrics_healthz(gw->metrics, &g, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, code, code == 200 ? "OK" : code == 503 ? "Service Unavailable" : "Internal Server Error", b);
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

/*
 * Who is on the other end of the admin connection: "uid:N(name)" (or
 * "uid:N" when the uid has no name) from the kernel's SO_PEERCRED, which
 * the peer cannot choose.  0, or -1 when it cannot be told.
 */
static int
peer_who(struct evhttp_request *req, char *out, size_t cap)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;
	evutil_socket_t fd = bev != NULL ? bufferevent_getfd(bev) : -1;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct passwd pw, *res = NULL;
	char pwbuf[2048];

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1 || len != sizeof(cr))
		return -1;
	if (getpwuid_r(cr.uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL)
		snprintf(out, cap, "uid:%u(%.32s)", (unsigned)cr.uid, pw.pw_name);
	else
		snprintf(out, cap, "uid:%u", (unsigned)cr.uid);
	return 0;
}

void
admin_approval_note(void *arg, const char *id, const struct approval_info *info, enum approval_decision decision,
                    const char *by)
{
	struct gateway *gw = arg;
	char sha[65];
	struct audit_rec r = {
		.kind = AUDIT_KIND_APPROVAL,
		.sandbox = info->sandbox,
		.id = id,
		.request_id = info->request_id,
		.decision = approvals_decision_name(decision),
		.by = by,
		.rule = info->rule,
		.host = info->host,
		.method = info->method,
		.path = info->path,
		.body_sha256 = sha,
		.gateway = info->gateway,
		.status = -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
		.generation = -1,
	};

	hex_encode(sha, info->body_sha256, 32);
	if ((decision == APPROVAL_REJECTED || decision == APPROVAL_APPROVED) && info->gateway != NULL)
		log_info("approval %s %s by %s for gateway %s (rule %s)", id, r.decision, by, info->gateway,
		         info->rule != NULL ? info->rule : "-");
	else if (decision == APPROVAL_REJECTED || decision == APPROVAL_APPROVED)
		log_info("approval %s %s by %s (rule %s)", id, r.decision, by, info->rule != NULL ? info->rule : "-");
	audit_write(gw->audit, &r);
}

/*
 * The answer to a decision of another gateway's hold.  Also fleet_decide's <done> (<arg> the request): an
 * admin request waits for it; if its client went away meanwhile, libevent detached the request from the
 * connection without freeing it, and the reply frees it.  FLEET_DECIDE_SENT: nothing yet.
 */
static void
fleet_answer(void *arg, enum fleet_decide_res res, const char *holder)
{
	struct evhttp_request *req = arg;
	char buf[256];
	struct jbuf jb;
	long n;

	switch (res) {
	case FLEET_DECIDE_SENT:
		break;
	case FLEET_DECIDE_TAKEN: {
		struct evbuffer *b = evbuffer_new();

		jb_init(&jb, buf, sizeof(buf));
		jb_str(&jb, "status", "sent");
		jb_str(&jb, "gateway", holder);
		n = jb_finish(&jb, 1);
		if (n > 0)
			evbuffer_add(b, buf, (size_t)n);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
		evhttp_send_reply(req, 202, "Accepted", b);
		evbuffer_free(b);
		break;
	}
	case FLEET_DECIDE_LATE:
		reply_error(req, 409, "Conflict", "another decision took that hold first (on this or another gateway)");
		break;
	case FLEET_DECIDE_DOWN:
		reply_error(req, 503, "Service Unavailable", "the fleet store (state.redis) cannot be reached: holds of other "
		            "gateways cannot be decided now (this gateway's own still can)");
		break;
	case FLEET_DECIDE_FAILED:
		reply_error(req, 503, "Service Unavailable", "the fleet store (state.redis) did not confirm the decision in "
		            "time: it may still reach the holding gateway; list the approvals again");
		break;
	case FLEET_DECIDE_UNDECIDABLE:
		reply_error(req, 409, "Conflict", "that hold cannot be decided: it expired, its gateway is gone, or its "
		            "record does not verify with the fleet key");
		break;
	default:
		reply_error(req, 404, "Not Found", "no such pending approval here or in the fleet (unknown, or already "
		            "decided)");
		break;
	}
}

/* /approvals/<id>/approve and /approvals/<id>/reject (<rest> follows "/approvals/") */
static void
approvals_route(struct gateway *gw, struct evhttp_request *req, const char *rest)
{
	char id[APPROVALS_ID_LEN + 1], who[APPROVALS_BY_MAX];
	const char *verb;
	int approve, rc;

	if (strnlen(rest, APPROVALS_ID_LEN) < APPROVALS_ID_LEN || rest[APPROVALS_ID_LEN] != '/') {
		reply_error(req, 404, "Not Found", "no such admin path");
		return;
	}
	verb = rest + APPROVALS_ID_LEN;
	if (strcmp(verb, "/approve") == 0) {
		approve = 1;
	} else if (strcmp(verb, "/reject") == 0) {
		approve = 0;
	} else {
		reply_error(req, 404, "Not Found", "no such admin path");
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
		reply_error(req, 405, "Method Not Allowed", "POST");
		return;
	}
	memcpy(id, rest, APPROVALS_ID_LEN);
	id[APPROVALS_ID_LEN] = '\0';
	if (peer_who(req, who, sizeof(who)) != 0) {
		reply_error(req, 403, "Forbidden", "cannot identify the caller (SO_PEERCRED)");
		return;
	}
	rc = approvals_decide(gw->approvals, id, approve, who);
	if (rc == 0) {
		evhttp_send_reply(req, 204, "No Content", NULL);
		return;
	}
	if (gw->approvals_fleet == NULL) {
		reply_error(req, 404, "Not Found", "no such pending approval (unknown, or already decided)");
		return;
	}
	/* not ours: another gateway's hold, decided through the fleet store (fleet.h); answered by fleet_answer,
	 * now or once the store said whether the decision took the hold */
	fleet_answer(req, approvals_fleet_decide(gw->approvals_fleet, id, approve, who, fleet_answer, req), NULL);
}

static void
approvals_get(struct gateway *gw, struct evhttp_request *req)
{
	struct evbuffer *b;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
		reply_error(req, 405, "Method Not Allowed", "GET");
		return;
	}
	b = evbuffer_new();
	if (gw->approvals_fleet != NULL)
		approvals_fleet_list_json(gw->approvals_fleet, b);
	else
		approvals_list_json(gw->approvals, b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

/* /sandboxes, /sandboxes/<name>, /approvals, /approvals/<id>/<verb> */
static void
admin_generic(struct evhttp_request *req, void *arg)
{
	struct gateway *gw = arg;
	const char *uri = evhttp_request_get_uri(req);
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *path = u != NULL ? evhttp_uri_get_path(u) : NULL;
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct evbuffer *b;

	if (path != NULL && strcmp(path, "/approvals") == 0) {
		approvals_get(gw, req);
		return;
	}
	if (path != NULL && strncmp(path, "/approvals/", 11) == 0) {
		approvals_route(gw, req, path + 11);
		return;
	}
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
			/* its open connections: no request is injected from now on (revoke.c), and they end */
			for (unsigned i = 0; i < gw->nworkers; i++)
				worker_post_revoke(&gw->workers[i]);
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
	evhttp_set_cb(gw->admin, "/metrics", admin_metrics, gw);
	evhttp_set_cb(gw->admin, "/healthz", admin_healthz, gw);
	evhttp_set_gencb(gw->admin, admin_generic, gw);
	evhttp_set_allowed_methods(gw->admin, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_max_body_size(gw->admin, SBXREG_BODY_MAX);
	if (evhttp_accept_socket(gw->admin, gw->admin_fd) != 0)
		log_warnx("cannot serve the admin socket");
}
