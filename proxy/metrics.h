/*
 * proxy/metrics.h - live counters for the admin endpoint's GET /metrics
 * (Prometheus text format 0.0.4) and GET /healthz.
 *
 * Threads: every counter is a C11 atomic updated with relaxed ordering, so
 * any worker may count without a lock; labelled counters have one copy per
 * thread shard (summed at scrape), so workers do not share cache lines.  Labels are bounded: a host is the
 * key of the policy's host entry that names it ("api.github.com", or the
 * pattern "*.pypi.org" of a wildcard entry), anything else is "other"; rule
 * ids and secret names are taken as recorded, at most METRICS_RULES_MAX and
 * METRICS_SECRETS_MAX of them, the rest "other".  A label, once seen, stays
 * until the gateway stops (a counter must not disappear), so each table is
 * bounded across reloads as well.
 *
 * The policy that buckets hosts is swapped by metrics_policy_loaded (main
 * thread) while workers read it: a reader announces itself in its own
 * cache line before loading the pointer, and the swap waits until every
 * reader that could hold the old snapshot has left before dropping it.
 *
 * Every function accepts a NULL <m> and does nothing (returns 0 or NULL).
 */
#ifndef SLUICE_PROXY_METRICS_H
#define SLUICE_PROXY_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct metrics;
struct policy;
struct audit_rec;
struct evbuffer;

#define METRICS_HOSTS_MAX 256        /* distinct host labels; further policy hosts count under "other" */
#define METRICS_RULES_MAX 256        /* distinct rule labels of sluice_denials_total */
#define METRICS_SECRETS_MAX 128      /* distinct secret labels (exfiltration attempts, scrubs) */
#define METRICS_LABEL_MAX 256        /* bytes of one label value; a longer value counts under "other" */
#define METRICS_RELOAD_ERR_MAX 256   /* bytes of a failed reload's reason kept for /healthz */
#define METRICS_READER_SHARDS 64     /* reader slots of the host-bucketing policy (one per thread, then shared) */

enum metrics_side {
	METRICS_SIDE_CLIENT = 0,     /* the sandbox's TLS handshake with the gateway */
	METRICS_SIDE_UPSTREAM = 1,   /* the gateway's verified TLS handshake with the real host */
};

/*
 * Creates the counters.  <pol> (borrowed; the metrics take their own
 * reference, NULL allowed) is the policy the gateway starts with: it is
 * generation 1 and buckets hosts.  Never NULL (aborts on out of memory).
 */
struct metrics *metrics_create(struct policy *pol);
/* Drops the policy reference and frees everything.  No other call may run. */
void metrics_destroy(struct metrics *m);

/*
 * Counts one audit record (any thread, called by the audit writer for each
 * record it writes).  By r->kind:
 *   "request":   sluice_requests_total{verdict,host}; when r->verdict is
 *                deny also sluice_denials_total{rule}
 *   "response":  sluice_responses_total{host,class} from r->status
 *   "denial":    sluice_denials_total{rule}
 *   "connection" with verdict "deny" (today's refused connection):
 *                sluice_denials_total{rule}
 *   "exfiltration_attempt": sluice_exfiltration_attempts_total{secret}
 *   "scrub":     sluice_scrubs_total{secret}, once per name in r->scrubbed
 *                (or r->secret_names when that is empty, or r->secret)
 *   "dns":       sluice_dns_queries_total{answer} by r->dns_answer
 * Other kinds are not counted.  <r> is borrowed; nothing is kept.
 */
void metrics_audit(struct metrics *m, const struct audit_rec *r);

/*
 * Main thread: <pol> (borrowed, referenced) was loaded by a reload and is
 * now the gateway's policy: generation + 1, last reload ok.  Waits (briefly)
 * until no worker still reads the previous snapshot, then drops it.
 */
void metrics_policy_loaded(struct metrics *m, struct policy *pol);
/* Main thread: a reload failed with <err> (copied, cut to METRICS_RELOAD_ERR_MAX); the policy is unchanged. */
void metrics_reload_failed(struct metrics *m, const char *err);

/* Any thread: a TLS handshake failed (or timed out) on <side>. */
void metrics_tls_failure(struct metrics *m, enum metrics_side side);
/* Any thread: an HTTP/2 stream from a client opened (+1) or ended (-1). */
void metrics_h2_stream(struct metrics *m, int delta);

/* What the scrape reads from elsewhere (negative: unknown, the metric is left out). */
struct metrics_gauges {
	int64_t connections_open;        /* client connections (not h2 streams) */
	int64_t leaf_cache_entries;
	int64_t leaf_cache_hits;
	int64_t leaf_cache_misses;
	int64_t audit_queue_depth;       /* records the writer has not written yet */
	int64_t audit_write_errors;      /* failed writes since start */
	int64_t audit_syslog_dropped;    /* lines the syslog copy dropped since start */
	int64_t audit_ocsf_errors;       /* OCSF events not written since start */
	int audit_healthy;               /* 1 the audit log is written, 0 failing, -1 unknown */
	int64_t sandboxes_registered;    /* sandboxes registered over the admin socket */
};
/* All fields -1: nothing known. */
void metrics_gauges_init(struct metrics_gauges *g);

/*
 * Appends the whole exposition (text format 0.0.4, every family with its
 * # HELP and # TYPE, series sorted by label, "other" last) to <out>.
 * Main thread (reads the reload state); counters may move meanwhile.
 */
void metrics_render(struct metrics *m, const struct metrics_gauges *g, struct evbuffer *out);
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Appends the /healthz JSON object and a newline to <out>:
 *   {"status":"ok"|"degraded","audit":"ok"|"failing","policy_generation":N,
 *    "last_reload":null|{"result":"ok"|"error","time":"<RFC 3339>","generation":N[,"error":"..."]},
 *    "uptime_s":N}
 * Returns the HTTP status to answer: 200 (status "ok"), or 503 when
 * g->audit_healthy is 0 (status "degraded", audit "failing": requests are
 * refused).  Unknown audit health (-1) reads as ok.  A failed reload shows
 * in last_reload only: the previous policy still serves.
 */
int metrics_healthz(struct metrics *m, const struct metrics_gauges *g, struct evbuffer *out);

/* Appends <s> escaped as a label value (\\, \", \n) to <out>; for tests and render. */
void metrics_label_escape(struct evbuffer *out, const char *s);

#endif
