/*
 * proxy/metrics.c - counters derived from audit records and from a few
 * direct events, rendered as Prometheus text (0.0.4) and /healthz JSON.
 *
 * Counting takes no lock: counters are relaxed atomics, and a label's slot
 * in its table is claimed once with a compare-and-swap of its name pointer
 * (the name is copied, so it outlives the policy it came from).  Tables
 * never shrink and are bounded (METRICS_*_MAX): a sandbox cannot grow the
 * exposition, because host labels are only ever the policy's own entry keys
 * and every other table is filled with names the gateway or the policy
 * chose, never a peer's bytes.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>
#include <jansson.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/metrics.h"
#include "audit/writer.h"

/* Columns of a label's counters.  Hosts: verdicts, then status classes; rules: one; secrets: two. */
enum { V_ALLOW = 0, V_DENY = 1, V_ERROR = 2, V_OTHER = 3, NVERDICTS = 4 };
static const char *const verdict_names[NVERDICTS] = {"allow", "deny", "error", "other"};
#define NCLASSES 6
static const char *const class_names[NCLASSES] = {"1xx", "2xx", "3xx", "4xx", "5xx", "other"};
#define COL_REQ 0
#define COL_RESP NVERDICTS
#define COL_DENIAL 0
#define COL_EXFIL 0
#define COL_SCRUB 1
#define LABEL_COLS (NVERDICTS + NCLASSES)

enum { D_SYNTHETIC = 0, D_NXDOMAIN = 1, D_NODATA = 2, D_REFUSED = 3, D_ERROR = 4, NDNS = 5 };
static const char *const dns_names[NDNS] = {"synthetic", "nxdomain", "nodata", "refused", "error"};
static const char *const side_names[2] = {"client", "upstream"};

/*
 * A label's counters, one copy per shard: threads count in the copy of their
 * own shard (each in its own cache lines), and a scrape sums them.  Measured
 * on 2 cores, two threads counting request records for one host flat out:
 * 49 ns a record for one thread alone; 108-173 ns each when both share one
 * counter; 51-94 ns each with the shards.
 */
#define COUNTER_SHARDS 16
struct shard_cols {
	_Alignas(64) atomic_ulong c[LABEL_COLS];
};
struct label {
	struct shard_cols sh[COUNTER_SHARDS];
	char name[];                     /* NUL-terminated, at most METRICS_LABEL_MAX bytes */
};

/* Open addressing over 2 * max slots: a probe always ends at a free slot or the name. */
struct ltab {
	_Atomic(struct label *) *slots;  /* NULL: free; set once (with its name and zeroed counters), freed at destroy */
	size_t mask;
	size_t max;
	atomic_size_t n;                 /* names claimed (may pass max by a few racing claims, never the slots) */
	struct label *other;
};

/* One reader count per cache line, so readers on different threads do not share a line. */
struct reader {
	_Alignas(64) atomic_uint n;
};

struct metrics {
	struct reader rd[METRICS_READER_SHARDS];
	_Atomic(struct policy *) pol;    /* buckets hosts; one reference held */
	struct ltab hosts, rules, secrets;
	atomic_ulong dns[NDNS];
	atomic_ulong tls_fail[2];
	atomic_long h2_streams;
	atomic_ulong generation;
	struct timespec t0;              /* CLOCK_MONOTONIC at create */
	pthread_mutex_t mu;              /* the reload state below (main thread writes, any thread may read) */
	int reloaded;                    /* a reload was attempted */
	int reload_ok;
	unsigned long reload_gen;
	char reload_time[32];
	char reload_err[METRICS_RELOAD_ERR_MAX];
};

static atomic_uint next_reader;
static _Thread_local unsigned tl_reader;  /* 1 + this thread's reader slot, 0 until assigned */

/* A label named <name>/<len> with every counter at zero. */
static struct label *
label_new(const char *name, size_t len)
{
	size_t size = sizeof(struct label) + len + 1;
	struct label *l;
	unsigned i;
	int c;

	size = (size + _Alignof(struct label) - 1) / _Alignof(struct label) * _Alignof(struct label);
	l = aligned_alloc(_Alignof(struct label), size);
	if (l == NULL)
		fatalx("out of memory");
	for (i = 0; i < COUNTER_SHARDS; i++)
		for (c = 0; c < LABEL_COLS; c++)
			atomic_init(&l->sh[i].c[c], 0);
	memcpy(l->name, name, len);
	l->name[len] = '\0';
	return l;
}

static void
ltab_init(struct ltab *t, size_t max)
{
	size_t n = 1, i;

	while (n < 2 * max)
		n <<= 1;
	t->slots = xcalloc(n, sizeof(*t->slots));
	for (i = 0; i < n; i++)
		atomic_init(&t->slots[i], NULL);
	t->mask = n - 1;
	t->max = max;
	atomic_init(&t->n, 0);
	t->other = label_new("other", 5);
}

static void
ltab_dispose(struct ltab *t)
{
	size_t i;

	for (i = 0; i <= t->mask; i++)
		free(atomic_load(&t->slots[i]));
	free(t->slots);
	free(t->other);
}

static uint64_t
fnv1a(const char *s, size_t len)
{
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* The label named <name>: found, claimed, or "other" (NULL, empty, too long, or the table is full). */
static struct label *
ltab_get(struct ltab *t, const char *name)
{
	_Atomic(struct label *) *slot;
	struct label *k, *fresh;
	size_t len, i;
	uint64_t h;

	if (name == NULL)
		return t->other;
	len = strnlen(name, METRICS_LABEL_MAX + 1);
	if (len == 0 || len > METRICS_LABEL_MAX || strcmp(name, "other") == 0)
		return t->other;  /* a host or rule really named "other" shares its series */
	h = fnv1a(name, len);
	for (i = 0; i <= t->mask; i++) {
		slot = &t->slots[(h + i) & t->mask];
		k = atomic_load_explicit(slot, memory_order_acquire);
		if (k == NULL) {
			if (atomic_load_explicit(&t->n, memory_order_relaxed) >= t->max)
				return t->other;
			fresh = label_new(name, len);
			if (atomic_compare_exchange_strong_explicit(slot, &k, fresh, memory_order_acq_rel,
			                                            memory_order_acquire)) {
				atomic_fetch_add_explicit(&t->n, 1, memory_order_relaxed);
				return fresh;
			}
			free(fresh);  /* another thread claimed the slot: <k> is its label */
		}
		if (strcmp(k->name, name) == 0)
			return k;
	}
	return t->other;
}

static unsigned reader_slot(void);

/* Counts one in column <col> of <l>, in this thread's shard. */
static void
inc_label(struct label *l, int col)
{
	atomic_fetch_add_explicit(&l->sh[reader_slot() % COUNTER_SHARDS].c[col], 1, memory_order_relaxed);
}

static unsigned long
label_sum(struct label *l, int col)
{
	unsigned long sum = 0;
	unsigned i;

	for (i = 0; i < COUNTER_SHARDS; i++)
		sum += atomic_load_explicit(&l->sh[i].c[col], memory_order_relaxed);
	return sum;
}

static void
inc(atomic_ulong *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static unsigned
reader_slot(void)
{
	if (tl_reader == 0)
		tl_reader = 1 + atomic_fetch_add(&next_reader, 1) % METRICS_READER_SHARDS;
	return tl_reader - 1;
}

/*
 * The host label of canonical <host>: the key of the policy entry that names
 * it, else "other".  The reader count goes up before the pointer is loaded
 * (both sequentially consistent), so a swap that saw the count at zero
 * happened before this load, which then sees the new snapshot.
 */
static struct label *
host_label(struct metrics *m, const char *host)
{
	struct policy_conn_decision d;
	struct label *l = m->hosts.other;
	struct policy *p;
	unsigned s;

	if (host == NULL || host[0] == '\0')
		return l;
	s = reader_slot();
	atomic_fetch_add(&m->rd[s].n, 1);
	p = atomic_load(&m->pol);
	if (p != NULL) {
		policy_decide_conn(p, host, 443, &d);
		if (d.host != NULL)
			l = ltab_get(&m->hosts, policy_host_key(d.host));
	}
	atomic_fetch_sub_explicit(&m->rd[s].n, 1, memory_order_release);
	return l;
}

/* Main thread: <pol> buckets hosts from now on; the previous snapshot is dropped once no reader holds it. */
static void
policy_swap(struct metrics *m, struct policy *pol)
{
	struct policy *old = atomic_exchange(&m->pol, policy_ref(pol));
	unsigned i;

	for (i = 0; i < METRICS_READER_SHARDS; i++)
		while (atomic_load(&m->rd[i].n) != 0)
			sched_yield();  /* a reader holds it for one hash lookup */
	policy_unref(old);
}

struct metrics *
metrics_create(struct policy *pol)
{
	struct metrics *m = aligned_alloc(_Alignof(struct metrics), sizeof(struct metrics));
	unsigned i;

	if (m == NULL)
		fatalx("out of memory");
	memset(m, 0, sizeof(*m));
	for (i = 0; i < METRICS_READER_SHARDS; i++)
		atomic_init(&m->rd[i].n, 0);
	atomic_init(&m->pol, policy_ref(pol));
	ltab_init(&m->hosts, METRICS_HOSTS_MAX);
	ltab_init(&m->rules, METRICS_RULES_MAX);
	ltab_init(&m->secrets, METRICS_SECRETS_MAX);
	atomic_init(&m->generation, pol != NULL ? 1 : 0);
	clock_mono(&m->t0);
	pthread_mutex_init(&m->mu, NULL);
	return m;
}

void
metrics_destroy(struct metrics *m)
{
	if (m == NULL)
		return;
	policy_unref(atomic_load(&m->pol));
	ltab_dispose(&m->hosts);
	ltab_dispose(&m->rules);
	ltab_dispose(&m->secrets);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static int
verdict_idx(enum audit_verdict v)
{
	switch (v) {
	case AUDIT_VERDICT_ALLOW:
		return V_ALLOW;
	case AUDIT_VERDICT_DENY:
		return V_DENY;
	case AUDIT_VERDICT_NONE:
		break;
	}
	return V_OTHER;
}

static int
class_idx(int status)
{
	return status >= 100 && status <= 599 ? status / 100 - 1 : NCLASSES - 1;
}

static int
dns_idx(const char *answer)
{
	if (answer == NULL)
		return D_ERROR;
	if (strncmp(answer, "A ", 2) == 0 || strncmp(answer, "AAAA ", 5) == 0)
		return D_SYNTHETIC;
	if (strcmp(answer, "NXDOMAIN") == 0)
		return D_NXDOMAIN;
	if (strcmp(answer, "NODATA") == 0)
		return D_NODATA;
	if (strcmp(answer, "REFUSED") == 0)
		return D_REFUSED;
	return D_ERROR;
}

static void
count_scrub(struct metrics *m, const struct audit_rec *r)
{
	const char *const *names = r->scrubbed;
	size_t n = r->nscrubbed, i;

	if (n == 0 || names == NULL) {
		names = r->secret_names;
		n = names != NULL ? r->nsecrets : 0;
	}
	if (n == 0) {
		if (r->secret != NULL)
			inc_label(ltab_get(&m->secrets, r->secret), COL_SCRUB);
		return;
	}
	for (i = 0; i < n; i++)
		inc_label(ltab_get(&m->secrets, names[i]), COL_SCRUB);
}

void
metrics_audit(struct metrics *m, const struct audit_rec *r)
{
	int v;

	if (m == NULL || r == NULL)
		return;
	switch (r->kind) {
	case AUDIT_KIND_REQUEST:
		v = verdict_idx(r->verdict);
		inc_label(host_label(m, r->host), COL_REQ + v);
		if (v == V_DENY)
			inc_label(ltab_get(&m->rules, r->rule), COL_DENIAL);
		break;
	case AUDIT_KIND_RESPONSE:
		inc_label(host_label(m, r->host), COL_RESP + class_idx(r->status));
		break;
	case AUDIT_KIND_CONNECTION:  /* a refused connection counts as a denial */
		if (verdict_idx(r->verdict) != V_DENY)
			break;
		/* fall through */
	case AUDIT_KIND_DENIAL:
		inc_label(ltab_get(&m->rules, r->rule), COL_DENIAL);
		break;
	case AUDIT_KIND_EXFILTRATION_ATTEMPT:
		inc_label(ltab_get(&m->secrets, r->secret), COL_EXFIL);
		break;
	case AUDIT_KIND_SCRUB:
		count_scrub(m, r);
		break;
	case AUDIT_KIND_DNS:
		inc(&m->dns[dns_idx(r->dns_answer)]);
		break;
	default:
		break;
	}
}

static void
now_rfc3339(char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;

	clock_wall(&ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, cap, "?");
}

void
metrics_policy_loaded(struct metrics *m, struct policy *pol)
{
	if (m == NULL)
		return;
	policy_swap(m, pol);
	pthread_mutex_lock(&m->mu);
	m->reloaded = 1;
	m->reload_ok = 1;
	m->reload_gen = atomic_fetch_add(&m->generation, 1) + 1;
	now_rfc3339(m->reload_time, sizeof(m->reload_time));
	m->reload_err[0] = '\0';
	pthread_mutex_unlock(&m->mu);
}

void
metrics_reload_failed(struct metrics *m, const char *err)
{
	char *p;

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	m->reloaded = 1;
	m->reload_ok = 0;
	m->reload_gen = atomic_load(&m->generation);
	now_rfc3339(m->reload_time, sizeof(m->reload_time));
	snprintf(m->reload_err, sizeof(m->reload_err), "%s", err != NULL ? err : "");
	/* the reason may quote the file's bytes: keep printable ASCII only, so the JSON string is valid UTF-8 */
	for (p = m->reload_err; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	pthread_mutex_unlock(&m->mu);
}

void
metrics_tls_failure(struct metrics *m, enum metrics_side side)
{
	if (m == NULL)
		return;
	inc(&m->tls_fail[side == METRICS_SIDE_UPSTREAM ? 1 : 0]);
}

void
metrics_h2_stream(struct metrics *m, int delta)
{
	if (m == NULL)
		return;
	atomic_fetch_add_explicit(&m->h2_streams, delta, memory_order_relaxed);
}

void
metrics_gauges_init(struct metrics_gauges *g)
{
	g->connections_open = -1;
	g->leaf_cache_entries = -1;
	g->leaf_cache_hits = -1;
	g->leaf_cache_misses = -1;
	g->audit_queue_depth = -1;
	g->audit_write_errors = -1;
	g->audit_syslog_dropped = -1;
	g->audit_ocsf_errors = -1;
	g->audit_healthy = -1;
	g->sandboxes_registered = -1;
}

void
metrics_label_escape(struct evbuffer *out, const char *s)
{
	const char *p = s, *q;

	for (q = s; *q != '\0'; q++) {
		if (*q != '\\' && *q != '"' && *q != '\n')
			continue;
		evbuffer_add(out, p, (size_t)(q - p));
		if (*q == '\\')
			evbuffer_add(out, SLUICE_LIT("\\\\"));
		else if (*q == '"')
			evbuffer_add(out, SLUICE_LIT("\\\""));
		else
			evbuffer_add(out, SLUICE_LIT("\\n"));
		p = q + 1;
	}
	evbuffer_add(out, p, (size_t)(q - p));
}

static int
label_cmp(const void *a, const void *b)
{
	const struct label *x = *(struct label *const *)a, *y = *(struct label *const *)b;

	return strcmp(x->name, y->name);
}

/* The table's labels sorted by name, then "other"; *<n> of them (the caller frees the array). */
static struct label **
ltab_sorted(struct ltab *t, size_t *n)
{
	struct label **v = xcalloc(t->mask + 2, sizeof(*v));
	size_t i, k = 0;

	for (i = 0; i <= t->mask; i++)
		if ((v[k] = atomic_load(&t->slots[i])) != NULL)
			k++;
	qsort(v, k, sizeof(*v), label_cmp);
	v[k++] = t->other;
	*n = k;
	return v;
}


static void
family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One series: name{k1="v1"[,k2="v2"]} value */
static void
series(struct evbuffer *out, const char *name, const char *k1, const char *v1, const char *k2, const char *v2,
       unsigned long long value)
{
	evbuffer_add_printf(out, "%s{%s=\"", name, k1);
	metrics_label_escape(out, v1);
	if (k2 != NULL) {
		evbuffer_add_printf(out, "\",%s=\"", k2);
		metrics_label_escape(out, v2);
	}
	evbuffer_add_printf(out, "\"} %llu\n", value);
}

static void
gauge(struct evbuffer *out, const char *name, const char *type, const char *help, int64_t v)
{
	if (v < 0)
		return;
	family(out, name, type, help);
	evbuffer_add_printf(out, "%s %lld\n", name, (long long)v);
}

/* Nonzero series of column <col0> + i (i < <ncols>) of every label of <t>. */
static void
label_series(struct evbuffer *out, struct ltab *t, const char *name, const char *klabel, int label_first,
             const char *kcol, const char *const *cols, int col0, int ncols)
{
	struct label **v;
	size_t n, i;
	unsigned long x;
	int c;

	v = ltab_sorted(t, &n);
	for (i = 0; i < n; i++) {
		for (c = 0; c < ncols; c++) {
			x = label_sum(v[i], col0 + c);
			if (x == 0)
				continue;
			if (kcol == NULL)
				series(out, name, klabel, v[i]->name, NULL, NULL, x);
			else if (label_first)
				series(out, name, klabel, v[i]->name, kcol, cols[c], x);
			else
				series(out, name, kcol, cols[c], klabel, v[i]->name, x);
		}
	}
	free(v);
}

void
metrics_render(struct metrics *m, const struct metrics_gauges *g, struct evbuffer *out)
{
	int i, ok;

	if (m == NULL)
		return;
	family(out, "sluice_build_info", "gauge", "The running gateway's version (always 1).");
	series(out, "sluice_build_info", "version", SLUICE_VERSION, NULL, NULL, 1);
	family(out, "sluice_requests_total", "counter",
	       "Requests decided, by verdict and policy host entry (hosts outside the policy: other).");
	label_series(out, &m->hosts, "sluice_requests_total", "host", 0, "verdict", verdict_names, COL_REQ, NVERDICTS);
	family(out, "sluice_responses_total", "counter", "Responses to allowed requests, by host and status class.");
	label_series(out, &m->hosts, "sluice_responses_total", "host", 1, "class", class_names, COL_RESP, NCLASSES);
	family(out, "sluice_denials_total", "counter", "Refused requests and connections, by rule.");
	label_series(out, &m->rules, "sluice_denials_total", "rule", 1, NULL, NULL, COL_DENIAL, 1);
	family(out, "sluice_exfiltration_attempts_total", "counter",
	       "Placeholders sent where their secret is not bound, by secret.");
	label_series(out, &m->secrets, "sluice_exfiltration_attempts_total", "secret", 1, NULL, NULL, COL_EXFIL, 1);
	family(out, "sluice_scrubs_total", "counter", "Responses that had a secret's value scrubbed, by secret.");
	label_series(out, &m->secrets, "sluice_scrubs_total", "secret", 1, NULL, NULL, COL_SCRUB, 1);
	family(out, "sluice_dns_queries_total", "counter", "DNS questions answered, by kind of answer.");
	for (i = 0; i < NDNS; i++)
		series(out, "sluice_dns_queries_total", "answer", dns_names[i], NULL, NULL, atomic_load(&m->dns[i]));
	family(out, "sluice_tls_handshake_failures_total", "counter",
	       "TLS handshakes that failed or timed out, by side (client: the sandbox; upstream: the real host).");
	for (i = 0; i < 2; i++)
		series(out, "sluice_tls_handshake_failures_total", "side", side_names[i], NULL, NULL,
		       atomic_load(&m->tls_fail[i]));
	gauge(out, "sluice_connections_open", "gauge", "Client connections open now.", g->connections_open);
	family(out, "sluice_h2_streams_open", "gauge", "HTTP/2 streams from clients open now.");
	evbuffer_add_printf(out, "sluice_h2_streams_open %ld\n", atomic_load(&m->h2_streams));
	gauge(out, "sluice_leaf_cache_entries", "gauge", "Leaf certificates in the cache.", g->leaf_cache_entries);
	gauge(out, "sluice_leaf_cache_hits_total", "counter", "Leaf lookups served from the cache.",
	      g->leaf_cache_hits);
	gauge(out, "sluice_leaf_cache_misses_total", "counter", "Leaf lookups that had to mint.", g->leaf_cache_misses);
	gauge(out, "sluice_audit_queue_depth", "gauge", "Audit records waiting to be written.", g->audit_queue_depth);
	gauge(out, "sluice_audit_write_errors_total", "counter", "Failed audit log writes.", g->audit_write_errors);
	gauge(out, "sluice_audit_syslog_dropped_total", "counter",
	      "Audit lines the syslog copy dropped (collector down or slow; the file has them).", g->audit_syslog_dropped);
	gauge(out, "sluice_audit_ocsf_errors_total", "counter", "OCSF events that could not be written.",
	      g->audit_ocsf_errors);
	gauge(out, "sluice_audit_healthy", "gauge", "1 while the audit log is written, 0 while it fails (requests get 503).",
	      g->audit_healthy);
	gauge(out, "sluice_policy_generation", "gauge", "Policies loaded: 1 at start, +1 per successful reload.",
	      (int64_t)atomic_load(&m->generation));
	pthread_mutex_lock(&m->mu);
	ok = !m->reloaded || m->reload_ok;
	pthread_mutex_unlock(&m->mu);
	gauge(out, "sluice_policy_last_reload_success", "gauge",
	      "1 if the last reload succeeded (or none was tried), 0 if it failed.", ok);
	gauge(out, "sluice_sandboxes_registered", "gauge", "Sandboxes registered over the admin socket.",
	      g->sandboxes_registered);
}

int
metrics_healthz(struct metrics *m, const struct metrics_gauges *g, struct evbuffer *out)
{
	json_t *o, *lr = NULL;
	struct timespec now;
	char *s;
	int failing = g->audit_healthy == 0;

	if (m == NULL)
		return 500;
	clock_mono(&now);
	pthread_mutex_lock(&m->mu);
	if (m->reloaded) {
		lr = json_object();
		json_object_set_new(lr, "result", json_string(m->reload_ok ? "ok" : "error"));
		json_object_set_new(lr, "time", json_string(m->reload_time));
		json_object_set_new(lr, "generation", json_integer((json_int_t)m->reload_gen));
		if (!m->reload_ok)
			json_object_set_new(lr, "error", json_string(m->reload_err));
	}
	pthread_mutex_unlock(&m->mu);
	o = json_object();
	json_object_set_new(o, "status", json_string(failing ? "degraded" : "ok"));
	json_object_set_new(o, "audit", json_string(failing ? "failing" : "ok"));
	json_object_set_new(o, "policy_generation", json_integer((json_int_t)atomic_load(&m->generation)));
	json_object_set_new(o, "last_reload", lr != NULL ? lr : json_null());
	json_object_set_new(o, "uptime_s", json_integer((json_int_t)(now.tv_sec - m->t0.tv_sec)));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (s == NULL)
		fatalx("out of memory");
	evbuffer_add(out, s, strlen(s));
	evbuffer_add(out, SLUICE_LIT("\n"));
	free(s);
	return failing ? 503 : 200;
}
