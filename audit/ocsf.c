/*
 * audit/ocsf.c - audit.ocsf: each record that maps to an OCSF 1.3.0 event
 * class, as one JSON object a line in its own file, written by the copies'
 * thread (sinks.c) after the record is in the audit file (docs/audit-schema.md has
 * the mapping field by field; tests/fixtures/ocsf-1.3.0 the definitions):
 *
 *   request           HTTP Activity    (class_uid 4002)
 *   dns               DNS Activity     (class_uid 4003)
 *   denial            Network Activity (class_uid 4001, activity Refuse)
 *
 * HTTP Activity requires http_response in 1.3.0.  A request the gateway
 * answered itself (refused, held and rejected, rate-limited) has its status in
 * the request record; an allowed one learns it from its response record, so
 * its event waits (keyed by the request id, at most OCSF_PENDING_MAX) for that
 * record.  An exchange that ends without an HTTP status (a response record
 * without one, a refusal without one, an event pushed out of the table, or one
 * still waiting when the file closes) is written as Network Activity, activity
 * Other ("No Response"), its URL kept.  Other kinds (start, checkpoint, ...) are not written.  The
 * file is a derived copy: a write that fails is counted and the event is
 * lost; the audit file stays the record.  It is reopened by name whenever
 * the audit file rotates (SIGUSR1, logrotate), so logrotate can move both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "common/log.h"
#include "common/sluice.h"
#include "writer_int.h"

#define OCSF_VERSION "1.3.0"             /* the schema version the events follow (metadata.version) */
#define OCSF_PROFILE "security_control"  /* action_id, disposition_id, firewall_rule belong to it */
#define OCSF_PENDING_MAX 1024            /* allowed requests waiting for their response record */
#define OCSF_CATEGORY_NETWORK 4
#define OCSF_CLASS_NETWORK 4001
#define OCSF_CLASS_HTTP 4002
#define OCSF_CLASS_DNS 4003
#define OCSF_ACTIVITY_OTHER 99
#define OCSF_NET_REFUSE 5                /* network_activity activity_id */
#define OCSF_TYPE_UID_STEP 100           /* type_uid = class_uid * 100 + activity_id */
#define OCSF_DNS_RESPONSE 2              /* dns_activity activity_id */
#define OCSF_ACTION_ALLOWED 1
#define OCSF_ACTION_DENIED 2
#define OCSF_DISP_ALLOWED 1
#define OCSF_DISP_BLOCKED 2
#define OCSF_DISP_DELAYED 14
#define OCSF_SEV_INFO 1
#define OCSF_SEV_LOW 2
#define OCSF_SEV_MEDIUM 3
#define OCSF_STATUS_SUCCESS 1
#define OCSF_STATUS_FAILURE 2

/* an allowed request's HTTP Activity event, waiting for the status of its response record */
struct ocsf_pending {
	char *id;
	json_t *ev;
	uint64_t order;  /* arrival: the oldest goes first when the table is full */
};

struct audit_ocsf {
	char *path;
	int fd;
	int failing;
	_Atomic uint64_t dropped;
	struct ocsf_pending pend[OCSF_PENDING_MAX];  /* the copies' thread only */
	size_t npend;
	uint64_t norder;
};

static int
reopen(struct audit_ocsf *o, char *err, size_t cap)
{
	int fd = open(o->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	if (fd == -1) {
		if (err != NULL)
			snprintf(err, cap, "audit.ocsf.file %s: %s", o->path, strerror(errno));
		return -1;
	}
	if (o->fd != -1)
		close(o->fd);
	o->fd = fd;
	return 0;
}

struct audit_ocsf *
audit_ocsf_open(const char *path, char *err, size_t cap)
{
	struct audit_ocsf *o = xcalloc(1, sizeof(*o));

	o->fd = -1;
	o->path = xstrdup(path);
	if (reopen(o, err, cap) != 0) {
		audit_ocsf_close(o);
		return NULL;
	}
	return o;
}

void
audit_ocsf_reopen(struct audit_ocsf *o)
{
	if (o != NULL && reopen(o, NULL, 0) != 0)
		log_warnx("audit: cannot reopen audit.ocsf.file %s: %s (writing on to the old one)", o->path,
		          strerror(errno));
}

void
audit_ocsf_count_dropped(struct audit_ocsf *o, uint64_t n)
{
	if (o != NULL)
		atomic_fetch_add(&o->dropped, n);
}

uint64_t
audit_ocsf_dropped(const struct audit_ocsf *o)
{
	return o != NULL ? atomic_load(&o->dropped) : 0;
}

static const char *
str(const struct audit_record *rec, const char *k)
{
	return json_string_value(json_object_get(rec->obj, k));
}

static void
set_str(json_t *o, const char *k, const char *v)
{
	if (v != NULL)
		json_object_set_new(o, k, json_string(v));
}

/* <h> as an address (its brackets stripped) into <out>/<cap>: 1 when <h> is an IPv4 or IPv6 literal (an OCSF
 * ip_t, never a hostname_t, which is a DNS name), else 0. */
static int
ip_literal(const char *h, char *out, size_t cap)
{
	struct in6_addr a;
	size_t n;

	if (h == NULL)
		return 0;
	n = strlen(h);
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if (n >= cap)
		return 0;
	memcpy(out, h, n);
	out[n] = '\0';
	return inet_pton(AF_INET, out, &a) == 1 || inet_pton(AF_INET6, out, &a) == 1;
}

/* "ip:port", "[v6]:port" -> an OCSF network_endpoint's ip and port (and <name> as its name).  A <hostname>
 * that is an address literal goes to ip when <addr> gave none (hostname_t is a DNS name). */
static json_t *
endpoint(const char *addr, const char *hostname, const char *name)
{
	json_t *e = json_object();
	char ip[64], lit[64];
	int is_lit = ip_literal(hostname, lit, sizeof(lit));
	struct in6_addr a6;
	const char *colon = addr != NULL ? strrchr(addr, ':') : NULL;
	size_t il;
	long port;
	char *end;

	set_str(e, "name", name);
	if (!is_lit)
		set_str(e, "hostname", hostname);
	if (addr != NULL && (inet_pton(AF_INET, addr, &a6) == 1 || inet_pton(AF_INET6, addr, &a6) == 1)) {
		json_object_set_new(e, "ip", json_string(addr));  /* an address without a port */
	} else if (colon != NULL) {
		const char *ib = addr, *ie = colon;

		if (addr[0] == '[' && colon > addr && colon[-1] == ']') {
			ib = addr + 1;
			ie = colon - 1;
		}
		il = (size_t)(ie - ib);
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (il > 0 && il < sizeof(ip) && *end == '\0' && errno == 0 && port > 0 && port <= 65535) {
			memcpy(ip, ib, il);
			ip[il] = '\0';
			if (inet_pton(AF_INET, ip, &a6) == 1 || inet_pton(AF_INET6, ip, &a6) == 1) {
				json_object_set_new(e, "ip", json_string(ip));
				json_object_set_new(e, "port", json_integer(port));
			}
		}
	}
	if (is_lit && json_object_get(e, "ip") == NULL)
		set_str(e, "ip", lit);
	return e;
}

/* http_activity's activity_id enum in 1.3.0: 1..8 in this order, with these captions (no Patch: 1.3.0 has
 * none, so PATCH is 99 Other like any other method) */
static const char *const http_methods[] = {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "TRACE"};
static const char *const http_captions[] = {"Connect", "Delete", "Get", "Head", "Options", "Post", "Put", "Trace"};

static int
http_activity_id(const char *m)
{
	size_t i;

	for (i = 0; m != NULL && i < sizeof(http_methods) / sizeof(http_methods[0]); i++)
		if (strcmp(m, http_methods[i]) == 0)
			return (int)i + 1;
	return OCSF_ACTIVITY_OTHER;
}

static void
classify(json_t *ev, int class_uid, int activity_id, const char *activity, const char *class_name)
{
	json_object_set_new(ev, "class_uid", json_integer(class_uid));
	set_str(ev, "class_name", class_name);
	json_object_set_new(ev, "activity_id", json_integer(activity_id));
	set_str(ev, "activity_name", activity);
	json_object_set_new(ev, "type_uid", json_integer((json_int_t)class_uid * OCSF_TYPE_UID_STEP + activity_id));
}

/* The common members of every event: class, activity, type, time, metadata. */
static json_t *
event(const struct audit_record *rec, int class_uid, int activity_id, const char *activity, const char *class_name)
{
	json_t *ev = json_object(), *md = json_object(), *prod = json_object(), *profiles = json_array();

	classify(ev, class_uid, activity_id, activity, class_name);
	json_object_set_new(ev, "category_uid", json_integer(OCSF_CATEGORY_NETWORK));
	set_str(ev, "category_name", "Network Activity");
	json_object_set_new(ev, "time", json_integer(rec->time_ms != INT64_MIN ? rec->time_ms : 0));
	set_str(prod, "name", "Sluice");
	set_str(prod, "vendor_name", "Sluice");
	set_str(prod, "version", SLUICE_VERSION);
	json_object_set_new(md, "product", prod);
	set_str(md, "version", OCSF_VERSION);
	json_array_append_new(profiles, json_string(OCSF_PROFILE));
	json_object_set_new(md, "profiles", profiles);
	set_str(md, "log_name", "audit");
	if (rec->seq > 0) {
		char uid[24];

		snprintf(uid, sizeof(uid), "%lld", (long long)rec->seq);
		set_str(md, "uid", uid);
		if (rec->seq <= INT32_MAX)  /* metadata.sequence is an integer_t (32 bits); uid has every seq */
			json_object_set_new(md, "sequence", json_integer(rec->seq));
	}
	set_str(md, "original_time", rec->time);
	json_object_set_new(ev, "metadata", md);
	return ev;
}

static void
verdict(json_t *ev, int action, int disp, const char *disp_name, int sev, const char *sev_name)
{
	json_object_set_new(ev, "action_id", json_integer(action));
	set_str(ev, "action", action == OCSF_ACTION_ALLOWED ? "Allowed" : "Denied");
	json_object_set_new(ev, "disposition_id", json_integer(disp));
	set_str(ev, "disposition", disp_name);
	json_object_set_new(ev, "severity_id", json_integer(sev));
	set_str(ev, "severity", sev_name);
	json_object_set_new(ev, "status_id", json_integer(action == OCSF_ACTION_ALLOWED ? OCSF_STATUS_SUCCESS
	                                                                                 : OCSF_STATUS_FAILURE));
	set_str(ev, "status", action == OCSF_ACTION_ALLOWED ? "Success" : "Failure");
}

static void
rule(json_t *ev, const struct audit_record *rec)
{
	const char *r = str(rec, "rule"), *reason = str(rec, "reason");
	json_t *fr;

	if (r == NULL && reason == NULL)
		return;
	fr = json_object();
	set_str(fr, "uid", r != NULL ? r : "-");
	set_str(fr, "name", r != NULL ? r : "-");
	set_str(fr, "condition", reason);
	json_object_set_new(ev, "firewall_rule", fr);
}

/* message: the judge's reason, else what was decided */
static void
message(json_t *ev, const struct audit_record *rec)
{
	const char *reason = str(rec, "reason");

	set_str(ev, "message", reason != NULL ? reason : rec->verdict_kind == AUDIT_VERDICT_DENY ? "denied" : "allowed");
}

/* http_response of 1.3.0 (required in HTTP Activity): the status, and from a response record its length and
 * latency when they fit an integer_t */
static void
http_response(json_t *ev, int64_t status, const struct audit_record *resp)
{
	json_t *r = json_object(), *v;

	json_object_set_new(r, "code", json_integer(status));
	if (resp != NULL) {
		v = json_object_get(resp->obj, "bytes_down");
		if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX)
			json_object_set_new(r, "length", json_integer(json_integer_value(v)));
		v = json_object_get(resp->obj, "duration_ms");
		if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX)
			json_object_set_new(r, "latency", json_integer(json_integer_value(v)));
	}
	json_object_set_new(ev, "http_response", r);
}

static json_t *
http_event(const struct audit_record *rec)
{
	const char *path = rec->path != NULL ? rec->path : "/", *q = strchr(path, '?');
	const char *hold = json_string_value(json_object_get(json_object_get(rec->obj, "hold"), "outcome"));
	int act = http_activity_id(rec->method), limited = json_is_object(json_object_get(rec->obj, "limit"));
	/* activity 99: activity_name carries the method as sent (OCSF: "a data source specific value") */
	json_t *ev = event(rec, OCSF_CLASS_HTTP, act,
	                   act != OCSF_ACTIVITY_OTHER ? http_captions[act - 1] : rec->method != NULL ? rec->method : "Other",
	                   "HTTP Activity");
	json_t *req = json_object(), *url = json_object();
	char *p, lit[64];

	if (rec->verdict_kind == AUDIT_VERDICT_ALLOW && hold != NULL)
		verdict(ev, OCSF_ACTION_ALLOWED, OCSF_DISP_DELAYED, "Delayed", OCSF_SEV_LOW, "Low");
	else if (rec->verdict_kind == AUDIT_VERDICT_ALLOW)
		verdict(ev, OCSF_ACTION_ALLOWED, OCSF_DISP_ALLOWED, "Allowed", OCSF_SEV_INFO, "Informational");
	else
		verdict(ev, OCSF_ACTION_DENIED, OCSF_DISP_BLOCKED, "Blocked", limited ? OCSF_SEV_LOW : OCSF_SEV_MEDIUM,
		        limited ? "Low" : "Medium");
	if (limited)
		set_str(ev, "status_detail", "rate-limited");
	else if (hold != NULL)
		set_str(ev, "status_detail", hold);
	set_str(req, "http_method", rec->method);
	set_str(req, "version", str(rec, "http_version"));
	set_str(req, "uid", rec->id);
	set_str(url, "scheme", "https");
	if (!ip_literal(rec->host, lit, sizeof(lit)))
		set_str(url, "hostname", rec->host);
	p = q != NULL ? strndup(path, (size_t)(q - path)) : NULL;
	set_str(url, "path", p != NULL ? p : path);
	free(p);
	if (q != NULL)
		set_str(url, "query_string", q + 1);
	if (rec->host != NULL) {
		/* an IPv6 literal host is bracketed in a URL */
		int br = strchr(rec->host, ':') != NULL && rec->host[0] != '[';
		size_t n = strlen(rec->host) + strlen(path) + sizeof("https://[]");
		char *u = xmalloc(n);

		snprintf(u, n, "https://%s%s%s%s", br ? "[" : "", rec->host, br ? "]" : "", path);
		set_str(url, "url_string", u);
		free(u);
	}
	json_object_set_new(req, "url", url);
	json_object_set_new(ev, "http_request", req);
	if (rec->status >= 0)
		http_response(ev, rec->status, NULL);  /* the gateway answered it itself */
	json_object_set_new(ev, "src_endpoint", endpoint(str(rec, "client"), NULL, rec->sandbox));
	json_object_set_new(ev, "dst_endpoint", endpoint(str(rec, "dest"), rec->host, NULL));
	rule(ev, rec);
	message(ev, rec);
	return ev;
}

static json_t *
dns_event(const struct audit_record *rec)
{
	json_t *ev = event(rec, OCSF_CLASS_DNS, OCSF_DNS_RESPONSE, "Response", "DNS Activity");
	json_t *answers = json_array(), *an;
	const char *ans = str(rec, "answer"), *sp;
	int rcode = 0;

	if (rec->verdict_kind == AUDIT_VERDICT_DENY)
		verdict(ev, OCSF_ACTION_DENIED, OCSF_DISP_BLOCKED, "Blocked", OCSF_SEV_MEDIUM, "Medium");
	else
		verdict(ev, OCSF_ACTION_ALLOWED, OCSF_DISP_ALLOWED, "Allowed", OCSF_SEV_INFO, "Informational");
	if (rec->host != NULL) {  /* query.hostname is required: no name, no query object */
		json_t *q = json_object();

		set_str(q, "hostname", rec->host);
		set_str(q, "type", str(rec, "qtype"));
		json_object_set_new(ev, "query", q);
	}
	if (ans != NULL && strcmp(ans, "NXDOMAIN") == 0) {
		rcode = 3;
	} else if (ans != NULL && strcmp(ans, "REFUSED") == 0) {
		rcode = 5;
	} else if (ans != NULL && strcmp(ans, "SERVFAIL") == 0) {
		rcode = 2;
	} else if (ans != NULL && (sp = strchr(ans, ' ')) != NULL) {
		char *t = strndup(ans, (size_t)(sp - ans));

		an = json_object();
		set_str(an, "type", t);
		set_str(an, "rdata", sp + 1);
		json_array_append_new(answers, an);
		free(t);
	}
	json_object_set_new(ev, "answers", answers);
	json_object_set_new(ev, "rcode_id", json_integer(rcode));
	set_str(ev, "rcode", rcode == 0 ? "NoError" : rcode == 3 ? "NXDomain" : rcode == 5 ? "Refused" : "ServError");
	json_object_set_new(ev, "src_endpoint", endpoint(str(rec, "client"), NULL, rec->sandbox));
	message(ev, rec);
	return ev;
}

static json_t *
net_event(const struct audit_record *rec)
{
	json_t *ev = event(rec, OCSF_CLASS_NETWORK, OCSF_NET_REFUSE, "Refuse", "Network Activity");

	verdict(ev, OCSF_ACTION_DENIED, OCSF_DISP_BLOCKED, "Blocked", OCSF_SEV_MEDIUM, "Medium");
	json_object_set_new(ev, "src_endpoint", endpoint(str(rec, "client"), NULL, rec->sandbox));
	json_object_set_new(ev, "dst_endpoint", endpoint(str(rec, "dest"), rec->host != NULL ? rec->host : rec->sni,
	                                                 NULL));
	rule(ev, rec);
	message(ev, rec);
	return ev;
}

json_t *
audit_ocsf_event(const struct audit_record *rec)
{
	if (!json_is_object(rec->obj))
		return NULL;
	switch (rec->kind) {
	case AUDIT_KIND_REQUEST:
		return http_event(rec);
	case AUDIT_KIND_DNS:
		return dns_event(rec);
	case AUDIT_KIND_DENIAL:
		return net_event(rec);
	default:
		return NULL;
	}
}

void
audit_ocsf_answer(json_t *ev, const struct audit_record *resp)
{
	json_t *req, *url;

	if (resp != NULL && resp->status >= 0) {
		http_response(ev, resp->status, resp);
		return;
	}
	/* no HTTP status: the exchange is not an HTTP Activity of 1.3.0; a Network Activity keeps what is known */
	classify(ev, OCSF_CLASS_NETWORK, OCSF_ACTIVITY_OTHER, "No Response", "Network Activity");
	req = json_object_get(ev, "http_request");
	url = json_object_get(req, "url");
	if (url != NULL)
		json_object_set(ev, "url", url);
	json_object_del(ev, "http_request");
	if (json_object_get(ev, "status_detail") == NULL)
		set_str(ev, "status_detail", "no HTTP response");
}

static void
emit(struct audit_ocsf *o, json_t *ev)
{
	char *s;
	size_t n;
	ssize_t w;

	s = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(ev);
	if (s == NULL) {
		atomic_fetch_add(&o->dropped, 1);
		return;
	}
	n = strlen(s);
	s[n] = '\n';  /* json_dumps' NUL becomes the line's end: one write(2) a line */
	do
		w = write(o->fd, s, n + 1);
	while (w == -1 && errno == EINTR);
	if (w != (ssize_t)(n + 1)) {
		atomic_fetch_add(&o->dropped, 1);
		if (!o->failing)
			log_warnx("audit: writing audit.ocsf.file %s failed (%s): events are dropped until it works",
			          o->path, w == -1 ? strerror(errno) : "short write");
		o->failing = 1;
	} else if (o->failing) {
		o->failing = 0;
		log_warnx("audit: audit.ocsf.file %s works again", o->path);
	}
	free(s);
}

/* Removes pending <i> and writes its event, answered by <resp> (NULL: it got none). */
static void
pend_done(struct audit_ocsf *o, size_t i, const struct audit_record *resp)
{
	json_t *ev = o->pend[i].ev;

	free(o->pend[i].id);
	o->pend[i] = o->pend[--o->npend];
	audit_ocsf_answer(ev, resp);
	emit(o, ev);
}

static void
pend_add(struct audit_ocsf *o, const char *id, json_t *ev)
{
	size_t i, oldest = 0;

	if (o->npend == OCSF_PENDING_MAX) {
		for (i = 1; i < o->npend; i++)
			if (o->pend[i].order < o->pend[oldest].order)
				oldest = i;
		pend_done(o, oldest, NULL);
	}
	o->pend[o->npend].id = xstrdup(id);
	o->pend[o->npend].ev = ev;
	o->pend[o->npend].order = o->norder++;
	o->npend++;
}

void
audit_ocsf_rec(struct audit_ocsf *o, const struct audit_record *rec)
{
	json_t *ev;
	size_t i;

	if (o == NULL || !json_is_object(rec->obj))
		return;
	if (rec->kind == AUDIT_KIND_RESPONSE) {
		for (i = 0; rec->id != NULL && i < o->npend; i++)
			if (strcmp(o->pend[i].id, rec->id) == 0) {
				pend_done(o, i, rec);
				break;
			}
		return;
	}
	if ((ev = audit_ocsf_event(rec)) == NULL)
		return;
	if (rec->kind == AUDIT_KIND_REQUEST && json_object_get(ev, "http_response") == NULL) {
		/* only an allowed request has a response record to come; without an id none can be matched */
		if (rec->verdict_kind == AUDIT_VERDICT_ALLOW && rec->id != NULL) {
			pend_add(o, rec->id, ev);
			return;
		}
		audit_ocsf_answer(ev, NULL);
	}
	emit(o, ev);
}

void
audit_ocsf_close(struct audit_ocsf *o)
{
	if (o == NULL)
		return;
	while (o->npend > 0)  /* still waiting: written without an answer rather than lost */
		pend_done(o, o->npend - 1, NULL);
	if (o->fd != -1)
		close(o->fd);
	free(o->path);
	free(o);
}
